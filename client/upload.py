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

The jobs are in three modules: :mod:`ldp.client.upload_envelopes` (report
and envelope files), :mod:`ldp.client.upload_http` (HTTP with retries, the
task lookup) and this one (batches, the collector's accounting of each
envelope, the whole upload). Every name is importable from here as before.
HTTP goes through :mod:`urllib.request` only: these modules import nothing
beyond the standard library and :mod:`ldp.errors` / :mod:`ldp.atomic` /
:mod:`ldp.redact`.

A collector URL may carry credentials for a proxy in front of the collector
(``https://user:PASSWORD@host``): they are sent as HTTP Basic
authorization (never on a redirect) and the URL is never shown with its
password: every message and error shows :func:`ldp.redact.redact_url` of it.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import urllib.request  # noqa: F401 - ldp.client.upload.urllib.request: where tests watch the requests sent
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ldp.client.upload_envelopes import (
    Envelopes,
    ReportLines,
    check_fingerprint,
    default_envelopes_path,
    envelope_file,
    make_envelopes,
    read_reports,
    report_lines,
)
from ldp.client.upload_http import (
    RETRY_STATUSES,
    Http,
    TaskInfo,
    UploadError,
    check_base_url,
    fetch_task,
    task_path,
    tls_context,
)
from ldp.errors import InputError, ParameterError

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
    "report_lines",
    "upload_report_lines",
    "upload_reports",
]

#: The collector's limits of one upload request (docs/collector.md#upload).
MAX_ENVELOPES = 1_000
MAX_BODY_BYTES = 1 << 20
#: HTTP statuses worth a retry with the same bytes (:data:`ldp.client.upload_http.RETRY_STATUSES`).
_RETRY_STATUSES = RETRY_STATUSES

Progress = Callable[[int], None]


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
    InputError
        If one envelope alone is larger than ``max_body``, or a line holds a
        line break (it would be read as several envelopes).
    """
    start, size = 0, 0
    for index, line in enumerate(lines):
        if b"\n" in line:
            raise InputError.naming(
                f"envelope {index + 1} of {{envelope_lines}} holds a line break; give one envelope per item, "
                "without line ends",
                envelope_lines=None,
            )
        length = len(line) + 1
        if length > max_body:
            raise InputError.naming(
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
    cacert : path, optional
        A PEM file of the CA certificates to trust for an ``https`` collector
        (a private CA); default: the system's (:func:`~ldp.client.upload_http.tls_context`).
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
        cacert: str | os.PathLike[str] | None = None,
    ) -> None:
        _check_int_range("batch_size", batch_size, 1, MAX_ENVELOPES)
        _check_int_range("max_body", max_body, 2, MAX_BODY_BYTES)
        _check_int_range("retries", retries, 0, 1_000)
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff), ("timeout", timeout)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ParameterError.naming(
                    f"{{{name}=}} must be a positive number of seconds", **{name: value}
                )
        self.path = task_path(task_id) + "/reports"
        self.batch_size = batch_size
        self.max_body = max_body
        self.progress = progress
        self.timeout = float(timeout)
        self.context = tls_context(cacert)
        self._http = Http(
            check_base_url(base_url),
            float(timeout),
            retries,
            float(backoff),
            float(max_backoff),
            sleep,
            context=self.context,
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
        :class:`Uploader` keywords (``batch_size``, ``max_body``, ``retries``, ``progress``, ``cacert``, ...).

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
    return _upload_lines(uploader, base_url, task_id, read_reports(reports_path), target, now)


def upload_report_lines(
    base_url: str,
    task_id: str,
    reports: ReportLines,
    envelopes_path: str | os.PathLike[str],
    *,
    now: float | None = None,
    **settings: Any,
) -> tuple[Envelopes, UploadSummary]:
    """:func:`upload_reports` for reports already read (:func:`read_reports`) or held in memory (:func:`report_lines`).

    The same contract: the fingerprint is checked before anything is sent,
    the envelope file ``envelopes_path`` is made once and reused as is by
    every later call with the same reports (same ids: a retry or rerun is
    never counted twice), and batches are retried with backoff.
    """
    uploader = Uploader(base_url, task_id, **settings)
    return _upload_lines(uploader, base_url, task_id, reports, Path(envelopes_path), now)


def _upload_lines(
    uploader: Uploader, base_url: str, task_id: str, reports: ReportLines, target: Path, now: float | None
) -> tuple[Envelopes, UploadSummary]:
    task = fetch_task(base_url, task_id, timeout=uploader.timeout, context=uploader.context)
    check_fingerprint(reports, task.fingerprint)
    envelopes = envelope_file(reports, target, task.time_precision, now)
    return envelopes, uploader.upload(envelopes.lines)
