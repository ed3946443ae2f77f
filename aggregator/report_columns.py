"""Vectorized validation of report columns into a :class:`~ldp.batch.ReportBatch`.

Readers parse a chunk of reports into Arrow columns named as in the report
JSON form (``v``, ``spec``, ``value``, ``seed``, ``bits``, ``cohort``,
``client``, ``group``, plus whatever unknown columns the file had).
:func:`validate_columns` applies the rules of
:func:`ldp.report_check.check_report` column-wise and returns which rows are
certainly valid, and their content as a batch. The vectorized rules are
*sound* but deliberately not complete: a row they do not accept (a wrong
fingerprint, but also an upper-case fingerprint, or a bucket written as a
string) is handed back to the reader, which re-checks it alone with
:func:`~ldp.report_check.check_report`, so the exact per-report rules decide
and give the reason. Nothing valid is lost and nothing invalid is counted.

``bits`` arrive as base64 text (JSON Lines, CSV), decoded here with a lookup
table over the whole chunk, or as binary (Parquet), sliced straight out of
the Arrow buffer.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ldp.batch import ReportBatch
from ldp.errors import ReportError
from ldp.hashing import LH_SEED_SPACE
from ldp.report import GROUP_REPORT_VERSION, REPORT_VERSION, check_group
from ldp.report_check import CheckedReport, required_fields

__all__ = [
    "KNOWN_FIELDS",
    "base64_encode_rows",
    "batch_from_checked",
    "concat_batches",
    "empty_batch",
    "num_report_bits",
    "validate_columns",
]

#: Columns a report file may have (``client`` is carried and ignored; ``group`` is optional).
KNOWN_FIELDS = ("v", "spec", "value", "seed", "bits", "cohort", "client", "group")
_PAYLOAD = ("value", "seed", "bits", "cohort")

_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_DECODE = np.full(256, 255, dtype=np.uint8)
_B64_DECODE[np.frombuffer(_B64_ALPHABET, dtype=np.uint8)] = np.arange(64, dtype=np.uint8)
_B64_ENCODE = np.frombuffer(_B64_ALPHABET, dtype=np.uint8)
_PAD = ord("=")


def num_report_bits(spec) -> int | None:
    """Length in bits of a spec's ``bits`` field (None when it has none)."""
    kind = spec.report_kind
    if kind == "bits":
        return spec.domain_size
    if kind == "rappor":
        return spec.num_bits
    return None


def empty_batch(spec) -> ReportBatch:
    """A batch of zero reports with the spec's columns."""
    return batch_from_checked(spec, [])


def batch_from_checked(spec, checked: Sequence[CheckedReport]) -> ReportBatch:
    """Columns of reports already checked one by one with ``check_report``."""
    kind = spec.report_kind
    n = len(checked)
    values = seeds = bits = cohorts = None
    if kind in ("value", "hashed"):
        values = np.fromiter((c.value for c in checked), dtype=np.int64, count=n)
    if kind == "numeric":
        values = np.fromiter((c.value for c in checked), dtype=np.float64, count=n)
    if kind == "hashed":
        seeds = np.fromiter((c.seed for c in checked), dtype=np.uint64, count=n)
    if kind in ("bits", "rappor"):
        width = (num_report_bits(spec) + 7) // 8
        raw = b"".join(c.bits for c in checked)
        bits = np.frombuffer(raw, dtype=np.uint8).reshape(n, width).copy()
    if kind == "rappor":
        cohorts = np.fromiter((c.cohort for c in checked), dtype=np.int64, count=n)
    groups = None
    if any(c.group is not None for c in checked):
        groups = np.empty(n, dtype=object)
        groups[:] = [c.group for c in checked]
    return ReportBatch(
        spec=spec.fingerprint, values=values, seeds=seeds, bits=bits, cohorts=cohorts, groups=groups
    )


def _groups_or_none(batch: ReportBatch) -> np.ndarray:
    """The batch's group keys, with None for every row when it has no group column."""
    if batch.groups is not None:
        return batch.groups
    return np.full(len(batch), None, dtype=object)


def concat_batches(spec, batches: Sequence[ReportBatch]) -> ReportBatch:
    """One batch holding the reports of ``batches`` (same spec)."""
    batches = [b for b in batches if len(b)]
    if not batches:
        return empty_batch(spec)
    if len(batches) == 1:
        return batches[0]

    def cat(name):
        columns = [getattr(b, name) for b in batches]
        return None if columns[0] is None else np.concatenate(columns)

    groups = None
    if any(b.groups is not None for b in batches):
        groups = np.concatenate([_groups_or_none(b) for b in batches])
    return ReportBatch(
        spec=spec.fingerprint,
        values=cat("values"),
        seeds=cat("seeds"),
        bits=cat("bits"),
        cohorts=cat("cohorts"),
        groups=groups,
    )


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


# -- column helpers -------------------------------------------------------


def _chunk(column) -> pa.Array | None:
    if column is None:
        return None
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column


def _present(column: pa.Array | None, n: int) -> np.ndarray:
    if column is None:
        return np.zeros(n, dtype=bool)
    if pa.types.is_null(column.type):
        return np.zeros(n, dtype=bool)
    return np.asarray(column.is_valid(), dtype=bool)


