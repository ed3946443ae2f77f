"""Per-task retention (issue 29): old windows keep their aggregate, lose their raw reports, and keep their estimates.

Library level on both stores through ``store_url`` (SQLite in the fast set,
PostgreSQL in the slow one), the CLI on SQLite, and a ``kill -9`` during a
retention run on both (slow: each spawns a process).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.client import encode_batch
from ldp.collector.acceptance import DEFAULT_ACCEPTANCE
from ldp.collector.envelopes import check_envelopes
from ldp.collector.retention import accumulate_range, prune_task
from ldp.collector.service import CollectorService, CollectorSettings
from ldp.collector.store import StoredReport, StoreUnavailable, WindowAggregate, WindowPruned, open_store
from ldp.collector.tasks import Task, new_task
from ldp.collector.windows import Windows
from ldp.errors import ParameterError

# under pytest-xdist the tests of this module run on one worker, so the session's PostgreSQL cluster starts once
pytestmark = pytest.mark.xdist_group("postgresql")

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
DAY, HOUR = 86_400, 3_600
#: The first window of the stored reports (a multiple of one day).
BASE = 1_764_000_000 - 1_764_000_000 % DAY
#: Four one-day windows of reports: BASE .. BASE + 3 days.
WINDOWS = 4
#: A time at which a retention of two days has expired the first two windows (and only them).
NOW = BASE + 4 * DAY


def _task(**options) -> Task:
    options = {"window": "1d", "time_precision": "1h", "min_batch": 1, "retain": "2d", **options}
    return new_task(GRR, **options)[0]


def _fill(store, task: Task, n: int = 400, seed: int = 1) -> None:
    """``n`` encoded reports over :data:`WINDOWS` one-day windows (hourly times)."""
    values = [("a", "b", "c", "a")[i % 4] for i in range(n)]
    batch = encode_batch(GRR, values, np.random.default_rng(seed))
    times = [BASE + (i * 7 % (WINDOWS * 24)) * HOUR for i in range(n)]
    reports = [
        StoredReport(secrets.token_bytes(16), t, r.to_json())
        for t, r in zip(times, batch.reports(GRR), strict=True)
    ]
    store.insert_reports([(task.task_id, reports[i : i + 100]) for i in range(0, n, 100)])


def _replies(store, task: Task) -> list[dict]:
    windows = Windows()
    windows.load(store, task)
    return windows.replies(task, 0.95)


def _without_flag(replies: list[dict]) -> list[dict]:
    return [{key: value for key, value in reply.items() if key != "pruned"} for reply in replies]


# -- the task's retention -----------------------------------------------------------------------------


def test_a_retention_is_a_duration_of_at_least_one_window():
    assert _task(retain="90d").retain == 90 * DAY and _task(retain=None).retain is None
    assert _task().to_dict()["retain"] == 2 * DAY
    with pytest.raises(ParameterError, match=r"at least one window \(1d\)"):
        _task(retain="12h")
    with pytest.raises(ParameterError, match="retain must be a duration"):
        _task(retain="soon")
    task = _task()
    assert task.expired_before(NOW) == BASE + 2 * DAY  # windows ending 2 days or more before NOW
    assert task.expired_before(NOW - 1) == BASE + DAY
    assert _task(retain=None).expired_before(NOW) is None


def test_reports_of_an_expired_window_are_refused_at_the_door():
    """A window past the retention receives nothing: its raw reports are (about to be) deleted."""
    task = _task(not_before=0)
    report = next(iter(encode_batch(GRR, ["a"], np.random.default_rng(1)).reports(GRR))).to_dict()
    ids = [base64.urlsafe_b64encode(n.to_bytes(16, "big")).rstrip(b"=").decode() for n in range(2)]
    times = [
        BASE + 2 * DAY - HOUR,
        BASE + 2 * DAY,
    ]  # the last hour of an expired window, the first of a kept one
    envelopes = [{"id": i, "t": t, "report": report} for i, t in zip(ids, times, strict=True)]
    checked = check_envelopes(task, envelopes, NOW, DEFAULT_ACCEPTANCE)
    assert [a.index for a in checked.accepted] == [1]
    assert checked.rejected[0].reason == "t_out_of_range" and "retention (2d)" in checked.rejected[0].detail


# -- pruning ------------------------------------------------------------------------------------------------


def test_a_pruned_window_keeps_its_estimates_and_loses_its_raw_reports(store_url):
    task = _task()
    with open_store(store_url) as store:
        store.create_task(task)
        _fill(store, task)
        counts = store.count_by_window(task.task_id, task.window)
        before = _replies(store, task)
        whole = accumulate_range(store, task)[0]

        result = prune_task(store, task, NOW)
        assert result.kept == (BASE, BASE + DAY) and result.retry == ()
        assert result.reports_deleted == counts[BASE] + counts[BASE + DAY]
        # the raw reports are gone; every read skips them, the kept aggregates say what they were
        assert store.count_by_window(task.task_id, task.window) == {
            start: n for start, n in counts.items() if start >= BASE + 2 * DAY
        }
        assert store.pruned_windows(task.task_id) == {BASE: counts[BASE], BASE + DAY: counts[BASE + DAY]}
        assert store.expired_windows(task.task_id, BASE + 2 * DAY) == {}
        assert (
            sum(len(c) for c in store.report_texts(task.task_id))
            == sum(counts.values()) - result.reports_deleted
        )

        after = _replies(store, task)  # a restarted server: the same estimates, flagged
        assert _without_flag(after) == _without_flag(before)
        assert [reply["pruned"] for reply in after] == [True, True, False, False]
        assert accumulate_range(store, task)[0] == whole  # ldp aggregate --store counts them too
        assert accumulate_range(store, task, BASE, BASE + DAY)[1:] == (0, 1)
        with pytest.raises(ParameterError, match="cut the window"):
            accumulate_range(store, task, BASE + HOUR, BASE + 3 * DAY)

        again = prune_task(store, task, NOW)  # idempotent
        assert (again.kept, again.reports_deleted) == ((), 0)
        with pytest.raises(WindowPruned, match="pruned by"):  # a commit racing the retention is refused
            store.insert_reports([(task.task_id, [StoredReport(secrets.token_bytes(16), BASE + HOUR, "{}")])])
        assert isinstance(WindowPruned("x"), StoreUnavailable)  # an upload refused so is sent again
    with open_store(store_url, read_only=True) as store:  # what ldp task show and ldp aggregate read
        assert _without_flag(_replies(store, task)) == _without_flag(before)


def test_a_window_that_gained_reports_since_it_was_read_is_not_kept(store_url):
    """keep_window counts the window again in its transaction: an aggregate never misses a report."""
    task = _task()
    with open_store(store_url) as store:
        store.create_task(task)
        _fill(store, task)
        n = store.count_by_window(task.task_id, task.window)[BASE]
        stale = WindowAggregate(BASE, n - 1, b"state", int(NOW))
        assert store.keep_window(task.task_id, stale) is False
        assert store.pruned_windows(task.task_id) == {}
        assert store.discard_windows(task.task_id, BASE + 2 * DAY) == 0  # nothing kept: nothing deleted
        assert store.count_by_window(task.task_id, task.window)[BASE] == n


def test_tasks_without_a_retention_and_other_tasks_are_left_alone(store_url):
    kept, other = _task(retain=None), _task()
    with open_store(store_url) as store:
        store.create_task(kept)
        store.create_task(other)
        _fill(store, kept)
        _fill(store, other, seed=2)
        counts = store.count_by_window(kept.task_id, kept.window)
        assert prune_task(store, kept, NOW).before is None
        assert prune_task(store, other, NOW).kept == (BASE, BASE + DAY)
        assert store.count_by_window(kept.task_id, kept.window) == counts


def test_sqlite_deletes_a_window_in_bounded_transactions(tmp_path):
    task = _task()
    with open_store(str(tmp_path / "s.db")) as store:
        store.create_task(task)
        _fill(store, task)
        n = store.count_by_window(task.task_id, task.window)[BASE]
        statements: list[str] = []
        store._writer.set_trace_callback(statements.append)
        result = prune_task(store, task, BASE + 3 * DAY, batch=7)  # the first window only
        deletes = [s for s in statements if s.startswith("DELETE FROM reports")]
        assert result.reports_deleted == n and len(deletes) == n // 7 + 1  # 7 reports per transaction at most


def test_the_service_serves_a_pruned_window_and_says_its_raw_reports_are_gone(tmp_path):
    task, token = new_task(GRR, window="1d", time_precision="1h", min_batch=1, retain="2d")
    path = str(tmp_path / "s.db")
    with open_store(path) as store:
        store.create_task(task)
        _fill(store, task)
    service = CollectorService(CollectorSettings(store=path), open_store(path, exclusive=True))
    try:

        def read(**query):
            return asyncio.run(
                service.estimates.estimates(task, query.get("start"), query.get("end"), 0.95, query.get("by"))
            )

        by_window, whole = read(by="window"), read()
        assert [w["pruned"] for w in by_window["windows"]] == [False] * 4 and whole["pruned_windows"] == 0
        service.prune(NOW)
        after = read(by="window")
        assert [w["pruned"] for w in after["windows"]] == [True, True, False, False]
        assert _without_flag(after["windows"]) == _without_flag(by_window["windows"])
        assert {**read(), "pruned_windows": 0} == whole and read()["pruned_windows"] == 2
        dashboard = asyncio.run(service.estimates.dashboard(token))
        assert [w["pruned"] for w in dashboard["tasks"][0]["windows"]] == [True, True, False, False]
        assert dashboard["tasks"][0]["retain"] == 2 * DAY
        metrics = service.metrics.render().decode()
        assert 'ldp_retention_runs_total{outcome="ok"} 1.0' in metrics
        assert 'ldp_retention_runs_total{outcome="failed"} 0.0' in metrics
        assert "ldp_retention_windows_pruned_total 2.0" in metrics
    finally:
        service.close()


def test_a_pruned_window_takes_no_more_reports_even_once_the_retention_is_removed(tmp_path):
    """A retention removed (or lengthened) does not bring back a pruned window's raw reports: an upload into it is
    rejected at the door, not accepted and then refused at every commit (a 503 its client would retry forever)."""
    task, _ = new_task(GRR, window="1h", time_precision="1h", min_batch=1, retain="1h", not_before=0)
    now = int(time.time())
    old = now - now % HOUR - 5 * HOUR  # a window that ended 4 hours ago: expired under a 1-hour retention
    reports = list(encode_batch(GRR, ["a", "b"], np.random.default_rng(3)).reports(GRR))
    path = str(tmp_path / "s.db")
    with open_store(path) as store:
        store.create_task(task)
        store.insert_reports(
            [(task.task_id, [StoredReport(secrets.token_bytes(16), old, reports[0].to_json())])]
        )
    service = CollectorService(CollectorSettings(store=path), open_store(path, exclusive=True))
    try:
        assert [r.kept for r in service.prune()] == [(old,)]
        with open_store(path) as store:
            store.update_task(dataclasses.replace(task, retain=None))  # ldp task update --retain forever
        service.registry.refresh()
        held = service.registry.tasks[task.task_id]
        assert held.retain is None
        items = [
            {
                "id": base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode(),
                "t": old,
                "report": reports[1].to_dict(),
            }
        ]
        outcome = asyncio.run(service.ingestion.ingest(held, items))
        assert outcome.accepted == 0
        [rejected] = outcome.rejected
        assert rejected.reason == "t_out_of_range" and "retention deleted" in rejected.detail
    finally:
        service.close()


# -- the command line ---------------------------------------------------------------------------------


def _ldp(*args: object, input: str | None = None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def test_task_create_update_prune_show_and_export(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "c.db"
    spec_path = tmp_path / "grr.json"
    spec_path.write_text(GRR.to_json())
    created = _ldp(
        "task", "create", "--store", store, "--spec", spec_path, "--min-batch", 1, "--retain", "90d", "--json"
    )
    assert created.exit_code == 0, created.output
    task_id = json.loads(created.stdout)["task"]
    with open_store(str(store)) as opened:
        task = opened.task(task_id)
        assert task.retain == 90 * DAY
        _fill(opened, task)
        counts = opened.count_by_window(task_id, DAY)
    shown = _ldp("task", "show", "--store", store, task_id).stdout
    assert "retention       90d after a window ends" in shown

    # a shorter retention prunes windows: asked first, unless --yes
    asked = _ldp("task", "update", "--store", store, task_id, "--retain", "1d", input="n\n")
    assert asked.exit_code == 1 and "deletes the raw reports of 4 window(s)" in asked.stderr
    updated = _ldp("task", "update", "--store", store, task_id, "--retain", "2d", "--name", "funnel", "--yes")
    assert updated.exit_code == 0 and "retain 2d after a window ends" in updated.stderr
    for option, value, message in [
        ("--spec", spec_path, "spec cannot change"),
        ("--window", "1h", "window cannot change"),
        ("--min-batch", "5", "min batch cannot change"),
        ("--retain", "1h", "at least one window"),
    ]:
        refused = _ldp("task", "update", "--store", store, task_id, option, value)
        assert refused.exit_code == 2 and message in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert "nothing to change" in _ldp("task", "update", "--store", store, task_id).stderr

    before = _ldp("aggregate", "--store", store, "--task", task_id, "-o", "before.csv")
    assert before.exit_code == 0, before.output
    pruned = _ldp("task", "prune", "--store", store)
    assert pruned.exit_code == 0 and "window(s) pruned now" in pruned.stderr  # every window: years ago
    after = _ldp("aggregate", "--store", store, "--task", task_id, "-o", "after.csv")
    assert after.exit_code == 0 and "4 pruned window(s)" in after.stderr
    assert Path("after.csv").read_text() == Path("before.csv").read_text()

    shown = _ldp("task", "show", "--store", store, task_id).stdout
    assert f"pruned          {sum(counts.values()):,} in 4 window(s)" in shown and "funnel" in shown
    exported = _ldp("task", "export", "--store", store, task_id, "-o", "out.jsonl")
    assert exported.exit_code == 0 and "exported 0 reports" in exported.stderr
    assert (
        "not exported: 400 reports of 4 window(s)" in exported.stderr
        and "pruned by the task's retention" in exported.stderr
    )
    forever = _ldp("task", "update", "--store", store, task_id, "--retain", "forever")
    assert forever.exit_code == 0 and "keep every report" in forever.stderr


# -- kill -9 during a retention run ---------------------------------------------------------------------

_PRUNER = textwrap.dedent(
    """
    import sys, time
    from ldp.collector.retention import prune_task
    from ldp.collector.store import open_store

    store = open_store(sys.argv[1])
    task = store.task(sys.argv[2])
    kind = type(store)
    original = kind.discard_windows

    def slow_discard(self, task_id, before, batch=10_000):  # the aggregates are kept: stop here
        print("kept", flush=True)
        time.sleep(600)

    if sys.argv[3] == "between":
        kind.discard_windows = slow_discard
    else:  # during SQLite's batched deletion: one batch committed, the next one running
        def traced(statement):
            if statement.startswith("DELETE FROM reports"):
                print("delete", flush=True)
                time.sleep(0.5)
        store._writer.set_trace_callback(traced)
    prune_task(store, task, float(sys.argv[4]), batch=5)
    print("done", flush=True)
    """
)


def _kill_during_prune(url: str, task: Task, moment: str, wait_for: list[str]) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", _PRUNER, url, task.task_id, moment, str(NOW)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        for line in wait_for:
            assert process.stdout.readline() == line + "\n"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        if process.stdout:
            process.stdout.close()


def _check_killed_run(store_url: str, moment: str) -> None:
    """Kill -9 a retention run at ``moment``; every estimate holds, and the next run finishes the deletion."""
    task = _task()
    with open_store(store_url) as store:
        store.create_task(task)
        _fill(store, task)
        counts = store.count_by_window(task.task_id, task.window)
        before = _replies(store, task)
    _kill_during_prune(store_url, task, moment, ["kept"] if moment == "between" else ["delete", "delete"])
    with open_store(store_url) as store:
        left = store.expired_windows(task.task_id, BASE + 2 * DAY)  # raw rows the run did not delete
        assert left and sum(left.values()) <= counts[BASE] + counts[BASE + DAY]
        if moment == "during":
            assert sum(left.values()) < counts[BASE] + counts[BASE + DAY]  # a batch was committed
        kept = store.pruned_windows(task.task_id)
        assert set(kept) == {BASE, BASE + DAY}  # both windows' aggregates were kept before any deletion
        assert _without_flag(_replies(store, task)) == _without_flag(before)  # skipped, not counted twice
        assert store.count_by_window(task.task_id, task.window) == {
            start: n for start, n in counts.items() if start >= BASE + 2 * DAY
        }
        result = prune_task(store, task, NOW)  # the next run finishes the deletion
        assert result.kept == () and result.reports_deleted == sum(left.values())
        assert store.expired_windows(task.task_id, BASE + 2 * DAY) == {}
        assert _without_flag(_replies(store, task)) == _without_flag(before)


@pytest.mark.slow  # spawns a process
def test_a_retention_run_killed_after_keeping_the_aggregates_is_finished_by_the_next(store_url):
    _check_killed_run(store_url, "between")


@pytest.mark.slow  # spawns a process
def test_a_sqlite_retention_run_killed_between_deletion_batches_is_finished_by_the_next(tmp_path):
    """PostgreSQL deletes a window in one statement (or drops its partition): SQLite's batches are the case."""
    _check_killed_run(str(tmp_path / "s.db"), "during")


