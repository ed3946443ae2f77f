"""``ldp store backup`` and ``ldp store restore`` (docs/collector.md#backup).

A backup is one committed state of the store even while another connection
commits (it holds a read snapshot across all its steps); it opens with
``ldp aggregate --store`` and gives exactly the original's estimates; it is
private (0600), verified, and named only once complete, so a ``kill -9`` of
the backup process leaves no output and the store intact. A restore replaces
the store's content in one transaction and is refused while a server holds
the store.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner, Result
from conftest import sample_values

import ldp
from ldp.atomic import TEMP_MARK
from ldp.cli import cli
from ldp.client import encode_batch
from ldp.collector.backup import backup_store
from ldp.collector.store import StoredReport, open_store
from ldp.collector.store_sqlite import SCHEMA_VERSION, SqliteStore

GRR = ldp.GRR(domain=("a", "b", "c", "d", "e"), epsilon=1.0)
DAY, HOUR = 86_400, 3_600
BASE = 1_764_000_000 - 1_764_000_000 % DAY


def _ldp(*args: object, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def _ok(*args: object, input: str | None = None) -> Result:
    result = _ldp(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def _error(*args: object) -> str:
    """The one error line of a command that must fail with exit status 2."""
    result = _ldp(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def _reports(spec, n: int, seed: int) -> list[StoredReport]:
    """``n`` encoded reports of ``spec`` as ``ldp serve`` stores them, over three one-day windows."""
    batch = encode_batch(spec, sample_values(spec, n), np.random.default_rng(seed))
    steps = 3 * DAY // HOUR
    return [
        StoredReport(secrets.token_bytes(16), BASE + (i * 7 % steps) * HOUR, report.to_json())
        for i, report in enumerate(batch.reports(spec))
    ]


def _store_with_task(tmp_path: Path, n: int = 3_000) -> tuple[Path, Path, str]:
    """A SQLite store with one GRR task of ``n`` reports: (store, spec file, task id)."""
    store, spec_path = tmp_path / "collector.db", tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    created = json.loads(_ok("task", "create", "--store", store, "--spec", spec_path, "--json").stdout)
    reports = _reports(GRR, n, seed=1)
    with open_store(str(store)) as opened:
        opened.insert_reports([(created["task"], reports[i : i + 500]) for i in range(0, n, 500)])
    return store, spec_path, created["task"]


def _estimates(tmp_path: Path, store: Path, task_id: str) -> pd.DataFrame:
    out = tmp_path / f"estimates-{secrets.token_hex(4)}.parquet"
    _ok("aggregate", "--store", store, "--task", task_id, "-o", out)
    return pd.read_parquet(out)


def _report_ids(path: Path) -> set[bytes]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {bytes(row[0]) for row in connection.execute("SELECT report_id FROM reports")}
    finally:
        connection.close()


def _temporaries(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if TEMP_MARK in name)


# -- backup ------------------------------------------------------------------------------------------


def test_backup_is_private_verified_and_aggregates_like_the_store(tmp_path):
    store, _, task_id = _store_with_task(tmp_path)
    backup = tmp_path / "backups" / "b.db"
    backup.parent.mkdir()
    result = _ok("store", "backup", "--store", f"sqlite:///{store}", "-o", backup)
    assert result.stdout == ""
    assert f"backed up 3,000 reports of 1 task(s) (schema version {SCHEMA_VERSION}," in result.stderr
    assert f"{task_id}  3,000 reports" in result.stderr
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert sorted(os.listdir(backup.parent)) == ["b.db"]  # one self-contained file, no temporary left
    assert backup.read_bytes()[18:20] == b"\x01\x01"  # rollback-journal mode: no -wal needed to read it
    pd.testing.assert_frame_equal(_estimates(tmp_path, backup, task_id), _estimates(tmp_path, store, task_id))
    assert _report_ids(backup) == _report_ids(store)


def test_a_plain_copy_of_a_live_store_misses_the_wal_and_a_backup_does_not(tmp_path):
    """The motivating fault: reports committed by a running server sit in ``-wal`` until a checkpoint."""
    store, _, task_id = _store_with_task(tmp_path, n=10)
    with SqliteStore(str(store)) as serving:  # open, as ldp serve keeps it: its commits stay in the WAL
        serving.insert_reports([(task_id, _reports(GRR, 1_000, seed=7))])
        shutil.copyfile(store, tmp_path / "copied.db")
        backup_store(str(store), str(tmp_path / "b.db"))
        committed = _report_ids(store)
    assert len(committed) == 1_010
    assert len(_report_ids(tmp_path / "copied.db")) < len(committed)
    assert _report_ids(tmp_path / "b.db") == committed


def test_backup_refuses_an_existing_output_unless_force_and_never_the_store(tmp_path):
    store, _, _ = _store_with_task(tmp_path, n=10)
    backup = tmp_path / "b.db"
    backup.write_text("keep me")
    assert "already exists; give --force" in _error("store", "backup", "--store", store, "-o", backup)
    assert backup.read_text() == "keep me"
    _ok("store", "backup", "--store", store, "-o", backup, "--force")
    assert _report_ids(backup) == _report_ids(store)
    before = store.read_bytes()
    for target in (store, f"{store}-wal", tmp_path / "link.db"):
        if target == tmp_path / "link.db":
            os.symlink(store, target)
        message = _error("store", "backup", "--store", store, "-o", target, "--force")
        assert "would destroy the input" in message, message
    assert store.read_bytes() == before
    assert "pg_dump" in _error("store", "backup", "--store", "postgresql://u@h/db", "-o", backup)
    assert "no such file" in _error(
        "store", "backup", "--store", tmp_path / "none.db", "-o", tmp_path / "x.db"
    )
    (tmp_path / "junk.db").write_text("not a database")
    _error("store", "backup", "--store", tmp_path / "junk.db", "-o", tmp_path / "y.db")
    assert _temporaries(tmp_path) == []


def test_backup_while_another_connection_writes_is_the_state_it_started_from(tmp_path):
    """Between every two steps of the copy another connection commits reports: the copy holds exactly the first state.

    A copy mixing pages of two states would fail its integrity check or hold
    another set of reports; the backup API restarting on each commit would
    never finish (one commit per step).
    """
    store, _, task_id = _store_with_task(tmp_path)
    at_start = _report_ids(store)
    extra = _reports(GRR, 20 * 200, seed=2)
    writer = SqliteStore(str(store))
    steps: list[int] = []

    def commit_between_steps(copied: int, total: int) -> None:
        batch = extra[200 * len(steps) : 200 * (len(steps) + 1)]
        steps.append(copied)
        if batch:
            writer.insert_reports([(task_id, batch)])

    with writer:
        summary = backup_store(str(store), str(tmp_path / "b.db"), pages=4, progress=commit_between_steps)
    assert len(steps) > 10 and steps == sorted(steps)  # many steps, never restarted
    assert _report_ids(tmp_path / "b.db") == at_start
    assert summary.counts == {task_id: len(at_start)}
    assert len(_report_ids(store)) == len(at_start) + min(len(extra), 200 * len(steps))


# -- restore -----------------------------------------------------------------------------------------


def test_restore_replaces_the_content_and_is_refused_while_served(tmp_path):
    store, _, task_id = _store_with_task(tmp_path)
    backup = tmp_path / "b.db"
    _ok("store", "backup", "--store", store, "-o", backup)
    saved = _report_ids(store)
    expected = _estimates(tmp_path, store, task_id)
    _ok("task", "delete", "--store", store, task_id, "--yes")
    with SqliteStore(str(store), exclusive=True):  # what ldp serve holds
        assert "already served" in _error("store", "restore", "--store", store, backup, "--yes")
    result = _ldp("store", "restore", "--store", store, backup, input="n\n")
    assert result.exit_code == 1 and "nothing restored" in result.stderr
    result = _ok("store", "restore", "--store", store, backup, "--yes")
    assert "restored 3,000 reports of 1 task(s)" in result.stderr
    assert _report_ids(store) == saved
    pd.testing.assert_frame_equal(_estimates(tmp_path, store, task_id), expected)
    assert "would destroy the input" in _error("store", "restore", "--store", store, store, "--yes")
    (tmp_path / "junk.db").write_text("not a database")
    assert "BACKUP" in _error("store", "restore", "--store", store, tmp_path / "junk.db", "--yes")
    assert _report_ids(store) == saved


# -- kill -9 -----------------------------------------------------------------------------------------


def _large_store(path: Path, n: int) -> str:
    """A store with one task of ``n`` (identical, valid) GRR reports, written fast; the task id."""
    spec_path = path.parent / "spec.json"
    spec_path.write_text(GRR.to_json())
    task_id = json.loads(_ok("task", "create", "--store", path, "--spec", spec_path, "--json").stdout)["task"]
    _large_store_reports(str(path), task_id, n)
    return task_id


def _large_store_reports(path: str, task_id: str, n: int) -> None:
    """Add ``n`` identical, valid GRR reports to task ``task_id`` at :data:`BASE`, with ids in order (fast)."""
    text = _reports(GRR, 1, seed=3)[0].report
    connection = sqlite3.connect(path)
    try:
        with connection:
            seq, window = connection.execute(
                "SELECT seq, window_seconds FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            connection.executemany(
                "INSERT INTO reports (task, window_start, report_id, t, report) VALUES (?, ?, ?, ?, ?)",
                ((seq, BASE - BASE % window, i.to_bytes(16, "big"), BASE, text) for i in range(n)),
            )
    finally:
        connection.close()


@pytest.mark.slow
def test_kill_9_during_a_backup_leaves_no_output_and_the_store_intact(tmp_path):
    store = tmp_path / "collector.db"
    task_id = _large_store(store, 100_000)
    before = store.read_bytes()
    expected = _estimates(tmp_path, store, task_id)
    backup = tmp_path / "b.db"
    command = [sys.executable, "-m", "ldp", "store", "backup", "--store", str(store), "-o", str(backup)]
    process = subprocess.Popen([*command, "--step-pages", "1"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(  # the copy has begun: pages reached the temporary file
        os.path.getsize(tmp_path / name) > 0 for name in _temporaries(tmp_path) if name.endswith(".db")
    ):
        assert process.poll() is None, "the backup ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    copied = max(os.path.getsize(tmp_path / name) for name in _temporaries(tmp_path))
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert copied < store.stat().st_size / 2  # killed in the middle of the copy
    assert not backup.exists()
    left = _temporaries(tmp_path)
    assert left and all(name.startswith(".b.db.") for name in left)
    assert store.read_bytes() == before
    pd.testing.assert_frame_equal(_estimates(tmp_path, store, task_id), expected)

    # the next backup ignores the young temporary, then sweeps it once it is stale
    subprocess.run(command, check=True, stderr=subprocess.PIPE)
    pd.testing.assert_frame_equal(_estimates(tmp_path, backup, task_id), expected)
    old = time.time() - 3_600
    for name in left:
        os.utime(tmp_path / name, (old, old))
    subprocess.run([*command, "--force"], check=True, stderr=subprocess.PIPE)
    assert _temporaries(tmp_path) == []
    pd.testing.assert_frame_equal(_estimates(tmp_path, backup, task_id), expected)

    # and the backup restores into a new store with the same estimates
    restored = tmp_path / "restored.db"
    _ok("store", "restore", "--store", restored, backup, "--yes")
    assert stat.S_IMODE(restored.stat().st_mode) == 0o600
    pd.testing.assert_frame_equal(_estimates(tmp_path, restored, task_id), expected)


@pytest.mark.slow
def test_kill_9_during_a_restore_leaves_the_store_as_it_was(tmp_path):
    source = tmp_path / "source.db"
    _large_store(source, 100_000)
    backup = tmp_path / "b.db"
    _ok("store", "backup", "--store", source, "-o", backup)
    store, _, task_id = _store_with_task(tmp_path, n=300)
    before = _report_ids(store)
    expected = _estimates(tmp_path, store, task_id)
    command = [sys.executable, "-m", "ldp", "store", "restore", "--store", str(store), str(backup), "--yes"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    wal = Path(f"{store}-wal")
    deadline = time.monotonic() + 60
    while not (wal.exists() and wal.stat().st_size > 1 << 20):  # the restore is writing its transaction
        assert process.poll() is None, "the restore ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert _report_ids(store) == before  # the uncommitted transaction is gone
    pd.testing.assert_frame_equal(_estimates(tmp_path, store, task_id), expected)
    with SqliteStore(str(store), exclusive=True):  # the kernel released the serve lock with the process
        pass


# -- PostgreSQL: pg_dump and pg_restore as docs/how-to/postgresql.md#backup runs them -----------------


@pytest.mark.slow
def test_pg_dump_and_pg_restore_as_documented(tmp_path, postgres_url):
    import uuid

    from postgres_cluster import create_database, drop_database, find_binaries

    bin_dir = find_binaries()
    assert bin_dir is not None  # the postgres_url fixture skipped otherwise
    name = f"test_{uuid.uuid4().hex}"
    url = create_database(postgres_url, name)
    try:
        spec_path = tmp_path / "spec.json"
        spec_path.write_text(GRR.to_json())
        task_id = json.loads(_ok("task", "create", "--store", url, "--spec", spec_path, "--json").stdout)[
            "task"
        ]
        with open_store(url) as opened:
            opened.insert_reports([(task_id, _reports(GRR, 2_000, seed=4))])
        expected = _estimates(tmp_path, url, task_id)
        dump = tmp_path / "ldp.dump"
        subprocess.run([bin_dir / "pg_dump", "--format=custom", f"--file={dump}", url], check=True)
        with open_store(url) as opened:  # what the restore must undo: more reports, then the task gone
            opened.insert_reports([(task_id, _reports(GRR, 500, seed=5))])
            opened.delete_task(task_id)
        restore = [
            bin_dir / "pg_restore",
            "--clean",
            "--if-exists",
            "--single-transaction",
            f"--dbname={url}",
        ]
        subprocess.run([*restore, dump], check=True)
        pd.testing.assert_frame_equal(_estimates(tmp_path, url, task_id), expected)
    finally:
        drop_database(postgres_url, name)


# -- a backup while ldp serve takes uploads, restored under a new server -----------------------------


@pytest.mark.slow
def test_backup_while_uploads_run_restores_what_was_committed(tmp_path):
    import threading

    from collector_server import Server, create_task, envelopes, now_truncated, upload
    from collector_server import estimates as collector_estimates

    store = str(tmp_path / "collector.db")
    task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    _large_store_reports(store, task.task_id, 50_000)  # so the copy takes many steps
    items = envelopes([json.loads(r.report) for r in _reports(GRR, 20_000, seed=6)], now_truncated(task))
    acknowledged: list[int] = []
    backed_up_already = threading.Event()

    server = Server(store)
    try:

        def uploads() -> None:
            for i in range(0, len(items), 100):  # until the backup is done
                if backed_up_already.is_set():
                    return
                reply = upload(server, task, items[i : i + 100])
                assert reply.status_code == 200, reply.text
                acknowledged.append(reply.json()["accepted"])

        uploader = threading.Thread(target=uploads)
        uploader.start()
        while len(acknowledged) < 3:
            time.sleep(0.01)
        before = sum(acknowledged)
        command = ["store", "backup", "--store", store, "-o", tmp_path / "b.db", "--step-pages", "1"]
        subprocess.run([sys.executable, "-m", "ldp", *map(str, command)], check=True, stderr=subprocess.PIPE)
        during = sum(acknowledged) - before
        backed_up_already.set()
        uploader.join(120)
    finally:
        server.stop()
    backed_up = _report_ids(tmp_path / "b.db")
    assert backed_up <= _report_ids(Path(store))  # committed reports only
    assert 50_000 + before <= len(backed_up) <= 50_000 + before + during
    assert during > 0 and len(acknowledged) < len(items) / 100  # uploads ran during the whole backup

    _ok("store", "restore", "--store", store, tmp_path / "b.db", "--yes")
    server = Server(store)
    try:
        reply = collector_estimates(server, task, token).json()
    finally:
        server.stop()
    assert reply["n"] == len(backed_up)
