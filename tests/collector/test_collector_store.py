"""The collector's Store contract, on SQLite and on PostgreSQL (a throwaway cluster, tests/postgres_cluster.py).

Every test runs on both backends through the ``store_url`` fixture (a fresh
store each time). The PostgreSQL cases skip only when no PostgreSQL binaries
are installed. They are in the slow set (they start a PostgreSQL cluster), but
for the fast set's one PostgreSQL test, the replay contract; the SQLite run of
each contract test is in the fast set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import ldp
from ldp.collector.store import Insert, StoredReport, open_store
from ldp.collector.store_sqlite import SqliteStore
from ldp.collector.tasks import Task, new_task
from ldp.errors import ParameterError
from ldp.redact import redact_url

# under pytest-xdist the tests of this module run on one worker, so the session's PostgreSQL cluster starts once;
# the tests that use PostgresStore import it themselves, so the other worker never imports psycopg (about
# 0.07 s of CPU once the collector is loaded)
pytestmark = pytest.mark.xdist_group("postgresql")

SPEC = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
#: A Bloom-filter RAPPOR spec: the tasks that take candidate values.
BLOOM = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")
STORED, REPLAYED, CONFLICT = Insert.STORED, Insert.REPLAYED, Insert.CONFLICT


def make_task(**options) -> Task:
    return new_task(SPEC, window="1d", time_precision="1h", **options)[0]


def rid(n: int) -> bytes:
    """The 16-byte report id number ``n``."""
    return n.to_bytes(16, "big")


def report(n: int, t: int = 3_600) -> StoredReport:
    return StoredReport(rid(n), t, json.dumps({"n": n}))


def stored_ids(store, task_id: str, **bounds) -> list[bytes]:
    return sorted(r.report_id for chunk in store.reports(task_id, **bounds) for r in chunk)


# -- tasks ------------------------------------------------------------------------------------------


def test_tasks_are_created_listed_shown_and_deleted(store_url):
    first = make_task(
        min_batch=10, not_before=0, not_after=86_400 * 10, cors_origins=("*",), shuffle_delta=1e-6
    )
    second = make_task()
    with open_store(store_url) as store:
        assert store.tasks() == [] and store.task(first.task_id) is None
        store.create_task(first)
        store.create_task(second)
        assert store.tasks() == [first, second]  # oldest first, every field round-trips
        assert store.task(first.task_id) == first
        assert store.delete_task(first.task_id) is True
        assert store.delete_task(first.task_id) is False
        assert store.tasks() == [second] and store.task(first.task_id) is None


def test_tasks_are_found_by_their_token_hash(store_url):
    first, second = make_task(), make_task()
    with open_store(store_url) as store:
        store.create_task(first)
        store.create_task(second)
        assert store.tasks_with_token_hash(first.token_hash) == [first]
        assert store.tasks_with_token_hash(second.token_hash) == [second]
        assert store.tasks_with_token_hash("0" * 64) == []


def test_a_duplicate_task_id_is_a_parameter_error(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        with pytest.raises(ParameterError, match="already exists"):
            store.create_task(task)
        assert store.tasks() == [task]


def test_deleting_a_task_deletes_its_reports(store_url):
    kept, dropped = make_task(), make_task()
    with open_store(store_url) as store:
        store.create_task(kept)
        store.create_task(dropped)
        store.insert_reports([(kept.task_id, [report(1)]), (dropped.task_id, [report(1), report(2)])])
        assert store.delete_task(dropped.task_id)
        store.create_task(dropped)  # the same id again starts empty
        assert stored_ids(store, dropped.task_id) == []
        assert stored_ids(store, kept.task_id) == [rid(1)]


# -- inserting --------------------------------------------------------------------------------------


def test_replays_are_flagged_in_order_across_and_within_calls(store_url_both_fast):
    """The fast set's PostgreSQL test (the other PostgreSQL runs are slow)."""
    store_url = store_url_both_fast
    a, b = make_task(), make_task()
    with open_store(store_url) as store:
        store.create_task(a)
        store.create_task(b)
        assert store.insert_reports([(a.task_id, [report(1), report(2)])]) == [[STORED, STORED]]
        flags = store.insert_reports(
            [
                (a.task_id, [report(3), report(1), report(3), report(4)]),
                (b.task_id, [report(1), report(1)]),  # ids are per task
                (a.task_id, [report(4), report(5)]),  # a second upload to the same task in one call
                (b.task_id, []),
            ]
        )
        assert flags == [
            [STORED, REPLAYED, REPLAYED, STORED],
            [STORED, REPLAYED],
            [REPLAYED, STORED],
            [],
        ]
        assert store.insert_reports([]) == []
        assert stored_ids(store, a.task_id) == [rid(n) for n in (1, 2, 3, 4, 5)]
        assert stored_ids(store, b.task_id) == [rid(1)]


def test_a_replay_after_groups_of_fresh_ids_is_answered_exactly(store_url):
    """SQLite stores a group of fresh ids in one statement; a later group's replay redoes the call row by row.

    The fresh groups before it are stored once (the first attempt was rolled back), and every flag is exact.
    """
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        assert store.insert_reports([(task.task_id, [report(1)])]) == [[STORED]]
        flags = store.insert_reports(
            [
                (task.task_id, [report(n) for n in range(10, 20)]),
                (task.task_id, [report(20), report(1), report(21)]),
                (task.task_id, [report(22)]),
            ]
        )
        assert flags == [[STORED] * 10, [STORED, REPLAYED, STORED], [STORED]]
        assert stored_ids(store, task.task_id) == [rid(n) for n in (1, *range(10, 23))]
        assert store.insert_reports([(task.task_id, [report(30), report(31)])]) == [[STORED, STORED]]


