"""Exact inversion of a discrete distribution on bits read lazily: draws that read about their entropy.

A draw is X = F⁻¹(U) = min{j : U < F_j} for a uniform real U = 0.b1 b2 b3 …
whose bits are read only until they decide X: after t bits, U lies in
[u, u + 1) / 2^t, and X = c is certain once F_{c−1} ≤ u / 2^t and
(u + 1) / 2^t ≤ F_c. This is the interval algorithm of Han and Hoshi [1]_
(on average fewer than H(X) + 3 bits); the bits a draw reads past its decision
change nothing in X, so reading a few at a time is exact.

The cumulative probabilities come as certified integer bounds
(:class:`CdfBounds`): low_j ≤ F_j · 2^P ≤ high_j, P = :data:`PRECISION`, from exact
rationals or from floating point with a proven error bound (the caller's
proof). The vectorized walk decides a draw only when the bounds prove the
outcome, so its outcome is F⁻¹(U) exactly; a draw still undecided after P bits
(its U within the bounds' slack of a boundary: probability about
2^-(P − 10) per boundary) goes on in exact integer arithmetic against the
exact cumulative counts (:attr:`CdfBounds.exact`).

References
----------
.. [1] T. S. Han, M. Hoshi. "Interval algorithm for random number
   generation". IEEE Trans. Inf. Theory 43(2), 1997.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ldp.client.bits import BitSource

__all__ = ["PRECISION", "CdfBounds", "coin_bounds", "cumulative_bounds", "invert"]

#: Bits of U the vectorized walk reads at most (the bounds' fixed point); past them, exact integers.
PRECISION = 48
#: Bits an undecided draw reads per step after the first.
STEP_BITS = 2
#: Rows whose bounds are searched as one array (:attr:`CdfBounds.keys`): row << (P + 1) stays below 2^63.
_KEY_ROWS_BITS = 63 - (PRECISION + 1)


@dataclass(frozen=True)
class CdfBounds:
    """Certified bounds of the cumulative probabilities of ``rows`` distributions on outcomes 0 … width − 1.

    ``low[r, j]`` ≤ F_r(j) · 2^P ≤ ``high[r, j]`` (int64, nondecreasing in j,
    P = :data:`PRECISION`), with F_r(j) = P[X ≤ j] for row r's distribution, so
    ``low[r, width − 1] == high[r, width − 1] == 2^P``. ``exact(r)`` gives row
    r's exact cumulative counts (A_0, …, A_last) with F_r(j) = A_j / A_last.
    With an ``origin``, column c stands for outcome origin[r] + c: a window of
    the outcomes, whose tails (columns whose low bound is 0, never proven) go
    to the exact integers.
    """

    low: np.ndarray
    high: np.ndarray
    exact: Callable[[int], list[int]]
    #: Row r's column c is outcome origin[r] + c (None: outcome c), so a row's columns can be a window
    #: of its outcomes; ``exact`` counts from outcome 0.
    origin: np.ndarray | None = None
    #: The lookup tables of :func:`invert`, by first step, built on first use.
    chains: dict[int, Chain] = field(default_factory=dict, compare=False, repr=False)
    #: ``high`` as one increasing array, row r's entries offset by r·2^(P+1) (fewer than 2^14 rows), else None.
    keys: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        rows = self.high.shape[0]
        if rows < 1 << _KEY_ROWS_BITS:
            offsets = np.arange(rows, dtype=np.int64)[:, None] << np.int64(PRECISION + 1)
            object.__setattr__(self, "keys", (self.high + offsets).reshape(-1))


@lru_cache(maxsize=64)
def coin_bounds(p: Fraction) -> CdfBounds:
    """A coin as one row of two outcomes: 0 (True) with probability ``p``, exactly (integer bounds)."""
    p = Fraction(p)
    scaled = p * (1 << PRECISION)
    floor, ceil = math.floor(scaled), math.ceil(scaled)
    low = np.array([[floor, 1 << PRECISION]], dtype=np.int64)
    high = np.array([[ceil, 1 << PRECISION]], dtype=np.int64)
    return CdfBounds(low, high, lambda _row: [p.numerator, p.denominator])


def cumulative_bounds(cumulative: Sequence[int]) -> CdfBounds:
    """One distribution of exact integer cumulative weights A_0 ≤ … ≤ A_last (F_j = A_j / A_last) as bounds.

    Each bound is computed in exact integers: ⌊A_j·2^P / A_last⌋ and its ceiling.
    """
    counts = [int(c) for c in cumulative]
    total = counts[-1]
    if total <= 0 or any(b < a for a, b in zip([0, *counts], counts)):
        raise ValueError("cumulative weights must be nondecreasing from 0 to a positive total")
    low = [(c << PRECISION) // total for c in counts]
    high = [-((-c << PRECISION) // total) for c in counts]
    return CdfBounds(np.array([low], dtype=np.int64), np.array([high], dtype=np.int64), lambda _row: counts)


@dataclass(frozen=True)
class Chain:
    """The decisions of every row on its first bits, then of each prefix still undecided on the next bits.

    ``fixed[r]``: row r's outcome with no bits read, or −1. ``tables[i]``
    (``steps[i]`` bits): entry (prefix << step) | bits is the proven outcome,
    or −(k + 1) for the k-th prefix left open, the next table's prefix k
    (the first table's prefixes are the rows). ``rows``/``prefixes``: the
    last table's open prefixes (row, bits read), ``bits_read`` of them.
    """

    fixed: np.ndarray
    tables: list[np.ndarray]
    steps: list[int]
    rows: np.ndarray
    prefixes: np.ndarray
    bits_read: int


def _decide(bounds: CdfBounds, rows: np.ndarray, u: np.ndarray, t: int) -> np.ndarray:
    """The outcome that t bits u prove for each draw (row ``rows``), or −1 where they do not yet."""
    width = bounds.low.shape[1]
    lo = u.astype(np.int64) << np.int64(PRECISION - t)
    hi = lo + np.int64(1 << (PRECISION - t))
    base = rows.astype(np.int64) * width
    if bounds.keys is not None:  # c = #{j : high_j ≤ lo}: one search of the rows' increasing keys
        offsets = rows.astype(np.int64) << np.int64(PRECISION + 1)
        a = np.searchsorted(bounds.keys, offsets + lo, side="right") - base
    else:
        high = bounds.high.reshape(-1)
        a = np.zeros(rows.size, dtype=np.int64)
        b = np.full(rows.size, width, dtype=np.int64)
        for _ in range(width.bit_length()):  # the same count, a binary search per draw
            mid = (a + b) >> 1
            active = a < b
            below = active & (high[base + np.minimum(mid, width - 1)] <= lo)
            a = np.where(below, mid + 1, a)
            b = np.where(active & ~below, mid, b)
    # F_{c−1} ≤ high_{c−1} / 2^P ≤ U's lower end; the outcome is c when the upper end is below F_c too
    decided = hi <= bounds.low.reshape(-1)[base + a]
    return np.where(decided, a, -1)


def _exact(bits: BitSource, cumulative: list[int], u: int, t: int) -> int:
    """F⁻¹(U) in integers, U's first ``t`` bits being ``u``: reads one more bit until the outcome is certain."""
    total = cumulative[-1]
    while True:
        lo = u * total  # U ∈ [u, u + 1) / 2^t; F_j = A_j / total: compare u·total with A_j·2^t
        c = sum(1 for a in cumulative if a << t <= lo)
        if (u + 1) * total <= cumulative[c] << t:
            return c
        u = 2 * u + int(bits.fields(1, 1)[0])
        t += 1


def _prefix_table(
    bounds: CdfBounds, rows: np.ndarray, prefixes: np.ndarray, t: int, step: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every prefix's decisions on ``step`` more bits: (codes, the undecided entries' rows and prefixes).

    Entry i·2^step + v of the codes is prefix i (row ``rows[i]``, t bits
    ``prefixes[i]``) followed by the bits v: the outcome they prove, or
    −(k + 1) for the k-th entry they leave undecided (the next table's prefix k).
    """
    grid_rows = np.repeat(rows, 1 << step)
    grid_u = (np.repeat(prefixes, 1 << step) << step) | np.tile(
        np.arange(1 << step, dtype=np.int64), rows.size
    )
    codes = _decide(bounds, grid_rows, grid_u, t + step)
    open_ = np.flatnonzero(codes < 0)
    codes[open_] = -1 - np.arange(open_.size)
    return codes.astype(np.int32), grid_rows[open_], grid_u[open_]


#: Entries of a chain's lookup tables at most (past them, the open draws are decided one by one).
CHAIN_ENTRIES = 1 << 20


def _chain(bounds: CdfBounds, first: int) -> Chain:
    """The lookup tables of ``bounds`` for a first step of ``first`` bits (cached on ``bounds``)."""
    cached = bounds.chains.get(first)
    if cached is not None:
        return cached
    n_rows = bounds.low.shape[0]
    rows = np.arange(n_rows, dtype=np.int64)
    fixed = _decide(bounds, rows, np.zeros(n_rows, dtype=np.int64), 0)
    prefixes = np.zeros(n_rows, dtype=np.int64)
    tables, steps, t, step, entries = [], [], 0, first, 0
    while rows.size and t < PRECISION and entries + (rows.size << step) <= CHAIN_ENTRIES:
        step = min(step, PRECISION - t)
        codes, rows, prefixes = _prefix_table(bounds, rows, prefixes, t, step)
        tables.append(codes)
        steps.append(step)
        entries += codes.size
        t += step
        step = STEP_BITS
    chain = Chain(fixed, tables, steps, rows, prefixes, t)
    bounds.chains[first] = chain
    return chain


def invert(bits: BitSource, bounds: CdfBounds, rows: np.ndarray, first: int) -> np.ndarray:
    """One exact draw of row ``rows[i]``'s distribution per i (int64 outcomes), bits read lazily.

    Rows whose outcome is certain read no bits. The others read ``first``
    bits, then :data:`STEP_BITS` at a time, until their outcome is proven:
    each step a lookup in a table of the decisions of every prefix still
    open (:class:`Chain`, built once per ``bounds``), then, past the tables,
    one by one (:func:`_decide`), and past :data:`PRECISION` bits in exact integers.
    """
    chain = _chain(bounds, max(1, min(first, PRECISION)))
    out = chain.fixed[rows]
    todo = np.flatnonzero(out < 0)
    prefix = rows[todo].astype(np.int64)
    for codes, step in zip(chain.tables, chain.steps, strict=True):
        if not todo.size:
            break
        code = codes[(prefix << step) | bits.fields(step, todo.size).astype(np.int64)]
        done = code >= 0
        out[todo[done]] = code[done]
        open_ = ~done
        todo, prefix = todo[open_], -1 - code[open_]
    if not todo.size:
        return out if bounds.origin is None else out + bounds.origin[rows]
    row, u, t = chain.rows[prefix], chain.prefixes[prefix], chain.bits_read
    while todo.size and t < PRECISION:
        step = min(STEP_BITS, PRECISION - t)
        u = (u << step) | bits.fields(step, todo.size).astype(np.int64)
        t += step
        code = _decide(bounds, row, u, t)
        done = code >= 0
        out[todo[done]] = code[done]
        open_ = ~done
        todo, row, u = todo[open_], row[open_], u[open_]
    origin = np.zeros(bounds.low.shape[0], dtype=np.int64) if bounds.origin is None else bounds.origin
    for i, r, v in zip(todo.tolist(), row.tolist(), u.tolist(), strict=True):  # rare: exact integers
        out[i] = _exact(bits, bounds.exact(r), v, t) - origin[r]
    return out if bounds.origin is None else out + bounds.origin[rows]
