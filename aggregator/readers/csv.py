"""CSV report files: a header row of field names, one report per row.

The stream is read in pieces of whole lines of a few MB. After the header,
a piece is parsed by :func:`pyarrow.csv.read_csv` at once, split at every
comma (every column as text), when counts over its bytes and Arrow's
columns show that this gives the rows the rules line by line give
(:func:`_arrow_piece`: no NUL, no lone CR, no blank line, every line one row
of as many fields as the header, and every quote opening or closing a whole
field, as pyarrow, R, pandas and the csv module write quoted text); its line
ends are found only when a row is rejected or re-checked. A piece where that
is not shown is read in blocks of lines: while every line is one row (no
quotes, or quotes that only enclose whole fields on their line) a block is
parsed by Arrow at once (every column as text, then converted as below), or,
when the block holds a line Arrow would read otherwise than the rules here
(a blank line, a CR that does not end a line, a NUL, a row with the wrong
number of fields, text that is not UTF-8), line by line (split at commas, or
by the :mod:`csv` module when the block has quotes); from the first block
with any other use of quotes on, the :mod:`csv` module reads (a quoted field
may span lines; a row spanning lines that is not a valid report costs its
first line only).
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
import math
import re
from collections.abc import Generator, Iterable, Iterator, Sequence
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
    _line_pieces,
    _open_binary,
    _text,
)
from ldp.aggregator.rejects import Reject
from ldp.arrow_numpy import array_of, numeric_values, string_array, validity
from ldp.errors import ReportError
from ldp.report import Report
from ldp.report_arrow import INT_TEXT, csv_float_array, csv_int_array, csv_int_column, index_in
from ldp.report_schema import BoundedInt, DomainElement, Number, ReportField, report_schema_of

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
        self._lookups: tuple[tuple[str, ...], list[_Lookup | None]] | None = None
        self._reset()

    def lookups(self, names: Sequence[str]) -> list[_Lookup | None]:
        """:func:`_lookup_keys` of the header ``names``, made once per stream (a domain may be large)."""
        if self._lookups is None or self._lookups[0] != tuple(names):
            self._lookups = (tuple(names), _lookup_keys(self.spec, names))
        return self._lookups[1]

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

    A piece of lines after the header is parsed by Arrow at once when
    that gives exactly the rows of the rules line by line
    (:func:`_arrow_piece`); otherwise, while every line is one row (a block
    without quotes, or whose quotes all enclose whole fields on their own
    line: :func:`_quotes_close_on_their_line`), a block of lines that
    decodes as UTF-8 is parsed by Arrow in bulk, which splits it as the csv
    module does; lines holding a CR (other than a CRLF end) or a NUL, or
    very long ones, still go through the csv module. From the first block
    with any other quote on, the rest of the stream goes through the csv
    module (a quoted field may span lines and blocks; a row spanning lines
    that is not a valid report costs its first line only, see the module
    docstring).
    """
    rows = _CsvRows(path, spec, chunk_size, header)
    pieces = _line_pieces(stream, _PIECE_BYTES)
    taken: int | None = 0
    for piece in pieces:
        taken = yield from _read_piece(rows, piece, pieces, taken or 0, strip_bom)
        if taken is None:  # the csv module read the rest of the stream
            break
    last = rows.take()
    if last is not None:
        yield last


def _read_piece(
    rows: _CsvRows, piece: bytes, pieces: Iterator[bytes], taken: int, strip_bom: bool
) -> Generator[ReadChunk, None, int | None]:
    """The rows of a piece of whole lines after ``taken`` lines; the lines taken after it (None: the csv module read on).

    The lines up to the header are read one at a time by the rules line by
    line; the rest of the piece by Arrow at once where that gives the same
    rows (:func:`_arrow_piece`), else block by block (:func:`_exact_blocks`).
    """
    begin = 0
    while rows.names is None and begin < len(piece):
        end = piece.find(b"\n", begin) + 1 or len(piece)
        line = iter([(piece[begin:end], np.array([end - begin], dtype=np.int64))])
        after = _exact_blocks(rows, line, itertools.chain([piece[end:]], pieces), taken, strip_bom)
        lines = yield from after
        if lines is None:
            return None
        taken, begin = lines, end
    data = piece[begin:] if begin else piece
    if not data:
        return taken
    fast = _arrow_piece(rows, data, taken)
    if fast is not None:
        chunks, count = fast
        yield from chunks
        return taken + count
    blocks = _line_blocks(io.BytesIO(data), rows.chunk_size)
    return (yield from _exact_blocks(rows, blocks, pieces, taken, strip_bom))


