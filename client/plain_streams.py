"""Plain q-coins of many reports of one width from a few long digit streams (the corrected coins' q-coins).

:func:`stream_coins` draws what :func:`ldp.client.onehot.plain_coins` draws
(every bit of every report 1 with probability q, exact and independent)
with the same block inversion (:func:`ldp.client.onehot.pattern_table`:
a block of 8 coins, or the report's last t < 8, is one cell of the unit
interval, found from a 16-digit lookup and, when that leaves it open, the
digits after it against the exact cuts), but lays the digits out for speed:

- the batch's reports are dealt to ``L = min(STREAMS, n)`` streams, report
  r to stream r mod L as its (r div L)-th report, and each stream reads
  one unbroken run of digits for all its reports' blocks in turn (no row
  per report, so almost no digit is left unread at a report's end);
- stream ℓ's first segment is about its blocks' expected digits plus
  :data:`SEGMENT_SIGMAS` standard deviations (public: n, the width and q
  only); a stream whose next block may need digits past its segment gets a
  new one (its unread digits, then a fresh word), so each stream reads one
  unbroken sequence of uniform digits wherever its segments end;
- the compiled kernel (:mod:`ldp.client.plain_streams_kernel`) steps four
  streams in lockstep, a block each in turn (their lookups overlap in the
  CPU); the NumPy rounds here step every stream a block a round. Both read
  the same digits and return the same coins.

At q = 1/2 every pattern of a block has the same mass, so a block is its
own digits: the coins are the words' bits, each report ⌈width/8⌉ bytes
(the last one's spare digits unused), with no lookup.

So the digits read depend on n, the width and q (and on the digits
themselves), never on a report's value; every digit decides at most one
block, a 16-digit lookup decides only by the digits its entry counts, and
a block the bounds leave open after 32 digits is settled with the exact
cuts (:func:`ldp.client.onehot._exact_cell`): every coin has exactly
probability q and all are independent.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from ldp.client import onehot
from ldp.client.onehot import BLOCK, PRECISION, WINDOW
from ldp.client.randomness import RandomSource

__all__ = ["SEGMENT_SIGMAS", "STREAMS", "stream_coins"]

#: Streams a batch is dealt to (at most): the compiled kernel steps them four at a time; fewer streams leave
#: fewer digits unread at their ends, more make the NumPy rounds (one block of every stream a round) fewer.
STREAMS = 128
#: A stream's first segment holds its expected digits plus this many standard deviations (and PRECISION
#: digits): a stream reads past it with probability about 0.1 %, then takes a refill pass.
SEGMENT_SIGMAS = 3.0

_DONE, _STALLED, _EXACT = 0, 1, 2


def stream_coins(
    source: RandomSource, n: int, width: int, q: Fraction, *, backend: str | None = None
) -> np.ndarray:
    """Packed coins, every bit of every report 1 w.p. ``q`` (exact), from :data:`STREAMS` streams of digits.

    Parameters
    ----------
    source : RandomSource
        Where the uniform words come from.
    n, width : int
        Reports, and bits per report (at least 1).
    q : Fraction
        The coins' probability, in (0, 1).
    backend : {"numba", "numpy"}, optional
        As for :func:`ldp.client.onehot.plain_coins`; both give the same
        coins from the same words.

    Returns
    -------
    numpy.ndarray
        (n, ⌈width/8⌉) uint8, in :func:`numpy.packbits` order.
    """
    q = onehot._probability("q", q, "stream_coins")
    onehot._check_width_and_backend(width, backend, "stream_coins")
    steps, tail = -(-width // BLOCK), width % BLOCK
    if q == Fraction(1, 2):  # a block's cell is its digits (every pattern's mass is 2^-t): the words' bits
        fair = source.words(-(-n * steps // 8)).view(np.uint8)[: n * steps].reshape(n, steps).copy()
        if tail:
            fair[:, -1] &= np.uint8((0xFF << (BLOCK - tail)) & 0xFF)
        return fair
    out = np.zeros((n, steps), dtype=np.uint8)
    if n == 0:
        return out
    tables = onehot._tables(1 - q, q, frozenset({min(width, BLOCK), tail} - {0}), frozenset(), False)
    decode = _decode_kernel() if onehot._backend(backend, n) is not onehot._run_numpy else _decode_numpy
    lanes = min(STREAMS, n)
    blocks = ((n - np.arange(lanes) + lanes - 1) // lanes) * steps
    segments = _segment_digits(q, width, blocks // steps)
    end = np.cumsum(segments)
    pos = end - segments
    pool = _Words(source, -(-int(end[-1]) // 64))
    done = np.zeros(lanes, dtype=np.int64)
    status = np.zeros(lanes, dtype=np.int8)
    prefix = np.zeros(lanes, dtype=np.int64)
    active = np.arange(lanes, dtype=np.int64)
    shape = (lanes, steps, tail)
    while active.size:
        decode(pool.words, active, pos, end, done, blocks, shape, tables, out.reshape(-1), status, prefix)
        held = active[status[active] != _DONE]
        for lane in held[status[held] == _EXACT].tolist():
            _finish_exact(pool, tables, lane, shape, pos, end, done, out, prefix)
        stalled = held[status[held] == _STALLED]
        if stalled.size:
            _refill(pool, stalled, pos, end)
        active = held[done[held] < blocks[held]]
    return out


class _Words:
    """The words a draw reads, in the order drawn: first the source's own array (not copied: the kernel only
    reads it), then, once a stream needs more, a copy that grows. ``words`` always ends with two words past
    the last digit any segment holds (a window at a segment's end may look at them; they decide nothing)."""

    def __init__(self, source: RandomSource, n: int):
        self.source = source
        self.words = source.words(n + 2)  # the two last: padding (drawn, so no copy is needed)
        self.used = n

    def append(self, fresh: np.ndarray) -> int:
        """Add ``fresh`` words after the last used; returns the index of the first."""
        first = self.used
        if first + fresh.size + 2 > self.words.size or not self.words.flags.writeable:
            grown = np.zeros(2 * (first + fresh.size + 2), dtype=np.uint64)
            grown[:first] = self.words[:first]
            self.words = grown
        self.words[first : first + fresh.size] = fresh
        self.used = first + fresh.size
        return first


def _refill(pool: _Words, stalled: np.ndarray, pos: np.ndarray, end: np.ndarray) -> None:
    """New segments for the streams that stopped: each its unread digits (fewer than PRECISION), then a fresh
    word, the streams in order (their words drawn together)."""
    m = end[stalled] - pos[stalled]
    carried = onehot._bits_at(pool.words, pos[stalled], m)
    rows = np.empty((stalled.size, 2), dtype=np.uint64)
    rows[:, 0], rows[:, 1] = carried, pool.source.words(stalled.size)  # carried: right-aligned in its word
    first = pool.append(rows.reshape(-1)) + 2 * np.arange(stalled.size, dtype=np.int64)
    pos[stalled], end[stalled] = 64 * first + 64 - m, 64 * first + 128


def _segment_digits(q: Fraction, width: int, reports: np.ndarray) -> np.ndarray:
    """Digits of each stream's first segment: its reports' expected digits, SEGMENT_SIGMAS deviations and
    PRECISION more (public: q, the width and the counts of reports only)."""
    mean, variance = 0.0, 0.0
    for size, count in ((BLOCK, width // BLOCK), (width % BLOCK, 1)):
        if size and count:
            block_mean, block_variance = _digit_moments(q, size)
            mean, variance = mean + count * block_mean, variance + count * block_variance
    need = reports * mean + SEGMENT_SIGMAS * np.sqrt(reports * variance) + PRECISION
    return np.ceil(need).astype(np.int64)


@lru_cache(maxsize=32)
def _digit_moments(q: Fraction, size: int) -> tuple[float, float]:
    """Mean and variance of the digits a block of ``size`` q-coins reads (an open window counted as
    WINDOW + 2, as :attr:`~ldp.client.onehot.PatternTable.mean_digits` counts it)."""
    digits = (onehot.pattern_table(q, size).window >> 8).astype(np.float64)
    digits[digits == 0] = WINDOW + 2
    return float(digits.mean()), float(digits.var())


def _finish_exact(
    pool: _Words,
    tables: Any,
    lane: int,
    shape: tuple[int, int, int],
    pos: np.ndarray,
    end: np.ndarray,
    done: np.ndarray,
    out: np.ndarray,
    prefix: np.ndarray,
) -> None:
    """Settle ``lane``'s open block with the exact cuts (its first PRECISION digits are ``prefix[lane]``)."""
    lanes, steps, tail = shape
    b = int(done[lane])
    size = tail if tail and b % steps == steps - 1 else min(BLOCK, steps * BLOCK)
    table = tables.tables[size]

    def digit() -> int:
        if pos[lane] >= end[lane]:  # a fresh word (this stream's segment is read to its end)
            first = pool.append(pool.source.words(1))
            pos[lane], end[lane] = 64 * first, 64 * first + 64
        bit = (int(pool.words[pos[lane] >> 6]) >> (63 - (int(pos[lane]) & 63))) & 1
        pos[lane] += 1
        return bit

    cell = onehot._exact_cell(table.cuts, int(prefix[lane]), PRECISION, digit)
    out[lane + lanes * (b // steps), b % steps] = cell << (BLOCK - size)
    done[lane] = b + 1


def _decode_numpy(
    words: np.ndarray,
    active: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    done: np.ndarray,
    blocks: np.ndarray,
    shape: tuple[int, int, int],
    tables: Any,
    out: np.ndarray,
    status: np.ndarray,
    prefix: np.ndarray,
) -> None:
    """One pass of the NumPy backend: every stream of ``active`` advances a block a round until done, stalled
    (its next block may need digits past its segment) or exact (32 digits leave its block open)."""
    lanes, steps, tail = shape
    status[active] = _DONE
    live = active[done[active] < blocks[active]]
    p, e, b, stop = pos[live], end[live], done[live], blocks[live]
    while live.size:
        column = b % steps
        size = np.where((column == steps - 1) & (tail > 0), tail, min(BLOCK, steps * BLOCK))
        v = onehot._read(words, p, WINDOW)
        entry = tables.window[size, v].astype(np.int64)
        digits, cell = entry >> 8, entry & 0xFF
        leave = p + np.where(digits > 0, digits, PRECISION) > e  # wait for the stream's next segment
        state = np.where(leave, _STALLED, _DONE)
        go = ~leave
        p = p + np.where(go, digits, 0)
        slow = np.flatnonzero(go & (digits == 0))
        if slow.size:
            settled, p[slow] = onehot._slow_numpy(
                words, live[slow], v[slow], size[slow], p[slow], tables, prefix
            )
            cell[slow] = np.maximum(settled, 0)
            exact = slow[settled < 0]
            state[exact], leave[exact], go[exact] = _EXACT, True, False
        at = (live[go] + lanes * (b[go] // steps)) * steps + column[go]
        out[at] = (cell[go] << (BLOCK - size[go])).astype(np.uint8)
        b = b + go
        leave |= b >= stop
        if leave.any():
            gone = live[leave]
            pos[gone], done[gone], status[gone] = p[leave], b[leave], state[leave]
            keep = ~leave
            live, p, e, b, stop = (x[keep] for x in (live, p, e, b, stop))


def _decode_kernel() -> Any:
    """The compiled twin (importing it imports numba)."""
    from ldp.client.plain_streams_kernel import decode_kernel

    return decode_kernel