def test_a_different_report_under_a_stored_id_is_a_conflict_not_a_replay(store_url):
    """Issue 24: the same id with another report was answered 'replayed' and the new report silently dropped."""
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        assert store.insert_reports([(task.task_id, [report(1)])]) == [[STORED]]
        other_text = StoredReport(rid(1), 3_600, json.dumps({"n": 99}))
        other_time = StoredReport(rid(1), 7_200, report(1).report)
        respelled = StoredReport(rid(1), 3_600, '{"n":1}')  # the same JSON value, spelled otherwise
        flags = store.insert_reports(
            [(task.task_id, [report(1), other_text, other_time, respelled, report(2), other_text])]
        )
        assert flags == [[REPLAYED, CONFLICT, CONFLICT, REPLAYED, STORED, CONFLICT]]
        # within one call: a later copy of a new id is compared with its first copy
        [flags] = store.insert_reports(
            [(task.task_id, [report(3), StoredReport(rid(3), 3_600, '"x"'), report(3)])]
        )
        assert flags == [STORED, CONFLICT, REPLAYED]
        assert [r for chunk in store.reports(task.task_id) for r in chunk] == [
            report(1),
            report(2),
            report(3),
        ]


def test_a_report_id_is_unique_within_its_window(store_url):
    """Issue 29: the idempotence key is (task, window, id), so an insert touches only its window's index pages.

    A retry resends its envelope byte for byte (the same t, so the same window): still a replay. One id
    under two windows names two reports.
    """
    task = make_task()  # windows of one day
    with open_store(store_url) as store:
        store.create_task(task)
        [flags] = store.insert_reports(
            [(task.task_id, [report(1, 3_600), report(1, 90_000), report(1, 7_200)])]
        )
        assert flags == [STORED, STORED, CONFLICT]
        [flags] = store.insert_reports([(task.task_id, [report(1, 90_000), report(1, 3_600)])])
        assert flags == [REPLAYED, REPLAYED]
        assert store.count_by_window(task.task_id, task.window) == {0: 1, 86_400: 1}


