"""The collector's HTTP layer in process (no server process): task lookups, bad parameters, access, CORS, aborts.

The app runs under Starlette's test client (lifespan included), or, where a
test needs a client that hangs up, driven as a bare ASGI application.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
from collector_server import create_task, envelopes, now_truncated, stop_rate_clock, store_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldp
from ldp.client import encode_batch
from ldp.collector import app as app_module
from ldp.collector.app import CollectorSettings, create_app
from ldp.collector.store import open_store
from ldp.collector.tasks import TIME_LIMIT, is_task_id, new_task

with warnings.catch_warnings():  # Starlette's test client warns that it still uses httpx
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


@contextlib.contextmanager
def client(settings: CollectorSettings, **options: Any) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False, **options) as opened:
        yield opened


def _problem(reply: Any, status: int) -> dict[str, Any]:
    assert reply.status_code == status, (reply.status_code, reply.text[:300])
    assert reply.headers["content-type"] == "application/problem+json", reply.text[:300]
    body = reply.json()
    assert body["status"] == status and body["title"] and body["detail"]
    return body


# -- 1. unknown task ids ---------------------------------------------------------------------------


class _CountingStore:
    """A store that counts whole-table reads and single-task lookups."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.table_reads = 0
        self.lookups = 0

    def tasks(self) -> Any:
        self.table_reads += 1
        return self._store.tasks()

    def task(self, task_id: str) -> Any:
        self.lookups += 1
        return self._store.task(task_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A store with 300 tasks, opened by the app through :class:`_CountingStore`."""
    store = store_path(tmp_path)
    with open_store(store) as opened:
        for _ in range(300):
            opened.create_task(new_task(GRR, window="1h", time_precision="1m")[0])
    stores: list[_CountingStore] = []

    def counting_open(url: str, **options) -> _CountingStore:
        stores.append(_CountingStore(open_store(url, **options)))
        return stores[-1]

    monkeypatch.setattr(app_module, "open_store", counting_open)
    return store, stores


def test_unknown_task_ids_cost_one_indexed_lookup_and_never_a_table_read(counted):
    store, stores = counted
    with client(CollectorSettings(store=store, rate_limit=0)) as http:
        (opened,) = stores
        reads_at_start = opened.table_reads
        for index in range(40):
            unknown = new_task(GRR)[0].task_id
            assert http.get(f"/v1/tasks/{unknown}/spec").status_code == 404
            assert http.post(f"/v1/tasks/{unknown}/reports", json=[]).status_code == 404
            assert http.get(f"/v1/tasks/{'x' * index}").status_code == 404  # not an id: no store work
        assert opened.table_reads == reads_at_start  # the background refresher alone re-reads the table
        assert opened.lookups == 80


def test_a_task_created_while_serving_is_found_by_one_lookup(tmp_path):
    store = store_path(tmp_path)
    with client(CollectorSettings(store=store, rate_limit=0)) as http:
        task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
        reports = [r.to_dict() for r in encode_batch(GRR, ["a", "b"], np.random.default_rng(1)).reports(GRR)]
        reply = http.post(f"/v1/tasks/{task.task_id}/reports", json=envelopes(reports, now_truncated(task)))
        assert reply.json()["accepted"] == 2, reply.text
        estimates = http.get(
            f"/v1/tasks/{task.task_id}/estimates", headers={"Authorization": f"Bearer {token}"}
        )
        assert estimates.json()["n"] == 2


def test_the_dashboard_finds_a_task_created_while_serving_by_its_token_with_one_indexed_read(counted):
    """Before the background refresh: the token of a task made since start-up reads it at once (it was a 401),
    and a token that reads nothing costs one indexed read, never a re-read of the task table."""
    store, stores = counted
    with client(CollectorSettings(store=store, rate_limit=0)) as http:
        (opened,) = stores
        task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
        reads = opened.table_reads
        reply = http.get("/v1/dashboard", headers={"Authorization": f"Bearer {token}"})
        assert reply.status_code == 200, reply.text
        assert [shown["task"] for shown in reply.json()["tasks"]] == [task.task_id]
        for attempt in range(20):
            refused = http.get("/v1/dashboard", headers={"Authorization": f"Bearer wrong-{attempt}"})
            assert refused.status_code == 401
        assert opened.table_reads == reads


def test_the_background_refresh_drops_deleted_tasks_and_adopts_new_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(app_module, "TASK_REFRESH_SECONDS", 0.05)
    store = store_path(tmp_path)
    gone, _ = create_task(store, GRR, window="1h", time_precision="1m")
    with client(CollectorSettings(store=store)) as http:
        assert http.get(f"/v1/tasks/{gone.task_id}").status_code == 200
        with open_store(store) as opened:
            opened.delete_task(gone.task_id)
        new, token = create_task(store, GRR, window="1h", time_precision="1m")
        deadline = time.monotonic() + 10
        while http.get(f"/v1/tasks/{gone.task_id}").status_code != 404:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        mine = http.get(
            "/v1/dashboard", headers={"Authorization": f"Bearer {token}"}
        )  # no lookup: the refresh
        assert [t["task"] for t in mine.json()["tasks"]] == [new.task_id]


def test_task_ids_are_checked_whole():
    task_id = new_task(GRR)[0].task_id
    assert is_task_id(task_id)
    for bad in (task_id + "\n", task_id + "A", task_id[:-1], " " + task_id, task_id[:-1] + "="):
        assert not is_task_id(bad), repr(bad)


# -- 2. bad parameters: a 4xx problem document, never a 500 ------------------------------------------

#: Every route with path parameters, and every query parameter of the API.
_PATHS = (
    "/v1/tasks/{task}",
    "/v1/tasks/{task}/spec",
    "/v1/tasks/{task}/tables",
    "/v1/tasks/{task}/estimates",
    "/v1/tasks/{task}/reports",
    "/static/{task}",
)
_QUERY = ("from", "to", "confidence", "by")
_AWKWARD = st.one_of(
    st.integers(min_value=-(1 << 80), max_value=1 << 80).map(str),
    st.integers(min_value=1 << 40, max_value=1 << 70).map(lambda k: str(k * 3600)),  # far window boundaries
    st.sampled_from(["", "nan", "inf", "-0", "1e400", "0x10", "1_000", "9" * 5000, "\x00", "..", "%", "é"]),
    st.sampled_from(["index.html\x00.js", "a" * 300 + ".js", "..%2fapp.py", "favicon.svg\n", "x.css/"]),
    st.text(max_size=60),
)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    store = store_path(tmp_path_factory.mktemp("http"))
    task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    with client(CollectorSettings(store=store, rate_limit=0)) as http:
        yield http, task, token


def test_the_reported_500s_are_4xx_problems(fuzzed):
    http, task, token = fuzzed
    auth = {"Authorization": f"Bearer {token}"}
    _problem(http.get("/static/index.html%00.js"), 404)
    _problem(http.get("/static/" + "a" * 5000 + ".js"), 404)
    past = 3600 * (1 << 60)  # a window boundary past 2**64
    for query in (f"to={past}", f"from={past}", f"from={past}&by=window", f"to={TIME_LIMIT}"):
        _problem(http.get(f"/v1/tasks/{task.task_id}/estimates?{query}", headers=auth), 400)
    assert http.get("/static/index.html").status_code == 200


_TARGETS = [f"path {path}" for path in _PATHS] + [f"query {name}" for name in _QUERY]
_REQUESTS = {
    "value": _AWKWARD,
    "by_window": st.booleans(),
    "method": st.sampled_from(["GET", "GET", "POST", "OPTIONS", "DELETE"]),
}


def _no_server_error(fuzzed, target, value, by_window, method):
    http, task, token = fuzzed
    where, name = target.split(" ", 1)
    if where == "path":
        url, query = name.format(task=quote(value, safe="")), {}
    else:
        url, query = (
            f"/v1/tasks/{task.task_id}/estimates",
            {name: value, **({"by": "window"} if by_window else {})},
        )
    reply = http.request(
        method, url, params=query, headers={"Authorization": f"Bearer {token}"}, content=b"[]"
    )
    assert reply.status_code < 500, (method, url, query, reply.status_code, reply.text[:300])
    if reply.status_code >= 400 and reply.status_code != 405:
        assert reply.headers["content-type"] == "application/problem+json", reply.text[:300]


@pytest.mark.parametrize("target", _TARGETS)
@given(**_REQUESTS)
@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_parameter_gets_a_server_error(fuzzed, target, value, by_window, method):
    """Each path parameter and each query parameter of the API, alone, takes any text (10 examples each, a
    smoke test; the slow set's test_no_parameter_gets_a_server_error_in_100_requests_each runs 100)."""
    _no_server_error(fuzzed, target, value, by_window, method)


@pytest.mark.slow
@pytest.mark.parametrize("target", _TARGETS)
@given(**_REQUESTS)
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_parameter_gets_a_server_error_in_100_requests_each(fuzzed, target, value, by_window, method):
    _no_server_error(fuzzed, target, value, by_window, method)


# -- 4. the dashboard's access --------------------------------------------------------------------


def test_the_dashboard_needs_a_token_by_default_even_from_loopback(tmp_path):
    """Behind a reverse proxy every request comes from loopback: that must not open the dashboard."""
    store = store_path(tmp_path)
    task, token = create_task(store, GRR, window="1h", time_precision="1m")
    other, _ = create_task(store, GRR, window="1h", time_precision="1m")
    with client(CollectorSettings(store=store), client=("127.0.0.1", 40000)) as http:
        _problem(http.get("/v1/dashboard"), 401)
        _problem(http.get("/v1/dashboard", headers={"Authorization": "Bearer wrong"}), 401)
        mine = http.get("/v1/dashboard", headers={"Authorization": f"Bearer {token}"})
        assert [t["task"] for t in mine.json()["tasks"]] == [task.task_id]
    with client(CollectorSettings(store=store, dashboard_public=True)) as http:
        shown = {t["task"] for t in http.get("/v1/dashboard").json()["tasks"]}
        assert shown == {task.task_id, other.task_id}


def test_uploads_past_the_per_address_burst_get_429_with_retry_after(tmp_path):
    """--rate-limit 1: bursts of 10, then one per second per address (the fast twin of test_collector_server's)."""
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    with client(CollectorSettings(store=store, rate_limit=1), client=("192.0.2.7", 40000)) as http:
        stop_rate_clock(http.app)
        replies = [http.post(f"/v1/tasks/{task.task_id}/reports", json=[]) for _ in range(15)]
    assert [reply.status_code for reply in replies[:10]] == [200] * 10
    limited = [reply for reply in replies[10:] if reply.status_code == 429]
    assert limited, [reply.status_code for reply in replies]
    _problem(limited[0], 429)
    assert int(limited[0].headers["Retry-After"]) >= 1


# -- 9. what a web client reads: the fingerprint, the ETag through CORS ------------------------------


def test_task_description_carries_the_fingerprint_and_cors_exposes_the_etag(tmp_path):
    store = store_path(tmp_path)
    origin = "https://app.example"
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", cors_origins=(origin,))
    with client(CollectorSettings(store=store)) as http:
        described = http.get(f"/v1/tasks/{task.task_id}", headers={"Origin": origin})
        spec = http.get(f"/v1/tasks/{task.task_id}/spec", headers={"Origin": origin})
    assert described.json()["fingerprint"] == GRR.fingerprint == spec.headers["etag"].strip('"')
    for reply in (described, spec):
        assert reply.headers["access-control-allow-origin"] == origin
        assert "etag" in reply.headers["access-control-expose-headers"].lower()


def test_the_openapi_schema_describes_the_task_reply_and_problem_documents(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", cors_origins=("*",))
    with client(CollectorSettings(store=store)) as http:
        schema = http.get("/openapi.json").json()
        described = http.get(f"/v1/tasks/{task.task_id}").json()
        unknown = http.get(f"/v1/tasks/{'A' * 43}").json()
    responses = schema["paths"]["/v1/tasks/{task_id}"]["get"]["responses"]
    jsonschema.validate(described, responses["200"]["content"]["application/json"]["schema"])
    jsonschema.validate(unknown, responses["4XX"]["content"]["application/problem+json"]["schema"])
    for operations in schema["paths"].values():
        for operation in operations.values():
            assert "422" not in operation["responses"]  # this app answers 400 problem documents
            assert "4XX" in operation["responses"]


def test_estimates_and_the_dashboard_carry_a_bloom_rappor_tasks_decoded_candidates(tmp_path):
    """Issue 29: the JSON API returns a Bloom RAPPOR task's decoded candidates (the dashboard the 20 largest),
    as its OpenAPI schema describes them."""
    jsonschema = pytest.importorskip("jsonschema")
    spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
    candidates = tuple(f"v{i}" for i in range(25))
    store = store_path(tmp_path)
    task, token = create_task(
        store, spec, window="1h", time_precision="1m", min_batch=10, candidates=candidates
    )
    values = list(np.random.default_rng(5).choice(candidates[:4], size=800, p=[0.4, 0.3, 0.2, 0.1]))
    reports = list(encode_batch(spec, values, np.random.default_rng(6)).reports(spec))
    auth = {"Authorization": f"Bearer {token}"}
    with client(CollectorSettings(store=store)) as http:
        schema = http.get("/openapi.json").json()
        uploaded = http.post(
            f"/v1/tasks/{task.task_id}/reports", json=envelopes(reports, now_truncated(task))
        )
        assert uploaded.status_code == 200, uploaded.text
        whole = http.get(f"/v1/tasks/{task.task_id}/estimates", headers=auth).json()
        by_window = http.get(f"/v1/tasks/{task.task_id}/estimates?by=window", headers=auth).json()
        dashboard = http.get("/v1/dashboard", headers=auth).json()
        described = http.get(f"/v1/tasks/{task.task_id}").json()
    assert "candidates" not in described  # the public description never lists them
    ok = "200"
    estimates = schema["paths"]["/v1/tasks/{task_id}/estimates"]["get"]["responses"][ok]
    board = schema["paths"]["/v1/dashboard"]["get"]["responses"][ok]
    for reply in (whole, by_window):
        jsonschema.validate(reply, estimates["content"]["application/json"]["schema"])
    jsonschema.validate(dashboard, board["content"]["application/json"]["schema"])
    assert len(whole["candidates"]["rows"]) == len(by_window["windows"][0]["candidates"]["rows"]) == 25
    assert whole["candidates"] == by_window["windows"][0]["candidates"]  # one window: the same decode
    [shown] = dashboard["tasks"]
    assert shown["num_candidates"] == 25 and shown["windows"][0]["candidates"]["num_candidates"] == 25
    assert shown["windows"][0]["candidates"]["rows"] == whole["candidates"]["rows"][:20]


# -- 8. a client that hangs up mid-upload ---------------------------------------------------------


@contextlib.asynccontextmanager
async def _lifespan(app: Any) -> AsyncIterator[None]:
    """Run ``app``'s lifespan around the block, as a server does."""
    to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    running = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, to_app.get, from_app.put)
    )
    await to_app.put({"type": "lifespan.startup"})
    assert (await from_app.get())["type"] == "lifespan.startup.complete"
    try:
        yield
    finally:
        await to_app.put({"type": "lifespan.shutdown"})
        await from_app.get()
        await running


async def _upload_then_hang_up(app: Any, task_id: str) -> list[dict[str, Any]]:
    """An upload whose client sends part of its body, then disconnects; the messages the app sent."""
    sent: list[dict[str, Any]] = []
    messages = iter(
        [
            {"type": "http.request", "body": b'[{"id": "', "more_body": True},
            {"type": "http.disconnect"},
        ]
    )

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": f"/v1/tasks/{task_id}/reports",
        "raw_path": f"/v1/tasks/{task_id}/reports".encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"5000")],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }
    await app(scope, receive, send)
    return sent


