"""The collector over real HTTP: ``ldp serve`` in a subprocess, talked to with httpx (docs/collector.md)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from collector_server import (
    Server,
    create_task,
    envelope_id,
    envelopes,
    http_client,
    now_truncated,
    running,
    store_path,
    upload,
)
from collector_server import (
    estimates as _estimates,
)

import ldp
from ldp.aggregator.views import default_consistency
from ldp.cli import cli
from ldp.client import encode_batch
from ldp.collector.envelopes import MAX_BODY_BYTES, MAX_ENVELOPES
from ldp.collector.store import open_store

# under pytest-xdist the tests of this module run on one worker, so the module's shared `ldp serve` starts once
pytestmark = pytest.mark.xdist_group("collector_server")

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


def _reports(spec, values, seed=1):
    return list(encode_batch(spec, values, np.random.default_rng(seed)).reports(spec))


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def server(request, tmp_path_factory):
    """One collector per store backend, shared by the tests of this module; each test makes its own tasks.

    SQLite's is the session's ``shared_collector`` (test_upload's too).
    """
    if request.param == "sqlite":
        yield request.getfixturevalue("shared_collector")
        return
    from postgres_cluster import create_database, drop_database

    cluster = request.getfixturevalue("postgres_url")
    name = f"server_{uuid.uuid4().hex}"
    url = create_database(cluster, name)
    try:
        with running(url) as shared:
            yield shared
    finally:
        drop_database(cluster, name)


@pytest.fixture
def collector(server):
    """The shared collector with a new GRR task (1 h windows, 1 min precision, min batch 5)."""
    task, token = create_task(server.store, GRR, window="1h", time_precision="1m", min_batch=5)
    return server, task, token


def test_upload_counts_replays_once_and_lists_every_rejection_in_order(collector):
    server, task, token = collector
    t = now_truncated(task)
    good = envelopes(_reports(GRR, ["a", "b", "a", "c", "a", "b"]), t)
    other_spec = ldp.GRR(domain=("a", "b", "c"), epsilon=2.0)
    wrong_spec = envelopes(_reports(other_spec, ["a"]), t)[0]
    bad_value = {"id": envelope_id(), "t": t, "report": {**good[0]["report"], "value": 7}}
    body = [
        *good,
        good[0],  # a retry inside the same upload
        {"id": "short", "t": t, "report": good[1]["report"]},
        {"id": envelope_id(), "t": t + 1, "report": good[1]["report"]},
        {"id": envelope_id(), "t": t, "report": good[1]["report"], "ip": "10.0.0.1"},
        wrong_spec,
        bad_value,
        {"id": envelope_id(), "t": t + 86_400, "report": good[1]["report"]},
        [1, 2],
    ]
    reply = upload(server, task, body)
    assert reply.status_code == 200
    data = reply.json()
    assert (data["accepted"], data["replayed"]) == (6, 1)
    rejected = [(r["index"], r["reason"]) for r in data["rejected"]]
    assert rejected == [
        (7, "invalid_message"),
        (8, "invalid_message"),
        (9, "invalid_message"),
        (10, "wrong_spec"),
        (11, "invalid_report"),
        (12, "report_too_early"),
        (13, "invalid_message"),
    ]
    assert data["rejected"][0]["id"] is None and data["rejected"][1]["id"] == body[8]["id"]
    assert "value_out_of_domain" in data["rejected"][4]["detail"]
    again = upload(server, task, good).json()  # the client's retry of the whole upload
    assert (again["accepted"], again["replayed"], again["rejected"]) == (0, 6, [])
    assert _estimates(server, task, token).json()["n"] == 6


def test_reports_outside_the_task_range_are_dropped(server):
    now = int(time.time())
    start = now - now % 60 - 1_200  # a range of the last 20 minutes (older reports are t_out_of_range)
    task, _ = create_task(
        server.store,
        GRR,
        window="1h",
        time_precision="1m",
        min_batch=1,
        not_before=start + 60,
        not_after=start + 660,
    )
    body = envelopes(_reports(GRR, ["a", "b", "c"]), [start, start + 60, start + 660])
    data = upload(server, task, body).json()
    assert data["accepted"] == 1
    assert [(r["index"], r["reason"]) for r in data["rejected"]] == [
        (0, "report_dropped"),
        (2, "report_dropped"),
    ]


def test_estimates_need_the_token_and_equal_ldp_aggregate_on_the_same_reports(collector, tmp_path):
    server, task, token = collector
    values = list(np.random.default_rng(5).choice(["a", "b", "c"], 400, p=[0.5, 0.3, 0.2]))
    reports = _reports(GRR, values, seed=9)
    for start in range(0, len(reports), 150):
        assert (
            upload(server, task, envelopes(reports[start : start + 150], now_truncated(task))).status_code
            == 200
        )
    assert _estimates(server, task, "wrong-token").status_code == 401
    unauthenticated = http_client().get(f"{server.url}/v1/tasks/{task.task_id}/estimates", timeout=10)
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["content-type"] == "application/problem+json"
    assert unauthenticated.headers["www-authenticate"].startswith("Bearer")
    got = _estimates(server, task, token, confidence=0.9).json()
    assert got["n"] == 400 and got["withheld"] is None

    spec_path, reports_path, out = tmp_path / "spec.json", tmp_path / "r.jsonl", tmp_path / "est.parquet"
    spec_path.write_text(GRR.to_json())
    reports_path.write_text("".join(r.to_json() + "\n" for r in reports))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ldp",
            "aggregate",
            "--spec",
            spec_path,
            reports_path,
            "--confidence",
            "0.9",
            "-o",
            out,
        ],
        check=True,
        capture_output=True,
    )
    expected = pd.read_parquet(out)
    pd.testing.assert_frame_equal(
        pd.DataFrame(got["estimates"]), expected, check_exact=True, check_dtype=False
    )


def _one_spec_per_mechanism():
    from conftest import every_spec_shape

    specs = {}
    for spec in every_spec_shape():
        specs.setdefault(spec.mechanism, spec)
    return list(specs.values())


#: Report forms the default run sends through the collector; `pytest -m slow` sends every other mechanism's.
FAST_FORMS = ("oue", "olh", "rappor", "duchi")


def test_the_collector_cases_cover_the_spec_registry():
    from ldp.registry import BUILTIN_MECHANISMS

    assert {spec.mechanism for spec in _one_spec_per_mechanism()} == {d.name for d in BUILTIN_MECHANISMS}


@pytest.mark.parametrize(
    "spec",
    [
        spec if spec.mechanism in FAST_FORMS else pytest.param(spec, marks=pytest.mark.slow)
        for spec in _one_spec_per_mechanism()
    ],
    ids=lambda s: s.mechanism,
)
def test_every_report_form_goes_through_the_collector_to_the_same_estimates(server, spec):
    from conftest import sample_values

    from ldp.aggregator import make_aggregator

    task, token = create_task(server.store, spec, window="1h", time_precision="1m", min_batch=1)
    reports = _reports(spec, sample_values(spec, 300), seed=2)
    data = upload(server, task, envelopes(reports, now_truncated(task))).json()
    assert (data["accepted"], data["rejected"]) == (300, [])
    got = _estimates(server, task, token).json()
    accumulator = make_aggregator(spec)
    for report in reports:
        accumulator.add(report)
    expected = accumulator.estimate(confidence=0.95, consistency=default_consistency(spec))
    pd.testing.assert_frame_equal(
        pd.DataFrame(got["estimates"]), expected, check_exact=True, check_dtype=False
    )


def test_min_batch_withholds_and_windows_split_the_estimates(server):
    now = int(time.time())
    base = now - now % 3600 - 3 * 3600
    # a task that started 3 hours ago (a new task accepts no report much older than itself)
    task, token = create_task(
        server.store, GRR, window="1h", time_precision="1m", min_batch=10, not_before=base
    )
    times = [base] * 12 + [base + 3600 + 60] * 4 + [base + 2 * 3600] * 10
    reply = upload(server, task, envelopes(_reports(GRR, ["a", "b", "c"] * 8 + ["a", "b"]), times))
    assert reply.json()["accepted"] == 26
    windows = _estimates(server, task, token, by="window").json()["windows"]
    assert [(w["start"] - base, w["n"], w["estimates"] is None) for w in windows] == [
        (0, 12, False),
        (3600, 4, True),
        (7200, 10, False),
    ]
    assert windows[1]["withheld"] == "fewer than min_batch (10) reports: 4"
    middle = _estimates(server, task, token, **{"from": base + 3600, "to": base + 7200}).json()
    assert (middle["n"], middle["estimates"]) == (4, None)
    assert _estimates(server, task, token, **{"from": base, "to": base + 7200}).json()["n"] == 16
    off_boundary = _estimates(server, task, token, **{"from": base + 60})
    assert off_boundary.status_code == 400 and "window boundary" in off_boundary.json()["detail"]


def test_shuffle_mode_reports_each_windows_central_epsilon_and_composes_ranges(server):
    """A shuffle-mode task's estimates carry the central (ε, δ) of the shuffled reports (ldp.privacy.shuffle)."""
    from ldp.privacy.shuffle import shuffle_bounds

    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=3.0)
    now = int(time.time())
    base = now - now % 3600 - 2 * 3600
    task, token = create_task(
        server.store,
        spec,
        window="1h",
        time_precision="1m",
        min_batch=10,
        shuffle_delta=1e-6,
        not_before=base,
    )
    assert task.shuffle_delta == 1e-6
    times = [base] * 40 + [base + 3600] * 60
    upload(server, task, envelopes(_reports(spec, ["a", "b", "c", "a"] * 25), times))
    windows = _estimates(server, task, token, by="window").json()["windows"]
    expected = [shuffle_bounds(3.0, n, 1e-6, spec=spec)[-1].epsilon for n in (40, 60)]
    assert [w["central"]["epsilon"] for w in windows] == pytest.approx(expected, rel=1e-12)
    assert all(w["central"]["delta"] == 1e-6 and w["central"]["epsilon"] < 3.0 for w in windows)
    both = _estimates(server, task, token, **{"from": base, "to": base + 7200}).json()["central"]
    assert both["epsilon"] == pytest.approx(sum(expected), rel=1e-12)
    assert (both["delta"], both["windows"], both["composition"]) == (2e-6, 2, "basic (sum over windows)")
    plain, plain_token = create_task(server.store, spec, window="1h", time_precision="1m", min_batch=10)
    assert "central" not in _estimates(server, plain, plain_token).json()


