"""The collector's HTTP API (docs/collector.md): uploads, specs, estimates, health, metrics, the dashboard.

:func:`create_app` builds a FastAPI application over one store. This module
is the HTTP layer only: each route reads its request (path, query, bearer
token, body), calls the collector service (:mod:`ldp.collector.service`:
tasks, ingestion, estimates) and writes its answer. A refusal is an error
raised by the service and answered by the one mapping
:func:`ldp.collector.problems.problem_for`: every error reply is a problem
document (RFC 9457). Client addresses are used in memory for rate limiting
and never stored or logged by this module.

A task id not held in memory costs one indexed store lookup, in a worker
thread; only a background task re-reads the whole task list (every
:data:`TASK_REFRESH_SECONDS`). The dashboard needs a collector token unless
:attr:`CollectorSettings.dashboard_public`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import State
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ldp.collector.direct_route import DirectRoute, StatusRecorder
from ldp.collector.envelopes import MAX_BODY_BYTES, UnreadableBody
from ldp.collector.errors import OriginForbidden, UploadAborted
from ldp.collector.metrics import CONTENT_TYPE_LATEST
from ldp.collector.openapi import DASHBOARD_SCHEMA, ESTIMATES_SCHEMA, TASK_SCHEMA, UPLOAD_BODY, openapi_schema
from ldp.collector.problems import HANDLED, problem_for, refusal_reason
from ldp.collector.service import CollectorService, CollectorSettings, numeric_table
from ldp.collector.static_files import static_reply
from ldp.collector.store import open_store
from ldp.collector.tasks import TIME_LIMIT, Task
from ldp.collector.windows import SYNC_SECONDS

__all__ = ["READ_TIMED_OUT", "CollectorApp", "CollectorSettings", "create_app", "numeric_table"]

#: Scope key the server sets when it closed a request whose body did not arrive in time
#: (:class:`ldp.collector.serving.BoundedReadProtocol`): the app then sees a disconnect.
READ_TIMED_OUT = "ldp.read_timed_out"

_log = logging.getLogger("ldp.collector")

#: Seconds between re-reads of the task list (tasks created or deleted by ``ldp task`` while serving).
TASK_REFRESH_SECONDS = 5.0
#: Seconds between two trims of a shared store's commit log (by each server).
COMMIT_LOG_TRIM_SECONDS = 60.0
#: How long a client may cache a task's spec or numeric table.
_CACHE_CONTROL = "public, max-age=300"


def create_app(settings: CollectorSettings | str) -> CollectorApp:
    """The collector application over ``settings.store`` (a store URL alone takes the defaults)."""
    if isinstance(settings, str):
        settings = CollectorSettings(store=settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = app.state.service = await run_in_threadpool(_open_service, settings)
        background = [asyncio.create_task(_refresh_periodically(service))]
        if service.store.shared:
            background.append(asyncio.create_task(_sync_periodically(service)))
        background.append(asyncio.create_task(_prune_periodically(service, settings.prune_seconds)))
        try:
            yield
        finally:
            for job in background:
                job.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job
            await run_in_threadpool(service.close)

    app = CollectorApp(
        title="ldp collector",
        summary="Locally differentially private reports in, windowed estimates with error bars out.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.openapi = functools.partial(openapi_schema, app)  # type: ignore[method-assign]
    for error in HANDLED:
        app.add_exception_handler(error, _aborted if error is UploadAborted else _answer)
    app.add_exception_handler(Exception, _answer)  # a fault of the server's own: a 500 problem document
    app.add_middleware(_Timing, state=app.state)
    app.include_router(_routes)
    upload_route = next(r for r in _routes.routes if isinstance(r, APIRoute) and r.endpoint is upload)
    app.direct_upload = DirectRoute(
        upload_route,
        "POST",
        _upload_direct,
        app.exception_handlers,
        functools.partial(_observe_request, app.state),
    )
    return app


class CollectorApp(FastAPI):
    """The FastAPI application, whose upload route (``POST /v1/tasks/{task_id}/reports``) is served by
    :attr:`direct_upload` (:class:`~ldp.collector.direct_route.DirectRoute`), outside FastAPI's layers.

    Every other request takes the FastAPI stack; so do uploads when :attr:`direct_upload` is None.
    """

    direct_upload: DirectRoute | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        direct = self.direct_upload
        if direct is not None and direct.claim(scope):
            scope["app"] = self  # as Starlette does: request.app is the application
            await direct(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _open_service(settings: CollectorSettings) -> CollectorService:
    """The service over ``settings.store``, opened exclusively (blocking).

    Exclusive: a second server on one SQLite file is refused (each would count only its own uploads).
    """
    store = open_store(settings.store, exclusive=True)
    try:
        return CollectorService(settings, store)
    except BaseException:
        store.close()
        raise


async def _refresh_periodically(service: CollectorService) -> None:
    """Re-read the task list every :data:`TASK_REFRESH_SECONDS` (tasks created or deleted by ``ldp task``)."""
    while True:
        await asyncio.sleep(TASK_REFRESH_SECONDS)
        try:
            await run_in_threadpool(service.registry.refresh)
        except Exception as exc:  # the store is down: keep serving the tasks in memory, try again later
            _log.warning(
                "could not re-read the task list (%s); retrying in %g s",
                type(exc).__name__,
                TASK_REFRESH_SECONDS,
            )


async def _sync_periodically(service: CollectorService) -> None:
    """Every :data:`~ldp.collector.windows.SYNC_SECONDS`, count what other servers committed (a shared store).

    Every :data:`COMMIT_LOG_TRIM_SECONDS` it also trims the store's commit log.
    """
    trimmed = time.monotonic()
    while True:
        await asyncio.sleep(SYNC_SECONDS)
        try:
            await run_in_threadpool(service.registry.sync)
            if time.monotonic() - trimmed > COMMIT_LOG_TRIM_SECONDS:
                trimmed = time.monotonic()
                await run_in_threadpool(service.registry.forget_commits)
        except Exception as exc:  # the store is down: keep serving what is held, try again later
            _log.warning(
                "could not catch up with the store (%s); retrying in %g s", type(exc).__name__, SYNC_SECONDS
            )


async def _prune_periodically(service: CollectorService, every: float) -> None:
    """A retention run at start and every ``every`` seconds (:meth:`CollectorService.prune`); one log line per task
    that lost windows (task ids and counts only)."""
    from ldp.collector.retention import describe

    while True:
        try:
            for result in await run_in_threadpool(service.prune):
                task = service.registry.tasks.get(result.task_id)
                if task is not None and (result.kept or result.reports_deleted or result.retry):
                    _log.info("retention: %s", describe(result, task))
        except Exception as exc:  # the store is down: try again at the next run
            _log.warning("retention run failed (%s); retrying in %g s", type(exc).__name__, every)
        await asyncio.sleep(every)


async def _answer(request: Request, exc: Exception) -> Response:
    reply = problem_for(exc)
    if 400 <= reply.status_code < 500:
        _count_refusal(request, reply.status_code, exc)
    return reply


def _count_refusal(request: Request, status: int, exc: Exception) -> None:
    """Count a 4xx by status and reason (``ldp_http_errors_total``); nothing about the sender."""
    service: CollectorService | None = getattr(request.app.state, "service", None)
    if service is not None:
        service.metrics.count_refusal(status, refusal_reason(exc))


async def _aborted(request: Request, exc: Exception) -> Response:
    """An upload whose body never came: counted and logged (never with the address), then answered 499."""
    assert isinstance(exc, UploadAborted)
    _service(request).metrics.aborted.labels(exc.reason).inc()
    _count_refusal(request, 499, exc)
    if exc.reason == "read_timeout":
        _log.warning("upload cut off: its body did not arrive within the read timeout")
    else:
        _log.warning("upload aborted: the client closed the connection before its body arrived")
    return problem_for(exc)


def _service(request: Request) -> CollectorService:
    service: CollectorService = request.app.state.service
    return service


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


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


def _cached(body: bytes | str, etag: str, task: Task, request: Request) -> Response:
    """``body`` with its ETag, or 304 when the client holds it already (``If-None-Match``)."""
    headers = {"ETag": etag, "Cache-Control": _CACHE_CONTROL, **_cors_headers(task, request)}
    if etag in [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


async def _read_body(request: Request) -> bytes:
    """The request body, refusing (413) as soon as it passes :data:`MAX_BODY_BYTES`.

    Raises :class:`~ldp.collector.errors.UploadAborted` when the connection ends before the body does.
    """
    try:
        return await _read_capped(request)
    except ClientDisconnect:
        reason = "read_timeout" if request.scope.get(READ_TIMED_OUT) else "client_disconnect"
        raise UploadAborted(reason) from None


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


class _Timing:
    """Request durations by route and status class into the metrics, as a plain ASGI middleware.

    (Starlette's ``@app.middleware("http")`` wraps every request in a task
    group and memory streams: a measured 8-10 % of the server's CPU on uploads.)
    """

    def __init__(self, app: ASGIApp, state: State) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        send_status = StatusRecorder(send)
        try:
            await self.app(scope, receive, send_status)
        finally:
            path = getattr(scope.get("route"), "path", "unmatched")
            _observe_request(self.state, path, send_status.status, time.perf_counter() - started)


def _observe_request(state: State, path: str, status: int, seconds: float) -> None:
    """One request's duration into the metrics, by route and status class (once the service is open)."""
    service: CollectorService | None = getattr(state, "service", None)
    if service is not None:
        service.metrics.requests.labels(path, f"{status // 100}xx").observe(seconds)


def _query(alias: str) -> Any:
    return Query(
        default=None,
        alias=alias,
        ge=0,
        lt=TIME_LIMIT,
        description=f"'{alias}' (Unix seconds, a window boundary, below 2**62)",
    )


# -- routes: read the request, call the service, write the answer -----------------------------------
_routes = APIRouter()


@_routes.post("/v1/tasks/{task_id}/reports", openapi_extra=UPLOAD_BODY, summary="Upload report envelopes")
async def upload(task_id: str, request: Request) -> Response:
    service = _service(request)
    service.ingestion.admit(
        request.client.host if request.client else "", request.headers.get("x-forwarded-for")
    )
    task = await service.task(task_id)
    body = await _read_body(request)
    # text/plain JSON Lines (sendBeacon, no preflight) only from an origin the task allows
    beacon = bool(_cors_headers(task, request))
    outcome = await service.ingestion.ingest_body(
        task, body, request.headers.get("content-type"), beacon=beacon
    )
    return _json(outcome.to_dict(), headers=_cors_headers(task, request))


async def _upload_direct(request: Request) -> Response:
    """:func:`upload` as the direct route calls it (its path parameter from the request)."""
    return await upload(request.path_params["task_id"], request)


@_routes.options("/v1/tasks/{task_id}/reports", include_in_schema=False)
async def upload_preflight(task_id: str, request: Request) -> Response:
    task = await _service(request).task(task_id)
    headers = _cors_headers(task, request)
    if not headers:
        raise OriginForbidden()
    headers |= {
        "Access-Control-Allow-Methods": "POST",
        "Access-Control-Allow-Headers": "Content-Type",
        "Access-Control-Max-Age": "86400",
    }
    return Response(status_code=204, headers=headers)


@_routes.get(
    "/v1/tasks/{task_id}",
    summary="A task's public description",
    responses={200: {"content": {"application/json": {"schema": TASK_SCHEMA}}}},
)
async def describe_task(task_id: str, request: Request) -> Response:
    task = await _service(request).task(task_id)
    return _json(task.to_dict(), headers=_cors_headers(task, request))


@_routes.get("/v1/tasks/{task_id}/spec", summary="The task's spec JSON (ETag: its fingerprint)")
async def task_spec(task_id: str, request: Request) -> Response:
    task = await _service(request).task(task_id)
    return _cached(task.spec_json, f'"{task.fingerprint}"', task, request)


@_routes.get(
    "/v1/tasks/{task_id}/tables",
    summary="The numeric spec's sampling table (ETag: fingerprint and table digest)",
)
async def task_tables(task_id: str, request: Request) -> Response:
    service = _service(request)
    task = await service.task(task_id)
    body, etag = await service.estimates.table(task)
    return _cached(body, etag, task, request)


@_routes.get(
    "/v1/tasks/{task_id}/estimates",
    summary="Estimates over a range of windows (Bearer token)",
    responses={200: {"content": {"application/json": {"schema": ESTIMATES_SCHEMA}}}},
)
async def estimates(
    task_id: str,
    request: Request,
    start: int | None = _query("from"),
    end: int | None = _query("to"),
    confidence: float = 0.95,
    by: str | None = None,
) -> Response:
    service = _service(request)
    task = await service.task(task_id)
    service.estimates.authorize(task, _bearer(request))
    return _json(await service.estimates.estimates(task, start, end, confidence, by))


@_routes.get(
    "/v1/dashboard",
    summary="Every visible task with its windows' estimates",
    responses={200: {"content": {"application/json": {"schema": DASHBOARD_SCHEMA}}}},
)
async def dashboard_data(request: Request) -> Response:
    return _json(await _service(request).estimates.dashboard(_bearer(request)))


@_routes.get("/", include_in_schema=False)
async def dashboard_page() -> Response:
    return static_reply("index.html")


@_routes.get("/static/{name}", include_in_schema=False)
async def static_file(name: str) -> Response:
    return static_reply(name)


@_routes.get("/healthz", summary="Liveness: the process serves requests (it never asks the store)")
async def healthz(request: Request) -> Response:
    _service(request)  # the service is open: start-up is over
    return _json({"status": "ok"})


@_routes.get("/readyz", summary="Readiness: the store answers and could commit an upload now")
async def readyz(request: Request) -> Response:
    await _service(request).check_health()
    return _json({"status": "ok"})


@_routes.get("/metrics", summary="Prometheus metrics")
async def metrics(request: Request) -> Response:
    return Response(_service(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)
