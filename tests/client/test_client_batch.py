"""The batch encoder: every bit has the probability of docs/mechanisms.md#frequency-oracles and
docs/mechanisms.md#rappor, in the right place, on both random sources.

Each test encodes one value for many users and checks every bit's frequency
against P[bit = 1 | true bit] with a two-sided z test; the significance level
is ALPHA for the whole vector (Bonferroni over its bits). Padding bits of the
last byte must be exactly zero. Every test runs on the seeded generator
(reproducible) and on the OS CSPRNG (:class:`ldp.client.SystemRandomSource`,
the secure path; not seedable, so ALPHA is its false-failure probability).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import frequency_specs, rappor_specs
from scipy import stats

import ldp
from ldp.aggregator import make_aggregator
from ldp.client import SystemRandomSource, encode_batch

ALPHA = 1e-6
USERS = 40_000
SOURCES = ["seeded", "csprng"]


def source_of(kind: str, seed: int):
    """The random source of a test: a seeded NumPy generator, or the OS CSPRNG."""
    return np.random.default_rng(seed) if kind == "seeded" else SystemRandomSource()


def _check_bit_frequencies(packed: np.ndarray, num_bits: int, true_bits: set[int], p_one, p_zero) -> None:
    bits = np.unpackbits(packed, axis=1)
    assert not bits[:, num_bits:].any(), "padding bits past num_bits must be zero"
    observed = bits[:, :num_bits].mean(axis=0)
    expected = np.array([float(p_one) if i in true_bits else float(p_zero) for i in range(num_bits)])
    std_error = np.sqrt(expected * (1 - expected) / packed.shape[0])
    z = stats.norm.isf(ALPHA / (2 * num_bits))
    np.testing.assert_array_less(np.abs(observed - expected), z * std_error + 1e-12)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("mechanism", [ldp.SUE, ldp.OUE])
@pytest.mark.parametrize("domain_size", [13, 64, 130])  # a padded last byte, one whole word, three words
def test_unary_encoding_bits(mechanism, domain_size, kind):
    spec = mechanism(domain=tuple(range(domain_size)), epsilon=1.0)
    true_index = domain_size - 2
    batch = encode_batch(spec, [true_index] * USERS, source_of(kind, domain_size))
    _check_bit_frequencies(batch.bits, domain_size, {true_index}, spec.p, spec.q)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("spec", rappor_specs(), ids=lambda s: f"{s.encoding}-{s.hash}")
def test_rappor_bits(spec, kind):
    value = {"bloom": "some value", "basic": spec.domain[-1] if spec.domain else None, "boolean": True}[
        spec.encoding
    ]
    cohort = spec.num_cohorts - 1
    batch = encode_batch(spec, [value] * USERS, source_of(kind, 7), cohorts=np.full(USERS, cohort))
    assert (batch.cohorts == cohort).all()
    true_bits = set(spec.bit_positions(value, cohort))
    _check_bit_frequencies(
        batch.bits, spec.num_bits, true_bits, spec.prob_one_given_one, spec.prob_one_given_zero
    )


@pytest.mark.parametrize("kind", SOURCES)
def test_users_with_different_values_get_their_own_bits(kind):
    """Rows are not mixed up: each user's true bit is where their value is."""
    spec = ldp.SUE(domain=tuple(range(100)), epsilon=8.0)  # p ≈ 0.98, q ≈ 0.02
    values = np.random.default_rng(1).integers(0, 100, USERS)
    bits = np.unpackbits(encode_batch(spec, values, source_of(kind, 2), indices=True).bits, axis=1)
    at_true = bits[np.arange(USERS), values].mean()
    std_error = np.sqrt(float(spec.p * (1 - spec.p)) / USERS)
    assert abs(at_true - float(spec.p)) < stats.norm.isf(ALPHA / 2) * std_error


