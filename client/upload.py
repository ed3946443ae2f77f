"""Send reports made by ``ldp encode`` to a collector (docs/collector.md#uploading-reports).

A report is randomized once; an upload must never re-randomize it, and a
retry must not be counted twice (docs/collector.md#retries). So the reports
of a JSON Lines file are first wrapped into envelopes ``{"id", "t",
"report"}`` written to an envelope file (:func:`make_envelopes`), created
exclusively and atomically; every later upload of the same reports,
including a rerun after a crash, reuses that file byte for byte: same ids,
same reports. The collector answers a known id ``replayed`` and never counts
it again.

:class:`Uploader` sends envelope lines in batches within the collector's
limits (1,000 envelopes, 1 MiB), retrying connection errors, timeouts, 5xx
and 429 with exponential backoff and jitter (honouring ``Retry-After``), and
resending the same bytes each time. A 4xx problem document stops it with the
server's detail (:class:`UploadError`). :func:`upload_reports` does the
whole job: the task's fingerprint and time precision (:func:`fetch_task`),
the fingerprint check, the envelope file, the upload.

HTTP goes through :mod:`urllib.request` only: this module imports nothing
beyond the standard library and :mod:`ldp.errors` / :mod:`ldp.atomic` /
:mod:`ldp.redact`.

A collector URL may carry credentials for a proxy in front of the collector
(``https://user:PASSWORD@host``): they are sent as HTTP Basic
authorization (never on a redirect) and the URL is never shown with its
password: every message and error shows :func:`ldp.redact.redact_url` of it.
"""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import http.client
import json
import math
import os
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ldp.atomic import create_private_file
from ldp.errors import LDPError, ParameterError
from ldp.redact import redact_url

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_ENVELOPES",
    "Envelopes",
    "Rejected",
    "ReportLines",
    "TaskInfo",
    "UploadError",
    "UploadSummary",
    "Uploader",
    "check_fingerprint",
    "default_envelopes_path",
    "fetch_task",
    "make_envelopes",
    "read_reports",
    "upload_reports",
]

#: The collector's limits of one upload request (docs/collector.md#upload).
MAX_ENVELOPES = 1_000
MAX_BODY_BYTES = 1 << 20
#: Envelopes are sent as JSON Lines.
CONTENT_TYPE = "application/x-ndjson"
#: HTTP statuses worth a retry with the same bytes: rate limited, or the server is failing for now.
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: An envelope line as :func:`make_envelopes` writes it: id, t, then the report's bytes as in the report file.
_ENVELOPE_LINE = re.compile(rb'\{"id":"([A-Za-z0-9_-]{22})","t":(0|[1-9][0-9]*),"report":(.*)\}', re.DOTALL)
_TASK_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")

Progress = Callable[[int], None]


class UploadError(LDPError):
    """The collector refused an upload, answered what no collector does, or could not be reached.

    Attributes
    ----------
    status : int or None
        The HTTP status of the last reply (None when there was no reply).
    detail : str or None
        The ``detail`` of the server's problem document, when it sent one.
    acknowledged : int
        Envelopes the collector had acknowledged before the error (they are stored or rejected).
    """

    def __init__(
        self, message: str, *, status: int | None = None, detail: str | None = None, acknowledged: int = 0
    ) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
        self.acknowledged = acknowledged


# -- report and envelope files ------------------------------------------------


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
        raise ParameterError.naming(
            "{reports_path=} is not JSON Lines: upload reports written by 'ldp encode -o reports.jsonl'",
            reports_path=name,
        )
    try:
        with open(path, "rb") as handle:
            raw_lines = handle.read().split(b"\n")
    except FileNotFoundError:
        raise ParameterError.naming("{reports_path=} does not exist", reports_path=name) from None
    except OSError as exc:
        raise ParameterError.naming(
            f"cannot read {{reports_path=}}: {exc.strerror}", reports_path=name
        ) from None
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
        raise ParameterError.naming("{reports_path=} holds no reports", reports_path=name)
    return ReportLines(path, lines, numbers, specs)