def test_a_client_hanging_up_mid_upload_is_counted_as_a_disconnect_in_one_log_line(tmp_path, caplog):
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m")
    app = create_app(CollectorSettings(store=store))

    async def scenario() -> tuple[list[dict[str, Any]], bytes]:
        async with _lifespan(app):
            sent = await _upload_then_hang_up(app, task.task_id)
            metrics: list[dict[str, Any]] = []

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                metrics.append(message)

            scope = {
                "type": "http",
                "asgi": {"version": "3.0"},
                "method": "GET",
                "path": "/metrics",
                "raw_path": b"/metrics",
                "query_string": b"",
                "root_path": "",
                "headers": [],
                "scheme": "http",
            }
            await app(scope, receive, send)
            return sent, b"".join(m.get("body", b"") for m in metrics)

    with caplog.at_level(logging.WARNING):
        sent, metrics = asyncio.run(scenario())
    assert sent[0]["status"] == 499
    assert json.loads(sent[1]["body"])["detail"] == "client_disconnect"
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1 and lines[0].exc_info is None, [r.getMessage() for r in lines]
    assert "client closed the connection" in lines[0].getMessage()
    text = metrics.decode()
    assert 'ldp_aborted_requests_total{reason="client_disconnect"} 1.0' in text
    assert 'route="/v1/tasks/{task_id}/reports",status="5xx"' not in text
    assert 'route="/v1/tasks/{task_id}/reports",status="4xx"' in text


