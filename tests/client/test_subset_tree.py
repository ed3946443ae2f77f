"""Subset selection's secure batch sampler (ldp.client.subset_tree) and its lazy inversion (ldp.client.inversion).

Statistical tests run on a seeded generator's words (the samplers read any
source's bits the same way; a seeded source makes the test reproducible) at
a significance level ALPHA = 1e-6 per test (Bonferroni over its comparisons).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ldp.client import CountingSource, GeneratorSource, secure_encode_batch, subset_tree
from ldp.client.bits import BitSource
from ldp.client.inversion import PRECISION, CdfBounds, invert
from ldp.client.subset import uses_tree
from ldp.client.subset_tree import coin_bounds, split_bounds, subset_packed
from ldp.specs.subset import SubsetSelection

ALPHA = 1e-6


def seeded_bits(seed: int) -> BitSource:
    return BitSource(GeneratorSource(np.random.default_rng(seed)))  # insecure-ok: a reproducible test stream


class SeededSecure(CountingSource):
    """A seeded generator's words, counted and flagged secure so the secure batch takes its CSPRNG path."""

    def __init__(self, seed: int):
        super().__init__(GeneratorSource(np.random.default_rng(seed)))  # insecure-ok: tests only
        self.secure = True  # tests only: a seeded generator is never a CSPRNG


def subset_entropy_bits(spec: SubsetSelection) -> float:
    """A report's entropy: h(p) + p·log2 C(d − 1, ω − 1) + (1 − p)·log2 C(d − 1, ω)."""
    d, p, w = spec.domain_size, float(spec.p), spec.omega
    return (
        -p * math.log2(p)
        - (1 - p) * math.log2(1 - p)
        + p * math.log2(math.comb(d - 1, w - 1))
        + (1 - p) * math.log2(math.comb(d - 1, w))
    )


def chi_square_ok(counts: np.ndarray, probabilities: np.ndarray, alpha: float = ALPHA) -> bool:
    """Chi-square goodness of fit at level ``alpha`` (every expected count here is ≥ 5)."""
    expected = np.asarray(probabilities, dtype=float) * counts.sum()
    assert expected.min() >= 5
    return float(stats.chisquare(counts, expected).pvalue) > alpha


def subsets_of(packed: np.ndarray, d: int) -> list[tuple[int, ...]]:
    rows = np.unpackbits(packed, axis=1)[:, :d]
    return [tuple(np.flatnonzero(row).tolist()) for row in rows]


@pytest.mark.parametrize(
    ("d", "omega", "x"), [(7, 3, 0), (7, 3, 4), (7, 2, 6), (9, 4, 8), (34, 2, 0), (34, 2, 17), (70, 2, 65)]
)
def test_subsets_are_uniform_given_their_size(d, omega, x):
    """Every subset of ω − holds others of x comes out with probability 1/C(d − 1, k): χ² over all of them (α = 1e-6).

    d = 34 spreads a leaf's members over three quarters (16, 16, 1 positions); d = 70 over two
    leaves (64 and 6 positions, x in the second), so the leaf counts and the quarters' compositions
    are drawn too.
    """
    n = 40_000
    holds = np.arange(n) % 2 == 0
    packed = subset_packed(seeded_bits(d * 10 + omega + x), np.full(n, x), holds, omega, d)
    subsets = subsets_of(packed, d)
    assert all(len(s) == omega for s in subsets)
    assert all((x in s) == h for s, h in zip(subsets, holds.tolist(), strict=True))
    for held in (True, False):
        others = [
            tuple(o for o in s if o != x) for s, h in zip(subsets, holds.tolist(), strict=True) if h == held
        ]
        every = list(itertools.combinations([o for o in range(d) if o != x], omega - held))
        index = {s: i for i, s in enumerate(every)}
        counts = np.bincount([index[s] for s in others], minlength=len(every))
        assert chi_square_ok(counts, np.full(len(every), 1 / len(every)), ALPHA / 2)


