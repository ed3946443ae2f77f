"""Empirical privacy through the real (CSPRNG) client.

Each test encodes two different values N = 100,000 times each and checks,
for every output (GRR, OLH buckets given the hash collision status) or every
bit (unary encodings, RAPPOR), that

1. the observed frequency under each input matches the spec's exact
   probability within z·SE, and
2. the one-sided test of H0: P[y | x1] ≤ e^ε·P[y | x2] is not rejected,

both with a family-wise significance level α = 1e-6 (Bonferroni over the
outputs checked), so a correct client fails with probability < 1e-6.
The client uses the OS CSPRNG, so these runs cannot be seeded; α is the
false-failure probability.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

import ldp
from ldp.client import make_encoder
from ldp.hashing import lh_bucket
from ldp.report import unpack_bits

N = 100_000
ALPHA = 1e-6


def z_for(tests: int) -> float:
    return NormalDist().inv_cdf(1 - ALPHA / (2 * tests))


def check_frequencies(observed: np.ndarray, expected: np.ndarray, n: int, tests: int) -> None:
    se = np.sqrt(expected * (1 - expected) / n)
    z = np.abs(observed - expected) / se
    assert z.max() < z_for(tests), (observed, expected)


def check_ratio(
    freq_a: np.ndarray, freq_b: np.ndarray, ratio: float, n: int, tests: int, n_b: int | None = None
) -> None:
    """One-sided: freq_a − ratio·freq_b must not be significantly > 0, both directions.

    ``n`` and ``n_b`` are the sample sizes behind ``freq_a`` and ``freq_b`` (``n_b`` defaults to ``n``).
    """
    n_b = n if n_b is None else n_b
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * tests))
    for (a, na), (b, nb) in (((freq_a, n), (freq_b, n_b)), ((freq_b, n_b), (freq_a, n))):
        diff = a - ratio * b
        se = np.sqrt(a * (1 - a) / na + ratio**2 * b * (1 - b) / nb) + 1e-12
        assert (diff / se).max() < z


# The default run keeps GRR as the one fast empirical-privacy check; the rest run under `pytest -m slow`.
@pytest.mark.parametrize(
    "spec",
    [
        ldp.GRR(domain=("a", "b", "c", "d"), epsilon=1.0),
        pytest.param(ldp.BinaryRR(domain=("a", "b"), epsilon=1.0), marks=pytest.mark.slow),
    ],
    ids=["GRR", "BinaryRR"],
)
def test_grr_output_frequencies_and_ratio(spec):
    encoder = make_encoder(spec)
    freqs = []
    for x in ("a", "b"):
        counts = np.zeros(spec.domain_size)
        for _ in range(N):
            counts[spec.index_of(encoder.encode(x).value)] += 1
        freqs.append(counts / N)
        expected = np.full(spec.domain_size, float(spec.q))
        expected[spec.index_of(x)] = float(spec.p)
        check_frequencies(counts / N, expected, N, 2 * spec.domain_size)
    check_ratio(freqs[0], freqs[1], math.exp(spec.epsilon), N, 2 * spec.domain_size)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", [ldp.OUE, ldp.SUE])
def test_unary_bit_frequencies_and_ratio(mechanism):
    spec = mechanism(domain=tuple(range(10)), epsilon=1.0)
    encoder = make_encoder(spec)
    freqs = []
    for x in (0, 1):
        ones = np.zeros(spec.domain_size)
        for _ in range(N):
            ones += unpack_bits(encoder.encode(x).bits, spec.domain_size)
        freq = ones / N
        expected = np.full(spec.domain_size, float(spec.q))
        expected[x] = float(spec.p)
        check_frequencies(freq, expected, N, 4 * spec.domain_size)
        freqs.append(freq)
    # A bit vector's probability is the product over bits; only bits 0 and 1 differ
    # between the inputs, each bounded by its own ratio, whose product is e^eps.
    bit_ratio = max(float(spec.p / spec.q), float((1 - spec.q) / (1 - spec.p)))
    check_ratio(freqs[0], freqs[1], bit_ratio, N, 2 * spec.domain_size)
    assert float(spec.privacy_ratio) <= math.exp(spec.epsilon)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", [ldp.OLH, ldp.BLH])
def test_olh_bucket_frequencies_and_ratio(mechanism):
    spec = mechanism(domain=tuple(range(6)), epsilon=1.0)
    encoder = make_encoder(spec)
    freqs = []
    for x in (0, 1):
        hits = 0  # report equals the hash of x
        other_hits = 0  # report equals the hash of the other input, when it differs
        other_total = 0
        for _ in range(N):
            report = encoder.encode(x)
            hits += report.value == lh_bucket(report.seed, x, spec.g)
            other = 1 - x
            if lh_bucket(report.seed, other, spec.g) != lh_bucket(report.seed, x, spec.g):
                other_total += 1
                other_hits += report.value == lh_bucket(report.seed, other, spec.g)
        check_frequencies(np.array([hits / N]), np.array([float(spec.p)]), N, 4)
        check_frequencies(np.array([other_hits / other_total]), np.array([float(spec.q)]), other_total, 4)
        freqs.append((hits / N, other_hits / other_total, other_total))
    # P[y = H(x) | x] / P[y = H(x) | x'] = p / q = e^eps at most.
    check_ratio(
        np.array([freqs[0][0]]), np.array([freqs[1][1]]), math.exp(spec.epsilon), N, 2, n_b=freqs[1][2]
    )


@pytest.mark.slow
def test_rappor_single_report_bits_and_ratio():
    """Fresh clients (one report each): bit frequencies are q* / p* (docs/mechanisms.md#rappor-prr-irr)."""
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=1, f="1/2", p="1/2", q="3/4")
    one, zero = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
    freqs = []
    for value in ("apple", "banana"):
        ones = np.zeros(spec.num_bits)
        for _ in range(N):
            encoder = make_encoder(spec)  # new secret each time: PRR is fresh
            ones += unpack_bits(encoder.encode(value).bits, spec.num_bits)
        freq = ones / N
        expected = np.full(spec.num_bits, zero)
        expected[spec.bit_positions(value, 0)] = one
        check_frequencies(freq, expected, N, 2 * spec.num_bits)
        freqs.append(freq)
    bit_ratio = max(one / zero, (1 - zero) / (1 - one))
    check_ratio(freqs[0], freqs[1], bit_ratio, N, 2 * spec.num_bits)


