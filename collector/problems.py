"""Problem documents (RFC 9457) for every 4xx and 5xx reply of the collector.

:func:`problem_for` is the one mapping from what went wrong (the
collector's errors, :mod:`ldp.collector.errors`; the store's; a bad
parameter; the framework's own HTTP and validation errors) to the reply the
client gets. Routes raise; they never build an error reply themselves.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from ldp.collector.envelopes import UnreadableBody
from ldp.collector.errors import (
    NoNumericTable,
    OriginForbidden,
    RateLimited,
    ReportsNotStored,
    StoreUnhealthy,
    TaskNotFound,
    Unauthorized,
    UploadAborted,
)
from ldp.collector.store import StoreUnavailable
from ldp.errors import ParameterError

__all__ = ["HANDLED", "PROBLEM_TYPE", "problem", "problem_for", "refusal_reason"]

#: ``application/problem+json``, the media type of RFC 9457.
PROBLEM_TYPE = "application/problem+json"

#: The error types :func:`problem_for` answers with a 4xx or 503 (anything else is a 500).
HANDLED: tuple[type[Exception], ...] = (
    TaskNotFound,
    RateLimited,
    Unauthorized,
    OriginForbidden,
    NoNumericTable,
    ReportsNotStored,
    StoreUnhealthy,
    UploadAborted,
    UnreadableBody,
    StoreUnavailable,
    ParameterError,
    StarletteHTTPException,
    RequestValidationError,
)

#: Titles of the framework's own HTTP errors (an unknown path, a wrong method).
_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    404: "Not found",
    405: "Method not allowed",
    413: "Body too large",
}
_RETRY_SOON = {"Retry-After": "1"}


def problem(
    status: int, title: str, detail: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    """A problem document reply: ``type`` is ``about:blank``, so ``title`` is the status's short meaning."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return Response(orjson.dumps(body), status_code=status, media_type=PROBLEM_TYPE, headers=headers)


#: The reason label of the framework's own HTTP errors, by status.
_REASONS = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}


def refusal_reason(exc: BaseException) -> str:
    """A short label saying why ``exc`` was answered with a 4xx (``ldp_http_errors_total``'s ``reason``).

    A fixed vocabulary, never anything the request carried: ``unknown_task``,
    ``rate_limited``, ``unauthorized``, ``origin_forbidden``, ``no_numeric_table``,
    ``body_too_large``, ``malformed_json``, ``not_an_array``, ``too_many_envelopes``,
    ``unsupported_media_type``, ``bad_parameter``, ``invalid_request``, ``unreadable_http``,
    ``client_disconnect``, ``read_timeout``, ``not_found``, ``method_not_allowed``.
    """
    match exc:
        case TaskNotFound():
            return "unknown_task"
        case RateLimited():
            return "rate_limited"
        case Unauthorized():
            return "unauthorized"
        case OriginForbidden():
            return "origin_forbidden"
        case NoNumericTable():
            return "no_numeric_table"
        case UploadAborted():
            return exc.reason
        case UnreadableBody():
            return exc.title.lower().replace(" ", "_")
        case ParameterError():
            return "bad_parameter"
        case StarletteHTTPException():
            return _REASONS.get(exc.status_code, "other")
        case RequestValidationError():
            return "invalid_request"
    return "other"


def problem_for(exc: BaseException) -> Response:
    """The problem document answering ``exc`` (a 500 naming only its type for anything unexpected)."""
    match exc:
        case TaskNotFound():  # a deleted task (TaskDeleted) too: to the client it is gone either way
            return problem(404, "Unknown task", str(exc))
        case RateLimited():
            return problem(429, "Too many requests", str(exc), {"Retry-After": str(exc.retry_after)})
        case Unauthorized():
            return problem(
                401, "Unauthorized", str(exc), {"WWW-Authenticate": 'Bearer realm="ldp-collector"'}
            )
        case OriginForbidden():
            return problem(403, "Forbidden", str(exc))
        case NoNumericTable():
            return problem(404, "Not Found", str(exc))
        case ReportsNotStored():
            return problem(503, "Store unavailable", str(exc), _RETRY_SOON)
        case StoreUnhealthy():
            return problem(503, "Store unavailable", str(exc))
        case StoreUnavailable():  # its message may name the store's location: not sent
            return problem(503, "Store unavailable", "the store cannot be reached; retry later", _RETRY_SOON)
        case UploadAborted():
            # nobody reads this reply; the status (499, as nginx logs a client that closed) files the
            # request under 4xx in the latency metric, never under 5xx
            return problem(499, "Client closed request", exc.reason)
        case UnreadableBody():
            return problem(exc.status, exc.title, exc.detail)
        case ParameterError():
            return problem(400, "Bad request", str(exc))
        case StarletteHTTPException():
            return problem(exc.status_code, _TITLES.get(exc.status_code, "Error"), str(exc.detail))
        case RequestValidationError():
            errors = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            return problem(400, "Bad request", errors[:500])
    # a fault of the server's own (logged with its traceback by the server): still a problem document
    return problem(500, "Internal server error", f"the request failed ({type(exc).__name__})")
