"""RAPPOR's coins on the secure batch path (ldp.client.onehot.marked_coins, and the batch encoders' path,
ldp.client.marked_correction.corrected_coins): exact, near the entropy, one answer per backend.

Each bit of a RAPPOR report is a coin whose probability is one of two exact
Fractions, chosen by the Bloom bit B (a fresh client: P[1 | B]) or the PRR
bit B′ (a persistent client's IRR: q or p). Statistical tests run on a seeded
generator's words (the sampler reads any source's words alike) at a
significance level ALPHA = 1e-6 per test (Bonferroni over its comparisons).
The fast set runs the NumPy backend (SECURE_BATCH = "always", see
tests/conftest.py); the compiled one is compared with it in the slow set, as
its first use compiles it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from test_onehot import Recording, Replay, SeededSecure, h

import ldp
from ldp.client import onehot
from ldp.client.batch import lane_digits, rappor_irr_batch, secure_encode_batch
from ldp.client.onehot import marked_coins

ALPHA = 1e-6

#: (f, p, q): P[1|1] + P[1|0] = 1 (every coin a q-coin, the marked ones flipped), dyadic (5/8, 3/8, the
#: benchmark's); then two pairs that do not sum to 1 (true coins drawn for the marked bits), one dyadic
#: (11/16, 9/16), one not (31/48, 7/16); then a non-dyadic pair that sums to 1 (7/10, 3/10).
PARAMETERS = [
    ("1/2", "1/4", "3/4"),
    ("1/2", "1/2", "3/4"),
    ("1/2", "1/3", "3/4"),
    ("1/5", "1/4", "3/4"),
    ("0", "1/4", "1/2"),  # 1/2 and 1/4: 2 lane digits, each marked bit corrected by a further coin
]


def rappor(f: str, p: str, q: str, num_bits: int = 128, num_hashes: int = 2) -> ldp.Rappor:
    return ldp.Rappor(num_bits=num_bits, num_hashes=num_hashes, num_cohorts=8, f=f, p=p, q=q)


def per_bit_chi_square(bits: np.ndarray, marks: np.ndarray, probability: Fraction) -> tuple[float, int]:
    """Σ over bit positions of (ones − t·π)² / (t·π(1−π)) over the coins where ``marks`` holds, and its d.o.f.

    Each position's count of ones is a binomial of its t trials; the sum is
    χ² with as many degrees of freedom as positions with a trial.
    """
    trials = marks.sum(axis=0)
    ones = (bits & marks).sum(axis=0)
    used = trials > 0
    pi = float(probability)
    chi2 = ((ones[used] - trials[used] * pi) ** 2 / (trials[used] * pi * (1 - pi))).sum()
    return float(chi2), int(used.sum())


@pytest.mark.parametrize(("f", "p", "q"), PARAMETERS)
def test_fresh_rappor_bits_have_the_spec_probabilities_for_both_bloom_values(f, p, q):
    """Per-bit frequencies of a secure batch against P[1|B=1] and P[1|B=0] (chi-square over positions, α = 1e-6)."""
    spec = rappor(f, p, q)
    n = 6000
    values = [f"v{i % 40}" for i in range(n)]
    batch = secure_encode_batch(spec, values, source=SeededSecure(3))
    bits = np.unpackbits(batch.column("bits"), axis=1, count=spec.num_bits).astype(bool)
    cohorts = batch.cohorts
    bloom = np.zeros_like(bits)
    for i, (value, cohort) in enumerate(zip(values, cohorts.tolist())):
        bloom[i, list(spec.bit_positions(value, cohort))] = True
    for marks, probability in ((bloom, spec.prob_one_given_one), (~bloom, spec.prob_one_given_zero)):
        chi2, dof = per_bit_chi_square(bits, marks, probability)
        assert chi2 < stats.chi2.isf(ALPHA / 2, dof)


@pytest.mark.parametrize(("f", "p", "q"), PARAMETERS)
def test_persistent_rappor_irr_has_q_on_prr_ones_and_p_on_prr_zeros(f, p, q):
    """rappor_irr_batch on dense PRR words: P[S=1 | B′=1] = q, P[S=1 | B′=0] = p, per bit (α = 1e-6).

    A PRR is about a quarter ones (f = 1/2): many true coins per report, the case the one-hot sampler never had.
    """
    spec = rappor(f, p, q, num_bits=100)
    n = 4000
    prr = np.random.default_rng(5).random((n, spec.num_bits)) < 0.25
    packed = np.packbits(prr, axis=1)
    words = np.zeros((n, 2), dtype=np.uint64)
    words.view(np.uint8)[:, : packed.shape[1]] = (
        packed  # packbits lane order: the words' bytes are the packed bytes
    )
    batch = rappor_irr_batch(spec, words, np.zeros(n, np.int64), SeededSecure(9))
    bits = np.unpackbits(batch.column("bits"), axis=1, count=spec.num_bits).astype(bool)
    for marks, probability in ((prr, spec.q), (~prr, spec.p)):
        chi2, dof = per_bit_chi_square(bits, marks, probability)
        assert chi2 < stats.chi2.isf(ALPHA / 2, dof)


def test_marked_coins_are_independent_within_a_byte():
    """Whole bytes of unmarked coins against q^|j| (1−q)^(8−|j|), and marked pairs against p² (chi-square, α = 1e-6)."""
    p, q = Fraction(31, 48), Fraction(7, 16)
    n, width = 8000, 64
    marks = np.zeros((n, width // 8), dtype=np.uint8)
    marks[:, 0] = 0b11000000  # the first byte: two marked coins then six unmarked
    out = np.unpackbits(marked_coins(SeededSecure(4), marks, width, p, q, backend="numpy"), axis=1)
    clean = np.packbits(out[:, 8:], axis=1).ravel()  # seven unmarked bytes a report
    masses = np.array([float(q ** j.bit_count() * (1 - q) ** (8 - j.bit_count())) for j in range(256)])
    observed = np.bincount(clean, minlength=256)
    assert stats.chisquare(observed, masses * clean.size).pvalue > ALPHA / 2
    pairs = 2 * out[:, 0] + out[:, 1]
    expected = np.array([(1 - p) ** 2, (1 - p) * p, p * (1 - p), p * p], dtype=float) * n
    assert stats.chisquare(np.bincount(pairs, minlength=4), expected).pvalue > ALPHA / 2


def entropy_bytes(spec: ldp.Rappor) -> float:
    """A fresh client's report entropy given its value (bytes): the cohort, then h coins of P[1|1] and k − h of P[1|0]."""
    hashes = spec.num_hashes
    return (
        math.log2(spec.num_cohorts)
        + hashes * h(spec.prob_one_given_one)
        + (spec.num_bits - hashes) * h(spec.prob_one_given_zero)
    ) / 8