def _bool(array) -> np.ndarray:
    return np.asarray(pc.fill_null(array, False), dtype=bool)


def _int_column(column: pa.Array, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, ok) for an integer column; ok is False for nulls, non-integers, ≥ 2^63."""
    if column is None or not pa.types.is_integer(column.type):
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    ok = _present(column, n)
    raw = np.asarray(column.fill_null(0))
    if raw.dtype == np.uint64:
        ok &= raw < np.uint64(1 << 63)
    return raw.astype(np.int64), ok


def _string_equal(column: pa.Array, text: str, n: int) -> np.ndarray:
    if column is None:
        return np.zeros(n, dtype=bool)
    if pa.types.is_dictionary(column.type):
        if not (
            pa.types.is_string(column.type.value_type) or pa.types.is_large_string(column.type.value_type)
        ):
            return np.zeros(n, dtype=bool)
        hits = _bool(pc.equal(column.dictionary, text))
        indices = column.indices
        ok = _present(indices, n)
        return ok & hits[np.asarray(indices.fill_null(0)).astype(np.intp)] if len(hits) else ok & False
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return np.zeros(n, dtype=bool)
    return _bool(pc.equal(column, text))


def _group_column(column: pa.Array | None, n: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """(group keys or None, present, ok) of a ``group`` column.

    ``ok`` holds for rows without a group and for keys that
    :func:`ldp.report.check_group` accepts, applied once to each distinct
    key of the column (the same rule as one report's); other rows are
    re-checked one by one. The column's bytes are never trusted to be UTF-8
    (Arrow's JSON reader and Parquet files do not guarantee it): a key that
    does not decode is not accepted.
    """
    present = _present(column, n)
    if column is None or not present.any():
        return None, present, np.ones(n, dtype=bool)
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        return None, present, ~present
    encoded = column if pa.types.is_dictionary(column.type) else column.dictionary_encode()
    keys, key_ok = _checked_group_keys(encoded.dictionary)
    index = np.asarray(encoded.indices.fill_null(0)).astype(np.intp)  # a present row has a dictionary entry
    ok = ~present | key_ok[index]
    groups = keys[index]
    groups[~present] = None
    return groups, present, ok


def _checked_group_keys(dictionary: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(keys as str or None, accepted) for each entry of a string column's dictionary."""
    binary = pa.large_binary() if pa.types.is_large_string(dictionary.type) else pa.binary()
    raw = dictionary.cast(binary).to_pylist()
    keys = np.empty(len(raw), dtype=object)
    ok = np.zeros(len(raw), dtype=bool)
    for k, data in enumerate(raw):
        if data is None:
            continue
        try:
            keys[k] = check_group(data.decode("utf-8"))
            ok[k] = True
        except (UnicodeDecodeError, ReportError):
            pass
    return keys, ok


def _fixed_width_bytes(column: pa.Array, width: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, width) uint8 view of a string/binary column; ok where the entry has exactly ``width`` bytes."""
    column = _chunk(column)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    out = np.zeros((n, width), dtype=np.uint8)
    if n == 0:
        return out, np.zeros(0, dtype=bool)
    if pa.types.is_fixed_size_binary(column.type):
        if column.type.byte_width != width:
            return out, np.zeros(n, dtype=bool)
        ok = _present(column, n)
        data = np.frombuffer(column.buffers()[1], dtype=np.uint8)
        start = column.offset * width
        out = data[start : start + n * width].reshape(n, width).copy()
        return out, ok
    if pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type):
        offset_type = np.int64
    elif pa.types.is_string(column.type) or pa.types.is_binary(column.type):
        offset_type = np.int32
    else:
        return out, np.zeros(n, dtype=bool)
    buffers = column.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[column.offset : column.offset + n + 1].astype(
        np.int64
    )
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    ok = (np.diff(offsets) == width) & _present(column, n)
    starts = offsets[:-1]
    if ok.all() and width and np.all(np.diff(starts) == width):
        out = data[starts[0] : starts[0] + n * width].reshape(n, width).copy()
    elif ok.any() and width:
        rows = np.flatnonzero(ok)
        out[rows] = data[starts[rows, None] + np.arange(width)]
    return out, ok


def _decode_base64(chars: np.ndarray, num_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Decode (n, 4⌈num_bytes/3⌉) ASCII rows of padded base64; (bytes (n, num_bytes), ok)."""
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


def _bits_column(column: pa.Array, num_bits: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    num_bytes = (num_bits + 7) // 8
    if column is None:
        return np.zeros((n, num_bytes), dtype=np.uint8), np.zeros(n, dtype=bool)
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        length = 4 * -(-num_bytes // 3)
        chars, ok = _fixed_width_bytes(column, length, n)
        bits, decoded_ok = _decode_base64(chars, num_bytes)
        ok &= decoded_ok
    else:
        bits, ok = _fixed_width_bytes(column, num_bytes, n)
    spare = num_bytes * 8 - num_bits
    if spare and n:
        ok &= (bits[:, -1] & ((1 << spare) - 1)) == 0
    return np.ascontiguousarray(bits), ok


def _domain_indices(spec, column: pa.Array, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Domain index of each entry of a string or integer value column (same rules as DomainIndex)."""
    domain = spec.domain
    if column is None:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        keys = pa.array([str(v) for v in domain], type=pa.string())
        positions = np.arange(len(domain), dtype=np.int64)
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        column = column.cast(pa.string()) if pa.types.is_large_string(value_type) else column
    elif pa.types.is_integer(value_type):
        pairs = [(v, i) for i, v in enumerate(domain) if isinstance(v, int)]
        if not pairs:
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        keys = pa.array([v for v, _ in pairs], type=pa.int64())
        positions = np.array([i for _, i in pairs], dtype=np.int64)
        column = (
            column.cast(pa.int64(), safe=False) if not pa.types.is_unsigned_integer(value_type) else column
        )
        if pa.types.is_unsigned_integer(value_type):
            raw = np.asarray(column.fill_null(0))
            big = raw >= np.uint64(1 << 63)
            column = pa.array(np.where(big, 0, raw).astype(np.int64), mask=~_present(column, n) | big)
    else:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    found = pc.index_in(column, value_set=keys)
    ok = _present(found, n)
    index = np.asarray(found.fill_null(0)).astype(np.int64)
    return positions[index] if len(positions) else index, ok


# -- the validator ----------------------------------------------------------


def validate_columns(spec, columns: Mapping[str, pa.Array | None], n: int) -> tuple[np.ndarray, ReportBatch]:
    """Rows of a chunk that are certainly valid reports for ``spec``, and their content.

    Parameters
    ----------
    spec
        The aggregator's spec.
    columns : mapping of str to pyarrow.Array
        The chunk's columns by name, each of length ``n`` (absent ones may be
        missing or None).
    n : int
        Number of rows.

    Returns
    -------
    ok : numpy.ndarray of bool, shape (n,)
        Rows accepted here. Rows not accepted must be re-checked one by one.
    batch : ReportBatch
        The accepted rows, in order.
    """
    cols = {name: _chunk(col) for name, col in columns.items()}
    ok = np.ones(n, dtype=bool)
    groups, has_group, group_ok = _group_column(cols.get("group"), n)
    version, version_ok = _int_column(cols.get("v"), n)
    # as ldp.report.Report: an integer column; a group only from version 2 on ("Versions")
    ok &= version_ok & ((version == GROUP_REPORT_VERSION) | ((version == REPORT_VERSION) & ~has_group))
    ok &= group_ok
    ok &= _string_equal(cols.get("spec"), spec.fingerprint, n)
    required = required_fields(spec)
    for name, column in cols.items():
        if name in ("v", "spec", "group") or name in required:
            continue
        if name == "client":
            if column is not None and not (pa.types.is_string(column.type) or pa.types.is_null(column.type)):
                ok &= ~_present(column, n)
            continue
        ok &= ~_present(column, n)  # a field this mechanism does not use, or an unknown one
    kind = spec.report_kind
    values = seeds = bits = cohorts = None
    if kind == "value":
        values, value_ok = _domain_indices(spec, cols.get("value"), n)
        ok &= value_ok
    elif kind == "hashed":
        seeds, seed_ok = _int_column(cols.get("seed"), n)
        ok &= seed_ok & (seeds >= 0) & (seeds < LH_SEED_SPACE)
        values, value_ok = _int_column(cols.get("value"), n)
        ok &= value_ok & (values >= 0) & (values < spec.g)
        seeds = seeds.astype(np.uint64)
    elif kind in ("bits", "rappor"):
        bits, bits_ok = _bits_column(cols.get("bits"), num_report_bits(spec), n)
        ok &= bits_ok
        if kind == "rappor":
            cohorts, cohort_ok = _int_column(cols.get("cohort"), n)
            ok &= cohort_ok & (cohorts >= 0) & (cohorts < spec.num_cohorts)
    elif kind == "numeric":
        column = cols.get("value")
        if column is not None and (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            # safe=False: an integer beyond 2^53 becomes the nearest double, as float(value) in check_report
            # does (the safe cast raised and lost the chunk)
            values = np.asarray(column.cast(pa.float64(), safe=False).fill_null(np.nan))
            ok &= _present(column, n) & np.isfinite(values)
            ok &= spec.in_support(np.where(ok, values, 0.0))  # out of the mechanism's output support
        else:
            values = np.zeros(n)
            ok &= False
    else:  # pragma: no cover - every spec has one of the kinds above
        ok &= False
    pick = slice(None) if ok.all() else np.flatnonzero(ok)

    def take(column):
        return None if column is None else column[pick]

    if groups is not None:
        groups = take(groups)
        if not any(g is not None for g in groups):
            groups = None
    batch = ReportBatch(
        spec=spec.fingerprint,
        values=take(values),
        seeds=take(seeds),
        bits=take(bits),
        cohorts=take(cohorts),
        groups=groups,
    )
    return ok, batch


def bits_to_base64(bits: bytes) -> str:
    """Base64 text of packed bits (for raw reject text)."""
    return base64.b64encode(bits).decode("ascii")
