"""The subset tree's pairs of leaves (one rank a pair) and its table of few-member leaves (ldp.client.subset_tree).

Statistical tests run on a seeded generator's words (the sampler reads any
source's bits the same way) at a significance level ALPHA = 1e-6 per test
(Bonferroni over its comparisons).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ldp.client import GeneratorSource
from ldp.client.bits import BitSource
from ldp.client.subset_tree import (
    LEAF,
    PAIR,
    _leaf_patterns,
    _packbits_patterns,
    _small_leaves,
    _unrank,
    pair_tables,
    pair_unrank,
    subset_packed,
    uses_pairs,
)

ALPHA = 1e-6


def seeded_bits(seed: int) -> BitSource:
    return BitSource(GeneratorSource(np.random.default_rng(seed)))  # insecure-ok: a reproducible test stream


def chi_square_ok(counts: np.ndarray, probabilities: np.ndarray, alpha: float) -> bool:
    """Chi-square goodness of fit at level ``alpha`` (every expected count here is ≥ 5)."""
    expected = np.asarray(probabilities, dtype=float) * counts.sum()
    assert expected.min() >= 5
    return float(stats.chisquare(counts, expected).pvalue) > alpha


@pytest.mark.parametrize("shape", [(64, 6), (5, 3), (63, 64), (64, 63), (12, 0), (64, 64)])
def test_pair_unranking_is_one_to_one(shape):
    """Every rank below C(s, K) (where at most 20,000; else 2,000 spread over them, both ends) gives a distinct
    (j, r_L < C(s_L, j), r_R < C(s_R, K − j)), for every K whose pair fits one rank: with the leaves'
    bijections, a bijection onto the pair's K-subsets."""
    left, right = shape
    table = pair_tables((shape,))
    for k in range(min(left + right, LEAF) + 1):
        assert table.ranked[k] == (math.comb(left + right, k) <= 1 << 62)
        if not table.ranked[k]:
            continue
        count = math.comb(left + right, k)
        ranks = (
            np.arange(count)
            if count <= 20_000
            else np.array([i * (count // 1999) for i in range(1999)] + [count - 1])
        )
        j, rank_left, rank_right = pair_unrank(table, np.full(ranks.size, k), ranks.astype(np.int64), k)
        sizes_left = np.array([math.comb(left, int(v)) for v in j], dtype=object)
        sizes_right = np.array([math.comb(right, k - int(v)) for v in j], dtype=object)
        assert np.all((j >= 0) & (j <= min(k, left)) & (k - j <= right))
        assert np.all((rank_left >= 0) & (rank_left < sizes_left)) and np.all(
            (rank_right >= 0) & (rank_right < sizes_right)
        )
        assert len(set(zip(j.tolist(), rank_left.tolist(), rank_right.tolist(), strict=True))) == ranks.size


@pytest.mark.parametrize(("d", "x"), [(140, 3), (140, 100), (140, 135), (70, 65)])
def test_pair_path_subsets_are_uniform(d, x):
    """Pairs forced: k = 2 others of x, every one of the C(d − 1, 2) subsets equally likely (χ², α = 1e-6).

    d = 140: one split level above the pairs (128 and 12 positions), x in the first leaf, the second,
    the last short pair; d = 70: one pair of 64 and 6 positions, no split.
    """
    n = 50_000
    packed = subset_packed(seeded_bits(d + x), np.full(n, x), np.zeros(n, dtype=bool), 2, d, pairs=True)
    bits = np.unpackbits(packed, axis=1)
    assert np.all(bits[:, d:] == 0) and not bits[:, x].any()
    rows, positions = np.nonzero(bits[:, :d])
    assert np.array_equal(rows, np.repeat(np.arange(n), 2))
    other = positions - (positions > x)  # other value o: domain index o + (o ≥ x)
    low, high = other[0::2], other[1::2]
    index = high * (high - 1) // 2 + low  # the combinatorial number system: C(high, 2) + low
    cells = math.comb(d - 1, 2)
    assert chi_square_ok(np.bincount(index, minlength=cells), np.full(cells, 1 / cells), ALPHA)


def test_pairs_past_one_rank_are_split():
    """d = 128 (one pair), x = 0, ω = 15: a held row's K = 14 fits one rank, another's K = 15 does not (its
    pair is split by a hypergeometric draw). Per group, the left leaf's count follows the hypergeometric
    law (χ²) and each other position is a member with probability K/127 (z-tests); α = 1e-6 over both."""
    d, omega, n = 128, 15, 20_000
    table = pair_tables(((64, 64), (63, 64), (64, 63)))
    assert table.ranked[(PAIR + 1) + 14] and not table.ranked[(PAIR + 1) + 15]  # x's pair: (63, 64)
    holds = np.arange(n) % 2 == 0
    packed = subset_packed(seeded_bits(4), np.zeros(n, dtype=np.int64), holds, omega, d, pairs=True)
    bits = np.unpackbits(packed, axis=1)[:, :d].astype(np.int64)
    assert np.array_equal(bits[:, 0].astype(bool), holds) and np.all(bits.sum(axis=1) == omega)
    tests = 2 * (1 + d - 1)
    for held in (True, False):
        k, group = omega - held, bits[holds == held]
        left = group[:, 1:LEAF].sum(axis=1)
        pmf = np.array([math.comb(LEAF - 1, j) * math.comb(LEAF, k - j) for j in range(k + 1)], dtype=float)
        pmf /= pmf.sum()
        common = np.flatnonzero(
            pmf * group.shape[0] >= 5
        )  # the rare tails pooled into the cells next to them
        low, high = int(common[0]), int(common[-1])
        observed = np.bincount(np.clip(left, low, high) - low, minlength=high - low + 1)
        expected = np.bincount(np.clip(np.arange(k + 1), low, high) - low, weights=pmf)
        assert chi_square_ok(observed, expected, ALPHA / tests)
        q, m = k / (d - 1), group.shape[0]
        z = stats.norm.isf(ALPHA / (2 * tests))
        assert np.all(np.abs(group[:, 1:].sum(axis=0) - m * q) <= z * math.sqrt(m * q * (1 - q)))


def test_small_leaves_are_looked_up_as_unranked():
    """A leaf of at most 3 members takes the pattern _unrank gives its rank (every rank, four leaf sizes),
    mixed with larger leaves, which are unranked."""
    sizes = (5, 6, 63, 64)
    offset, _ = _small_leaves(sizes)
    keys, ranks = [], []
    for size in sizes:
        for m in range(min(size, 5) + 1):
            count = min(math.comb(size, m), 50_000)
            keys.append(np.full(count, (LEAF + 1) * size + m))
            ranks.append(np.arange(count))
            assert (offset[(LEAF + 1) * size + m] >= 0) == (m <= 3)
    key = np.concatenate(keys)
    rank = np.concatenate(ranks).astype(np.int64)
    order = np.random.default_rng(2).permutation(key.size)  # small and large leaves interleaved
    key, rank = key[order], rank[order]
    assert np.array_equal(_leaf_patterns(key, rank, sizes), _unrank(key, rank, sizes, _packbits_patterns()))


def test_pairs_serve_sparse_subsets():
    assert uses_pairs(71, 1024) and uses_pairs(194, 4096)  # 8.9 and 6.1 members a pair on average
    assert not uses_pairs(122, 1024)  # 15.3
    assert not uses_pairs(3, 64)  # one leaf
