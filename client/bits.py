"""A bit-level randomness economy for the batch samplers: exact draws that read about the entropy they need.

:mod:`ldp.client.randomness` hands out whole 64-bit words, and its samplers
read whole units of them (a 16-bit quarter word per coin, 8, 16 or 32 bits per
uniform integer), so a coin of 0.84 bits of entropy costs 16 bits of the OS
CSPRNG. This module serves the same exact distributions bit by bit:

- :class:`BitSource` hands out bits of a :class:`RandomSource`'s words,
  keeping the unused bits of the last word for the next draw (under a lock,
  threads may share it; dropped in a forked child, which would otherwise
  reuse its parent's bits). :func:`bit_source` gives each random source one
  :class:`BitSource`, so the bits left over by one batch serve the next.
- :func:`uniform_below_bits`: exact uniform integers in [0, b) by rejection
  on w bits (w ≥ ⌈log2 b⌉, the width that reads the fewest bits on average;
  a w-bit unit u is accepted below the largest multiple of b it can hold and
  reduced modulo b): about log2 b bits each.
- :func:`bernoulli_bits`: exact coins of a dyadic probability p = a/2^e
  (e ≤ 64), drawn jointly, eight coins at a time, by Knuth and Yao's
  discrete distribution generating tree [1]_ over the 256 outcomes of eight
  coins (:func:`block_table`). Walked one bit per level, a block of entropy
  H would read fewer than H + 2 bits on average; :func:`ky_sample` walks
  several levels per NumPy step and drops the bits of a step its walk did
  not need, so it reads a little more (binary RR at ε = 1: 1.25 bits a coin
  for 0.84 bits of entropy; GRR's coin at d = 1,024: 0.54 for 0.03). Any
  other probability compares a uniform U with p's binary expansion: the
  coin is p's digit after the run of U's digits equal to p's, a geometric
  run read as the 0s before a 1 (:func:`_expansion_coins`; per-row dyadic
  thresholds alike, :func:`threshold_coins_bits`): 2 bits a coin.
- :func:`sampler_for` chooses, per call, between these samplers and the
  random source's own word samplers: bits for a CSPRNG source and at least
  :data:`ECONOMY_MIN_DRAWS` draws, words otherwise; :func:`coins` and
  :func:`uniforms` draw from either.

Every draw reads independent uniform bits and maps them by a fixed rule
whose outcomes have exactly their probabilities; no bit is used twice.

References
----------
.. [1] D. E. Knuth, A. C. Yao. "The complexity of nonuniform random number
   generation". Algorithms and Complexity: New Directions and Recent
   Results, Academic Press, 1976.
"""

from __future__ import annotations

import math
import operator
import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ldp.client.randomness import RandomSource, as_source, bernoulli
from ldp.errors import ParameterError

__all__ = [
    "ECONOMY_MIN_DRAWS",
    "BitSource",
    "BlockTable",
    "agreeing_coins",
    "bernoulli_bits",
    "bit_source",
    "block_table",
    "coins",
    "dyadic_coins",
    "ky_sample",
    "rejection_width",
    "sampler_for",
    "step_table",
    "threshold_coins_bits",
    "uniform_below_bits",
    "uniform_below_each_bits",
    "uniforms",
]

#: Coins drawn jointly by :func:`bernoulli_bits` (one tree over 2^8 outcomes).
BLOCK_COINS = 8


