"""The collector's OpenAPI document: the schemas FastAPI cannot derive, and the errors it really sends.

Upload bodies are read by hand (:mod:`ldp.collector.envelopes`), so their
schema is declared here (:data:`UPLOAD_BODY`); every 4xx is a problem
document (RFC 9457), never FastAPI's 422 shape (:func:`openapi_schema`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ldp.collector.envelopes import JSON_LINES_TYPES, JSON_TYPES, MAX_ENVELOPES
from ldp.collector.problems import PROBLEM_TYPE

__all__ = ["TASK_SCHEMA", "UPLOAD_BODY", "openapi_schema"]

#: ``POST /v1/tasks/{task}/reports``: an array of envelopes, as JSON or JSON Lines.
UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            media: {
                "schema": {
                    "type": "array",
                    "maxItems": MAX_ENVELOPES,
                    "items": {
                        "type": "object",
                        "required": ["id", "t", "report"],
                        "properties": {
                            "id": {"type": "string", "description": "16 CSPRNG bytes, base64url, no padding"},
                            "t": {"type": "integer", "minimum": 0},
                            "report": {"type": "object"},
                        },
                    },
                }
            }
            for media in (*JSON_TYPES, JSON_LINES_TYPES[0])
        },
    }
}


#: ``GET /v1/tasks/{task}``: :meth:`ldp.collector.tasks.Task.to_dict`.
TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "task",
        "mechanism",
        "fingerprint",
        "window",
        "time_precision",
        "min_batch",
        "not_before",
        "not_after",
        "cors_origins",
        "shuffle_delta",
    ],
    "properties": {
        "task": {"type": "string", "description": "the task id (43 base64url characters)"},
        "mechanism": {"type": "string"},
        "fingerprint": {"type": "string", "description": "the spec's fingerprint, as the ETag of /spec"},
        "window": {"type": "integer", "minimum": 1},
        "time_precision": {"type": "integer", "minimum": 1},
        "min_batch": {"type": "integer", "minimum": 1},
        "not_before": {"type": ["integer", "null"]},
        "not_after": {"type": ["integer", "null"]},
        "cors_origins": {"type": "array", "items": {"type": "string"}},
        "shuffle_delta": {"type": ["number", "null"]},
        "retain": {
            "type": ["integer", "null"],
            "description": "seconds a window's raw reports are kept after it ends (null: kept); then its aggregate only",
        },
    },
}
_PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
    },
}


def openapi_schema(app: FastAPI) -> dict[str, Any]:
    """FastAPI's schema with the errors this app really sends: problem documents, never its 422 shape."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        if not components:
            del schema["components"]
        problem_reply = {
            "description": "A problem document (RFC 9457)",
            "content": {PROBLEM_TYPE: {"schema": _PROBLEM_SCHEMA}},
        }
        for operations in schema["paths"].values():
            for operation in operations.values():
                operation["responses"].pop("422", None)
                operation["responses"]["4XX"] = problem_reply
        app.openapi_schema = schema
    return app.openapi_schema