@pytest.mark.slow  # fast representative: test_collector_durability's kill -9 run (restart, then every report counted)
def test_restart_rebuilds_the_windows_from_the_store(served_store_url):
    store = served_store_url
    task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    with running(store) as server:
        upload(server, task, envelopes(_reports(GRR, ["a", "b", "a"] * 20), now_truncated(task)))
        before = _estimates(server, task, token).json()
    with running(store) as server:
        after = _estimates(server, task, token).json()
    assert before == after and after["n"] == 60


def test_spec_endpoint_is_cacheable_by_fingerprint(collector):
    server, task, _ = collector
    reply = http_client().get(f"{server.url}/v1/tasks/{task.task_id}/spec", timeout=10)
    assert reply.status_code == 200
    assert ldp.load_spec(reply.json()).fingerprint == GRR.fingerprint
    assert reply.headers["etag"] == f'"{GRR.fingerprint}"'
    cached = http_client().get(
        f"{server.url}/v1/tasks/{task.task_id}/spec",
        headers={"If-None-Match": reply.headers["etag"]},
        timeout=10,
    )
    assert cached.status_code == 304
    described = http_client().get(f"{server.url}/v1/tasks/{task.task_id}", timeout=10).json()
    assert (described["fingerprint"], described["time_precision"], described["window"]) == (
        GRR.fingerprint,
        60,
        3600,
    )
    assert "token_hash" not in described