def _exact_blocks(
    rows: _CsvRows,
    blocks: Iterator[tuple[bytes, np.ndarray]],
    pieces: Iterator[bytes],
    taken: int,
    strip_bom: bool,
) -> Generator[ReadChunk, None, int | None]:
    """The rows of blocks of lines by the rules line by line; the lines taken after them (None: the csv module read on).

    From the first block with a quote that does not open or close a whole
    field on its line, the csv module reads every line left: those of the
    blocks, then of ``pieces``.
    """
    for block, ends in blocks:
        bom = strip_bom and taken == 0
        if _needs_csv_module(block, ends, bom):
            rest = _lines_after(itertools.chain([(block, ends)], blocks), pieces, rows.chunk_size)
            yield from rows.take_lines(_Lines(rest, strip_bom=bom, lines_before=taken))
            return None
        yield from _exact_block(rows, block, ends, taken, bom)
        taken += int(ends.size)
    return taken


def _needs_csv_module(data: bytes, ends: np.ndarray, strip_bom: bool) -> bool:
    """Whether a block of lines quotes otherwise than whole fields on their own line (the csv module reads on)."""
    if b'"' not in data:
        return False
    skip = len(_BOM) if strip_bom and data.startswith(_BOM) else 0
    return not _quotes_close_on_their_line(data, ends, skip)


def _lines_after(
    blocks: Iterable[tuple[bytes, np.ndarray]], pieces: Iterator[bytes], chunk_size: int
) -> Iterator[bytes]:
    """The lines of ``blocks``, then of every piece left in ``pieces``."""
    for data, ends in blocks:
        yield from _block_lines(data, int(ends.size))
    for piece in pieces:
        for block, block_ends in _line_blocks(io.BytesIO(piece), chunk_size):
            yield from _block_lines(block, int(block_ends.size))


def _exact_block(
    rows: _CsvRows, data: bytes, ends: np.ndarray, taken: int, strip_bom: bool
) -> Iterator[ReadChunk]:
    """The rows of a block of lines whose quotes (if any) close on their own line, by the rules line by line.

    Arrow parses the block at once where that gives the same rows
    (:func:`_arrow_block`); otherwise it is split line by line.
    """
    quoted = b'"' in data
    fast = _arrow_block(rows, data, ends, taken, strip_bom, quoted)
    if fast is not None:
        yield from fast
    else:
        yield from (_csv_module_block if quoted else _unquoted_block)(
            rows, data, int(ends.size), taken, strip_bom
        )


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


