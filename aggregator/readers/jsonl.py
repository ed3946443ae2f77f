"""JSON Lines report files: blocks of whole lines parsed by Arrow at once, bad lines one by one.

A block of at most ``chunk_size`` lines is parsed in one go by
:func:`pyarrow.json.read_json` and validated column-wise with the spec's
report schema; a block with blank lines, or that Arrow cannot parse, is split
into lines and then in halves until the bad lines are isolated and parsed
alone with :mod:`json` (:func:`ldp.report.Report.from_json`). See
:mod:`ldp.aggregator.io` for what every reader guarantees.

Arrow parses with the types of the fields it knows given up front
(:func:`_json_schema`: ``v`` and the strict integer fields int64, text
fields string), which is faster than inferring them; a block where a line
gives such a field another JSON type (``"v": 1.0``, ``"v": "1"``) is one
Arrow cannot parse, so it takes the careful path above and its bad lines are
rejected one by one with their reason.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from ldp.aggregator.readers.common import (
    CHUNK_ROWS,
    ReadChunk,
    _block_lines,
    _check_one,
    _finish,
    _has_blank_line,
    _line_blocks,
    _open_binary,
    _text,
)
from ldp.aggregator.rejects import Reject
from ldp.aggregator.report_columns import batch_from_checked, concat_batches
from ldp.report import Report
from ldp.report_check import CheckedReport
from ldp.report_schema import BitVector, BoundedInt, report_schema_of

__all__ = ["read_jsonl_stream"]

_SMALLEST_ARROW_BLOCK = 32  # below this many lines, parse line by line
_ARROW_BLOCK_BYTES = 1 << 20  # Arrow's JSON reader parses blocks of this size in parallel


def _read_jsonl(path: str, spec: Any, chunk_size: int) -> Iterator[ReadChunk]:
    with _open_binary(path) as stream:
        yield from read_jsonl_stream(stream, path, spec, chunk_size=chunk_size)


def read_jsonl_stream(
    stream: Any, path: str, spec: Any, *, chunk_size: int = CHUNK_ROWS, first_line: int = 1
) -> Iterator[ReadChunk]:
    """Read JSON Lines reports from an open binary ``stream`` (used for byte-range partitions).

    ``path`` names the source in rejects; ``first_line`` is the file's line
    number of the stream's first line.
    """
    schema = _json_schema(spec)
    for data, ends in _line_blocks(stream, chunk_size):
        count = int(ends.size)
        chunk = None
        if count >= _SMALLEST_ARROW_BLOCK and not _has_blank_line(data, ends):
            chunk = _jsonl_arrow_chunk(path, spec, schema, data, ends, first_line)
        if chunk is None:  # blank lines, or Arrow could not parse it all: go line by line
            lines = _block_lines(data, count)
            numbers = [first_line + i for i, line in enumerate(lines) if line.strip()]
            kept = [lines[number - first_line] for number in numbers]
            chunk = _jsonl_chunk(path, spec, schema, kept, numbers) if kept else None
        first_line += count
        if chunk is not None:
            yield chunk


def _json_schema(spec: Any) -> pa.Schema:
    """The Arrow types of the report fields whose JSON type is fixed (others are inferred).

    ``v`` and the strict integer payload fields stored as int64 are int64,
    ``spec`` and the bit-vector fields (base64) string. Lenient integer fields
    (which also accept ``3.0`` and ``"3"``), uint64 ones (OLH seeds) and
    domain values (text or integers) are left to inference.
    """
    fields = [pa.field("v", pa.int64()), pa.field("spec", pa.string())]
    for field in report_schema_of(spec).fields:
        if isinstance(field, BitVector):
            fields.append(pa.field(field.name, pa.string()))
        elif isinstance(field, BoundedInt) and not field.lenient and field.dtype == "int64":
            fields.append(pa.field(field.name, pa.int64()))
    return pa.schema(fields)


def _jsonl_arrow_chunk(
    path: str, spec: Any, schema: pa.Schema, data: bytes, ends: np.ndarray, first_line: int
) -> ReadChunk | None:
    """Parse a block of lines (no blank ones) with Arrow in one go; None when Arrow cannot."""
    longest = int(max(ends[0], np.max(np.diff(ends), initial=0)))
    table = _arrow_json(data, schema, longest)
    if table is None or table.num_rows != ends.size:
        return None
    starts = np.concatenate([[0], ends[:-1]])

    def line(i: int) -> bytes:
        return data[int(starts[i]) : int(ends[i])]

    columns = {name: table.column(name) for name in table.column_names}
    return _finish(
        spec,
        path,
        columns,
        table.num_rows,
        lambda i: first_line + i,
        lambda i: Report.from_json(line(i)),
        lambda i: _text(line(i)),
    )


def _arrow_json(data: bytes, schema: pa.Schema, longest: int) -> pa.Table | None:
    """Arrow's parse of a block of JSON lines; None when it cannot, or when the block is not UTF-8.

    ``schema`` types the fields it names (:func:`_json_schema`); ``longest``
    is the length of the longest line, so that Arrow's blocks (1 MiB, parsed
    on its threads) each hold whole lines.

    Arrow's JSON reader copies string bytes without checking that they are
    UTF-8, so a block that does not decode is left to the line-by-line path,
    where :mod:`json` rejects exactly the bad lines.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not data.endswith(b"\n"):
        data += b"\n"
    try:
        table = pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(block_size=max(longest + 2, _ARROW_BLOCK_BYTES)),
            parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        return None
    return table if _flat(table) else None