@pytest.mark.parametrize(("f", "p", "q"), PARAMETERS)
def test_secure_rappor_batch_reads_at_most_twice_the_entropy(f, p, q):
    """The CSPRNG path reads ≤ 2× a report's entropy (the bit-sliced lanes read 3.06× at the benchmark's 5/8, 3/8)."""
    spec = rappor(f, p, q)
    n = 2000
    source = SeededSecure(11)
    values = [
        f"v{i}" for i in range(n)
    ]  # distinct values: two distinct Bloom positions but for a rare collision
    secure_encode_batch(spec, values, source=source)
    assert source.bytes / n <= 2 * entropy_bytes(spec)


def test_the_lanes_keep_rappor_batches_where_the_kernel_would_not_be_faster(monkeypatch):
    """Default policy: corrected coins where the compiled kernel serves the batch and the lanes read ≥ 2 digits a
    coin (flipped, fair or with each marked bit corrected by a further coin alike: 1/2 and 1/4 included, at about
    the lanes' CPU); below, the lanes, whose CPU is almost nothing.
    """
    monkeypatch.setattr(onehot, "SECURE_BATCH", "auto")
    monkeypatch.setattr(onehot, "NUMBA_THRESHOLD", 4096)
    monkeypatch.setattr(onehot, "KERNEL_AFTER", 0)
    monkeypatch.setattr(onehot, "_KERNEL", [lambda *args: None])  # a compiled kernel
    assert lane_digits(Fraction(5, 8), Fraction(3, 8)) == 3
    assert lane_digits(Fraction(11, 16), Fraction(9, 16)) == 4
    assert lane_digits(Fraction(31, 48), Fraction(7, 16)) == 7.5
    assert onehot.serves_marked_batch(10**5, 2)  # 3/4 and 1/4, 1/2 and 1/4, ...
    assert not onehot.serves_marked_batch(10**5, 1)  # f = 1: every coin fair
    assert onehot.serves_marked_batch(10**5, 3)
    assert onehot.serves_marked_batch(10**5, 7.5)
    assert not onehot.serves_marked_batch(4095, 7.5)
    monkeypatch.setattr(onehot, "_KERNEL", [None])  # numba missing
    assert not onehot.serves_marked_batch(10**5, 7.5)
    monkeypatch.setattr(onehot, "SECURE_BATCH", "always")
    assert onehot.serves_marked_batch(1, 1)
    monkeypatch.setattr(onehot, "SECURE_BATCH", "never")
    assert not onehot.serves_marked_batch(10**5, 7.5)


