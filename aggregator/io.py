"""Read report files in bounded-memory chunks: valid reports as batches, bad ones as rejects.

Formats are chosen by extension (DESIGN.md "Report JSON form"):

==========================  ==================================================
``.jsonl`` ``.ndjson``      one JSON report per line (``.json`` too)
``.csv``                    header row of field names, one report per row
``.parquet`` ``.pq``        columns named like the JSON fields, ``bits`` binary
``.gz`` suffix              gzip-compressed JSON Lines or CSV
``-``                       JSON Lines on standard input
==========================  ==================================================

Each file is read ``chunk_size`` rows at a time (Parquet with
:meth:`pyarrow.parquet.ParquetFile.iter_batches`; JSON Lines as a byte block
of whole lines parsed at once by :func:`pyarrow.json.read_json`; CSV with
:mod:`csv`, which knows quoted fields and line numbers), so memory stays
bounded whatever the file size. Each chunk is validated column-wise
(:func:`ldp.aggregator.report_columns.validate_columns`); rows that check
does not accept are re-checked one by one with
:func:`ldp.report_check.check_report`, which either accepts them or gives the
exact reason. A JSON Lines block with blank lines, or that Arrow cannot
parse, is split into lines and then in halves until the bad lines are
isolated and parsed alone with :mod:`json`.

The format version ``v`` is checked strictly, in every format, exactly as
:class:`ldp.report.Report` does: it must be an integer this version reads
(1, or 2, the version that may carry a group; writers use the lowest version
that carries a report's fields). ``"v": 1.0``, ``"v": true``, ``"v": "1"``
(JSON), a ``1.0`` cell (CSV), a float or boolean ``v`` column (Parquet) and a
version 1 report with a group are ``wrong_version`` rejects.

An optional ``group`` field/column (a report's group key, format version 2)
is validated with the same rules (a malformed one is a ``bad_group`` reject)
and kept in the batch's ``groups`` column. Reports of *any* spec may carry a
group: with a frequency spec (GRR, OUE, RAPPOR, ...) a grouped report is
counted like any other and its group is ignored by the estimates (only mean
estimates of numeric specs use it, ``ldp aggregate --by-group``).

Every report read ends up either in a chunk's ``batch`` or in its
``rejects`` (with file, 1-based line number, reason and raw text); blank
lines are not reports and are skipped. A file that cannot be opened or
decompressed at all raises :class:`~ldp.errors.ParameterError`.

Text is UTF-8 in every format. A JSON line that is not UTF-8 is an
``unparseable`` reject, as is a CSV line; a Parquet cell that is not UTF-8
rejects its row. Text fields holding a lone surrogate (``"\ud800"`` in JSON)
are rejected by :class:`ldp.report.Report`, so whatever is accepted can be
written back out.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import gzip
import io
import itertools
import json
import re
import sys
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from ldp.aggregator.rejects import Reject, classify_reason
from ldp.aggregator.report_columns import batch_from_checked, concat_batches, validate_columns
from ldp.batch import ReportBatch
from ldp.errors import ParameterError, ReportError
from ldp.report import Report
from ldp.report_check import check_report

__all__ = [
    "ReadChunk", "CHUNK_ROWS", "report_format", "read_reports", "read_report_file", "STDIN",
    "read_jsonl_stream", "read_csv_stream", "csv_header_for_ranges", "read_parquet_row_groups",
]

#: Default rows per chunk.
CHUNK_ROWS = 100_000
#: Path naming standard input (JSON Lines).
STDIN = "-"

_SMALLEST_ARROW_BLOCK = 32  # below this many lines, parse line by line
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,40}")
_FLOAT_TEXT = re.compile(r"[+-]?([0-9]{1,400}\.?[0-9]{0,400}|\.[0-9]{1,400})([eE][+-]?[0-9]{1,5})?")


@dataclasses.dataclass(frozen=True)
class ReadChunk:
    """The outcome of reading one chunk of a file.

    Attributes
    ----------
    source : str
        The file the chunk came from.
    batch : ReportBatch
        Its valid reports.
    rejects : tuple of Reject
        Its bad reports.
    """

    source: str
    batch: ReportBatch
    rejects: tuple[Reject, ...]

    @property
    def rows(self) -> int:
        """Reports read (valid + rejected)."""
        return len(self.batch) + len(self.rejects)


def report_format(path: "str | Path") -> str:
    """``"jsonl"``, ``"csv"`` or ``"parquet"`` from a file name (``.gz`` allowed for the text formats)."""
    if str(path) == STDIN:
        return "jsonl"
    suffixes = [s.lower() for s in Path(path).suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    if gz:
        suffixes = suffixes[:-1]
    ext = suffixes[-1] if suffixes else ""
    if ext in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if ext == ".csv":
        return "csv"
    if ext in (".parquet", ".pq") and not gz:
        return "parquet"
    raise ParameterError(
        f"report file {str(path)!r}: cannot tell its format from the extension {''.join(suffixes) or '(none)'!r}; "
        "expected .jsonl, .csv or .parquet (.jsonl.gz and .csv.gz accepted)"
    )


def read_reports(paths: Iterable["str | Path"], spec, *, chunk_size: int = CHUNK_ROWS) -> Iterator[ReadChunk]:
    """Read several report files in turn (see :func:`read_report_file`).

    The one reader of report files: ``ldp aggregate`` and ``ldp
    google-rappor counts`` (both through :mod:`ldp.aggregator.engines`) and
    :func:`ldp.aggregator.google.counts_from_reports` read with it.
    Every path is checked for existence and format before reading starts, so a
    typo fails fast instead of after hours of reading.

    Parameters
    ----------
    paths : iterable of str or Path
        Report files (JSON Lines, CSV or Parquet by extension, ``.gz`` for the
        text formats, ``-`` for JSON Lines on standard input).
    spec
        The spec the reports must be for.
    chunk_size : int
        Rows per chunk (bounds memory).

    Yields
    ------
    ReadChunk
        Valid reports as a batch, bad ones as rejects.

    Raises
    ------
    ParameterError
        A path is missing, has an unknown extension, or cannot be read.
    """
    paths = list(paths)
    for path in paths:
        report_format(path)
        if str(path) != STDIN and not Path(path).is_file():
            raise ParameterError(f"report file {str(path)!r} does not exist or is not a file")
    for path in paths:
        yield from read_report_file(path, spec, chunk_size=chunk_size)


def read_report_file(path: "str | Path", spec, *, chunk_size: int = CHUNK_ROWS) -> Iterator[ReadChunk]:
    """Yield the reports of one file as :class:`ReadChunk` s of at most ``chunk_size`` rows.

    Every report read is either in a chunk's batch or in its rejects. The
    version check is strict (``v`` the integer 1, or 2, the version that may
    carry a group; anything else is a ``wrong_version`` reject). A valid grouped report is
    accepted for every spec; with a frequency spec it is counted and its group
    ignored (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The report file (``-``: JSON Lines on standard input).
    spec
        The spec the reports must be for.
    chunk_size : int
        Rows per chunk, at least 1.

    Yields
    ------
    ReadChunk
        Chunks in file order; a chunk may have an empty batch (all its rows
        rejected).

    Raises
    ------
    ParameterError
        If the file cannot be opened, decompressed or (Parquet) decoded.
    """
    if chunk_size < 1:
        raise ParameterError(f"chunk_size must be at least 1, got {chunk_size!r}")
    fmt = report_format(path)
    reader = {"jsonl": _read_jsonl, "csv": _read_csv, "parquet": _read_parquet}[fmt]
    try:
        yield from reader(str(path), spec, chunk_size)
    except (OSError, EOFError, zlib.error) as exc:
        raise ParameterError(f"cannot read report file {str(path)!r}: {exc}") from None


# -- shared -----------------------------------------------------------------


def _check_one(spec, make_report: Callable[[], Report]):
    """check_report on one row: (CheckedReport, None) or (None, (reason, detail))."""
    try:
        return check_report(spec, make_report()), None
    except ReportError as exc:
        message = str(exc)
        return None, (classify_reason(message), message)
    except (ValueError, RecursionError, OverflowError) as exc:  # json itself: too many digits, too deep
        return None, ("unparseable", f"report is not valid JSON: {type(exc).__name__}: {exc}"[:300])


def _finish(
    spec,
    source: str,
    columns: dict[str, pa.Array],
    n: int,
    line_of: Callable[[int], int],
    make_report: Callable[[int], Report],
    raw_of: Callable[[int], str],
    extra_rejects: Sequence[Reject] = (),
) -> ReadChunk:
    """Validate a chunk column-wise, re-check the rest row by row."""
    ok, batch = validate_columns(spec, columns, n)
    checked, rejects = [], list(extra_rejects)
    for i in np.flatnonzero(~ok).tolist():
        good, bad = _check_one(spec, lambda: make_report(i))
        if good is not None:
            checked.append(good)
        else:
            rejects.append(Reject(source, line_of(i), bad[0], bad[1], raw_of(i)))
    if checked:
        batch = concat_batches(spec, [batch, batch_from_checked(spec, checked)])
    rejects.sort(key=lambda r: r.line)
    return ReadChunk(source, batch, tuple(rejects))


def _open_binary(path: str):
    if path == STDIN:
        return io.BufferedReader(sys.stdin.buffer) if hasattr(sys.stdin, "buffer") else io.BytesIO(b"")
    if path.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace").rstrip("\r\n")


# -- JSON Lines ---------------------------------------------------------------


_READ_BYTES = 1 << 24
_BLANK_LINE = re.compile(rb"(?m)^[ \t\r\f\v]*$")


def _line_blocks(stream, chunk_size: int) -> Iterator[tuple[bytes, np.ndarray]]:
    """Blocks of at most ``chunk_size`` whole lines: (bytes, end offset of each line)."""
    carry = b""
    eof = False
    while not eof or carry:
        if not eof:
            more = stream.read(_READ_BYTES)
            eof = not more
            data = carry + more
        else:
            data = carry
        ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1
        if eof and data and (not ends.size or ends[-1] != len(data)):
            ends = np.append(ends, len(data))  # last line without a newline
        if not ends.size:
            carry = data
            if eof:
                break
            continue
        for begin in range(0, ends.size, chunk_size):
            piece = ends[begin : begin + chunk_size]
            offset = int(ends[begin - 1]) if begin else 0
            yield data[offset : int(piece[-1])], piece - offset
        carry = data[int(ends[-1]) :]


def _block_lines(data: bytes, count: int) -> list[bytes]:
    """The ``count`` lines of a block from :func:`_line_blocks`, each with its newline (the last may lack one)."""
    lines = data.split(b"\n")
    return [line + b"\n" for line in lines[:count]] if len(lines) > count else lines


def _read_jsonl(path: str, spec, chunk_size: int) -> Iterator[ReadChunk]:
    with _open_binary(path) as stream:
        yield from read_jsonl_stream(stream, path, spec, chunk_size=chunk_size)


def read_jsonl_stream(stream, path: str, spec, *, chunk_size: int = CHUNK_ROWS, first_line: int = 1) -> Iterator[ReadChunk]:
    """Read JSON Lines reports from an open binary ``stream`` (used for byte-range partitions).

    ``path`` names the source in rejects; ``first_line`` is the file's line
    number of the stream's first line.
    """
    for data, ends in _line_blocks(stream, chunk_size):
        count = int(ends.size)
        chunk = None
        body = data[:-1] if data.endswith(b"\n") else data
        if count >= _SMALLEST_ARROW_BLOCK and not _BLANK_LINE.search(body):
            chunk = _jsonl_arrow_chunk(path, spec, data, ends, first_line)
        if chunk is None:  # blank lines, or Arrow could not parse it all: go line by line
            lines = _block_lines(data, count)
            numbers = [first_line + i for i, line in enumerate(lines) if line.strip()]
            kept = [lines[number - first_line] for number in numbers]
            chunk = _jsonl_chunk(path, spec, kept, numbers) if kept else None
        first_line += count
        if chunk is not None:
            yield chunk


def _jsonl_arrow_chunk(path: str, spec, data: bytes, ends: np.ndarray, first_line: int) -> ReadChunk | None:
    """Parse a block of lines (no blank ones) with Arrow in one go; None when Arrow cannot."""
    table = _arrow_json(data)
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


def _arrow_json(data: bytes) -> pa.Table | None:
    """Arrow's parse of a block of JSON lines; None when it cannot, or when the block is not UTF-8.

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
        table = pa_json.read_json(io.BytesIO(data), read_options=pa_json.ReadOptions(block_size=max(len(data) + 1, 1 << 20)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        return None
    return table if _flat(table) else None


def _jsonl_chunk(path: str, spec, lines: list[bytes], numbers: list[int]) -> ReadChunk:
    parts: list[ReadChunk] = []
    _parse_jsonl_block(path, spec, lines, numbers, parts)
    batch = concat_batches(spec, [p.batch for p in parts])
    rejects = tuple(r for p in parts for r in p.rejects)
    return ReadChunk(path, batch, rejects)


def _parse_jsonl_block(path: str, spec, lines: list[bytes], numbers: list[int], out: list[ReadChunk]) -> None:
    """Parse a block with Arrow; on failure split it in halves, down to single lines."""
    if len(lines) < _SMALLEST_ARROW_BLOCK:
        out.append(_jsonl_line_by_line(path, spec, lines, numbers))
        return
    table = _arrow_json(b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines))
    if table is None or table.num_rows != len(lines):
        middle = len(lines) // 2
        _parse_jsonl_block(path, spec, lines[:middle], numbers[:middle], out)
        _parse_jsonl_block(path, spec, lines[middle:], numbers[middle:], out)
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


def _jsonl_line_by_line(path: str, spec, lines: list[bytes], numbers: list[int]) -> ReadChunk:
    checked, rejects = [], []
    for line, number in zip(lines, numbers):
        good, bad = _check_one(spec, lambda: Report.from_json(line))
        if good is not None:
            checked.append(good)
        else:
            rejects.append(Reject(path, number, bad[0], bad[1], _text(line)))
    return ReadChunk(path, batch_from_checked(spec, checked), tuple(rejects))


# -- CSV ------------------------------------------------------------------------


_CSV_FIELD_LIMIT = 1 << 24
_CSV_SLOW_LINE = re.compile("[\r\x00]")


class _Lines:
    """Decoded lines of a binary stream with their numbers; undecodable lines set aside.

    ``offset`` counts the bytes of the lines taken so far; ``number`` is the
    number of the last line taken (lines before the stream: ``lines_before``).
    A byte-order mark is dropped from line 1 when ``strip_bom`` (the start of
    a file, not a byte range inside it).
    """

    def __init__(self, stream: Iterable[bytes], *, strip_bom: bool = True, lines_before: int = 0):
        self.stream = stream
        self.strip_bom = strip_bom
        self.number = lines_before
        self.offset = 0
        self.pending: list[tuple[int, str]] = []  # lines of the row being read
        self.bad: list[tuple[int, bytes]] = []

    def __iter__(self):
        for raw in self.stream:
            self.number += 1
            self.offset += len(raw)
            if self.number == 1 and self.strip_bom and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.bad.append((self.number, raw))
                continue
            self.pending.append((self.number, text))
            yield text

    def take_row(self) -> tuple[int, str]:
        """(first line number, raw text) of the row just read."""
        first = self.pending[0][0] if self.pending else self.number
        raw = "".join(text for _, text in self.pending).rstrip("\r\n")
        self.pending.clear()
        return first, raw


def _csv_records(lines: _Lines) -> Iterator[tuple[int, str, list[str] | None, str | None]]:
    """(first line number, raw text, fields or None, CSV error or None) of each row."""
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    reader = csv.reader(lines, strict=False)
    while True:
        try:
            row = next(reader)
            error = None
        except StopIteration:
            return
        except csv.Error as exc:
            row, error = None, str(exc)
        number, raw = lines.take_row()
        yield number, raw, row, error


def _is_blank(row: list[str]) -> bool:
    return not row or (len(row) == 1 and not row[0].strip())


def _csv_report(header: Sequence[str], fields: Sequence[str], kind: str) -> Report:
    """The report a CSV row stands for (empty cells are absent fields)."""
    data = {}
    for name, text in zip(header, fields):
        if text != "":
            if name in data:
                raise ReportError(f"CSV header names the field {name!r} twice")
            data[name] = _csv_cell(name, text, kind)
    return Report.from_dict(data)


class _CsvRows:
    """The rows and rejects of a CSV stream, gathered into chunks of ``chunk_size``."""

    def __init__(self, path: str, spec, chunk_size: int, header: Sequence[str] | None):
        self.path, self.spec, self.chunk_size = path, spec, chunk_size
        self.names: list[str] | None = None if header is None else list(header)
        self._reset()

    def _reset(self) -> None:
        self.rows: list[list[str]] = []
        self.numbers: list[int] = []
        self.raws: list[str] = []
        self.early: list[Reject] = []

    def reject(self, number: int, detail: str, raw: str) -> None:
        self.early.append(Reject(self.path, number, "unparseable", detail, raw))

    def row(self, number: int, raw: str, fields: list[str]) -> None:
        """A parsed row: skipped if blank, the header if none yet, else data (or a reject)."""
        if _is_blank(fields):
            return
        if self.names is None:
            self.names = [name.strip() for name in fields]
        elif len(fields) != len(self.names):
            self.reject(number, f"CSV row has {len(fields)} fields, the header has {len(self.names)}", raw)
        else:
            self.rows.append(fields)
            self.numbers.append(number)
            self.raws.append(raw)

    def take_lines(self, lines: _Lines) -> Iterator[ReadChunk]:
        """Parse ``lines`` with the csv module (quoted fields may span lines); full chunks as they fill."""
        for number, raw, fields, error in _csv_records(lines):
            self._reject_undecodable(lines)
            if error is not None:
                self.reject(number, f"CSV error: {error}", raw)
            else:
                self.row(number, raw, fields)
            if self.full():
                yield self.take()
        self._reject_undecodable(lines)

    def _reject_undecodable(self, lines: _Lines) -> None:
        """Reject the lines ``lines`` set aside as not UTF-8 (they come before the row just read)."""
        for n, b in lines.bad:
            self.reject(n, "line is not valid UTF-8", _text(b))
        lines.bad.clear()

    def full(self) -> bool:
        return len(self.rows) + len(self.early) >= self.chunk_size

    def take(self) -> ReadChunk | None:
        if not (self.rows or self.early):
            return None
        chunk = _csv_chunk(self.path, self.spec, self.names or [], self.rows, self.numbers, self.raws, self.early)
        self._reset()
        return chunk


def _read_csv(path: str, spec, chunk_size: int) -> Iterator[ReadChunk]:
    with _open_binary(path) as stream:
        yield from read_csv_stream(stream, path, spec, chunk_size=chunk_size)


def read_csv_stream(
    stream,
    path: str,
    spec,
    *,
    chunk_size: int = CHUNK_ROWS,
    header: Sequence[str] | None = None,
    strip_bom: bool = True,
) -> Iterator[ReadChunk]:
    """Read CSV reports from a binary ``stream`` (a file, or a byte range of one).

    Without ``header`` the first row that parses and is not blank is the
    header; with it (a byte range after the file's header line) every row is
    data. Line numbers count from 1 at the start of the stream.

    Until the first ``"`` byte, every line is one row, and a block of lines
    that decodes as UTF-8 is split at commas in bulk, which is what the csv
    module does with an unquoted line; lines holding a CR (other than a
    CRLF end) or a NUL, or very long ones, still go through the csv module.
    From the first quote on, the rest of the stream goes through the csv
    module (a quoted field may span lines and blocks).
    """
    rows = _CsvRows(path, spec, chunk_size, header)
    blocks = _line_blocks(stream, chunk_size)
    taken = 0
    for data, ends in blocks:
        count = int(ends.size)
        if b'"' in data:
            rest = itertools.chain(_block_lines(data, count), (line for more, n in blocks for line in _block_lines(more, int(n.size))))
            yield from rows.take_lines(_Lines(rest, strip_bom=strip_bom and taken == 0, lines_before=taken))
            break
        yield from _unquoted_block(rows, data, count, taken, strip_bom and taken == 0)
        taken += count
    last = rows.take()
    if last is not None:
        yield last


def _unquoted_block(rows: _CsvRows, data: bytes, count: int, taken: int, strip_bom: bool) -> Iterator[ReadChunk]:
    """The rows of a block of lines without quotes (each line one row), split at commas."""
    try:
        texts = data.decode("utf-8").split("\n")[:count]
    except UnicodeDecodeError:
        yield from rows.take_lines(_Lines(_block_lines(data, count), strip_bom=strip_bom, lines_before=taken))
        return
    if strip_bom and texts and texts[0].startswith("\ufeff"):
        texts[0] = texts[0][1:]
    for k, text in enumerate(texts):
        body = text[:-1] if text.endswith("\r") else text
        number = taken + k + 1
        if _CSV_SLOW_LINE.search(body) or len(body) > _CSV_FIELD_LIMIT:
            yield from rows.take_lines(_Lines([(text + "\n").encode("utf-8")], strip_bom=False, lines_before=number - 1))
            continue
        rows.row(number, body, body.split(","))
        if rows.full():
            yield rows.take()


_QUOTE_SCAN_BYTES = 1 << 24


def csv_header_for_ranges(path: str) -> tuple[tuple[str, ...], int] | None:
    """The header of an uncompressed CSV file and the byte offset just past its line, if the file may be split.

    A CSV file may be read in byte ranges cut at line ends only when every
    line is one row, that is when no field is quoted: a quoted field may hold
    a line break, and whether a line break is inside quotes depends on
    everything before it. So a file with any ``"`` byte gives ``None`` (it
    is read whole), as does a file without a header row. The header is found
    by the same rules as :func:`read_csv_stream` (blank, undecodable and
    unparseable lines before it are skipped).
    """
    with open(path, "rb") as stream:
        while block := stream.read(_QUOTE_SCAN_BYTES):
            if b'"' in block:
                return None
    with open(path, "rb") as stream:
        lines = _Lines(stream)
        for _, _, row, error in _csv_records(lines):
            if error is None and not _is_blank(row):
                return tuple(name.strip() for name in row), lines.offset
    return None


def _csv_cell(name: str, text: str, kind: str) -> Any:
    """The report field a CSV cell stands for (the same conversion as the columns)."""
    if name in ("v", "seed", "cohort") or (name == "value" and kind == "hashed"):
        return int(text) if _INT_TEXT.fullmatch(text) else text
    if name == "value" and kind == "numeric":
        return float(text) if _FLOAT_TEXT.fullmatch(text) else text
    return text


def _csv_int_column(cells: list[str | None]) -> pa.Array:
    strings = pa.array(cells, type=pa.string())
    try:
        return strings.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    out = []
    for text in cells:
        value = None
        if text is not None and _INT_TEXT.fullmatch(text):
            value = int(text)
            if not -(1 << 63) <= value < (1 << 63):
                value = None
        out.append(value)
    return pa.array(out, type=pa.int64())  # unconvertible cells are null: re-checked row by row


def _csv_float_column(cells: list[str | None]) -> pa.Array:
    out = [float(t) if t is not None and _FLOAT_TEXT.fullmatch(t) else None for t in cells]
    return pa.array(out, type=pa.float64())


def _csv_chunk(path, spec, header, rows, numbers, raws, early) -> ReadChunk:
    kind = spec.report_kind
    n = len(rows)
    arrays = []
    for j, name in enumerate(header):
        cells = [row[j] if row[j] != "" else None for row in rows]
        if name in ("v", "seed", "cohort") or (name == "value" and kind == "hashed"):
            arrays.append(_csv_int_column(cells))
        elif name == "value" and kind == "numeric":
            arrays.append(_csv_float_column(cells))
        else:
            arrays.append(pa.array(cells, type=pa.string()))
    columns = _columns_by_name(header, arrays, n)

    return _finish(
        spec, path, columns, n, lambda i: numbers[i], lambda i: _csv_report(header, rows[i], kind), lambda i: raws[i], early
    )


# -- Parquet ----------------------------------------------------------------------


def _read_parquet(path: str, spec, chunk_size: int, row_groups: Sequence[int] | None = None, first_row: int = 1) -> Iterator[ReadChunk]:
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise ParameterError(f"cannot read Parquet file {path!r}: {exc}") from None
    # read the fingerprints as a dictionary (one compare per distinct value), if they are text
    text = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    dictionary = [
        name for name in ("spec",)
        if schema.names.count(name) == 1 and any(is_text(schema.field(name).type) for is_text in text)
    ]
    try:
        # pre_buffer=False: the pre-buffering cache keeps every row group's raw
        # bytes until the file is closed, so memory would grow with the file.
        parquet = pq.ParquetFile(path, read_dictionary=dictionary, pre_buffer=False, buffer_size=1 << 20)
        for record_batch in parquet.iter_batches(batch_size=chunk_size, row_groups=row_groups):
            yield _parquet_chunk(path, spec, record_batch, first_row)
            first_row += record_batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise ParameterError(f"cannot read Parquet file {path!r}: {exc}") from None


def _parquet_cell(column: pa.Array, i: int, name: str) -> Any:
    """Row ``i`` of a column as a Python value; a ReportError when Arrow cannot make one (text not UTF-8, ...)."""
    try:
        value = column[i].as_py()
    except UnicodeDecodeError as exc:
        raise ReportError(f"report '{name}' must be UTF-8 text, got bytes that are not: {exc}"[:300]) from None
    except (ValueError, OverflowError, pa.ArrowException) as exc:
        raise ReportError(f"report '{name}' must be a readable value, got {type(exc).__name__}: {exc}"[:300]) from None
    if name == "bits" and isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return value


def _parquet_row(record_batch: pa.RecordBatch, i: int) -> dict[str, Any]:
    """Row ``i`` as a report's JSON dict (``bits`` as base64; nulls left out)."""
    row: dict[str, Any] = {}
    for name, column in zip(record_batch.schema.names, record_batch.columns):
        value = _parquet_cell(column, i, name)
        if value is None:
            continue
        if name in row:
            raise ReportError(f"Parquet file has two columns named {name!r}, both set in this row")
        row[name] = value
    return row


def _parquet_raw(record_batch: pa.RecordBatch, i: int) -> str:
    """Row ``i`` as JSON text for a reject (every column, as far as it can be shown)."""
    items = []
    for name, column in zip(record_batch.schema.names, record_batch.columns):
        try:
            value = _parquet_cell(column, i, name)
        except ReportError:
            value = _text(_raw_bytes(column.slice(i, 1)))
        items.append(f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(value, default=str, ensure_ascii=False)}")
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


def _parquet_chunk(path: str, spec, record_batch: pa.RecordBatch, first_row: int) -> ReadChunk:
    names = record_batch.schema.names
    columns = _columns_by_name(names, record_batch.columns, record_batch.num_rows)
    return _finish(
        spec,
        path,
        columns,
        record_batch.num_rows,
        lambda i: first_row + i,
        lambda i: Report.from_dict(_parquet_row(record_batch, i)),
        lambda i: _parquet_raw(record_batch, i),
    )


def _columns_by_name(names: Sequence[str], arrays: Sequence[pa.Array], n: int) -> dict[str, pa.Array]:
    """Columns by name for :func:`validate_columns`; a name given twice is never accepted column-wise.

    The rows of a file with a duplicated column name are re-checked one by
    one, where a row that sets both is rejected.
    """
    columns: dict[str, pa.Array] = {}
    for name, array in zip(names, arrays):
        if name in columns:
            columns[name] = pa.nulls(n)
            columns[f"{name} (duplicate)"] = pa.array(["x"] * n)
        else:
            columns[name] = array
    return columns


def read_parquet_row_groups(
    path: "str | Path", spec, row_groups: Sequence[int], *, first_row: int, chunk_size: int = CHUNK_ROWS
) -> Iterator[ReadChunk]:
    """Read some row groups of a Parquet file (a partition); ``first_row`` is the 1-based row number of the first."""
    yield from _read_parquet(str(path), spec, chunk_size, row_groups=list(row_groups), first_row=first_row)
