"""CSV report files: a header row of field names, one report per row.

While every line is one row (no quotes, or quotes that only enclose whole
fields on their line, as pyarrow, R, pandas and the csv module write them) a
block of such lines is parsed by :func:`pyarrow.csv.read_csv` at once (every
column as text, then converted as below), or, when the block holds a line
Arrow would read otherwise than the rules here (a blank line, a CR that does
not end a line, a NUL, a row with the wrong number of fields, text that is
not UTF-8), line by line (split at commas, or by the :mod:`csv` module when
the block has quotes); from the first block with any other use of quotes on,
the :mod:`csv` module reads (a quoted field may span lines; a row spanning
lines that is not a valid report costs its first line only).
Cells become Arrow columns by the type of the field the header names: the
payload fields of the spec's report schema convert their own cells
(:meth:`ldp.report_schema.ReportField.csv_column`), ``v`` is an integer,
anything else text (a set cell of a field the spec's reports do not carry
rejects its row, whatever it holds). See
:mod:`ldp.aggregator.io` for the CSV rules every row follows.
"""

from __future__ import annotations

import collections
import csv
import io
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from ldp.aggregator.readers.common import (
    CHUNK_ROWS,
    ReadChunk,
    _block_lines,
    _check_one,
    _columns_by_name,
    _finish,
    _has_blank_line,
    _line_blocks,
    _open_binary,
    _text,
)
from ldp.aggregator.rejects import Reject
from ldp.arrow_numpy import string_array
from ldp.errors import ReportError
from ldp.report import Report
from ldp.report_arrow import INT_TEXT, csv_float_array, csv_int_array, csv_int_column
from ldp.report_schema import BoundedInt, Number, ReportField, report_schema_of

__all__ = ["csv_header_for_ranges", "read_csv_stream"]

#: Fields of every report that are integers whatever the spec (what :class:`ldp.report.Report` types as int).
_INT_FIELDS = ("v", "seed", "cohort")
#: The format version: an integer column in every chunk. The other integer fields a spec's reports do
#: not carry stay text in the columns (a cell that is set rejects its row, whatever it holds: "0x5",
#: "+5" or "abc"), and become integers only in the report a row stands for.
_VERSION = "v"
_BOM = b"\xef\xbb\xbf"


_CSV_FIELD_LIMIT = 1 << 24
_CSV_SLOW_LINE = re.compile("[\r\x00]")
_ASCII_SPACE = " \t\r\n\f\v"


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
        _, raw, text = self.lines[0]
        return (_text(raw) if text is None else text).rstrip("\r\n")

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


def _csv_report(header: Sequence[str], fields: Sequence[str], spec: Any) -> Report:
    """The report a CSV row stands for (empty cells are absent fields)."""
    schema = report_schema_of(spec)
    data: dict[str, Any] = {}
    for name, text in zip(header, fields):
        if text != "":
            if name in data:
                raise ReportError(f"CSV header names the field {name!r} twice")
            data[name] = _csv_cell(schema.field(name), name, text)
    return Report.from_dict(data)


class _CsvRows:
    """The rows and rejects of a CSV stream, gathered into chunks of ``chunk_size``."""

    def __init__(self, path: str, spec: Any, chunk_size: int, header: Sequence[str] | None):
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
            elif record.fields is not None:
                self.row(record.number, record.raw, record.fields)
            self._reject_undecodable(lines)
            if self.full() and (chunk := self.take()) is not None:
                yield chunk
        self._reject_undecodable(lines)

    def _why_not_a_report(self, record: _CsvRecord) -> str | None:
        """Why a record spanning lines is not one valid report (None: it is one)."""
        if record.error is not None or record.fields is None:
            return record.error or "CSV error: no fields"
        if record.undecodable:
            return "a line inside it is not valid UTF-8"
        if self.names is None:
            return "a header row must be one line"
        if len(record.fields) != len(self.names):
            return f"{len(record.fields)} fields, the header has {len(self.names)}"
        names = self.names
        _, bad = _check_one(self.spec, lambda fields: _csv_report(names, fields, self.spec), record.fields)
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


def _read_csv(path: str, spec: Any, chunk_size: int) -> Iterator[ReadChunk]:
    with _open_binary(path) as stream:
        yield from read_csv_stream(stream, path, spec, chunk_size=chunk_size)


