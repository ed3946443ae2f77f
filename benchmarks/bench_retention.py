"""Retention on a SQLite store: what a run costs, how long it holds the writer, and what reads cost after it.

A GRR task (domain 8, the JSON a client sends) receives ``--reports`` reports
over ``--windows`` one-hour windows. Then one retention run
(:func:`ldp.collector.retention.prune_task`) prunes the older half of the
windows: it aggregates each, keeps its state and deletes its reports in
batches of ``--batch``. The script prints

- the run's time, and the longest and median time it held the store's writer
  lock (an upload's commit waits for one such hold at most);
- a full read of the task in time order (what a restart and an export read)
  before the run, after it, and after an interrupted deletion (rows of a kept
  window left: every read then skips them), each as a ratio to the plain
  query of the code before retention, timed in the same run, alternating;
- the bytes of a kept aggregate against the window's stored reports.

Usage::

    python benchmarks/bench_retention.py                      # 500,000 reports over 240 windows
    python benchmarks/bench_retention.py --reports 2000000 --batch 5000
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import ldp
from ldp.client import encode_batch
from ldp.collector.retention import prune_task
from ldp.collector.store import StoredReport, open_store
from ldp.collector.tasks import new_task

HOUR = 3_600
BASE = 1_764_000_000 - 1_764_000_000 % 86_400


class _TimedLock:
    """The store's writer lock, recording how long each hold lasted."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.holds: list[float] = []
        self._since = 0.0

    def __enter__(self) -> None:
        self.lock.acquire()
        self._since = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.holds.append(time.perf_counter() - self._since)
        self.lock.release()


def _plain_read(path: str, task_id: str) -> float:
    """The full read of the code before retention: one query, no condition on pruned windows."""
    connection = sqlite3.connect(path)
    start = time.perf_counter()
    cursor = connection.execute(
        "SELECT r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq WHERE k.task_id = ? ORDER BY r.t",
        (task_id,),
    )
    while cursor.fetchmany(50_000):
        pass
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed


def _store_read(store, task_id: str) -> float:
    start = time.perf_counter()
    for _ in store.reports_by_time(task_id):
        pass
    return time.perf_counter() - start


def _read_ratio(store, path: str, task_id: str, repeats: int = 3) -> tuple[float, float]:
    """(best time of store.reports_by_time, its ratio to the plain query), alternating the two."""
    ours, plain = [], []
    for _ in range(repeats):
        plain.append(_plain_read(path, task_id))
        ours.append(_store_read(store, task_id))
    return min(ours), min(ours) / min(plain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=500_000)
    parser.add_argument("--windows", type=int, default=240)
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args()

    spec = ldp.GRR(domain=tuple("abcdefgh"), epsilon=1.0)
    task, _ = new_task(spec, window="1h", time_precision="1h", min_batch=1, retain="1h")
    texts = [
        r.to_json()
        for r in encode_batch(spec, list("abcdefgh") * 125, np.random.default_rng(1)).reports(spec)
    ]
    with tempfile.TemporaryDirectory() as directory:
        path = str(Path(directory) / "store.db")
        store = open_store(path)
        store.create_task(task)
        for first in range(0, args.reports, 5_000):
            group = [
                StoredReport(os.urandom(16), BASE + (i % args.windows) * HOUR, texts[i % len(texts)])
                for i in range(first, min(first + 5_000, args.reports))
            ]
            store.insert_reports([(task.task_id, group)])
        window_bytes = sum(len(texts[i % len(texts)]) + 16 + 16 for i in range(args.reports)) / args.windows

        read_before, ratio_before = _read_ratio(store, path, task.task_id)
        timed = _TimedLock(store._lock)
        store._lock = timed  # type: ignore[assignment]
        now = BASE + (args.windows // 2 + 1) * HOUR  # the older half of the windows has expired
        start = time.perf_counter()
        result = prune_task(store, dataclasses.replace(task, retain=HOUR), now, batch=args.batch)
        run = time.perf_counter() - start
        holds = sorted(timed.holds)
        read_after, ratio_after = _read_ratio(store, path, task.task_id)
        aggregate = store.window_aggregates(task.task_id)[0]

        # an interrupted deletion: the next window's aggregate kept, its reports still there
        later = now + HOUR
        original = type(store).discard_windows
        type(store).discard_windows = lambda self, task_id, before, batch=10_000: 0  # type: ignore[method-assign]
        try:
            prune_task(store, dataclasses.replace(task, retain=HOUR), later)
        finally:
            type(store).discard_windows = original  # type: ignore[method-assign]
        read_lingering, ratio_lingering = _read_ratio(store, path, task.task_id)
        store.close()

    rows = [
        ("reports, windows", f"{args.reports:,} over {args.windows}"),
        (
            "retention run",
            f"{len(result.kept)} windows, {result.reports_deleted:,} reports deleted in {run:.2f} s",
        ),
        (
            "writer lock held",
            f"{len(holds)} times, longest {holds[-1] * 1e3:.0f} ms, median {holds[len(holds) // 2] * 1e3:.0f} ms",
        ),
        ("full read before the run", f"{read_before:.2f} s, ratio {ratio_before:.3f} to the plain query"),
        ("full read after it", f"{read_after:.2f} s, ratio {ratio_after:.3f}"),
        ("full read with a kept window's rows left", f"{read_lingering:.2f} s, ratio {ratio_lingering:.3f}"),
        (
            "a kept aggregate",
            f"{len(aggregate.state):,} bytes against ~{window_bytes:,.0f} bytes of stored reports",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")


if __name__ == "__main__":
    sys.exit(main())