# -- the upload route's direct handler ---------------------------------------------------------------


class _Refusing:
    """An ASGI app in place of FastAPI's middleware stack: records each request and answers 418."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.seen.append(f"{scope['method']} {scope['path']}")
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _replies(http: TestClient, task: Any, origin: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    """Uploads good and bad: status, content type, CORS origin header and JSON body of each reply."""
    reports = list(encode_batch(GRR, ["a", "b"], np.random.default_rng(1)).reports(GRR))
    good = envelopes(reports, now_truncated(task))
    bad = [*good, {"id": "x", "t": 1, "report": {}}, "not an envelope"]
    path = f"/v1/tasks/{task.task_id}/reports"
    requests: list[tuple[str, dict[str, Any]]] = [
        (path, {"json": good}),
        (path, {"json": bad, "headers": {"Origin": origin}}),
        (path, {"content": b"[{", "headers": {"Content-Type": "application/json"}}),
        (path, {"content": b"a=1", "headers": {"Content-Type": "application/x-www-form-urlencoded"}}),
        (
            path,
            {"content": b"[]", "headers": {"Content-Type": "application/json", "Content-Length": "99999999"}},
        ),
        (path, {"content": json.dumps(good[0]).encode(), "headers": {"Content-Type": "text/plain"}}),
        ("/v1/tasks/AAAAAAAAAAAAAAAAAAAAAA/reports", {"json": good}),
        ("/v1/tasks/not%20a%20task/reports", {"json": good}),
    ]
    replies = []
    for url, options in requests:
        reply = http.post(url, **options)
        replies.append(
            (
                reply.status_code,
                reply.headers.get("content-type", ""),
                reply.headers.get("access-control-allow-origin", ""),
                reply.json(),
            )
        )
    return replies


def test_uploads_are_served_by_the_direct_handler_with_fastapis_replies(tmp_path, monkeypatch):
    """``POST /v1/tasks/{task_id}/reports`` never enters FastAPI's middleware and routing (the stack is
    replaced by one that refuses), and every reply, good or bad (refusals as problem documents, CORS
    headers, a server fault as a 500 problem), is what the FastAPI route gives with the direct handler off;
    other methods on the same path still take FastAPI's stack."""
    store = store_path(tmp_path)
    origin = "https://example.org"
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", cors_origins=(origin,))
    with client(CollectorSettings(store=store, rate_limit=0)) as http:
        app = http.app
        assert isinstance(app, app_module.CollectorApp) and app.direct_upload is not None
        direct = app.direct_upload
        app.direct_upload = None
        through_fastapi = _replies(http, task, origin)
        refusing = _Refusing()
        stack, app.middleware_stack = app.middleware_stack, refusing
        app.direct_upload = direct
        assert _replies(http, task, origin) == through_fastapi
        assert [status for status, *_ in through_fastapi] == [200, 200, 400, 415, 413, 415, 404, 404]
        assert through_fastapi[1][2] == origin and len(through_fastapi[1][3]["rejected"]) == 2
        monkeypatch.setattr(app.state.service.ingestion, "ingest_body", _fails)
        fault = http.post(f"/v1/tasks/{task.task_id}/reports", json=[])
        _problem(fault, 500)
        assert refusing.seen == []
        assert http.options(f"/v1/tasks/{task.task_id}/reports").status_code == 418
        assert http.post(f"/v1/tasks/{task.task_id}/reports/", json=[]).status_code == 418
        assert refusing.seen == [
            f"OPTIONS /v1/tasks/{task.task_id}/reports",
            f"POST /v1/tasks/{task.task_id}/reports/",
        ]
        app.middleware_stack = stack
        metrics = http.get("/metrics").text
    route = 'route="/v1/tasks/{task_id}/reports"'
    for status in ("2xx", "4xx", "5xx"):
        assert f'ldp_request_seconds_count{{{route},status="{status}"}}' in metrics, status


async def _fails(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the server's own fault")


class _Teapot(Exception):
    pass


def test_the_direct_handler_answers_with_a_plain_exception_handler_as_starlette_does(tmp_path, monkeypatch):
    """A handler that is a plain function (Starlette runs it in a worker thread) answers the direct route's
    errors too, and the request is timed under the upload route."""
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m")
    app = create_app(CollectorSettings(store=store, rate_limit=0))
    app.add_exception_handler(_Teapot, lambda request, exc: app_module.Response(b"tea", status_code=418))
    with TestClient(app, raise_server_exceptions=False) as http:
        monkeypatch.setattr(app.state.service.ingestion, "ingest_body", _teapot)
        reply = http.post(f"/v1/tasks/{task.task_id}/reports", json=[])
        metrics = http.get("/metrics").text
    assert (reply.status_code, reply.content) == (418, b"tea")
    assert 'ldp_request_seconds_count{route="/v1/tasks/{task_id}/reports",status="4xx"} 1.0' in metrics


async def _teapot(*args: Any, **kwargs: Any) -> Any:
    raise _Teapot()
