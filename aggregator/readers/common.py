"""What the report readers share: the chunk record, the row-by-row re-check, line blocks.

Each format has its own module (:mod:`ldp.aggregator.readers.jsonl`,
:mod:`ldp.aggregator.readers.csv`, :mod:`ldp.aggregator.readers.parquet`);
:mod:`ldp.aggregator.io` chooses one by extension. Every reader parses a
chunk into Arrow columns and hands them to :func:`_finish`, which validates
them column-wise with the spec's report schema
(:func:`ldp.aggregator.report_columns.validate_columns`) and re-checks the
rows it does not accept one by one with :func:`ldp.report_check.check_report`
(valid after all, or a reject with its reason).
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ldp.aggregator.rejects import Reject, classify_reason
from ldp.aggregator.report_columns import batch_from_checked, concat_batches, validate_columns
from ldp.arrow_numpy import string_array
from ldp.batch import ReportBatch
from ldp.errors import ReportError
from ldp.report import Report
from ldp.report_check import CheckedReport, check_report

__all__ = ["CHUNK_BYTES", "CHUNK_ROWS", "STDIN", "ReadChunk", "bounded_chunk_rows"]

#: Default rows per chunk.
CHUNK_ROWS = 100_000
#: Most bytes of packed bit vectors one chunk may hold (wide unary reports get fewer rows per chunk).
CHUNK_BYTES = 64 << 20


def bounded_chunk_rows(spec: Any, chunk_size: int) -> int:
    """``chunk_size``, lowered so a chunk's bit vectors stay within :data:`CHUNK_BYTES` (at least 1,024 rows).

    A unary report over d = 65,536 values carries 8 KiB: 100,000 rows of it
    would be 800 MB before the accumulator sees them.
    """
    schema = getattr(spec, "report_schema", None)
    width = 0
    for field in getattr(schema, "fields", ()):
        num_bits = getattr(field, "num_bits", None)
        if callable(num_bits):
            width += (num_bits(spec) + 7) // 8
    if width == 0:
        return chunk_size
    return min(chunk_size, max(1024, CHUNK_BYTES // width))


#: Path naming standard input (JSON Lines).
STDIN = "-"


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


def _check_one(
    spec: Any, make_report: Callable[[Any], Report], row: Any
) -> tuple[CheckedReport | None, tuple[str, str] | None]:
    """check_report on ``make_report(row)``: (CheckedReport, None) or (None, (reason, detail))."""
    try:
        return check_report(spec, make_report(row)), None
    except ReportError as exc:
        message = str(exc)
        return None, (classify_reason(message), message)
    except (ValueError, RecursionError, OverflowError) as exc:  # json itself: too many digits, too deep
        return None, ("unparseable", f"report is not valid JSON: {type(exc).__name__}: {exc}"[:300])


def _finish(
    spec: Any,
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
    checked: list[CheckedReport] = []
    rejects = list(extra_rejects)
    for i in np.flatnonzero(~ok).tolist():
        good, bad = _check_one(spec, make_report, i)
        if good is not None:
            checked.append(good)
        elif bad is not None:
            rejects.append(Reject(source, line_of(i), bad[0], bad[1], raw_of(i)))
    if checked:
        batch = concat_batches(spec, [batch, batch_from_checked(spec, checked)])
    rejects.sort(key=lambda r: r.line)
    return ReadChunk(source, batch, tuple(rejects))


def _open_binary(path: str):  # a binary stream: stdin, gzip or a file
    if path == STDIN:
        return io.BufferedReader(sys.stdin.buffer) if hasattr(sys.stdin, "buffer") else io.BytesIO(b"")
    if path.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace").rstrip("\r\n")


#: Bytes read from a stream at a time.
_READ_BYTES = 1 << 24
#: ASCII white space: a line of these only is blank (not a report).
_WHITE_SPACE = b" \t\n\r\f\v"
_IS_WHITE = np.zeros(256, dtype=bool)
_IS_WHITE[np.frombuffer(_WHITE_SPACE, dtype=np.uint8)] = True


def _has_blank_line(data: bytes, ends: np.ndarray) -> bool:
    """Whether a block of lines from :func:`_line_blocks` holds a blank one (ASCII white space only).

    Only lines whose first byte is white space can be blank; those few are
    checked one by one, the rest not read in Python at all.
    """
    if not ends.size:
        return False
    starts = np.concatenate(([0], ends[:-1]))
    first = np.frombuffer(data, dtype=np.uint8)[starts]
    for i in np.flatnonzero(_IS_WHITE[first]).tolist():
        if not data[int(starts[i]) : int(ends[i])].strip(_WHITE_SPACE):
            return True
    return False


def _line_blocks(stream: Any, chunk_size: int) -> Iterator[tuple[bytes, np.ndarray]]:
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


#: Bytes :func:`_line_pieces` allocates first; it doubles its buffer while a read needs more room.
_FIRST_BUFFER = 1 << 16


def _line_pieces(stream: Any, size: int = _READ_BYTES) -> Iterator[bytes]:
    """The bytes of ``stream`` in pieces of whole lines, each at most ``size`` bytes where a line end allows.

    A piece ends just after a newline (the last one may end without); a line
    longer than ``size`` is a piece of its own. Unlike :func:`_line_blocks`,
    nothing is read per line: the cut is one search for the last newline.
    The stream is read into one buffer, reused: a piece is one copy of the
    bytes read (each new block of a file read and joined to the part-line
    before it cost a fresh allocation, whose pages the kernel faulted in, and
    two copies: some 0.07 s of CPU on 100 MB).
    """
    buffer = bytearray(
        min(2 * size, _FIRST_BUFFER)
    )  # grown as reads need room: a byte range may be a few bytes
    view = memoryview(buffer)
    start = filled = 0  # buffer[start:filled]: read, not yet in a piece
    eof = False
    try:
        while True:
            cut = -1
            if filled - start > size:  # a whole piece is there: up to the last newline within size bytes
                cut = buffer.rfind(b"\n", start, start + size)
                if cut < 0:  # a line longer than size: alone in its piece, once its end is read
                    cut = buffer.find(b"\n", start + size, filled)
                    if cut < 0 and eof:  # the last line, without a newline
                        cut = filled - 1
            elif eof and start < filled:  # the rest: its lines, then a last one without a newline
                cut = buffer.rfind(b"\n", start, filled)
                if cut < 0:
                    cut = filled - 1
            elif eof:
                return
            if cut >= 0:
                yield bytes(view[start : cut + 1])
                start = cut + 1
                continue
            if start:  # what is left (usually part of a line) to the front, then read on after it
                view[: filled - start] = view[start:filled]
                filled, start = filled - start, 0
            if len(buffer) - filled < size:  # room for more: a buffer twice as large (a stream may still
                grown = bytearray(2 * len(buffer))  # hold a view of the old one, which cannot be resized)
                grown[:filled] = view[:filled]
                view.release()
                buffer, view = grown, memoryview(grown)
            got = _read_into(stream, view[filled : filled + size])
            eof = not got
            filled += got
    finally:
        view.release()


def _read_into(stream: Any, target: memoryview) -> int:
    """Read up to ``len(target)`` bytes of ``stream`` into ``target``; the number read (0 at the end)."""
    readinto = getattr(stream, "readinto", None)
    if readinto is not None:
        return int(readinto(target) or 0)
    more = stream.read(len(target))
    target[: len(more)] = more
    return len(more)


def _block_lines(data: bytes, count: int) -> list[bytes]:
    """The ``count`` lines of a block from :func:`_line_blocks`, each with its newline (the last may lack one)."""
    lines = data.split(b"\n")
    return [line + b"\n" for line in lines[:count]] if len(lines) > count else lines


def _columns_by_name(names: Sequence[str], arrays: Sequence[pa.Array], n: int) -> dict[str, pa.Array]:
    """Columns by name for :func:`validate_columns`; a name given twice is never accepted column-wise.

    The rows of a file with a duplicated column name are re-checked one by
    one, where a row that sets both is rejected.
    """
    columns: dict[str, pa.Array] = {}
    for name, array in zip(names, arrays):
        if name in columns:
            columns[name] = pa.nulls(n)
            columns[f"{name} (duplicate)"] = string_array(["x"] * n)
        else:
            columns[name] = array
    return columns