def test_the_first_copy_of_a_replayed_id_is_the_one_kept(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        store.insert_reports([(task.task_id, [StoredReport(rid(1), 0, '"first"'), report(1, 7_200)])])
        [[kept]] = list(store.reports(task.task_id))
        assert kept == StoredReport(rid(1), 0, '"first"')


def test_a_call_naming_an_unknown_task_stores_nothing(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        with pytest.raises(ParameterError, match="no task"):
            store.insert_reports([(task.task_id, [report(1)]), (make_task().task_id, [report(2)])])
        assert stored_ids(store, task.task_id) == []
        assert store.insert_reports([(task.task_id, [report(1)])]) == [[STORED]]  # the store still works


def test_reports_select_a_time_range_in_chunks(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        store.insert_reports([(task.task_id, [report(n, t=3_600 * (n % 10)) for n in range(25)])])
        chunks = list(store.reports(task.task_id, chunk=4))
        assert [len(c) for c in chunks] == [4, 4, 4, 4, 4, 4, 1]
        times = [r.t for c in chunks for r in c]
        assert times == sorted(times)  # by time
        assert all(isinstance(r.report_id, bytes) and len(r.report_id) == 16 for c in chunks for r in c)
        assert stored_ids(store, task.task_id, start=3_600 * 2, end=3_600 * 5) == sorted(
            rid(n) for n in range(25) if 2 <= n % 10 < 5
        )
        assert len(stored_ids(store, task.task_id, start=3_600 * 8)) == 4
        assert len(stored_ids(store, task.task_id, end=3_600)) == 3
        assert list(store.reports("x" * 43)) == []


def test_an_abandoned_reports_iterator_releases_the_store(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        store.insert_reports([(task.task_id, [report(n) for n in range(10)])])
        iterator = store.reports(task.task_id, chunk=3)
        assert len(next(iterator)) == 3
        iterator.close()
        assert store.insert_reports([(task.task_id, [report(10)])]) == [[STORED]]
        assert store.delete_task(task.task_id)


def test_count_by_window(store_url):
    task = make_task()
    day = 86_400
    times = [0, 3_600, day - 3_600, day, 5 * day + 7_200, 5 * day + 7_200]
    with open_store(store_url) as store:
        store.create_task(task)
        assert store.count_by_window(task.task_id, day) == {}
        store.insert_reports([(task.task_id, [report(n, t) for n, t in enumerate(times)])])
        assert store.count_by_window(task.task_id, day) == {0: 3, day: 1, 5 * day: 2}
        assert store.count_by_window(task.task_id, 7 * day) == {0: 6}
        assert store.count_by_window("x" * 43, day) == {}


def test_a_reopened_store_keeps_everything(store_url):
    task = make_task(cors_origins=("https://example.org",))
    store = open_store(store_url)
    store.create_task(task)
    store.insert_reports([(task.task_id, [report(n) for n in range(5)])])
    store.close()
    with open_store(store_url) as again:
        assert again.tasks() == [task]
        assert stored_ids(again, task.task_id) == [rid(n) for n in range(5)]
        assert again.insert_reports([(task.task_id, [report(4), report(5)])]) == [[REPLAYED, STORED]]


def test_threads_share_one_store(store_url):
    from concurrent.futures import ThreadPoolExecutor

    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)

        def upload(start: int) -> list[Insert]:
            [flags] = store.insert_reports([(task.task_id, [report(n) for n in range(start, start + 40)])])
            assert store.task(task.task_id) == task
            return flags

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(upload, range(0, 160, 20)))  # each id in two uploads
        assert sum(flag is STORED for flags in results for flag in flags) == 180
        assert all(flag in (STORED, REPLAYED) for flags in results for flag in flags)
        assert len(stored_ids(store, task.task_id)) == 180


# -- several processes ------------------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from ldp.collector.store import Insert, StoredReport, open_store

    url, task_id, go, spans = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    ids = [n for span in spans.split(",") for n in range(*map(int, span.split(":")))]
    store = open_store(url)
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.002)
    for start in range(0, len(ids), 25):
        batch = [StoredReport(n.to_bytes(16, "big"), 0, str(n)) for n in ids[start:start + 25]]
        [flags] = store.insert_reports([(task_id, batch)])
        for n, flag in zip(ids[start:start + 25], flags):
            print(json.dumps([n, flag.value]), flush=True)
    """
)


def _start_writer(url: str, task_id: str, go: Path, spans: str) -> subprocess.Popen:
    """A process inserting the ids of ``spans`` (``"200:400,0:200"``) in calls of 25 once ``go`` exists."""
    process = subprocess.Popen(
        [sys.executable, "-c", _WRITER, url, task_id, str(go), spans],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


@pytest.mark.slow  # two processes; fast: test_threads_share_one_store (concurrent writers, each id stored once)
def test_two_processes_store_each_overlapping_id_exactly_once(store_url, tmp_path):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
    go = tmp_path / "go"
    writers = [  # both start on the shared ids 200..399, at the same moment
        _start_writer(store_url, task.task_id, go, "200:400,0:200"),
        _start_writer(store_url, task.task_id, go, "200:400,400:600"),
    ]
    go.touch()
    flags: dict[int, list[str]] = {}
    for writer in writers:
        out, _ = writer.communicate(timeout=60)
        assert writer.returncode == 0
        for line in out.splitlines():
            n, flag = json.loads(line)
            flags.setdefault(n, []).append(flag)
    assert sorted(flags) == list(range(600))
    # exactly one "stored now" per id overall; the other copy (the same report) is a replay
    assert all(sorted(f) in (["stored"], ["replayed", "stored"]) for f in flags.values())
    with open_store(store_url) as store:
        assert stored_ids(store, task.task_id) == [rid(n) for n in range(600)]


_KILLED = textwrap.dedent(
    """
    import sys
    from ldp.collector.store import Insert, StoredReport, open_store

    store = open_store(sys.argv[1])
    n = 0
    while True:
        batch = [StoredReport((n + i).to_bytes(16, "big"), 0, str(n + i)) for i in range(50)]
        store.insert_reports([(sys.argv[2], batch)])
        n += 50
        print("committed", n, flush=True)
    """
)


def test_acknowledged_reports_survive_sigkill(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED, store_url, task.task_id], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = 0
    deadline = time.monotonic() + 30
    while acknowledged < 1_000 and time.monotonic() < deadline:
        line = child.stdout.readline()
        assert line.startswith("committed"), line
        acknowledged = int(line.split()[1])
    os.kill(child.pid, signal.SIGKILL)  # mid-transaction, most likely
    child.wait()
    child.stdout.close()
    assert acknowledged >= 1_000
    with open_store(store_url) as store:
        kept = set(stored_ids(store, task.task_id))
        assert {rid(n) for n in range(acknowledged)} <= kept
        assert len(kept) % 50 == 0  # whole transactions only


# -- open_store and URLs ----------------------------------------------------------------------------


def test_open_store_dispatches_on_the_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_store("plain.db") as store:
        assert isinstance(store, SqliteStore) and store.url == "plain.db"
    with open_store(tmp_path / "path.db") as store:
        assert isinstance(store, SqliteStore)
    with open_store("sqlite:///relative.db") as store:
        assert isinstance(store, SqliteStore) and store.url == "relative.db"
    absolute = tmp_path / "absolute.db"
    with open_store(f"sqlite:///{absolute}") as store:  # sqlite:////tmp/...
        assert isinstance(store, SqliteStore) and Path(store.url) == absolute
    assert {p.name for p in tmp_path.iterdir()} >= {"plain.db", "path.db", "relative.db", "absolute.db"}
    for url in ("mysql://host/db", "http://example.org/store"):
        with pytest.raises(ParameterError, match="not supported"):
            open_store(url)


@pytest.mark.slow  # PostgreSQL: the fast set's PostgreSQL test is the replay contract's
def test_open_store_opens_postgresql(postgres_url):
    from ldp.collector.store_postgres import PostgresStore

    with open_store(postgres_url) as store:
        assert isinstance(store, PostgresStore) and store.url == postgres_url
    with open_store(postgres_url.replace("postgresql://", "postgres://", 1)) as store:
        assert isinstance(store, PostgresStore)


@contextlib.contextmanager
def fresh_database(postgres_url: str):
    """The URL of a new database in the session's cluster, dropped afterwards."""
    import uuid

    from postgres_cluster import create_database, drop_database

    name = f"own_{uuid.uuid4().hex}"
    try:
        yield create_database(postgres_url, name)
    finally:
        drop_database(postgres_url, name)


@pytest.mark.slow  # PostgreSQL: the fast set's PostgreSQL test is the replay contract's
def test_two_stores_open_a_new_postgresql_database_at_once(postgres_url):
    """Schema creation is serialized by an advisory lock: concurrent first opens do not collide."""
    from concurrent.futures import ThreadPoolExecutor

    from ldp.collector.store_postgres import PostgresStore

    with fresh_database(postgres_url) as url, ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: PostgresStore(url), range(4)))
        for store in stores:
            store.close()


