"""HTTP to a collector for uploads: retries with backoff, problem documents, the task lookup.

:class:`Http` sends a request to one collector, retrying connection
errors, timeouts, 5xx and 429 with exponential backoff and jitter
(honouring ``Retry-After``) and resending the same bytes each time; a 4xx
problem document stops it with the server's detail (:class:`UploadError`).
:func:`fetch_task` reads a task's public description.

HTTP goes through :mod:`urllib.request` only (standard library, with
:mod:`ldp.errors` and :mod:`ldp.redact`). A collector URL may carry
credentials for a proxy in front of the collector
(``https://user:PASSWORD@host``): they are sent as HTTP Basic
authorization (never on a redirect) and the URL is never shown with its
password: every message and error shows :func:`ldp.redact.redact_url` of it.
An HTTPS collector whose certificate a private CA signed is trusted through
:func:`tls_context` (``ldp upload --cacert FILE``).
"""

from __future__ import annotations

import base64
import dataclasses
import email.utils
import http.client
import json
import os
import re
import secrets
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from ldp.errors import LDPError, ParameterError
from ldp.redact import redact_url

__all__ = [
    "CONTENT_TYPE",
    "RETRY_STATUSES",
    "Http",
    "TaskInfo",
    "UploadError",
    "check_base_url",
    "fetch_task",
    "task_path",
    "tls_context",
]

#: Envelopes are sent as JSON Lines.
CONTENT_TYPE = "application/x-ndjson"
#: HTTP statuses worth a retry with the same bytes: rate limited, or the server is failing for now.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_RETRY_STATUSES = RETRY_STATUSES
_TASK_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")


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
class Http:
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
    context: ssl.SSLContext | None = None  # HTTPS: the CAs trusted (None: the system's)

    def request(
        self, method: str, path: str, body: bytes | None = None, authorization: str | None = None
    ) -> Any:
        """The JSON of a 200 reply, retrying transient failures; :class:`UploadError` otherwise.

        ``authorization`` (``Bearer TOKEN``) is sent instead of the URL's credentials, never on a redirect.
        """
        failures = 0
        while True:
            self.attempts += 1
            outcome = self._attempt(method, path, body, authorization)
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

    def _attempt(self, method: str, path: str, body: bytes | None, authorization: str | None = None) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = CONTENT_TYPE
        request = urllib.request.Request(self.target.url + path, data=body, method=method, headers=headers)
        authorization = authorization or self.target.authorization
        if authorization is not None:
            request.add_unredirected_header("Authorization", authorization)  # never to another host
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as reply:
                status, data = reply.status, reply.read()
        except urllib.error.HTTPError as error:
            with error:
                return self._http_error(error.code, _read_quietly(error), error.headers.get("Retry-After"))
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            if isinstance(reason, ssl.SSLCertVerificationError):  # no retry will change the certificate
                raise UploadError(
                    f"the certificate of {self.target.shown} is not trusted ({reason.verify_message}: "
                    "CERTIFICATE_VERIFY_FAILED); trust the CA that signed it with --cacert FILE (cacert= in Python)"
                ) from None
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


def tls_context(cacert: str | os.PathLike[str] | None) -> ssl.SSLContext | None:
    """The TLS context trusting the CA certificates (PEM) of ``cacert`` only; None (the system's CAs) without one.

    Hostnames are checked as always. Raises :class:`~ldp.errors.ParameterError`
    (one line) when the file cannot be read or holds no certificate.
    """
    if cacert is None:
        return None
    try:
        return ssl.create_default_context(cafile=os.fspath(cacert))
    except FileNotFoundError:
        raise ParameterError(f"--cacert {os.fspath(cacert)!r} does not exist") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ParameterError(
            f"--cacert {os.fspath(cacert)!r} is not a PEM file of CA certificates ({type(exc).__name__})"
        ) from None


def check_base_url(base_url: str) -> _Target:
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


def task_path(task_id: str) -> str:
    """``/v1/tasks/{task_id}``; a ParameterError when ``task_id`` is not a task id."""
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


def fetch_task(
    base_url: str,
    task_id: str,
    *,
    timeout: float = 30.0,
    retries: int = 3,
    context: ssl.SSLContext | None = None,
) -> TaskInfo:
    """The public description of ``task_id`` on the collector at ``base_url`` (``context``: :func:`tls_context`).

    Raises
    ------
    ParameterError
        A malformed URL or task id.
    UploadError
        The collector does not know the task (its detail), cannot be reached
        after ``retries`` retries, or replies with something that is not a task.
    """
    http = Http(check_base_url(base_url), timeout, retries, backoff=0.5, max_backoff=5.0, context=context)
    reply = http.request("GET", task_path(task_id))
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
