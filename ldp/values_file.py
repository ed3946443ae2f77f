"""The one reader of value files: ``ldp encode`` INPUT and ``ldp simulate --data``.

Kinds, by extension (case-insensitive; :func:`input_kind`)
------------------------------------------------------------
``.csv``                CSV with a header line naming the columns
``.jsonl``, ``.ndjson`` JSON Lines: one JSON object per line
``.json``               one JSON array of objects
``.parquet``, ``.pq``   Parquet
anything else           plain text: one value per line, no columns

The text kinds may be gzip-compressed (a further ``.gz``: ``values.csv.gz``).

Rules
-----
- Text is UTF-8; a byte-order mark is dropped. Text that is not UTF-8 is an
  error naming the file, the line and the byte.
- A file that does not exist, cannot be read, is not gzip (``.gz``) or is
  not Parquet is an error naming the file, never a traceback.
- CSV: every field is read as text (``007`` stays ``"007"``); blank lines are
  skipped; an empty file, a header naming a column twice and malformed
  quoting are errors. A row with another number of fields than the header
  is an error naming its line (it would shift the columns, and a client
  would encode the wrong value); with ``strict=False`` extra fields are
  ignored and missing ones read as None.
- JSON Lines: blank lines are skipped; any other line must be a JSON
  object (an error naming the line otherwise). The columns are the keys of
  the objects; a missing key reads as None. JSON: the same, for the
  elements of the array.
- Parquet: cells are Arrow's Python values (an integer column with nulls
  gives integers and None).
- Plain text: every line is a value, line end removed; a blank line is the
  value ``""``. Plain text has no columns: asking for one is an error.
- A column that is not in the file is an error listing the file's columns.
- What counts as a missing value (None, NaN, ``""``) is the caller's
  business: ``ldp encode`` refuses it, ``ldp simulate`` drops it.

Tables are read in chunks of :data:`CHUNK_ROWS` rows (bounded memory), except
``.json``, which is one document.
"""

from __future__ import annotations

import contextlib
import gzip
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ldp.errors import InputError

__all__ = [
    "CHUNK_ROWS",
    "TABLE_KINDS",
    "check_column",
    "input_kind",
    "read_column",
    "read_lines",
    "read_table",
]

#: Rows per chunk of a table.
CHUNK_ROWS = 65536
#: Kinds that have columns, and their extensions.
TABLE_KINDS = {
    "csv": (".csv",),
    "jsonl": (".jsonl", ".ndjson"),
    "json": (".json",),
    "parquet": (".parquet", ".pq"),
}

#: ``select(column names)`` -> the wanted column of each cell of a row (None: no column, cell None).
Select = Callable[[list[str]], Sequence[str | None]]
#: A chunk of a table: its column names, its number of rows and a getter of one column's cells.
_Chunk = tuple[list[str], int, Callable[[str], list[Any]]]


def input_kind(path: str | Path) -> str:
    """``"csv"``, ``"jsonl"``, ``"json"``, ``"parquet"`` or ``"text"``, by the extension (after an optional ``.gz``)."""
    name = str(path).lower().removesuffix(".gz")
    for kind, suffixes in TABLE_KINDS.items():
        if name.endswith(suffixes):
            return kind
    return "text"


def check_column(path: str | Path, column: str, names: Iterable[str]) -> None:
    """A :class:`InputError` listing the columns when ``column`` is not among ``names``."""
    names = [str(name) for name in names]
    if column not in names:
        listed = ", ".join(map(repr, names)) or "(none)"
        raise InputError(f"{str(path)!r} has no column {column!r}; its columns: {listed}")


def read_column(path: str | Path, column: str, *, strict: bool = True) -> list[Any]:
    """Every cell of ``column`` of the table ``path``, in row order (missing cells as None).

    Raises
    ------
    InputError
        Unreadable file, plain text (no columns), no such column, or a
        malformed row (see the module's rules).
    """
    if input_kind(path) == "text":
        raise InputError(
            f"{str(path)!r} is plain text (one value per line), which has no column {column!r}; "
            f"give a table: {', '.join(s for suffixes in TABLE_KINDS.values() for s in suffixes)}"
        )

    def select(names: list[str]) -> tuple[str]:
        check_column(path, column, names)
        return (column,)

    return [cells[0] for cells in read_table(path, select, strict=strict)]