@pytest.mark.slow  # PostgreSQL: the fast set's PostgreSQL test is the replay contract's
def test_a_postgresql_user_without_create_rights_uses_a_made_store(postgres_url):
    """Schema creation is skipped when the tables exist: an application role needs only table rights."""
    import uuid

    import psycopg
    from psycopg import sql

    task = make_task()
    name = f"app_{uuid.uuid4().hex[:12]}"
    role = sql.Identifier(name)
    with fresh_database(postgres_url) as url:
        with open_store(url) as store:
            store.create_task(task)
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
            admin.execute(sql.SQL("GRANT SELECT, INSERT, DELETE ON meta, tasks, reports TO {}").format(role))
            admin.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE ON task_versions TO {}").format(role))
            admin.execute(
                sql.SQL("GRANT SELECT, INSERT, DELETE ON commits, window_aggregates TO {}").format(role)
            )
            functions = (
                "ldp_window_partition(bigint, bigint, bigint), ldp_drop_windows(bigint, bigint), "
                "ldp_drop_partition(bigint, bigint)"
            )
            admin.execute(sql.SQL(f"GRANT EXECUTE ON FUNCTION {functions} TO {{}}").format(role))
        with open_store(url.replace("postgres@", f"{name}@", 1)) as store:
            # a new window's partition is made by the owner's function: the role needs no CREATE right
            assert store.insert_reports([(task.task_id, [report(1)])]) == [[STORED]]
            assert store.tasks() == [task]
            assert store.forget_commits(0) == 1  # the log of the one commit, trimmed
            assert store.delete_task(task.task_id)


def test_an_unreachable_postgresql_server_is_a_parameter_error_without_the_password():
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://alice:s3cret-pw@127.0.0.1:{port}/db?connect_timeout=2"
    with pytest.raises(ParameterError, match=f"postgresql://alice:\\*\\*\\*@127.0.0.1:{port}/db") as caught:
        open_store(url)
    assert "s3cret-pw" not in str(caught.value)


def test_urls_are_shown_without_passwords():
    # the one redaction of the project (ldp.redact), as the store shows its URL
    assert redact_url("postgresql://u:pw@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert (
        redact_url("postgresql://u@h/d?sslmode=require&password=pw")
        == "postgresql://u@h/d?sslmode=require&password=***"
    )
    assert redact_url("postgresql://h/d") == "postgresql://h/d"
    assert "p@ss" not in redact_url("postgresql://u:p@ss@[::1]:5/d")


def test_reports_round_trip_exactly(store_url):
    task = make_task()
    reports = [
        StoredReport(bytes(16), 0, '{"value": "é ✓ \\u0000 \\"quoted\\""}'),
        StoredReport(b"\xff" * 16, 2**40, "[" + "1, " * 5_000 + "1]"),
        StoredReport(rid(7), 3_600, "{}"),
    ]
    with open_store(store_url) as store:
        store.create_task(task)
        assert store.insert_reports([(task.task_id, reports)]) == [[STORED, STORED, STORED]]
        assert [r for chunk in store.reports(task.task_id) for r in chunk] == sorted(
            reports, key=lambda r: r.t
        )


def test_another_schema_version_is_refused(store_url):
    open_store(store_url).close()
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url) as connection:
            connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    else:
        import sqlite3

        with contextlib.closing(sqlite3.connect(store_url)) as connection, connection:
            connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ParameterError, match="schema version 99"):
        open_store(store_url)


def test_a_version_1_store_is_migrated_once_and_keeps_its_tasks(store_url):
    """Version 1 had no shuffle_delta column: opening it adds the column (NULL) and records version 2."""
    task = make_task(min_batch=10)
    with open_store(store_url) as store:
        store.create_task(task)
    downgrade = (
        "ALTER TABLE tasks DROP COLUMN shuffle_delta",
        "UPDATE meta SET value = '1' WHERE key = 'schema_version'",
    )
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url) as connection:
            for statement in downgrade:
                connection.execute(statement)
    else:
        import sqlite3

        with contextlib.closing(sqlite3.connect(store_url)) as connection, connection:
            for statement in downgrade:
                connection.execute(statement)
    with open_store(store_url) as store:
        assert store.tasks() == [task] and task.shuffle_delta is None
        shuffled = make_task(shuffle_delta=1e-7)
        store.create_task(shuffled)
    with open_store(store_url) as store:  # the second open finds version 2 and changes nothing
        assert store.tasks() == [task, shuffled]


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-6, True, "1e-6"])
def test_a_shuffle_delta_outside_0_1_is_refused(delta):
    with pytest.raises(ParameterError, match="shuffle delta"):
        make_task(shuffle_delta=delta)