def _report_spec(line: bytes, number: int, name: str) -> str:
    """The ``spec`` fingerprint of one report line, or a ParameterError naming the line."""
    try:
        report = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        report = None
    if not isinstance(report, dict) or not isinstance(report.get("spec"), str):
        raise ParameterError.naming(
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
            raise ParameterError.naming(
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
    return _make_envelopes(reports, Path(envelopes_path), time_precision, now)


def _make_envelopes(reports: ReportLines, path: Path, time_precision: int, now: float | None) -> Envelopes:
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

    def mismatch(why: str) -> ParameterError:
        return ParameterError.naming(
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
        raise ParameterError.naming(
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


# -- HTTP ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Failure:
    """An attempt worth retrying: why, and the server's Retry-After in seconds (if any)."""

    reason: str
    status: int | None = None
    retry_after: float | None = None


def _retry_after(value: str | None, now: float) -> float | None:
    """Seconds from a Retry-After header: delta seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def _problem(status: int, body: bytes) -> tuple[str, str | None]:
    """``(message, detail)`` of a problem document (RFC 9457) or any other error body."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        document = None
    if isinstance(document, dict) and isinstance(document.get("detail"), str):
        title = document.get("title")
        heading = f"{status} {title}" if isinstance(title, str) else str(status)
        return f"{heading}: {document['detail']}", document["detail"]
    text = body[:200].decode("utf-8", "replace").strip()
    return f"{status}{': ' + text if text else ''}", None


@dataclasses.dataclass(frozen=True)
class _Target:
    """A collector URL as used: where requests go, what messages show, the credentials of its user part.

    Attributes
    ----------
    url : str
        ``scheme://host[:port][/path]`` without the user part or a final ``/``.
    shown : str
        The URL as given, its password masked (:func:`ldp.redact.redact_url`), without a final ``/``.
    authorization : str or None
        ``Basic ...`` of the user part's user and password, when there is one.
    """

    url: str
    shown: str
    authorization: str | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass
class _Http:
    """Requests to one collector with retries and backoff (the same bytes each time)."""

    target: _Target
    timeout: float
    retries: int
    backoff: float
    max_backoff: float
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = secrets.SystemRandom().random  # the client draws nothing from a non-CSPRNG
    attempts: int = 0
    retried: int = 0

    def request(self, method: str, path: str, body: bytes | None = None) -> Any:
        """The JSON of a 200 reply, retrying transient failures; :class:`UploadError` otherwise."""
        failures = 0
        while True:
            self.attempts += 1
            outcome = self._attempt(method, path, body)
            if not isinstance(outcome, _Failure):
                return outcome
            failures += 1
            if failures > self.retries:
                raise UploadError(
                    f"gave up after {failures} attempts to reach {self.target.shown}: {outcome.reason}",
                    status=outcome.status,
                )
            self.retried += 1
            self.sleep(self.delay(failures, outcome.retry_after))

    def delay(self, failures: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter (half fixed, half random), at least the server's Retry-After."""
        ceiling = min(self.max_backoff, self.backoff * 2 ** (failures - 1))
        wait = ceiling / 2 + self.jitter() * ceiling / 2
        return max(wait, retry_after or 0.0)

    def _attempt(self, method: str, path: str, body: bytes | None) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = CONTENT_TYPE
        request = urllib.request.Request(self.target.url + path, data=body, method=method, headers=headers)
        if self.target.authorization is not None:
            request.add_unredirected_header(
                "Authorization", self.target.authorization
            )  # never to another host
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                status, data = reply.status, reply.read()
        except urllib.error.HTTPError as error:
            with error:
                return self._http_error(error.code, _read_quietly(error), error.headers.get("Retry-After"))
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            return _Failure(f"{type(exc).__name__}: {reason}")
        if status != 200:
            raise UploadError(
                f"unexpected reply from {self.target.shown}{path}: HTTP {status}", status=status
            )
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError):
            raise UploadError(
                f"the reply of {self.target.shown}{path} is not JSON; is {self.target.shown} an ldp collector?",
                status=status,
            ) from None

    def _http_error(self, status: int, body: bytes, retry_after: str | None) -> _Failure:
        message, detail = _problem(status, body)
        if status in _RETRY_STATUSES:
            return _Failure(f"HTTP {message}", status, _retry_after(retry_after, time.time()))
        raise UploadError(f"the collector refused the request: {message}", status=status, detail=detail)


def _read_quietly(error: urllib.error.HTTPError) -> bytes:
    try:
        return error.read()
    except (OSError, http.client.HTTPException):
        return b""


def _check_base_url(base_url: str) -> _Target:
    """The collector at ``base_url``; a ParameterError (showing the URL without its secrets) if it is none."""
    shown = redact_url(base_url)
    try:
        parts = urllib.parse.urlsplit(base_url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.query
        ok = ok and not parts.fragment and (parts.port is None or parts.port > 0)  # .port: ValueError if bad
    except (ValueError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise ParameterError.naming(
            "{base_url=} is not a collector URL such as http://127.0.0.1:8000", base_url=shown
        )
    userinfo, at, host = parts.netloc.rpartition("@")
    authorization = None
    if at:
        user, _, password = userinfo.partition(":")
        credentials = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
        authorization = "Basic " + base64.b64encode(credentials.encode("utf-8")).decode("ascii")
    url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))
    return _Target(url.rstrip("/"), shown.rstrip("/"), authorization)


def _task_path(task_id: str) -> str:
    if not isinstance(task_id, str) or not _TASK_ID.fullmatch(task_id):
        raise ParameterError.naming(
            "{task_id=} is not a task id (base64url characters, as 'ldp task create' prints)",
            task_id=task_id,
        )
    return f"/v1/tasks/{task_id}"


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """What a client needs of a task (``GET /v1/tasks/{task}``).

    Attributes
    ----------
    task_id : str
    mechanism : str
    fingerprint : str
        The spec fingerprint reports must carry.
    time_precision : int
        Seconds; envelope times are multiples of it.
    description : dict
        The whole reply.
    """

    task_id: str
    mechanism: str
    fingerprint: str
    time_precision: int
    description: dict[str, Any]


def fetch_task(base_url: str, task_id: str, *, timeout: float = 30.0, retries: int = 3) -> TaskInfo:
    """The public description of ``task_id`` on the collector at ``base_url``.

    Raises
    ------
    ParameterError
        A malformed URL or task id.
    UploadError
        The collector does not know the task (its detail), cannot be reached
        after ``retries`` retries, or replies with something that is not a task.
    """
    http = _Http(_check_base_url(base_url), timeout, retries, backoff=0.5, max_backoff=5.0)
    reply = http.request("GET", _task_path(task_id))
    try:
        return TaskInfo(
            task_id=task_id,
            mechanism=str(reply["mechanism"]),
            fingerprint=_string(reply["fingerprint"]),
            time_precision=_positive_int(reply["time_precision"]),
            description=reply,
        )
    except (KeyError, TypeError, ValueError):
        raise UploadError(
            f"{http.target.shown} did not describe task {task_id!r} as an ldp collector does "
            "(mechanism, fingerprint, time_precision)"
        ) from None


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(value)
    return value


# -- uploads -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Rejected:
    """One envelope the collector rejected.

    Attributes
    ----------
    index : int
        Its position in the envelope file (from 0).
    id : str or None
        Its id, as the collector read it.
    reason : str
        ``invalid_message``, ``wrong_spec``, ``invalid_report``, ``report_too_early`` or ``report_dropped``.
    detail : str
    """

    index: int
    id: str | None
    reason: str
    detail: str


@dataclasses.dataclass
class UploadSummary:
    """What the collector said about every envelope of an upload.

    Attributes
    ----------
    total : int
        Envelopes to upload.
    accepted : int
        Stored by this upload.
    replayed : int
        Already stored (an earlier upload of the same envelope): success, counted once.
    rejected : list of Rejected
        In file order.
    attempts : int
        HTTP requests sent (the task lookup not included).
    retries : int
        Requests that were resends of a batch after a failure.
    batches : int
        Batches the envelopes were split into.
    """

    total: int
    accepted: int = 0
    replayed: int = 0
    rejected: list[Rejected] = dataclasses.field(default_factory=list)
    attempts: int = 0
    retries: int = 0
    batches: int = 0

    @property
    def acknowledged(self) -> int:
        """Envelopes the collector answered for (accepted, replayed or rejected)."""
        return self.accepted + self.replayed + len(self.rejected)

    def reasons(self) -> dict[str, int]:
        """Rejections by reason, most frequent first."""
        return dict(Counter(r.reason for r in self.rejected).most_common())


def batch_bounds(lines: Sequence[bytes], batch_size: int, max_body: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive batches of at most ``batch_size`` lines and ``max_body`` body bytes.

    A batch's body is its lines, each followed by a newline.

    Raises
    ------
    ParameterError
        If one envelope alone is larger than ``max_body``, or a line holds a
        line break (it would be read as several envelopes).
    """
    start, size = 0, 0
    for index, line in enumerate(lines):
        if b"\n" in line:
            raise ParameterError.naming(
                f"envelope {index + 1} of {{envelope_lines}} holds a line break; give one envelope per item, "
                "without line ends",
                envelope_lines=None,
            )
        length = len(line) + 1
        if length > max_body:
            raise ParameterError.naming(
                f"envelope {index + 1} is {length} bytes, more than one upload may hold ({{max_body=}})",
                max_body=max_body,
            )
        if index - start == batch_size or size + length > max_body:
            yield start, index
            start, size = index, 0
        size += length
    if start < len(lines):
        yield start, len(lines)


class Uploader:
    """Uploads envelope lines to one task of a collector, in batches, with retries.

    Parameters
    ----------
    base_url : str
        The collector, e.g. ``http://127.0.0.1:8000``. A user part
        (``https://user:PASSWORD@host``) is sent as HTTP Basic authorization,
        for a proxy in front of the collector; messages show the URL with
        its password masked.
    task_id : str
    batch_size : int
        Most envelopes per request (1 to 1,000).
    max_body : int
        Most bytes per request body (up to 1 MiB).
    retries : int
        Resends of one batch after consecutive failures (connection errors,
        timeouts, 5xx, 429) before giving up.
    backoff : float
        Seconds before the first resend; doubled after each failure of a batch.
    max_backoff : float
        The longest wait between resends, seconds (a longer ``Retry-After`` is honoured).
    timeout : float
        Seconds to wait for a connection or a reply.
    progress : callable, optional
        Called with the number of envelopes acknowledged so far after each batch.
    sleep : callable
        How to wait (tests pass a fake).
    """

    def __init__(
        self,
        base_url: str,
        task_id: str,
        *,
        batch_size: int = MAX_ENVELOPES,
        max_body: int = MAX_BODY_BYTES,
        retries: int = 8,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        timeout: float = 60.0,
        progress: Progress | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        _check_int_range("batch_size", batch_size, 1, MAX_ENVELOPES)
        _check_int_range("max_body", max_body, 2, MAX_BODY_BYTES)
        _check_int_range("retries", retries, 0, 1_000)
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff), ("timeout", timeout)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ParameterError.naming(
                    f"{{{name}=}} must be a positive number of seconds", **{name: value}
                )
        self.path = _task_path(task_id) + "/reports"
        self.batch_size = batch_size
        self.max_body = max_body
        self.progress = progress
        self.timeout = float(timeout)
        self._http = _Http(
            _check_base_url(base_url), float(timeout), retries, float(backoff), float(max_backoff), sleep
        )

    def upload(self, envelope_lines: Sequence[bytes]) -> UploadSummary:
        """Send every envelope line (as in the envelope file, without line ends) and account for each.

        Returns
        -------
        UploadSummary
            Rejections carry their index in ``envelope_lines``.

        Raises
        ------
        UploadError
            A 4xx reply other than 429 (with the server's detail), retries
            exhausted, or a reply that does not account for the batch. Batches
            sent before stay stored; rerunning with the same envelopes resumes
            (they come back ``replayed``).
        """
        summary = UploadSummary(total=len(envelope_lines))
        bounds = list(batch_bounds(envelope_lines, self.batch_size, self.max_body))
        summary.batches = len(bounds)
        for start, stop in bounds:
            body = b"".join(line + b"\n" for line in envelope_lines[start:stop])
            try:
                reply = self._send(body)
            except UploadError as error:
                resume = (
                    ". Rerun the same upload to resume: the same envelopes are resent and never counted twice"
                    if error.status is None or error.status in _RETRY_STATUSES
                    else ""
                )
                raise type(error)(
                    f"{error}; {summary.acknowledged} of {summary.total} envelopes had been acknowledged"
                    + resume,
                    status=error.status,
                    detail=error.detail,
                    acknowledged=summary.acknowledged,
                ) from None
            finally:
                summary.attempts, summary.retries = self._http.attempts, self._http.retried
            _account(summary, reply, start, stop)
            if self.progress is not None:
                self.progress(summary.acknowledged)
        return summary

    def _send(self, body: bytes) -> Any:
        return self._http.request("POST", self.path, body)


def _check_int_range(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ParameterError.naming(f"{{{name}=}} must be an integer from {low} to {high:,}", **{name: value})


def _account(summary: UploadSummary, reply: Any, start: int, stop: int) -> None:
    """Add one batch's reply to ``summary``; an UploadError when it does not account for the batch."""
    count = stop - start
    try:
        accepted, replayed, rejected = reply["accepted"], reply["replayed"], reply["rejected"]
        ok = (
            all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (accepted, replayed))
            and isinstance(rejected, list)
            and accepted + replayed + len(rejected) == count
        )
        items = [
            Rejected(start + int(r["index"]), r.get("id"), str(r["reason"]), str(r.get("detail", "")))
            for r in rejected
        ]
        ok = ok and all(start <= item.index < stop for item in items)
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise UploadError(
            f"the collector's reply does not account for the {count} envelopes sent "
            f"(envelopes {start + 1} to {stop}): {str(reply)[:200]}",
            acknowledged=summary.acknowledged,
        )
    summary.accepted += accepted
    summary.replayed += replayed
    summary.rejected.extend(items)


def upload_reports(
    base_url: str,
    task_id: str,
    reports_path: str | os.PathLike[str],
    envelopes_path: str | os.PathLike[str] | None = None,
    *,
    now: float | None = None,
    **settings: Any,
) -> tuple[Envelopes, UploadSummary]:
    """Upload a report file to a task: fingerprint check, envelope file (made once), batches with retries.

    Parameters
    ----------
    base_url, task_id : str
        The collector and the task.
    reports_path : path
        JSON Lines reports (``ldp encode -o reports.jsonl``).
    envelopes_path : path, optional
        The envelope file (default: :func:`default_envelopes_path`). Reused as is when it exists.
    now : float, optional
        Unix time for new envelopes (default: now).
    **settings
        :class:`Uploader` keywords (``batch_size``, ``max_body``, ``retries``, ``progress``, ...).

    Returns
    -------
    (Envelopes, UploadSummary)

    Raises
    ------
    ParameterError
        Bad inputs, reports of another spec than the task's (before any upload
        and before the envelope file is made), a mismatching envelope file.
    UploadError
        See :meth:`Uploader.upload` and :func:`fetch_task`.
    """
    uploader = Uploader(base_url, task_id, **settings)  # checks the settings before any request
    target = default_envelopes_path(reports_path) if envelopes_path is None else Path(envelopes_path)
    reports = read_reports(reports_path)
    task = fetch_task(base_url, task_id, timeout=uploader.timeout)
    check_fingerprint(reports, task.fingerprint)
    envelopes = _make_envelopes(reports, target, task.time_precision, now)
    return envelopes, uploader.upload(envelopes.lines)