@pytest.mark.slow  # PostgreSQL
def test_postgresql_drops_whole_partitions_of_pruned_windows(postgres_url):
    """Hourly windows, a day per partition: a day all of whose windows are kept loses its partition (one DROP
    TABLE); the kept windows of a day partly expired lose their rows, the partition stays."""
    import uuid

    import psycopg
    from postgres_cluster import create_database, drop_database

    def partitions(url: str) -> list[str]:
        with psycopg.connect(url) as connection:
            rows = connection.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = 'reports'::regclass ORDER BY 1"
            ).fetchall()
        return [row[0] for row in rows]

    task = _task(window="1h", retain="1d")
    name = f"ret_{uuid.uuid4().hex}"
    url = create_database(postgres_url, name)
    try:
        with open_store(url) as store:
            store.create_task(task)
            _fill(store, task, n=480)  # 96 hourly windows over four days, 5 reports each
            assert partitions(url) == [f"reports_1_{BASE + d * DAY}" for d in range(4)]
            before = _replies(store, task)
            now = BASE + DAY + 12 * HOUR + DAY  # day 0 and half of day 1 expired
            result = prune_task(store, task, now)
            assert len(result.kept) == 36 and result.reports_deleted == 36 * 5
            assert partitions(url) == [f"reports_1_{BASE + d * DAY}" for d in (1, 2, 3)]
            counts = store.count_by_window(task.task_id, task.window)
            assert min(counts) == BASE + DAY + 12 * HOUR and len(counts) == 60
            assert _without_flag(_replies(store, task)) == _without_flag(before)
            # the rest of day 1 expires: its partition goes too, found by the next run
            later = prune_task(store, task, now + 12 * HOUR)
            assert len(later.kept) == 12 and later.reports_deleted == 60
            assert partitions(url) == [f"reports_1_{BASE + d * DAY}" for d in (2, 3)]
            assert _without_flag(_replies(store, task)) == _without_flag(before)
    finally:
        drop_database(postgres_url, name)


