"""Read report files in bounded-memory chunks: valid reports as batches, bad ones as rejects.

Formats are chosen by extension (docs/report-format.md):

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
is validated by :func:`ldp.report.check_group`, in every format (once per
distinct key of a chunk's column); a malformed one is a ``bad_group``
reject. Valid keys are kept in the batch's ``groups`` column. Reports of *any* spec may carry a
group: with a frequency spec (GRR, OUE, RAPPOR, ...) a grouped report is
counted like any other and its group is ignored by the estimates (only mean
estimates of numeric specs use it, ``ldp aggregate --by-group``).

Every report read ends up either in a chunk's ``batch`` or in its
``rejects`` (with file, 1-based line number, reason and raw text); blank
lines (ASCII white space only) are not reports and are skipped. A file that
cannot be opened or decompressed at all raises
:class:`~ldp.errors.ParameterError`.

Text is UTF-8 in every format. A JSON line that is not UTF-8 is an
``unparseable`` reject, as is a CSV line; a Parquet cell that is not UTF-8
rejects its row. Text fields holding a lone surrogate (``"\\ud800"`` in JSON)
are rejected by :class:`ldp.report.Report`, so whatever is accepted can be
written back out.

CSV: one line, one row
----------------------
A CSV row is one line, except that a quoted field may hold line breaks (a
domain value with a newline, as :mod:`csv` writes it). A row spanning lines
is accepted only when it is one valid report. Otherwise (a stray ``"`` that
opens a field no later quote closes properly) only its *first* line is
rejected, as ``unparseable``, and reading resumes at the next line as the
start of a new row. So a bad line costs that line only, every valid line
is counted, and the valid count equals the number of valid reports
written, whatever quotes the file holds. Quoting is read strictly (RFC
4180, as :mod:`csv` writes it): a quoted field must be closed, and its
closing quote followed by a comma or the line end (``"a"b`` is a CSV
error, not ``ab``). A line of ASCII white space only is blank, also in CSV
(``""`` is a row with one empty field, not a blank line).
"""

from __future__ import annotations

import base64
import collections
import csv
import dataclasses
import gzip
import io
import itertools
import json
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from ldp.aggregator.rejects import Reject, classify_reason
from ldp.aggregator.report_columns import batch_from_checked, concat_batches, validate_columns
from ldp.batch import ReportBatch
from ldp.errors import ParameterError, ReportError
from ldp.extensions import split_extension
from ldp.report import Report
from ldp.report_check import check_report