def read_csv_stream(
    stream: Any,
    path: str,
    spec: Any,
    *,
    chunk_size: int = CHUNK_ROWS,
    header: Sequence[str] | None = None,
    strip_bom: bool = True,
) -> Iterator[ReadChunk]:
    """Read CSV reports from a binary ``stream`` (a file, or a byte range of one).

    Without ``header`` the first row that parses and is not blank is the
    header; with it (a byte range after the file's header line) every row is
    data. Line numbers count from 1 at the start of the stream.

    While every line is one row (a block without quotes, or whose quotes
    all enclose whole fields on their own line:
    :func:`_quotes_close_on_their_line`), a block of lines that decodes as
    UTF-8 is parsed by Arrow in bulk, which splits it as the csv module does;
    lines holding a CR (other than a CRLF end) or a NUL, or very long ones,
    still go through the csv module. From the first block with any other
    quote on, the rest of the stream goes through the csv module (a quoted
    field may span lines and blocks; a row spanning lines that is not a
    valid report costs its first line only, see the module docstring).
    """
    rows = _CsvRows(path, spec, chunk_size, header)
    blocks = _line_blocks(stream, chunk_size)
    taken = 0
    for data, ends in blocks:
        count = int(ends.size)
        bom = strip_bom and taken == 0
        quoted = b'"' in data
        if quoted and not _quotes_close_on_their_line(
            data, ends, len(_BOM) if bom and data.startswith(_BOM) else 0
        ):
            rest = itertools.chain(
                _block_lines(data, count),
                (line for more, n in blocks for line in _block_lines(more, int(n.size))),
            )
            yield from rows.take_lines(_Lines(rest, strip_bom=bom, lines_before=taken))
            break
        fast = _arrow_block(rows, data, ends, taken, bom, quoted)
        if fast is not None:
            yield from fast
        else:
            yield from (_csv_module_block if quoted else _unquoted_block)(rows, data, count, taken, bom)
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
        if rows.full() and (chunk := rows.take()) is not None:
            yield chunk


def _csv_module_block(
    rows: _CsvRows, data: bytes, count: int, taken: int, strip_bom: bool
) -> Iterator[ReadChunk]:
    """The rows of a block whose quoted fields all close on their own line, read by the csv module."""
    yield from rows.take_lines(_Lines(_block_lines(data, count), strip_bom=strip_bom, lines_before=taken))


_COMMA, _QUOTE, _CR, _LF = b",", b'"', b"\r", b"\n"
#: Bytes that may follow a closing quote: the next field, or the line end (a CR only in CRLF: lone CRs go line by line).
_AFTER_CLOSE = np.zeros(256, dtype=bool)
_AFTER_CLOSE[np.frombuffer(_COMMA + _CR + _LF, dtype=np.uint8)] = True
#: Bytes that may precede an opening quote: the previous field's comma, or the previous line's end.
_BEFORE_OPEN = np.zeros(256, dtype=bool)
_BEFORE_OPEN[np.frombuffer(_COMMA + _LF, dtype=np.uint8)] = True