@pytest.mark.parametrize("size", [5, 16, 17, 33, 40, 63, 64])
@pytest.mark.parametrize("linear_steps", [0, 2])
def test_leaf_unranking_is_one_to_one_onto_the_weight_m_patterns(size, linear_steps, monkeypatch):
    """Every rank below C(s, m) (where at most 20,000; else 2,000 spread over them, both ends) gives a distinct
    pattern of m of the leaf's s positions, through one table of several leaf sizes; with no linear
    steps every rank past its guide entry bisects."""
    from ldp.client.subset_tree import _leaf_tables, _unrank

    monkeypatch.setattr(subset_tree, "_LINEAR_STEPS", linear_steps)

    sizes, patterns = tuple(sorted({size, 64, 63})), _leaf_tables()[4]
    for m in range(size + 1):
        count = math.comb(size, m)
        ranks = (
            np.arange(count)
            if count <= 20_000
            else np.array([i * (count // 1999) for i in range(1999)] + [count - 1])
        )
        subsets = _unrank(np.full(ranks.size, 65 * size + m), ranks.astype(np.int64), sizes, patterns)
        assert np.all(np.bitwise_count(subsets) == m)
        assert size == 64 or not np.any(subsets >> np.uint64(size))
        assert np.unique(subsets).size == ranks.size


@pytest.mark.parametrize(
    ("d", "omega", "x"), [(65, 64, 64), (65, 1, 64), (65, 64, 0), (128, 127, 5), (129, 2, 128), (1, 1, 0)]
)
def test_edge_sizes_and_weights(d, omega, x):
    """Full and near-empty subsets, a last leaf of one position holding x, a domain of one value: ω members, x as drawn."""
    n = 300
    holds = np.arange(n) % 2 == 0
    if omega == d:  # only x: the subset must hold it
        holds[:] = True
    packed = subset_packed(seeded_bits(d + omega), np.full(n, x), holds, omega, d)
    bits = np.unpackbits(packed, axis=1)
    assert np.all(bits[:, d:] == 0)
    assert np.all(bits[:, :d].sum(axis=1) == omega)
    assert np.array_equal(bits[:, x].astype(bool), holds)


@pytest.mark.parametrize(("d", "x"), [(200, 0), (200, 63), (200, 64), (200, 199), (130, 100)])
def test_each_position_is_included_with_its_probability(d, x):
    """Across leaves, halves and quarters, the partial last leaf and x's leaf: P[o ∈ S] = k/(d − 1) (z-test, α = 1e-6)."""
    n, omega = 20_000, d // 3
    holds = np.zeros(n, dtype=bool)
    packed = subset_packed(seeded_bits(d + x), np.full(n, x), holds, omega, d)
    included = np.unpackbits(packed, axis=1)[:, :d].sum(axis=0)
    assert included[x] == 0
    others = np.delete(included, x)
    q = omega / (d - 1)
    z = stats.norm.isf(ALPHA / (2 * (d - 1)))
    assert np.all(np.abs(others - n * q) <= z * math.sqrt(n * q * (1 - q)))


def test_secure_batch_takes_the_tree_and_follows_the_spec():
    """The secure batch at d = 70 (ε = 1): ω members, x held with p, others with (ω − p)/(d − 1) (z-tests, α = 1e-6)."""
    spec = SubsetSelection(range(70), 1.0)
    assert uses_tree(spec)
    n, x = 20_000, 5
    batch = secure_encode_batch(spec, np.full(n, x), indices=True, source=SeededSecure(11))
    bits = np.unpackbits(batch.bits, axis=1)[:, :70]
    assert np.all(bits.sum(axis=1) == spec.omega)
    z = stats.norm.isf(ALPHA / (2 * 70))
    for position, freq in enumerate(bits.sum(axis=0)):
        prob = float(spec.p if position == x else spec.exact_q_star)
        assert abs(freq - n * prob) <= z * math.sqrt(n * prob * (1 - prob)), position


@pytest.mark.parametrize("d", [64, 1024])
def test_secure_batch_reads_near_the_entropy(d):
    """Bytes drawn per report ≤ 1.25× the report's entropy at ε = 1 (Floyd's batch: 3.2× at d = 64, 5.2× at 1,024)."""
    spec = SubsetSelection(range(d), 1.0)
    n = 10_000
    source = SeededSecure(d)
    secure_encode_batch(spec, np.arange(n) % d, indices=True, source=source)
    entropy = subset_entropy_bits(spec)
    assert source.bytes * 8 / n <= 1.25 * entropy


@pytest.mark.parametrize(
    ("d", "epsilon"),
    [
        (1024, 2.0),
        (1024, 2.6),
        pytest.param(4096, 2.6, marks=pytest.mark.slow),
        pytest.param(4096, 3.0, marks=pytest.mark.slow),
    ],
)
def test_sparser_subsets_take_the_tree_near_the_entropy(d, epsilon):
    """ω ≈ 0.12 d, 0.07 d (d = 1,024 and 4,096), 0.05 d: the tree, ≤ 1.3× the entropy (measured 1.26×, 1.19×,
    1.19×, 1.21×; Floyd read 2.6×, 2.1×, 2.5×, 2.3×); from 0.07 d on, its last split is by pairs of leaves."""
    spec = SubsetSelection(range(d), epsilon)
    assert uses_tree(spec)
    n = 10_000
    source = SeededSecure(d + 1)
    batch = secure_encode_batch(spec, np.arange(n) % d, indices=True, source=source)
    assert np.all(np.unpackbits(batch.bits, axis=1)[:, :d].sum(axis=1) == spec.omega)
    assert source.bytes * 8 / n <= 1.3 * subset_entropy_bits(spec)


def test_sparse_subsets_take_floyds_steps_on_bits():
    """A secure batch of sparse subsets (ω = 18 of 1,024): Floyd's uniforms on about log2 of their bounds.

    Floyd reads at least Σ log2(j + 1) over its ω steps, about 1.4× the entropy here; on whole words it
    read 2.4×. The bound checked is 1.6× the entropy (the steps' rejection costs a few percent).
    """
    d, n = 1024, 8192
    spec = SubsetSelection(range(d), 4.0)
    assert not uses_tree(spec)
    source = SeededSecure(11)
    batch = secure_encode_batch(spec, np.arange(n) % d, indices=True, source=source)
    sizes = np.unpackbits(batch.bits, axis=1)[:, :d].sum(axis=1)
    assert set(sizes.tolist()) <= {spec.omega}
    entropy = subset_entropy_bits(spec)
    assert source.bytes * 8 / n <= 1.6 * entropy


def test_uniform_rows_on_bits_are_uniform():
    """uniform_below_each_bits: each row's integers fit its bound (seeded χ² per row, α = 1e-6)."""
    from ldp.client.bits import uniform_below_each_bits

    bounds = [3, 7, 10, 1000, 1, 2]
    draws = uniform_below_each_bits(seeded_bits(5), bounds, 20_000)
    assert draws.shape == (6, 20_000) and not draws[4].any()
    for row, bound in zip(draws, bounds):
        if bound > 1:
            counts = np.bincount(row, minlength=bound)
            assert counts.size == bound and chi_square_ok(counts, np.full(bound, 1 / bound))


def test_uniform_rows_on_bits_of_whole_unit_widths():
    """Bounds whose units are exactly 8, 16 or 32 bits (the limit 2^width overflowed them: an endless redraw).

    Each row's integers fall below its bound; the 8-bit rows (bounds 200 and 256) pass a seeded χ² at
    α = 1e-6, the wider ones a χ² of their top 4 bits' buckets (equal where the bound is a power of two,
    else the exact share of each bucket).
    """
    from ldp.client.bits import rejection_width, uniform_below_each_bits

    bounds = [200, 256, 65_000, 1 << 16, 3_000_000_000, 1 << 32]
    assert [rejection_width(b) for b in bounds] == [8, 8, 16, 16, 32, 32]
    draws = uniform_below_each_bits(seeded_bits(6), bounds, 20_000)
    for row, bound in zip(draws, bounds, strict=True):
        assert row.min() >= 0 and row.max() < bound
        buckets = -(-bound // 16)  # 16 buckets of ⌈b/16⌉ integers (the last may be short)
        counts = np.bincount(row // buckets, minlength=16)
        sizes = np.minimum(buckets, bound - buckets * np.arange(16))
        assert chi_square_ok(counts, sizes / bound, ALPHA / len(bounds))


def test_floyds_steps_on_bits_below_256_end():
    """d = 256: Floyd's bounds 245–255 read 8-bit units (they redrew forever); every subset has ω members."""
    d, n = 256, 8192
    spec = SubsetSelection(range(d), 3.0)
    batch = secure_encode_batch(spec, np.arange(n) % d, indices=True, source=SeededSecure(12))
    sizes = np.unpackbits(batch.bits, axis=1)[:, :d].sum(axis=1)
    assert set(sizes.tolist()) == {spec.omega}


def test_sparse_and_small_specs_keep_floyd():
    assert not uses_tree(SubsetSelection(range(1024), 4.0))  # ω = 18: Floyd's 18 steps are faster
    assert uses_tree(SubsetSelection(range(1024), 2.6))  # ω = 71 ≥ d/16: Floyd read 2.1× the entropy
    assert not uses_tree(SubsetSelection(range(1024), 3.0))  # ω = 49 < d/16: Floyd is the faster
    assert uses_tree(SubsetSelection(range(1024), 2.0))  # ω = 122
    assert uses_tree(SubsetSelection(range(1024), 1.5))  # ω = 187
    assert not uses_tree(SubsetSelection(range(256), 2.0))  # ω = 31 < 0.15 d
    assert uses_tree(SubsetSelection(range(4096), 3.0))  # ω = 194 ≥ d/64: Floyd read 2.3× the entropy
    assert uses_tree(SubsetSelection(range(4096), 4.0))  # ω = 74 ≥ d/64: the tree is the faster
    assert not uses_tree(SubsetSelection(range(4096), 6.0))  # ω = 10 < d/64
    assert uses_tree(SubsetSelection(range(2048), 3.0))  # ω = 97 ≥ d/64: Floyd read 2.3× the entropy
    assert not uses_tree(SubsetSelection(range(16), 1.0))
    assert not uses_tree(SubsetSelection(range((1 << 14) + 1), 1.0))  # the cached tables would pass ~100 MB
    assert uses_tree(SubsetSelection(range(1 << 14), 1.0))


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (3, 4),
        (32, 32),
        (31, 32),
        (64, 0),
        (100, 37),
        (512, 511),
        pytest.param(4096, 4095, marks=pytest.mark.slow),  # about 9 s of exact big-integer sums
    ],
)
def test_split_bounds_enclose_the_exact_cumulative_probabilities(left, right):
    """low ≤ F(x)·2^P ≤ high for every count and column (x = origin + column, tails included), F exact."""
    ks = np.unique(np.linspace(0, left + right, 13).astype(np.int64))
    bounds, entropy = split_bounds(np.full(ks.size, left), np.full(ks.size, right), ks)
    assert bounds.origin is not None
    for r, k in enumerate(ks.tolist()):
        exact = bounds.exact(r)
        total = math.comb(left + right, k)
        assert exact[-1] == total and len(exact) == min(k, left) + 1
        for c in range(bounds.low.shape[1]):
            x = int(bounds.origin[r]) + c
            cumulative = 0 if x < 0 else exact[min(x, len(exact) - 1)]
            scaled = cumulative << PRECISION  # F(x)·2^P·total
            assert int(bounds.low[r, c]) * total <= scaled <= int(bounds.high[r, c]) * total, (k, x)
    assert np.all(entropy >= 0)
    assert bounds.low.shape[1] <= max(left, 400)  # a window of the outcomes once they are many


def test_draws_in_the_tails_outside_the_window_are_exact(monkeypatch):
    """A window of the mode ± 1 only: most draws fall in its tails, go to exact integers, and follow the pmf (χ²)."""
    monkeypatch.setattr(subset_tree, "_WINDOW_SIGMAS", 0)
    monkeypatch.setattr(subset_tree, "_WINDOW_MIN", 1)
    left, right, k = 40, 40, 40
    bounds, _ = split_bounds(np.array([left]), np.array([right]), np.array([k]))
    assert bounds.low.shape[1] == 5
    draws = invert(seeded_bits(8), bounds, np.zeros(4_000, dtype=np.int64), 3)
    pmf = np.array([math.comb(left, j) * math.comb(right, k - j) for j in range(k + 1)], dtype=float)
    pmf /= pmf.sum()
    counts = np.bincount(draws, minlength=k + 1)
    keep = pmf * draws.size >= 5  # the rare outcomes pooled into the lowest one kept
    observed, expected = counts[keep].copy(), pmf[keep].copy()
    observed[0] += counts[~keep].sum()
    expected[0] += pmf[~keep].sum()
    assert observed.sum() == draws.size
    assert chi_square_ok(observed, expected)


def test_inversion_is_exact_when_the_bounds_decide_nothing():
    """Bounds [0, 2^P] everywhere but the end: every draw goes to the exact integers, and still follows F (χ²)."""
    probs = [Fraction(1, 7), Fraction(2, 7), Fraction(4, 7)]
    loose = np.array([[0, 0, 1 << PRECISION]], dtype=np.int64)
    wide = np.array([[1 << PRECISION, 1 << PRECISION, 1 << PRECISION]], dtype=np.int64)
    bounds = CdfBounds(loose, wide, lambda _row: [1, 3, 7])
    draws = invert(seeded_bits(3), bounds, np.zeros(7_000, dtype=np.int64), 3)
    assert chi_square_ok(np.bincount(draws, minlength=3), np.array([float(p) for p in probs]))


def test_coin_inversion_reads_about_its_entropy():
    """An exact coin of 1/3 by lazy inversion: P[True] = 1/3 (z-test), about h(1/3) + 2 bits a coin, not 16."""
    source = CountingSource(
        GeneratorSource(np.random.default_rng(5))
    )  # insecure-ok: a reproducible test stream
    n = 50_000
    heads = invert(BitSource(source), coin_bounds(Fraction(1, 3)), np.zeros(n, dtype=np.int64), 2) == 0
    se = math.sqrt(n * (1 / 3) * (2 / 3))
    assert abs(int(heads.sum()) - n / 3) <= stats.norm.isf(ALPHA / 2) * se
    assert source.bytes * 8 / n <= 3.5


def test_no_users_give_an_empty_batch_and_huge_nodes_are_refused():
    """Review findings: 0 users and d > 64 raised numpy's ValueError; a node past float64's exact integers is refused."""
    from ldp.client.bits import bit_source
    from ldp.errors import ParameterError

    out = subset_tree.subset_packed(
        bit_source(seeded_bits(1)), np.zeros(0, dtype=np.int64), np.zeros(0, bool), 30, 130
    )
    assert out.shape == (0, 17) and out.dtype == np.uint8
    with pytest.raises(ParameterError, match="at most"):
        split_bounds(np.array([1 << 26]), np.array([0]), np.array([3]))