__all__ = [
    "CHUNK_ROWS",
    "STDIN",
    "ReadChunk",
    "check_paths",
    "csv_header_for_ranges",
    "read_csv_stream",
    "read_jsonl_stream",
    "read_parquet_row_groups",
    "read_report_file",
    "read_reports",
    "report_format",
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


def report_format(path: str | Path) -> str:
    """``"jsonl"``, ``"csv"`` or ``"parquet"`` from a file name (``.gz`` allowed for the text formats)."""
    if str(path) == STDIN:
        return "jsonl"
    suffixes, gz = split_extension(path)
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


def read_reports(paths: Iterable[str | Path], spec, *, chunk_size: int = CHUNK_ROWS) -> Iterator[ReadChunk]:
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
        A path is missing, has an unknown extension, or cannot be read
        (see :func:`check_paths`).
    """
    for path in check_paths(paths):
        yield from read_report_file(path, spec, chunk_size=chunk_size)


def check_paths(paths: Iterable[str | Path]) -> list[str]:
    """The report paths as strings, each checked up front (a typo fails before hours of reading).

    Raises
    ------
    ParameterError
        A path with an unknown extension, a missing file, or standard input
        (``-``) given more than once (it can be read only once).
    """
    checked = []
    for path in paths:
        report_format(path)
        if str(path) != STDIN and not Path(path).is_file():
            raise ParameterError(f"report file {str(path)!r} does not exist or is not a file")
        checked.append(str(path))
    if checked.count(STDIN) > 1:
        raise ParameterError(
            f"standard input ('{STDIN}') is given {checked.count(STDIN)} times as a report file; it can be read only once"
        )
    return checked


def read_report_file(path: str | Path, spec, *, chunk_size: int = CHUNK_ROWS) -> Iterator[ReadChunk]:
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


def _check_one(spec, make_report: Callable[[Any], Report], row: Any):
    """check_report on ``make_report(row)``: (CheckedReport, None) or (None, (reason, detail))."""
    try:
        return check_report(spec, make_report(row)), None
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
        good, bad = _check_one(spec, make_report, i)
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


def read_jsonl_stream(
    stream, path: str, spec, *, chunk_size: int = CHUNK_ROWS, first_line: int = 1
) -> Iterator[ReadChunk]:
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
        table = pa_json.read_json(
            io.BytesIO(data), read_options=pa_json.ReadOptions(block_size=max(len(data) + 1, 1 << 20))
        )
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
        good, bad = _check_one(spec, Report.from_json, line)
        if good is not None:
            checked.append(good)
        else:
            rejects.append(Reject(path, number, bad[0], bad[1], _text(line)))
    return ReadChunk(path, batch_from_checked(spec, checked), tuple(rejects))


# -- CSV ------------------------------------------------------------------------


_CSV_FIELD_LIMIT = 1 << 24
_CSV_SLOW_LINE = re.compile("[\r\x00]")
_ASCII_SPACE = " \t\r\n\f\v"
_BOM = b"\xef\xbb\xbf"


def _is_blank(text: str) -> bool:
    """A blank CSV line (ASCII white space only): not a row, as a blank JSON Lines line is not a report."""
    return not text.strip(_ASCII_SPACE)


class _CsvRecord(NamedTuple):
    """One record as the csv module read it: its lines (number, bytes, text or None if not UTF-8), fields or error."""

    lines: list[tuple[int, bytes, str | None]]
    fields: list[str] | None
    error: str | None

    @property
    def number(self) -> int:
        """Line number where the record starts."""
        return self.lines[0][0]

    @property
    def raw(self) -> str:
        """The record's text, without its final line end."""
        return "".join(text if text is not None else _text(raw) for _, raw, text in self.lines).rstrip("\r\n")

    @property
    def first_line(self) -> str:
        """The text of the record's first line."""
        return self.lines[0][2].rstrip("\r\n")

    @property
    def undecodable(self) -> bool:
        """Whether a line inside the record is not UTF-8 (the csv module never saw it)."""
        return any(text is None for _, _, text in self.lines)


class _Lines:
    """Decoded lines of a binary stream for the csv module, with their numbers.

    Between records, blank lines are skipped and lines that are not UTF-8 are
    set aside in :attr:`bad`; inside a record (a quoted field spanning lines)
    every line belongs to the record, and an undecodable one is kept out of
    the csv module and marks the record. :meth:`give_back` puts lines back to
    be read again, before the rest of the stream. ``offset`` counts the bytes
    of the lines taken from the stream so far. A byte-order mark is dropped
    from line 1 when ``strip_bom`` (the start of a file, not a byte range
    inside it).
    """

    def __init__(self, stream: Iterable[bytes], *, strip_bom: bool = True, lines_before: int = 0):
        self.stream = iter(stream)
        self.strip_bom = strip_bom
        self.number = lines_before
        self.offset = 0
        self.pending: list[tuple[int, bytes, str | None]] = []  # lines of the record being read
        self.bad: list[tuple[int, bytes]] = []
        self._again: collections.deque[tuple[int, bytes]] = collections.deque()

    def _next(self) -> tuple[int, bytes] | None:
        if self._again:
            return self._again.popleft()
        raw = next(self.stream, None)
        if raw is None:
            return None
        self.number += 1
        self.offset += len(raw)
        if self.number == 1 and self.strip_bom and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        return self.number, raw

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        """The next line for the csv module (an iterator that resumes after :meth:`give_back`)."""
        while (line := self._next()) is not None:
            number, raw = line
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if not self.pending and (text is None or _is_blank(text)):  # between records
                if text is None:
                    self.bad.append((number, raw))
                continue
            self.pending.append((number, raw, text))
            if text is not None:
                return text
        raise StopIteration

    def take_record(self, fields: list[str] | None, error: str | None) -> _CsvRecord:
        """The record just read (its lines taken so far, with the csv module's fields or error)."""
        record = _CsvRecord(list(self.pending), fields, error)
        self.pending.clear()
        return record

    def give_back(self, lines: Sequence[tuple[int, bytes, str | None]]) -> None:
        """Read ``lines`` again, before anything else."""
        self._again.extendleft((number, raw) for number, raw, _ in reversed(lines))


def _csv_records(lines: _Lines) -> Iterator[_CsvRecord]:
    """Each record the csv module reads from ``lines`` (a quoted field may span lines)."""
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    reader = csv.reader(lines, strict=True)
    while True:
        try:
            fields, error = next(reader), None
        except StopIteration:
            if not lines.pending:
                return
            fields, error = None, "CSV error: the data ends inside a record"
        except csv.Error as exc:
            fields, error = None, f"CSV error: {exc}"
        if lines.pending:  # a record always has a line; the guard keeps .number defined
            yield lines.take_record(fields, error)


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
        """A parsed non-blank row: the header if none yet, else data (or a reject)."""
        if self.names is None:
            self.names = [name.strip() for name in fields]
        elif len(fields) != len(self.names):
            self.reject(number, f"CSV row has {len(fields)} fields, the header has {len(self.names)}", raw)
        else:
            self.rows.append(fields)
            self.numbers.append(number)
            self.raws.append(raw)

    def take_lines(self, lines: _Lines) -> Iterator[ReadChunk]:
        """Parse ``lines`` with the csv module; full chunks as they fill.

        A record on one line is a row (or a CSV error). A record spanning
        lines is a row only if it is a valid report; otherwise only its first
        line is rejected and the lines after it are read again as new rows,
        so a stray quote costs its own line only.
        """
        for record in _csv_records(lines):
            if len(record.lines) > 1 and (why := self._why_not_a_report(record)) is not None:
                self.reject(
                    record.number,
                    f"CSV row opens a quoted field that is not closed on its line; read on, it runs over "
                    f"{len(record.lines):,} lines and is not a valid report ({why}); only this line is rejected"[
                        :300
                    ],
                    record.first_line,
                )
                lines.give_back(record.lines[1:])
            elif record.error is not None:
                self.reject(record.number, record.error, record.raw)
            else:
                self.row(record.number, record.raw, record.fields)
            self._reject_undecodable(lines)
            if self.full():
                yield self.take()
        self._reject_undecodable(lines)

    def _why_not_a_report(self, record: _CsvRecord) -> str | None:
        """Why a record spanning lines is not one valid report (None: it is one)."""
        if record.error is not None:
            return record.error
        if record.undecodable:
            return "a line inside it is not valid UTF-8"
        if self.names is None:
            return "a header row must be one line"
        if len(record.fields) != len(self.names):
            return f"{len(record.fields)} fields, the header has {len(self.names)}"
        _, bad = _check_one(
            self.spec, lambda fields: _csv_report(self.names, fields, self.spec.report_kind), record.fields
        )
        return None if bad is None else bad[0]

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
        chunk = _csv_chunk(
            self.path, self.spec, self.names or [], self.rows, self.numbers, self.raws, self.early
        )
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
    module (a quoted field may span lines and blocks; a row spanning lines
    that is not a valid report costs its first line only, see the module
    docstring).
    """
    rows = _CsvRows(path, spec, chunk_size, header)
    blocks = _line_blocks(stream, chunk_size)
    taken = 0
    for data, ends in blocks:
        count = int(ends.size)
        if b'"' in data:
            rest = itertools.chain(
                _block_lines(data, count),
                (line for more, n in blocks for line in _block_lines(more, int(n.size))),
            )
            yield from rows.take_lines(_Lines(rest, strip_bom=strip_bom and taken == 0, lines_before=taken))
            break
        yield from _unquoted_block(rows, data, count, taken, strip_bom and taken == 0)
        taken += count
    last = rows.take()
    if last is not None:
        yield last


def _unquoted_block(
    rows: _CsvRows, data: bytes, count: int, taken: int, strip_bom: bool
) -> Iterator[ReadChunk]:
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
        if _is_blank(body):
            continue
        if _CSV_SLOW_LINE.search(body) or len(body) > _CSV_FIELD_LIMIT:
            yield from rows.take_lines(
                _Lines([(text + "\n").encode("utf-8")], strip_bom=False, lines_before=number - 1)
            )
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
        for record in _csv_records(lines):
            if record.error is None:
                return tuple(name.strip() for name in record.fields), lines.offset
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
        spec,
        path,
        columns,
        n,
        lambda i: numbers[i],
        lambda i: _csv_report(header, rows[i], kind),
        lambda i: raws[i],
        early,
    )


# -- Parquet ----------------------------------------------------------------------


def _read_parquet(
    path: str, spec, chunk_size: int, row_groups: Sequence[int] | None = None, first_row: int = 1
) -> Iterator[ReadChunk]:
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise ParameterError(f"cannot read Parquet file {path!r}: {exc}") from None
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
        raise ReportError(
            f"report '{name}' must be UTF-8 text, got bytes that are not: {exc}"[:300]
        ) from None
    except (ValueError, OverflowError, pa.ArrowException) as exc:
        raise ReportError(
            f"report '{name}' must be a readable value, got {type(exc).__name__}: {exc}"[:300]
        ) from None
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
    path: str | Path, spec, row_groups: Sequence[int], *, first_row: int, chunk_size: int = CHUNK_ROWS
) -> Iterator[ReadChunk]:
    """Read some row groups of a Parquet file (a partition); ``first_row`` is the 1-based row number of the first."""
    yield from _read_parquet(str(path), spec, chunk_size, row_groups=list(row_groups), first_row=first_row)