@pytest.mark.slow  # PostgreSQL
def test_servers_sharing_a_postgresql_store_agree_on_pruned_windows(postgres_url):
    """A window pruned by one server: another marks it, keeps its counts, and one that was behind a commit into
    it (whose rows are gone) rebuilds the task from the store instead of missing that commit's reports."""
    import uuid

    from postgres_cluster import create_database, drop_database

    task = _task()
    name = f"ret_{uuid.uuid4().hex}"
    url = create_database(postgres_url, name)
    services = []
    try:
        with open_store(url) as store:
            store.create_task(task)
            _fill(store, task)
        first, second = (CollectorService(CollectorSettings(store=url), open_store(url)) for _ in range(2))
        services += [first, second]
        before = second.registry.windows.replies(task, 0.95)
        with open_store(
            url
        ) as store:  # a commit into a window about to expire, that the second server has not read
            late = next(iter(encode_batch(GRR, ["b"], np.random.default_rng(9)).reports(GRR)))
            store.insert_reports(
                [(task.task_id, [StoredReport(secrets.token_bytes(16), BASE + HOUR, late.to_json())])]
            )
        first.registry.sync()
        first.prune(NOW)
        with open_store(url, read_only=True) as store:  # what a restarted server reads
            expected = _replies(store, task)
        assert [w["n"] for w in expected] == [w["n"] + (i == 0) for i, w in enumerate(before)]
        second.registry.sync()  # the logged commit's rows are gone: it rebuilds the task instead
        second.registry.refresh()
        assert second.registry.windows.replies(task, 0.95) == expected
        assert first.registry.windows.replies(task, 0.95) == expected
        assert [w["pruned"] for w in expected] == [True, True, False, False]
    finally:
        for service in services:
            service.close()
        drop_database(postgres_url, name)