def test_json_lines_uploads(collector):
    server, task, _ = collector
    body = "\n".join(json.dumps(e) for e in envelopes(_reports(GRR, ["a", "b", "c"]), now_truncated(task)))
    reply = http_client().post(
        f"{server.url}/v1/tasks/{task.task_id}/reports",
        content=body + "\n\n",
        headers={"Content-Type": "application/x-ndjson"},
        timeout=10,
    )
    assert reply.json()["accepted"] == 3


def _post_raw(server, task_id, content, content_type="application/json"):
    return http_client().post(
        f"{server.url}/v1/tasks/{task_id}/reports",
        content=content,
        headers={"Content-Type": content_type},
        timeout=30,
    )


def test_bad_requests_get_problem_documents_never_a_500(collector):
    server, task, _ = collector
    t = now_truncated(task)
    one = envelopes(_reports(GRR, ["a"]), t)[0]
    cases = [
        (_post_raw(server, task.task_id, b"[{"), 400),
        (_post_raw(server, task.task_id, b"[" * 5000 + b"]" * 5000), 400),
        (_post_raw(server, task.task_id, b'{"id": 1}'), 400),
        (_post_raw(server, task.task_id, json.dumps([one] * (MAX_ENVELOPES + 1)).encode()), 400),
        (_post_raw(server, task.task_id, b"[" + b" " * MAX_BODY_BYTES + b"]"), 413),
        (_post_raw(server, task.task_id, b"[]", "text/plain"), 415),
        (_post_raw(server, task.task_id, b"[]", "application/x-www-form-urlencoded"), 415),
        (_post_raw(server, "A" * 43, b"[]"), 404),
        (_post_raw(server, "../../etc/passwd", b"[]"), 404),
        (_post_raw(server, "%2e%2e%2f%2e%2e", b"[]"), 404),
        (http_client().get(f"{server.url}/static/..%2f..%2fapp.py", timeout=10), 404),
        (http_client().get(f"{server.url}/static/app.py", timeout=10), 404),
        (http_client().get(f"{server.url}/v1/tasks/{'x' * 10_000}/spec", timeout=10), 404),
        (http_client().get(f"{server.url}/v1/tasks/{task.task_id}/estimates?confidence=2", timeout=10), 401),
        (http_client().delete(f"{server.url}/v1/tasks/{task.task_id}/reports", timeout=10), 405),
    ]
    for index, (reply, status) in enumerate(cases):
        assert reply.status_code == status, (index, reply.status_code, reply.text[:200])
        if status != 405:
            assert reply.headers["content-type"] == "application/problem+json", index
            problem = reply.json()
            assert problem["status"] == status and problem["title"] and problem["detail"], index
    nothing = upload(server, task, [])
    assert nothing.json() == {"accepted": 0, "replayed": 0, "rejected": []}


@pytest.mark.slow  # its own server; fast representative: test_collector_http's in-process 429 test
def test_rate_limit_per_address(tmp_path):
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    with running(store, "--rate-limit", "1") as server:  # bursts of 10, then one per second
        statuses = [upload(server, task, []).status_code for _ in range(15)]
    assert statuses[:10] == [200] * 10
    assert 429 in statuses[10:]


def test_cors_is_per_task(server):
    open_task, _ = create_task(
        server.store, GRR, window="1h", time_precision="1m", cors_origins=("https://app.example",)
    )
    closed_task, _ = create_task(server.store, GRR, window="1h", time_precision="1m")
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    allowed = http_client().options(
        f"{server.url}/v1/tasks/{open_task.task_id}/reports", headers=preflight, timeout=10
    )
    refused = http_client().options(
        f"{server.url}/v1/tasks/{closed_task.task_id}/reports", headers=preflight, timeout=10
    )
    posted = upload(server, open_task, [], headers={"Origin": "https://app.example"})
    other = upload(server, open_task, [], headers={"Origin": "https://evil.example"})
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert refused.status_code == 403
    assert posted.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in other.headers


