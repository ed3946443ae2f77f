"""The compiled backend of :func:`ldp.client.onehot.one_hot_coins` and :func:`~ldp.client.onehot.marked_coins`.

numba, the optional extra ``ldp-telemetry[fast]``. The same steps as the
NumPy backend (:func:`ldp.client.onehot._run_numpy`), a few reports in
turn: it reads the same digits and returns the same patterns; the marked
bits take their true coins as the NumPy code places them. Importing this
module imports numba; the kernels are compiled on their first call and
cached on disk (``cache=True``).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ldp.client.onehot import BLOCK, PRECISION, RUN_LENGTHS, SHORT_RUNS_MOST, WINDOW, run_step

__all__ = ["deposit_kernel", "join_kernel", "run_kernel"]

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


_LONGEST = np.array(RUN_LENGTHS, dtype=np.int64)
_RUN_STEP = run_step(
    np.arange(SHORT_RUNS_MOST + 1, dtype=np.int64), 1
)  # the run table of each count of remaining coins


@numba.njit(cache=True, nogil=True, inline="always")
def _table_of(s, first, m, run, count):  # pragma: no cover - compiled
    """(table, block size) of step s: a block of true coins' (BLOCK + size, size), a run's (t, t: the shortest
    of RUN_LENGTHS[1 … BLOCK] covering the remaining coins, else the longest), or a block of q-coins' (size,
    size); ``first`` steps of true coins (``m`` of them) come first."""
    if s < first:
        size = min(BLOCK, m - BLOCK * s)
        return BLOCK + size, size
    if run:
        t = BLOCK if count > SHORT_RUNS_MOST else _RUN_STEP[count - (s - first)]
        return t, t
    size = min(BLOCK, count - BLOCK * (s - first))
    return size, size


@numba.njit(cache=True, nogil=True, inline="always")
def _place(out, truebits, r, s, first, cell, size, run, count):  # pragma: no cover - compiled
    """Record step s's symbol ``cell`` of report r; the next step."""
    if s < first:
        truebits[r, s] = cell << (BLOCK - size)
        return s + 1
    if run:  # cell k < L: k zeros then a one (if within the report); L: L zeros (L = RUN_LENGTHS[size])
        longest = _LONGEST[size]
        covered = s - first + min(cell + 1, longest)
        if cell < longest and covered <= count:
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
    lower,
    upper,
    cells,
    run,
    out,
    truebits,
    status,
    prefix,
    follow,
):  # pragma: no cover - compiled
    """Every report of ``active`` advances until done, stalled or exact; _LANES reports in turn (independent chains).

    The fast rounds step every lane whose next step is a full q-block the
    window settles within its row, in turn, until none can; then each lane
    still running takes one general step (true coins, a last q-block, a run,
    an open block, or a stop at the row's end), and the fast rounds again.
    """
    lane_r = np.zeros(_LANES, dtype=np.int64)
    lane_p = np.zeros(_LANES, dtype=np.int64)
    lane_s = np.zeros(_LANES, dtype=np.int64)
    lane_stop = np.zeros(_LANES, dtype=np.int64)
    lane_e = np.zeros(_LANES, dtype=np.int64)
    lane_full = np.zeros(_LANES, dtype=np.int64)
    lane_first = np.zeros(_LANES, dtype=np.int64)
    lane_fast = np.zeros(_LANES, dtype=np.int64)
    lane_o = np.zeros(_LANES, dtype=np.int64)  # where report r's q-block s is in the flat out: lane_o + s
    full_window = window[BLOCK]
    flat = out.reshape(-1)
    columns = out.shape[1]
    for base in range(0, active.size, _LANES):
        group = min(_LANES, active.size - base)
        for g in range(group):
            r = active[base + g]
            lane_r[g], lane_p[g], lane_s[g], lane_e[g] = r, pos[r], step[r], end[r]
            first = (trues[r] + BLOCK - 1) // BLOCK
            lane_first[g] = first
            lane_o[g] = r * columns - first
            lane_stop[g] = first + (counts[r] if run else (counts[r] + BLOCK - 1) // BLOCK)
            lane_full[g] = first + (0 if run else counts[r] // BLOCK)  # steps first … full − 1: full q-blocks
            lane_fast[g] = lane_full[g] if first <= step[r] < lane_full[g] else 0
            status[r] = 0
        running = group
        while running:
            fast = group
            while fast:  # fast rounds: each lane's full q-blocks the window settles within its row
                fast = 0
                for g in range(group):
                    s = lane_s[g]
                    if s >= lane_fast[g]:
                        continue
                    p = lane_p[g]
                    index = p >> 6  # the WINDOW digits from p on
                    offset = np.uint64(p & 63)
                    word = (words[index] << offset) | (
                        (words[index + 1] >> np.uint64(1)) >> (np.uint64(63) - offset)
                    )
                    stop, e, o = lane_fast[g], lane_e[g], lane_o[g]
                    used = np.int64(0)  # digits of word read; up to four blocks from its 64 (each reads ≤ 16)
                    for _ in range(4):
                        entry = np.int64(
                            full_window[np.int64((word << np.uint64(used)) >> np.uint64(64 - WINDOW))]
                        )
                        d = entry >> 8
                        if d == 0 or p + used + d > e:
                            lane_fast[g] = 0
                            break
                        flat[o + s] = entry & 0xFF
                        used += d
                        s += 1
                        if s >= stop:
                            break
                    if used:
                        lane_p[g], lane_s[g] = p + used, s
                        fast += 1
            running = 0
            for g in range(group):  # one general step of each lane still running
                s = lane_s[g]
                if s >= lane_stop[g]:
                    r = lane_r[g]
                    if status[r] == 0 and follow[r] >= 0:  # done: the next report of the chain, from here
                        pos[r], step[r] = lane_p[g], s
                        r = follow[r]
                        lane_r[g], end[r], status[r], active[base + g] = r, lane_e[g], 0, r
                        first = (trues[r] + BLOCK - 1) // BLOCK
                        lane_s[g], lane_first[g], lane_o[g] = step[r], first, r * columns - first
                        lane_stop[g] = first + (counts[r] if run else (counts[r] + BLOCK - 1) // BLOCK)
                        lane_full[g] = first + (0 if run else counts[r] // BLOCK)
                        lane_fast[g] = lane_full[g] if first <= step[r] < lane_full[g] else 0
                        running += 1
                    continue
                r, p, e, first = lane_r[g], lane_p[g], lane_e[g], lane_first[g]
                index = p >> 6  # the WINDOW digits from p on
                offset = np.uint64(p & 63)
                word = words[index]
                if offset > 0:
                    word = (word << offset) | (words[index + 1] >> (np.uint64(64) - offset))
                v = np.int64(word >> np.uint64(64 - WINDOW))
                t, size = _table_of(s, first, trues[r], run, counts[r])
                entry = np.int64(window[t, v])
                digits, cell = entry >> 8, entry & 0xFF
                if (
                    p + (digits if digits > 0 else PRECISION) > e
                ):  # may need digits past the row: wait for more
                    status[r], lane_stop[g] = _STALLED, s
                    continue
                if digits > 0:
                    p += digits
                else:
                    p, cell = _slow(words, p + WINDOW, v, cell, cells[t] - 1, lower[t], upper[t])
                    if cell < 0:
                        prefix[r], status[r], lane_p[g], lane_stop[g] = -1 - cell, _EXACT, p, s
                        continue
                s = _place(out, truebits, r, s, first, cell, size, run, counts[r])
                lane_p[g], lane_s[g] = p, s
                if s < lane_stop[g]:
                    running += 1
                    lane_fast[g] = lane_full[g] if first <= s else 0
                elif follow[r] >= 0:  # done: the next round hands the lane to the next report of the chain
                    running += 1
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
    follow: np.ndarray,
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
        tables.lower,
        tables.upper,
        tables.cells,
        tables.run,
        out,
        truebits,
        status,
        prefix,
        follow,
    )


@numba.njit(cache=True, nogil=True)
def _join(words, starts, lengths, joined):  # pragma: no cover - compiled
    """Append the digits of each segment [starts[i], starts[i] + lengths[i]) of ``words`` to ``joined``, in order."""
    at = np.int64(0)
    for i in range(starts.size):
        p, left = starts[i], lengths[i]
        while left > 0:
            size = min(left, np.int64(32))
            index, offset = p >> 6, np.uint64(p & 63)
            word = words[index] << offset
            if offset > 0:
                word |= words[index + 1] >> (np.uint64(64) - offset)
            value = word >> np.uint64(64 - size)  # the next ``size`` digits, right-aligned
            to, bit = at >> 6, at & 63
            over = bit + size - 64
            if over <= 0:
                joined[to] |= value << np.uint64(-over)
            else:
                joined[to] |= value >> np.uint64(over)
                joined[to + 1] |= value << np.uint64(64 - over)
            p += size
            at += size
            left -= size


def join_kernel(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray, joined: np.ndarray) -> None:
    """The compiled twin of :func:`ldp.client.onehot._join_numpy`: the segments' digits into ``joined`` (zeros)."""
    _join(words, starts, lengths, joined)


#: The highest set bit of each byte (0 for 0).
_HIGH = np.array([max(0, u.bit_length() - 1) for u in range(256)], dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _deposit(out, marks, chunks, truebits, high):  # pragma: no cover - compiled
    for r in range(out.shape[0]):
        j = 0  # the report's next true coin
        for k in range(chunks.shape[1]):
            if chunks[r, k] == 0:  # eight bytes without a mark
                continue
            for c in range(8 * k, min(8 * k + 8, out.shape[1])):
                u = np.int64(marks[r, c])
                if u == 0:
                    continue
                byte = np.int64(out[r, c])
                while u:  # the marked bits from the most significant (the lowest position) on
                    lane = high[u]
                    coin = (np.int64(truebits[r, j >> 3]) >> (7 - (j & 7))) & 1
                    byte = (byte & ~(np.int64(1) << lane)) | (coin << lane)
                    u ^= np.int64(1) << lane
                    j += 1
                out[r, c] = byte


def deposit_kernel(out: np.ndarray, marks: np.ndarray, truebits: np.ndarray) -> None:
    """Write each report's true coins, in order, over its marked bits (:func:`ldp.client.onehot.marked_coins`)."""
    columns = marks.shape[1]
    padded = marks if columns % 8 == 0 else np.pad(marks, ((0, 0), (0, -columns % 8)))
    _deposit(out, marks, np.ascontiguousarray(padded).view(np.uint64), truebits, _HIGH)


@numba.njit(cache=True, nogil=True, inline="always")
def _mark(u, x, coins, j, keep_ones):  # pragma: no cover - compiled
    """The least significant marked bit of ``u`` (if any) combined with coin ``j``: (u without it, x, next j)."""
    one = np.uint64(1)
    low = u & (~u + one)
    coin = (coins[j >> 6] >> np.uint64(j & 63)) & one
    if keep_ones:  # x OR y: the coin may set the bit
        x |= low & (np.uint64(0) - coin)
    else:  # x AND y: the coin may clear it
        x &= ~(low & (coin - one))
    return u ^ low, x, j + np.int64(low != np.uint64(0))


@numba.njit(cache=True, nogil=True, inline="always")
def _combine(u, x, coins, j, keep_ones):  # pragma: no cover - compiled
    """``x`` with each marked bit of ``u``, least significant first, combined with the next coin (from ``j``).

    The first two marks without a branch (a Bloom filter's 8 bytes hold 0 to 2: a loop's exit would be
    mispredicted about once a chunk; this halves the pass, 6.1 → 3.1 ns a 128-bit report with 2 marks),
    then a loop for the rest. ``coins`` holds a word past the last coin used (the branchless steps of a
    chunk with fewer marks read it and use nothing of it)."""
    u, x, j = _mark(u, x, coins, j, keep_ones)
    u, x, j = _mark(u, x, coins, j, keep_ones)
    while u:
        u, x, j = _mark(u, x, coins, j, keep_ones)
    return x, j


@numba.njit(cache=True, nogil=True)
def _correct(chunks, marks, out_chunks, out, coins, keep_ones):  # pragma: no cover - compiled
    """The marked bits from the least significant of each little-endian 8-byte chunk (then of each last byte) on."""
    j = 0  # the next coin: bit j & 63 of coins[j >> 6]
    for k in range(chunks.size):
        out_chunks[k], j = _combine(chunks[k], out_chunks[k], coins, j, keep_ones)
    for c in range(8 * chunks.size, marks.size):  # the last bytes, fewer than eight
        x, j = _combine(np.uint64(marks[c]), np.uint64(out[c]), coins, j, keep_ones)
        out[c] = np.uint8(x)


def correct_kernel(out: np.ndarray, marks: np.ndarray, coins: np.ndarray, keep_ones: bool) -> None:
    """Combine each marked bit of ``out`` with the next coin of ``coins`` (OR when ``keep_ones``, else AND), in
    :func:`ldp.client.marked_correction.corrected_coins`'s order (``coins``: whole 8-byte words)."""
    flat, marked = out.reshape(-1), marks.reshape(-1)
    whole = marked.size - marked.size % 8
    words = coins.view("<u8")
    padded = np.zeros(words.size + 1, dtype="<u8")  # a word past the last coin (see _combine)
    padded[:-1] = words
    _correct(marked[:whole].view("<u8"), marked, flat[:whole].view("<u8"), flat, padded, keep_ones)
