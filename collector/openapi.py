"""The collector's OpenAPI document: the schemas FastAPI cannot derive, and the errors it really sends.

Upload bodies are read by hand (:mod:`ldp.collector.envelopes`), so their
schema is declared here (:data:`UPLOAD_BODY`); every 4xx is a problem
document (RFC 9457), never FastAPI's 422 shape (:func:`openapi_schema`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ldp.aggregator.rappor.result import DECODE_COLUMNS
from ldp.collector.envelopes import JSON_LINES_TYPES, JSON_TYPES, MAX_ENVELOPES
from ldp.collector.problems import PROBLEM_TYPE

__all__ = ["DASHBOARD_SCHEMA", "ESTIMATES_SCHEMA", "TASK_SCHEMA", "UPLOAD_BODY", "openapi_schema"]

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
_NUMBER_OR_NULL = {"type": ["number", "null"]}
#: A Bloom RAPPOR reply's ``candidates``: :func:`ldp.collector.candidate_view.decode_block`.
CANDIDATES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Bloom RAPPOR tasks with candidates (ldp task update --candidates): the reports decoded "
    "against them, as ldp aggregate --candidates decodes (Benjamini-Hochberg at alpha 0.05)",
    "required": [
        "rows",
        "num_candidates",
        "num_detected",
        "allocated_mass",
        "explained_mass",
        "unexplained_mass",
        "unexplained_mass_se",
        "alpha",
        "correction",
    ],
    "properties": {
        "rows": {
            "type": "array",
            "description": "one per candidate, largest estimate first (the dashboard's reply: the 20 largest)",
            "items": {
                "type": "object",
                "required": [*DECODE_COLUMNS],
                "properties": {
                    "value": {"type": "string"},
                    "estimate": {"type": "number", "description": "reports with the value (never negative)"},
                    "std_error": _NUMBER_OR_NULL,
                    "ci_low": _NUMBER_OR_NULL,
                    "ci_high": _NUMBER_OR_NULL,
                    "proportion": _NUMBER_OR_NULL,
                    "p_value": _NUMBER_OR_NULL,
                    "detected": {"type": "boolean", "description": "significant after the correction"},
                },
            },
        },
        "num_candidates": {"type": "integer", "description": "every candidate, shown or not"},
        "num_detected": {"type": "integer"},
        "allocated_mass": {
            **_NUMBER_OR_NULL,
            "description": "the share of reports the detected candidates explain",
        },
        "explained_mass": {**_NUMBER_OR_NULL, "description": "the sum of every candidate's share"},
        "unexplained_mass": {
            **_NUMBER_OR_NULL,
            "description": "the share of reports of values outside the list",
        },
        "unexplained_mass_se": _NUMBER_OR_NULL,
        "alpha": {"type": "number"},
        "correction": {"type": "string", "enum": ["bh", "bonferroni", "none"]},
    },
}
#: What estimates a window or a range holds (:func:`ldp.collector.windows.estimate_reply`).
_ESTIMATE_FIELDS: dict[str, Any] = {
    "n": {"type": "integer", "description": "the reports counted"},
    "estimates": {
        "type": ["array", "null"],
        "items": {"type": "object"},
        "description": "ldp aggregate's table as records (a Bloom RAPPOR task's: its per-cohort bit estimates); "
        "null when withheld",
    },
    "withheld": {
        "type": ["string", "null"],
        "description": "why the estimates are withheld (under min_batch)",
    },
    "consistency": {"type": ["string", "null"], "description": "the consistent view's method, if any"},
    "cdf": {
        "type": "array",
        "items": {"type": "object"},
        "description": "range tasks: the CDF with its band",
    },
    "quantiles": {"type": "array", "items": {"type": "object"}, "description": "range tasks: the quantiles"},
    "candidates": CANDIDATES_SCHEMA,
    "central": {"type": "object", "description": "shuffle mode: the central (epsilon, delta) of the reports"},
}
_WINDOW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["start", "end", "n", "estimates", "withheld", "pruned"],
    "properties": {
        "start": {"type": "integer"},
        "end": {"type": "integer"},
        **_ESTIMATE_FIELDS,
        "pruned": {
            "type": "boolean",
            "description": "the window's raw reports were deleted by the retention",
        },
    },
}
#: ``GET /v1/tasks/{task}/estimates``: a range's estimates, or (``by=window``) each window's.
ESTIMATES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["task", "mechanism", "confidence"],
    "properties": {
        "task": {"type": "string"},
        "mechanism": {"type": "string"},
        "confidence": {"type": "number"},
        "from": {"type": ["integer", "null"]},
        "to": {"type": ["integer", "null"]},
        **_ESTIMATE_FIELDS,
        "pruned_windows": {"type": "integer", "description": "windows of the range pruned by the retention"},
        "windows": {"type": "array", "items": _WINDOW_SCHEMA, "description": "by=window: one per window"},
    },
}
#: ``GET /v1/dashboard``: every visible task, its description, labels and windows.
DASHBOARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tasks"],
    "properties": {
        "tasks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [*TASK_SCHEMA["required"], "name", "description", "kind", "windows"],
                "properties": {
                    **TASK_SCHEMA["properties"],
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "kind": {"type": "string", "enum": ["frequency", "mean", "records"]},
                    "confidence": {"type": "number"},
                    "memoized": {"type": "boolean"},
                    "num_candidates": {
                        "type": "integer",
                        "description": "the candidate values a Bloom RAPPOR task is decoded against (0: none)",
                    },
                    "attributes": {
                        "type": "array",
                        "description": "a multi-attribute task's attributes in spec order (kind records only)",
                        "items": {
                            "type": "object",
                            "required": ["name", "statistic", "mechanism"],
                            "properties": {
                                "name": {"type": "string"},
                                "statistic": {"type": "string", "enum": ["count", "mean"]},
                                "mechanism": {"type": "string"},
                                "domain_size": {"type": "integer"},
                            },
                        },
                    },
                    "windows": {"type": "array", "items": _WINDOW_SCHEMA},
                },
            },
        }
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