@pytest.mark.parametrize(
    ("spec", "candidates", "message"),
    [
        (SPEC, ("a",), "candidates are for Bloom-filter RAPPOR tasks, .* this task's spec is grr"),
        (ldp.Rappor.boolean(f="1/4", p="1/4", q="3/4"), ("a",), "spec is rappor with boolean encoding"),
        (None, ("a", "b", "a"), "repeat a value"),
        (None, ("a", " b"), "not one line of text without surrounding spaces"),
        (None, ("a\nb",), "not one line"),
        (None, ("",), "not one line"),
        (None, ["a"], "must be a tuple of text values"),
        (None, (1,), "must be a tuple of text values"),
        (None, tuple(f"v{i}" for i in range(10_001)), "at most 10,000 candidates, got 10,001"),
        (None, ("x" * 600_000, "y" * 400_001), "at most 1,000,000 characters"),
    ],
)
def test_task_candidates_are_checked(spec, candidates, message):
    """Issue 29: a task's candidate list is what a candidates file holds, for a Bloom RAPPOR spec only."""
    task = new_task(spec or BLOOM, window="1d", time_precision="1h")[0]
    with pytest.raises(ParameterError, match=message):
        dataclasses.replace(task, candidates=candidates)


# -- read-only opening, the serve lock, permissions, health --------------------------------------------


