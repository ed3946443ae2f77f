"""What an operator relies on (issue 29, Operations): liveness and readiness, the metrics alerts read,
rate limits behind trusted proxies, structured logs with no sender data.

In process under Starlette's test client, except the log test, which reads a real ``ldp serve``'s
standard error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import re
import sqlite3
import threading
import time
import types
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from collector_server import (
    Server,
    create_task,
    envelopes,
    http_client,
    now_truncated,
    stop_rate_clock,
    store_path,
)

import ldp
from ldp.client import encode_batch
from ldp.collector.app import CollectorSettings, create_app
from ldp.collector.forwarded import TrustedProxies, parse_networks
from ldp.collector.ingest import GroupCommitter
from ldp.collector.metrics import CollectorMetrics
from ldp.collector.ratelimit import RateLimiter
from ldp.collector.store import Insert, open_store
from ldp.collector.upload_batch import check_upload_body
from ldp.collector.windows import Windows
from ldp.errors import ParameterError

with warnings.catch_warnings():  # Starlette's test client warns that it still uses httpx
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


@contextlib.contextmanager
def client(settings: CollectorSettings, **options: Any) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False, **options) as opened:
        yield opened


def _reports(n: int, seed: int = 1) -> list[dict[str, Any]]:
    values = ["a", "b", "c"] * (n // 3 + 1)
    return [r.to_dict() for r in encode_batch(GRR, values[:n], np.random.default_rng(seed)).reports(GRR)]


def _samples(text: str, name: str) -> dict[str, float]:
    """``{labels: value}`` of every sample of metric ``name`` in a Prometheus exposition."""
    found = {}
    for line in text.splitlines():
        match = re.fullmatch(rf"{re.escape(name)}(\{{.*\}})? (\S+)", line)
        if match:
            found[match[1] or ""] = float(match[2])
    return found


# -- liveness and readiness --------------------------------------------------------------------------


def test_readyz_fails_while_the_store_cannot_commit_and_healthz_stays_live(tmp_path):
    """/healthz is liveness (the process serves); /readyz is 503 while no upload could be committed.

    Before: /healthz was the store probe (a locked store made the process look dead) and /readyz did not exist.
    """
    store = store_path(tmp_path)
    create_task(store, GRR, window="1h", time_precision="1m")
    with client(CollectorSettings(store=store)) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        assert http.get("/readyz").json() == {"status": "ok"}
        other = sqlite3.connect(store, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the store: nothing can be committed
        try:
            ready, live = http.get("/readyz"), http.get("/healthz")
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert live.status_code == 200 and live.json() == {"status": "ok"}
        assert ready.status_code == 503 and ready.headers["content-type"] == "application/problem+json"
        assert ready.json()["title"] == "Store unavailable" and "locked" in ready.json()["detail"]
        assert http.get("/readyz").status_code == 200


# -- metrics -----------------------------------------------------------------------------------------


def test_every_4xx_is_counted_by_status_and_reason(tmp_path):
    """Before: 429, 413, 400 and 404 were only a status class in ldp_request_seconds, with no reason."""
    store = store_path(tmp_path)
    task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    reports = f"/v1/tasks/{task.task_id}/reports"
    with client(CollectorSettings(store=store, rate_limit=1)) as http:
        stop_rate_clock(http.app)
        http.post(f"/v1/tasks/{'A' * 43}/reports", json=[])  # 404 unknown_task
        http.get("/no/such/path")  # 404 not_found
        http.post(reports, content=b"[", headers={"content-type": "application/json"})  # 400 malformed_json
        http.post(reports, content=b"x" * (1 << 21), headers={"content-type": "application/json"})  # 413
        http.get(
            f"/v1/tasks/{task.task_id}/estimates",
            params={"confidence": 2},
            headers={"Authorization": f"Bearer {token}"},
        )  # 400
        http.get(f"/v1/tasks/{task.task_id}/estimates")  # 401
        statuses = [http.post(reports, json=[]).status_code for _ in range(12)]  # burst of 10, then 429
        text = http.get("/metrics").text
    counted = _samples(text, "ldp_http_errors_total")
    assert statuses.count(429) >= 1
    assert counted['{reason="unknown_task",status="404"}'] == 1
    assert counted['{reason="not_found",status="404"}'] == 1
    assert counted['{reason="malformed_json",status="400"}'] == 1
    assert counted['{reason="body_too_large",status="413"}'] == 1
    assert counted['{reason="bad_parameter",status="400"}'] == 1
    assert counted['{reason="unauthorized",status="401"}'] == 1
    assert counted['{reason="rate_limited",status="429"}'] == statuses.count(429)
    assert sum(counted.values()) == 6 + statuses.count(429)


def test_metrics_show_windows_held_and_process_memory(tmp_path):
    store = store_path(tmp_path)
    start = int(time.time()) // 3600 * 3600 - 3600  # the task began in the previous hour's window
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1, not_before=start)
    t = now_truncated(task)
    with client(CollectorSettings(store=store)) as http:
        assert _samples(http.get("/metrics").text, "ldp_windows_held") == {"": 0.0}
        items = envelopes(_reports(4), [t, t, start, start])
        assert http.post(f"/v1/tasks/{task.task_id}/reports", json=items).json()["accepted"] == 4
        text = http.get("/metrics").text
    assert _samples(text, "ldp_windows_held") == {"": 2.0}
    assert _samples(text, "ldp_commit_queue_uploads") == {"": 0.0}
    assert _samples(text, "ldp_commit_running_seconds") == {"": 0.0}
    assert _samples(text, "process_resident_memory_bytes")[""] > 10e6


class _StalledStore:
    """A store whose commits wait for ``release``."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def insert_reports(self, groups: Any) -> list[list[Any]]:
        self.started.set()
        self.release.wait(30)
        return [[] for _ in groups]

    def insert_reports_versioned(self, groups: Any) -> tuple[list[list[Any]], dict[str, int]]:
        return self.insert_reports(groups), {}