def read_table(path: str | Path, select: Select, *, strict: bool = True) -> Iterator[tuple[Any, ...]]:
    """The cells of the columns ``select`` picks, one tuple per row of a table file.

    Parameters
    ----------
    path : str or Path
        A CSV, JSON Lines, JSON or Parquet file (:func:`input_kind`).
    select : callable
        Called with the column names (of each chunk of a JSON Lines or
        Parquet file, of the header of a CSV file); returns the wanted
        column of each cell (None: that cell is None). It may raise.
    strict : bool
        CSV: a row with another number of fields than the header is an error
        (True) or is read with extra fields ignored, missing ones as None.
    """
    kind = input_kind(path)
    _check_exists(path)
    if kind == "csv":
        yield from _csv_rows(str(path), select, strict)
        return
    if kind == "text":
        raise InputError(f"{str(path)!r} is plain text (one value per line), not a table")
    chunks = {"jsonl": _jsonl_chunks, "json": _json_chunks, "parquet": _parquet_chunks}[kind](str(path))
    for names, size, column_of in chunks:
        columns = [None if name is None else column_of(name) for name in select(names)]
        for i in range(size):
            yield tuple(None if cells is None else cells[i] for cells in columns)


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, value) of each line of a plain text file, line end removed (blank lines are ``""``)."""
    _check_exists(path)
    for number, line in _text_lines(str(path)):
        yield number, line.rstrip("\r\n")


# -- text --------------------------------------------------------------------------


def _check_exists(path: str | Path) -> None:
    if not os.path.exists(path):
        raise InputError(f"input file {str(path)!r} does not exist")


@contextlib.contextmanager
def _reading(path: str) -> Iterator[IO[str]]:
    """``path`` opened as UTF-8 text (gzip when it ends in .gz; a byte-order mark is dropped).

    Converts the failures of reading it into a InputError naming the file:
    UnicodeDecodeError (with the line found by :func:`_utf8_failure`),
    OSError (unreadable file, not gzip) and EOFError (truncated gzip).
    """
    compressed = path.lower().endswith(".gz")
    try:
        with (
            gzip.open(path, "rt", encoding="utf-8-sig", newline="")
            if compressed
            else open(path, encoding="utf-8-sig", newline="")
        ) as handle:
            yield handle
    except UnicodeDecodeError:
        raise InputError(_utf8_failure(path, compressed)) from None
    except (OSError, EOFError) as exc:
        raise InputError(
            f"cannot read input file {path!r}: {getattr(exc, 'strerror', None) or exc}"
        ) from None


def _utf8_failure(path: str, compressed: bool) -> str:
    """The message for a file that is not UTF-8: its first undecodable line (read again, bytes by line)."""
    try:
        with gzip.open(path, "rb") if compressed else open(path, "rb") as raw:
            for number, line in enumerate(raw, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return (
                        f"input file {path!r}, line {number}: not UTF-8 text "
                        f"(byte 0x{line[exc.start]:02x} at column {exc.start + 1}); save it as UTF-8"
                    )
    except (OSError, EOFError):
        pass
    return f"input file {path!r} is not UTF-8 text; save it as UTF-8"


def _text_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text with its line end) of each line of a UTF-8 text file (see :func:`_reading`)."""
    with _reading(path) as handle:
        yield from enumerate(handle, start=1)


# -- CSV ---------------------------------------------------------------------------