def test_reports_by_time_reads_every_report_in_time_order_in_one_query(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        store.insert_reports([(task.task_id, [report(n, t=3_600 * (7 - n % 7)) for n in range(20)])])
        rows = [row for chunk in store.reports_by_time(task.task_id, chunk=6) for row in chunk]
        assert [t for t, _ in rows] == sorted(3_600 * (7 - n % 7) for n in range(20))
        assert sorted(text for _, text in rows) == sorted(report(n).report for n in range(20))


def test_a_read_only_store_reads_everything_and_writes_nothing(store_url):
    """Issue 24: read-only commands opened the store for writing (SQLite mode=ro, PostgreSQL read-only)."""
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        store.insert_reports([(task.task_id, [report(1)])])
    with open_store(store_url, read_only=True) as store:
        assert store.tasks() == [task] and store.task(task.task_id) == task
        assert stored_ids(store, task.task_id) == [rid(1)]
        assert store.count_by_window(task.task_id, 86_400) == {0: 1}
        with pytest.raises(ParameterError, match="read-only"):
            store.insert_reports([(task.task_id, [report(2)])])
        with pytest.raises(ParameterError, match="read-only"):
            store.delete_task(task.task_id)
    if store_url.startswith("postgresql://"):
        import psycopg

        from ldp.collector.store_postgres import PostgresStore

        store = PostgresStore(store_url, read_only=True)
        try:  # the sessions themselves refuse writes, not only the store's methods
            with store._reader() as connection, pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                connection.execute("DELETE FROM reports")
        finally:
            store.close()
    else:
        import sqlite3

        store = SqliteStore(store_url, read_only=True)
        try:
            with store._reader() as connection, pytest.raises(sqlite3.OperationalError, match="readonly"):
                connection.execute("DELETE FROM reports")
        finally:
            store.close()


def test_a_read_only_store_does_not_migrate_an_older_schema(store_url):
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
    downgrade = (
        "ALTER TABLE tasks DROP COLUMN created_at",
        "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
    )
    _run_sql(store_url, downgrade)
    with open_store(store_url, read_only=True) as store:
        assert store.tasks() == [dataclasses.replace(task, created=None)]
    with open_store(store_url) as store:  # a writer migrates 2 -> 3
        assert store.tasks() == [dataclasses.replace(task, created=None)]


def test_a_version_3_store_gains_task_names_when_a_writer_opens_it(store_url):
    """Issue 29: schema 3 → 4 adds the tasks' name and description (NULL: none); read-only opens read them empty."""
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
    downgrade = (
        "ALTER TABLE tasks DROP COLUMN name",
        "ALTER TABLE tasks DROP COLUMN description",
        "UPDATE meta SET value = '3' WHERE key = 'schema_version'",
    )
    _run_sql(store_url, downgrade)
    with open_store(store_url, read_only=True) as store:
        assert store.tasks() == [task]
    named = make_task(name="signup funnel", description="Where sign-ups stop.\nSince 2026.")
    with open_store(store_url) as store:  # a writer migrates 3 -> 4
        store.create_task(named)
    with open_store(store_url, read_only=True) as store:
        assert store.tasks() == [task, named] and store.task(named.task_id).name == "signup funnel"


def test_a_version_5_store_gains_retention_when_a_writer_opens_it(store_url):
    """Issue 29: schema 5 → 6 adds the tasks' retain_seconds (NULL: keep every report) and the aggregates of
    pruned windows; a read-only open reads a version 5 store as it is."""
    task = make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        store.insert_reports([(task.task_id, [report(1), report(2, 90_000)])])
    downgrade = [
        "DROP TABLE window_aggregates",
        "ALTER TABLE tasks DROP COLUMN retain_seconds",
        "UPDATE meta SET value = '5' WHERE key = 'schema_version'",
    ]
    if store_url.startswith("postgresql://"):
        downgrade.insert(1, "DROP FUNCTION ldp_drop_partition(BIGINT, BIGINT)")
    _run_sql(store_url, downgrade)
    with open_store(store_url, read_only=True) as store:  # read as it is, not migrated
        assert store.tasks() == [task] and stored_ids(store, task.task_id) == [rid(1), rid(2)]
        assert store.pruned_windows(task.task_id) == {} and store.window_aggregates(task.task_id) == []
        assert store.count_by_window(task.task_id, task.window) == {0: 1, 86_400: 1}
    kept = dataclasses.replace(task, retain=2 * 86_400)
    with open_store(store_url) as store:  # a writer migrates 5 -> 6
        assert store.tasks() == [task]
        assert store.update_task(kept) and store.task(task.task_id) == kept
        assert store.expired_windows(task.task_id, 86_400) == {0: 1}
    with open_store(store_url) as store:  # the second open finds version 6 and changes nothing
        assert store.tasks() == [kept] and stored_ids(store, task.task_id) == [rid(1), rid(2)]


def test_a_version_6_store_gains_task_candidates_when_a_writer_opens_it(store_url):
    """Issue 29: schema 6 → 7 adds the tasks' candidates (NULL: none), kept with the task; a read-only open
    reads a version 6 store as it is."""
    task = new_task(BLOOM, window="1d", time_precision="1h")[0]
    with open_store(store_url) as store:
        store.create_task(task)
        store.insert_reports([(task.task_id, [report(1)])])
    _run_sql(
        store_url,
        [
            "ALTER TABLE tasks DROP COLUMN candidates",
            "UPDATE meta SET value = '6' WHERE key = 'schema_version'",
        ],
    )
    with open_store(store_url, read_only=True) as store:  # read as it is, not migrated
        assert store.tasks() == [task] and store.task(task.task_id).candidates == ()
        assert stored_ids(store, task.task_id) == [rid(1)]
    listed = dataclasses.replace(task, candidates=("https://a.example/", 'é ✓ "quoted"', "b"))
    with open_store(store_url) as store:  # a writer migrates 6 -> 7
        assert store.tasks() == [task]
        assert store.update_task(listed) and store.task(task.task_id) == listed
    with open_store(store_url, read_only=True) as store:
        assert store.tasks() == [listed] and stored_ids(store, task.task_id) == [rid(1)]
    with open_store(store_url) as store:  # the second open finds version 7 and changes nothing
        assert store.tasks_with_token_hash(task.token_hash) == [listed]
        assert store.update_task(dataclasses.replace(listed, candidates=()))  # removed: NULL again
        assert store.task(task.task_id) == task


def test_only_the_mutable_fields_of_a_task_are_updated(store_url):
    task, other = make_task(name="old"), make_task()
    with open_store(store_url) as store:
        store.create_task(task)
        store.create_task(other)
        changed = dataclasses.replace(task, name="new", description="d", retain=86_400, min_batch=5)
        assert store.update_task(changed)
        assert store.task(task.task_id) == dataclasses.replace(changed, min_batch=task.min_batch)
        assert store.task(other.task_id) == other
        assert store.update_task(make_task()) is False  # no such task


def test_a_missing_sqlite_store_is_not_created_read_only(tmp_path):
    with pytest.raises(ParameterError, match="no such file"):
        open_store(str(tmp_path / "absent.db"), read_only=True)
    assert not (tmp_path / "absent.db").exists()


def test_a_new_sqlite_store_and_its_wal_files_are_private(tmp_path):
    """Issue 24: the SQLite file (and its -wal and -shm) is created 0600, whatever the umask."""
    path = tmp_path / "private.db"
    previous = os.umask(0o022)
    try:
        with open_store(str(path), exclusive=True) as store:
            task = make_task()
            store.create_task(task)
            store.insert_reports([(task.task_id, [report(1)])])
            modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    finally:
        os.umask(previous)
    assert modes == {
        "private.db": 0o600,
        "private.db-wal": 0o600,
        "private.db-shm": 0o600,
        "private.db.serve-lock": 0o600,
    }


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from ldp.collector.store import open_store

    store = open_store(sys.argv[1], exclusive=True)
    print("holding", flush=True)
    time.sleep(600)
    """
)


def test_a_second_server_on_one_sqlite_file_is_refused_until_the_first_dies(tmp_path):
    """Issue 24: two servers on one SQLite file both started, and each counted only its own uploads.

    The lock is a flock on a sidecar file: released by the kernel on kill -9.
    """
    path = str(tmp_path / "served.db")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, path], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        with pytest.raises(ParameterError, match="already served by another ldp serve"):
            open_store(path, exclusive=True)
        with open_store(path) as writer:  # ldp task create and friends still open it
            writer.create_task(make_task())
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        if holder.stdout:
            holder.stdout.close()
    with open_store(path, exclusive=True) as store:  # kill -9 left no stale lock
        assert len(store.tasks()) == 1


def test_check_writable_reports_a_locked_store(store_url, monkeypatch):
    """Issue 24: /healthz said ok while the reports table was locked."""
    from ldp.collector import store_postgres, store_sqlite
    from ldp.collector.store import StoreUnavailable

    # the probe's wait for the lock, 1 s in service, shortened: the test waits it out once per backend
    monkeypatch.setattr(store_sqlite, "_PROBE_TIMEOUT_MS", 100)
    monkeypatch.setattr(store_postgres, "_PROBE_LOCK_TIMEOUT", "100ms")

    with open_store(store_url) as store:
        store.check_writable()
        if store_url.startswith("postgresql://"):
            import psycopg

            with psycopg.connect(store_url) as other:
                other.execute("LOCK TABLE reports IN ACCESS EXCLUSIVE MODE")
                started = time.monotonic()
                with pytest.raises(StoreUnavailable, match="locked"):
                    store.check_writable()
                other.rollback()
        else:
            import sqlite3

            other = sqlite3.connect(store_url, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="locked"):
                store.check_writable()
            other.execute("ROLLBACK")
            other.close()
        assert time.monotonic() - started < 10
        store.check_writable()


def test_check_writable_reports_a_full_file_system(tmp_path, monkeypatch):
    import shutil as shutil_module

    from ldp.collector.store import StoreUnavailable

    with open_store(str(tmp_path / "full.db")) as store:
        usage = shutil_module.disk_usage(tmp_path)
        monkeypatch.setattr(
            "ldp.collector.store_sqlite.shutil.disk_usage", lambda _: usage._replace(free=4096)
        )
        with pytest.raises(StoreUnavailable, match="4,096 bytes free"):
            store.check_writable()


@pytest.mark.slow  # PostgreSQL: the fast set's PostgreSQL test is the replay contract's
def test_a_postgresql_role_without_table_rights_gets_one_line_naming_the_grant(postgres_url, tmp_path):
    """Issue 24: a role without the needed rights got a 41-line psycopg traceback."""
    import uuid

    import psycopg
    from psycopg import sql

    name = f"app_{uuid.uuid4().hex[:12]}"
    role = sql.Identifier(name)
    with fresh_database(postgres_url) as url:
        open_store(url).close()
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(role))
            admin.execute(
                sql.SQL("GRANT SELECT ON meta, tasks, reports, window_aggregates TO {}").format(role)
            )
        as_role = url.replace("postgres@", f"{name}@", 1)
        with pytest.raises(ParameterError) as caught:
            open_store(as_role)
        message = str(caught.value)
        assert "\n" not in message
        assert "lacks INSERT on tasks, DELETE on tasks, INSERT on reports, DELETE on reports" in message
        assert (
            f"GRANT SELECT, INSERT, DELETE ON tasks, reports, commits, window_aggregates TO {name}" in message
        )
        assert "GRANT EXECUTE ON FUNCTION ldp_window_partition(bigint, bigint, bigint)" in message
        open_store(as_role, read_only=True).close()  # reading needs only SELECT
        spec_path = tmp_path / "spec.json"
        spec_path.write_text(SPEC.to_json())
        result = subprocess.run(
            [sys.executable, "-m", "ldp", "task", "create", "--store", as_role, "--spec", str(spec_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "GRANT" in result.stderr


@pytest.mark.slow  # PostgreSQL: the fast set's PostgreSQL test is the replay contract's
def test_a_postgresql_role_that_cannot_create_the_tables_is_told_so(postgres_url):
    import uuid

    import psycopg
    from psycopg import sql

    name = f"app_{uuid.uuid4().hex[:12]}"
    with fresh_database(postgres_url) as url:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
            admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        with pytest.raises(ParameterError, match="cannot create them") as caught:
            open_store(url.replace("postgres@", f"{name}@", 1))
        assert "\n" not in str(caught.value)


@pytest.mark.slow  # PostgreSQL: the fast set's PostgreSQL test is the replay contract's
def test_a_stopped_postgresql_server_is_store_unavailable_once_open(postgres_url):
    """A server gone after opening: one-line StoreUnavailable (answered 503), never a ParameterError (404/400)."""
    import psycopg

    from ldp.collector.store import StoreUnavailable

    task = make_task()
    with fresh_database(postgres_url) as url, open_store(url) as store:
        store.create_task(task)
        name = url.rsplit("/", 1)[1].split("?", 1)[0]
        with psycopg.connect(postgres_url, autocommit=True) as admin:  # refuse new sessions, end the store's
            admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
            )
        with pytest.raises(StoreUnavailable) as caught:
            store.insert_reports([(task.task_id, [report(1)])])
        assert "\n" not in str(caught.value)
        with pytest.raises(StoreUnavailable):
            store.check_writable()


def _run_sql(store_url: str, statements) -> None:
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url) as connection:
            for statement in statements:
                connection.execute(statement)
    else:
        import sqlite3

        with contextlib.closing(sqlite3.connect(store_url)) as connection, connection:
            for statement in statements:
                connection.execute(statement)


# -- version 3 stores, as ldp created them before reports were keyed by window ----------------------

#: The schema version 3 that SqliteStore created (verbatim), without its meta row.
_SQLITE_V3 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE tasks (
    seq INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL UNIQUE,
    spec_json TEXT NOT NULL,
    window_seconds INTEGER NOT NULL,
    time_precision INTEGER NOT NULL,
    min_batch INTEGER NOT NULL,
    token_hash TEXT NOT NULL,
    not_before INTEGER,
    not_after INTEGER,
    cors_origins TEXT NOT NULL,
    shuffle_delta REAL,
    created_at INTEGER
)""",
    """CREATE TABLE reports (
    task INTEGER NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
    report_id BLOB NOT NULL,
    t INTEGER NOT NULL,
    report TEXT NOT NULL,
    PRIMARY KEY (task, report_id)
) WITHOUT ROWID""",
    "CREATE INDEX reports_by_time ON reports (task, t)",
    "CREATE INDEX tasks_by_token ON tasks (token_hash)",
)
#: The schema version 3 that PostgresStore created (verbatim).
_POSTGRES_V3 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE tasks (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id TEXT NOT NULL UNIQUE,
        spec_json TEXT NOT NULL,
        window_seconds BIGINT NOT NULL,
        time_precision BIGINT NOT NULL,
        min_batch BIGINT NOT NULL,
        token_hash TEXT NOT NULL,
        not_before BIGINT,
        not_after BIGINT,
        cors_origins TEXT NOT NULL,
        shuffle_delta DOUBLE PRECISION,
        created_at BIGINT
    )""",
    """CREATE TABLE reports (
        task BIGINT NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        report_id BYTEA NOT NULL,
        t BIGINT NOT NULL,
        report TEXT NOT NULL,
        PRIMARY KEY (task, report_id)
    )""",
    "CREATE INDEX reports_by_time ON reports (task, t)",
    "CREATE INDEX tasks_by_token ON tasks (token_hash)",
)


def _version_3_store(store_url: str, task: Task, reports: list[StoredReport]) -> None:
    """A store of schema version 3 holding ``task`` and ``reports``, written as that version's code wrote it."""
    from ldp.collector.store import TASK_COLUMN_COUNT, TASK_COLUMNS, task_row

    postgres = store_url.startswith("postgresql://")
    mark = "%s" if postgres else "?"
    statements = [(statement, ()) for statement in (_POSTGRES_V3 if postgres else _SQLITE_V3)]
    statements.append((f"INSERT INTO meta (key, value) VALUES ('schema_version', {mark})", ("3",)))
    later = ", name, description, retain_seconds, candidates"  # versions 4, 6 and 7 added them
    v3_columns = TASK_COLUMNS.removesuffix(later)
    values = ", ".join([mark] * (TASK_COLUMN_COUNT - later.count(",")))
    statements.append(
        (f"INSERT INTO tasks ({v3_columns}) VALUES ({values})", task_row(task)[: -later.count(",")])
    )
    for r in reports:
        statements.append(
            (
                f"INSERT INTO reports (task, report_id, t, report) VALUES (1, {mark}, {mark}, {mark})",
                (r.report_id, r.t, r.report),
            )
        )
    if postgres:
        import psycopg

        with psycopg.connect(store_url) as connection:
            for statement, parameters in statements:
                connection.execute(statement, parameters)
    else:
        import sqlite3

        with contextlib.closing(sqlite3.connect(store_url)) as connection, connection:
            for statement, parameters in statements:
                connection.execute(statement, parameters)


