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
    lane_r = np.zeros(_LANES, dtype=np.int64)
    lane_p = np.zeros(_LANES, dtype=np.int64)
    lane_s = np.zeros(_LANES, dtype=np.int64)
    lane_stop = np.zeros(_LANES, dtype=np.int64)
    lane_e = np.zeros(_LANES, dtype=np.int64)
    lane_full = np.zeros(_LANES, dtype=np.int64)  # blocks 1 … lane_full hold 8 coins (0 by runs)
    shift = np.uint64(64 - WINDOW)
    for base in range(0, active.size, _LANES):
        group = min(_LANES, active.size - base)
        for g in range(group):
            r = active[base + g]
            lane_r[g], lane_p[g], lane_s[g] = r, pos[r], step[r]
            lane_stop[g] = 1 + (counts[r] if run else (counts[r] + BLOCK - 1) // BLOCK)
            lane_e[g] = end[r]
            lane_full[g] = 0 if run else counts[r] // BLOCK
            status[r] = 0
        running = group
        while running:
            for g in range(group):
                s = lane_s[g]
                if s >= lane_stop[g]:
                    continue
                r = lane_r[g]
                p = lane_p[g]
                e = lane_e[g]
                full = lane_full[g]
                index = p >> 6
                offset = np.uint64(p & 63)
                word = words[index]
                if offset > 0:
                    word = (word << offset) | (words[index + 1] >> (np.uint64(64) - offset))
                v = np.int64(word >> shift)
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
                        lane_p[g] = p + d1 + two * d2
                        s += 1 + two
                        lane_s[g] = s
                        if s >= lane_stop[g]:
                            running -= 1
                        continue
                size = 1
                t = 0
                if s > 0:
                    if run:
                        t = 1
                    else:
                        size = min(BLOCK, counts[r] - BLOCK * (s - 1))
                        t = size
                entry = np.int64(window[t, v])
                digits = entry >> 8
                cell = entry & 0xFF
                if (
                    p + (digits if digits > 0 else PRECISION) > e
                ):  # may need digits past the row: wait for more
                    status[r] = _STALLED
                    lane_stop[g] = s
                    running -= 1
                    continue
                if digits > 0:
                    p += digits
                else:
                    p, cell = _slow(words, p + WINDOW, v, cell, cells[t] - 1, lower[t], upper[t])
                    if cell < 0:
                        prefix[r] = -1 - cell
                        status[r] = _EXACT
                        lane_p[g] = p
                        lane_stop[g] = s
                        running -= 1
                        continue
                if s == 0:
                    truebit[r] = cell
                    s = 1
                elif run:  # cell k < RUN: k zeros then a one (if within the report); RUN: RUN zeros
                    covered = s - 1 + min(cell + 1, RUN)
                    if cell < RUN and covered <= counts[r]:
                        out[r, (covered - 1) >> 3] |= np.uint8(1 << (7 - ((covered - 1) & 7)))
                    s = 1 + covered
                else:
                    out[r, s - 1] = cell << (BLOCK - size)
                    s += 1
                lane_p[g] = p
                lane_s[g] = s
                if s >= lane_stop[g]:
                    running -= 1
        for g in range(group):
            r = lane_r[g]
            pos[r], step[r] = lane_p[g], lane_s[g]


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
