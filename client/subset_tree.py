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
   (:func:`_unrank`: by the members of its first half, then of quarters of
   16 positions, whose patterns are looked up). x's leaf has a hole at x,
   filled by the holds coin.

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

import math
from functools import lru_cache

import numpy as np

from ldp.client.bits import BitSource, rejection_width
from ldp.client.inversion import PRECISION, CdfBounds, coin_bounds, invert
from ldp.errors import ParameterError

__all__ = ["LEAF", "coin_bounds", "split_bounds", "subset_packed"]

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


#: Positions per leaf, and per half and quarter of a leaf (a quarter's patterns fit one table of 2^16).
HALF, QUARTER = LEAF // 2, LEAF // 4


@lru_cache(maxsize=1)
def _leaf_tables() -> tuple[np.ndarray, ...]:
    """The leaves' tables, by size s ≤ 64 and weight m (int64 arrays indexed [s, m] unless said).

    ``bound`` C(s, m), ``width`` and ``limit`` of its rejection draw;
    ``splits[s, m, j]``: the ranks before those whose first part (the first
    min(s, ``half``) positions, half = 32 for s > 32, else 16) holds j
    members, Σ_{i<j} C(L, i)·C(s − L, m − i) (j ≤ 33; C(s, m) past the last);
    ``offset[s, m]`` (s ≤ 16) where the patterns of weight m start in
    ``patterns`` (every pattern of s bits, by weight, increasing within one).
    """
    size = LEAF + 1
    bound = np.ones((size, size), dtype=np.int64)
    width = np.zeros_like(bound)
    limit = np.ones_like(bound)
    splits = np.full((size, size, _SPLITS), 1 << 62, dtype=np.int64)  # C(s, m) < 2^62 past the last
    for s in range(size):
        left = min(s, HALF if s > HALF else QUARTER)
        for m in range(s + 1):
            b = math.comb(s, m)
            bound[s, m] = b
            if b > 1:
                w = rejection_width(b, contiguous=True)
                width[s, m], limit[s, m] = w, ((1 << w) // b) * b
            total = 0
            for j in range(left + 2):
                splits[s, m, j] = total
                if j <= left and 0 <= m - j <= s - left:
                    total += math.comb(left, j) * math.comb(s - left, m - j)
    offset = np.zeros((QUARTER + 1, QUARTER + 1), dtype=np.int64)
    patterns, start = [], 0
    for s in range(QUARTER + 1):
        values = np.arange(1 << s, dtype=np.int64)
        weights = np.bitwise_count(values)
        patterns.append(values[np.argsort(weights, kind="stable")].astype(np.uint16))
        for m in range(s + 1):
            offset[s, m] = start + int(np.count_nonzero(weights < m))
        start += 1 << s
    return bound, width, limit, splits, offset, np.concatenate(patterns)


#: Splits of a leaf's table row: j = 0 … 33 members in a first half of 32, then C(s, m) (and a spare).
_SPLITS = HALF + 3
#: Buckets of a guide table row (:func:`_guide`).
GUIDE = 256


@lru_cache(maxsize=1)
def _guide() -> tuple[np.ndarray, np.ndarray]:
    """Guide tables of the splits [Chen and Asau 1974]: where to start looking for the split of a rank.

    Row (s, m) cuts [0, C(s, m)) into buckets of 2^shift[s, m] ranks (at most
    :data:`GUIDE`); entry b is the split of the bucket's first rank (the last
    j with splits[s, m, j] ≤ b·2^shift), so the split of a rank in bucket b is
    that j or a later one.
    """
    bound, _, _, splits, _, _ = _leaf_tables()
    size = LEAF + 1
    shift = np.zeros((size, size), dtype=np.int64)
    guide = np.zeros((size, size, GUIDE), dtype=np.int8)  # small tables: random reads stay in cache
    for s in range(size):
        for m in range(s + 1):
            sh = max(0, int(bound[s, m]).bit_length() - (GUIDE.bit_length() - 1))
            shift[s, m] = sh
            starts = np.arange(GUIDE, dtype=np.int64) << sh
            guide[s, m] = np.searchsorted(splits[s, m], starts, side="right") - 1
    return shift, guide


def _split(row: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The split j of each rank in its leaf-table row (s, m), and the split's rank: the last j with splits ≤ rank.

    A guide table gives the split of the rank's bucket; the steps after it are rare.
    """
    _, _, _, splits, _, _ = _leaf_tables()
    shift, guide = _guide()
    flat = splits.reshape(-1)
    base = row * _SPLITS
    j = guide.reshape(-1)[row * GUIDE + (rank >> shift.reshape(-1)[row])].astype(np.int64)
    at = base + j
    moving = np.flatnonzero(flat[at + 1] <= rank)
    while moving.size:  # the bucket held more than one split: step on
        at[moving] += 1
        moving = moving[flat[at[moving] + 1] <= rank[moving]]
    return at - base, flat[at]


def _unrank(size: np.ndarray, weight: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The ``weight``-subsets of rank ``rank`` of ``size`` positions (≤ 64) as uint64 patterns, bit i for position i.

    A bijection from [0, C(s, m)) onto the m-subsets: the ranks are ordered by
    the members j in the first part (a half, then a quarter), and within j by
    (rank in the first part) + C(L, j)·(rank in the rest), so the j of a rank
    is the last split at or below it, and each part is unranked the same way
    down to quarters of 16 positions, which are looked up.
    """
    bound, _, _, _, offset, patterns = _leaf_tables()
    if int(size.max(initial=0)) <= QUARTER:
        return patterns[offset.reshape(-1)[size * (QUARTER + 1) + weight] + rank].astype(np.uint64)
    left = np.where(size > HALF, HALF, np.minimum(size, QUARTER))
    j, first = _split(size * (LEAF + 1) + weight, rank)
    high_rank, low_rank = np.divmod(rank - first, bound.reshape(-1)[left * (LEAF + 1) + j])
    low = _unrank(left, j, low_rank)
    high = _unrank(size - left, weight - j, high_rank)
    high <<= left.astype(np.uint64)
    low |= high
    return low


def _ranks(bits: BitSource, bound: np.ndarray, width: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """A uniform integer below each ``bound`` (int64), by rejection on ``width`` bits below ``limit``.

    ``limit`` is the largest multiple of the bound below 2^width: a unit u <
    limit gives u mod bound, each residue from the same number of units;
    the others are redrawn. Each draw's units are its own ``width`` bits of
    one stream of words (bits past the last unit of a round are dropped). A
    bound of 1 has width 0 and limit 1: it reads nothing and gives 0.
    """
    out = np.zeros(bound.size, dtype=np.int64)
    todo = np.arange(bound.size)
    w, cap, base = width.astype(np.uint64), limit, bound
    while todo.size:
        ends = np.cumsum(w)
        total = int(ends[-1])
        words = np.zeros(-(-total // 64) + 2, dtype=np.uint64)  # two spare words: a unit's next word, read
        words[:-2] = bits.fields(64, words.size - 2)  # for a unit ending a word or of no bits, is zero
        start = ends - w
        at = (start >> np.uint64(6)).astype(np.int64)
        shift = start & np.uint64(63)
        unit: np.ndarray = (words[at] >> shift) | ((words[at + 1] << np.uint64(1)) << (np.uint64(63) - shift))
        units = (unit & ((np.uint64(1) << w) - np.uint64(1))).astype(np.int64)
        ok = units < cap
        out[todo[ok]] = units[ok] % base[ok]
        todo = todo[~ok]
        w, cap, base = width[todo].astype(np.uint64), limit[todo], bound[todo]
    return out


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


@lru_cache(maxsize=32)
def _level_bounds(
    left: tuple[int, ...], right: tuple[int, ...], k_low: int, k_high: int
) -> tuple[CdfBounds, int]:
    """The split tables of shapes (``left[i]``, ``right[i]``) × counts k_low … k_high (rows shape-major), and a first step.

    The first step is the median row's entropy rounded, plus one bit.
    """
    n_k = k_high - k_low + 1
    bounds, entropy = split_bounds(
        np.repeat(np.maximum(np.array(left), 0), n_k),
        np.repeat(np.maximum(np.array(right), 0), n_k),
        np.tile(np.arange(k_low, k_high + 1), len(left)),
    )
    return bounds, round(float(np.median(entropy[entropy > 0]) if np.any(entropy > 0) else 0.0)) + 1


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


def subset_packed(bits: BitSource, x: np.ndarray, holds: np.ndarray, omega: int, d: int) -> np.ndarray:
    """The packed d-bit subsets (numpy.packbits order) of users with true indices ``x``.

    A subset holds x where ``holds`` is True, and ω − holds other members,
    uniform among the d − 1 other values (see the module's docstring).
    """
    users = x.size
    if not users:
        return np.zeros((0, (d + 7) // 8), dtype=np.uint8)
    x = x.astype(np.int64)
    n_leaves = -(-d // LEAF)
    levels = (n_leaves - 1).bit_length()
    x_leaf = x // LEAF
    counts = (omega - holds.astype(np.int64))[:, None]
    for level in range(levels):
        span = 1 << (levels - level - 1)
        counts = _split_level(bits, counts, x_leaf, d, span, omega)
    bound, width, limit, _, _, _ = _leaf_tables()
    size = np.broadcast_to(_node_caps(d, 1)[None, :], (users, n_leaves)).copy()
    user = np.arange(users)
    size[user, x_leaf] -= 1
    flat_size, flat_count = size.reshape(-1), counts.reshape(-1)
    ranks = _ranks(
        bits,
        bound[flat_size, flat_count],
        width[flat_size, flat_count],
        limit[flat_size, flat_count],
    )
    leaf = _unrank(flat_size, flat_count, ranks).reshape(users, n_leaves)
    # x's leaf: its pattern has a hole at x, filled by the holds coin
    hole = (x % LEAF).astype(np.uint64)
    mine = leaf[user, x_leaf]
    below = (np.uint64(1) << hole) - np.uint64(1)
    leaf[user, x_leaf] = (
        (mine & below) | ((mine & ~below) << np.uint64(1)) | (holds.astype(np.uint64) << hole)
    )
    octets = leaf.astype("<u8", copy=False).view(np.uint8)[:, : (d + 7) // 8]
    return _REVERSE[octets]  # bit i of a byte → numpy.packbits' bit 7 − i


_REVERSE = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)
