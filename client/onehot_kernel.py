"""The compiled backend of :func:`ldp.client.onehot.one_hot_coins` (numba; the optional extra ``ldp-telemetry[fast]``).

The same steps as the NumPy backend (:func:`ldp.client.onehot._run_numpy`),
one report at a time: it reads the same digits and returns the same
patterns. Importing this module imports numba; the kernel is compiled on its
first call and cached on disk (``cache=True``).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ldp.client.onehot import BLOCK, PRECISION, RUN, WINDOW

__all__ = ["deposit_kernel", "run_kernel"]

_STALLED, _EXACT = 1, 2
_LANES = 4  # reports stepped in turn: their digit chains are independent, so the CPU overlaps them


@numba.njit(cache=True, nogil=True)
def _slow(words, p, v, k, last, lower, upper):  # pragma: no cover - compiled
    """A block the window left open, from digit ``p`` (after the window): (p, cell) or (p, −1 − low) if still open."""
    low = v << (PRECISION - WINDOW)
    for shift in range(PRECISION - WINDOW - 1, -1, -1):
        w = np.int64(1) << shift
        bit = np.int64((words[p >> 6] >> np.uint64(63 - (p & 63))) & np.uint64(1))
        p += 1
        low += bit * w
        while k < last and upper[k + 1] <= low:
            k += 1
        if low + w <= lower[k + 1]:
            return p, k
    return p, -1 - low


@numba.njit(cache=True, nogil=True)
def _lane_arrays():  # pragma: no cover - compiled
    """Seven int64 arrays of _LANES entries: each lane's report, digit position, step, stop step, row end, full
    blocks, and its true coins' steps."""
    return (
        np.zeros(_LANES, dtype=np.int64),
        np.zeros(_LANES, dtype=np.int64),
        np.zeros(_LANES, dtype=np.int64),
        np.zeros(_LANES, dtype=np.int64),
        np.zeros(_LANES, dtype=np.int64),
        np.zeros(_LANES, dtype=np.int64),
        np.zeros(_LANES, dtype=np.int64),
    )


@numba.njit(cache=True, nogil=True, inline="always")
def _window_at(words, p):  # pragma: no cover - compiled
    """The WINDOW digits from digit p on, as an int64."""
    index = p >> 6
    offset = np.uint64(p & 63)
    word = words[index]
    if offset > 0:
        word = (word << offset) | (words[index + 1] >> (np.uint64(64) - offset))
    return np.int64(word >> np.uint64(64 - WINDOW))


@numba.njit(cache=True, nogil=True, inline="always")
def _table_of(s, first, m, run, count):  # pragma: no cover - compiled
    """(table, block size) of step s: a block of true coins' (BLOCK + size, size), the runs' (1, 1), or a
    block of q-coins' (size, size); ``first`` steps of true coins (``m`` of them) come first."""
    if s < first:
        size = min(BLOCK, m - BLOCK * s)
        return BLOCK + size, size
    if run:
        return 1, 1
    size = min(BLOCK, count - BLOCK * (s - first))
    return size, size


@numba.njit(cache=True, nogil=True, inline="always")
def _place(out, truebits, r, s, first, cell, size, run, count):  # pragma: no cover - compiled
    """Record step s's symbol ``cell`` of report r; the next step."""
    if s < first:
        truebits[r, s] = cell << (BLOCK - size)
        return s + 1
    if run:  # cell k < RUN: k zeros then a one (if within the report); RUN: RUN zeros
        covered = s - first + min(cell + 1, RUN)
        if cell < RUN and covered <= count:
            out[r, (covered - 1) >> 3] |= np.uint8(1 << (7 - ((covered - 1) & 7)))
        return first + covered
    out[r, s - first] = cell << (BLOCK - size)
    return s + 1


