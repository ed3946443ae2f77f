"""Vectorized conversions between Arrow/NumPy columns and report fields.

The column-wise building blocks the report schema's field types
(:mod:`ldp.report_schema`) use to read and write whole columns at once:
integer and text columns with their presence masks, fixed-width byte
slicing, base64 decoding and encoding with lookup tables, domain lookups,
and the cell conversions of CSV text. Each returns ``(values, ok)`` where
``ok`` marks the rows it could convert; a row it could not is re-checked one
by one by the readers (:mod:`ldp.aggregator.readers.common`), so these rules
may be sound without being complete.

Imported lazily by :mod:`ldp.report_schema` (it needs pyarrow, which the
client does not). :mod:`pyarrow.compute` (some 30 ms of start-up, most of it
writing the docstrings of its functions) is imported by the functions that
call it, on first use: a Parquet file of unary or RAPPOR reports is read
without it, and so is a text file of such reports or of a spec over a
domain (fingerprints are compared as bytes, the domain is looked up through
Arrow's function registry, :func:`index_in`).
"""

from __future__ import annotations

import binascii
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ldp.arrow_numpy import (
    array_of,
    binary_values,
    null_string,
    number_scalar,
    numeric_values,
    numeric_view,
    string_array,
    validity,
)

_simd_b64decode: Callable[..., bytes] | None
try:  # SIMD base64 (the fast extra): what it accepts, binascii's strict mode accepts too, with the same bytes
    from pybase64 import b64decode as _simd_b64decode
except ImportError:  # pragma: no cover - the fast extra is installed where the tests run
    _simd_b64decode = None


__all__ = [
    "FLOAT_TEXT",
    "INT_TEXT",
    "base64_bits_rows",
    "base64_encode_rows",
    "base64_length",
    "bits_column",
    "chunk",
    "csv_float_array",
    "csv_float_column",
    "csv_int_array",
    "csv_int_column",
    "domain_indices",
    "index_in",
    "int_column",
    "present",
    "quoted_base64_texts",
    "strict_base64",
    "string_equal",
]

#: CSV text of an integer and of a float (what the readers convert; anything else stays text).
INT_TEXT = re.compile(r"[+-]?[0-9]{1,40}")
FLOAT_TEXT = re.compile(r"[+-]?([0-9]{1,400}\.?[0-9]{0,400}|\.[0-9]{1,400})([eE][+-]?[0-9]{1,5})?")

_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_DECODE = np.full(256, 255, dtype=np.uint8)
_B64_DECODE[np.frombuffer(_B64_ALPHABET, dtype=np.uint8)] = np.arange(64, dtype=np.uint8)
_B64_ENCODE = np.frombuffer(_B64_ALPHABET, dtype=np.uint8)
_PAD = ord("=")


def chunk(column: Any) -> pa.Array | None:
    """One Arrow array of a column (chunked arrays combined); None stays None."""
    if column is None:
        return None
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column


def present(column: pa.Array | None, n: int) -> np.ndarray:
    """Which rows of a column hold a value (all False for a missing or null-typed column)."""
    if column is None:
        return np.zeros(n, dtype=bool)
    return validity(chunk(column))


