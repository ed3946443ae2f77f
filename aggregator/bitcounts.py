"""Counting the ones of packed bit rows, in time linear in the bits and bounded memory.

Unary encoding (SUE, OUE) needs, for each bit position, how many reports set
it; RAPPOR needs the same per cohort. Reports arrive packed as by
:func:`numpy.packbits` (most significant bit first), n rows of ``num_bytes``
bytes.

Both kernels count *bit-sliced* (SIMD within a register): the packed bytes
are read as little-endian 64-bit words, and ``(word >> k) & 0x1111…1`` puts
bits k and k + 4 of each byte into the low bit of a 4-bit lane. Adding 15
such words cannot carry out of a lane (15 < 16), so one 64-bit addition adds
16 bits at once; four shifts (k = 0 … 3) cover all 8 bits of every byte.
The 4-bit lane sums are then split into wider lanes before they can overflow:

* :func:`column_bit_counts` (SUE, OUE) adds groups of 15 rows in 4-bit
  lanes, 17 such groups in 8-bit lanes (17·15 = 255), and those totals in
  int64. A group is every G-th row of a tile of 15·G rows, so each of these
  sums adds whole contiguous blocks, however narrow a row is. It works on tiles of at most :data:`TILE_BYTES` of packed input, so
  the cost per report-bit does not depend on d and memory stays a few tiles
  whatever n and d are.
* :func:`cohort_bit_counts` (RAPPOR) sorts each chunk of reports by cohort
  (a radix sort of small integers) and lays every cohort's reports out in
  units of 15 rows, zero-padded, slot by slot, so the sums over units are
  whole-array operations: the 15 slots are added bit by bit by a tree of
  full adders (XOR, AND, OR on whole words) into the 4-bit count of every
  bit, then turned into the 4-bit lanes above by a bit transpose (a third
  of the word operations of shifting and adding); the unit sums are spread
  into 16-bit lanes and added per cohort with :func:`numpy.add.reduceat`. A chunk holds at most
  :data:`COHORT_CHUNK` < 2¹⁶ reports, so no 16-bit lane overflows.

Small batches (the collector adds a few reports at a time) are counted by
unpacking, whose fixed cost is lower.

The results are exact integer counts, equal to
``np.unpackbits(bits, axis=1, count=num_bits).sum(axis=0)`` (per cohort for
RAPPOR).
"""

from __future__ import annotations

import functools
import threading

import numpy as np

__all__ = ["COHORT_CHUNK", "TILE_BYTES", "cohort_bit_counts", "column_bit_counts", "unpacked_bit_counts"]

#: Packed bytes of one tile of :func:`column_bit_counts` (rows × columns; kept in cache).
TILE_BYTES = 1 << 19
#: Reports per chunk of :func:`cohort_bit_counts` (a multiple of 15 below 2¹⁶).
COHORT_CHUNK = 4368 * 15
#: Largest unpacked block of :func:`unpacked_bit_counts`, in bytes.
UNPACK_BYTES = 1 << 22
#: Batches of fewer rows, or of fewer report-bits than SMALL_BITS, are counted by unpacking
#: (the bit-sliced kernel has a fixed cost of some 100 µs).
SMALL_ROWS = 32
SMALL_BITS = 1 << 18
#: Fewer RAPPOR reports than this are counted by unpacking.
SMALL_COHORT_ROWS = 1024

_WORD = np.dtype("<u8")  # the packed bytes read as little-endian words, so byte b of a word is bits 8b…8b+7
_BYTE_LOW_NIBBLES = np.uint64(0x0F0F_0F0F_0F0F_0F0F)
_SHORT_LOW_NIBBLES = np.uint64(0x000F_000F_000F_000F)
_NIBBLE_LOW_PAIRS = np.uint64(0x3333_3333_3333_3333)  # bits 0, 1 of each nibble (for the transpose)
_NIBBLE_ODD_BITS = np.uint64(0x5555_5555_5555_5555)  # bits 0, 2 of each nibble
_SHORT = np.uint64(0xFFFF)
_NIBBLE_SHIFTS = np.arange(0, 16, 4, dtype=np.uint64).reshape(4, 1, 1, 1)
_SHORT_SHIFTS = np.arange(0, 64, 16, dtype=np.uint64)


def _as_bytes(words: np.ndarray) -> np.ndarray:
    """The bytes of native uint64 ``words``, in the little-endian order the input was read in."""
    return words.astype(_WORD, copy=False).view(np.uint8)