def _arrow_piece(rows: _CsvRows, data: bytes, taken: int) -> tuple[list[ReadChunk], int] | None:
    """The chunks of a piece of whole lines after the header parsed by Arrow at once, and its line count.

    None (read it block by block, :func:`_arrow_block`, or line by line)
    unless Arrow reads it exactly as the rules line by line do, which is
    shown with counts over the piece's bytes and Arrow's columns, never
    finding its line ends: no NUL; no CR but in CRLF line ends (as many rows
    as line feeds: Arrow ends a line at a lone CR too); every line one row
    of as many fields as the header, split at every comma (Arrow fails on a
    line of white space, a line of other fields or text that is not UTF-8,
    and reads an empty line as a row of empty cells: a piece with such a row
    is read otherwise). Arrow does not read quotes here: a cell with a quote
    must be one whole quoted field, ``"text"`` with no other quote (as
    pyarrow, R, pandas and the csv module write text), which the csv module
    reads as the text inside (:func:`_unquoted_cells`); a piece with any
    other quote (a comma or doubled quote inside quotes, text after a
    closing quote, a quote inside a field) is read otherwise. The row-by-row
    re-check of a row the columns do not accept, and the text of a reject,
    split that row's line alone (:class:`_PieceLines`). A piece of ASCII
    bytes only (the usual one) is parsed into binary columns, viewed as
    text: the same arrays, without Arrow's UTF-8 check of every cell (a
    tenth of the parse); any other piece into text columns, so that text
    which is not UTF-8 fails the parse.
    """
    names = rows.names
    if names is None or len(names) < 2 or len(data) > _CSV_FIELD_LIMIT:
        return None
    if b"\x00" in data or (len(data) < _SHORT_PIECE_BYTES and data.count(b"\n") < _SMALLEST_ARROW_BLOCK):
        return None  # a NUL, or a few lines only (Arrow's fixed cost is not worth it)
    keys = [f"c{j}" for j in range(len(names))]
    # ASCII text is UTF-8: Arrow's check of every text cell is then left out (cells read as bytes, viewed as text)
    ascii_only = data.isascii()
    try:
        table = pa_csv.read_csv(
            io.BytesIO(data),
            # one block in this thread: Arrow's parallel blocks cost CPU of their own (a fifth more)
            read_options=pa_csv.ReadOptions(column_names=keys, block_size=len(data) + 1, use_threads=False),
            parse_options=pa_csv.ParseOptions(
                quote_char=False, escape_char=False, newlines_in_values=False, ignore_empty_lines=False
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(keys, pa.binary() if ascii_only else pa.string()),
                null_values=[""],
                strings_can_be_null=True,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    count = table.num_rows  # one row per line: Arrow ends a line at LF, CRLF and a lone CR ...
    if b"\r" in data and count != data.count(b"\n") + (not data.endswith(b"\n")):
        return None  # ... which the rules here do not (and a CRLF is one line end in both)
    quoted = b'"' in data
    parts = []  # the cells of each batch Arrow parsed (a block of the piece), by column
    for batch in table.to_batches():
        cells = [column.view(pa.string()) for column in batch.columns] if ascii_only else batch.columns
        if min(column.null_count for column in cells) and not np.all(
            np.any([validity(column) for column in cells], axis=0)
        ):  # Arrow reads an empty line as a row of empty cells; a blank line is not a row
            return None
        if quoted:
            lookups = rows.lookups(names)
            # a dictionary is looked up once a chunk: worth it for keys far fewer than the chunk's rows
            most = min(len(cells[0]), rows.chunk_size) // 8
            unquoted = [_unquoted_column(column, lookup, most) for column, lookup in zip(cells, lookups)]
            if any(column is None for column in unquoted):
                return None
            cells = [column for column in unquoted if column is not None]
        parts.append(cells)
    pending = rows.take()
    chunks = [pending] if pending is not None else []
    lines = _PieceLines(data)
    first = 0
    for cells in parts:
        size = len(cells[0])
        for begin in range(0, size, rows.chunk_size):
            part = [column.slice(begin, rows.chunk_size) for column in cells]
            chunks.append(
                _cells_chunk(rows.path, rows.spec, names, part, lines, first + begin, taken + 1, quoted)
            )
        first += size
    return chunks, count


#: A piece shorter than this is parsed by Arrow only if it has at least :data:`_SMALLEST_ARROW_BLOCK` lines.
_SHORT_PIECE_BYTES = 1 << 16
#: Bytes of whole lines Arrow parses at once (a few MB: larger pieces cost the kernel more page faults).
_PIECE_BYTES = 1 << 22


class _Lookup(NamedTuple):
    """The texts a column's cells are only ever compared with, and their Arrow forms for :func:`_quoted_lookup`."""

    keys: tuple[str, ...]
    #: Each key in double quotes.
    quoted: pa.Array
    #: The keys, then one more text that is none of them: NULs, longer than every key (no cell Arrow reads
    #: in a piece holds a NUL, :func:`_arrow_piece`).
    dictionary: pa.Array
    #: No key holds a quote (a key that does cannot be a plain quoted cell: such columns are unquoted).
    plain: bool

    @classmethod
    def of(cls, keys: tuple[str, ...]) -> _Lookup:
        other = "\x00" * (max(map(len, keys), default=0) + 1)
        quoted = string_array([f'"{key}"' for key in keys])
        return cls(keys, quoted, string_array([*keys, other]), not any('"' in key for key in keys))


def _lookup_keys(spec: Any, names: Sequence[str]) -> list[_Lookup | None]:
    """For each column the header names, the texts its cells are only ever compared with, if so.

    The fingerprint column is only compared with the spec's fingerprint
    (:func:`ldp.report_arrow.string_equal`), a domain element's only looked
    up in the domain's texts, ``str`` of each value
    (:func:`ldp.report_arrow.domain_indices`); any other column's cells are
    read as they are.
    """
    schema = report_schema_of(spec)
    domain = getattr(spec, "domain", None)
    lookups: list[_Lookup | None] = []
    texts: _Lookup | None = None
    for name in names:
        if name == "spec":
            lookups.append(_Lookup.of((str(spec.fingerprint),)))
        elif isinstance(schema.field(name), DomainElement) and domain is not None:
            texts = texts or _Lookup.of(tuple(str(value) for value in domain))
            lookups.append(texts)
        else:
            lookups.append(None)
    return lookups


def _unquoted_column(column: pa.Array, lookup: _Lookup | None, most_keys: int) -> pa.Array | None:
    """:func:`_quoted_lookup` of a column of compared cells (at most ``most_keys`` keys) where it applies, else
    :func:`_unquoted_cells`."""
    if lookup is not None and len(lookup.keys) <= most_keys:
        looked_up = _quoted_lookup(column, lookup)
        if looked_up is not None:
            return looked_up
    return _unquoted_cells(column)


def _quoted_lookup(column: pa.Array, lookup: _Lookup) -> pa.DictionaryArray | None:
    """A column of quoted cells only compared with ``lookup.keys``, as a dictionary of them; None unless every cell is quoted.

    Every cell must be ``"text"`` with no other quote (pyarrow and R quote
    every text cell so), which the csv module reads as the text inside
    (:func:`_unquoted_cells`). Instead of unquoting the cells, each is looked
    up among the keys in quotes: a cell ``"k"`` stands for the key k, any
    other for one text that is none of the keys (its row is then rejected,
    or re-checked from its line), ``""`` for an empty cell (an absent
    field). Whatever compares the column with the keys sees what it would
    see in the unquoted cells; no bytes are moved.
    """
    n = len(column)
    buffers = column.buffers()
    if n == 0 or column.null_count or buffers[2] is None or not pa.types.is_string(column.type):
        return None
    keys, quoted, dictionary, plain = lookup
    if not plain:
        return None
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[column.offset : column.offset + n + 1]
    body = np.frombuffer(buffers[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    if len(keys) == 1 and keys[0] and _every_cell_is(body, offsets, f'"{keys[0]}"'.encode()):
        # the usual fingerprint column: one text throughout (set, with no quote inside), a dictionary of it alone
        return pa.DictionaryArray.from_arrays(array_of(np.zeros(n, dtype=np.int32)), dictionary.slice(0, 1))
    widths = np.diff(offsets)
    if int(np.count_nonzero(body == _QUOTE[0])) != 2 * n or int(widths.min()) < 2:
        return None
    found = index_in(column, quoted)
    index = numeric_values(found).astype(np.int32)
    if found.null_count:
        # a cell found is some "k", two quotes at its ends; with 2n quotes in all, each other cell holds
        # two quotes exactly when it starts and ends with one
        other = np.flatnonzero(~validity(found))
        starts = offsets[other] - offsets[0]
        ends = starts + widths[other] - 1
        if not (bool(np.all(body[starts] == _QUOTE[0])) and bool(np.all(body[ends] == _QUOTE[0]))):
            return None  # a quote inside a cell
        index[other] = len(keys)  # the text that is none of the keys
    set_cells = widths > 2  # ``""``: empty, as an empty cell
    indices = array_of(index, None if bool(set_cells.all()) else set_cells)
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def _every_cell_is(body: np.ndarray, offsets: np.ndarray, cell: bytes) -> bool:
    """Whether every cell of a text column (its bytes ``body``, its ``offsets``) is ``cell``.

    The cells then lie back to back, so the body is ``cell`` repeated: it is
    compared a few cells at a time as whole 64-bit words (as many cells as
    make whole words), without a per-cell step.
    """
    n, width = len(offsets) - 1, len(cell)
    if not width or body.size != n * width:  # (the body is the offsets' span)
        return False
    if not bool(np.all(np.diff(offsets) == width)):
        return False
    group = 8 // math.gcd(width, 8)  # cells in a whole number of words
    head = n - n % group
    pattern = np.frombuffer(cell * group, dtype=np.uint64)
    words = body[: head * width].view(np.uint64).reshape(-1, pattern.size)
    return bool(np.all(words == pattern)) and body[head * width :].tobytes() == cell * (n - head)


def _unquoted_cells(column: pa.Array) -> pa.Array | None:
    """The cells of a column split at commas as the csv module reads them, or None if a quote is not plain.

    Every ``"`` in the column must open or close a whole quoted cell
    (``"text"``: first and last byte, none between); such a cell stands for
    the text inside, empty (an absent field, as an empty cell) for ``""``.
    Built from the column's buffers: the quotes are dropped from the bytes
    and the offsets moved by the quotes before each cell.
    """
    n = len(column)
    buffers = column.buffers()
    if n == 0 or buffers[2] is None:
        return column
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[column.offset : column.offset + n + 1]
    body = np.frombuffer(buffers[2], dtype=np.uint8)[int(offsets[0]) : int(offsets[-1])]
    quotes = int(np.count_nonzero(body == _QUOTE[0]))
    if not quotes:
        return column
    widths = np.diff(offsets)
    width = int(widths[0])
    if quotes == 2 * n and width > 2 and not column.null_count and bool(np.all(widths == width)):
        grid = body.reshape(n, width)  # cells of one width (a fingerprint, base64 bits): no offsets to move
        if bool(np.all(grid[:, 0] == _QUOTE[0])) and bool(np.all(grid[:, -1] == _QUOTE[0])):
            # the inner bytes of each cell as one item of width - 2 bytes: a copy by whole items
            cells = np.dtype((np.void, width - 2))
            inner = np.ndarray((n,), dtype=cells, buffer=body, offset=1, strides=(width,)).copy()
            new_offsets = np.arange(n + 1, dtype=np.int32) * np.int32(width - 2)
            return pa.Array.from_buffers(
                pa.string(), n, [None, pa.py_buffer(new_offsets), pa.py_buffer(inner)]
            )
    starts, stops = offsets[:-1] - offsets[0], offsets[1:] - offsets[0]
    if quotes == 2 * n and not column.null_count and bool(np.all(widths >= 2)):
        # every cell quoted, as pyarrow and R write text: two quotes each, so at its ends if there
        first, last = body[starts], body[stops - 1]
        if bool(np.all(first == _QUOTE[0])) and bool(np.all(last == _QUOTE[0])):
            kept = body[body != _QUOTE[0]]
            new_offsets = offsets - offsets[0] - 2 * np.arange(n + 1, dtype=np.int32)
            valid = widths > 2  # ``""``: empty, as an empty cell
            nulls = int(n - np.count_nonzero(valid))
            mask = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
            return pa.Array.from_buffers(
                pa.string(), n, [mask, pa.py_buffer(new_offsets), pa.py_buffer(kept)], null_count=nulls
            )
    first = body[np.minimum(starts, max(len(body) - 1, 0))]
    last = body[np.maximum(stops - 1, 0)]
    plain = (stops - starts >= 2) & (first == _QUOTE[0]) & (last == _QUOTE[0]) & validity(column)
    if quotes != 2 * int(np.count_nonzero(plain)):
        return None
    keep = np.ones(len(body), dtype=bool)  # every quote is the first or last byte of a plain cell
    keep[starts[plain]] = False
    keep[stops[plain] - 1] = False
    kept = body[keep]
    before = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(plain, out=before[1:])
    new_offsets = (offsets - offsets[0] - 2 * before).astype(np.int32)
    valid = validity(column) & (np.diff(new_offsets) > 0)  # ``""``: empty, as an empty cell
    nulls = int(n - np.count_nonzero(valid))
    mask = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(
        pa.string(), n, [mask, pa.py_buffer(new_offsets), pa.py_buffer(kept)], null_count=nulls
    )


class _PieceLines:
    """The lines of a piece of bytes, found only when one is asked for (a rejected or re-checked row)."""

    def __init__(self, data: bytes):
        self.data = data
        self._ends: np.ndarray | None = None

    def __getitem__(self, i: int) -> str:
        """Line ``i`` (from 0) as text, without its line end."""
        if self._ends is None:
            ends = np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8) == 10) + 1
            if not ends.size or ends[-1] != len(self.data):
                ends = np.append(ends, len(self.data))
            self._ends = ends
        start = int(self._ends[i - 1]) if i else 0
        return _text(self.data[start : int(self._ends[i])])


def _cells_chunk(
    path: str,
    spec: Any,
    header: Sequence[str],
    cells: Sequence[pa.Array],
    lines: _PieceLines,
    first: int,
    first_number: int,
    quoted: bool,
) -> ReadChunk:
    """A chunk of rows Arrow read from a piece (cells by column), row ``i`` being the piece's line ``first + i``."""
    n = len(cells[0])
    columns = _cell_columns(spec, header, cells, n)

    def raw(i: int) -> str:
        return lines[first + i]

    return _finish(
        spec,
        path,
        columns,
        n,
        lambda i: first_number + first + i,
        lambda i: _csv_report(header, _split_line(raw(i), quoted), spec),
        raw,
    )


def _cell_columns(spec: Any, header: Sequence[str], cells: Sequence[pa.Array], n: int) -> dict[str, pa.Array]:
    """The report columns of CSV cells read as text (null: empty), by the field the header names."""
    schema = report_schema_of(spec)
    arrays = []
    for name, strings in zip(header, cells):
        field = schema.field(name)
        if field is not None:
            arrays.append(_field_column(field, strings))
        elif name == _VERSION:
            arrays.append(csv_int_array(strings))
        else:  # a field this spec's reports do not carry: only whether a cell is set matters
            arrays.append(strings)
    return _columns_by_name(header, arrays, n)


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
    n = table.num_rows
    columns = _cell_columns(spec, header, [column.combine_chunks() for column in table.columns], n)
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