@pytest.mark.slow
def test_rappor_memoized_prr_frequencies():
    """Across clients, the permanent bits B' are 1 with probability 1 − f/2 (true bit) or f/2."""
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=1, f="0.45", p="0.39", q="0.61")
    clients = N  # a fresh client (secret) per draw
    freqs = []
    for value in ("apple", "banana"):
        ones = np.zeros(spec.num_bits)
        for _ in range(clients):
            encoder = make_encoder(spec)
            prr = encoder.permanent_bits(value)
            ones += [(prr >> i) & 1 for i in range(spec.num_bits)]
            assert prr == encoder.permanent_bits(value)  # memoized: same every time
        expected = np.full(spec.num_bits, float(spec.f / 2))
        expected[spec.bit_positions(value, 0)] = float(1 - spec.f / 2)
        check_frequencies(ones / clients, expected, clients, 2 * spec.num_bits)
        freqs.append(ones / clients)
    # each differing PRR bit changes the probability by at most (1 − f/2)/(f/2); 2h such bits give e^eps_inf
    bit_ratio = float((1 - spec.f / 2) / (spec.f / 2))
    assert bit_ratio ** (2 * spec.num_hashes) == pytest.approx(math.exp(spec.epsilon_inf), rel=1e-12)
    check_ratio(freqs[0], freqs[1], bit_ratio, clients, 2 * spec.num_bits)