def test_a_version_3_store_is_migrated_to_window_keys_and_keeps_every_report(store_url):
    """Issue 29: reports keyed by (task, window, id); a store the previous ldp made opens, upgraded, intact."""
    task = make_task()  # windows of one day
    old = [report(n, t) for n, t in enumerate([3_600, 3_600, 90_000, -1, -86_400, -86_401])]
    _version_3_store(store_url, task, old)

    def every(store) -> list[StoredReport]:
        return sorted((r for chunk in store.reports(task.task_id) for r in chunk), key=lambda r: r.report_id)

    with open_store(store_url, read_only=True) as store:  # read as it is, not migrated
        assert every(store) == old
    with open_store(store_url) as store:  # the writer migrates 3 -> 4 -> 5 -> 6
        assert store.tasks() == [task]
        assert every(store) == old
        assert store.count_by_window(task.task_id, task.window) == {-172_800: 1, -86_400: 2, 0: 2, 86_400: 1}
        # the migrated keys hold: a retry of a migrated report is a replay, in a negative window too
        [flags] = store.insert_reports([(task.task_id, [old[0], old[3], report(9, 90_000)])])
        assert flags == [REPLAYED, REPLAYED, STORED]
        assert store.count_by_window(task.task_id, task.window) == {-172_800: 1, -86_400: 2, 0: 2, 86_400: 2}
    with open_store(store_url) as store:  # the second open finds version 6 and changes nothing
        assert len(every(store)) == 7