class BitSource:
    """Uniform random bits from a :class:`RandomSource`'s words, every bit used once.

    :meth:`fields` cuts each fresh word into ⌊64/w⌋ fields of w bits (the
    64 mod w bits a fully used word has left over are not used); the bits of
    the last word outside the fields a draw takes are kept, as a string of
    bits, for the next draws, which read them first. The kept bits are taken under
    a lock (threads may share a source) and dropped in a forked child (which
    would otherwise reuse its parent's bits), as :class:`SystemRandomSource`
    does with its words.

    Examples
    --------
    >>> from ldp.client import SystemRandomSource
    >>> from ldp.client.bits import BitSource
    >>> bits = BitSource(SystemRandomSource())
    >>> tens = bits.fields(10, 1000)  # 1000 ten-bit integers, six a word: 167 words
    >>> tens.shape, bool(tens.max() < 1024)
    ((1000,), True)
    """

    def __init__(self, source: RandomSource):
        self.source = source
        self.secure = bool(getattr(source, "secure", False))
        self._kept = 0  # unused bits, the next draw's first (a Python integer of _kept_bits bits)
        self._kept_bits = 0
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def fields(self, width: int, n: int) -> np.ndarray:
        """``n`` independent uniform integers of ``width`` bits (1 to 64).

        Unsigned integers of the smallest type that holds ``width`` bits, in
        a new array the caller owns (a source's words may be read-only, as
        ``os.urandom``'s buffer is).
        """
        if not 1 <= width <= 64:
            raise ParameterError(f"bit fields are 1 to 64 bits wide, got {width}")
        if n < 0:
            raise ParameterError(f"a number of bit fields cannot be negative, got {n}")
        per = 64 // width
        mask = (1 << width) - 1
        with self._lock:
            if self._pid != os.getpid():
                self._kept, self._kept_bits, self._pid = 0, 0, os.getpid()
            head = []
            if self._kept_bits >= width:  # at most 127 bits kept: a few fields
                take = min(n, self._kept_bits // width)
                kept = self._kept
                head = [(kept >> (i * width)) & mask for i in range(take)]
                self._kept >>= take * width
                self._kept_bits -= take * width
            rest = n - len(head)
            if not rest:
                return np.array(head, dtype=_narrowest(width))
            wanted = -(-rest // per)
            words = np.asarray(self.source.words(wanted), dtype=np.uint64)
            if words.shape != (wanted,):  # a source breaking its contract: never keep bits it did not give
                raise ParameterError(f"the random source gave {words.size} words, asked for {wanted}")
            used = rest - (words.size - 1) * per  # fields used of the last word
            self._keep(int(words[-1]), width, used)
        body = _cut(words, width)[:rest]
        if head:
            return np.concatenate([np.array(head, dtype=body.dtype), body])
        return body.copy() if width in _VIEWS else body  # a view of the source's words: copied

    def _keep(self, word: int, width: int, used: int) -> None:
        """Keep the bits of ``word`` outside its first ``used`` fields of ``width`` bits (see :func:`_cut`)."""
        lane = _lane_bits(width)
        full, part = divmod(used, lane // width)
        start = full * lane  # the lanes before it are used
        if part:  # the partly used lane: the bits above its used fields
            self._append(
                (word >> (start + part * width)) & ((1 << (lane - part * width)) - 1), lane - part * width
            )
            start += lane
        if start < 64:  # the whole lanes after it, their spare bits included
            self._append(word >> start, 64 - start)

    def _append(self, value: int, count: int) -> None:
        self._kept |= value << self._kept_bits
        self._kept_bits += count


#: Fields of 8, 16 and 32 bits are a word's little-endian bytes, halves... read as they are.
_VIEWS = {8: "<u1", 16: "<u2", 32: "<u4"}
_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _narrowest(width: int) -> type:
    """The narrowest unsigned NumPy type that holds ``width`` bits."""
    return _UNSIGNED[8 if width <= 8 else 16 if width <= 16 else 32 if width <= 32 else 64]


@lru_cache(maxsize=64)
def _lane_bits(width: int) -> int:
    """The narrowest lane (8, 16, 32 or 64 bits of a word) whose cut gives a word its ⌊64/width⌋ fields."""
    return next(
        lane for lane in (8, 16, 32, 64) if lane >= width and (lane // width) * (64 // lane) == 64 // width
    )


def _cut(words: np.ndarray, width: int) -> np.ndarray:
    """Each word's ⌊64/width⌋ fields: a word's lanes in little-endian order, each lane's fields lowest bits first.

    The lane is the narrowest that holds as many fields (:func:`_lane_bits`:
    for 10-bit fields two 32-bit halves of three fields each), so the
    arithmetic runs on narrow integers. Returns unsigned integers of the
    narrowest type that holds ``width`` bits.
    """
    if width in _VIEWS:
        return words.astype("<u8", copy=False).view(_VIEWS[width])
    lane = _lane_bits(width)
    lanes = words.astype("<u8", copy=False).view(_VIEWS.get(lane, "<u8"))
    if width == 1:
        return np.unpackbits(lanes, bitorder="little")
    per = lane // width
    out: np.ndarray = np.empty((lanes.size, per), dtype=_narrowest(width))
    unit = _UNSIGNED[lane]
    for j in range(per):  # one strided column per field: faster than broadcasting the shifts
        out[:, j] = lanes >> unit(j * width)
    out &= out.dtype.type((1 << width) - 1)
    return out.reshape(-1)


_SOURCES: weakref.WeakKeyDictionary[object, BitSource] = weakref.WeakKeyDictionary()
_SOURCES_LOCK = threading.Lock()


def bit_source(source: RandomSource | BitSource | np.random.Generator) -> BitSource:
    """The :class:`BitSource` of ``source`` (one per random source, kept while the source lives).

    A :class:`BitSource` is returned as is; anything else is first taken
    through :func:`~ldp.client.randomness.as_source`.
    """
    if isinstance(source, BitSource):
        return source
    source = as_source(source)
    with _SOURCES_LOCK:
        try:
            bits = _SOURCES.get(source)
        except TypeError:  # a source that cannot be weakly referenced: a bit source of its own
            return BitSource(source)
        if bits is None:
            bits = _SOURCES[source] = BitSource(source)
        return bits


def _field_cost(width: int) -> Fraction:
    """Bits of fresh words one field of ``width`` bits takes (⌊64/width⌋ fields a word)."""
    return Fraction(64, 64 // width)


@lru_cache(maxsize=1 << 16)  # Floyd's batch asks for ω bounds a chunk: a smaller cache cycled past ω = 256
def rejection_width(bound: int, *, contiguous: bool = False) -> int:
    """The unit width w ≥ ⌈log2 bound⌉ (at most 8 more) that reads the fewest bits per accepted integer.

    A w-bit unit is accepted with probability m·bound / 2^w, m = ⌊2^w / bound⌋,
    and takes 64/⌊64/w⌋ bits of a word (:meth:`BitSource.fields`), so an
    integer reads (64/⌊64/w⌋)·2^w / (m·bound) bits on average. ``contiguous``:
    units packed end to end across words (a unit costs w bits; w ≤ 63, so
    that a unit fits an int64), as the subset tree's leaf ranks read them.
    """
    low = (bound - 1).bit_length()
    candidates = range(low, min(low + 8, 63 if contiguous else 64) + 1)
    cost = Fraction if contiguous else _field_cost
    return min(candidates, key=lambda w: cost(w) * Fraction(1 << w, ((1 << w) // bound) * bound))


def uniform_below_bits(bits: BitSource, bound: int, n: int) -> np.ndarray:
    """``n`` exact uniform integers in ``[0, bound)`` (int64; bound ≤ 2^63), about log2(bound) bits each.

    Rejection on :func:`rejection_width` bits: a unit u below the largest
    multiple of ``bound`` it can hold gives u mod ``bound``; the others are
    redrawn. Every residue has the same number of accepted units, so the
    result is exactly uniform (the accepted candidates of a redraw are
    taken in order; the spare ones are dropped). A power of two reads
    exactly its bits.
    """
    bound = operator.index(bound)
    if not 1 <= bound <= 1 << 63:
        raise ParameterError(f"uniform integers need a bound in [1, 2^63], got {bound}")
    if bound == 1:
        return np.zeros(n, dtype=np.int64)
    if bound & (bound - 1) == 0:
        return bits.fields(bound.bit_length() - 1, n).astype(np.int64)
    width = rejection_width(bound)
    multiple = ((1 << width) // bound) * bound
    units = bits.fields(width, n)
    limit = units.dtype.type(multiple)
    rejected = np.flatnonzero(units >= limit)
    accept = multiple / (1 << width)
    while rejected.size:  # redraw the rejected units: enough candidates that one round nearly always does
        candidates = bits.fields(width, int(rejected.size / accept * 1.1) + 8)
        kept = candidates[candidates < limit][: rejected.size]
        units[rejected[: kept.size]] = kept
        rejected = rejected[kept.size :]
    if multiple != bound:
        units %= units.dtype.type(bound)
    return units.astype(np.int64)


def uniform_below_each_bits(bits: BitSource, bounds: Sequence[int] | np.ndarray, n: int) -> np.ndarray:
    """For each bound b_r (≤ 2^63), ``n`` exact uniform integers in ``[0, b_r)``: a (len(bounds), n) int64 array.

    Row r reads what :func:`uniform_below_bits` reads for b_r: units of
    :func:`rejection_width` (b_r) bits, a unit below the largest multiple of
    b_r it holds giving its residue, the others redrawn one for one. Rows of
    one width are drawn together: row by row through :func:`uniform_below_bits`,
    Floyd's batch of 64 steps took 1.5–2.7× the time (measured, d = 1,024).
    """
    listed = bounds.reshape(-1).tolist() if isinstance(bounds, np.ndarray) else list(bounds)
    bound_list = [operator.index(b) for b in listed]
    out = np.zeros((len(bound_list), n), dtype=np.int64)
    by_width: dict[int, list[int]] = {}
    for r, b in enumerate(bound_list):
        if not 1 <= b <= 1 << 63:
            raise ParameterError(f"uniform integers need a bound in [1, 2^63], got {b}")
        if b > 1:
            by_width.setdefault(rejection_width(b), []).append(r)
    for width, rows in by_width.items():
        units = bits.fields(width, len(rows) * n).reshape(len(rows), n)
        # the multiples of b below 2^width in Python integers: 1 << width overflows units of exactly width bits
        # (8, 16, 32), and b = 2^width does not fit them; such rows take uint64
        limit_list = [((1 << width) // bound_list[r]) * bound_list[r] for r in rows]
        wide = max(limit_list) >> (8 * units.itemsize) != 0
        kind = np.uint64 if wide else units.dtype
        row_bounds = np.array([bound_list[r] for r in rows], dtype=kind)[:, None]
        limits = np.array(limit_list, dtype=kind)[:, None]
        flat, flat_limits = units.reshape(-1), np.broadcast_to(limits, units.shape).reshape(-1)
        rejected = np.flatnonzero(flat >= flat_limits)
        while rejected.size:  # each rejected unit redrawn until accepted: exactly uniform, one for one
            candidates = bits.fields(width, rejected.size)
            accepted = candidates < flat_limits[rejected]
            flat[rejected[accepted]] = candidates[accepted]
            rejected = rejected[~accepted]
        out[rows] = (units % row_bounds).astype(np.int64)
    return out


@dataclass(frozen=True)
class BlockTable:
    """A Knuth–Yao tree of a dyadic distribution, level by level.

    Level t (t = ``first`` … ``first`` + len(``counts``) − 1) has
    ``counts[t − first]`` leaves, labelled ``labels[starts[t − first]:]``;
    they are the outcomes whose probability has binary digit t set. No level
    above ``first`` has a leaf.
    """

    first: int
    counts: np.ndarray
    starts: np.ndarray
    labels: np.ndarray
    #: Bits every walk reads at once from the root (:func:`_first_step`).
    first_step: int
    #: Step tables by (depth, bits), filled as walks reach them (:func:`step_table`).
    steps: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, compare=False)


def _tree(weights: list[int], exponent: int, labels_of: list[np.ndarray]) -> BlockTable:
    """The tree of outcome classes with probabilities ``weights[j]`` / 2^``exponent`` (summing to 1).

    Class j's outcomes (``labels_of[j]``, each of probability weights[j] / 2^exponent) are leaves at
    every level t where binary digit t of that probability is set.
    """
    if sum(w * len(labels) for w, labels in zip(weights, labels_of)) != 1 << exponent:
        raise ParameterError("a Knuth–Yao tree needs probabilities summing to 1")
    levels: list[np.ndarray] = []
    for t in range(1, exponent + 1):
        bit = exponent - t
        levels.append(
            np.concatenate(
                [labels for w, labels in zip(weights, labels_of) if (w >> bit) & 1] or [labels_of[0][:0]]
            )
        )
    first = next(t for t, level in enumerate(levels) if level.size)
    while not levels[-1].size:
        levels.pop()
    levels = levels[first:]
    counts = np.array([level.size for level in levels], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return BlockTable(first + 1, counts, starts, np.concatenate(levels), _first_step(first + 1, counts))


@lru_cache(maxsize=64)
def block_table(probability: Fraction, coins: int = BLOCK_COINS) -> BlockTable:
    """The tree of ``coins`` independent coins of a dyadic ``probability``: outcome bit i = coin i (bit 0 first).

    The 2^coins outcomes with j ones have probability p^j (1 − p)^(coins − j)
    = a^j (2^e − a)^(coins − j) / 2^(e·coins) for p = a/2^e.
    """
    p = Fraction(probability)
    e = p.denominator.bit_length() - 1
    if p.denominator != 1 << e or not 0 < p < 1:
        raise ParameterError(f"a block of coins needs a dyadic probability in (0, 1), got {p}")
    a, b = p.numerator, (1 << e) - p.numerator
    outcomes = np.arange(1 << coins, dtype=np.uint8 if coins <= 8 else np.uint32)
    ones = np.bitwise_count(outcomes)
    labels_of = [outcomes[ones == j] for j in range(coins + 1)]
    weights = [a**j * b ** (coins - j) for j in range(coins + 1)]
    return _tree(weights, e * coins, labels_of)


#: Bits a Knuth–Yao walk reads per step after its first (:func:`ky_sample`), and once few walks are left.
STEP_BITS = 4
TAIL_STEP_BITS = 8
#: Walks left below which the steps read ``TAIL_STEP_BITS``: their unused bits no longer count.
_TAIL_WALKS = 64


def _leaves(table: BlockTable, depth: int) -> int:
    """Leaves of the tree at ``depth`` (bits read)."""
    i = depth - table.first
    return int(table.counts[i]) if 0 <= i < table.counts.size else 0


def _inner(table: BlockTable, depth: int) -> int:
    """Internal nodes of the tree at ``depth`` (1 at the root)."""
    inner = 1
    for d in range(1, depth + 1):
        inner = 2 * inner - _leaves(table, d)
    return inner


def step_table(table: BlockTable, depth: int, step: int) -> np.ndarray:
    """Where ``step`` bits lead from each internal node at ``depth``: int32 codes by node·2^step + bits.

    A code c ≥ 0 is the internal node reached ``step`` levels down; c < 0
    is the outcome ~c, a leaf reached within those bits (the bits after it
    unused).
    """
    key = (depth, step)
    cached = table.steps.get(key)
    if cached is not None:
        return cached
    inner = _inner(table, depth)
    node = np.repeat(np.arange(inner, dtype=np.int64), 1 << step)
    bits = np.tile(np.arange(1 << step, dtype=np.int64), inner)
    code = np.zeros(node.size, dtype=np.int64)
    open_ = np.ones(node.size, dtype=bool)
    for r in range(1, step + 1):
        node = 2 * node + ((bits >> (step - r)) & 1)
        count = _leaves(table, depth + r)
        if not count:  # no leaf at this depth (or below the tree's last level, where no node is left)
            continue
        leaf = open_ & (node < count)
        code[leaf] = ~table.labels[table.starts[depth + r - table.first] + node[leaf]].astype(np.int64)
        open_ &= ~leaf
        node -= count * open_
    code[open_] = node[open_]
    table.steps[key] = code = code.astype(np.int32)
    return code


#: Share of the walks that end within the first step (:func:`_first_step`), and its most bits.
_FIRST_ENDED = Fraction(3, 4)
_FIRST_STEP_MAX = 12


def _first_step(first: int, counts: np.ndarray) -> int:
    """Bits every walk reads at once from the root: down to the depth by which 3/4 of the walks have ended.

    At most 12, unless the first leaf is deeper.

    ``counts`` are the leaves of each depth from ``first`` (the first with a leaf) on.
    """
    ended, depth = Fraction(0), first
    while True:
        ended += Fraction(int(counts[depth - first]), 1 << depth) if depth - first < counts.size else 0
        if ended >= _FIRST_ENDED or depth >= max(first, _FIRST_STEP_MAX):
            return depth if depth > STEP_BITS or depth < first else STEP_BITS  # 4 bits: a byte's halves
        depth += 1


def ky_sample(bits: BitSource, table: BlockTable, n: int) -> np.ndarray:
    """``n`` independent outcomes of ``table``'s distribution (Knuth–Yao walks, all at once).

    A walk reads one bit per level from the root: node k of a level is a
    leaf when k < that level's leaf count, else internal node k − count,
    whose children are nodes 2k and 2k + 1 of the next level. A leaf at
    depth t is reached with probability 2^-t, so each outcome comes out with
    exactly its probability. The walks go several levels at a time: each
    reads a step of bits at once and looks up where they lead
    (:func:`step_table`): first down to the depth by which 3/4 of them have
    ended (:func:`_first_step`), then ``STEP_BITS`` at a time
    (``TAIL_STEP_BITS`` once fewer than 64 are left). A walk that ends
    before the last bit of its step leaves the rest unused; they are dropped,
    which changes nothing in the outcome's distribution.
    """
    out = np.empty(n, dtype=table.labels.dtype)
    step = table.first_step
    code = step_table(table, 0, step)[bits.fields(step, n).astype(np.int64)]
    depth = step
    done = code < 0
    out[done] = ~code[done]
    todo = np.flatnonzero(~done)
    node = code[todo]
    while todo.size:
        step = STEP_BITS if todo.size >= _TAIL_WALKS else TAIL_STEP_BITS
        at = node.astype(np.int64) << step
        at += bits.fields(step, todo.size).astype(np.int64)
        code = step_table(table, depth, step)[at]
        depth += step
        done = code < 0
        out[todo[done]] = ~code[done]
        open_ = ~done
        todo, node = todo[open_], code[open_]
    return out


def _dyadic_exponent(p: Fraction) -> int | None:
    den = p.denominator
    return den.bit_length() - 1 if den & (den - 1) == 0 and den <= 1 << 64 else None


def bernoulli_bits(bits: BitSource, probability: Fraction, n: int) -> np.ndarray:
    """``n`` independent coins, each True with exactly ``probability``: a boolean array.

    A dyadic probability a/2^e (e ≤ 64) is drawn eight coins at a time from
    :func:`block_table` (a bit-by-bit walk of that tree reads fewer than
    h(p) + 1/4 bits a coin on average; the stepped walk reads a few whole
    steps more: binary RR at ε = 1 1.25 bits a coin, GRR's coin at
    d = 1,024 0.54; the coins of the last block past ``n`` are dropped). Any other probability
    is drawn by :func:`_expansion_coins`: about 2 bits a coin.
    """
    p = Fraction(probability)
    if not 0 <= p <= 1:
        raise ParameterError(f"probability must be in [0, 1], got {p}")
    if p == 0 or p == 1:
        return np.full(n, p == 1)
    if _dyadic_exponent(p) is None:
        return _expansion_coins(bits, p, n)
    blocks = ky_sample(bits, block_table(p), -(-n // BLOCK_COINS))
    return np.unpackbits(blocks, bitorder="little")[:n].view(bool)


def threshold_coins_bits(bits: BitSource, thresholds: np.ndarray) -> np.ndarray:
    """Coin i True with probability exactly ``thresholds[i]`` / 2^64 (uint64 thresholds): a boolean array.

    A coin is U < t for U uniform in [0, 2^64), compared most significant
    bit first: each of U's bits equals t's with probability 1/2,
    independently of t, and the first that differs decides (U < t where t's
    bit is 1); a U equal to t in all 64 bits is not below it. So the coin is
    bit L of t (from the top), L the number of equal bits before the first
    that differs, and L is geometric: the run of 0s before a 1 in fair bits
    (:func:`_zero_runs`; L ≥ 64, probability 2^-64, is U = t: False). About
    2 bits a coin, whatever its probability (a whole word before).
    """
    t = np.asarray(thresholds, dtype=np.uint64).ravel()
    equal = _zero_runs(bits, t.size)
    bit = (t >> (np.uint64(63) - np.minimum(equal, 63).astype(np.uint64))) & np.uint64(1)
    return (bit == 1) & (equal < 64)


#: Digits of a probability's binary expansion that :func:`_expansion_coins` looks up at once.
_EXPANSION_DIGITS = 64


def _expansion_coins(bits: BitSource, p: Fraction, n: int, depth: int = 0) -> np.ndarray:
    """``n`` coins of any probability 0 < p < 1 (exact): U < p for U uniform, compared digit by digit.

    As in :func:`threshold_coins_bits`, the first of U's digits that differs
    from p's decides (U < p where p's digit is 1), after L equal digits, L
    geometric (:func:`_zero_runs`): the coin is digit L + 1 of p. A coin
    whose first 64 digits all equal p's (probability 2^-64) is the same
    comparison of fresh digits with p's expansion from digit 65 on:
    2^64·p − ⌊2^64·p⌋.
    """
    scaled = p * (1 << _EXPANSION_DIGITS)
    head = scaled.numerator // scaled.denominator  # digits 1 … 64 of p
    digits = np.array(
        [(head >> (_EXPANSION_DIGITS - 1 - k)) & 1 for k in range(_EXPANSION_DIGITS)], dtype=bool
    )
    equal = _zero_runs(bits, n)
    decided = equal < _EXPANSION_DIGITS
    out = np.zeros(n, dtype=bool)
    out[decided] = digits[equal[decided]]
    longer = np.flatnonzero(~decided)
    if longer.size:
        if depth >= 16:  # 1,024 digits equal to p's: probability 2^-1024 from a working source
            raise ParameterError(
                "the random source gave 1,024 bits equal to a probability's digits: it is broken"
            )
        tail = scaled - head
        out[longer] = _expansion_coins(bits, tail, longer.size, depth + 1) if 0 < tail < 1 else False
    return out


def _zero_runs(bits: BitSource, n: int) -> np.ndarray:
    """``n`` independent geometric counts, P[L = l] = 2^-(l + 1): the runs of 0s before each 1 of the bits read.

    The bits are read in rounds of a little under 2 a count (the mean), so
    that the last round, which leaves the bits after its last 1 unused, is
    short: about √n bits go unused. A run reaching 64 0s at the end of a
    round ends there (its coin is decided); a longer run inside a round is
    one count of 64 or more. Either way every count's distribution is exact
    (:func:`threshold_coins_bits` needs only whether it is 64 or more).
    """
    out = np.empty(n, dtype=np.int64)
    filled, carried = 0, 0  # carried: the 0s at the end of the last round, the next run's first
    while filled < n:
        need = n - filled
        words = bits.fields(64, max(1, (2 * need - 3 * math.isqrt(need)) // 64))
        stream = np.unpackbits(words.view(np.uint8)).view(bool)
        ones = np.flatnonzero(stream)
        if not ones.size:
            carried += stream.size
            if carried >= 64:  # 64 equal bits already: U = t, this coin is False (a source of 0s still ends)
                out[filled], filled, carried = carried, filled + 1, 0
            continue
        used = ones[:need]
        runs = out[filled : filled + used.size]  # the 0s between consecutive 1s, the first after the carried
        runs[0] = used[0] + carried
        np.subtract(used[1:], used[:-1], out=runs[1:])
        runs[1:] -= 1
        filled += used.size
        carried = stream.size - 1 - int(ones[-1])
    return out


#: Draws per call from which a CSPRNG source's batch samplers read bits (:func:`sampler_for`): below it
#: the bit samplers' fixed cost per call (a few dozen NumPy operations) outweighs the CSPRNG bytes saved.
ECONOMY_MIN_DRAWS = 8192


def sampler_for(source: RandomSource | BitSource | np.random.Generator, n: int) -> RandomSource | BitSource:
    """Where a batch sampler of ``n`` draws takes its randomness: bits, or whole words.

    A :class:`BitSource` as is; a CSPRNG source's :func:`bit_source` for
    ``n`` ≥ :data:`ECONOMY_MIN_DRAWS` (its bytes are dear: ``os.urandom``
    costs more per byte than the bit samplers' arithmetic); otherwise the
    random source itself (a seeded generator's words are cheap), whose word
    samplers (:func:`~ldp.client.randomness.bernoulli`,
    :meth:`RandomSource.integers`) read whole 8- to 64-bit units. Both give
    exactly the same distributions; only the bits read differ.
    """
    if isinstance(source, BitSource):
        return source
    source = as_source(source)
    if source.secure and n >= ECONOMY_MIN_DRAWS:
        return bit_source(source)
    return source


def coins(sampler: RandomSource | BitSource, probability: Fraction, n: int) -> np.ndarray:
    """``n`` exact coins of ``probability`` from a :func:`sampler_for` result (a boolean array)."""
    if isinstance(sampler, BitSource):
        return bernoulli_bits(sampler, probability, n)
    return bernoulli(sampler, probability, n)


def dyadic_coins(sampler: RandomSource | BitSource, numerators: np.ndarray, exponent: int) -> np.ndarray:
    """Coin i True with probability exactly ``numerators[i]`` / 2^exponent (exponent ≤ 64): a boolean array.

    A numerator of 2^exponent is a certain coin. From a :class:`BitSource`,
    :func:`threshold_coins_bits` (2 bits a coin on average, none for a
    certain one); from a random source, the top ``exponent`` bits of one
    word a coin compared with the numerator (the same probabilities).
    """
    t = np.asarray(numerators, dtype=np.uint64)
    if not isinstance(sampler, BitSource):
        return (np.asarray(sampler.words(t.size), dtype=np.uint64) >> np.uint64(64 - exponent)) < t
    if exponent == 64 or not (t >> np.uint64(exponent)).any():  # every numerator below 2^exponent
        return threshold_coins_bits(sampler, t << np.uint64(64 - exponent))
    certain = t >= np.uint64(1 << exponent)  # probability 1 (2^exponent would wrap in a 64-bit threshold)
    out = np.ones(t.size, dtype=bool)
    out[~certain] = threshold_coins_bits(sampler, t[~certain] << np.uint64(64 - exponent))
    return out


def agreeing_coins(
    sampler: RandomSource | BitSource, numerators: np.ndarray, exponent: int, probability: Fraction
) -> np.ndarray:
    """Whether a coin of f_i = ``numerators[i]`` / 2^exponent and a coin of p agree, for each i (exact).

    A two-point mechanism's report: the rounded side (f) kept with p. From a
    random source, the two coins (:func:`dyadic_coins`, then :func:`coins`).
    From a :class:`BitSource`, with p dyadic (denominator ≤ 2^64) and
    exponent ≤ 53, one coin of q = f·p + (1 − f)(1 − p): U < q by q's digit
    after a geometric run of equal digits (:func:`_zero_runs`), the digits
    from floating point where they are certain, else exact
    (:func:`_agreement_digits`): 2 bits a report, where the two coins read 3.
    """
    p = Fraction(probability)
    t = np.asarray(numerators, dtype=np.uint64)
    dyadic = p.denominator <= 1 << 64 and p.denominator & (p.denominator - 1) == 0
    if not isinstance(sampler, BitSource) or exponent > 53 or not 0 < p < 1 or not dyadic:
        return dyadic_coins(sampler, t, exponent) == coins(sampler, p, t.size)
    equal = _zero_runs(sampler, t.size)
    # q's first 32 digits in floating point: |error| < 2^-51 before scaling, so ⌊q·2^32⌋ is certain where
    # q·2^32 is 2^-16 or more from an integer; the others (about 2^-15 of the rows) and the runs of 32 or
    # more equal digits take the exact digits
    q32 = (float(1 - p) + t.astype(np.float64) * (float(2 * p - 1) / 2.0**exponent)) * 2.0**32
    top = np.floor(q32)
    shift = np.uint64(31) - np.minimum(equal, 31).astype(np.uint64)
    out = ((top.astype(np.uint64) >> shift) & np.uint64(1)).astype(bool)
    exact = np.flatnonzero((equal >= 32) | (q32 - top < 2.0**-16) | (top + 1.0 - q32 < 2.0**-16))
    if exact.size:
        head, rest = _agreement_digits(t[exact], exponent, int(p * (1 << 64)))
        runs = equal[exact]
        within = runs < 64
        out[exact[within]] = (
            (head[within] >> (np.uint64(63) - runs[within].astype(np.uint64))) & np.uint64(1)
        ) == 1
        later = ~within  # 64 digits equal to q's: compare fresh digits with q's next ones
        out[exact[later]] = threshold_coins_bits(sampler, rest[later] << np.uint64(64 - exponent))
    return out


def _agreement_digits(t: np.ndarray, exponent: int, p64: int) -> tuple[np.ndarray, np.ndarray]:
    """q_i = f_i·p + (1 − f_i)(1 − p), f_i = t_i/2^e (t_i ≤ 2^e ≤ 2^53), p = p64/2^64: (⌊q_i·2^64⌋, the rest·2^e).

    q·2^64 = base + s·A/2^e exactly, with base = 2^64 − p64, A = 2·p64 − 2^64,
    s = t for p ≥ 1/2, and base = p64, A = 2^64 − 2·p64, s = 2^e − t below
    (A ≥ 0 either way). s·A < 2^118 is formed from 32-bit halves in uint64.
    """
    if 2 * p64 >= 1 << 64:
        base, a, s = (1 << 64) - p64, 2 * p64 - (1 << 64), t
    else:
        base, a, s = p64, (1 << 64) - 2 * p64, np.uint64(1 << exponent) - t
    low32 = np.uint64(0xFFFF_FFFF)
    s_hi, s_lo = s >> np.uint64(32), s & low32
    a_hi, a_lo = np.uint64(a >> 32), np.uint64(a & 0xFFFF_FFFF)
    p0, p1, p2, p3 = s_lo * a_lo, s_lo * a_hi, s_hi * a_lo, s_hi * a_hi  # each < 2^64: s_hi < 2^22
    middle = (p1 & low32) + (p2 & low32) + (p0 >> np.uint64(32))
    low = (middle << np.uint64(32)) | (p0 & low32)  # s·A mod 2^64
    high = p3 + (p1 >> np.uint64(32)) + (p2 >> np.uint64(32)) + (middle >> np.uint64(32))  # s·A >> 64
    if exponent:
        quotient = (high << np.uint64(64 - exponent)) | (low >> np.uint64(exponent))
        rest = low & np.uint64((1 << exponent) - 1)
    else:
        quotient, rest = low, np.zeros_like(low)
    return np.uint64(base) + quotient, rest


def uniforms(sampler: RandomSource | BitSource, bound: int, n: int) -> np.ndarray:
    """``n`` exact uniform integers in ``[0, bound)`` from a :func:`sampler_for` result.

    int64 for a bound ≤ 2^63 (uint64 above, from the words).
    """
    if isinstance(sampler, BitSource):
        if bound <= 1 << 63:
            return uniform_below_bits(sampler, bound, n)
        sampler = sampler.source
    return sampler.integers(bound, n)