def int_column(column: pa.Array | None, n: int, *, native: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, ok) for an integer column; ok is False for nulls, non-integers, ≥ 2^63.

    With ``native``, the values keep the column's own integer type (a
    version column of int8 is compared as it is, not widened to int64 first).
    """
    if column is None or not pa.types.is_integer(column.type):
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    array: pa.Array = chunk(column)
    ok = present(array, n)
    data = array.buffers()[1]
    wanted = native or pa.types.is_int64(array.type)
    if not array.null_count and wanted and data is not None and not pa.types.is_uint64(array.type):
        # the usual column: a read-only view of Arrow's buffer (no copy; nothing writes to a chunk's columns)
        return numeric_view(array)[:n], ok
    raw = numeric_values(array)  # a new array already
    if raw.dtype == np.uint64:
        ok &= raw < np.uint64(1 << 63)
    return (raw if native else raw.astype(np.int64, copy=False)), ok


def string_equal(column: pa.Array | None, text: str, n: int) -> np.ndarray:
    """Rows of a string (or dictionary of strings) column equal to ``text``."""
    if column is None:
        return np.zeros(n, dtype=bool)
    if pa.types.is_dictionary(column.type):
        if not (
            pa.types.is_string(column.type.value_type) or pa.types.is_large_string(column.type.value_type)
        ):
            return np.zeros(n, dtype=bool)
        target = text.encode("utf-8")  # each distinct fingerprint once, by its bytes (no compute function)
        hits = np.array([entry == target for entry in binary_values(column.dictionary)], dtype=bool)
        indices = column.indices
        ok = present(indices, n)
        if len(hits) and hits.all():  # the usual chunk: its one fingerprint is the spec's
            return ok
        return ok & hits[numeric_values(indices).astype(np.intp)] if len(hits) else ok & False
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return np.zeros(n, dtype=bool)
    wanted = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    width = len(wanted)
    cells, ok = _fixed_width_bytes(column, width, n)  # the bytes of the cells of the target's length
    if width and ok.any():
        # column by column (a reduction along each short row costs more than the compares): a fingerprint
        # of 16 bytes as two words
        units, expected = (
            (cells.view(np.uint64), wanted.view(np.uint64)) if width % 8 == 0 else (cells, wanted)
        )
        for j, unit in enumerate(expected.tolist()):
            ok &= units[:, j] == unit
    return ok


def _fixed_width_bytes(column: pa.Array, width: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, width) uint8 view of a string/binary column; ok where the entry has exactly ``width`` bytes."""
    column = chunk(column)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if n == 0:
        return np.zeros((0, width), dtype=np.uint8), np.zeros(0, dtype=bool)
    if pa.types.is_fixed_size_binary(column.type):
        if column.type.byte_width != width:
            return np.zeros((n, width), dtype=np.uint8), np.zeros(n, dtype=bool)
        ok = present(column, n)
        data = np.frombuffer(column.buffers()[1], dtype=np.uint8)
        start = column.offset * width
        out = data[start : start + n * width].reshape(n, width).copy()
        return out, ok
    offset_type: type[np.signedinteger[Any]]
    if pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type):
        offset_type = np.int64
    elif pa.types.is_string(column.type) or pa.types.is_binary(column.type):
        offset_type = np.int32
    else:
        return np.zeros((n, width), dtype=np.uint8), np.zeros(n, dtype=bool)
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[column.offset : column.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    one_width = np.diff(offsets) == width
    ok = one_width & present(column, n)
    if width and one_width.all():  # back to back: a read-only view of Arrow's buffer, no copy
        start = int(offsets[0])
        return data[start : start + n * width].reshape(n, width), ok
    out = np.zeros((n, width), dtype=np.uint8)
    if ok.any() and width:
        rows = np.flatnonzero(ok)
        out[rows] = data[offsets[rows].astype(np.int64)[:, None] + np.arange(width)]
    return out, ok


def _pair_table() -> np.ndarray:
    """12-bit value of every pair of base64 characters, indexed by the pair's little-endian uint16; 0xFFFF: invalid."""
    first = _B64_DECODE.astype(np.uint16)[np.arange(65536) & 255]
    second = _B64_DECODE.astype(np.uint16)[np.arange(65536) >> 8]
    table = (first << 6) | second
    table[(first == 255) | (second == 255)] = 0xFFFF
    return table


_B64_PAIRS = _pair_table()


def _decode_base64(chars: np.ndarray, num_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Decode (n, 4⌈num_bytes/3⌉) ASCII rows of padded base64; (bytes (n, num_bytes), ok).

    The groups before the padded one are decoded by :func:`strict_base64`
    (:func:`binascii.a2b_base64` in strict mode), all rows' at once: it refuses any character outside the
    alphabet (padding included), so it decodes exactly when every row's groups
    are valid (the usual chunk). Otherwise each group of 4 characters is read as
    two pairs, each looked up at once in a table of all 65,536 pairs
    (:data:`_B64_PAIRS`), so a chunk costs a few passes over its bytes and
    marks the rows that fail. ``ok`` is as in :func:`_decode_base64_rows` (the
    same rules, one character at a time): every character of the alphabet,
    padding ``=`` exactly where the length needs it.
    """
    n = chars.shape[0]
    full = num_bytes // 3
    if not n or not full:
        return _decode_base64_rows(chars, num_bytes)
    out = np.empty((n, num_bytes), dtype=np.uint8)
    head = _leading_columns(chars, 4 * full)
    try:
        decoded = strict_base64(head.data)
    except binascii.Error:  # a character outside the alphabet somewhere: find the rows
        decoded = None
    if decoded is not None and len(decoded) == n * 3 * full:
        _set_leading_columns(out, decoded, 3 * full)
        ok = np.ones(n, dtype=bool)
    else:  # or padding ending the last row's full groups (valid base64, fewer bytes): find the rows
        ok = _decode_groups(head, out, full)
    rest = num_bytes - 3 * full
    if rest:  # the padded last group: "xy==" (1 byte) or "xyz=" (2 bytes)
        tail = _last_group(chars, 4 * full)  # the 4 characters as one little-endian word: c0 c1 c2 c3
        first = _B64_PAIRS[tail & np.uint32(0xFFFF)].astype(np.uint32)
        ok &= first != 0xFFFF
        if rest == 1:
            ok &= (tail >> np.uint32(16)) == (_PAD | _PAD << 8)
            out[:, -1] = (first >> 4).astype(np.uint8)
        else:
            third = _B64_DECODE[(tail >> np.uint32(16)) & np.uint32(0xFF)]
            ok &= (third != 255) & ((tail >> np.uint32(24)) == _PAD)
            value = ((first << 6) | third) >> 2
            out[:, -2] = (value >> 8).astype(np.uint8)
            out[:, -1] = (value & 255).astype(np.uint8)
    return out, ok


def _leading_columns(chars: np.ndarray, width: int) -> np.ndarray:
    """A C-contiguous copy of ``chars[:, :width]`` (an (n, ≥ width) uint8 array), each row copied as one item.

    NumPy copies a strided 2-D block of bytes one byte at a time; a row as
    one void item of ``width`` bytes is copied whole (some 2.5× faster).
    """
    n = chars.shape[0]
    if not chars.flags.c_contiguous or not n:
        return np.ascontiguousarray(chars[:, :width])
    rows = np.ndarray((n,), dtype=np.dtype((np.void, width)), buffer=chars, strides=(chars.strides[0],))
    return rows.copy().view(np.uint8).reshape(n, width)


def _set_leading_columns(out: np.ndarray, rows: bytes, width: int) -> None:
    """Set the first ``width`` columns of ``out`` (a C-contiguous (n, ≥ width) uint8 array) to ``rows``, n rows of
    ``width`` bytes back to back.

    Each row is stored as one void item (not byte by byte, as NumPy stores
    into a strided 2-D block: some 5× slower).
    """
    n = out.shape[0]
    if len(rows) != n * width:
        raise ValueError(f"{len(rows)} bytes are not {n} rows of {width}")
    item = np.dtype((np.void, width))
    np.ndarray((n,), dtype=item, buffer=out, strides=(out.strides[0],))[...] = np.frombuffer(rows, dtype=item)


def _last_group(chars: np.ndarray, start: int) -> np.ndarray:
    """The 4 characters of each row of ``chars`` (n, start + 4) from ``start`` as one little-endian uint32.

    A strided view of the rows where they are C-contiguous (no copy: its
    items need not be aligned), else a copy.
    """
    n = chars.shape[0]
    word = np.dtype("<u4")
    if not chars.flags.c_contiguous or not n:
        return np.ascontiguousarray(chars[:, start : start + 4]).view(word)[:, 0]
    return np.ndarray((n,), dtype=word, buffer=chars, offset=start, strides=(chars.strides[0],))


def strict_base64(data: Any) -> bytes:
    """``binascii.a2b_base64(data, strict_mode=True)``, by pybase64's SIMD decoder when it is installed.

    pybase64 with ``validate=True`` refuses a little more than strict mode
    (a fifth character of padding after a whole group, ``"QUJD="``), never
    less, and decodes what it accepts to the same bytes (tests/aggregator/test_read_fast_paths.py
    compares the two on mutated texts); what it refuses, strict mode
    decides. Raises :class:`binascii.Error` as strict mode does.
    """
    if _simd_b64decode is not None:
        try:
            return _simd_b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            pass
    return binascii.a2b_base64(data, strict_mode=True)


def _decode_groups(head: np.ndarray, out: np.ndarray, full: int) -> np.ndarray:
    """Decode ``full`` unpadded groups of each row of ``head`` into ``out``'s first 3·full bytes; ok per row."""
    n, num_bytes = out.shape
    pairs = head.view(np.uint16).reshape(n, full, 2)
    high = _B64_PAIRS[pairs[:, :, 0]].astype(np.uint32)
    low = _B64_PAIRS[pairs[:, :, 1]].astype(np.uint32)
    ok = ~np.any((high | low) == 0xFFFF, axis=1)
    words = ((high << 20) | (low << 8)).astype(">u4")  # bytes b0 b1 b2 0, big-endian
    groups = np.ndarray((n, full, 3), dtype=np.uint8, buffer=out, strides=(num_bytes, 3, 1))  # a view of out
    groups[...] = words.view(np.uint8).reshape(n, full, 4)[:, :, :3]
    return ok


def _decode_base64_rows(chars: np.ndarray, num_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_decode_base64` with lookup tables, row by row in bulk: ok marks the rows that decode."""
    n, length = chars.shape
    pad = length // 4 * 3 - num_bytes
    sextets = _B64_DECODE[chars]
    body = sextets[:, : length - pad] if pad else sextets
    ok = np.all(body != 255, axis=1)
    if pad:
        ok &= np.all(chars[:, length - pad :] == _PAD, axis=1)
        sextets = sextets.copy()
        sextets[:, length - pad :] = 0
    s = sextets.reshape(n, length // 4, 4).astype(np.uint8)
    decoded = np.empty((n, length // 4, 3), dtype=np.uint8)
    decoded[..., 0] = (s[..., 0] << 2) | (s[..., 1] >> 4)
    decoded[..., 1] = ((s[..., 1] & 15) << 4) | (s[..., 2] >> 2)
    decoded[..., 2] = ((s[..., 2] & 3) << 6) | s[..., 3]
    # an explicit row width: reshape(n, -1) cannot infer it when the chunk has no rows (n == 0)
    return decoded.reshape(n, length // 4 * 3)[:, :num_bytes], ok


def bits_column(column: pa.Array | None, num_bits: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """((n, ⌈num_bits/8⌉) uint8 packed bits, ok) of a base64 text or binary column; padding bits must be 0."""
    num_bytes = (num_bits + 7) // 8
    if column is None:
        return np.zeros((n, num_bytes), dtype=np.uint8), np.zeros(n, dtype=bool)
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        chars, ok = _fixed_width_bytes(column, base64_length(num_bytes), n)
        bits, decoded_ok = base64_bits_rows(chars, num_bits)
        return bits, ok & decoded_ok
    bits, ok = _fixed_width_bytes(column, num_bytes, n)
    ok &= _padding_clear(bits, num_bits)
    return np.ascontiguousarray(bits), ok


def base64_length(num_bytes: int) -> int:
    """Characters of the padded base64 text of ``num_bytes`` bytes."""
    return 4 * -(-num_bytes // 3)


def base64_bits_rows(chars: np.ndarray, num_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """((n, ⌈num_bits/8⌉) uint8 packed bits, ok) of (n, :func:`base64_length`) ASCII rows of padded base64.

    ``ok`` as in :func:`bits_column`: the text is what ``base64.b64decode(..., validate=True)``
    accepts for that many bytes, and the padding bits are 0.
    """
    bits, ok = _decode_base64(chars, (num_bits + 7) // 8)
    ok &= _padding_clear(bits, num_bits)
    return np.ascontiguousarray(bits), ok


def _padding_clear(bits: np.ndarray, num_bits: int) -> np.ndarray | bool:
    """Rows of a (n, ⌈num_bits/8⌉) packed column whose bits past ``num_bits`` are 0."""
    spare = bits.shape[1] * 8 - num_bits
    if spare and len(bits):
        return (bits[:, -1] & ((1 << spare) - 1)) == 0
    return True


def base64_encode_rows(bits: np.ndarray) -> np.ndarray:
    """Standard padded base64 of each row of a (n, w) uint8 array, as (n, 4⌈w/3⌉) ASCII bytes."""
    n, width = bits.shape
    groups = -(-width // 3)
    padded = np.zeros((n, groups * 3), dtype=np.uint8)
    padded[:, :width] = bits
    b = padded.reshape(n, groups, 3).astype(np.uint32)
    word = (b[..., 0] << 16) | (b[..., 1] << 8) | b[..., 2]
    sextets = np.stack([(word >> 18) & 63, (word >> 12) & 63, (word >> 6) & 63, word & 63], axis=-1)
    out = _B64_ENCODE[sextets].reshape(n, groups * 4)
    pad = groups * 3 - width
    if pad:
        out[:, -pad:] = _PAD
    return out


def base64_texts(bits: np.ndarray, num_bytes: int) -> np.ndarray:
    """(n, 4⌈num_bytes/3⌉) ASCII base64 of each row (also for zero rows)."""
    width = 4 * -(-num_bytes // 3)
    if not len(bits):
        return np.zeros((0, width), np.uint8)
    return base64_encode_rows(np.ascontiguousarray(bits, dtype=np.uint8))


def quoted_base64_texts(bits: np.ndarray, num_bytes: int) -> pa.Array:
    """Arrow string array of each row's base64 in double quotes (its JSON text)."""
    n = len(bits)
    encoded = base64_texts(bits, num_bytes)
    width = encoded.shape[1]
    quoted = np.empty((n, width + 2), dtype=np.uint8)
    quoted[:, 0] = quoted[:, -1] = ord('"')
    quoted[:, 1:-1] = encoded
    offsets = np.arange(0, (n + 1) * (width + 2), width + 2, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(quoted)])


@functools.lru_cache(maxsize=16)
def _string_keys(domain: tuple[Any, ...]) -> pa.Array:
    """The domain's values as text, an Arrow array built once per domain (not once per chunk)."""
    return string_array([str(v) for v in domain])


def domain_indices(domain: Sequence[Any], column: pa.Array | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Domain index of each entry of a string or integer value column (same rules as DomainIndex)."""
    if column is None:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        keys = _string_keys(tuple(domain))
        positions = np.arange(len(domain), dtype=np.int64)
        if pa.types.is_dictionary(column.type):  # look up each distinct value once
            entries, entry_ok = domain_indices(domain, column.dictionary, len(column.dictionary))
            indices = column.indices
            index = numeric_values(chunk(indices)).astype(np.intp)
            if not len(entries):
                return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
            index = np.where(present(indices, n), index, 0)
            return entries[index], entry_ok[index] & present(indices, n)
        column = column.cast(pa.string()) if pa.types.is_large_string(value_type) else column
    elif pa.types.is_integer(value_type):
        pairs = [(v, i) for i, v in enumerate(domain) if isinstance(v, int)]
        if not pairs:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        keys = array_of(np.array([v for v, _ in pairs], dtype=np.int64))
        positions = np.array([i for _, i in pairs], dtype=np.int64)
        column = (
            column.cast(pa.int64(), safe=False) if not pa.types.is_unsigned_integer(value_type) else column
        )
        if pa.types.is_unsigned_integer(value_type):
            raw = numeric_values(chunk(column))
            big = raw >= np.uint64(1 << 63)
            column = array_of(np.where(big, 0, raw).astype(np.int64), valid=present(column, n) & ~big)
    else:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    found = index_in(column, keys)
    ok = present(found, n)
    index = numeric_values(chunk(found)).astype(np.int64)
    return positions[index] if len(positions) else index, ok


def index_in(column: pa.Array, keys: pa.Array) -> pa.Array:
    """Arrow's ``index_in`` of ``column`` in ``keys`` (null: not there), called through its C++ registry.

    ``pyarrow.compute.index_in`` is the same kernel; importing
    :mod:`pyarrow.compute` costs some 0.02 s of CPU more than its registry
    ``pyarrow._compute`` (it writes the docstrings of some 300 wrappers),
    a tenth of reading a CSV file of 3 M reports. The registry's module is
    private: where it is missing, :mod:`pyarrow.compute` serves.
    """
    try:
        from pyarrow._compute import SetLookupOptions, call_function
    except ImportError:  # pragma: no cover - pyarrow's layout since 1.0
        from pyarrow.compute import SetLookupOptions, call_function
    return call_function("index_in", [column], SetLookupOptions(value_set=keys))


def csv_int_column(cells: list[str | None]) -> pa.Array:
    """An int64 column of CSV cells (None: empty); null where a cell is not converted (see :func:`csv_int_array`)."""
    return csv_int_array(string_array(cells))


def csv_int_array(strings: pa.Array) -> pa.Array:
    """An int64 column of CSV cells as an Arrow string array (null: empty); cells not 64-bit integers are null.

    A cell is an integer when it is :data:`INT_TEXT` in the int64 range, as
    :meth:`ldp.report_schema.BoundedInt.csv_cell` reads one cell. Cells of
    digits only (at most 40) are cast by Arrow at once, the others are null,
    so their rows are re-checked one by one (a signed cell, say; Arrow's cast
    alone would also read ``0x5`` as 5). When Arrow cannot cast the digits
    (beyond int64, digits outside ASCII), every cell is converted one by one.
    """
    digits = _single_digits(strings)
    if digits is not None:
        return digits
    cells = _ascii_digit_cells(strings, 40)  # what the filter below would keep of every set cell
    if cells is not None:
        short = _short_decimals(strings, cells)
        if short is not None:
            return short
        try:  # cast at once, without the filter's four compute kernels
            return strings.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # beyond int64: the filter's cast fails too, every cell goes one by one
    import pyarrow.compute as pc

    plain = pc.and_(pc.utf8_is_digit(strings), pc.less_equal(pc.binary_length(strings), number_scalar(40)))
    kept = pc.if_else(plain, strings, null_string())
    try:
        return kept.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    out = []
    for text in strings.to_pylist():
        value = None
        if text is not None and INT_TEXT.fullmatch(text):
            value = int(text)
            if not -(1 << 63) <= value < (1 << 63):
                value = None
        out.append(value)
    # unconvertible cells are null: re-checked row by row
    valid = np.array([value is not None for value in out], dtype=bool)
    return array_of(np.array([value or 0 for value in out], dtype=np.int64), valid)


#: Cells of at most this many digits are read by :func:`_short_decimals` (one pass per digit).
_SHORT_DECIMAL_DIGITS = 8


def _short_decimals(
    strings: pa.Array, cells: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
) -> pa.Array | None:
    """:func:`csv_int_array` of a string column whose set cells are 1 to 8 ASCII digits (cohorts), or None.

    ``cells``: the column's :func:`_ascii_digit_cells`, when the caller has
    them (for any bound on the set cells' length). Read by NumPy from the
    column's buffers, without Arrow's compute functions: ``Array.cast``
    imports :mod:`pyarrow.compute` and sets up its kernels in a process that
    has not (``ldp aggregate`` of RAPPOR CSV files, the cast against this in
    alternating runs, medians of CPU: 1 M reports 0.50 → 0.41 s, 10 M 2.08
    → 1.92 s). The k-th digit from the end of every cell is read at once,
    for k below the longest cell's length (digits before a cell's start
    count as 0): cells INT_TEXT reads as that same integer.
    """
    if cells is None:
        cells = _ascii_digit_cells(strings, _SHORT_DECIMAL_DIGITS)
        if cells is None:
            return None
    offsets, widths, digits = cells
    longest = int(widths.max())
    if longest > _SHORT_DECIMAL_DIGITS:
        return None  # a longer cell (or a null cell holding more digits than a set one may)
    last = (offsets[1:] - (offsets[0] + 1)).astype(np.intp)  # each cell's last byte (a null cell: any)
    values = np.take(digits, last, mode="clip").astype(np.int32)  # (mode: an empty null cell at the start)
    for k in range(1, longest):
        more = widths > k
        if more.any():
            values += np.take(digits, last - k, mode="clip") * more * np.int32(10**k)
    return array_of(values.astype(np.int64), validity(strings) if strings.null_count else None)


def _ascii_digit_cells(strings: pa.Array, longest: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The offsets, widths and digit values (bytes − ``"0"``) of a string column's cells, or None.

    None unless the column is non-empty, every byte of its cells (null
    cells' too, if they hold any) is ``0``-``9`` and every set cell is 1 to
    ``longest`` bytes long (no sign, space or ``0x``: one byte scan). With
    ``longest`` = 40 that is every cell :func:`csv_int_array`'s filter
    (Unicode digits, at most 40 bytes) keeps, so Arrow's cast of the column
    itself gives what the cast of the filtered column would (null cells'
    bytes do no harm: the cast leaves them null).
    """
    n = len(strings)
    buffers = strings.buffers()
    if n == 0 or not pa.types.is_string(strings.type) or buffers[2] is None:
        return None
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[strings.offset : strings.offset + n + 1]
    widths = np.diff(offsets)
    set_widths = widths[validity(strings)] if strings.null_count else widths
    if not set_widths.size or int(set_widths.min()) < 1 or int(set_widths.max()) > longest:
        return None
    body = np.frombuffer(buffers[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    digits = body - np.uint8(ord("0"))  # wraps around below "0": not a digit either
    if not bool(np.all(digits < 10)):
        return None
    return offsets, widths, digits


def _single_digits(strings: pa.Array) -> pa.Array | None:
    """:func:`csv_int_array` of a column whose every set cell is one byte (a version column), or None.

    A one-byte cell is an integer exactly when it is an ASCII digit (what
    :data:`INT_TEXT` accepts of one character); any other is null, re-checked
    row by row as in :func:`csv_int_array`.
    """
    n = len(strings)
    if n == 0 or not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        return None
    cells, one_byte = _fixed_width_bytes(strings, 1, n)
    if not np.array_equal(one_byte, present(strings, n)):
        return None
    values = cells[:, 0] - np.uint8(ord("0"))  # wraps around below "0": not a digit either
    return array_of(values.astype(np.int64), one_byte & (values < 10))


def csv_float_column(cells: list[str | None]) -> pa.Array:
    """A float64 column of CSV cells; cells that are not numbers are null."""
    out = [float(t) if t is not None and FLOAT_TEXT.fullmatch(t) else None for t in cells]
    valid = np.array([value is not None for value in out], dtype=bool)
    return array_of(np.array([0.0 if value is None else value for value in out], dtype=np.float64), valid)


#: :data:`FLOAT_TEXT` as a whole-cell RE2 pattern for Arrow (``[0-9]`` is ASCII in both).
_FLOAT_CELL = f"^(?:{FLOAT_TEXT.pattern})$"


def csv_float_array(strings: pa.Array) -> pa.Array:
    """:func:`csv_float_column` of CSV cells as an Arrow string array (null: empty), in bulk.

    Cells matching :data:`FLOAT_TEXT` are cast by Arrow at once (correctly
    rounded, as :class:`float` reads them; beyond the float range: ±inf, as
    :class:`float` gives too), the others are null. When Arrow cannot cast a
    matching cell, every cell is converted one by one.
    """
    import pyarrow.compute as pc

    number = pc.match_substring_regex(strings, _FLOAT_CELL)
    kept = pc.if_else(number, strings, null_string())
    try:
        return kept.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return csv_float_column(strings.to_pylist())