def _jsonl_chunk(
    path: str, spec: Any, schema: pa.Schema, lines: list[bytes], numbers: list[int]
) -> ReadChunk:
    parts: list[ReadChunk] = []
    _parse_jsonl_block(path, spec, schema, lines, numbers, parts)
    batch = concat_batches(spec, [p.batch for p in parts])
    rejects = tuple(r for p in parts for r in p.rejects)
    return ReadChunk(path, batch, rejects)


def _parse_jsonl_block(
    path: str, spec: Any, schema: pa.Schema, lines: list[bytes], numbers: list[int], out: list[ReadChunk]
) -> None:
    """Parse a block with Arrow; on failure split it in halves, down to single lines."""
    if len(lines) < _SMALLEST_ARROW_BLOCK:
        out.append(_jsonl_line_by_line(path, spec, lines, numbers))
        return
    data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    table = _arrow_json(data, schema, max(len(line) for line in lines) + 1)
    if table is None or table.num_rows != len(lines):
        middle = len(lines) // 2
        _parse_jsonl_block(path, spec, schema, lines[:middle], numbers[:middle], out)
        _parse_jsonl_block(path, spec, schema, lines[middle:], numbers[middle:], out)
        return
    columns = {name: table.column(name) for name in table.column_names}
    out.append(
        _finish(
            spec,
            path,
            columns,
            table.num_rows,
            lambda i: numbers[i],
            lambda i: Report.from_json(lines[i]),
            lambda i: _text(lines[i]),
        )
    )


def _flat(table: pa.Table) -> bool:
    """Arrow's JSON reader turned nested objects/arrays into columns: check those line by line."""
    return not any(pa.types.is_nested(t) for t in table.schema.types)


def _jsonl_line_by_line(path: str, spec: Any, lines: list[bytes], numbers: list[int]) -> ReadChunk:
    checked: list[CheckedReport] = []
    rejects: list[Reject] = []
    for line, number in zip(lines, numbers):
        good, bad = _check_one(spec, Report.from_json, line)
        if good is not None:
            checked.append(good)
        elif bad is not None:
            rejects.append(Reject(path, number, bad[0], bad[1], _text(line)))
    return ReadChunk(path, batch_from_checked(spec, checked), tuple(rejects))