def test_a_stalled_commit_shows_in_the_running_commit_age_and_the_queue_depth():
    store = _StalledStore()
    metrics = CollectorMetrics()
    committer = GroupCommitter(store, Windows())  # type: ignore[arg-type]
    metrics.watch(committer.queued, committer.commit_seconds, lambda: 0)
    task = types.SimpleNamespace(task_id="t")
    one = [types.SimpleNamespace(stored=None)]
    try:
        first = committer.submit(task, one)  # type: ignore[arg-type]
        assert store.started.wait(10)
        waiting = [committer.submit(task, one) for _ in range(3)]  # type: ignore[arg-type]
        time.sleep(0.2)
        text = metrics.render().decode()
        assert _samples(text, "ldp_commit_queue_uploads") == {"": 3.0}
        assert _samples(text, "ldp_commit_running_seconds")[""] >= 0.2
    finally:
        store.release.set()
    concurrent.futures.wait([first, *waiting], timeout=10)
    committer.close()
    text = metrics.render().decode()
    assert _samples(text, "ldp_commit_queue_uploads") == {"": 0.0}
    assert _samples(text, "ldp_commit_running_seconds") == {"": 0.0}


def test_an_upload_cancelled_while_it_waits_for_its_commit_does_not_stop_the_writer():
    """A cancelled future (a request cancelled at a graceful stop's deadline) killed the writer thread:
    its commit's ``set_result`` raised InvalidStateError, and no later upload was ever answered."""
    store = _StalledStore()
    committer = GroupCommitter(store, Windows())  # type: ignore[arg-type]
    task = types.SimpleNamespace(task_id="t")
    one = [types.SimpleNamespace(stored=None)]
    first = committer.submit(task, one)  # type: ignore[arg-type]
    assert store.started.wait(10)
    cancelled = committer.submit(task, one)  # type: ignore[arg-type]
    assert cancelled.cancel()
    store.release.set()
    assert first.result(10) == []
    assert committer.submit(task, one).result(10) == []  # type: ignore[arg-type]
    committer.close()


