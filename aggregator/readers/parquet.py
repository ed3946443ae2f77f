"""Parquet report files: columns named like the JSON fields, read a row group batch at a time.

Columns are read with :meth:`pyarrow.parquet.ParquetFile.iter_batches`
(``spec`` as a dictionary, one compare per distinct fingerprint) and
validated column-wise with the spec's report schema; a bit-vector field is
binary here (base64 text is accepted too). A row the columns do not accept
is re-checked alone, as the JSON dict it stands for (binary cells of the
schema's bit-vector fields as base64). See :mod:`ldp.aggregator.io`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ldp.aggregator.readers.common import CHUNK_ROWS, ReadChunk, _columns_by_name, _finish, _text
from ldp.errors import InputError, ReportError
from ldp.report import Report
from ldp.report_schema import report_schema_of

__all__ = ["read_parquet_row_groups"]


def _read_parquet(
    path: str, spec: Any, chunk_size: int, row_groups: Sequence[int] | None = None, first_row: int = 1
) -> Iterator[ReadChunk]:
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read Parquet file {path!r}: {exc}") from None
    # read the fingerprints as a dictionary (one compare per distinct value), if they are text
    text = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    dictionary = [
        name
        for name in ("spec",)
        if schema.names.count(name) == 1 and any(is_text(schema.field(name).type) for is_text in text)
    ]
    try:
        # pre_buffer=False: the pre-buffering cache keeps every row group's raw
        # bytes until the file is closed, so memory would grow with the file.
        parquet = pq.ParquetFile(path, read_dictionary=dictionary, pre_buffer=False, buffer_size=1 << 20)
        # use_threads=False: a batch's columns decoded in this thread. Arrow's pool
        # decodes them in parallel, but the bit vectors are most of a batch, and its
        # threads cost CPU time of their own (10-40 % more on 10 M RAPPOR reports).
        batches = parquet.iter_batches(batch_size=chunk_size, row_groups=row_groups, use_threads=False)
        for record_batch in batches:
            yield _parquet_chunk(path, spec, record_batch, first_row)
            first_row += record_batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read Parquet file {path!r}: {exc}") from None


def _parquet_cell(column: pa.Array, i: int, name: str, binary: frozenset[str] = frozenset()) -> Any:
    """Row ``i`` of a column as a Python value; a ReportError when Arrow cannot make one (text not UTF-8, ...)."""
    try:
        value = column[i].as_py()
    except UnicodeDecodeError as exc:
        raise ReportError(
            f"report '{name}' must be UTF-8 text, got bytes that are not: {exc}"[:300]
        ) from None
    except (ValueError, OverflowError, pa.ArrowException) as exc:
        raise ReportError(
            f"report '{name}' must be a readable value, got {type(exc).__name__}: {exc}"[:300]
        ) from None
    if (name == "bits" or name in binary) and isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value


def _parquet_row(
    record_batch: pa.RecordBatch, i: int, binary: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Row ``i`` as a report's JSON dict (``bits`` and the ``binary`` fields as base64; nulls left out)."""
    row: dict[str, Any] = {}
    for name, column in zip(record_batch.schema.names, record_batch.columns):
        value = _parquet_cell(column, i, name, binary)
        if value is None:
            continue
        if name in row:
            raise ReportError(f"Parquet file has two columns named {name!r}, both set in this row")
        row[name] = value
    return row


def _parquet_raw(record_batch: pa.RecordBatch, i: int, binary: frozenset[str] = frozenset()) -> str:
    """Row ``i`` as JSON text for a reject (every column, as far as it can be shown)."""
    items = []
    for name, column in zip(record_batch.schema.names, record_batch.columns):
        try:
            value = _parquet_cell(column, i, name, binary)
        except ReportError:
            value = _text(_raw_bytes(column.slice(i, 1)))
        items.append(
            f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(value, default=str, ensure_ascii=False)}"
        )
    return "{" + ", ".join(items) + "}"


def _raw_bytes(cell: pa.Array) -> bytes:
    """The bytes of a one-row text column (``<unreadable>`` for other types)."""
    value_type = cell.type.value_type if pa.types.is_dictionary(cell.type) else cell.type
    if pa.types.is_dictionary(cell.type):
        cell = cell.dictionary_decode()
    if pa.types.is_string(value_type):
        return cell.cast(pa.binary())[0].as_py() or b""
    if pa.types.is_large_string(value_type):
        return cell.cast(pa.large_binary())[0].as_py() or b""
    return b"<unreadable>"


def _parquet_chunk(path: str, spec: Any, record_batch: pa.RecordBatch, first_row: int) -> ReadChunk:
    binary = report_schema_of(spec).binary_names()
    names = record_batch.schema.names
    columns = _columns_by_name(names, record_batch.columns, record_batch.num_rows)
    return _finish(
        spec,
        path,
        columns,
        record_batch.num_rows,
        lambda i: first_row + i,
        lambda i: Report.from_dict(_parquet_row(record_batch, i, binary)),
        lambda i: _parquet_raw(record_batch, i, binary),
    )


def read_parquet_row_groups(
    path: str | Path, spec: Any, row_groups: Sequence[int], *, first_row: int, chunk_size: int = CHUNK_ROWS
) -> Iterator[ReadChunk]:
    """Read some row groups of a Parquet file (a partition); ``first_row`` is the 1-based row number of the first."""
    yield from _read_parquet(str(path), spec, chunk_size, row_groups=list(row_groups), first_row=first_row)
