"""The collector's HTTP API (docs/collector.md): uploads, specs, estimates, health, metrics, the dashboard.

:func:`create_app` builds a FastAPI application over one store. Uploads are
read with a byte cap, checked envelope by envelope
(:mod:`ldp.collector.envelopes`), committed in groups
(:mod:`ldp.collector.ingest`) and acknowledged only after their commit.
Estimates merge the per-window accumulators (:mod:`ldp.collector.windows`).
Every error reply is a problem document (RFC 9457). Client addresses are
used in memory for rate limiting and never stored or logged by this module.

A task id not held in memory costs one indexed store lookup, in a worker
thread; only a background task re-reads the whole task list (every
:data:`TASK_REFRESH_SECONDS`). The dashboard needs a collector token unless
:attr:`CollectorSettings.dashboard_public`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hmac
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

import orjson
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ldp.collector.acceptance import DEFAULT_ACCEPTANCE, Acceptance
from ldp.collector.envelopes import (
    JSON_LINES_TYPES,
    JSON_TYPES,
    MAX_BODY_BYTES,
    MAX_ENVELOPES,
    UnreadableBody,
    check_envelopes,
    parse_upload,
)
from ldp.collector.ingest import GroupCommitter, upload_outcome
from ldp.collector.metrics import CONTENT_TYPE_LATEST, CollectorMetrics
from ldp.collector.problems import PROBLEM_TYPE, problem
from ldp.collector.ratelimit import RateLimiter
from ldp.collector.store import Store, StoreUnavailable, UnknownTaskError, open_store
from ldp.collector.tasks import TIME_LIMIT, Task, hash_token, is_task_id
from ldp.collector.windows import Windows, check_range, estimate_reply, task_summary
from ldp.errors import ParameterError
from ldp.numeric_wire import numeric_table as wire_table
from ldp.specs.base import load_spec
from ldp.specs.numeric import NumericSpec

__all__ = ["READ_TIMED_OUT", "CollectorSettings", "create_app", "numeric_table"]

#: Scope key the server sets when it closed a request whose body did not arrive in time
#: (:class:`ldp.collector.serving.BoundedReadProtocol`): the app then sees a disconnect.
READ_TIMED_OUT = "ldp.read_timed_out"

_log = logging.getLogger("ldp.collector")

#: Seconds between re-reads of the task list (tasks created or deleted by ``ldp task`` while serving).
TASK_REFRESH_SECONDS = 5.0
#: Uploads of at most this many envelopes are checked on the event loop (about 2 ms of CPU at most);
#: the hop to a worker thread costs more than it saves when the check holds the GIL anyway.
INLINE_CHECK_ENVELOPES = 128


@dataclasses.dataclass(frozen=True)
class CollectorSettings:
    """How one collector serves.

    Parameters
    ----------
    store : str
        The store URL (:func:`ldp.collector.store.open_store`).
    dashboard_public : bool
        The dashboard and ``/v1/dashboard`` show every task to anyone, with no
        token (``ldp serve --dashboard-public``). Off by default: the listening
        address says nothing about who can reach the server (a reverse proxy
        on the same machine connects from loopback for every client).
    rate_limit : float
        Upload requests per second per client address (0: no limit).
    max_group_reports : int
        The most reports one group commit takes.
    acceptance : Acceptance
        The report times accepted (:mod:`ldp.collector.acceptance`): at most
        30 days old and 1,000 windows back by default.
    """

    store: str
    dashboard_public: bool = False
    rate_limit: float = 100.0
    max_group_reports: int = 5_000
    acceptance: Acceptance = DEFAULT_ACCEPTANCE


class _Collector:
    """The state one app serves from: store, tasks, windows, committer, metrics.

    The task table is re-read whole only by the background refresher
    (:meth:`refresh_tasks`, every :data:`TASK_REFRESH_SECONDS`, in a worker
    thread); a request for a task id not in memory costs one indexed store
    lookup (:meth:`lookup`), so requests with made-up ids cannot make the
    server re-read its tasks.
    """

    def __init__(self, settings: CollectorSettings) -> None:
        self.settings = settings
        # exclusive: a second server on one SQLite file is refused (each would count only its own uploads)
        self.store: Store = open_store(settings.store, exclusive=True)
        self.windows = Windows()
        self.metrics = CollectorMetrics()
        self.limiter = RateLimiter(settings.rate_limit)
        self.tasks: dict[str, Task] = {}
        self._lock = threading.Lock()  # guards replacing self.tasks
        self._adopting = threading.Lock()  # one task's windows loaded at a time
        self.refresh_tasks()
        self.committer = GroupCommitter(
            self.store,
            self.windows,
            max_reports=settings.max_group_reports,
            on_commit=self.metrics.observe_commit,
            on_failure=self.metrics.observe_store_error,
        )

    def refresh_tasks(self) -> None:
        """Re-read the whole task list (blocking: start-up and the background refresher only)."""
        with self._lock:
            known = set(self.tasks)
        current = {task.task_id: task for task in self.store.tasks()}
        for task_id in known - set(current):
            self.forget(task_id)
        with self._adopting:
            added = {}
            for task_id, task in current.items():
                if task_id not in self.tasks:
                    self.windows.load(self.store, task)
                    added[task_id] = task
            if added:
                with self._lock:
                    self.tasks = {**self.tasks, **added}

    def lookup(self, task_id: str) -> Task | None:
        """The task ``task_id`` from the store (one indexed read; blocking), kept in memory when found."""
        found = self.store.task(task_id)
        return None if found is None else self._adopt(found)  # created since the last refresh

    def _adopt(self, task: Task) -> Task:
        """``task`` as held in memory: the first time, its windows are rebuilt from the store.

        One task at a time, and before any request can have it, so no upload of
        the task is committed while its windows are read.
        """
        with self._adopting:
            held = self.tasks.get(task.task_id)
            if held is not None:
                return held
            self.windows.load(self.store, task)
            with self._lock:
                self.tasks = {**self.tasks, task.task_id: task}  # a new dict: readers never see it change
            return task

    def forget(self, task_id: str) -> None:
        """Drop a task found deleted (by the refresher, or when its upload's commit refused it)."""
        with self._lock:
            self.tasks = {key: task for key, task in self.tasks.items() if key != task_id}
        self.windows.forget(task_id)

    async def task(self, task_id: str) -> Task | None:
        """The task ``task_id``: from memory, else one store lookup off the event loop; None if unknown."""
        if not is_task_id(task_id):
            return None
        known = self.tasks.get(task_id)
        if known is not None:
            return known
        return await run_in_threadpool(self.lookup, task_id)

    def token_tasks(self, token: str) -> list[Task]:
        """The tasks ``token`` reads (hashed once, compared in constant time with each task's hash)."""
        digest = hash_token(token)
        return [t for t in self.tasks.values() if t.token_hash and hmac.compare_digest(digest, t.token_hash)]

    def close(self) -> None:
        self.committer.close()
        self.store.close()


async def _refresh_periodically(collector: _Collector) -> None:
    """Re-read the task list every :data:`TASK_REFRESH_SECONDS` (tasks created or deleted by ``ldp task``)."""
    while True:
        await asyncio.sleep(TASK_REFRESH_SECONDS)
        try:
            await run_in_threadpool(collector.refresh_tasks)
        except Exception as exc:  # the store is down: keep serving the tasks in memory, try again later
            _log.warning(
                "could not re-read the task list (%s); retrying in %g s",
                type(exc).__name__,
                TASK_REFRESH_SECONDS,
            )


def numeric_table(spec: NumericSpec) -> dict[str, Any]:
    """What ``GET /v1/tasks/{task}/tables`` serves: the spec's fingerprint and :func:`ldp.numeric_wire.numeric_table`."""
    return {"fingerprint": spec.fingerprint, **wire_table(spec)}


@functools.lru_cache(maxsize=64)
def _table_reply(spec_json: str) -> tuple[bytes, str] | None:
    """(JSON body, ETag) of a spec's numeric table, or None for a spec without one; cached by spec."""
    spec = load_spec(spec_json)
    if not isinstance(spec, NumericSpec):
        return None
    table = numeric_table(spec)
    # json, not orjson: floats written as Python writes them (tests/vectors/README.md, float_text)
    body = json.dumps(table, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    tag = f"{spec.fingerprint}-{table['digest']}" if "digest" in table else spec.fingerprint
    return body, f'"{tag}"'


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _unknown_task(task_id: str) -> Response:
    shown = task_id if len(task_id) <= 64 else task_id[:64] + "…"
    return problem(404, "Unknown task", f"no task {shown!r} on this collector")


def _unauthorized(detail: str) -> Response:
    return problem(401, "Unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="ldp-collector"'})


def _cors_headers(task: Task, request: Request) -> dict[str, str]:
    origin = request.headers.get("origin")
    if origin is None or not task.cors_origins:
        return {}
    if "*" in task.cors_origins:
        return {"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "ETag"}
    if origin in task.cors_origins:
        return {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Expose-Headers": "ETag",
            "Vary": "Origin",
        }
    return {}


class _Aborted(Exception):
    """The client hung up (or was cut off by the read deadline) before its body arrived."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def _read_body(request: Request) -> bytes:
    """The request body, refusing (413) as soon as it passes :data:`MAX_BODY_BYTES`.

    Raises :class:`_Aborted` when the connection ends before the body does.
    """
    try:
        return await _read_capped(request)
    except ClientDisconnect:
        reason = "read_timeout" if request.scope.get(READ_TIMED_OUT) else "client_disconnect"
        raise _Aborted(reason) from None


async def _read_capped(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise UnreadableBody(
            413, "Body too large", f"an upload is at most {MAX_BODY_BYTES} bytes, got {declared}"
        )
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY_BYTES:
            raise UnreadableBody(413, "Body too large", f"an upload is at most {MAX_BODY_BYTES} bytes")
        parts.append(part)
    return b"".join(parts)


_UPLOAD_BODY = {
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


class _Timing:
    """Request durations by route and status class into the metrics, as a plain ASGI middleware.

    (Starlette's ``@app.middleware("http")`` wraps every request in a task
    group and memory streams: a measured 8-10 % of the server's CPU on uploads.)
    """

    def __init__(self, app: ASGIApp, state: dict[str, _Collector]) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            collector = self.state.get("collector")
            if collector is not None:
                path = getattr(scope.get("route"), "path", "unmatched")
                collector.metrics.requests.labels(path, f"{status // 100}xx").observe(
                    time.perf_counter() - started
                )


def create_app(settings: CollectorSettings | str) -> FastAPI:
    """The collector application over ``settings.store`` (a store URL alone takes the defaults)."""
    if isinstance(settings, str):
        settings = CollectorSettings(store=settings)
    state: dict[str, _Collector] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state["collector"] = await run_in_threadpool(_Collector, settings)
        refresher = asyncio.create_task(_refresh_periodically(state["collector"]))
        try:
            yield
        finally:
            refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refresher
            await run_in_threadpool(state["collector"].close)

    app = FastAPI(
        title="ldp collector",
        summary="Locally differentially private reports in, windowed estimates with error bars out.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.openapi = functools.partial(_openapi, app)  # type: ignore[method-assign]

    def collector() -> _Collector:
        return state["collector"]

    # -- errors: always problem documents ----------------------------------
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return problem(exc.status_code, _TITLES.get(exc.status_code, "Error"), str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        errors = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return problem(400, "Bad request", errors[:500])

    @app.exception_handler(UnreadableBody)
    async def upload_error(request: Request, exc: UnreadableBody) -> Response:
        return problem(exc.status, exc.title, exc.detail)

    @app.exception_handler(ParameterError)
    async def parameter_error(request: Request, exc: ParameterError) -> Response:
        return problem(400, "Bad request", str(exc))

    @app.exception_handler(StoreUnavailable)
    async def store_unavailable(request: Request, exc: StoreUnavailable) -> Response:
        return problem(
            503, "Store unavailable", "the store cannot be reached; retry later", {"Retry-After": "1"}
        )

    @app.exception_handler(_Aborted)
    async def aborted(request: Request, exc: _Aborted) -> Response:
        # nobody reads this reply; the status (499, as nginx logs a client that closed) files the
        # request under 4xx in the latency metric, never under 5xx
        collector().metrics.aborted.labels(exc.reason).inc()
        if exc.reason == "read_timeout":
            _log.warning("upload cut off: its body did not arrive within the read timeout")
        else:
            _log.warning("upload aborted: the client closed the connection before its body arrived")
        return problem(499, "Client closed request", exc.reason)

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> Response:
        # a fault of the server's own (logged with its traceback by the server): still a problem document
        return problem(500, "Internal server error", f"the request failed ({type(exc).__name__})")

    app.add_middleware(_Timing, state=state)

    # -- uploads -----------------------------------------------------------
    @app.post("/v1/tasks/{task_id}/reports", openapi_extra=_UPLOAD_BODY, summary="Upload report envelopes")
    async def upload(task_id: str, request: Request) -> Response:
        c = collector()
        address = request.client.host if request.client else ""
        if not c.limiter.allow(address):
            return problem(
                429,
                "Too many requests",
                "this address is sending uploads too fast; retry later with the same envelopes",
                headers={"Retry-After": str(c.limiter.retry_after())},
            )
        task = await c.task(task_id)
        if task is None:
            return _unknown_task(task_id)
        body = await _read_body(request)
        # text/plain JSON Lines (sendBeacon, no preflight) only from an origin the task allows
        beacon = bool(_cors_headers(task, request))
        items = parse_upload(body, request.headers.get("content-type"), beacon=beacon)
        acceptance = c.settings.acceptance
        if len(items) <= INLINE_CHECK_ENVELOPES:
            checked = check_envelopes(task, items, time.time(), acceptance)
        else:
            checked = await run_in_threadpool(check_envelopes, task, items, time.time(), acceptance)
        try:
            outcomes = await asyncio.wrap_future(c.committer.submit(task, checked.accepted))
        except UnknownTaskError:  # the task was deleted meanwhile
            c.forget(task_id)
            return _unknown_task(task_id)
        except Exception as exc:
            return problem(
                503,
                "Store unavailable",
                f"the reports were not stored ({type(exc).__name__}); retry the same envelopes",
                headers={"Retry-After": "1"},
            )
        outcome = upload_outcome(checked, outcomes)
        c.metrics.count_upload(outcome.accepted, outcome.replayed, [r.reason for r in outcome.rejected])
        return _json(outcome.to_dict(), headers=_cors_headers(task, request))

    @app.options("/v1/tasks/{task_id}/reports", include_in_schema=False)
    async def upload_preflight(task_id: str, request: Request) -> Response:
        task = await collector().task(task_id)
        if task is None:
            return _unknown_task(task_id)
        headers = _cors_headers(task, request)
        if not headers:
            return problem(403, "Forbidden", "this origin may not upload to this task")
        headers |= {
            "Access-Control-Allow-Methods": "POST",
            "Access-Control-Allow-Headers": "Content-Type",
            "Access-Control-Max-Age": "86400",
        }
        return Response(status_code=204, headers=headers)

    # -- tasks and specs ---------------------------------------------------
    @app.get(
        "/v1/tasks/{task_id}",
        summary="A task's public description",
        responses={200: {"content": {"application/json": {"schema": _TASK_SCHEMA}}}},
    )
    async def describe_task(task_id: str, request: Request) -> Response:
        task = await collector().task(task_id)
        if task is None:
            return _unknown_task(task_id)
        return _json(task.to_dict(), headers=_cors_headers(task, request))

    @app.get("/v1/tasks/{task_id}/spec", summary="The task's spec JSON (ETag: its fingerprint)")
    async def task_spec(task_id: str, request: Request) -> Response:
        task = await collector().task(task_id)
        if task is None:
            return _unknown_task(task_id)
        etag = f'"{task.fingerprint}"'
        headers = {"ETag": etag, "Cache-Control": "public, max-age=300", **_cors_headers(task, request)}
        if etag in [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]:
            return Response(status_code=304, headers=headers)
        return Response(task.spec_json, media_type="application/json", headers=headers)

    @app.get(
        "/v1/tasks/{task_id}/tables",
        summary="The numeric spec's sampling table (ETag: fingerprint and table digest)",
    )
    async def task_tables(task_id: str, request: Request) -> Response:
        task = await collector().task(task_id)
        if task is None:
            return _unknown_task(task_id)
        reply = await run_in_threadpool(_table_reply, task.spec_json)
        if reply is None:
            return problem(
                404,
                "Not Found",
                f"task {task_id!r} uses {task.spec.mechanism}, which has no numeric table "
                "(its probabilities are in GET /v1/tasks/{task}/spec)",
            )
        body, etag = reply
        headers = {"ETag": etag, "Cache-Control": "public, max-age=300", **_cors_headers(task, request)}
        if etag in [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    # -- estimates ---------------------------------------------------------
    @app.get("/v1/tasks/{task_id}/estimates", summary="Estimates over a range of windows (Bearer token)")
    async def estimates(
        task_id: str,
        request: Request,
        start: int | None = _query("from"),
        end: int | None = _query("to"),
        confidence: float = 0.95,
        by: str | None = None,
    ) -> Response:
        c = collector()
        task = await c.task(task_id)
        if task is None:
            return _unknown_task(task_id)
        token = _bearer(request)
        if token is None or not task.token_matches(token):
            return _unauthorized("give this task's collector token as 'Authorization: Bearer TOKEN'")
        if not 0 < confidence < 1:
            return problem(400, "Bad request", f"confidence must be in (0, 1), got {confidence}")
        if by not in (None, "window"):
            return problem(400, "Bad request", f"'by' takes only 'window', got {by!r}")
        check_range(task, start, end)
        head = {"task": task.task_id, "mechanism": task.spec.mechanism, "confidence": confidence}
        if by == "window":
            windows = await run_in_threadpool(c.windows.replies, task, confidence)
            selected = [
                w
                for w in windows
                if (start is None or w["start"] >= start) and (end is None or w["start"] < end)
            ]
            return _json({**head, "windows": selected})
        merged, counts = await run_in_threadpool(c.windows.merged_with_counts, task, start, end)
        reply = await run_in_threadpool(estimate_reply, task, merged, confidence, counts)
        return _json({**head, "from": start, "to": end, **reply})

    # -- dashboard ---------------------------------------------------------
    @app.get("/v1/dashboard", summary="Every visible task with its windows' estimates")
    async def dashboard_data(request: Request) -> Response:
        c = collector()
        if c.settings.dashboard_public:
            visible = list(c.tasks.values())
        else:
            token = _bearer(request)
            visible = c.token_tasks(token) if token else []
            if not visible:
                return _unauthorized("give a collector token as 'Authorization: Bearer TOKEN'")
        tasks = []
        for task in visible:
            windows = await run_in_threadpool(c.windows.replies, task, 0.95)
            tasks.append({**task_summary(task, 0.95), "task": task.task_id, "windows": windows})
        return _json({"tasks": tasks})

    @app.get("/", include_in_schema=False)
    async def dashboard_page() -> Response:
        return _static("index.html")

    @app.get("/static/{name}", include_in_schema=False)
    async def static_file(name: str) -> Response:
        return _static(name)

    # -- operations --------------------------------------------------------
    @app.get("/healthz", summary="Health: the store answers and could commit an upload now")
    async def healthz() -> Response:
        try:
            await run_in_threadpool(collector().store.check_writable)
        except StoreUnavailable as exc:
            return problem(503, "Store unavailable", str(exc))
        except Exception as exc:
            return problem(503, "Store unavailable", type(exc).__name__)
        return _json({"status": "ok"})

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics() -> Response:
        return Response(collector().metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return app


def _query(alias: str) -> Any:
    return Query(
        default=None,
        alias=alias,
        ge=0,
        lt=TIME_LIMIT,
        description=f"'{alias}' (Unix seconds, a window boundary, below 2**62)",
    )


#: ``GET /v1/tasks/{task}``: :meth:`ldp.collector.tasks.Task.to_dict`.
_TASK_SCHEMA: dict[str, Any] = {
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


def _openapi(app: FastAPI) -> dict[str, Any]:
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


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    404: "Not found",
    405: "Method not allowed",
    413: "Body too large",
}
_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
#: The dashboard needs nothing inline and nothing from another origin.
_PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@functools.cache
def _static_files() -> dict[str, bytes]:
    """The dashboard's files (package data ``ldp.collector/static``) by name, read once."""
    folder = resources.files("ldp.collector").joinpath("static")
    return {
        entry.name: entry.read_bytes()
        for entry in folder.iterdir()
        if entry.is_file() and _suffix(entry.name) in _STATIC_TYPES
    }


def _suffix(name: str) -> str:
    return name[name.rfind(".") :] if "." in name else ""


def _static(name: str) -> Response:
    """A file of the dashboard, looked up by exact name among the package's files (never a path from the request)."""
    data = _static_files().get(name)
    if data is None:
        return problem(404, "Not found", "no such file")
    return Response(
        data,
        media_type=_STATIC_TYPES[_suffix(name)],
        headers={"Content-Security-Policy": _PAGE_POLICY, "X-Content-Type-Options": "nosniff"},
    )
