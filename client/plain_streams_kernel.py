"""The compiled backend of :func:`ldp.client.plain_streams.stream_coins` (numba, ``ldp-telemetry[fast]``).

The same steps as its NumPy rounds (:func:`ldp.client.plain_streams._decode_numpy`):
it reads the same digits and returns the same coins. Four streams are
stepped in lockstep, one block of each in turn, while each has 80 digits
of its segment and four blocks left (their digit chains are independent,
so the CPU overlaps the table lookups: about 1.6 ns a block of 8, against
2.6 ns for :mod:`ldp.client.onehot_kernel`'s rows per report); a block the
lookup leaves open, or a short last block, takes a general step
(:func:`_step`: the digits after the window against the fixed-point cuts,
:func:`ldp.client.onehot_kernel._slow`) and ends the round, and a stream
near its segment's or its blocks' end finishes by general steps.
:func:`_step` is called, not inlined: inlined in the four lanes it made
every block about 1 ns slower where windows are open. Importing this
module imports numba; the kernel is compiled on its first call and cached
on disk (``cache=True``).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ldp.client.onehot import BLOCK, PRECISION, WINDOW
from ldp.client.onehot_kernel import _slow

__all__ = ["decode_kernel"]

_DONE, _STALLED, _EXACT = 0, 1, 2


@numba.njit(cache=True, nogil=True, inline="always")
def _window(words, p):  # pragma: no cover - compiled
    """The 64 digits from digit ``p`` on (``words`` holds a word past the last digit read)."""
    index = p >> 6
    offset = np.uint64(p & 63)
    return (words[index] << offset) | ((words[index + 1] >> np.uint64(1)) >> (np.uint64(63) - offset))


@numba.njit(cache=True, nogil=True, inline="always")
def _lookup(table, w, used):  # pragma: no cover - compiled
    """(digits, cell) of the block whose window starts ``used`` digits into ``w`` (digits 0: left open)."""
    entry = np.int64(table[np.int64((w << np.uint64(used)) >> np.uint64(64 - WINDOW))])
    return entry >> 8, entry & 0xFF


@numba.njit(cache=True, nogil=True, inline="always")
def _column(lane, b, lanes, steps):  # pragma: no cover - compiled
    """(column, flat index of the row) of block ``b`` of stream ``lane``: report lane + lanes · (b div steps)."""
    return b % steps, (lane + lanes * (b // steps)) * steps


@numba.njit(cache=True, nogil=True, inline="always")
def _row(lane, done, lanes, steps):  # pragma: no cover - compiled
    """Where stream ``lane``'s current report starts in the flat out (its report lane + lanes · (done div steps))."""
    return (lane + lanes * (done[lane] // steps)) * steps


@numba.njit(cache=True, nogil=True)
def _step(words, p, e, size, window, lower, upper, cells):  # pragma: no cover - compiled
    """One block of ``size`` coins from digit ``p``: (position after, packed byte or the 32-digit prefix, state)."""
    digits, cell = _lookup(window[size], _window(words, p), 0)
    if digits > 0:
        if p + digits > e:
            return p, 0, _STALLED
        return p + digits, cell << (BLOCK - size), _DONE
    if p + PRECISION > e:
        return p, 0, _STALLED
    v = np.int64(_window(words, p) >> np.uint64(64 - WINDOW))
    p, cell = _slow(words, p + WINDOW, v, cell, cells[size] - 1, lower[size], upper[size])
    if cell < 0:
        return p, -1 - cell, _EXACT
    return p, cell << (BLOCK - size), _DONE


@numba.njit(cache=True, nogil=True)
def _finish(
    words, lane, pos, end, done, blocks, shape, window, lower, upper, cells, out, status, prefix
):  # pragma: no cover - compiled
    """General steps of stream ``lane`` until its blocks are done, it stalls or a block needs the exact cuts
    (``status``)."""
    lanes, steps, tail = shape
    p, e, b, stop = pos[lane], end[lane], done[lane], blocks[lane]
    column, at = _column(lane, b, lanes, steps)
    state = _DONE
    while b < stop:
        size = tail if tail > 0 and column == steps - 1 else BLOCK
        p, byte, state = _step(words, p, e, size, window, lower, upper, cells)
        if state == _EXACT:
            prefix[lane] = byte
        if state != _DONE:
            break
        out[at + column] = byte
        b += 1
        column += 1
        if column == steps:
            column, at = 0, at + lanes * steps
    pos[lane], done[lane], status[lane] = p, b, state


@numba.njit(cache=True, nogil=True, inline="always")
def _lane_step(words, lane, p, e, d, y, c, a, rule, tables, sinks):  # pragma: no cover - compiled
    """Block ``c`` of ``lane`` in a round that stops early: its lookup (``d`` digits, cell ``y``) where that
    settled a full block, else a general step (``rule``: the short block's column and size; ``tables``: the
    window, lower, upper and cells arrays; ``sinks``: out, status and prefix). Returns (position after, 1 if
    drawn, 0 if it needs the exact cuts: ``status`` and ``prefix`` then say so)."""
    (last, tail), (window, lower, upper, cells), (out, status, prefix) = rule, tables, sinks
    if d > 0 and c != last:
        out[a + c] = y
        return p + d, 1
    p, byte, state = _step(words, p, e, tail if c == last else BLOCK, window, lower, upper, cells)
    if state != _DONE:  # (a round starts 80 digits before the segment's end: never a stall)
        status[lane], prefix[lane] = state, byte
        return p, 0
    out[a + c] = byte
    return p, 1


@numba.njit(cache=True, nogil=True)
def _lockstep(
    words, group, pos, end, done, blocks, shape, window, lower, upper, cells, out, status, prefix
):  # pragma: no cover - compiled
    """The four streams of ``group``, at the same column, a block each in turn while every one has 80 digits and
    4 blocks left.

    A round reads each stream's next 64 digits once and looks up to four
    blocks of each in them (four blocks read at most 48 digits before the
    last lookup); a block the window leaves open, or a short last block,
    takes a general step instead and ends the round. The four take the
    same steps, so they stay at one column (the streams start together).
    """
    lanes, steps, tail = shape
    last = steps - 1 if tail > 0 else -1  # the column of the short block, if any: general steps draw it
    full, stride = window[BLOCK], lanes * steps
    rule, tables, sinks = (last, tail), (window, lower, upper, cells), (out, status, prefix)
    l0, l1, l2, l3 = group[0], group[1], group[2], group[3]
    c = done[l0] % steps
    if done[l1] % steps != c or done[l2] % steps != c or done[l3] % steps != c:
        return
    a0, a1, a2, a3 = (
        _row(l0, done, lanes, steps),
        _row(l1, done, lanes, steps),
        _row(l2, done, lanes, steps),
        _row(l3, done, lanes, steps),
    )
    p0, p1, p2, p3 = pos[l0], pos[l1], pos[l2], pos[l3]
    r0, r1, r2, r3 = end[l0] - 80, end[l1] - 80, end[l2] - 80, end[l3] - 80  # the last start of a round
    left = min(blocks[l0] - done[l0], blocks[l1] - done[l1], blocks[l2] - done[l2], blocks[l3] - done[l3])
    taken, x0, x1, x2, x3 = 0, 1, 1, 1, 1  # x: 0 for a lane whose last block needs the exact cuts
    while p0 <= r0 and p1 <= r1 and p2 <= r2 and p3 <= r3 and taken + 4 <= left:
        w0, w1, w2, w3 = _window(words, p0), _window(words, p1), _window(words, p2), _window(words, p3)
        u0 = u1 = u2 = u3 = 0
        k = 0
        while k < 4:
            d0, y0 = _lookup(full, w0, u0)
            d1, y1 = _lookup(full, w1, u1)
            d2, y2 = _lookup(full, w2, u2)
            d3, y3 = _lookup(full, w3, u3)
            if (d0 == 0) | (d1 == 0) | (d2 == 0) | (d3 == 0) | (c == last):
                break  # (a branch off the lookups' chain, rarely taken: not a choice of table)
            out[a0 + c], out[a1 + c], out[a2 + c], out[a3 + c] = y0, y1, y2, y3
            u0, u1, u2, u3 = u0 + d0, u1 + d1, u2 + d2, u3 + d3
            c, k = c + 1, k + 1
            if c == steps:  # the four move on to their next reports
                c, a0, a1, a2, a3 = 0, a0 + stride, a1 + stride, a2 + stride, a3 + stride
        p0, p1, p2, p3 = p0 + u0, p1 + u1, p2 + u2, p3 + u3
        if k < 4:  # an open or a short block: this step by general steps where needed, and a new round
            p0, x0 = _lane_step(words, l0, p0, end[l0], d0, y0, c, a0, rule, tables, sinks)
            p1, x1 = _lane_step(words, l1, p1, end[l1], d1, y1, c, a1, rule, tables, sinks)
            p2, x2 = _lane_step(words, l2, p2, end[l2], d2, y2, c, a2, rule, tables, sinks)
            p3, x3 = _lane_step(words, l3, p3, end[l3], d3, y3, c, a3, rule, tables, sinks)
            c, k = c + 1, k + 1
            if c == steps:
                c, a0, a1, a2, a3 = 0, a0 + stride, a1 + stride, a2 + stride, a3 + stride
        taken += k
        if x0 + x1 + x2 + x3 < 4:  # (about 2^-24 a block)
            break
    pos[l0], pos[l1], pos[l2], pos[l3] = p0, p1, p2, p3
    done[l0], done[l1], done[l2], done[l3] = (
        done[l0] + taken - 1 + x0,
        done[l1] + taken - 1 + x1,
        done[l2] + taken - 1 + x2,
        done[l3] + taken - 1 + x3,
    )


@numba.njit(cache=True, nogil=True)
def _decode(
    words, active, pos, end, done, blocks, shape, window, lower, upper, cells, out, status, prefix
):  # pragma: no cover - compiled
    """Every stream of ``active`` advances until done, stalled or exact: four at a time in lockstep while they
    can, then each by general steps."""
    whole = active.size - active.size % 4
    for base in range(0, whole, 4):
        _lockstep(
            words,
            active[base : base + 4],
            pos,
            end,
            done,
            blocks,
            shape,
            window,
            lower,
            upper,
            cells,
            out,
            status,
            prefix,
        )
    for i in range(active.size):
        if status[active[i]] == _DONE:
            _finish(
                words,
                active[i],
                pos,
                end,
                done,
                blocks,
                shape,
                window,
                lower,
                upper,
                cells,
                out,
                status,
                prefix,
            )


def decode_kernel(
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
    """One pass of the compiled backend (the signature of :func:`ldp.client.plain_streams._decode_numpy`)."""
    status[active] = _DONE
    _decode(
        words,
        active,
        pos,
        end,
        done,
        blocks,
        shape,
        tables.window,
        tables.lower,
        tables.upper,
        tables.cells,
        out,
        status,
        prefix,
    )
