"""Split report files into partitions that can be read independently, and read one.

A *partition* is a piece of one report file that a worker can read on its
own, with bounded memory, and turn into an accumulator plus its rejects:

=========================  ====================================================
Parquet                    a run of consecutive row groups (first row number
                           known from the file's metadata)
JSON Lines (uncompressed)  a byte range; it holds every line that *starts*
                           inside the range, so lines are never cut
CSV (uncompressed,         a byte range, as for JSON Lines; the ranges after
no ``"`` in the file)      the first are given the header row
CSV with quotes, ``.gz``,  the whole file (a quoted CSV field may span lines,
stdin                      and a compressed stream cannot be entered in the
                           middle)
=========================  ====================================================

Line numbers in rejects are global to the file. A Parquet partition knows its
first row number in advance; a JSON Lines byte range does not (counting the
lines before it would mean reading them), so :func:`read_partition` numbers
its lines from 1 and returns how many lines it read, and the engine adds the
line counts of the file's earlier partitions (:func:`renumber`). The result is
the same rejects, in the same order, as the single-process reader
(:func:`ldp.aggregator.io.read_reports`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Self

import pyarrow as pa

import ldp.aggregator.io as report_io  # its format readers load on first use
from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.io import (
    CHUNK_ROWS,
    STDIN,
    ReadChunk,
    bounded_chunk_rows,
    check_paths,
    read_report_file,
    report_format,
)
from ldp.aggregator.rejects import Reject
from ldp.errors import InputError, ParameterError

__all__ = [
    "PARTITION_BYTES",
    "PARTITION_ROWS",
    "Partition",
    "PartitionResult",
    "check_paths",
    "plan_partitions",
    "read_partition",
    "renumber",
]

#: Target size of a JSON Lines byte-range partition.
PARTITION_BYTES = 64 << 20
#: Target rows of a Parquet partition (whole row groups are never split).
PARTITION_ROWS = 1 << 20
#: Largest read from a JSON Lines byte range: a worker holds a few such blocks
#: (read buffer, line-end mask, parsed chunk), so this bounds its memory.
RANGE_READ_BYTES = 4 << 20


@dataclasses.dataclass(frozen=True)
class Partition:
    """One independently readable piece of a report file.

    Attributes
    ----------
    source : str
        The file name as the user gave it (used in rejects).
    location : str
        The path opened by the worker (absolute, so workers with another
        working directory find it; ``-`` for standard input).
    kind : str
        ``"parquet"`` (row groups ``start`` … ``stop - 1``), ``"bytes"``
        (JSON Lines starting in bytes ``[start, stop)``), ``"csv-bytes"``
        (CSV lines starting there) or ``"file"`` (all of it).
    start, stop : int
        Range of row groups or bytes (unused for ``"file"``).
    first_line : int
        1-based line/row number of the partition's first report when known
        in advance (Parquet, whole files); 0 for byte ranges, whose line
        numbers are fixed by :func:`renumber`.
    header : tuple of str, optional
        The file's CSV header, for a CSV byte range after the one holding it.
    """

    source: str
    location: str
    kind: str
    start: int = 0
    stop: int = 0
    first_line: int = 1
    header: tuple[str, ...] | None = None

    @property
    def byte_range(self) -> bool:
        """Whether this is a byte range of a text file (lines numbered from 1 within it)."""
        return self.kind in ("bytes", "csv-bytes")


@dataclasses.dataclass
class PartitionResult:
    """What reading one partition gives.

    Attributes
    ----------
    accumulator : Accumulator
        The partition's valid reports.
    valid : int
        How many valid reports it held.
    rejects : list of Reject
        Its bad reports (file = the partition's location; byte ranges
        numbered from line 1 of the range).
    lines : int
        Lines read (byte ranges only; blank lines included), for renumbering.
    """

    accumulator: Accumulator
    valid: int
    rejects: list[Reject]
    lines: int = 0


def plan_partitions(
    paths: Sequence[str | Path],
    *,
    partition_bytes: int = PARTITION_BYTES,
    partition_rows: int = PARTITION_ROWS,
) -> list[Partition]:
    """Partitions of ``paths``, file by file and in file order.

    Parameters
    ----------
    paths : sequence of str or Path
        Report files (``-`` is standard input).
    partition_bytes : int
        Target bytes of a JSON Lines or CSV partition.
    partition_rows : int
        Target rows of a Parquet partition (a partition holds at least one
        whole row group).

    Raises
    ------
    ParameterError
        For a missing file, an unknown extension or an unreadable Parquet footer.
    """
    if partition_bytes < 1 or partition_rows < 1:
        raise ParameterError(
            f"partition sizes must be positive, got {partition_bytes} bytes and {partition_rows} rows"
        )
    partitions: list[Partition] = []
    for path in check_paths(paths):
        location = path if path == STDIN else os.path.abspath(path)
        fmt = report_format(path)
        if fmt == "parquet":
            partitions.extend(_parquet_partitions(path, location, partition_rows))
        elif path == STDIN or path.lower().endswith(".gz"):
            partitions.append(Partition(path, location, "file"))
        elif fmt == "jsonl":
            partitions.extend(_byte_ranges(path, location, "bytes", 0, partition_bytes, None))
        else:
            partitions.extend(_csv_partitions(path, location, partition_bytes))
    return partitions


def _byte_ranges(
    path: str, location: str, kind: str, start: int, partition_bytes: int, header
) -> list[Partition]:
    """Byte ranges of about ``partition_bytes`` covering ``[start, size)``, the first from ``start``."""
    size = os.path.getsize(location)
    count = max(1, math.ceil((size - start) / partition_bytes))
    bounds = [start + (size - start) * i // count for i in range(count + 1)]
    return [
        Partition(path, location, kind, bounds[i], bounds[i + 1], first_line=0, header=header)
        for i in range(count)
    ]


def _csv_partitions(path: str, location: str, partition_bytes: int) -> list[Partition]:
    """A CSV file as byte ranges when every line is one row (quotes only around whole fields of a line), else whole.

    The first range holds the header line and reads it itself; the others
    start after it and are given it.
    """
    if os.path.getsize(location) <= partition_bytes:
        return [Partition(path, location, "file")]
    try:
        found = report_io.csv_header_for_ranges(location)
    except OSError as exc:
        raise InputError(f"cannot read report file {path!r}: {exc.strerror or exc}") from None
    if found is None:
        return [Partition(path, location, "file")]
    header, header_end = found
    rest = _byte_ranges(path, location, "csv-bytes", header_end, partition_bytes, header)
    first = dataclasses.replace(rest[0], start=0, header=None)
    return [first, *rest[1:]]


def _parquet_partitions(path: str, location: str, partition_rows: int) -> list[Partition]:
    import pyarrow.parquet as pq  # here: text files need none of it

    try:
        metadata = pq.ParquetFile(location).metadata
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read Parquet file {path!r}: {exc}") from None
    parts, first_row, group, taken = [], 1, 0, 0
    while group < metadata.num_row_groups:
        start, rows = group, 0
        while group < metadata.num_row_groups and (
            rows == 0 or rows + metadata.row_group(group).num_rows <= partition_rows
        ):
            rows += metadata.row_group(group).num_rows
            group += 1
        parts.append(Partition(path, location, "parquet", start, group, first_line=first_row + taken))
        taken += rows
    if not parts:  # no row groups: still read the file (an empty file)
        parts.append(Partition(path, location, "file"))
    return parts


def read_partition(partition: Partition, spec, chunk_size: int = CHUNK_ROWS) -> PartitionResult:
    """Read one partition into a fresh accumulator (runs on a worker).

    Memory stays bounded by ``chunk_size`` reports plus the partition's rejects.
    """
    accumulator = make_aggregator(spec)
    valid = 0
    rejects: list[Reject] = []
    stream = _ByteRange(partition.location, partition.start, partition.stop) if partition.byte_range else None
    chunk_size = bounded_chunk_rows(spec, chunk_size)
    try:
        for chunk in _chunks(partition, spec, chunk_size, stream):
            if len(chunk.batch):
                accumulator.add_batch(chunk.batch)
                valid += len(chunk.batch)
            rejects.extend(chunk.rejects)
    except OSError as exc:
        raise InputError(f"cannot read report file {partition.source!r}: {exc}") from None
    finally:
        if stream is not None:
            stream.close()
    return PartitionResult(accumulator, valid, rejects, stream.lines if stream is not None else 0)


def _chunks(partition: Partition, spec, chunk_size: int, stream: _ByteRange | None) -> Iterator[ReadChunk]:
    if partition.kind == "bytes":
        yield from report_io.read_jsonl_stream(stream, partition.location, spec, chunk_size=chunk_size)
    elif partition.kind == "csv-bytes":
        yield from report_io.read_csv_stream(
            stream,
            partition.location,
            spec,
            chunk_size=chunk_size,
            header=partition.header,
            strip_bom=partition.start == 0,
        )
    elif partition.kind == "parquet":
        groups = range(partition.start, partition.stop)
        yield from report_io.read_parquet_row_groups(
            partition.location, spec, groups, first_row=partition.first_line, chunk_size=chunk_size
        )
    else:
        yield from read_report_file(partition.location, spec, chunk_size=chunk_size)


def renumber(partition: Partition, rejects: Sequence[Reject], line_offset: int) -> list[Reject]:
    """Rejects of a partition with the user's file name and line numbers global to the file.

    ``line_offset`` is the number of lines of the file's earlier byte-range
    partitions (0 for other partitions, whose numbers are already global).
    """
    return [
        dataclasses.replace(
            r, file=partition.source, line=r.line + (line_offset if partition.byte_range else 0)
        )
        for r in rejects
    ]


class _ByteRange:
    """A read-only binary stream of the lines of a file that start in bytes ``[start, stop)``.

    The line that straddles ``stop`` is read to its end; the one straddling
    ``start`` belongs to the previous range and is skipped. :attr:`lines`
    counts the lines returned (a last line without a newline counts too).
    """

    def __init__(self, path: str, start: int, stop: int):
        try:
            self._file = open(path, "rb")  # noqa: SIM115 - the range owns it; close() and __exit__ close it
        except OSError as exc:
            raise InputError(f"cannot read report file {path!r}: {exc}") from None
        self._stop = stop
        self._pos = start
        if start > 0:
            self._file.seek(start - 1)
            self._pos = start - 1 + len(self._file.readline())
        self._done = self._pos >= stop
        self._newlines = 0
        self._last = b"\n"

    @property
    def lines(self) -> int:
        return self._newlines + (0 if self._last == b"\n" else 1)

    def read(self, size: int = -1) -> bytes:
        if self._done:
            return b""
        want = min(RANGE_READ_BYTES, self._stop - self._pos)
        if size is not None and size >= 0:
            want = min(want, size)
        data = self._file.read(want)
        if not data:
            self._done = True
            return b""
        self._pos += len(data)
        if self._pos >= self._stop:
            if not data.endswith(b"\n"):
                data += self._file.readline()  # finish the line that started before stop
            self._done = True
        self._newlines += data.count(b"\n")
        self._last = data[-1:]
        return data

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