@pytest.mark.parametrize(
    "spec",
    [ldp.OUE(domain=tuple(range(70)), epsilon=1.0), *rappor_specs()],
    ids=lambda s: f"{s.mechanism}-{getattr(s, 'encoding', '')}",
)
@pytest.mark.parametrize("kind", SOURCES)
def test_an_empty_batch_of_bit_vectors_is_empty(spec, kind):
    batch = encode_batch(spec, [], source_of(kind, 0))
    num_bits = spec.domain_size if spec.mechanism == "oue" else spec.num_bits
    assert len(batch) == 0 and batch.bits.shape == (0, (num_bits + 7) // 8)


@pytest.mark.parametrize(
    "spec",
    frequency_specs() + [ldp.numeric_spec(m, 1.0, 0, 1) for m in ("duchi", "piecewise")],
    ids=lambda s: s.mechanism,
)
@pytest.mark.parametrize("kind", SOURCES)
def test_an_empty_batch_aggregates_to_nothing(spec, kind):
    batch = encode_batch(spec, [], source_of(kind, 0))
    accumulator = make_aggregator(spec)
    accumulator.add_batch(batch)
    assert len(batch) == 0 and accumulator.n == 0


@pytest.mark.parametrize("kind", SOURCES)
def test_rappor_bits_of_mixed_values_and_cohorts(kind):
    """Many values in random cohorts (the cached Bloom table path): each row's true bits are its own."""
    spec = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=8, f="1/2", p="1/4", q="3/4")
    values = [f"v{i}" for i in np.random.default_rng(3).integers(0, 50, USERS)]
    batch = encode_batch(spec, values, source_of(kind, 4))
    bits = np.unpackbits(batch.bits, axis=1)
    truth = np.zeros_like(bits, dtype=bool)
    for row, (value, cohort) in enumerate(zip(values, batch.cohorts.tolist())):
        truth[row, spec.bit_positions(value, cohort)] = True
    z = stats.norm.isf(ALPHA / 4)
    for mask, p in ((truth, spec.prob_one_given_one), (~truth, spec.prob_one_given_zero)):
        observed, count = bits[mask].mean(), mask.sum()
        assert abs(observed - float(p)) < z * np.sqrt(float(p * (1 - p)) / count)
    cohorts = np.bincount(batch.cohorts, minlength=spec.num_cohorts)  # uniform cohorts: chi-square
    assert stats.chisquare(cohorts).pvalue > ALPHA


def test_a_generator_that_is_not_numpy_is_refused():
    import random

    with pytest.raises(ldp.ParameterError, match="SystemRandomSource"):
        encode_batch(ldp.OUE(domain=(1, 2), epsilon=1.0), [1], random.Random(1))


DUCHI = ldp.Duchi(epsilon=1.0, low=0.0, high=10.0)
GRR3 = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


@pytest.mark.parametrize(
    ("spec", "values", "message"),
    [
        (DUCHI, [1.0, 2.5, None, 3.0], "values[2]: numeric value must be a finite number, got None"),
        (DUCHI, [1.0, 2.0, True], "values[2]: numeric value must be a number, got True"),  # numpy: 1.0
        (DUCHI, [4, np.True_, 5], "values[1]: numeric value must be a number, got np.True_"),  # numpy: 1
        (DUCHI, [1.0, "12"], "values[1]: numeric value must be a number, got the str '12'"),
        (DUCHI, np.array([1.0, 2.0, np.inf]), "values[2]: numeric value must be finite"),
        (GRR3, ["a", "b", None, "zz"], "values[2]: value None is not in the domain"),
        (GRR3, ["a", "zz"], "values[1]: value 'zz' is not in the domain"),
    ],
)
def test_a_refused_value_is_named_with_its_position(spec, values, message):
    with pytest.raises(ldp.ParameterError) as refused:
        encode_batch(spec, values, np.random.default_rng(1))
    assert str(refused.value).startswith(message)
    with pytest.raises(ldp.ParameterError, match="values\\["):
        encode_batch(spec, values, SystemRandomSource())


def test_booleans_are_not_numbers_in_any_container():
    for values in ([True, 2.0], [2.0, False], np.array([True, False]), np.array([1.0, True], dtype=object)):
        with pytest.raises(ldp.ParameterError, match="must be a number, got"):
            DUCHI.to_native(values)
    assert DUCHI.to_native([0.0, 10]).tolist() == [-1.0, 1.0]


@pytest.mark.parametrize("max_bytes", [32 << 20, 8 * 2 * 8 * 5, 1])  # roomy; 5 values (resets); 1 (pairs)
def test_bloom_words_are_each_rows_own_bits(max_bytes):
    """The cached (value, cohort) table, its resets and the uncached path all give each row its own bits."""
    from ldp.client.batch import _BloomCache

    spec = ldp.Rappor(num_bits=128, num_hashes=3, num_cohorts=8, f="1/2", p="1/4", q="3/4")
    cache = _BloomCache(spec, max_bytes=max_bytes)
    rng = np.random.default_rng(9)
    for first in (0, 2, 4, 0, 8):  # 4 values a batch: pairs seen before, new ones, (small cache) resets
        values = [f"v{i}" for i in rng.integers(first, first + 4, 300)]
        cohorts = rng.integers(0, spec.num_cohorts, 300)
        bits = np.unpackbits(cache.words(values, cohorts).view(">u1"), axis=1)  # packbits lane order
        for row, (value, cohort) in enumerate(zip(values, cohorts.tolist())):
            expected = np.zeros(128, dtype=np.uint8)
            expected[spec.bit_positions(value, cohort)] = 1
            np.testing.assert_array_equal(bits[row], expected)