def test_text_plain_json_lines_are_accepted_from_an_allowed_origin_only(server):
    """navigator.sendBeacon sends text/plain without a preflight: read as JSON Lines, but only for a CORS origin."""
    task, token = create_task(
        server.store,
        GRR,
        window="1h",
        time_precision="1m",
        min_batch=1,
        cors_origins=("https://app.example",),
    )
    closed, _ = create_task(server.store, GRR, window="1h", time_precision="1m")
    items = envelopes(_reports(GRR, ["a", "b"]), now_truncated(task))
    body = b"".join(json.dumps(item).encode() + b"\n" for item in items)
    beacon = "text/plain;charset=UTF-8"

    def post(task_id, origin=None):
        headers = {"Content-Type": beacon, **({"Origin": origin} if origin else {})}
        url = f"{server.url}/v1/tasks/{task_id}/reports"
        return http_client().post(url, content=body, headers=headers, timeout=30)

    assert post(task.task_id).status_code == 415  # no Origin: not a browser beacon
    assert post(task.task_id, "https://evil.example").status_code == 415
    assert post(closed.task_id, "https://app.example").status_code == 415
    sent = post(task.task_id, "https://app.example")
    assert sent.status_code == 200 and sent.json() == {"accepted": 2, "replayed": 0, "rejected": []}
    assert sent.headers["access-control-allow-origin"] == "https://app.example"
    again = post(task.task_id, "https://app.example")
    assert again.json() == {"accepted": 0, "replayed": 2, "rejected": []}
    estimates = _estimates(server, task, token).json()
    assert estimates["n"] == 2


def test_nothing_about_the_sender_is_stored(collector):
    server, task, _ = collector
    t = now_truncated(task)
    report = _reports(GRR, ["a"])[0].to_dict()
    upload(
        server,
        task,
        [{"id": envelope_id(), "t": t, "report": {**report, "client": "user-42"}}],
        headers={"User-Agent": "Secret-Agent/1.0", "X-Forwarded-For": "203.0.113.9"},
    )
    columns, rows, dump = _raw_store(server.store, task.task_id)
    # the window start is t's, truncated further; nothing orders or groups reports by arrival
    assert columns == ["task", "window_start", "report_id", "t", "report"]
    assert rows == [(t, json.dumps(report, separators=(",", ":")))]
    for secret in ("user-42", "Secret-Agent", "203.0.113.9", "127.0.0.1"):
        assert secret not in dump


def _raw_store(url, task_id):
    """The reports table's columns, the task's (t, report) rows, and every stored row as text."""
    query = "SELECT r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq WHERE k.task_id = {}"
    if not url.startswith("postgresql://"):
        with sqlite3.connect(url) as db:
            columns = [row[1] for row in db.execute("PRAGMA table_info(reports)")]
            rows = db.execute(query.format("?"), (task_id,)).fetchall()
            return columns, rows, "\n".join(db.iterdump())
    import psycopg

    with psycopg.connect(url) as db:
        columns = [
            row[0]
            for row in db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'reports' "
                "ORDER BY ordinal_position"
            )
        ]
        rows = [tuple(row) for row in db.execute(query.format("%s"), (task_id,))]
        dump = "\n".join(
            str(row) for table in ("meta", "tasks", "reports") for row in db.execute(f"SELECT * FROM {table}")
        )
    return columns, rows, dump


