"""Insert rate as a task's reports table grows: reports/s per chunk, against the former key in the same run.

One connection stores GRR reports (domain 16, the JSON a client sends; random
16-byte ids from ``os.urandom``) into one task through
:meth:`Store.insert_reports`, in transactions of ``--group`` reports (100, as
an upload of 100 envelopes), each committed (SQLite ``synchronous=FULL``,
PostgreSQL ``synchronous_commit`` on). Report times advance as a live task's
do: ``--per-window`` reports per window of one hour, so the table grows by
whole windows. The store keys reports by ``(task, window_start, report_id)``
(schema 4): an insert touches the current window's pages.

The reference, in the same run and on the same reports, is the former SQLite
schema (version 3: ``WITHOUT ROWID`` table keyed by ``(task, report_id)`` and
an index on ``(task, t)``, the store's pragmas, one ``INSERT ... ON CONFLICT
DO NOTHING`` per report, one transaction per group), where every insert lands
on a random page of one B-tree over the whole task. The two alternate chunk
by chunk, so both see the same machine load. Every ``--chunk`` reports the
script prints each one's rate and its rate relative to its own first chunk:
a flat insert rate is a ratio near 1 all the way.

Usage::

    python benchmarks/bench_store_growth.py                              # SQLite, 2 M in chunks of 250 k
    python benchmarks/bench_store_growth.py --postgres --reports 10000000 --chunk 1000000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import ldp
from ldp.client import encode_batch
from ldp.collector.store import Insert, StoredReport, open_store
from ldp.collector.tasks import new_task

REPO = Path(__file__).resolve().parent.parent
SPEC = ldp.GRR(domain=[f"v{i}" for i in range(16)], epsilon=1.0)
WINDOW = 3_600
POOL = 10_000


def texts() -> list[str]:
    """POOL encoded GRR reports as the JSON texts the store keeps."""
    rng = np.random.default_rng(7)
    values = [f"v{v % 16}" for v in rng.zipf(1.3, POOL).tolist()]
    return [
        json.dumps(r.to_dict(), separators=(",", ":")) for r in encode_batch(SPEC, values, rng).reports(SPEC)
    ]


_FORMER_SCHEMA = (
    "CREATE TABLE tasks (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL UNIQUE)",
    """CREATE TABLE reports (
        task INTEGER NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        report_id BLOB NOT NULL,
        t INTEGER NOT NULL,
        report TEXT NOT NULL,
        PRIMARY KEY (task, report_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX reports_by_time ON reports (task, t)",
    "INSERT INTO tasks (seq, task_id) VALUES (1, 'former')",
)


class FormerKey:
    """The schema 3 reports table (keyed by task and id), written as SqliteStore wrote it."""

    def __init__(self, path: str) -> None:
        from ldp.collector import store_sqlite

        self.connection = sqlite3.connect(path)
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON"):
            self.connection.execute(f"PRAGMA {pragma}")
        self.connection.execute(f"PRAGMA cache_size=-{store_sqlite.WRITER_CACHE_KIB}")
        self.connection.execute(f"PRAGMA wal_autocheckpoint={store_sqlite.WAL_AUTOCHECKPOINT_PAGES}")
        with self.connection:
            for statement in _FORMER_SCHEMA:
                self.connection.execute(statement)

    def insert(self, batch: list[StoredReport]) -> None:
        with self.connection:
            cursor = self.connection.cursor()
            cursor.execute("SELECT seq FROM tasks WHERE task_id = 'former'").fetchone()
            for report in batch:
                cursor.execute(
                    "INSERT INTO reports (task, report_id, t, report) VALUES (1, ?, ?, ?) "
                    "ON CONFLICT (task, report_id) DO NOTHING",
                    (report.report_id, report.t, report.report),
                )
                if cursor.rowcount != 1:
                    raise RuntimeError("a report was not stored")

    def close(self) -> None:
        self.connection.close()


def batches(args: argparse.Namespace, done: int, size: int, pool: list[str]) -> list[list[StoredReport]]:
    """The chunk of ``size`` reports after the first ``done``, in groups of ``--group``."""
    start_time = 1_700_000_000 - 1_700_000_000 % WINDOW
    ids = os.urandom(16 * size)
    groups = []
    for low in range(0, size, args.group):
        groups.append(
            [
                StoredReport(
                    ids[16 * i : 16 * i + 16],
                    start_time + WINDOW * ((done + i) // args.per_window) + 60 * ((done + i) % 60),
                    pool[(done + i) % POOL],
                )
                for i in range(low, min(size, low + args.group))
            ]
        )
    return groups


def run(url: str, args: argparse.Namespace, label: str, former: FormerKey | None) -> None:
    task, _token = new_task(SPEC, window=WINDOW, time_precision=60, min_batch=1)
    pool = texts()
    firsts: list[float] = []
    with open_store(url) as store:
        store.create_task(task)
        done = 0
        print(
            f"{label}: {args.reports:,} reports, {args.per_window:,} per window, transactions of {args.group}"
        )
        head = f"{'reports':>12}{'windows':>9}{'reports/s':>12}{'vs first':>10}"
        print(head + (f"{'former key/s':>14}{'vs first':>10}" if former else ""))
        while done < args.reports:
            size = min(args.chunk, args.reports - done)
            groups = batches(args, done, size, pool)
            began = time.perf_counter()
            for batch in groups:
                [flags] = store.insert_reports([(task.task_id, batch)])
                if not all(flag is Insert.STORED for flag in flags):
                    raise RuntimeError("a report was not stored")
            rates = [size / (time.perf_counter() - began)]
            if former is not None:
                began = time.perf_counter()
                for batch in groups:
                    former.insert(batch)
                rates.append(size / (time.perf_counter() - began))
            done += size
            firsts = firsts or rates
            line = (
                f"{done:>12,}{-(-done // args.per_window):>9,}{rates[0]:>12,.0f}{rates[0] / firsts[0]:>10.2f}"
            )
            if former is not None:
                line += f"{rates[1]:>14,.0f}{rates[1] / firsts[1]:>10.2f}"
            print(line, flush=True)


@contextlib.contextmanager
def postgres_database() -> Iterator[str | None]:
    sys.path.insert(0, str(REPO / "tests"))
    from postgres_cluster import find_binaries, postgres_cluster

    if find_binaries() is None:
        print("PostgreSQL skipped: no PostgreSQL binaries (initdb, pg_ctl)")
        yield None
        return
    with postgres_cluster() as url:
        yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=2_000_000, help="reports in all (default 2,000,000)")
    parser.add_argument(
        "--chunk", type=int, default=250_000, help="reports per printed rate (default 250,000)"
    )
    parser.add_argument("--per-window", type=int, default=250_000, help="reports per one-hour window")
    parser.add_argument("--group", type=int, default=100, help="reports per transaction (default 100)")
    parser.add_argument("--postgres", action="store_true", help="also a throwaway PostgreSQL cluster")
    parser.add_argument("--no-sqlite", action="store_true", help="skip SQLite")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if not args.no_sqlite:
        with tempfile.TemporaryDirectory(prefix="ldp-bench-growth-") as tmp:
            former = FormerKey(str(Path(tmp) / "former.db"))
            try:
                run(str(Path(tmp) / "store.db"), args, "SQLite", former)
            finally:
                former.close()
    if args.postgres:
        with postgres_database() as url:
            if url is not None:
                run(url, args, "PostgreSQL", None)


if __name__ == "__main__":
    main()