def _quotes_close_on_their_line(data: bytes, ends: np.ndarray, skip: int = 0) -> bool:
    """Whether every ``"`` of a block of lines opens or closes a plain quoted field on its own line.

    Taken in order, the quotes of the block must pair up within a line, each
    pair enclosing a whole field: the opening quote at the start of a field
    (the line's start, or after a comma), the closing one at its end (before
    a comma, the line end or the end of the data), nothing but other bytes in
    between (no doubled ``""`` inside a field). That is how pyarrow, R, pandas
    and the csv module write quoted fields without line breaks in them, and
    then every line is one record, which Arrow's CSV parser and the csv module
    split into the same fields. Any other use of quotes (a quote inside an
    unquoted field, a doubled quote, a field spanning lines, text after a
    closing quote) gives False. ``skip``: bytes at the start of the first line
    that are not part of it (a byte-order mark).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(buf == _QUOTE[0])
    if quotes.size % 2:
        return False
    if not quotes.size:
        return True
    if not ends.size or int(quotes[-1]) >= int(ends[-1]):  # a quote after the last line end: be safe
        return False
    # the quotes pair up within lines exactly when an even number of them comes before every line end
    if (np.searchsorted(quotes, ends) & 1).any():
        return False
    opens, closes = quotes[0::2], quotes[1::2]
    before = buf[np.maximum(opens - 1, 0)]  # at a line start: the previous line's LF (line 1: ``skip``)
    at_start = (opens == skip) | _BEFORE_OPEN[before] & (opens > skip)
    after = closes + 1
    at_end = (after == len(data)) | _AFTER_CLOSE[buf[np.minimum(after, len(data) - 1)]] & (after < len(data))
    return bool(at_start.all() and at_end.all())


def _split_line(text: str, quoted: bool) -> list[str]:
    """The fields of one CSV line (without its line end): split at commas, or by the csv module if it has quotes."""
    if not quoted or '"' not in text:
        return text.split(",")
    return next(csv.reader([text], strict=True))


_SMALLEST_ARROW_BLOCK = 32  # below this many lines, split line by line
_ARROW_BLOCK_BYTES = 1 << 20  # Arrow's CSV reader parses blocks of this size in parallel


def _arrow_block(
    rows: _CsvRows, data: bytes, ends: np.ndarray, taken: int, strip_bom: bool, quoted: bool = False
) -> list[ReadChunk] | None:
    """The chunks of a block of unquoted lines parsed by Arrow at once; None: split it line by line.

    Arrow reads such a block exactly as :func:`_unquoted_block` would when
    every line is one row of as many fields as the header, with no blank
    line, no CR except in a CRLF line end, no NUL and only UTF-8 text; a
    block where that does not hold (Arrow refuses a row with the wrong number
    of fields or text that is not UTF-8) is left to the line-by-line path,
    which rejects exactly its bad lines. The header, when not read yet, is
    the block's first line if that line is a plain one. Rows gathered by the
    line-by-line path before this block come first, as their own chunk.

    ``quoted``: the block holds quotes, all of them enclosing whole fields on
    one line (:func:`_quotes_close_on_their_line`); Arrow then reads quoted
    fields, and the line-by-line path for it is the csv module's.
    """
    first_number = taken + 1
    if rows.names is None:
        line = data[: int(ends[0])]
        if strip_bom and line.startswith(_BOM):
            line = line[len(_BOM) :]
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return None
        body = text[:-1] if text.endswith("\n") else text
        body = body[:-1] if body.endswith("\r") else body
        if _is_blank(body) or _CSV_SLOW_LINE.search(body) or len(body) > _CSV_FIELD_LIMIT:
            return None
        try:
            header = _split_line(body, quoted)
        except csv.Error:
            return None
        rows.row(first_number, body, header)
        data, ends, first_number = data[int(ends[0]) :], ends[1:] - ends[0], first_number + 1
    names = rows.names or []
    n = int(ends.size)
    if n < _SMALLEST_ARROW_BLOCK or not names or _has_blank_line(data, ends):
        return _header_only(rows, data, ends, first_number, quoted)
    longest = int(max(ends[0], np.max(np.diff(ends), initial=0)))
    lone_cr = b"\r" in data and data.count(b"\r") != data.count(b"\r\n")
    if longest > _CSV_FIELD_LIMIT or b"\x00" in data or lone_cr:
        return _header_only(rows, data, ends, first_number, quoted)
    keys = [f"c{j}" for j in range(len(names))]
    try:
        table = pa_csv.read_csv(
            io.BytesIO(data),
            read_options=pa_csv.ReadOptions(
                column_names=keys, block_size=max(longest + 2, _ARROW_BLOCK_BYTES)
            ),
            parse_options=pa_csv.ParseOptions(
                quote_char='"' if quoted else False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(keys, pa.string()), null_values=[""], strings_can_be_null=True
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _header_only(rows, data, ends, first_number, quoted)
    if table.num_rows != n:
        return _header_only(rows, data, ends, first_number, quoted)
    pending = rows.take()
    chunk = _arrow_csv_chunk(rows.path, rows.spec, names, table, data, ends, first_number, quoted)
    return [pending, chunk] if pending is not None else [chunk]


def _header_only(
    rows: _CsvRows, data: bytes, ends: np.ndarray, first_number: int, quoted: bool = False
) -> list[ReadChunk] | None:
    """None (split the block line by line), unless :func:`_arrow_block` took the header from it: then its other lines."""
    if first_number == 1 or rows.names is None:
        return None
    taken = first_number - 1
    if not ends.size:
        return []
    return list((_csv_module_block if quoted else _unquoted_block)(rows, data, int(ends.size), taken, False))


def _arrow_csv_chunk(
    path: str,
    spec: Any,
    header: Sequence[str],
    table: pa.Table,
    data: bytes,
    ends: np.ndarray,
    first_number: int,
    quoted: bool = False,
) -> ReadChunk:
    """A chunk of the rows Arrow read (each a line, in order from ``first_number``), as :func:`_csv_chunk` does."""
    schema = report_schema_of(spec)
    n = table.num_rows
    arrays = []
    for j, name in enumerate(header):
        strings = table.column(j).combine_chunks()
        field = schema.field(name)
        if field is not None:
            arrays.append(_field_column(field, strings))
        elif name == _VERSION:
            arrays.append(csv_int_array(strings))
        else:  # a field this spec's reports do not carry: only whether a cell is set matters
            arrays.append(strings)
    columns = _columns_by_name(header, arrays, n)
    starts = np.concatenate(([0], ends[:-1]))

    def raw(i: int) -> str:
        return _text(data[int(starts[i]) : int(ends[i])])

    return _finish(
        spec,
        path,
        columns,
        n,
        lambda i: first_number + i,
        lambda i: _csv_report(header, _split_line(raw(i), quoted), spec),
        raw,
    )


def _field_column(field: ReportField, strings: pa.Array) -> pa.Array:
    """``field.csv_column`` of a column of cells Arrow read as text (null: empty), in bulk where it can."""
    convert = type(field).csv_column
    if convert is ReportField.csv_column:  # text as it is
        return strings
    if convert is BoundedInt.csv_column:
        return csv_int_array(strings)
    if convert is Number.csv_column:
        return csv_float_array(strings)
    return field.csv_column(strings.to_pylist())


_QUOTE_SCAN_BYTES = 1 << 24
_QUOTE_SCAN_LINES = 1 << 20


def csv_header_for_ranges(path: str) -> tuple[tuple[str, ...], int] | None:
    """The header of an uncompressed CSV file and the byte offset just past its line, if the file may be split.

    A CSV file may be read in byte ranges cut at line ends only when every
    line is one row: a quoted field may hold a line break, and whether a line
    break is inside quotes depends on everything before it. So a file with a
    ``"`` byte that does not open or close a whole field on its own line
    (:func:`_quotes_close_on_their_line`: quoted fields as pyarrow, R and the
    csv module write them may be split) gives ``None`` (it is read whole), as
    does a file without a header row. The header is found by the same rules
    as :func:`read_csv_stream` (blank, undecodable and unparseable lines
    before it are skipped).
    """
    with open(path, "rb") as stream:
        quoted = False
        while block := stream.read(_QUOTE_SCAN_BYTES):
            if b'"' in block:
                quoted = True
                break
    if quoted:
        with open(path, "rb") as stream:
            for number, (data, ends) in enumerate(_line_blocks(stream, _QUOTE_SCAN_LINES)):
                skip = len(_BOM) if number == 0 and data.startswith(_BOM) else 0
                if b'"' in data and not _quotes_close_on_their_line(data, ends, skip):
                    return None
    with open(path, "rb") as stream:
        lines = _Lines(stream)
        for record in _csv_records(lines):
            if record.error is None and record.fields is not None:
                return tuple(name.strip() for name in record.fields), lines.offset
    return None


def _csv_cell(field: ReportField | None, name: str, text: str) -> Any:
    """The report field a CSV cell stands for (the same conversion as the columns)."""
    if field is not None:
        return field.csv_cell(text)
    if name in _INT_FIELDS:
        return int(text) if INT_TEXT.fullmatch(text) else text
    return text


def _csv_chunk(
    path: str,
    spec: Any,
    header: Sequence[str],
    rows: list[list[str]],
    numbers: list[int],
    raws: list[str],
    early: list[Reject],
) -> ReadChunk:
    schema = report_schema_of(spec)
    n = len(rows)
    arrays = []
    for j, name in enumerate(header):
        cells: list[str | None] = [row[j] if row[j] != "" else None for row in rows]
        field = schema.field(name)
        if field is not None:
            arrays.append(field.csv_column(cells))
        elif name == _VERSION:
            arrays.append(csv_int_column(cells))
        else:  # a field this spec's reports do not carry: only whether a cell is set matters
            arrays.append(string_array(cells))
    columns = _columns_by_name(header, arrays, n)

    return _finish(
        spec,
        path,
        columns,
        n,
        lambda i: numbers[i],
        lambda i: _csv_report(header, rows[i], spec),
        lambda i: raws[i],
        early,
    )
