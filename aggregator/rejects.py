"""Rejected reports: one record per bad report, a reason code, and a writer.

The aggregator never drops a bad report silently. Every report a reader
cannot accept becomes a :class:`Reject` naming the source file, the 1-based
line number (for CSV, the line where the data row starts; for Parquet, the
1-based row number), a short reason code, the detailed message and the raw
text. :class:`RejectsWriter` streams them to a JSON Lines or CSV file (by
extension, optionally gzipped) and counts them by reason.

Reason codes
------------
=======================  =====================================================
``unparseable``          not JSON / not a CSV row / not an object / bad UTF-8
``missing_field``        a field the mechanism needs is absent
``unexpected_field``     a field the mechanism does not use, or an unknown one
``wrong_version``        report format version ``v`` is not supported
``wrong_spec``           the spec fingerprint is not the aggregator's spec
``bad_encoding``         ``bits`` is not base64 / a field has the wrong type
``wrong_length``         ``bits`` has the wrong number of bytes
``bad_padding``          bits set beyond the last bit of the vector
``cohort_out_of_range``  cohort not in [0, num_cohorts)
``value_out_of_domain``  value not in the domain, bucket not in [0, g), or any
                         other bounded field of a report schema out of range
``seed_out_of_range``    OLH/BLH seed outside the hash family
``bad_group``            ``group`` is not a non-empty string of at most 256
                         characters without control characters
``invalid``              anything else
=======================  =====================================================
"""

from __future__ import annotations

import collections
import csv
import dataclasses
import gzip
import io
import re
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Self

from ldp.errors import ParameterError
from ldp.extensions import split_extension
from ldp.jsonlines import json_line
from ldp.shorten import shorten_values

__all__ = ["REASONS", "Reject", "RejectsWriter", "classify_reason"]

REASONS = (
    "unparseable",
    "missing_field",
    "unexpected_field",
    "wrong_version",
    "wrong_spec",
    "bad_encoding",
    "wrong_length",
    "bad_padding",
    "cohort_out_of_range",
    "value_out_of_domain",
    "seed_out_of_range",
    "bad_group",
    "invalid",
)

# (pattern on a ReportError message, reason code), first match wins.
_MESSAGE_REASONS = (
    (r"^report 'group' must", "bad_group"),
    (r"not valid JSON|must be a JSON object|not valid UTF-8|CSV", "unparseable"),
    (r"has no ", "missing_field"),
    (r"version", "wrong_version"),
    (r"report is for spec|'spec' must be|fingerprint", "wrong_spec"),
    (r"'cohort' must be an integer in .*, got -?\d+$", "cohort_out_of_range"),
    (r"'seed' must be an integer in .*, got -?\d+$", "seed_out_of_range"),
    (r"unexpected|unknown fields", "unexpected_field"),
    (r"bytes, expected", "wrong_length"),
    (r"padding", "bad_padding"),
    (r"cohort .* out of range", "cohort_out_of_range"),
    (r"not in the domain|bucket .* out of range|numeric report value", "value_out_of_domain"),
    (r"seed .* outside", "seed_out_of_range"),
    (r"\bout of range\b", "value_out_of_domain"),  # a bounded field a schema declares
    (r"base64|must be|integer|bytes", "bad_encoding"),
)

_FIELDS = ("file", "line", "reason", "detail", "raw")


def classify_reason(message: str) -> str:
    """Reason code (see module docstring) of a :class:`~ldp.errors.ReportError` message."""
    for pattern, reason in _MESSAGE_REASONS:  # compiled on first use (re's cache), not at import
        if re.search(pattern, message):
            return reason
    return "invalid"


@dataclasses.dataclass(frozen=True)
class Reject:
    """One rejected report.

    Parameters
    ----------
    file : str
        Source file.
    line : int
        1-based line (JSON Lines, CSV) or row (Parquet) number.
    reason : str
        Reason code, one of :data:`REASONS`.
    detail : str
        Human-readable message naming what is wrong; a long value it echoes is
        cut to its ends and its length (:func:`ldp.shorten.shorten_values`).
    raw : str
        The report's raw text (Parquet: the row as JSON), whole: the one copy
        of the report a rejects file holds.
    """

    file: str
    line: int
    reason: str
    detail: str
    raw: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "detail", shorten_values(self.detail))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _open_text_out(path: Path) -> IO[str]:
    """The rejects file, UTF-8; text UTF-8 cannot encode is written as ``\\udcff`` escapes, never an error.

    Raw lines are decoded with ``backslashreplace`` already; what remains is a
    file name holding undecodable bytes (Python gives it lone surrogates). In
    a JSON string the escape stands for the same character.
    """
    if path.suffix == ".gz":
        return io.TextIOWrapper(
            gzip.open(path, "wb"), encoding="utf-8", errors="backslashreplace", newline=""
        )
    return open(path, "w", encoding="utf-8", errors="backslashreplace", newline="")


def _format_of(path: Path) -> str:
    suffixes, _ = split_extension(path)
    ext = suffixes[-1] if suffixes else ""
    if ext in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if ext == ".csv":
        return "csv"
    raise ParameterError(
        f"rejects file {str(path)!r} must end in .jsonl or .csv (optionally .gz), got {ext or 'no extension'!r}"
    )


class RejectsWriter:
    """Stream rejects to a file (or nowhere) and count them by reason.

    Use as a context manager, or call :meth:`close`.

    Parameters
    ----------
    path : str or Path, optional
        ``.jsonl``/``.json`` (one JSON object per reject) or ``.csv`` (header
        ``file,line,reason,detail,raw``), optionally ending in ``.gz``. With
        no path, rejects are only counted and the first ``keep`` kept in
        :attr:`examples`.
    keep : int
        How many rejects to keep in memory as examples.
    """

    def __init__(self, path: str | Path | None = None, *, keep: int = 5):
        self.path = None if path is None else Path(path)
        self.counts: collections.Counter[str] = collections.Counter()
        self.examples: list[Reject] = []
        self._keep = keep
        self._stream: IO[str] | None = None
        self._csv = None
        if self.path is not None:
            fmt = _format_of(self.path)
            try:
                self._stream = _open_text_out(self.path)
            except OSError as exc:
                raise ParameterError(
                    f"cannot write rejects file {str(self.path)!r}: {exc.strerror or exc}"
                ) from None
            if fmt == "csv":
                self._csv = csv.writer(self._stream)
                self._csv.writerow(_FIELDS)

    @property
    def total(self) -> int:
        """Number of rejects written so far."""
        return sum(self.counts.values())

    def write(self, rejects: Iterable[Reject]) -> None:
        """Record ``rejects``."""
        for reject in rejects:
            self.counts[reject.reason] += 1
            if len(self.examples) < self._keep:
                self.examples.append(reject)
            if self._csv is not None:
                self._csv.writerow([reject.file, reject.line, reject.reason, reject.detail, reject.raw])
            elif self._stream is not None:
                self._stream.write(json_line(reject.to_dict()) + "\n")

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
