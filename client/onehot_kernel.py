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

__all__ = ["run_kernel"]

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
    """Six int64 arrays of _LANES entries: each lane's report, digit position, step, stop step, row end, full blocks."""
    return (
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
def _table_of(s, run, count):  # pragma: no cover - compiled
    """(table, block size) of step s: the true coin's (0, 1), the runs' (1, 1), or a block's (size, size)."""
    if s == 0:
        return 0, 1
    if run:
        return 1, 1
    size = min(BLOCK, count - BLOCK * (s - 1))
    return size, size


@numba.njit(cache=True, nogil=True, inline="always")
def _place(out, truebit, r, s, cell, size, run, count):  # pragma: no cover - compiled
    """Record step s's symbol ``cell`` of report r; the next step."""
    if s == 0:
        truebit[r] = cell
        return 1
    if run:  # cell k < RUN: k zeros then a one (if within the report); RUN: RUN zeros
        covered = s - 1 + min(cell + 1, RUN)
        if cell < RUN and covered <= count:
            out[r, (covered - 1) >> 3] |= np.uint8(1 << (7 - ((covered - 1) & 7)))
        return 1 + covered
    out[r, s - 1] = cell << (BLOCK - size)
    return s + 1


@numba.njit(cache=True, nogil=True)
def _kernel(
    words,
    active,
    pos,
    end,
    step,
    counts,
    window,
    pairs,
    lower,
    upper,
    cells,
    run,
    out,
    truebit,
    status,
    prefix,
):  # pragma: no cover - compiled
    """Every report of ``active`` advances until done, stalled or exact; _LANES reports in turn (independent chains)."""
    lane_r, lane_p, lane_s, lane_stop, lane_e, lane_full = (
        _lane_arrays()
    )  # full: blocks 1 … full hold 8 coins
    for base in range(0, active.size, _LANES):
        group = min(_LANES, active.size - base)
        for g in range(group):
            r = active[base + g]
            lane_r[g], lane_p[g], lane_s[g], lane_e[g] = r, pos[r], step[r], end[r]
            lane_stop[g] = 1 + (counts[r] if run else (counts[r] + BLOCK - 1) // BLOCK)
            lane_full[g] = 0 if run else counts[r] // BLOCK
            status[r] = 0
        running = group
        while running:
            for g in range(group):
                s = lane_s[g]
                if s >= lane_stop[g]:
                    continue
                r, p, e, full = lane_r[g], lane_p[g], lane_e[g], lane_full[g]
                v = _window_at(words, p)
                if 0 < s <= full:  # a full block, and the next one too when the window settles it
                    entry = np.int64(pairs[v])
                    d1 = (entry >> 16) & 31
                    if d1 > 0 and p + d1 <= e:
                        d2 = entry >> 21
                        nextfull = s < full
                        two = np.int64(d2 > 0 and nextfull and p + d1 + d2 <= e)
                        out[r, s - 1] = entry & 0xFF
                        if nextfull:
                            out[r, s] = (entry >> 8) & 0xFF  # overwritten by the next step unless two
                        s += 1 + two
                        lane_p[g], lane_s[g] = p + d1 + two * d2, s
                        if s >= lane_stop[g]:
                            running -= 1
                        continue
                t, size = _table_of(s, run, counts[r])
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
                s = _place(out, truebit, r, s, cell, size, run, counts[r])
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
    tables: Any,
    out: np.ndarray,
    truebit: np.ndarray,
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
        tables.window,
        tables.pairs,
        tables.lower,
        tables.upper,
        tables.cells,
        tables.run,
        out,
        truebit,
        status,
        prefix,
    )