def unpacked_bit_counts(bits: np.ndarray, num_bits: int) -> np.ndarray:
    """Ones per bit position by unpacking, in row blocks of at most :data:`UNPACK_BYTES` unpacked.

    Parameters
    ----------
    bits : ndarray of uint8, shape (n, num_bytes)
        Packed rows (numpy.packbits order).
    num_bits : int
        Bits per row (≤ 8·num_bytes).

    Returns
    -------
    ndarray of int64, shape (num_bits,)
    """
    counts = np.zeros(num_bits, dtype=np.int64)
    rows = max(1, UNPACK_BYTES // max(num_bits, 1))
    for start in range(0, bits.shape[0], rows):
        counts += np.unpackbits(bits[start : start + rows], axis=1, count=num_bits).sum(
            axis=0, dtype=np.int64
        )
    return counts


def _to_bit_order(per_byte: np.ndarray, num_bits: int) -> np.ndarray:
    """(..., num_bytes, 8) counts indexed by (byte, bit k = 2^k) → (..., num_bits) in packbits order."""
    lead = per_byte.shape[:-2]
    return per_byte[..., ::-1].reshape(*lead, -1)[..., :num_bits]


def column_bit_counts(bits: np.ndarray, num_bits: int) -> np.ndarray:
    """Ones per bit position of packed rows (SUE, OUE aggregation).

    Parameters
    ----------
    bits : ndarray of uint8, shape (n, num_bytes)
        Packed rows (numpy.packbits order); padding bits beyond ``num_bits``
        are not counted.
    num_bits : int
        Bits per row, 8·(num_bytes − 1) < num_bits ≤ 8·num_bytes.

    Returns
    -------
    ndarray of int64, shape (num_bits,)
        Equal to ``np.unpackbits(bits, axis=1, count=num_bits).sum(axis=0)``.
    """
    n, num_bytes = bits.shape
    if n < SMALL_ROWS or n * num_bits < SMALL_BITS:
        return unpacked_bit_counts(bits, num_bits)
    num_words = (num_bytes + 7) // 8
    per_byte = np.zeros((num_words * 8, 8), dtype=np.int64)  # [byte, bit k]
    tile_words = min(num_words, max(1, TILE_BYTES // (8 * 255)))
    for first_word in range(0, num_words, tile_words):
        words = min(tile_words, num_words - first_word)
        lo, hi = first_word * 8, min(num_bytes, (first_word + words) * 8)
        rows = max(255, TILE_BYTES // (8 * words) // 255 * 255)
        tile = np.zeros((_padded_rows(min(rows, n)), words * 8), dtype=np.uint8)
        scratch = np.empty((tile.shape[0], words), dtype=np.uint64)
        for start in range(0, n, rows):
            block = bits[start : start + rows, lo:hi]
            _add_tile(block, tile, scratch, per_byte[lo : lo + words * 8])
    return _to_bit_order(per_byte[:num_bytes], num_bits)


def _padded_rows(m: int) -> int:
    """Rows of a tile holding m rows: whole groups of 15, and whole 255-row units above 255."""
    return -(-m // 15) * 15 if m <= 255 else -(-m // 255) * 255  # so 8-bit lanes never overflow


def _add_tile(block: np.ndarray, tile: np.ndarray, scratch: np.ndarray, per_byte: np.ndarray) -> None:
    """Add the bit counts of ``block`` (≤ tile rows) to ``per_byte`` [byte, bit k] via the zeroed tile."""
    m, width = block.shape
    words = tile.shape[1] // 8
    rows = _padded_rows(m)
    tile[:m, :width] = block
    tile[m:rows] = 0
    x = tile[:rows].view(_WORD)  # (rows, words)
    # Any 15 rows may form a group: group g takes rows g, g + groups, g + 2·groups, … so that every
    # sum below adds whole contiguous blocks (a vectorized add whatever the width of a row).
    groups = rows // 15
    per_unit = 17 if groups % 17 == 0 else groups  # 17 groups of 15 rows: at most 255 per 8-bit lane
    counts = _slot_nibbles(
        x.reshape(15, -1), scratch[:rows].reshape(15, -1)
    )  # (4, groups · words), 4-bit lanes
    for k in range(4):
        nibbles = counts[
            k
        ]  # bits k, k + 4 of each byte, counted in its two nibbles (work space: changed below)
        low = np.bitwise_and(nibbles, _BYTE_LOW_NIBBLES).reshape(per_unit, -1).sum(axis=0, dtype=np.uint64)
        nibbles >>= np.uint64(4)
        nibbles &= _BYTE_LOW_NIBBLES
        high = nibbles.reshape(per_unit, -1).sum(
            axis=0, dtype=np.uint64
        )  # 8-bit lanes: bit k + 4 of each byte
        per_byte[:, k] += _as_bytes(low).reshape(-1, words * 8).sum(axis=0, dtype=np.int64)  # bit k
        per_byte[:, k + 4] += _as_bytes(high).reshape(-1, words * 8).sum(axis=0, dtype=np.int64)


def cohort_bit_counts(
    bits: np.ndarray,
    cohorts: np.ndarray,
    num_cohorts: int,
    num_bits: int,
    rows_out: np.ndarray | None = None,
) -> np.ndarray:
    """Ones per (cohort, bit position) of packed rows (RAPPOR aggregation).

    Parameters
    ----------
    bits : ndarray of uint8, shape (n, num_bytes)
        Packed rows (numpy.packbits order).
    cohorts : ndarray of int, shape (n,)
        Cohort of each row, in [0, num_cohorts) (checked by the caller).
    num_cohorts, num_bits : int
    rows_out : ndarray of int64, shape (num_cohorts,), optional
        If given, the rows of each cohort are added to it (the kernel counts
        them anyway: no second pass over the cohorts).

    Returns
    -------
    ndarray of int64, shape (num_cohorts, num_bits)
        Row j equals the :func:`unpacked_bit_counts` of the rows of cohort j.
    """
    n, num_bytes = bits.shape
    out = np.zeros((num_cohorts, num_bits), dtype=np.int64)
    if n < SMALL_COHORT_ROWS or num_cohorts > COHORT_CHUNK:  # (uint16 cohorts below: a radix argsort)
        _add_sorted_unpacked(out, bits, cohorts)
        if rows_out is not None:
            rows_out += np.bincount(cohorts, minlength=num_cohorts)
        return out
    num_words = (num_bytes + 7) // 8
    per_lane = np.zeros((num_cohorts, num_words * 64), dtype=np.int64)  # in the lane order of _cohort_lanes
    row = _row_item(num_words)  # a row as one item: the scatter moves whole rows
    direct = num_bytes == num_words * 8 and bits.flags.c_contiguous
    buffer = None if direct else np.zeros((min(n, COHORT_CHUNK), num_words * 8), dtype=np.uint8)
    keys = np.uint8 if num_cohorts <= 256 else np.uint16  # a radix sort of one or two passes
    most_units = -(-min(n, COHORT_CHUNK) // 15) + num_cohorts
    padded, planes = _work_space(15 * most_units * num_words, 20 * most_units * num_words)
    padded = padded[: 15 * most_units * num_words].view(row)
    planes = planes[: 20 * most_units * num_words].reshape(20, -1)
    for start in range(0, n, COHORT_CHUNK):
        block = bits[start : start + COHORT_CHUNK]
        if buffer is not None:
            buffer[: block.shape[0], :num_bytes] = block
            block = buffer[: block.shape[0]]
        rows = block.view(row).reshape(-1)
        part = cohorts[start : start + COHORT_CHUNK]
        small = part.astype(keys)
        counted = part if part.dtype == np.intp else small  # what bincount takes without a cast
        present, lanes, per_cohort = _cohort_lanes(rows, small, counted, num_cohorts, padded, planes)
        per_lane[present] += lanes.reshape(present.shape[0], -1)
        if rows_out is not None:
            rows_out += per_cohort
    per_byte = np.zeros((num_cohorts, num_words * 8, 8), dtype=np.int64)
    per_byte[:, *_lane_bits(num_words)] = per_lane
    return _to_bit_order(per_byte[:, :num_bytes], num_bits)


_WORK = threading.local()


def _work_space(slot_words: int, plane_words: int) -> tuple[np.ndarray, np.ndarray]:
    """Two uint64 arrays of at least these sizes, this thread's own, kept from call to call.

    The padded slots and the adders' planes of a chunk are blocks of a few
    hundred kB: allocated per batch, glibc serves them with fresh pages
    (mmap) that fault in anew on every batch (tens of thousands of faults on
    10 M reports). One pair per thread (readers may count in parallel).
    """
    have = getattr(_WORK, "arrays", None)
    if have is None or have[0].size < slot_words or have[1].size < plane_words:
        size = max(slot_words, have[0].size if have else 0), max(plane_words, have[1].size if have else 0)
        have = _WORK.arrays = (np.empty(size[0], dtype=np.uint64), np.empty(size[1], dtype=np.uint64))
    return have


def _row_item(num_words: int) -> np.dtype:
    """A dtype of ``num_words`` 64-bit words as one item, the fastest NumPy scatters.

    NumPy moves a void item through a generic copy per item; a 16-byte row
    as one complex128 item goes through its fixed-size copy loop, twice as
    fast. Only the bytes move (no arithmetic: every bit pattern, NaN or
    not, arrives as it was).
    """
    if num_words == 1:
        return np.dtype(np.uint64)
    if num_words == 2:
        return np.dtype(np.complex128)
    return np.dtype((np.void, num_words * 8))


@functools.lru_cache(maxsize=64)
def _lane_bits(num_words: int) -> tuple[np.ndarray, np.ndarray]:
    """(byte, bit k) counted by each lane of :func:`_cohort_lanes`, in lane order.

    Lane (word j, shift k, nibble i, 16-bit lane g) counts bit k + 4·(i % 2)
    of byte 8j + 2g + i // 2.
    """
    j, k, i, g = np.meshgrid(*[np.arange(size) for size in (num_words, 4, 4, 4)], indexing="ij")
    return (8 * j + 2 * g + i // 2).ravel(), (k + 4 * (i % 2)).ravel()


def _cohort_lanes(
    rows: np.ndarray,
    keys: np.ndarray,
    cohorts: np.ndarray,
    num_cohorts: int,
    scratch: np.ndarray,
    planes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cohorts present in the chunk, their lane counts, shape (present, words, 4, 4, 4), and rows per cohort.

    ``rows`` holds each packed row as one item of 8·words bytes (:func:`_row_item`);
    ``keys`` are the cohorts as uint8 (a one-pass radix sort) or uint16, ``cohorts``
    the same of any integer type :func:`numpy.bincount` takes. ``scratch`` (of the
    rows' dtype, at least 15 · ⌈rows/15⌉ + 15 · num_cohorts items) and ``planes``
    (uint64, (20, ≥ its words), C-contiguous) are work space.
    """
    m = rows.shape[0]
    num_words = rows.dtype.itemsize // 8
    order = np.argsort(keys, kind="stable")  # small unsigned keys: a radix sort
    per_cohort = np.bincount(cohorts, minlength=num_cohorts)  # (int64 cohorts: no cast to a new array)
    units = (per_cohort + 14) // 15
    unit_start = np.concatenate(([0], np.cumsum(units)))
    num_units = int(unit_start[-1])
    # the r-th row of cohort c (in sorted order) goes to slot r % 15 of unit unit_start[c] + r // 15;
    # slots are laid out slot-major (slot s of every unit together) so each slot is one contiguous plane.
    # (int32: 15 · num_units ≤ 15 · (m + 14 · num_cohorts) < 2³¹ for a chunk)
    rank = np.arange(m, dtype=np.int32)
    rank -= np.repeat(np.concatenate(([0], np.cumsum(per_cohort)[:-1])).astype(np.int32), per_cohort)
    unit, rank = np.divmod(rank, np.int32(15))
    rank *= np.int32(num_units)
    rank += unit
    rank += np.repeat(unit_start[:-1].astype(np.int32), per_cohort)
    slot = np.empty(m, dtype=np.int32)  # each row's slot, in the chunk's own order: one scatter of whole rows
    slot[order] = rank
    padded = scratch[: 15 * num_units]
    padded[slot] = rows
    pads = 15 * units - per_cohort  # slots no row fills, at most 14 a cohort: zeroed, not the whole space
    if pads.any():
        before = np.cumsum(pads) - pads  # the pads of the cohorts before
        pad_rank = np.arange(int(pads.sum())) + np.repeat(per_cohort - before, pads)  # count ≤ r < 15 · units
        pad_unit, pad_slot = np.divmod(pad_rank, 15)
        words = padded.view(_WORD).reshape(-1, num_words)
        words[pad_slot * num_units + pad_unit + np.repeat(unit_start[:-1], pads)] = 0
    width = num_units * num_words
    nibbles = _slot_nibbles(padded.view(_WORD).reshape(15, width), planes[:, :width])
    by_unit = nibbles.reshape(4, num_units, num_words).transpose(0, 2, 1)  # (k, word, unit)
    # (nibble i, k, word, unit): 16-bit lanes, in the work space the adders are done with
    after = planes[4:].reshape(-1)  # (rows 0-3 hold the nibbles)
    spread = after[: 16 * width].reshape(4, 4, num_words, num_units)
    np.right_shift(by_unit, _NIBBLE_SHIFTS, out=spread)
    spread &= _SHORT_LOW_NIBBLES
    present = np.flatnonzero(units)
    sums = np.add.reduceat(spread, unit_start[present], axis=-1)  # (i, k, word, present cohort)
    lanes = (sums[..., None] >> _SHORT_SHIFTS) & _SHORT  # (i, k, word, present, 16-bit lane g)
    return present, lanes.transpose(3, 2, 1, 0, 4).astype(np.int64), per_cohort


def _slot_nibbles(slots: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """Ones of 15 planes of words added per bit position: (4, words), nibble i of row k counting bit 4i + k.

    The same sums as ``((slots >> k) & 0x1111…1).sum(axis=0)`` for k = 0 … 3
    (at most 15: one 4-bit lane each), in a third of the word operations:
    a tree of 11 full adders (``a ^ b ^ c``, carry ``a & b | (a ^ b) & c``)
    adds the 15 planes bit by bit into the four bits of the count (planes of
    weight 1, 2, 4, 8), and a 4 × 4 bit transpose within every nibble turns
    "bit j of the count of bit 4i + k" into "bit j of nibble i of row k".
    ``planes`` (uint64, (≥ 11, words)) is work space; the result is its first four rows.
    """
    x = list(slots)
    out = planes[:4]  # the planes of weight 1, 2, 4, 8, then the nibble rows
    ones, twos, fours, eights = out
    c1, c2, c3, e1, e2, e3, tmp = planes[4:11]

    def add3(a: np.ndarray, b: np.ndarray, c: np.ndarray, total: np.ndarray, carry: np.ndarray) -> None:
        np.bitwise_xor(a, b, out=tmp)
        np.bitwise_and(a, b, out=carry)
        np.bitwise_xor(tmp, c, out=total)  # total may be a: a is not read after this
        np.bitwise_and(tmp, c, out=tmp)
        np.bitwise_or(carry, tmp, out=carry)

    add3(x[0], x[1], x[2], ones, c1)
    add3(ones, x[3], x[4], ones, c2)
    add3(ones, x[5], x[6], ones, c3)
    add3(c1, c2, c3, twos, e1)
    add3(ones, x[7], x[8], ones, c1)
    add3(ones, x[9], x[10], ones, c2)
    add3(twos, c1, c2, twos, e2)
    add3(ones, x[11], x[12], ones, c1)
    add3(ones, x[13], x[14], ones, c2)
    add3(twos, c1, c2, twos, e3)
    add3(e1, e2, e3, fours, eights)
    # transpose the 4 × 4 bits of every nibble across the four planes: swap 2 × 2 blocks, then bits
    for low, high, shift, mask in (
        (ones, fours, 2, _NIBBLE_LOW_PAIRS),
        (twos, eights, 2, _NIBBLE_LOW_PAIRS),
        (ones, twos, 1, _NIBBLE_ODD_BITS),
        (fours, eights, 1, _NIBBLE_ODD_BITS),
    ):
        np.right_shift(low, np.uint64(shift), out=tmp)
        np.bitwise_xor(tmp, high, out=tmp)
        np.bitwise_and(tmp, mask, out=tmp)
        np.bitwise_xor(high, tmp, out=high)
        np.left_shift(tmp, np.uint64(shift), out=tmp)
        np.bitwise_xor(low, tmp, out=low)
    return out


def _add_sorted_unpacked(out: np.ndarray, bits: np.ndarray, cohorts: np.ndarray) -> None:
    """Add per-cohort counts by sorting rows by cohort and summing unpacked runs (small or many-cohort batches)."""
    num_bits = out.shape[1]
    rows = max(1, UNPACK_BYTES // max(num_bits, 1))
    for start in range(0, cohorts.shape[0], rows):
        part = cohorts[start : start + rows]
        order = np.argsort(part, kind="stable")
        sorted_cohorts = part[order]
        unpacked = np.unpackbits(bits[start : start + rows][order], axis=1, count=num_bits)
        starts = np.flatnonzero(np.r_[True, sorted_cohorts[1:] != sorted_cohorts[:-1]])
        out[sorted_cohorts[starts]] += np.add.reduceat(unpacked, starts, axis=0, dtype=np.int64)
