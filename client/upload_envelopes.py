"""The envelope file of a report file: every report wrapped once, with an id it keeps forever.

A report is randomized once; an upload must never re-randomize it, and a
retry must not be counted twice (docs/collector.md#retries). So the reports
of a JSON Lines file are wrapped into envelopes ``{"id", "t", "report"}``
written to an envelope file (:func:`make_envelopes`), created exclusively
and atomically; every later upload of the same reports, including a rerun
after a crash, reuses that file byte for byte: same ids, same reports.

Standard library only (with :mod:`ldp.errors` and :mod:`ldp.atomic`).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ldp.atomic import create_private_file
from ldp.errors import InputError, ParameterError

__all__ = [
    "Envelopes",
    "ReportLines",
    "check_fingerprint",
    "default_envelopes_path",
    "envelope_file",
    "make_envelopes",
    "read_reports",
    "report_lines",
]

#: An envelope line as :func:`make_envelopes` writes it: id, t, then the report's bytes as in the report file.
_ENVELOPE_LINE = re.compile(rb'\{"id":"([A-Za-z0-9_-]{22})","t":(0|[1-9][0-9]*),"report":(.*)\}', re.DOTALL)


@dataclasses.dataclass(frozen=True)
class ReportLines:
    """The reports of a JSON Lines report file, as bytes.

    Attributes
    ----------
    path : Path
        The report file.
    lines : list of bytes
        Each report's JSON exactly as in the file (without surrounding whitespace).
    numbers : list of int
        The line number (from 1) of each report; blank lines hold none.
    specs : list of str
        Each report's ``spec`` fingerprint.
    """

    path: Path
    lines: list[bytes]
    numbers: list[int]
    specs: list[str]


@dataclasses.dataclass(frozen=True)
class Envelopes:
    """The envelope file of a report file.

    Attributes
    ----------
    path : Path
        The envelope file.
    lines : list of bytes
        One envelope per report, in the report file's order (no line ends).
    created : bool
        True when this call created the file; False when it existed (resumed) or
        a concurrent call created it first.
    numbers : list of int
        The line number of each envelope's report in the report file (from 1).
    """

    path: Path
    lines: list[bytes]
    created: bool
    numbers: list[int]


def read_reports(reports_path: str | os.PathLike[str]) -> ReportLines:
    """The reports of the JSON Lines file ``reports_path`` (one report object a line, as ``ldp encode`` writes).

    Raises
    ------
    ParameterError
        If the file is missing or unreadable, holds no report, or a line is not
        a JSON object with a ``spec`` fingerprint.
    """
    path = Path(reports_path)
    name = str(reports_path)
    if path.suffix.lower() in (".csv", ".parquet", ".gz"):
        raise InputError.naming(
            "{reports_path=} is not JSON Lines: upload reports written by 'ldp encode -o reports.jsonl'",
            reports_path=name,
        )
    try:
        with open(path, "rb") as handle:
            raw_lines = handle.read().split(b"\n")
    except FileNotFoundError:
        raise InputError.naming("{reports_path=} does not exist", reports_path=name) from None
    except OSError as exc:
        raise InputError.naming(f"cannot read {{reports_path=}}: {exc.strerror}", reports_path=name) from None
    lines: list[bytes] = []
    numbers: list[int] = []
    specs: list[str] = []
    for number, raw in enumerate(raw_lines, start=1):
        line = raw.strip()
        if not line:
            continue
        specs.append(_report_spec(line, number, name))
        lines.append(line)
        numbers.append(number)
    if not lines:
        raise InputError.naming("{reports_path=} holds no reports", reports_path=name)
    return ReportLines(path, lines, numbers, specs)


def report_lines(reports: Iterable[Any], name: str = "<memory>") -> ReportLines:
    """Reports held in memory as :class:`ReportLines` (what :func:`read_reports` gives for a file).

    Each report is a :class:`~ldp.report.Report` (its ``to_json()``), a dict,
    or a JSON text, as ``ldp encode`` writes one line. ``name`` stands for
    the report file in messages; report numbers count from 1.

    Raises
    ------
    InputError
        If there is no report, or one is not a JSON object with a ``spec`` fingerprint.
    """
    lines: list[bytes] = []
    for report in reports:
        if hasattr(report, "to_json"):
            text = report.to_json()
        elif isinstance(report, dict):
            text = json.dumps(report, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        else:
            text = report
        line = text.encode("utf-8").strip() if isinstance(text, str) else b""
        lines.append(line)
    numbers = list(range(1, len(lines) + 1))
    specs = [_report_spec(line, number, name) for line, number in zip(lines, numbers)]
    if not lines:
        raise InputError("no reports given: nothing to upload")
    return ReportLines(Path(name), lines, numbers, specs)


def _report_spec(line: bytes, number: int, name: str) -> str:
    """The ``spec`` fingerprint of one report line, or an InputError naming the line."""
    try:
        report = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        report = None
    if not isinstance(report, dict) or not isinstance(report.get("spec"), str):
        raise InputError.naming(
            f"line {number} of {{reports_path=}} is not a report (a JSON object with a 'spec' fingerprint, "
            "as 'ldp encode' writes)",
            reports_path=name,
        )
    return report["spec"]


def check_fingerprint(reports: ReportLines, fingerprint: str) -> None:
    """Refuse reports made with another spec than the one of ``fingerprint`` (the task's).

    Raises
    ------
    ParameterError
        Naming the first report of another spec, its fingerprint and the task's.
    """
    for number, spec in zip(reports.numbers, reports.specs):
        if spec != fingerprint:
            others = Counter(s for s in reports.specs if s != fingerprint)
            raise InputError.naming(
                f"the reports in {{reports_path=}} are for spec fingerprint {spec} (line {number}; "
                f"{sum(others.values())} of {len(reports.specs)} reports differ), but the task takes spec "
                f"fingerprint {fingerprint}: encode the values with the task's spec "
                "(GET /v1/tasks/{task}/spec); nothing was uploaded",
                reports_path=str(reports.path),
            )


def default_envelopes_path(reports_path: str | os.PathLike[str]) -> Path:
    """The envelope file beside ``reports_path``: ``reports.jsonl`` gives ``reports.envelopes.jsonl``."""
    path = Path(reports_path)
    stem = path.name[: -len(".jsonl")] if path.name.lower().endswith(".jsonl") else path.name
    return path.with_name(f"{stem}.envelopes.jsonl")


def _new_id() -> bytes:
    """16 CSPRNG bytes in base64url without padding (22 characters)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=")


def _envelope(report: bytes, t: int) -> bytes:
    return b'{"id":"' + _new_id() + b'","t":' + str(t).encode("ascii") + b',"report":' + report + b"}"


def _truncated_time(time_precision: int, now: float | None) -> int:
    if isinstance(time_precision, bool) or not isinstance(time_precision, int) or time_precision < 1:
        raise ParameterError.naming(
            "{time_precision=} must be a positive whole number of seconds", time_precision=time_precision
        )
    current = time.time() if now is None else now
    if not math.isfinite(current) or current < 0:
        raise ParameterError.naming("{now=} must be a non-negative Unix time", now=now)
    seconds = int(current)
    return seconds - seconds % time_precision


def make_envelopes(
    reports_path: str | os.PathLike[str],
    envelopes_path: str | os.PathLike[str],
    time_precision: int,
    now: float | None = None,
    *,
    fingerprint: str | None = None,
) -> Envelopes:
    """Wrap every report of ``reports_path`` into an envelope, once: the envelope file ``envelopes_path``.

    Each envelope is ``{"id": 16 CSPRNG bytes in base64url, "t": now truncated
    to time_precision, "report": the report}``, the report's bytes as in the
    report file. The file is created exclusively and atomically (complete or
    absent, mode 0600). If it already exists (an earlier run, or a concurrent
    one that won the race) it is reused as is, after checking it holds
    exactly these reports in this order: a report keeps its id forever, so a
    retry is never counted twice.

    Parameters
    ----------
    reports_path : path
        The JSON Lines report file (``ldp encode -o reports.jsonl``).
    envelopes_path : path
        The envelope file (JSON Lines); never the report file itself.
    time_precision : int
        The task's time precision, seconds.
    now : float, optional
        Unix time of the reports (default: the current time).
    fingerprint : str, optional
        The task's spec fingerprint: every report must carry it (checked before
        anything is written).

    Returns
    -------
    Envelopes

    Raises
    ------
    ParameterError
        A bad report file, reports of another spec, or an existing envelope file
        that does not match the reports.
    """
    reports = read_reports(reports_path)
    if fingerprint is not None:
        check_fingerprint(reports, fingerprint)
    return envelope_file(reports, Path(envelopes_path), time_precision, now)


def envelope_file(reports: ReportLines, path: Path, time_precision: int, now: float | None) -> Envelopes:
    """The envelopes of ``reports`` in the file ``path``: created once (exclusively), else the existing ones, checked."""
    t = _truncated_time(time_precision, now)
    if os.path.lexists(path):
        return Envelopes(path, _load_envelopes(path, reports), False, reports.numbers)
    lines = [_envelope(report, t) for report in reports.lines]
    if create_private_file(path, b"".join(line + b"\n" for line in lines)):
        return Envelopes(path, lines, True, reports.numbers)
    # a concurrent run created it first: use its envelopes
    return Envelopes(path, _load_envelopes(path, reports), False, reports.numbers)


def _load_envelopes(path: Path, reports: ReportLines) -> list[bytes]:
    """The envelope lines of the existing file ``path``, checked against ``reports``."""

    def mismatch(why: str) -> InputError:
        return InputError.naming(
            f"{{envelopes_path=}} does not match the reports in {{reports_path=}}: {why}. An envelope file "
            "belongs to one report file and is reused as is (same ids) on every retry; if its envelopes were "
            "uploaded, new ids for the same reports would count them twice. For other reports choose another "
            "{envelopes_path}",
            envelopes_path=str(path),
            reports_path=str(reports.path),
        )

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InputError.naming(
            f"cannot read {{envelopes_path=}}: {exc.strerror}", envelopes_path=str(path)
        ) from None
    if data and not data.endswith(b"\n"):
        raise mismatch("its last line is incomplete")
    lines = data.split(b"\n")[:-1] if data else []
    if len(lines) != len(reports.lines):
        raise mismatch(f"it holds {len(lines)} envelopes for {len(reports.lines)} reports")
    for index, (line, report) in enumerate(zip(lines, reports.lines)):
        match = _ENVELOPE_LINE.fullmatch(line)
        if match is None:
            raise mismatch(f"line {index + 1} is not an envelope written by ldp upload")
        if match[3] != report:
            raise mismatch(f"envelope {index + 1} holds another report than line {reports.numbers[index]}")
    return lines
