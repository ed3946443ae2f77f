"""Uniform subsets near their entropy: hypergeometric splits down to 64-position leaves (subset selection's secure batch).

A user with true index x, whose subset holds x (probability p) or not, needs
k = ω − 1 (or ω) other members uniform among the d − 1 other values: log2
C(d − 1, k) bits of entropy. Floyd's algorithm draws them in order and reads
far more (:mod:`ldp.client.subset`). This sampler draws the same
distribution without order:

1. The domain is cut into leaves of 64 positions (the last may be shorter),
   and the leaves into a binary tree (leaf ranges halved level by level).
   A node's *size* is its positions other than x.
2. From the root down, a node of size S_L + S_R holding K members gives its
   left child X of them, X hypergeometric: P[X = j] = C(S_L, j) C(S_R, K − j)
   / C(S_L + S_R, K), the right child K − X. For a uniform K-subset of a set
   cut in two parts, the count in the first part is hypergeometric and, given
   it, the two parts are independent uniform subsets; by induction over the
   tree, the leaf counts are those of a uniform k-subset and, given them,
   the leaves' members are independent uniform subsets of their sizes.
3. A leaf of size s with m members takes the m-subset of rank r, r uniform
   in [0, C(s, m)) (< 2^61), through a bijection onto the m-subsets
   (:func:`_unrank`: by the composition of its members over the leaf's four
   quarters of 16 positions, found in a guided table, then each quarter's
   rank, whose pattern is looked up; a leaf of at most 3 members looks its
   pattern up in one table, :func:`_small_leaves`). x's leaf has a hole at
   x, filled by the holds coin.
4. Sparse subsets (:func:`uses_pairs`) end the splits one level early, at
   pairs of leaves: a pair of s positions holding K ≤ 64 members, when
   C(s, K) ≤ 2^62, draws one rank below C(s, K) instead of a split and
   two leaf ranks, and that rank's composition over the two leaves gives
   the left leaf's count and both leaves' ranks (:func:`pair_unrank`, a
   bijection); other pairs are split as in 2.

Every draw is exact: the hypergeometric counts and the holds coin by lazy
inversion (:func:`ldp.client.inversion.invert`), the ranks by rejection on
a few bits more than log2 C(s, m). By the chain rule the entropies add up to
exactly h(p) + log2 C(d − 1, k); each draw adds at most a few bits over its
share.

The hypergeometric bounds are computed in floating point with a proven
error bound (:func:`split_bounds`), on a window of the outcomes around the
mode: each probability relative to the mode is a product of at most W
exact-integer ratios (two roundings each, the division and the running
product; W the window's width), cumulated by
at most W additions and divided once, so |F̃_j − F_j| ≤ (6W + 2)·2^-53
(Higham, Accuracy and Stability of Numerical Algorithms, §3.1 and §4.2:
every float64 operation is correctly rounded); the tails outside the window
are bounded by geometric series (the distribution is log-concave); the
bounds are widened by both and the outcome of a draw is decided only where
they prove it (the tails never: they go to exact integers).
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

import numpy as np

from ldp.client.bits import BitSource, rejection_width
from ldp.client.inversion import PRECISION, CdfBounds, coin_bounds, invert
from ldp.errors import ParameterError

__all__ = [
    "LEAF",
    "PAIR",
    "PairTables",
    "coin_bounds",
    "pair_tables",
    "pair_unrank",
    "split_bounds",
    "subset_packed",
    "uses_pairs",
]

#: Positions per leaf: a leaf's subset is one uniform rank below C(64, m) < 2^61.
LEAF = 64
_ONE = np.int64(1 << PRECISION)
_UNIT = 2.0**-53


def _cumulative(left: int, right: int, k: int, width: int) -> list[int]:
    """Exact cumulative counts of the hypergeometric split: A_j = Σ_{i ≤ j} C(left, i)·C(right, k − i)."""
    out, total = [], 0
    for j in range(width):
        if 0 <= k - j <= right and j <= left:
            total += math.comb(left, j) * math.comb(right, k - j)
        out.append(total)
    return out


#: Half-width of a split table's window of outcomes: this many standard deviations and ``_WINDOW_MIN`` more
#: outcomes (the tails outside hold less than 2^-100 of the probability).
_WINDOW_SIGMAS = 12
_WINDOW_MIN = 16


def _windows(left: np.ndarray, right: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each split's window of outcomes [a, b]: the mode ± (12 σ + 16 outcomes), within the support."""
    n = left + right
    xmin = np.maximum(0, k - right)
    xmax = np.maximum(np.minimum(k, left), xmin)
    mode = np.clip(((k + 1) * (left + 1)) // (n + 2), xmin, xmax)
    variance = k * (left / np.maximum(n, 1)) * (right / np.maximum(n, 1)) * (n - k) / np.maximum(n - 1, 1)
    half = np.ceil(_WINDOW_SIGMAS * np.sqrt(np.maximum(variance, 0.0))).astype(np.int64) + _WINDOW_MIN
    return np.maximum(xmin, mode - half), np.minimum(xmax, mode + half)


def _split_block(
    left: np.ndarray, right: np.ndarray, k: np.ndarray, start: np.ndarray, stop: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`split_bounds`' low and high bounds and entropies for some of its rows (float64, see the module).

    Column c of row r is outcome start[r] − 1 + c: the window [start, stop]
    after one column for the lower tail (X < start).
    """
    sl, sr, kk, a, b = left[:, None], right[:, None], k[:, None], start[:, None], stop[:, None]
    x = a - 1 + np.arange(width, dtype=np.int64)[None, :]
    xmin = np.maximum(0, kk - sr)
    xmax = np.maximum(np.minimum(kk, sl), xmin)  # a row of no valid split: one outcome
    mode = np.clip(((kk + 1) * (sl + 1)) // (sl + sr + 2), a, b)
    num = ((sl - x) * (kk - x)).astype(np.float64)  # C(.)C(.) ratio p(x + 1)/p(x) = num/den, exact integers
    den = ((x + 1) * (sr - kk + x + 1)).astype(np.float64)
    up = (x >= mode) & (x < b)
    down = (x >= a) & (x < mode)
    forward = np.divide(num, den, out=np.ones_like(num), where=up)  # p(x + 1)/p(x) from the mode up
    backward = np.divide(den, num, out=np.ones_like(num), where=down)  # p(x)/p(x + 1) below the mode
    ahead = np.ones_like(num)
    np.cumprod(forward[:, :-1], axis=1, out=ahead[:, 1:])  # ∏_{mode ≤ y < x} p(y + 1)/p(y) = p(x)/p(mode)
    behind = np.cumprod(backward[:, ::-1], axis=1)[:, ::-1]  # ∏_{x ≤ y < mode} p(y)/p(y + 1)
    q = ahead * behind  # one factor is exactly 1: p(x)/p(mode) ≤ 1, no overflow
    q[(x < a) | (x > b)] = 0.0
    cumulative = np.cumsum(q, axis=1)
    total = cumulative[:, -1:]
    # the tails outside the window, bounded by geometric series (log-concave: the ratios fall with x),
    # doubled for their own rounding; zero where the window reaches the support's end
    rows = np.arange(left.size)
    first, last = q[rows, 1][:, None], q[rows, (b - a + 1).reshape(-1)][:, None]
    below_ratio = np.divide(
        den[rows, 0][:, None], num[rows, 0][:, None], where=a > xmin, out=np.zeros_like(first)
    )
    col_b = (b - a + 1).reshape(-1)
    above_ratio = np.divide(
        num[rows, col_b][:, None], den[rows, col_b][:, None], where=b < xmax, out=np.zeros_like(first)
    )
    tail_low = np.where(a > xmin, 2 * first * below_ratio / (1 - below_ratio), 0.0)
    tail_high = np.where(b < xmax, 2 * last * above_ratio / (1 - above_ratio), 0.0)
    f_low = cumulative / (total + tail_low + tail_high)
    f_high = (tail_low + cumulative) / total
    slack = 2 * ((8 * width + 64) * _UNIT + 2.0**-900)  # twice the proven bound: the ± below rounds too
    scale = float(1 << PRECISION)
    low = np.floor((f_low - slack) * scale).clip(0, scale).astype(np.int64)
    high = np.ceil((f_high + slack) * scale).clip(0, scale).astype(np.int64)
    below, past = x < xmin, x >= xmax  # exactly 0 and 1
    low[below], high[below] = 0, 0
    low[past], high[past] = _ONE, _ONE
    prob = q / total
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(prob > 0, prob * np.log2(np.where(prob > 0, prob, 1.0)), 0.0), axis=1)
    return low, high, entropy


#: Cells (rows × outcomes) of the float64 work arrays of one block of :func:`split_bounds`.
_BLOCK_CELLS = 1 << 18


#: Nodes of at least this many positions are refused by :func:`split_bounds`: its ratios multiply two
#: counts of at most a node's size, exact in float64 only below 2^53.
_MAX_SPLIT = 1 << 26


def split_bounds(left: np.ndarray, right: np.ndarray, k: np.ndarray) -> tuple[CdfBounds, np.ndarray]:
    """Certified bounds of the hypergeometric splits (S_L, S_R, K) of each row; and each row's entropy (bits).

    Row r: X = the members among S_L = ``left[r]`` positions when ``k[r]``
    are drawn from ``left[r] + right[r]``. Its columns are the outcomes
    ``origin[r]`` + c: the lower tail (X < a), the window [a, b] of
    :func:`_windows`, then X > b (the rows share the widest window's width).
    Rows with k > S_L + S_R (never drawn) are given a certain outcome.
    """
    left, right, k = (np.asarray(a, dtype=np.int64) for a in (left, right, k))
    if left.size and int(np.max(left + right)) >= _MAX_SPLIT:  # the ratios' integers must be exact in float64
        raise ParameterError(
            f"split_bounds: a node of {int(np.max(left + right))} positions; at most {_MAX_SPLIT - 1}"
        )
    start, stop = _windows(left, right, k)
    width = int(np.max(stop - start)) + 3  # the lower tail, the window, one column past it
    block = max(1, _BLOCK_CELLS // width)
    parts = [
        _split_block(
            left[i : i + block],
            right[i : i + block],
            k[i : i + block],
            start[i : i + block],
            stop[i : i + block],
            width,
        )
        for i in range(0, left.size, block)
    ]
    low, high, entropy = (np.concatenate(part) for part in zip(*parts, strict=True))
    rows = list(zip(left.tolist(), right.tolist(), k.tolist(), strict=True))

    def exact(row: int) -> list[int]:
        sl_, sr_, k_ = rows[row]
        return _cumulative(sl_, sr_, k_, min(k_, sl_) + 1)

    return CdfBounds(low, high, exact, origin=start - 1), entropy


#: Positions per quarter of a leaf: a quarter's patterns fit one table of 2^16.
QUARTER = LEAF // 4


@lru_cache(maxsize=1)
def _leaf_tables() -> tuple[np.ndarray, ...]:
    """The leaves' tables, by size s ≤ 64 and weight m (int64 arrays indexed [s, m] unless said).

    ``bound`` C(s, m), ``width`` and ``limit`` of its rejection draw;
    ``offset[s, m]`` (s ≤ 16) where the patterns of weight m start in
    ``patterns`` (every pattern of s bits, by weight, increasing within one).
    """
    size = LEAF + 1
    bound = np.ones((size, size), dtype=np.int64)
    width = np.zeros_like(bound)
    limit = np.ones_like(bound)
    for s in range(size):
        for m in range(s + 1):
            b = math.comb(s, m)
            bound[s, m] = b
            if b > 1:
                w = rejection_width(b, contiguous=True)
                width[s, m], limit[s, m] = w, ((1 << w) // b) * b
    offset = np.zeros((QUARTER + 1, QUARTER + 1), dtype=np.int64)
    patterns, start = [], 0
    for s in range(QUARTER + 1):
        values = np.arange(1 << s, dtype=np.int64)
        weights = np.bitwise_count(values)
        patterns.append(values[np.argsort(weights, kind="stable")].astype(np.uint16))
        for m in range(s + 1):
            offset[s, m] = start + int(np.count_nonzero(weights < m))
        start += 1 << s
    return bound, width, limit, offset, np.concatenate(patterns)


@dataclasses.dataclass(frozen=True)
class Compositions:
    """How the ranks of a leaf's m-subsets map to its quarters' members, for leaves of a few sizes.

    Entries are the compositions (j_0, …, j_3) of each weight m over a
    leaf's quarters (j_i members of quarter i, of q_i ≤ 16 positions), size
    by size and weight by weight, each weight's block closed by a sentinel.
    ``start[e]``: the first rank of entry e's composition within its weight,
    Σ over the earlier compositions of ∏ C(q_i, j_i) (the sentinel: C(s, m),
    past every rank); ``parts[e]``: where each quarter's patterns of weight
    j_i start in the patterns table, then the radices C(q_0, j_0),
    C(q_1, j_1), C(q_2, j_2). A leaf of size s and weight m has key
    k = 65·s + m. Guide tables [Chen and Asau 1974]: key k cuts its
    weight's ranks into buckets of 2^``shift[k]``, at least as many as its
    compositions; ``guide[guide_start[k] + b]`` is the entry of bucket b's
    first rank, so a rank's entry is that one or a later one, before
    ``sentinel[k]`` (key k's sentinel entry).
    """

    start: np.ndarray
    parts: np.ndarray
    shift: np.ndarray
    guide_start: np.ndarray
    guide: np.ndarray
    sentinel: np.ndarray


#: Guide buckets per composition of a weight, at least (rounded up to a power of two): a leaf's rank
#: mostly finds its composition in its bucket's first entry (the compositions' counts are far from even).
_GUIDE_DENSITY = 4


@lru_cache(maxsize=8)
def _size_compositions(size: int) -> tuple[np.ndarray, ...]:
    """One leaf size's part of :class:`Compositions` (guide entries and starts local to it)."""
    quarters = [min(QUARTER, max(0, size - QUARTER * i)) for i in range(4)]
    _, _, _, offset, _ = _leaf_tables()
    grids = np.meshgrid(*(np.arange(q + 1) for q in quarters), indexing="ij")
    j = np.stack([g.reshape(-1) for g in grids], axis=1).astype(np.int64)
    weight = j.sum(axis=1)
    order = np.argsort(weight, kind="stable")  # by weight, then lexicographic
    j, weight = j[order], weight[order]
    comb = np.array(
        [[math.comb(q, k) for k in range(QUARTER + 1)] for q in range(QUARTER + 1)], dtype=np.int64
    )
    radix = np.stack([comb[q, j[:, i]] for i, q in enumerate(quarters)], axis=1)
    count = np.prod(radix, axis=1)
    per_weight = np.bincount(weight, minlength=LEAF + 1)
    block = np.zeros(LEAF + 2, dtype=np.int64)
    block[1:] = np.cumsum(per_weight + 1)  # weights past the size: empty blocks of one sentinel
    entry = np.arange(weight.size) + weight  # each lighter weight's block has one sentinel more
    first = np.cumsum(count) - count  # ranks before each composition, over all weights
    start = np.zeros(int(block[-1]), dtype=np.int64)
    start[entry] = first - first[block[weight] - weight]
    start[block[1:] - 1] = [math.comb(size, m) for m in range(LEAF + 1)]
    parts = np.zeros((start.size, 8), dtype=np.int32)  # 4 pattern offsets, 3 radices, a spare column
    parts[entry, :4] = np.stack([offset[q, j[:, i]] for i, q in enumerate(quarters)], axis=1)
    parts[entry, 4:7] = radix[:, :3]
    shift = np.zeros(LEAF + 1, dtype=np.int64)
    guide_start = np.zeros(LEAF + 1, dtype=np.int64)
    guides = []
    at = 0
    for m in range(LEAF + 1):
        buckets = 1 << int(_GUIDE_DENSITY * max(per_weight[m], 1) - 1).bit_length()
        shift[m] = max(0, (max(math.comb(size, m), 1) - 1).bit_length() - (buckets.bit_length() - 1))
        firsts = np.arange(buckets, dtype=np.int64) << shift[m]
        ranks = start[block[m] : block[m + 1] - 1]
        guides.append(block[m] + np.maximum(np.searchsorted(ranks, firsts, side="right") - 1, 0))
        guide_start[m] = at
        at += buckets
    return start, parts, shift, guide_start, np.concatenate(guides), block[1:] - 1


@lru_cache(
    maxsize=4
)  # about 10 MB each with whole leaves (sizes 63 and 64; 7.5 MB with one guide bucket a composition)
def compositions(sizes: tuple[int, ...]) -> Compositions:
    """The :class:`Compositions` of leaves of ``sizes`` (each ≤ 64; quarters of min(16, s − 16i) positions)."""
    shifts = np.zeros((LEAF + 1, LEAF + 1), dtype=np.int64)
    guide_starts = np.zeros_like(shifts)
    sentinels = np.zeros_like(shifts)
    starts, parts, guides = [], [], []
    entries = guided = 0
    for size in sizes:
        start, part, shift, guide_start, guide, sentinel = _size_compositions(size)
        starts.append(start)
        parts.append(part)
        shifts[size] = shift
        guide_starts[size] = guide_start + guided
        sentinels[size] = sentinel + entries
        guides.append(guide + entries)
        entries += start.size
        guided += guide.size
    return Compositions(
        np.concatenate(starts),
        np.concatenate(parts),
        shifts.reshape(-1),
        guide_starts.reshape(-1),
        np.concatenate(guides).astype(np.int32),
        sentinels.reshape(-1),
    )


#: Steps of the linear search after a leaf rank's guide entry; the few ranks still short of their
#: composition then bisect (a guide bucket may hold hundreds of light compositions).
_LINEAR_STEPS = 2


def _unrank(key: np.ndarray, rank: np.ndarray, sizes: tuple[int, ...], patterns: np.ndarray) -> np.ndarray:
    """The subsets of rank ``rank`` of leaves of key 65·s + m (s ≤ 64 positions, m members) as uint64 patterns.

    A bijection from [0, C(s, m)) onto the m-subsets: the ranks are ordered
    by the composition (j_0, …, j_3) of their members over the leaf's four
    quarters (:func:`compositions`), and within one by the quarters' ranks
    r_0 + C(q_0, j_0)·(r_1 + C(q_1, j_1)·(r_2 + C(q_2, j_2)·r_3)), each
    quarter's pattern looked up in ``patterns`` (bit i of quarter k for
    position 16k + i: :func:`_leaf_tables`' patterns, or a permutation of
    each pattern's bits). ``sizes``: every leaf size present.
    """
    table = compositions(sizes)
    entry = table.guide[table.guide_start[key] + (rank >> table.shift[key])].astype(np.int64)
    moving = np.flatnonzero(table.start[entry + 1] <= rank)
    for _ in range(_LINEAR_STEPS):  # the bucket held more than one composition: step on
        if not moving.size:
            break
        entry[moving] += 1
        moving = moving[table.start[entry[moving] + 1] <= rank[moving]]
    if moving.size:  # a bucket of many light compositions: bisect between the entry and the sentinel
        low, high, r = entry[moving], table.sentinel[key[moving]], rank[moving]
        while np.any(high - low > 1):
            middle = (low + high) // 2
            below = table.start[middle] <= r
            low = np.where(below, middle, low)
            high = np.where(below, high, middle)
        entry[moving] = low
    rest = rank - table.start[entry]
    parts = table.parts[entry]
    out = np.empty((rank.size, 4), dtype=np.uint16)
    for i in range(3):
        rest, within = np.divmod(rest, parts[:, 4 + i])
        within += parts[:, i]
        out[:, i] = patterns[within]
    rest += parts[:, 3]
    out[:, 3] = patterns[rest]
    return out.view("<u8").reshape(-1)


def _ranks(bits: BitSource, bound: np.ndarray, width: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """A uniform integer below each ``bound`` (int64), by rejection on ``width`` bits below ``limit``.

    ``limit`` is the largest multiple of the bound below 2^width: a unit u <
    limit gives u mod bound, each residue from the same number of units;
    the others are redrawn. Each draw's units are its own ``width`` bits of
    one stream of words (bits past the last unit of a round are dropped). A
    bound of 1 has width 0 and limit 1: it reads nothing and gives 0.
    """
    units = _units(bits, width.astype(np.uint64))
    out = units % bound  # the accepted units' residues; the others are overwritten below
    todo = np.flatnonzero(units >= limit)
    while todo.size:
        units = _units(bits, width[todo].astype(np.uint64))
        ok = units < limit[todo]
        out[todo[ok]] = units[ok] % bound[todo[ok]]
        todo = todo[~ok]
    return out


def _units(bits: BitSource, width: np.ndarray) -> np.ndarray:
    """Units of ``width`` (uint64, ≤ 63) bits each, packed end to end in one stream of fresh words (int64)."""
    ends = np.cumsum(width)
    total = int(ends[-1]) if ends.size else 0
    words = np.zeros(-(-total // 64) + 2, dtype=np.uint64)  # two spare words: a unit's next word, read
    words[:-2] = bits.fields(64, words.size - 2)  # for a unit ending a word or of no bits, is zero
    start = ends - width
    at = (start >> np.uint64(6)).astype(np.int64)
    shift = start & np.uint64(63)
    unit: np.ndarray = (words[at] >> shift) | ((words[at + 1] << np.uint64(1)) << (np.uint64(63) - shift))
    unit &= (np.uint64(1) << width) - np.uint64(1)
    return unit.view(np.int64)


def _node_caps(d: int, leaves_per_node: int) -> np.ndarray:
    """Positions of each node whose leaves are consecutive runs of ``leaves_per_node`` leaves."""
    starts = np.arange(0, d, LEAF * leaves_per_node, dtype=np.int64)
    return np.minimum(starts + LEAF * leaves_per_node, d) - starts


#: Standard deviations either side of a node's mean count that its level's split tables cover (counts
#: outside, with probability about 2e-9 a node, extend the range: a new table).
_K_SIGMAS = 6


def _count_range(omega: int, d: int, size: int, low: int, high: int) -> tuple[int, int]:
    """The counts a level's tables cover: the mean ± 6 σ of a node of ``size`` positions, and [low, high].

    A node of S of the d − 1 other positions holds a hypergeometric count of the k ≤ ω members:
    mean kS/(d − 1), variance k(S/(d − 1))(1 − S/(d − 1))(d − 1 − k)/(d − 2). One range for
    every chunk of users, so their tables are one cache entry.
    """
    n = max(d - 1, 2)
    share = min(size / n, 1.0)
    mean = omega * share
    sigma = math.sqrt(omega * share * (1 - share) * max(n - omega, 0) / max(n - 1, 1))
    k_low = max(0, math.floor(mean - _K_SIGMAS * sigma) - 2)
    k_high = min(omega, math.ceil(mean + _K_SIGMAS * sigma) + 2)
    return min(k_low, low), max(k_high, high)


#: Bits a split's first step reads past its entropy: most draws are decided by their first lookup. Each bit
#: more reads about 1 % more (d = 1,024 to 4,096) and saves lookups: 4 (was 1) took 8–13 % off the tree's
#: CPU for 3 % more bits (``benchmarks/bench_ss_paths.py``, 20,000 users, d = 256 to 4,096); 5 saved no more.
FIRST_STEP_EXTRA = 4


@lru_cache(maxsize=32)
def _level_bounds(
    left: tuple[int, ...], right: tuple[int, ...], k_low: int, k_high: int
) -> tuple[CdfBounds, int]:
    """The split tables of shapes (``left[i]``, ``right[i]``) × counts k_low … k_high (rows shape-major), and a first step.

    The first step is the median row's entropy rounded, plus :data:`FIRST_STEP_EXTRA` bits.
    """
    n_k = k_high - k_low + 1
    bounds, entropy = split_bounds(
        np.repeat(np.maximum(np.array(left), 0), n_k),
        np.repeat(np.maximum(np.array(right), 0), n_k),
        np.tile(np.arange(k_low, k_high + 1), len(left)),
    )
    median = float(np.median(entropy[entropy > 0])) if np.any(entropy > 0) else 0.0
    return bounds, round(median) + FIRST_STEP_EXTRA


def _split_level(
    bits: BitSource, counts: np.ndarray, x_leaf: np.ndarray, d: int, span: int, omega: int
) -> np.ndarray:
    """Split every node's members between its children of ``span`` leaves each: the next level's counts."""
    users, nodes = counts.shape
    caps = _node_caps(d, span)
    children = caps.size
    cap_left = caps[0::2]
    cap_right = np.zeros(nodes, dtype=np.int64)
    cap_right[: caps[1::2].size] = caps[1::2]
    # a node's shape: its children's positions, less x where it falls: base shape × (no x, x left, x right)
    pairs = np.stack([cap_left, cap_right], axis=1)
    base, base_id = np.unique(pairs, axis=0, return_inverse=True)
    shape_left = np.repeat(base[:, 0], 3) - np.tile([0, 1, 0], base.shape[0])
    shape_right = np.repeat(base[:, 1], 3) - np.tile([0, 0, 1], base.shape[0])
    x_child = x_leaf // span
    user = np.arange(users)
    shape = np.broadcast_to(3 * base_id.reshape(-1)[None, :], (users, nodes)).copy()
    shape[user, x_child // 2] += 1 + (x_child & 1)
    k_low, k_high = _count_range(omega, d, int(caps.max()) * 2, int(counts.min()), int(counts.max()))
    n_k = k_high - k_low + 1
    bounds, first = _level_bounds(tuple(shape_left.tolist()), tuple(shape_right.tolist()), k_low, k_high)
    rows = (shape * n_k + (counts - k_low)).reshape(-1)
    left = invert(bits, bounds, rows, first).reshape(users, nodes)
    out = np.zeros((users, children), dtype=np.int64)
    out[:, 0::2] = left
    out[:, 1::2] = (counts - left)[:, : children // 2]
    return out


#: Positions of a pair of leaves: the tree's last split, where a pair's K members fit one rank, is that
#: rank's composition over the two leaves (:func:`_pair_leaves`).
PAIR = 2 * LEAF
#: Pairs of leaves serve specs whose pair of 128 positions holds at most this many members on average
#: (ω·128/d): sparse subsets, whose pairs almost all fit one rank (K ≤ 14 of 128 positions).
PAIR_MAX_MEAN = 10


@dataclasses.dataclass(frozen=True)
class PairTables:
    """The ranks of pairs of leaves of a few shapes (s_L, s_R), by key (shape index)·129 + K (int64 arrays).

    ``ranked[key]``: the K-subsets of s_L + s_R positions are one rank
    below ``bound`` = C(s_L + s_R, K), drawn by rejection on ``width`` bits
    below ``limit`` (:func:`_ranks`; ``width`` ≤ 63), else the pair is split
    by a hypergeometric draw. ``start[key, j]`` (j < 128, :data:`_PAIR_COLUMNS`):
    the ranks before the compositions of fewer than j members in the left
    leaf, Σ_{i<j} C(s_L, i)·C(s_R, K − i) (C(s_L + s_R, K) for every j > K).
    """

    ranked: np.ndarray
    bound: np.ndarray
    width: np.ndarray
    limit: np.ndarray
    start: np.ndarray
    #: C(s_L, j) by [key, j] (1 where j > s_L).
    radix: np.ndarray
    #: The left leaf's key 65·s_L + j less j; the right leaf's 65·s_R + (K − j) plus j.
    leaf_left: np.ndarray
    leaf_right: np.ndarray


@lru_cache(maxsize=8)
def pair_tables(shapes: tuple[tuple[int, int], ...]) -> PairTables:
    """The :class:`PairTables` of pairs of ``shapes`` (s_L, s_R), each leaf of at most 64 positions."""
    keys = len(shapes) * (PAIR + 1)
    ranked = np.zeros(keys, dtype=bool)
    bound, limit = np.ones(keys, dtype=np.int64), np.ones(keys, dtype=np.int64)
    width = np.zeros(keys, dtype=np.int64)
    start = np.zeros((keys, _PAIR_COLUMNS), dtype=np.int64)
    for index, (left, right) in enumerate(shapes):
        for k in range(min(left + right, LEAF) + 1):
            key = index * (PAIR + 1) + k
            b = math.comb(left + right, k)
            if b > 1 << 62:  # its units would pass 63 bits
                continue
            w = rejection_width(b, contiguous=True) if b > 1 else 0
            ranked[key], bound[key], width[key], limit[key] = True, b, w, ((1 << w) // b) * b if w else 1
            start[key] = _cumulative_before(left, right, k)
    lefts = np.repeat(np.array([s[0] for s in shapes], dtype=np.int64), PAIR + 1)
    rights = np.repeat(np.array([s[1] for s in shapes], dtype=np.int64), PAIR + 1)
    radix = np.ones((keys, _PAIR_COLUMNS), dtype=np.int64)
    radix[:, : LEAF + 1] = _leaf_tables()[0][lefts, :]
    members = np.tile(np.arange(PAIR + 1, dtype=np.int64), len(shapes))
    return PairTables(
        ranked, bound, width, limit, start, radix, (LEAF + 1) * lefts, (LEAF + 1) * rights + members
    )


def _cumulative_before(left: int, right: int, k: int) -> list[int]:
    """Σ_{i<j} C(left, i)·C(right, k − i) for j = 0 … 127 (:attr:`PairTables.start`'s row)."""
    return [0, *_cumulative(left, right, k, _PAIR_COLUMNS - 1)]


#: Columns of :attr:`PairTables.start`: j < 128, what :func:`pair_unrank`'s binary lifting reaches for K ≤ 64.
_PAIR_COLUMNS = 2 * LEAF


def _pair_compositions(
    bits: BitSource, table: PairTables, key: np.ndarray, most: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of keys ``key`` (counts ≤ ``most``): one uniform rank each (:func:`_ranks`), :func:`pair_unrank`'d.

    Only the pairs that fit one rank (:attr:`PairTables.ranked`) are meant:
    the others (bound 1, every start 0) read nothing and give a j that the
    caller replaces.
    """
    rank = _ranks(bits, table.bound[key], table.width[key], table.limit[key])
    return pair_unrank(table, key, rank, most)


def pair_unrank(
    table: PairTables, key: np.ndarray, rank: np.ndarray, most: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The left leaf's count j and both leaves' ranks of the pairs' K-subsets of rank ``rank`` (keys ``key``, K ≤ ``most``).

    A bijection from [0, C(s_L + s_R, K)) onto (j, r_L < C(s_L, j), r_R <
    C(s_R, K − j)): j is the composition whose ranks [start_j, start_{j+1})
    hold r, the largest j with start_j ≤ r, found by binary lifting over
    j < 2^b, b the bit length of ``most`` (start_j is C(s, K) for every
    j > K); the rest r − start_j is r_L + C(s_L, j)·r_R.
    """
    row = key * _PAIR_COLUMNS
    at = row.copy()
    starts = table.start.reshape(-1)
    for step in reversed(range(max(most, 1).bit_length())):
        below = starts[at + (1 << step)] <= rank
        np.add(at, below << step, out=at)
    rank_right, rank_left = np.divmod(rank - starts[at], table.radix.reshape(-1)[at])
    return at - row, rank_left, rank_right


def _pair_leaves(
    bits: BitSource, counts: np.ndarray, x_leaf: np.ndarray, d: int, omega: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each leaf's key 65·s + m and rank below C(s, m), from the counts of the pairs of leaves (users × pairs).

    A pair of K members that fits one rank (:class:`PairTables`) draws it,
    uniform below C(s_L + s_R, K), and :func:`pair_unrank` maps it to the
    left leaf's count and both leaves' ranks: the leaves' counts and
    subsets are those of a uniform K-subset of the pair. Another pair
    splits K by a hypergeometric draw (as the levels above) and draws its
    leaves' ranks. Returns (users × 2·pairs) arrays; x's leaf is one
    position short, and a last pair may have no right leaf (size 0).
    """
    users, pairs = counts.shape
    caps = _node_caps(d, 2)
    cap_left = np.minimum(caps, LEAF)
    base, base_id = np.unique(np.stack([cap_left, caps - cap_left], axis=1), axis=0, return_inverse=True)
    shapes = tuple(
        (max(int(sl) - dl, 0), max(int(sr) - dr, 0)) for sl, sr in base for dl, dr in ((0, 0), (1, 0), (0, 1))
    )
    table = pair_tables(shapes)
    # key (shape index)·129 + K; x's pair takes the shape one position short on x's side
    key = counts + (3 * (PAIR + 1)) * base_id.reshape(-1)[None, :]
    key[np.arange(users), x_leaf // 2] += (PAIR + 1) * (1 + (x_leaf & 1))
    key = key.reshape(-1)
    # every pair through the ranks (a pair to split reads none: bound 1), then the pairs to split
    left, rank_left, rank_right = _pair_compositions(bits, table, key, min(int(counts.max()), LEAF))
    split = np.flatnonzero(~table.ranked[key])
    if split.size:
        shape, k = np.divmod(key[split], PAIR + 1)
        k_low, k_high = _count_range(omega, d, PAIR, int(k.min()), int(k.max()))
        bounds, first = _level_bounds(tuple(s[0] for s in shapes), tuple(s[1] for s in shapes), k_low, k_high)
        left[split] = invert(bits, bounds, shape * (k_high - k_low + 1) + (k - k_low), first)
    keys = np.empty((users, 2 * pairs), dtype=np.int64)
    keys[:, 0::2] = (table.leaf_left[key] + left).reshape(users, pairs)
    keys[:, 1::2] = (table.leaf_right[key] - left).reshape(users, pairs)
    ranks = np.empty((users, 2 * pairs), dtype=np.int64)
    ranks[:, 0::2] = rank_left.reshape(users, pairs)
    ranks[:, 1::2] = rank_right.reshape(users, pairs)
    if split.size:  # the split pairs' leaves draw their ranks
        bound, width, limit, _, _ = _leaf_tables()
        leaves = np.concatenate([2 * split, 2 * split + 1])
        leaf_key = keys.reshape(-1)[leaves]
        ranks.reshape(-1)[leaves] = _ranks(
            bits, bound.reshape(-1)[leaf_key], width.reshape(-1)[leaf_key], limit.reshape(-1)[leaf_key]
        )
    return keys, ranks


def uses_pairs(omega: int, d: int) -> bool:
    """Whether :func:`subset_packed` ends its tree at pairs of leaves (:data:`PAIR_MAX_MEAN`) rather than leaves."""
    return d > LEAF and omega * PAIR <= PAIR_MAX_MEAN * d


#: Leaves (users × leaves) whose ranks and patterns are drawn together: the tree's counts are split for
#: every user of a call at once (few, large draws), its leaves by blocks that stay in a core's cache.
LEAF_BLOCK = 1 << 16


def _leaf_block(
    bits: BitSource, counts: np.ndarray, x: np.ndarray, holds: np.ndarray, omega: int, d: int, pairs: bool
) -> np.ndarray:
    """Some users' leaves (users × leaves, uint64 words in numpy.packbits order) from their last nodes' counts."""
    users, n_leaves = x.size, -(-d // LEAF)
    x_leaf = x // LEAF
    caps = _node_caps(d, 1)
    sizes = tuple(sorted({*caps.tolist(), *(caps - 1).tolist()}))
    user = np.arange(users)
    if pairs:
        key, ranks = _pair_leaves(bits, counts, x_leaf, d, omega)
        key, ranks = key[:, :n_leaves].reshape(-1), ranks[:, :n_leaves].reshape(-1)
    else:
        bound, width, limit, _, _ = _leaf_tables()
        key = counts + caps * (LEAF + 1)  # leaf key 65·size + members; x's leaf is one position short
        key[user, x_leaf] -= LEAF + 1
        key = key.reshape(-1)
        ranks = _ranks(bits, bound.reshape(-1)[key], width.reshape(-1)[key], limit.reshape(-1)[key])
    leaf = _leaf_patterns(key, ranks, sizes).reshape(users, n_leaves)
    # x's leaf: its pattern (in natural bit order) has a hole at x, filled by the holds coin
    hole = (x % LEAF).astype(np.uint64)
    mine = _REVERSE[leaf[user, x_leaf].view(np.uint8)].view(np.uint64)
    below = (np.uint64(1) << hole) - np.uint64(1)
    mine = (mine & below) | ((mine & ~below) << np.uint64(1)) | (holds.astype(np.uint64) << hole)
    leaf[user, x_leaf] = _REVERSE[mine.view(np.uint8)].view(np.uint64)
    return leaf


def subset_packed(
    bits: BitSource, x: np.ndarray, holds: np.ndarray, omega: int, d: int, *, pairs: bool | None = None
) -> np.ndarray:
    """The packed d-bit subsets (numpy.packbits order) of users with true indices ``x``.

    A subset holds x where ``holds`` is True, and ω − holds other members,
    uniform among the d − 1 other values (see the module's docstring).
    ``pairs``: whether the tree ends at pairs of leaves (:func:`_pair_leaves`);
    None: :func:`uses_pairs`.
    """
    users = x.size
    if not users:
        return np.zeros((0, (d + 7) // 8), dtype=np.uint8)
    x = x.astype(np.int64)
    n_leaves = -(-d // LEAF)
    levels = (n_leaves - 1).bit_length()
    pairs = (uses_pairs(omega, d) if pairs is None else pairs) and levels > 0
    x_leaf = x // LEAF
    counts = (omega - holds.astype(np.int64))[:, None]
    for level in range(levels - int(pairs)):
        span = 1 << (levels - level - 1)
        counts = _split_level(bits, counts, x_leaf, d, span, omega)
    leaf = np.empty((users, n_leaves), dtype=np.uint64)
    block = max(1, LEAF_BLOCK // n_leaves)
    for start in range(0, users, block):
        stop = min(start + block, users)
        leaf[start:stop] = _leaf_block(
            bits, counts[start:stop], x[start:stop], holds[start:stop], omega, d, pairs
        )
    return leaf.view(np.uint8)[:, : (d + 7) // 8]


#: Leaves of at most this many members look their pattern up in one table of all their subsets
#: (:func:`_small_leaves`: 43,745 words a leaf size of 64).
SMALL_LEAF = 3


@lru_cache(maxsize=4)
def _small_leaves(sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Where each leaf key 65·s + m (m ≤ :data:`SMALL_LEAF`) starts in the table (−1: a larger m), and the table.

    The table holds :func:`_unrank`'s packed pattern of every rank below
    C(s, m), key by key: the same bijection, looked up.
    """
    offset = np.full((LEAF + 1) * (LEAF + 1), -1, dtype=np.int64)
    parts, at = [], 0
    for size in sizes:
        for m in range(min(size, SMALL_LEAF) + 1):
            count, key = math.comb(size, m), (LEAF + 1) * size + m
            offset[key] = at
            parts.append(_unrank(np.full(count, key), np.arange(count), sizes, _packbits_patterns()))
            at += count
    return offset, np.concatenate(parts)


def _leaf_patterns(key: np.ndarray, rank: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """:func:`_unrank` on the packbits patterns: leaves of few members by table (:func:`_small_leaves`)."""
    offset, table = _small_leaves(sizes)
    at = offset[key]
    large = np.flatnonzero(at < 0)
    at += rank
    at[large] = 0
    out = table[at]
    if large.size:
        out[large] = _unrank(key[large], rank[large], sizes, _packbits_patterns())
    return out


#: Each byte's bits reversed: bit i of a byte ↔ numpy.packbits' bit 7 − i.
_REVERSE = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)


@lru_cache(maxsize=1)
def _packbits_patterns() -> np.ndarray:
    """:func:`_leaf_tables`' quarter patterns with each byte's bits reversed: a leaf's little-endian word
    in numpy.packbits order (position 8b + i at bit 7 − i of byte b)."""
    patterns = _leaf_tables()[4]
    return _REVERSE[patterns.view(np.uint8)].view(np.uint16)