def _metric(server, name_and_labels):
    for line in http_client().get(f"{server.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(name_and_labels + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_health_and_metrics(collector):
    server, task, _ = collector
    counters = (
        'ldp_reports_total{outcome="accepted",reason=""}',
        'ldp_reports_total{outcome="replayed",reason="report_replayed"}',
        'ldp_reports_total{outcome="rejected",reason="invalid_message"}',
        "ldp_store_commit_seconds_count",
        'ldp_request_seconds_count{route="/v1/tasks/{task_id}/reports",status="2xx"}',
    )
    before = [_metric(server, name) for name in counters]
    body = envelopes(_reports(GRR, ["a", "b"]), now_truncated(task))
    upload(server, task, [*body, body[0], {"id": "x", "t": 0, "report": {}}])
    assert http_client().get(f"{server.url}/healthz", timeout=10).json() == {"status": "ok"}
    after = [_metric(server, name) for name in counters]
    assert [b - a for a, b in zip(before, after)] == [2, 1, 1, 1, 1]


def test_a_different_report_under_a_stored_id_is_rejected_as_id_conflict(collector):
    """Issue 24: the same id with another report was answered 'replayed' and the new report silently dropped."""
    server, task, token = collector
    t = now_truncated(task)
    first, other = envelopes(_reports(GRR, ["a", "b"], seed=5), t)
    before = _metric(server, 'ldp_reports_total{outcome="rejected",reason="id_conflict"}')
    assert upload(server, task, [first]).json()["accepted"] == 1
    clash = {**other, "id": first["id"]}
    data = upload(server, task, [other, clash, first]).json()
    assert (data["accepted"], data["replayed"]) == (1, 1)
    assert [(r["index"], r["id"], r["reason"]) for r in data["rejected"]] == [(1, first["id"], "id_conflict")]
    assert "already stored" in data["rejected"][0]["detail"]
    assert _metric(server, 'ldp_reports_total{outcome="rejected",reason="id_conflict"}') == before + 1
    assert _estimates(server, task, token).json()["n"] == 2


@pytest.mark.slow  # holds the shared server's store for the probe's 1 s wait; in-process: test_collector_operations
def test_readyz_is_503_while_the_store_cannot_write_and_healthz_stays_200(server):
    """Issue 24: the health check said ok while the reports table was locked; issue 29: liveness is apart
    from readiness (a locked store is no reason to restart the process)."""
    assert http_client().get(f"{server.url}/readyz", timeout=10).json() == {"status": "ok"}
    if server.store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(server.store) as other:
            other.execute("LOCK TABLE reports IN ACCESS EXCLUSIVE MODE")
            reply = http_client().get(f"{server.url}/readyz", timeout=30)
            live = http_client().get(f"{server.url}/healthz", timeout=30)
            other.rollback()
    else:
        other = sqlite3.connect(server.store, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        reply = http_client().get(f"{server.url}/readyz", timeout=30)
        live = http_client().get(f"{server.url}/healthz", timeout=30)
        other.execute("ROLLBACK")
        other.close()
    assert live.json() == {"status": "ok"}
    assert reply.status_code == 503
    assert reply.headers["content-type"] == "application/problem+json"
    assert reply.json()["title"] == "Store unavailable" and "locked" in reply.json()["detail"]
    assert http_client().get(f"{server.url}/readyz", timeout=10).json() == {"status": "ok"}


def test_a_failed_commit_is_answered_503_logged_in_one_line_and_counted(tmp_path, monkeypatch, caplog):
    """Issue 24: a stopped PostgreSQL answered uploads 503 with nothing logged or counted."""
    import warnings

    with warnings.catch_warnings():  # starlette's notice about its httpx-based client
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    from ldp.collector.app import create_app
    from ldp.collector.store import StoreUnavailable
    from ldp.collector.store_sqlite import SqliteStore

    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)

    def refuse(self, groups):
        raise StoreUnavailable("cannot open the PostgreSQL store postgresql://ldp@db/ldp: connection refused")

    monkeypatch.setattr(SqliteStore, "insert_reports", refuse)
    with TestClient(create_app(store)) as client, caplog.at_level("ERROR", logger="ldp.collector"):
        items = envelopes(_reports(GRR, ["a", "b"]), now_truncated(task))
        reply = client.post(f"/v1/tasks/{task.task_id}/reports", json=items)
        metrics = client.get("/metrics").text
    assert reply.status_code == 503 and reply.headers["retry-after"] == "1"
    [record] = [r for r in caplog.records if r.name == "ldp.collector"]
    line = record.getMessage()
    assert "\n" not in line and record.exc_info is None
    assert "1 upload(s) of 2 report(s) answered 503: StoreUnavailable: cannot open" in line
    assert 'ldp_store_errors_total{error="StoreUnavailable"} 1.0' in metrics


@pytest.mark.slow
def test_a_stopped_postgresql_is_answered_503_logged_counted_and_unhealthy(postgres_url):
    """Issue 24 end to end: PostgreSQL refusing sessions; uploads 503 (logged, counted), /readyz 503, then recovery."""
    import psycopg
    from postgres_cluster import create_database, drop_database

    name = f"stopped_{uuid.uuid4().hex}"
    url = create_database(postgres_url, name)
    try:
        task, _ = create_task(url, GRR, window="1h", time_precision="1m", min_batch=1)
        server = Server(url)
        try:
            items = envelopes(_reports(GRR, ["a", "b"]), now_truncated(task))
            assert upload(server, task, items[:1]).json()["accepted"] == 1
            with psycopg.connect(postgres_url, autocommit=True) as admin:  # the database goes away
                admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
                )
                for _ in range(2):
                    reply = upload(server, task, items[1:])
                    assert reply.status_code == 503 and reply.headers["retry-after"] == "1"
                health = http_client().get(f"{server.url}/readyz", timeout=30)
                assert health.status_code == 503 and health.json()["title"] == "Store unavailable"
                assert _metric(server, 'ldp_store_errors_total{error="StoreUnavailable"}') == 2
                admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
            assert upload(server, task, items[1:]).json()["accepted"] == 1  # the client's retry succeeds
            assert http_client().get(f"{server.url}/readyz", timeout=30).status_code == 200
        finally:
            server.process.terminate()
            _, err = server.process.communicate(timeout=30)
            server.stop()
        log = err.decode()
    finally:
        drop_database(postgres_url, name)
    failures = [line for line in log.splitlines() if "store commit failed" in line]
    assert len(failures) == 2 and "Traceback" not in log


