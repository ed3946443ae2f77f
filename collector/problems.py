"""Problem documents (RFC 9457) for every 4xx and 5xx reply of the collector."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

__all__ = ["PROBLEM_TYPE", "problem"]

#: ``application/problem+json``, the media type of RFC 9457.
PROBLEM_TYPE = "application/problem+json"


def problem(
    status: int, title: str, detail: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    """A problem document reply: ``type`` is ``about:blank``, so ``title`` is the status's short meaning."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return Response(orjson.dumps(body), status_code=status, media_type=PROBLEM_TYPE, headers=headers)
