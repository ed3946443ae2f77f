"""The simulation batch encoder: every bit has the probability of docs/mechanisms.md#frequency-oracles and
docs/mechanisms.md#rappor, in the right place.

Each test encodes one value for many users and checks every bit's frequency
against P[bit = 1 | true bit] with a two-sided z test; the significance level
is ALPHA for the whole vector (Bonferroni over its bits). Padding bits of the
last byte must be exactly zero.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import frequency_specs, rappor_specs
from scipy import stats

import ldp
from ldp.aggregator import make_aggregator
from ldp.client import encode_batch

ALPHA = 1e-6
USERS = 40_000


def _check_bit_frequencies(packed: np.ndarray, num_bits: int, true_bits: set[int], p_one, p_zero) -> None:
    bits = np.unpackbits(packed, axis=1)
    assert not bits[:, num_bits:].any(), "padding bits past num_bits must be zero"
    observed = bits[:, :num_bits].mean(axis=0)
    expected = np.array([float(p_one) if i in true_bits else float(p_zero) for i in range(num_bits)])
    std_error = np.sqrt(expected * (1 - expected) / packed.shape[0])
    z = stats.norm.isf(ALPHA / (2 * num_bits))
    np.testing.assert_array_less(np.abs(observed - expected), z * std_error + 1e-12)


@pytest.mark.parametrize("mechanism", [ldp.SUE, ldp.OUE])
@pytest.mark.parametrize("domain_size", [13, 64, 130])  # a padded last byte, one whole word, three words
def test_unary_encoding_bits(mechanism, domain_size):
    spec = mechanism(domain=tuple(range(domain_size)), epsilon=1.0)
    true_index = domain_size - 2
    batch = encode_batch(spec, [true_index] * USERS, np.random.default_rng(domain_size))
    _check_bit_frequencies(batch.bits, domain_size, {true_index}, spec.p, spec.q)


@pytest.mark.parametrize("spec", rappor_specs(), ids=lambda s: f"{s.encoding}-{s.hash}")
def test_rappor_bits(spec):
    value = {"bloom": "some value", "basic": spec.domain[-1] if spec.domain else None, "boolean": True}[
        spec.encoding
    ]
    cohort = spec.num_cohorts - 1
    batch = encode_batch(spec, [value] * USERS, np.random.default_rng(7), cohorts=np.full(USERS, cohort))
    assert (batch.cohorts == cohort).all()
    true_bits = set(spec.bit_positions(value, cohort))
    _check_bit_frequencies(
        batch.bits, spec.num_bits, true_bits, spec.prob_one_given_one, spec.prob_one_given_zero
    )


def test_users_with_different_values_get_their_own_bits():
    """Rows are not mixed up: each user's true bit is where their value is."""
    spec = ldp.SUE(domain=tuple(range(100)), epsilon=8.0)  # p ≈ 0.98, q ≈ 0.02
    values = np.random.default_rng(1).integers(0, 100, USERS)
    bits = np.unpackbits(encode_batch(spec, values, np.random.default_rng(2), indices=True).bits, axis=1)
    at_true = bits[np.arange(USERS), values].mean()
    std_error = np.sqrt(float(spec.p * (1 - spec.p)) / USERS)
    assert abs(at_true - float(spec.p)) < stats.norm.isf(ALPHA / 2) * std_error


@pytest.mark.parametrize(
    "spec",
    [ldp.OUE(domain=tuple(range(70)), epsilon=1.0), *rappor_specs()],
    ids=lambda s: f"{s.mechanism}-{getattr(s, 'encoding', '')}",
)
def test_an_empty_batch_of_bit_vectors_is_empty(spec):
    batch = encode_batch(spec, [], np.random.default_rng(0))
    num_bits = spec.domain_size if spec.mechanism == "oue" else spec.num_bits
    assert len(batch) == 0 and batch.bits.shape == (0, (num_bits + 7) // 8)


@pytest.mark.parametrize(
    "spec",
    frequency_specs() + [ldp.numeric_spec(m, 1.0, 0, 1) for m in ("duchi", "piecewise")],
    ids=lambda s: s.mechanism,
)
def test_an_empty_batch_aggregates_to_nothing(spec):
    batch = encode_batch(spec, [], np.random.default_rng(0))
    accumulator = make_aggregator(spec)
    accumulator.add_batch(batch)
    assert len(batch) == 0 and accumulator.n == 0