@pytest.mark.slow
def test_a_second_server_on_one_sqlite_store_is_refused(tmp_path):
    """Issue 24: two servers on one SQLite file both started, each counting only its own uploads."""
    store = store_path(tmp_path)
    with running(store):
        result = subprocess.run(
            [sys.executable, "-m", "ldp", "serve", "--store", store, "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert "already served by another ldp serve" in result.stderr and "Traceback" not in result.stderr


def test_serve_refuses_a_bad_store_before_listening(tmp_path):
    directory = tmp_path / "a-directory"
    directory.mkdir()
    # the real command in this process: it returns (exit 2) instead of listening
    result = CliRunner().invoke(cli, ["serve", "--store", str(directory)])
    assert result.exit_code == 2
    assert "is a directory" in result.stderr


def _vector_tables():
    """Every numeric spec case of the cross-language vectors: (input, full table as the vectors write it)."""
    root = Path(__file__).resolve().parents[1] / "vectors"
    vectors = json.loads((root / "vectors.json").read_text(encoding="utf-8"))
    full = json.loads((root / "numeric_tables.json").read_text(encoding="utf-8"))["tables"]
    cases = {case["id"]: case for case in vectors["specs"]["cases"]}
    for numeric in vectors["numeric"]:
        table = dict(full.get(numeric["spec"], numeric))
        table.pop("spec")
        table["fingerprint"] = cases[numeric["spec"]]["fingerprint"]
        yield json.loads(cases[numeric["spec"]]["input_json"]), table


def test_tables_endpoint_serves_the_vectors_tables_cacheable_by_fingerprint_and_digest(server):
    """GET /v1/tasks/{task}/tables: exactly the vectors' numeric layout (full tables), ETag fingerprint-digest."""
    served = 0
    for data, expected in _vector_tables():
        spec = ldp.load_spec(data)
        task, _ = create_task(server.store, spec, window="1h", time_precision="1m", min_batch=1)
        url = f"{server.url}/v1/tasks/{task.task_id}/tables"
        reply = http_client().get(url, timeout=30)
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"] == "application/json"
        assert reply.json() == expected
        tag = f"{spec.fingerprint}-{expected['digest']}" if "digest" in expected else spec.fingerprint
        assert reply.headers["etag"] == f'"{tag}"'
        cached = http_client().get(
            url, headers={"If-None-Match": f'"other", {reply.headers["etag"]}'}, timeout=10
        )
        assert (cached.status_code, cached.content) == (304, b"")
        served += 1
    assert served >= 12  # two-point, rows (piecewise, hybrid) and shift (laplace, gaussian: 10k weights)


def test_tables_endpoint_serves_a_records_grid_tables_by_attribute_as_the_vectors_write_them(server):
    """A multi-attribute task: every grid attribute's table (not the two-point ones), ETag pinning every digest."""
    root = Path(__file__).resolve().parents[1] / "vectors"
    vectors = json.loads((root / "vectors.json").read_text(encoding="utf-8"))
    case = next(c for c in vectors["specs"]["cases"] if c["id"] == "multi-attribute/numeric")
    tables = next(c["tables"] for c in vectors["encodings"] if c["spec"] == "multi-attribute/numeric")
    assert sorted(tables) == ["kb", "ms"]  # hybrid and piecewise; duchi's follows from its spec
    spec = ldp.load_spec(json.loads(case["input_json"]))
    task, _ = create_task(server.store, spec, window="1h", time_precision="1m", min_batch=1)
    url = f"{server.url}/v1/tasks/{task.task_id}/tables"
    reply = http_client().get(url, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"fingerprint": spec.fingerprint, "attributes": tables}
    assert reply.headers["etag"].startswith(f'"{spec.fingerprint}-')
    cached = http_client().get(url, headers={"If-None-Match": reply.headers["etag"]}, timeout=10)
    assert cached.status_code == 304


def test_tables_endpoint_refuses_specs_without_a_table(collector):
    server, task, _ = collector
    reply = http_client().get(f"{server.url}/v1/tasks/{task.task_id}/tables", timeout=10)
    assert reply.status_code == 404
    assert reply.headers["content-type"] == "application/problem+json"
    assert "grr" in reply.json()["detail"] and "no numeric table" in reply.json()["detail"]
    assert http_client().get(f"{server.url}/v1/tasks/nosuchtask/tables", timeout=10).status_code == 404


# -- access, timeouts, signals, hang-ups and secrets on a real ldp serve (issue 24) --------------------


@pytest.mark.slow  # two servers; fast representative: test_collector_http's in-process loopback dashboard test
def test_the_dashboard_asks_for_a_token_on_loopback_unless_public(tmp_path):
    """A reverse proxy on the same machine connects from loopback: the listening address opens nothing."""
    store = store_path(tmp_path)
    task, token = create_task(store, GRR, window="1h", time_precision="1m")
    with running(store) as server:  # --host 127.0.0.1, the documented reverse-proxy set-up
        refused = http_client().get(f"{server.url}/v1/dashboard", timeout=10)
        mine = http_client().get(
            f"{server.url}/v1/dashboard", headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
    assert refused.status_code == 401
    assert [t["task"] for t in mine.json()["tasks"]] == [task.task_id]
    assert "dashboard: collector token required" in server.log
    with running(store, "--dashboard-public") as public:
        assert http_client().get(f"{public.url}/v1/dashboard", timeout=10).status_code == 200
    assert "dashboard: public, no token" in public.log


def _trickle(server, head: bytes, drip: bytes, seconds: float) -> tuple[float, bytes]:
    """Send ``head``, then ``drip`` every 0.2 s for up to ``seconds``; (seconds until closed, reply bytes)."""
    started = time.monotonic()
    reply = b""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head)
        sock.settimeout(0.2)
        while time.monotonic() - started < seconds:
            try:
                sock.sendall(drip)
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if not chunk:
                break
            reply += chunk
    return time.monotonic() - started, reply


@pytest.mark.slow
def test_trickled_headers_and_bodies_get_408_within_the_read_timeout_and_garbage_a_400_problem(tmp_path):
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m")
    upload_head = (
        f"POST /v1/tasks/{task.task_id}/reports HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n["
    ).encode()
    with running(store, "--read-timeout", "2") as server:
        header_time, header_reply = _trickle(server, b"GET /healthz HTTP/1.1\r\n", b"X-Slow: 1\r\n", 20)
        body_time, body_reply = _trickle(server, upload_head, b" ", 20)
        assert http_client().get(f"{server.url}/healthz", timeout=10).status_code == 200  # still serving
        cut = _metric(server, 'ldp_aborted_requests_total{reason="read_timeout"}')
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"\x16\x03\x01 not HTTP at all\r\n\r\n")
            garbage = sock.recv(4096)
        # every 4xx by reason (issue 29): the headers' 408 and the garbage's 400 never reached the app
        refused = [
            _metric(server, f'ldp_http_errors_total{{reason="{reason}",status="{status}"}}')
            for reason, status in (("read_timeout", 408), ("read_timeout", 499), ("unreadable_http", 400))
        ]
    assert garbage.startswith(b"HTTP/1.1 400 ") and b"application/problem+json" in garbage, garbage
    for seconds, reply in ((header_time, header_reply), (body_time, body_reply)):
        assert 1.9 < seconds < 6, seconds
        assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
        assert b"application/problem+json" in reply
    assert cut == 1
    assert refused == [1, 1, 1]
    assert "Traceback" not in server.log


@pytest.mark.slow
def test_sigterm_stops_within_the_shutdown_timeout_while_an_upload_trickles(tmp_path):
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m")
    server = Server(store, "--read-timeout", "120", "--shutdown-timeout", "2")
    head = (
        f"POST /v1/tasks/{task.task_id}/reports HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n["
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head)
        time.sleep(0.5)  # the app is now waiting for the body
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        try:
            while server.process.poll() is None and time.monotonic() - started < 30:
                with contextlib.suppress(OSError):
                    sock.sendall(b" ")
                time.sleep(0.2)
        finally:
            server.stop()
    assert time.monotonic() - started < 8
    assert server.process.returncode is not None


@pytest.mark.slow
def test_sighup_stops_gracefully_keeping_every_acknowledged_report(tmp_path):
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    server = Server(store, "--log-level", "info")
    try:
        reply = upload(server, task, envelopes(_reports(GRR, ["a", "b", "c"]), now_truncated(task)))
        assert reply.json()["accepted"] == 3
        server.process.send_signal(signal.SIGHUP)
        returncode = server.process.wait(30)
    finally:
        server.stop()
    assert returncode == 0, (returncode, server.log[-2000:])  # killed by SIGHUP would be -1
    assert "SIGHUP: stopping gracefully" in server.log
    assert "Application shutdown complete" in server.log
    with open_store(store) as opened:
        assert sum(len(chunk) for chunk in opened.reports(task.task_id)) == 3


@pytest.mark.slow
def test_a_client_hanging_up_mid_upload_logs_one_line_and_is_no_server_error(tmp_path):
    store = store_path(tmp_path)
    task, _ = create_task(store, GRR, window="1h", time_precision="1m")
    head = (
        f"POST /v1/tasks/{task.task_id}/reports HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n[{"
    ).encode()
    with running(store) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(head)
            time.sleep(0.3)
        deadline = time.monotonic() + 10
        while _metric(server, 'ldp_aborted_requests_total{reason="client_disconnect"}') < 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        server_errors = _metric(
            server, 'ldp_request_seconds_count{route="/v1/tasks/{task_id}/reports",status="5xx"}'
        )
    assert server_errors == 0
    assert "Traceback" not in server.log
    hang_ups = [line for line in server.log.splitlines() if "client closed the connection" in line]
    assert len(hang_ups) == 1, server.log


def test_serve_never_prints_the_store_password_when_it_cannot_open_the_store():
    url = "postgresql://ldp:Hunter2Secret@127.0.0.1:1/ldp?connect_timeout=2"
    result = CliRunner().invoke(cli, ["serve", "--store", url])  # in this process: it returns, exit 2
    assert result.exit_code == 2
    assert "Hunter2Secret" not in result.stderr + result.stdout
    assert "ldp:***@127.0.0.1:1" in result.stderr or "ldp@127.0.0.1:1" in result.stderr, result.stderr


@pytest.mark.slow
def test_serve_never_prints_the_store_password_on_its_start_up_line_or_in_its_logs(postgres_url):
    from postgres_cluster import create_database, drop_database

    name = f"secret_{uuid.uuid4().hex}"
    url = create_database(postgres_url, name)
    secret = "Hunter2Secret"
    with_password = url.replace(
        "postgres@", f"postgres:{secret}@", 1
    )  # the cluster trusts, the URL still says it
    try:
        with running(with_password, "--log-level", "info") as server:
            assert http_client().get(f"{server.url}/healthz", timeout=10).status_code == 200
    finally:
        drop_database(postgres_url, name)
    assert "ldp collector on http://127.0.0.1:" in server.log
    assert "postgres:***@127.0.0.1" in server.log
    assert secret not in server.log


@pytest.mark.slow
def test_a_password_free_url_with_pgpassfile_serves_and_no_password_shows_in_ps_or_logs(
    postgres_url, tmp_path, monkeypatch
):
    """Issue 29: the PostgreSQL password through PGPASSFILE, with a password-free URL, documented and tested.

    The throwaway cluster trusts every role; one line put first in its pg_hba.conf asks this test's role
    for a SCRAM password over TCP, so the password really is needed (and removed again at the end).
    """
    import psycopg
    from postgres_cluster import create_database, drop_database

    name, role, password = f"pgpass_{uuid.uuid4().hex}", f"pw_{uuid.uuid4().hex[:12]}", secrets.token_hex(16)
    url = create_database(postgres_url, name)
    parts = urllib.parse.urlsplit(url)
    served = f"postgresql://{role}@{parts.hostname}:{parts.port}/{name}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        hba = Path(admin.execute("SHOW hba_file").fetchone()[0])
        original = hba.read_text()
        hba.write_text(f"host {name} {role} 127.0.0.1/32 scram-sha-256\n" + original)
        admin.execute("SELECT pg_reload_conf()")
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    try:
        task, _ = create_task(url, GRR, window="1h", time_precision="1m", min_batch=1)  # tables, as the owner
        with psycopg.connect(url, autocommit=True) as owner:
            owner.execute(f"GRANT SELECT, INSERT, DELETE ON tasks, reports TO {role}")
            owner.execute(f"GRANT SELECT ON meta TO {role}")
            owner.execute(f"GRANT SELECT, INSERT, UPDATE ON task_versions TO {role}")
            owner.execute(f"GRANT SELECT, INSERT, DELETE ON commits, window_aggregates TO {role}")
            functions = (
                "ldp_window_partition(bigint, bigint, bigint), ldp_drop_windows(bigint, bigint), "
                "ldp_drop_partition(bigint, bigint)"
            )
            owner.execute(f"GRANT EXECUTE ON FUNCTION {functions} TO {role}")
        without = subprocess.run(
            [sys.executable, "-m", "ldp", "serve", "--store", served, "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("PG")},
        )
        assert without.returncode == 2 and without.stderr.count("\n") == 1, without.stderr
        assert "password" in without.stderr and "Traceback" not in without.stderr
        passfile = tmp_path / "pgpass"
        passfile.write_text(f"{parts.hostname}:{parts.port}:{name}:{role}:{password}\n")
        passfile.chmod(0o600)
        monkeypatch.setenv("PGPASSFILE", str(passfile))
        server = Server(served)
        try:
            items = envelopes(_reports(GRR, ["a", "b"]), now_truncated(task))
            assert upload(server, task, items).json()["accepted"] == 2
            command_line = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().decode()
            assert password not in command_line
        finally:
            server.stop()
        assert password not in server.log
    finally:
        hba.write_text(original)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_reload_conf()")
        drop_database(postgres_url, name)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_dask_on_the_exported_dataset_equals_the_servers_estimates(server, scheduler, tmp_path):
    """The path from the collector to the distributed engine: ldp task export --out, then --engine dask."""
    now = int(time.time())
    base = (
        now - now % 3600 - 3 * 3600
    )  # three whole past windows: a report at base + 2 h + 6 min is never ahead of now
    task, token = create_task(
        server.store, GRR, window="1h", time_precision="1m", min_batch=5, not_before=base
    )
    values = list(np.random.default_rng(11).choice(["a", "b", "c"], 450, p=[0.5, 0.3, 0.2]))
    times = [base + (i % 3) * 3600 + 60 * (i % 7) for i in range(len(values))]
    reports = _reports(GRR, values, seed=12)
    for begin in range(0, len(reports), 150):
        reply = upload(server, task, envelopes(reports[begin : begin + 150], times[begin : begin + 150]))
        assert reply.json()["accepted"] == 150
    dataset = tmp_path / "export"
    runner = CliRunner()
    exported = runner.invoke(
        cli,
        [
            "task",
            "export",
            "--store",
            server.store,
            task.task_id,
            "--out",
            str(dataset),
            "--chunk-size",
            "100",
        ],
    )
    assert exported.exit_code == 0, exported.output
    assert "exported 450 reports" in exported.stderr

    def dask(*options: str) -> pd.DataFrame:
        out = tmp_path / f"dask-{secrets.token_hex(4)}.parquet"
        command = ["aggregate", "--spec", str(dataset / "_spec.json"), str(dataset), *options]
        result = runner.invoke(cli, [*command, "--engine", "dask", "--scheduler", scheduler, "-o", str(out)])
        assert result.exit_code == 0, result.output
        return pd.read_parquet(out)

    everything = _estimates(server, task, token).json()
    assert everything["n"] == 450
    expected = pd.DataFrame(everything["estimates"])
    pd.testing.assert_frame_equal(dask(), expected, check_exact=True, check_dtype=False)
    second = base + 3600
    one = _estimates(server, task, token, **{"from": second, "to": second + 3600}).json()
    assert one["n"] == 150
    pd.testing.assert_frame_equal(
        dask("--window", str(second)), pd.DataFrame(one["estimates"]), check_exact=True, check_dtype=False
    )