def _csv_rows(path: str, select: Select, strict: bool) -> Iterator[tuple[Any, ...]]:
    """The selected cells of each row of a CSV file with a header, read as text (rules: module docstring)."""
    import csv

    with _reading(path) as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                raise InputError(
                    f"input file {path!r} is empty; expected a CSV header line naming the columns"
                )
            duplicated = sorted({name for name in header if header.count(name) > 1})
            if duplicated:
                raise InputError(
                    f"input file {path!r}: the CSV header repeats the column(s) {', '.join(map(repr, duplicated))}"
                )
            at = [None if name is None else header.index(name) for name in select(header)]
            width = len(header)
            start = reader.line_num + 1  # first line of the next record
            for fields in reader:
                if fields:
                    if len(fields) != width and strict:
                        raise InputError(
                            f"input file {path!r}, line {start}: {len(fields)} fields, but the header has "
                            f"{width} ({','.join(header)}); quote values that contain the delimiter"
                        )
                    cells: Sequence[str | None] = fields
                    if len(fields) != width:  # strict=False: extra fields ignored, missing ones None
                        cells = [*fields[:width], *([None] * (width - len(fields)))]
                    yield tuple(None if i is None else cells[i] for i in at)
                start = reader.line_num + 1
        except csv.Error as exc:
            raise InputError(f"input file {path!r}, line {reader.line_num}: not valid CSV ({exc})") from None


# -- JSON Lines and JSON -------------------------------------------------------------

_JSON_KINDS = {
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _not_an_object(path: str, where: str, record: Any) -> InputError:
    kind = _JSON_KINDS.get(type(record), type(record).__name__)
    return InputError(f"input file {path!r}, {where}: expected a JSON object (one row per line), got {kind}")


def _jsonl_chunks(path: str) -> Iterator[_Chunk]:
    """(column names, column getter) per chunk of a JSON Lines file: one JSON object per line, blank lines skipped.

    The column names of a chunk are the keys of all its objects (a missing
    key reads as None). A line that is not JSON, or not an object, is an
    error naming its line.
    """
    import json

    decode = json.JSONDecoder().raw_decode  # one document at the start of the line; quicker than json.loads
    records: list[dict] = []
    names: dict[str, None] = {}
    previous: Any = None
    for number, text in _text_lines(path):
        try:
            record, end = decode(text)
            if text[end:].strip():
                raise ValueError("extra data")
        except ValueError:  # leading spaces, a blank line, or not JSON: json.loads decides and explains
            try:
                record = json.loads(text.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                if not text.strip():
                    continue
                raise InputError(
                    f"input file {path!r}, line {number}: not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None
        if type(record) is not dict:
            raise _not_an_object(path, f"line {number}", record)
        keys = record.keys()
        if keys != previous:
            names.update(dict.fromkeys(keys))
            previous = keys
        records.append(record)
        if len(records) == CHUNK_ROWS:
            yield _records_chunk(list(names), records)
            records, names, previous = [], {}, None
    if records:
        yield _records_chunk(list(names), records)


def _json_chunks(path: str) -> Iterator[_Chunk]:
    """The one chunk of a JSON file holding an array of objects."""
    import json

    with _reading(path) as handle:
        try:
            document = json.load(handle)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"input file {path!r}, line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
    if type(document) is not list:
        kind = "an object" if isinstance(document, dict) else _JSON_KINDS.get(type(document), "a value")
        raise InputError(f"input file {path!r}: expected a JSON array of objects (one per row), got {kind}")
    names: dict[str, None] = {}
    for number, record in enumerate(document, start=1):
        if type(record) is not dict:
            raise _not_an_object(path, f"element {number}", record)
        names.update(dict.fromkeys(record))
    if document:
        yield _records_chunk(list(names), document)


def _records_chunk(names: list[str], records: list[dict]) -> _Chunk:
    return names, len(records), lambda name: [record.get(name) for record in records]


# -- Parquet ---------------------------------------------------------------------------


def _parquet_chunks(path: str) -> Iterator[_Chunk]:
    """(column names, column getter) per record batch of a Parquet file, cells as Arrow's Python values.

    Converted to a InputError naming the file: pyarrow.ArrowException
    (not Parquet, corrupt or truncated) and OSError.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        for batch in parquet.iter_batches(batch_size=CHUNK_ROWS):
            # Arrow's own Python values: an integer column with nulls stays integers and None
            # (through pandas it would become floats, and 1 would read as 1.0).
            yield list(batch.schema.names), batch.num_rows, _batch_column(batch)
    except (pa.ArrowException, OSError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot read Parquet file {path!r}: {detail}") from None


def _batch_column(batch: Any) -> Callable[[str], list[Any]]:
    """The getter of a record batch's columns as Python values."""

    def column_of(name: str) -> list[Any]:
        return list(batch.column(name).to_pylist())

    return column_of