@numba.njit(cache=True, nogil=True)
def _kernel(
    words,
    active,
    pos,
    end,
    step,
    counts,
    trues,
    window,
    pairs,
    lower,
    upper,
    cells,
    run,
    out,
    truebits,
    status,
    prefix,
):  # pragma: no cover - compiled
    """Every report of ``active`` advances until done, stalled or exact; _LANES reports in turn (independent chains)."""
    lane_r, lane_p, lane_s, lane_stop, lane_e, lane_full, lane_first = (
        _lane_arrays()
    )  # full: q-blocks 0 … full − 1 hold 8 coins; first: the true coins' steps
    for base in range(0, active.size, _LANES):
        group = min(_LANES, active.size - base)
        for g in range(group):
            r = active[base + g]
            lane_r[g], lane_p[g], lane_s[g], lane_e[g] = r, pos[r], step[r], end[r]
            first = (trues[r] + BLOCK - 1) // BLOCK
            lane_first[g] = first
            lane_stop[g] = first + (counts[r] if run else (counts[r] + BLOCK - 1) // BLOCK)
            lane_full[g] = 0 if run else counts[r] // BLOCK
            status[r] = 0
        running = group
        while running:
            for g in range(group):
                s = lane_s[g]
                if s >= lane_stop[g]:
                    continue
                r, p, e, full, first = lane_r[g], lane_p[g], lane_e[g], lane_full[g], lane_first[g]
                v = _window_at(words, p)
                b = s - first  # the q-block
                if 0 <= b < full:  # a full q-block, and the next one too when the window settles it
                    entry = np.int64(pairs[v])
                    d1 = (entry >> 16) & 31
                    if d1 > 0 and p + d1 <= e:
                        d2 = entry >> 21
                        nextfull = b + 1 < full
                        two = np.int64(d2 > 0 and nextfull and p + d1 + d2 <= e)
                        out[r, b] = entry & 0xFF
                        if nextfull:
                            out[r, b + 1] = (entry >> 8) & 0xFF  # overwritten by the next step unless two
                        s += 1 + two
                        lane_p[g], lane_s[g] = p + d1 + two * d2, s
                        if s >= lane_stop[g]:
                            running -= 1
                        continue
                t, size = _table_of(s, first, trues[r], run, counts[r])
                entry = np.int64(window[t, v])
                digits, cell = entry >> 8, entry & 0xFF
                if (
                    p + (digits if digits > 0 else PRECISION) > e
                ):  # may need digits past the row: wait for more
                    status[r], lane_stop[g] = _STALLED, s
                    running -= 1
                    continue
                if digits > 0:
                    p += digits
                else:
                    p, cell = _slow(words, p + WINDOW, v, cell, cells[t] - 1, lower[t], upper[t])
                    if cell < 0:
                        prefix[r], status[r], lane_p[g], lane_stop[g] = -1 - cell, _EXACT, p, s
                        running -= 1
                        continue
                s = _place(out, truebits, r, s, first, cell, size, run, counts[r])
                lane_p[g], lane_s[g] = p, s
                if s >= lane_stop[g]:
                    running -= 1
        for g in range(group):
            pos[lane_r[g]], step[lane_r[g]] = lane_p[g], lane_s[g]


def run_kernel(
    words: np.ndarray,
    active: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    step: np.ndarray,
    counts: np.ndarray,
    trues: np.ndarray,
    tables: Any,
    out: np.ndarray,
    truebits: np.ndarray,
    status: np.ndarray,
    prefix: np.ndarray,
) -> None:
    """One pass of the compiled backend (the signature of :func:`ldp.client.onehot._run_numpy`)."""
    _kernel(
        words,
        active,
        pos,
        end,
        step,
        counts,
        trues,
        tables.window,
        tables.pairs,
        tables.lower,
        tables.upper,
        tables.cells,
        tables.run,
        out,
        truebits,
        status,
        prefix,
    )


@numba.njit(cache=True, nogil=True)
def _deposit(out, marks, truebits):  # pragma: no cover - compiled
    for r in range(out.shape[0]):
        j = 0  # the report's next true coin
        for c in range(out.shape[1]):
            u = np.int64(marks[r, c])
            if u == 0:
                continue
            byte = np.int64(out[r, c])
            for lane in range(7, -1, -1):
                if (u >> lane) & 1:
                    coin = (np.int64(truebits[r, j >> 3]) >> (7 - (j & 7))) & 1
                    byte = (byte & ~(np.int64(1) << lane)) | (coin << lane)
                    j += 1
            out[r, c] = byte


def deposit_kernel(out: np.ndarray, marks: np.ndarray, truebits: np.ndarray) -> None:
    """Write each report's true coins, in order, over its marked bits (:func:`ldp.client.onehot.marked_coins`)."""
    _deposit(out, marks, truebits)