def test_the_uploads_of_one_group_are_woken_by_one_call_on_their_loop():
    """One ``call_soon_threadsafe`` per group and loop (each is a self-pipe write and read), not one per upload;
    an upload cancelled meanwhile is skipped and the others get their results."""
    store = _StalledStore()
    committer = GroupCommitter(store, Windows())  # type: ignore[arg-type]
    task = types.SimpleNamespace(task_id="t")
    one = [types.SimpleNamespace(stored=None)]

    async def main() -> tuple[list[Any], int]:
        loop = asyncio.get_running_loop()
        calls = 0
        threadsafe = loop.call_soon_threadsafe

        def counting(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            return threadsafe(*args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        first = asyncio.ensure_future(committer.commit(task, one))  # type: ignore[arg-type]
        while not store.started.is_set():
            await asyncio.sleep(0.01)
        waiting = [asyncio.ensure_future(committer.commit(task, one)) for _ in range(4)]  # type: ignore[arg-type]
        await asyncio.sleep(0.05)  # all four queued behind the stalled commit
        waiting[1].cancel()
        store.release.set()
        results = await asyncio.gather(first, *waiting, return_exceptions=True)
        after = await asyncio.wait_for(committer.commit(task, one), 10)  # type: ignore[arg-type]
        return [*results, after], calls

    results, calls = asyncio.run(main())
    committer.close()
    assert results[0] == [] and results[1] == [] and results[3:] == [[], [], []]
    assert isinstance(results[2], asyncio.CancelledError)
    assert calls == 3  # the first group, the group of four, the last upload


class _HeldStore:
    """A real store whose first commit waits for ``release``; records the groups of every commit."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls: list[list[tuple[str, int]]] = []

    def insert_reports_versioned(self, groups: Any) -> tuple[list[list[Any]], dict[str, int]]:
        self.calls.append([(task_id, len(reports)) for task_id, reports in groups])
        self.started.set()
        self.release.wait(30)
        return self.store.insert_reports_versioned(groups)


def test_a_group_commit_stores_each_tasks_uploads_as_one_group_and_answers_each_upload(tmp_path):
    """The uploads of one commit reach the store as one group per task (one task lookup, window check and
    insert, not one per upload), and each upload still gets its own outcomes: a replay and an id conflict
    land in the upload that sent them."""
    path = store_path(tmp_path)
    one, _ = create_task(path, GRR, window="1h", time_precision=60, min_batch=1)
    two, _ = create_task(path, GRR, window="1h", time_precision=60, min_batch=1)
    t = now_truncated(one)

    def accepted(task: Any, items: list[dict[str, Any]]) -> Any:
        checked = check_upload_body(task, json.dumps(items).encode(), "application/json", time.time())
        assert checked is not None and not checked.rejected
        return checked.accepted

    first, second, other = (
        envelopes(_reports(3), t),
        envelopes(_reports(2, seed=2), t),
        envelopes(_reports(2), t),
    )
    different = next(report for report in _reports(6, seed=4) if report != first[2]["report"])
    third = [first[1], {**first[2], "report": different}, *envelopes(_reports(1, seed=3), t)]
    with open_store(path) as opened:
        held = _HeldStore(opened)
        committer = GroupCommitter(held, Windows())  # type: ignore[arg-type]
        try:
            futures = [committer.submit(one, accepted(one, first))]
            assert held.started.wait(10)
            futures += [
                committer.submit(one, accepted(one, second)),
                committer.submit(two, accepted(two, other)),
                committer.submit(one, accepted(one, third)),
            ]
            time.sleep(0.2)  # all three queued behind the held commit
            held.release.set()
            results = [future.result(10) for future in futures]
        finally:
            held.release.set()
            committer.close()
    stored = Insert.STORED
    assert held.calls == [[(one.task_id, 3)], [(one.task_id, 5), (two.task_id, 2)]]
    assert results == [[stored] * 3, [stored] * 2, [stored] * 2, [Insert.REPLAYED, Insert.CONFLICT, stored]]


# -- rate limits behind a reverse proxy ---------------------------------------------------------------


def test_the_forwarded_address_is_read_only_from_trusted_proxies():
    proxies = TrustedProxies(["127.0.0.1", "10.0.0.0/8"])
    assert proxies.client("127.0.0.1", "198.51.100.7") == "198.51.100.7"
    assert (
        proxies.client("127.0.0.1", "203.0.113.9, 198.51.100.7, 10.1.2.3") == "198.51.100.7"
    )  # right to left
    assert proxies.client("192.0.2.1", "198.51.100.7") == "192.0.2.1"  # an untrusted peer's header is ignored
    assert proxies.client("127.0.0.1", None) == "127.0.0.1"
    assert proxies.client("127.0.0.1", "not an address") == "127.0.0.1"
    assert proxies.client("127.0.0.1", "[2001:db8::1]:4711") == "2001:db8::1"
    assert TrustedProxies().client("127.0.0.1", "198.51.100.7") == "127.0.0.1"  # none trusted: never read
    with pytest.raises(ParameterError, match=r"'10\.0\.0\.300/8' is not an address or network"):
        parse_networks(["10.0.0.300/8"])


def test_buckets_refill_on_the_limiters_clock():
    """Before: the limiter read time.monotonic itself, so the rate-limit tests here counted refusals that a
    loaded machine, slow enough between two requests to refill a bucket, turned into admissions."""
    now = [0.0]
    limiter = RateLimiter(1, clock=lambda: now[0])
    assert [limiter.allow("198.51.100.7") for _ in range(11)] == [True] * 10 + [False]
    now[0] += 1.0  # one second: one token
    assert [limiter.allow("198.51.100.7") for _ in range(2)] == [True, False]
    assert limiter.allow("198.51.100.8")  # another address has its own bucket


def _polite_and_flooder(settings: CollectorSettings, store: str) -> tuple[list[int], list[int]]:
    """40 flooding uploads and 8 polite ones, interleaved, all through one proxy on 127.0.0.1."""
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    path = f"/v1/tasks/{task.task_id}/reports"
    polite, flood = [], []
    with client(settings, client=("127.0.0.1", 40000)) as http:
        stop_rate_clock(http.app)
        for i in range(40):
            flood.append(http.post(path, json=[], headers={"X-Forwarded-For": "198.51.100.66"}).status_code)
            if i % 5 == 4:
                polite.append(
                    http.post(path, json=[], headers={"X-Forwarded-For": "198.51.100.7"}).status_code
                )
    return polite, flood


def test_a_polite_client_is_not_starved_by_a_flooder_behind_the_same_trusted_proxy(tmp_path):
    """Before: every client behind a proxy shared the proxy's bucket (a polite client lost 6 of 40 requests)."""
    store = store_path(tmp_path)
    trusted = CollectorSettings(store=store, rate_limit=1, trusted_proxies=("127.0.0.1",))
    polite, flood = _polite_and_flooder(trusted, store)
    assert polite == [200] * 8
    assert flood.count(429) >= 25  # a burst of 10, then about one a second
    # the same traffic without --trusted-proxy: one shared bucket, the polite client is refused too
    polite, _ = _polite_and_flooder(CollectorSettings(store=store, rate_limit=1), store)
    assert polite.count(429) >= 5


def test_a_forged_forwarded_header_from_an_untrusted_peer_picks_no_new_bucket(tmp_path):
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    settings = CollectorSettings(store=store, rate_limit=1, trusted_proxies=("10.0.0.0/8",))
    with client(settings, client=("192.0.2.1", 40000)) as http:
        stop_rate_clock(http.app)
        statuses = [
            http.post(
                f"/v1/tasks/{task.task_id}/reports", json=[], headers={"X-Forwarded-For": f"198.51.100.{i}"}
            ).status_code
            for i in range(20)
        ]
    assert statuses[:10] == [200] * 10 and statuses.count(429) >= 8


# -- structured logs with no sender data -------------------------------------------------------------


@pytest.mark.slow  # starts its own `ldp serve` (the fast set's one is test_collector_server's shared collector)
def test_logs_are_json_lines_with_timestamps_and_no_sender_data(tmp_path):
    """Every line ldp serve writes is a JSON object with a UTC time; no client address, payload or token."""
    store = store_path(tmp_path)
    task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    address = "198.51.100.213"
    secret_value = "payload-marker-7d41"
    server = Server(store, "--log-level", "info", "--trusted-proxy", "127.0.0.1", "--rate-limit", "1")
    try:
        headers = {"X-Forwarded-For": address}
        url = f"{server.url}/v1/tasks/{task.task_id}/reports"
        good = envelopes(_reports(3), now_truncated(task))
        bad = [{"id": secret_value, "t": 0, "report": {"mechanism": secret_value}}]
        http_client().post(url, json=good, headers=headers, timeout=30)
        http_client().post(url, json=bad, headers=headers, timeout=30)
        http_client().post(
            url,
            content=secret_value.encode(),
            headers={**headers, "content-type": "application/json"},
            timeout=30,
        )
        http_client().get(
            f"{server.url}/v1/tasks/{task.task_id}/estimates",
            headers={"Authorization": f"Bearer {token}x", **headers},
            timeout=30,
        )
        http_client().get(f"{server.url}/v1/tasks/{token}", headers=headers, timeout=30)
        for _ in range(15):
            http_client().post(url, json=[], headers=headers, timeout=30)
    finally:
        server.stop()
    lines = [line for line in server.log.splitlines() if line.strip()]
    assert len(lines) >= 3, server.log  # the start line, uvicorn's start-up and shutdown records
    for line in lines:
        record = json.loads(line)
        assert {"time", "level", "logger", "message"} <= set(record), line
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["time"]), line
        for sender_data in (address, secret_value, token):
            assert sender_data not in line, line
    assert any("ldp collector on http://" in json.loads(line)["message"] for line in lines)


# -- task names --------------------------------------------------------------------------------------


def test_the_dashboard_shows_a_tasks_name_and_description_and_the_public_description_does_not(tmp_path):
    """Issue 29: the dashboard's task JSON carries ``name`` and ``description`` (for a token holder only)."""
    store = store_path(tmp_path)
    task, token = create_task(store, GRR, name="signup funnel", description="Where sign-ups stop.")
    with client(CollectorSettings(store=store)) as http:
        shown = http.get("/v1/dashboard", headers={"Authorization": f"Bearer {token}"}).json()["tasks"]
        public = http.get(f"/v1/tasks/{task.task_id}").json()
    assert (shown[0]["name"], shown[0]["description"]) == ("signup funnel", "Where sign-ups stop.")
    assert "name" not in public and "description" not in public


def test_a_bad_trusted_proxy_is_a_one_line_error_before_serving(tmp_path):
    from click.testing import CliRunner

    from ldp.cli import cli

    result = CliRunner().invoke(
        cli, ["serve", "--store", store_path(tmp_path), "--port", "0", "--trusted-proxy", "proxy.internal"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: trusted proxy 'proxy.internal' is not an address or network: give e.g. 127.0.0.1, 10.0.0.0/8 or ::1"
    )


def test_ldp_serve_tunes_the_garbage_collector_once_started(monkeypatch):
    """Start-up's objects are frozen and the youngest generation is collected after 50,000 allocations, not 700."""
    import gc

    import uvicorn

    from ldp.collector.serving import GC_OLDER_THRESHOLD, GC_YOUNG_THRESHOLD, CollectorServer

    async def started(self, sockets=None):  # uvicorn's own start-up (lifespan, sockets) is not under test
        return None

    monkeypatch.setattr(uvicorn.Server, "startup", started)
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    try:
        asyncio.run(CollectorServer(uvicorn.Config(create_app, factory=True)).startup())
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, GC_OLDER_THRESHOLD, GC_OLDER_THRESHOLD)
        assert gc.get_freeze_count() > frozen_before
    finally:
        gc.set_threshold(*before)
        if not frozen_before:  # the suite's own freeze (tests/conftest.py) must outlive this test
            gc.unfreeze()
