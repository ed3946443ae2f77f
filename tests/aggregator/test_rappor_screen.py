"""RAPPOR decode at scale (docs/mechanisms.md#rappor-decoding): vectorized Bloom hashing, the design-matrix cache, the screened refit.

Counts are drawn from their exact distribution for one report per client
(as tests/aggregator/test_rappor_decode.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from rappor_counts import draw_counts

import ldp
from ldp.aggregator.bloom_design import DESIGN_CACHE, DesignCache, candidates_digest, design_matrix
from ldp.aggregator.rappor.decode import decode_result
from ldp.aggregator.rappor.fit import DENSE_LIMIT
from ldp.hashing import bloom_positions, bloom_positions_batch, murmur3_x64_128_batch

SPEC = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=32, f="1/4", p="1/4", q="3/4")
TRUE = [f"true-{i}" for i in range(5)]


def _random_values(count: int, seed: int) -> list:
    rnd = random.Random(seed)
    alphabet = "ab é€😀\x00"
    text = ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 70))) for _ in range(count)]
    return ["", "x" * 15, "y" * 16, "z" * 17, b"\x00\xff", 12345, *text]


@pytest.mark.parametrize("hash_name", ["mmh3", "md5"])
@pytest.mark.parametrize(
    ("num_bits", "num_hashes"), [(8, 2), (128, 2), (256, 2), (100, 4), (7, 3), (4096, 16)]
)
def test_batch_positions_are_bit_identical(hash_name, num_bits, num_hashes):
    values = _random_values(300, seed=num_bits + num_hashes)
    cohorts = [0, 1, 5, 63, 2**31 + 7]
    out = bloom_positions_batch(values, cohorts, num_hashes, num_bits, hash_name)
    assert out.shape == (len(values), len(cohorts), num_hashes)
    expected = [[bloom_positions(v, c, num_hashes, num_bits, hash_name) for c in cohorts] for v in values]
    np.testing.assert_array_equal(out, np.array(expected))


def test_batch_positions_of_no_values():
    assert bloom_positions_batch([], range(4), 2, 16, "mmh3").shape == (0, 4, 2)


def test_design_matrix_cached_per_hashing_parameters_and_candidates():
    DESIGN_CACHE.clear()
    values = [f"c{i}" for i in range(50)]
    first = design_matrix(SPEC, values)
    assert design_matrix(SPEC, list(values)) is first
    # p, q and f do not enter the Bloom positions: same matrix
    other_rates = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=32, f="1/2", p="1/3", q="2/3")
    assert design_matrix(other_rates, values) is first
    with pytest.raises(ValueError, match="read-only"):
        first.data[0] = 2.0
    variants = [
        (SPEC, values[::-1]),
        (SPEC, [*values[:-1], "c-other"]),
        (ldp.Rappor(num_bits=64, num_hashes=2, num_cohorts=32, f="1/4", p="1/4", q="3/4"), values),
        (ldp.Rappor(num_bits=32, num_hashes=3, num_cohorts=32, f="1/4", p="1/4", q="3/4"), values),
        (ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=16, f="1/4", p="1/4", q="3/4"), values),
        (
            ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=32, f="1/4", p="1/4", q="3/4", hash="md5"),
            values,
        ),
    ]
    for spec, cands in variants:
        x = design_matrix(spec, cands)
        assert x is not first
        k = spec.num_bits
        for s in (0, len(cands) - 1):  # the matrix is the one of these candidates and this spec
            for j in (0, spec.num_cohorts - 1):
                expected = np.zeros(k)
                expected[list(set(spec.bit_positions(cands[s], j)))] = 1
                np.testing.assert_array_equal(x[j * k : (j + 1) * k, s].toarray().ravel(), expected)
    assert design_matrix(SPEC, values) is first


def test_candidates_digest_counts_the_split_between_values():
    assert candidates_digest([b"ab", b"c"]) != candidates_digest([b"a", b"bc"])
    assert candidates_digest([b"a", b""]) != candidates_digest([b"a"])


def test_design_cache_evicts_least_recently_used():
    cache = DesignCache(max_entries=2, max_nonzeros=10_000)
    x = design_matrix(SPEC, ["a", "b"])
    cache.put("one", x)
    cache.put("two", x)
    assert cache.get("one") is x  # "two" is now the least recent
    cache.put("three", x)
    assert cache.get("two") is None and cache.get("one") is x and len(cache) == 2
    big = design_matrix(SPEC, [f"v{i}" for i in range(200)])
    cache.put("big", big)  # more nonzeros than the whole budget: not stored
    assert cache.get("big") is None


@pytest.mark.parametrize("reps", [2, pytest.param(10, marks=pytest.mark.slow)])
def test_screened_refit_agrees_with_dense_within_standard_errors(reps):
    # 5 true values (shares 0.1-0.3 of 100,000 reports, far above the detection frequency) and 300
    # never-reported candidates. The screened and the dense decodes estimate the same counts from
    # the same data, so |a − b| ≤ z·(SE_a + SE_b) (sd(a − b) ≤ sd(a) + sd(b)), alpha = 1e-6 over
    # the 5 values and `reps` populations (Bonferroni, two-sided). Both detect every true value.
    # The fast set decodes the first 2 populations, the slow set all 10 (each decode pair takes ~1 s).
    rng = np.random.default_rng(5)
    shares = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    candidates = TRUE + [f"bogus-{i}" for i in range(300)]
    z = scipy.stats.norm.isf(1e-6 / (2 * len(TRUE) * reps))
    for _ in range(reps):
        cc, bc = draw_counts(SPEC, TRUE, rng.multinomial(100_000, shares), rng)
        dense = decode_result(SPEC, cc, bc, candidates, screen=False).table.iloc[: len(TRUE)]
        result = decode_result(SPEC, cc, bc, candidates, screen=True)
        assert result.screened and result.num_selected <= DENSE_LIMIT
        screened = result.table.iloc[: len(TRUE)]
        gap = np.abs(screened["estimate"].to_numpy() - dense["estimate"].to_numpy())
        assert (gap <= z * (screened["std_error"].to_numpy() + dense["std_error"].to_numpy())).all()
        assert dense["detected"].all() and screened["detected"].all()


@pytest.mark.slow  # a level test over 6 × 600 candidates (3-4 s); the fast set keeps the screened refit's agreement
def test_many_candidates_are_screened_to_the_dense_limit_and_hold_the_level():
    # 5 true values and 600 never-reported candidates (> DENSE_LIMIT): the default decode screens and
    # refits at most DENSE_LIMIT candidates. Tested each at level 0.10 (correction "none"), the
    # 600 × R never-reported candidates are rejected at most at the nominal rate: the count must not
    # exceed binom.isf(1e-6, 600·R, 0.10) (alpha = 1e-6; within a population their z are nearly
    # independent, as tests/aggregator/test_rappor_decode.py measures for the dense decode).
    rng = np.random.default_rng(23)
    shares = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    bogus = [f"bogus-{i}" for i in range(600)]
    reps, level = 6, 0.10
    rejected = 0
    for _ in range(reps):
        cc, bc = draw_counts(SPEC, TRUE, rng.multinomial(100_000, shares), rng)
        result = decode_result(SPEC, cc, bc, TRUE + bogus, correction="none", alpha=level)
        assert result.screened and result.num_selected <= DENSE_LIMIT
        assert result.table["detected"].iloc[: len(TRUE)].all()
        rejected += int(result.table["detected"].iloc[len(TRUE) :].sum())
    assert rejected <= scipy.stats.binom.isf(1e-6, reps * len(bogus), level)


def test_batch_hashing_reproduces_the_pinned_vectors():
    # tests/vectors/vectors.json pins MurmurHash3 x64-128 digests and Bloom positions (mmh3 and md5)
    vectors = json.loads(
        (Path(__file__).resolve().parents[1] / "vectors" / "vectors.json").read_text(encoding="utf-8")
    )
    bloom = vectors["bloom"]
    for case in bloom["mmh3_x64_128"]:
        h1, h2 = murmur3_x64_128_batch([bytes.fromhex(case["data"])], [case["seed"]])
        assert (int(h1[0, 0]), int(h2[0, 0])) == (int(case["h1"]), int(case["h2"]))
    for case in bloom["positions"]:
        out = bloom_positions_batch(
            [case["value"]], [case["cohort"]], case["num_hashes"], case["num_bits"], case["hash"]
        )
        assert out[0, 0].tolist() == case["positions"]