def test_rappor_reports_count_toward_the_kernel_load_by_their_coins(monkeypatch):
    """KERNEL_AFTER is in 1,024-coin one-hot reports: a 128-bit RAPPOR report counts an eighth of one.

    Before, each RAPPOR report counted as a whole one, so a RAPPOR-only process loaded the kernel (about
    0.5–1 s) after lanes work worth an eighth of that, against the ski-rental rule's "at most about twice".
    """
    monkeypatch.setattr(onehot, "SECURE_BATCH", "auto")
    monkeypatch.setattr(onehot, "NUMBA_THRESHOLD", 4096)
    monkeypatch.setattr(onehot, "KERNEL_AFTER", 10_000)
    monkeypatch.setattr(onehot, "_KERNEL", [])
    monkeypatch.setattr(onehot, "_DRAWN", [0.0])
    monkeypatch.setattr(
        onehot, "_backend", lambda name, n: onehot._KERNEL.append(lambda *a: None) or onehot._KERNEL[0]
    )
    served = [onehot.serves_marked_batch(40_000, 3, coins=128) for _ in range(3)]
    assert served == [False, False, True]  # 5,000 then 10,000 equivalent reports: the third batch passes
    assert onehot._DRAWN[0] == 15_000


CASES = [
    (128, 0.016, Fraction(5, 8), Fraction(3, 8)),  # Bloom, p + q = 1
    (128, 0.016, Fraction(11, 16), Fraction(9, 16)),  # Bloom, true coins
    (100, 0.25, Fraction(3, 4), Fraction(1, 2)),  # a PRR: dense marks, a short last byte
    (13, 0.5, Fraction(31, 48), Fraction(7, 16)),
    (300, 0.1, Fraction(1, 3), Fraction(1, 40)),  # sparse q-coins: runs
    (64, 0.0, Fraction(2, 3), Fraction(1, 3)),  # no marks
]


@pytest.mark.slow
@pytest.mark.parametrize(("width", "density", "p", "q"), CASES)
def test_numba_and_numpy_backends_make_the_same_rappor_reports(width, density, p, q):
    """From the same words (a seeded generator's, and recorded CSPRNG words), both backends return the same reports."""
    pytest.importorskip("numba")
    n = 9000
    marks = np.packbits(np.random.default_rng(6).random((n, width)) < density, axis=1)
    a = marked_coins(SeededSecure(2), marks, width, p, q, backend="numba")
    b = marked_coins(SeededSecure(2), marks, width, p, q, backend="numpy")
    assert np.array_equal(a, b)
    recording = Recording()
    c = marked_coins(recording, marks, width, p, q, backend="numba")
    replayed = marked_coins(Replay(np.concatenate(recording.kept)), marks, width, p, q, backend="numpy")
    assert np.array_equal(c, replayed)


@pytest.mark.slow
def test_a_large_secure_rappor_batch_takes_the_kernel_and_keeps_the_distribution(monkeypatch):
    """The default policy above NUMBA_THRESHOLD with non-dyadic probabilities (the compiled kernel): per-bit χ² (α = 1e-6)."""
    pytest.importorskip("numba")
    monkeypatch.setattr(onehot, "KERNEL_AFTER", 0)
    spec = rappor("1/2", "1/3", "3/4")
    n = 4 * onehot.NUMBA_THRESHOLD
    a, b = spec.prob_one_given_one, spec.prob_one_given_zero
    assert onehot.serves_marked_batch(n, lane_digits(a, b))
    values = [f"v{i % 50}" for i in range(n)]
    batch = secure_encode_batch(spec, values)
    bits = np.unpackbits(batch.column("bits"), axis=1, count=spec.num_bits).astype(bool)
    bloom = np.zeros_like(bits)
    for i, (value, cohort) in enumerate(zip(values, batch.cohorts.tolist())):
        bloom[i, list(spec.bit_positions(value, cohort))] = True
    for marks, probability in ((bloom, spec.prob_one_given_one), (~bloom, spec.prob_one_given_zero)):
        chi2, dof = per_bit_chi_square(bits, marks, probability)
        assert chi2 < stats.chi2.isf(ALPHA / 2, dof)
