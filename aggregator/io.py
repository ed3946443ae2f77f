"""Read report files in bounded-memory chunks: valid reports as batches, bad ones as rejects.

Formats are chosen by extension (docs/report-format.md):

==========================  ==================================================
``.jsonl`` ``.ndjson``      one JSON report per line (``.json`` too)
``.csv``                    header row of field names, one report per row
``.parquet`` ``.pq``        columns named like the JSON fields, ``bits`` binary
``.gz`` suffix              gzip-compressed JSON Lines or CSV
``-``                       JSON Lines on standard input
a directory                 the Parquet files under it (a dataset partitioned
                            by window, ``ldp task export --out``;
                            :mod:`ldp.aggregator.datasets`)
==========================  ==================================================

One module per format reads its files: :mod:`ldp.aggregator.readers.jsonl`,
:mod:`ldp.aggregator.readers.csv` and :mod:`ldp.aggregator.readers.parquet`, with
what they share in :mod:`ldp.aggregator.readers.common`; this module picks one
by extension and keeps the public names. What a report of the spec carries
(field names, and how each field's column is converted and checked) is the
spec's report schema (:mod:`ldp.report_schema`), in every format.

Each file is read ``chunk_size`` rows at a time (Parquet with
:meth:`pyarrow.parquet.ParquetFile.iter_batches`; JSON Lines as a byte block
of whole lines parsed at once by :func:`pyarrow.json.read_json`; CSV as
pieces of whole lines parsed at once by :func:`pyarrow.csv.read_csv`, quoted
fields included as standard tools write them, and with :mod:`csv`, which
knows quoted fields spanning lines, from the first quote that does not
enclose a whole field on its line), so memory stays bounded whatever the file size. A
block Arrow cannot read exactly as the rules below say (a blank line, a
field of another type, a wrong number of CSV fields, text that is not UTF-8)
is read line by line instead, so every bad line is rejected alone. Each chunk is validated column-wise
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

import importlib
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ldp.aggregator.readers.common import CHUNK_ROWS, STDIN, ReadChunk, bounded_chunk_rows
from ldp.errors import InputError, ParameterError
from ldp.extensions import split_extension

if TYPE_CHECKING:  # at run time __getattr__ imports a format's reader module on first use
    from ldp.aggregator.readers.csv import csv_header_for_ranges, read_csv_stream
    from ldp.aggregator.readers.jsonl import read_jsonl_stream
    from ldp.aggregator.readers.parquet import read_parquet_row_groups

__all__ = [
    "CHUNK_ROWS",
    "STDIN",
    "ReadChunk",
    "bounded_chunk_rows",
    "check_paths",
    "csv_header_for_ranges",
    "read_csv_stream",
    "read_jsonl_stream",
    "read_parquet_row_groups",
    "read_report_file",
    "read_reports",
    "report_format",
]

#: Each format's reader module: a file imports only its own (reading CSV loads neither pyarrow.parquet nor pyarrow.json).
_MODULES = {
    "jsonl": "ldp.aggregator.readers.jsonl",
    "csv": "ldp.aggregator.readers.csv",
    "parquet": "ldp.aggregator.readers.parquet",
}
#: The public readers of byte ranges and row groups, by the module that defines them.
_LAZY = {
    "csv_header_for_ranges": _MODULES["csv"],
    "read_csv_stream": _MODULES["csv"],
    "read_jsonl_stream": _MODULES["jsonl"],
    "read_parquet_row_groups": _MODULES["parquet"],
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ldp.aggregator.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _reader(fmt: str) -> Callable[[str, Any, int], Iterator[ReadChunk]]:
    """The whole-file reader of a format (``_read_<format>`` of its module)."""
    reader: Callable[[str, Any, int], Iterator[ReadChunk]] = getattr(
        importlib.import_module(_MODULES[fmt]), f"_read_{fmt}"
    )
    return reader


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
    raise InputError(
        f"report file {str(path)!r}: cannot tell its format from the extension {''.join(suffixes) or '(none)'!r}; "
        "expected .jsonl, .csv or .parquet (.jsonl.gz and .csv.gz accepted)"
    )


def read_reports(
    paths: Iterable[str | Path], spec: Any, *, chunk_size: int = CHUNK_ROWS
) -> Iterator[ReadChunk]:
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

    A directory stands for the Parquet report files under it (a dataset such
    as ``ldp task export --out`` writes; :func:`ldp.aggregator.datasets.expand_datasets`).

    Raises
    ------
    ParameterError
        A path with an unknown extension, a missing file, a directory without
        Parquet report files, or standard input (``-``) given more than once
        (it can be read only once).
    """
    from ldp.aggregator.datasets import expand_datasets

    checked = []
    for path in expand_datasets(paths):
        report_format(path)
        if str(path) != STDIN and not Path(path).is_file():
            raise InputError(f"report file {str(path)!r} does not exist or is not a file")
        checked.append(str(path))
    if checked.count(STDIN) > 1:
        raise ParameterError(
            f"standard input ('{STDIN}') is given {checked.count(STDIN)} times as a report file; it can be read only once"
        )
    return checked


def read_report_file(path: str | Path, spec: Any, *, chunk_size: int = CHUNK_ROWS) -> Iterator[ReadChunk]:
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
    reader = _reader(fmt)
    try:
        yield from reader(str(path), spec, bounded_chunk_rows(spec, chunk_size))
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read report file {str(path)!r}: {exc}") from None