@pytest.mark.slow  # PostgreSQL: the fast set's PostgreSQL test is the replay contract's
def test_postgresql_partitions_hold_a_day_of_windows_and_go_with_their_task(postgres_url):
    """Issue 29: reports partitioned by window, a day of short windows per table; deleting a task drops them."""
    import psycopg

    from ldp.collector.store_postgres import partition_of

    assert partition_of(3_600 * 25, 3_600) == (86_400, 86_400)
    assert partition_of(-60, 60) == (-86_400, 86_400)
    assert partition_of(2 * 172_800, 172_800) == (2 * 172_800, 172_800)

    def partitions(url: str) -> list[str]:
        with psycopg.connect(url) as connection:
            rows = connection.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = 'reports'::regclass ORDER BY 1"
            ).fetchall()
        return [row[0] for row in rows]

    minutes = new_task(SPEC, window="1m", time_precision="1m")[0]
    days = new_task(SPEC, window="2d", time_precision="1h")[0]
    with fresh_database(postgres_url) as url, open_store(url) as store:
        store.create_task(minutes)
        store.create_task(days)
        # 1,500 one-minute windows over two days; two-day windows at 0 and 172,800
        store.insert_reports([(minutes.task_id, [report(n, 60 * n) for n in range(1_500)])])
        store.insert_reports([(days.task_id, [report(1, 0), report(2, 86_400), report(3, 172_800)])])
        assert partitions(url) == ["reports_1_0", "reports_1_86400", "reports_2_0", "reports_2_172800"]
        assert store.count_by_window(days.task_id, days.window) == {0: 2, 172_800: 1}
        assert store.delete_task(minutes.task_id)
        assert partitions(url) == ["reports_2_0", "reports_2_172800"]
        assert stored_ids(store, days.task_id) == [rid(1), rid(2), rid(3)]
