"""Sizing the collector from measurements: disk per report per mechanism, CPU per report, what 10⁹ a day needs.

The table docs/how-to/sizing.md quotes. Three measurements, then the
arithmetic that turns them into a deployment for ``--per-day`` reports a day:

1. **Bytes on disk per report**, for every registered mechanism
   (:func:`ldp.registry.declarations`, so a new one is a new row) at a typical
   spec: the conformance suite's example spec (``tests/conformance``) with a
   domain of 64 values, ε = 1, δ = 10⁻⁵ and the spec's own defaults for every
   other size (sketches k = m = 1,024, prefix trees at their default length;
   a spec whose privacy is set by its probabilities, RAPPOR, gets the suite's
   16 bits, 2 hashes, 4 cohorts). ``--reports`` reports (the JSON text a
   client's report is stored as, cycled over 1,000 encoded ones, every id
   fresh and random, one window) go into a fresh task through the store's own
   ``insert_reports`` in groups of 1,000:

   - SQLite: a fresh file per mechanism; the growth of the database file
     after a ``wal_checkpoint(TRUNCATE)``, per report (table and its
     ``(task, t)`` index, B-tree pages as random ids fill them);
   - PostgreSQL (schema 6, a throwaway cluster from tests/postgres_cluster.py,
     ``--no-postgres`` skips it): ``pg_total_relation_size`` of the task's
     window partitions (heap, TOAST, primary key and ``(task, t)`` index) per
     report; the growth of the commit log (``commits``, each commit's keys,
     kept ``COMMIT_LOG_SECONDS``) per report; the WAL written per report
     (``pg_wal_lsn_diff``); and the CPU seconds of the whole cluster (the
     postmaster and all its processes) per 1,000 reports.

   Sizes do not depend on the machine's load: one run is the figure.

2. **Server CPU per 1,000 reports on the HTTP path**: ``ldp serve`` on loopback
   under benchmarks/bench_collector.py's load generator (its ``run_row``: GRR,
   batches of 100 envelopes, ``--concurrency`` requests in flight), against
   SQLite and PostgreSQL, with the cluster's CPU in the PostgreSQL row. CPU per
   report is steady on a loaded machine where rates are not; the rates are
   printed beside the load average.

3. **The arithmetic** (extrapolated, not measured): ``--per-day`` reports a day
   is an average rate; ``--peak`` times it is what the instances must absorb.
   One ``ldp serve`` is one Python process that does its work on about one
   core, so its ceiling is 1 / (CPU seconds per report); instances are sized to
   run at ``--utilization`` of that at peak. Disk per day is bytes per report ×
   reports a day, and with ``--retain`` N days the steady state holds N + 1
   days of partitions (retention drops a day's partition once all its windows
   are older than N days).

Usage::

    python benchmarks/bench_sizing.py                  # ~50,000 reports per mechanism and store, a few minutes
    python benchmarks/bench_sizing.py --quick          # 5,000 reports per mechanism, small HTTP rows
    python benchmarks/bench_sizing.py --reports 200000 --retain 90 --peak 3
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from ldp.aggregator.state import dump_state
from ldp.client import encode_batch
from ldp.collector.accumulate import accumulate_stored
from ldp.collector.envelopes import report_text
from ldp.collector.store import Insert, StoredReport, open_store
from ldp.collector.tasks import new_task
from ldp.registry import declarations

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "conformance")]

from mechanism_examples import example_spec, example_values  # noqa: E402 (tests/ on the path first)

#: The typical spec's required values (the conformance suite's, with a domain of 64 values).
TYPICAL = {"domain": tuple(f"v{i}" for i in range(64)), "epsilon": 1.0, "delta": 1e-5}
POOL = 1_000  # distinct encoded reports per mechanism, cycled (every stored row gets its own fresh id)
GROUP = 1_000  # reports per insert_reports call (one transaction)
WINDOW = 3_600
SECONDS_PER_DAY = 86_400


@dataclass
class Sizes:
    """One mechanism's measured sizes; NaN where the store was not run."""

    mechanism: str
    report_json: float  # mean bytes of the stored JSON text
    aggregate: float  # bytes a pruned window keeps (its accumulator's state), NaN when it has none
    sqlite: float = math.nan  # bytes on disk per report
    postgres: float = math.nan  # partitions (heap + TOAST + indexes) per report
    pg_indexes: float = math.nan  # of which the partitions' indexes
    commit_log: float = math.nan  # PostgreSQL commit log per report (kept COMMIT_LOG_SECONDS)
    wal: float = math.nan  # PostgreSQL WAL written per report
    pg_cpu: float = math.nan  # PostgreSQL cluster CPU seconds per 1,000 reports (direct inserts)


def typical_pools(only: list[str] | None = None) -> list[tuple[str, Any, list[str]]]:
    """(mechanism, typical spec, POOL stored report texts) of every registered mechanism (or those ``only``)."""
    out = []
    rng = np.random.default_rng(29)
    for decl in declarations():
        if only and decl.name not in only:
            continue
        spec = example_spec(decl, TYPICAL, {})
        batch = encode_batch(spec, example_values(spec, POOL), rng)
        out.append((decl.name, spec, [report_text(r.to_dict()) for r in batch.reports(spec)]))
    return out


def aggregate_bytes(spec: Any, pool: list[str]) -> float:
    """Bytes of the aggregate the retention keeps of a window of ``pool``'s reports (NaN: none can be kept)."""
    accumulator = accumulate_stored(spec, [pool])
    if not type(accumulator).restorable():
        return math.nan
    return float(len(dump_state(accumulator)))


def insert(url: str, spec: Any, pool: list[str], count: int, halfway: Callable[[str], None]) -> None:
    """Store ``count`` reports of ``pool`` (fresh random ids, one window) into a new task of ``spec`` at
    ``url``, calling ``halfway(task id)`` once the first ``count // 2`` are stored."""
    task, _token = new_task(spec, window=WINDOW, time_precision=60, min_batch=1)
    t = int(time.time()) // WINDOW * WINDOW
    with open_store(url) as store:
        store.create_task(task)
        for first, last in ((0, count // 2), (count // 2, count)):
            if first:
                halfway(task.task_id)
            for low in range(first, last, GROUP):
                ids = os.urandom(16 * GROUP)
                group = [
                    StoredReport(ids[16 * i : 16 * i + 16], t, pool[(low + i) % len(pool)])
                    for i in range(min(GROUP, last - low))
                ]
                [flags] = store.insert_reports([(task.task_id, group)])
                if not all(flag is Insert.STORED for flag in flags):
                    raise RuntimeError("a report was not stored")


def sqlite_bytes(work: Path, name: str, spec: Any, pool: list[str], count: int) -> float:
    """Bytes per report the database file of a fresh SQLite store grows by over the second half of ``count``."""
    path = work / f"{name}.db"

    def size() -> int:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                raise RuntimeError("the WAL checkpoint was blocked")
        return path.stat().st_size

    sizes: list[int] = []
    insert(str(path), spec, pool, count, lambda task_id: sizes.append(size()))
    grown = size() - sizes[0]
    for suffix in ("", "-wal", "-shm", ".serve-lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return grown / (count - count // 2)


class Cluster:
    """The PostgreSQL cluster behind ``url``: sizes, WAL position and the CPU of all its processes."""

    def __init__(self, url: str) -> None:
        import psycopg

        with open_store(url):  # the schema, made on the first open
            pass
        self.connection = psycopg.connect(url, autocommit=True)
        data = self.value("SELECT current_setting('data_directory')")
        self.postmaster = psutil.Process(int(Path(data, "postmaster.pid").read_text().split()[0]))

    def value(self, query: str, *params: Any) -> Any:
        return self.connection.execute(query, params).fetchone()[0]

    def _sample(self) -> dict[int, float]:
        """CPU seconds (user + system) of the postmaster and each process it runs now, by pid."""
        out = {}
        for process in [self.postmaster, *self.postmaster.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                out[process.pid] = times.user + times.system
        return out

    @contextlib.contextmanager
    def cpu(self) -> Iterator[list[float]]:
        """Yields a list that holds, after the block, the cluster's CPU seconds during it.

        A backend takes its seconds with it when it exits (a store's
        connections close with it), so a thread samples every process every
        0.1 s and each one counts with its last sample: at most 0.1 s of an
        exiting backend is missed."""
        first = self._sample()
        last = dict(first)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                last.update(self._sample())

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        out: list[float] = []
        try:
            yield out
        finally:
            done.set()
            thread.join()
            last.update(self._sample())
            out.append(sum(seconds - first.get(pid, 0.0) for pid, seconds in last.items()))

    def wal(self) -> int:
        return int(self.value("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"))

    def commit_log(self) -> int:
        return int(self.value("SELECT pg_total_relation_size('commits')"))

    def partitions(self, task_id: str) -> tuple[int, int]:
        """Bytes of the task's partitions: in all (heap, TOAST, indexes), and of their indexes."""
        seq = self.value("SELECT seq FROM tasks WHERE task_id = %s", task_id)
        total, indexes = self.connection.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0), coalesce(sum(pg_indexes_size(c.oid)), 0) "
            "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'reports'::regclass AND c.relname LIKE %s",
            (f"reports\\_{seq}\\_%",),
        ).fetchone()
        return int(total), int(indexes)


def postgres_sizes(cluster: Cluster, url: str, sizes: Sizes, spec: Any, pool: list[str], count: int) -> None:
    """Fill ``sizes``' PostgreSQL columns: ``count`` reports into a new task of the store at ``url``."""
    half: list[tuple[int, int, int, int]] = []  # partitions, their indexes, commit log, WAL position
    task: list[str] = []

    def halfway(task_id: str) -> None:
        task.append(task_id)
        half.append((*cluster.partitions(task_id), cluster.commit_log(), cluster.wal()))

    with cluster.cpu() as cpu:
        insert(url, spec, pool, count, halfway)
    second = count - count // 2
    end = (*cluster.partitions(task[0]), cluster.commit_log(), cluster.wal())
    total, indexes, log, wal = ((b - a) / second for a, b in zip(half[0], end, strict=True))
    sizes.postgres, sizes.pg_indexes, sizes.commit_log, sizes.wal = total, indexes, log, wal
    sizes.pg_cpu = 1000 * cpu[0] / count


@dataclass
class Http:
    """One bench_collector row: GRR at batches of 100 through ``ldp serve``."""

    store: str
    rate: float  # accepted reports/s
    accepted: int
    server_cpu: float  # ldp serve CPU seconds per 1,000 reports
    pg_cpu: float = math.nan  # the PostgreSQL cluster's CPU seconds per 1,000 reports in the same row


def http_row(
    store: str, url: Callable[[str], str], work: Path, count: int, seconds: float, concurrency: int
) -> Http:
    import bench_collector

    args = argparse.Namespace(client="raw", concurrency=concurrency)
    row = bench_collector.run_row(args, url, work, "grr", 100, count, seconds)
    return Http(store, row.rate, row.load.accepted, 1000 * row.server_cpu / row.load.accepted)


@contextlib.contextmanager
def postgres(enabled: bool) -> Iterator[str | None]:
    """A throwaway cluster's URL, or None (and why not, printed)."""
    if not enabled:
        yield None
        return
    from postgres_cluster import find_binaries, postgres_cluster

    if find_binaries() is None:
        print("PostgreSQL skipped: no PostgreSQL binaries (initdb, pg_ctl)")
        yield None
        return
    with postgres_cluster("ldp_sizing") as url:
        yield url


def fmt(x: float, spec: str = ",.0f") -> str:
    return "—" if math.isnan(x) else format(x, spec)


def human(n: float) -> str:
    """Bytes as GB or TB (decimal)."""
    if math.isnan(n):
        return "—"
    return f"{n / 1e12:,.1f} TB" if n >= 1e12 else f"{n / 1e9:,.0f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 reports per mechanism, small HTTP rows")
    parser.add_argument("--reports", type=int, help="reports per mechanism and store (default 50,000)")
    parser.add_argument("--http-reports", type=int, help="reports per HTTP row (default 200,000)")
    parser.add_argument("--seconds", type=float, default=20.0, help="time limit per HTTP row")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight on the HTTP rows")
    parser.add_argument("--mechanism", action="append", help="only this mechanism (repeatable; default all)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--no-http", action="store_true", help="sizes only")
    parser.add_argument("--no-sizes", action="store_true", help="the HTTP rows only")
    parser.add_argument("--per-day", type=float, default=1e9, help="reports a day to size for")
    parser.add_argument("--peak", type=float, default=3.0, help="peak rate over the day's average")
    parser.add_argument("--utilization", type=float, default=0.7, help="an instance's CPU share at peak")
    parser.add_argument(
        "--retain", type=int, default=90, help="days of raw reports kept (--retain of a task)"
    )
    args = parser.parse_args()
    count = args.reports or (5_000 if args.quick else 50_000)
    http_count = args.http_reports or (20_000 if args.quick else 200_000)
    seconds = 4.0 if args.quick else args.seconds

    started = datetime.datetime.now(datetime.UTC)
    loads = [os.getloadavg()[0]]
    print(
        f"ldp collector sizing, {started:%Y-%m-%d %H:%M} UTC; {psutil.cpu_count()} CPUs "
        f"(load average {loads[0]:.1f}); Python {sys.version.split()[0]}"
    )
    print(
        f"typical spec: domain of {len(TYPICAL['domain'])} values, ε = {TYPICAL['epsilon']:g}, "
        f"δ = {TYPICAL['delta']:g}, other sizes at the spec's defaults; {count:,} reports per mechanism and store"
    )
    pools = [] if args.no_sizes else typical_pools(args.mechanism)
    rows = [
        Sizes(name, sum(map(len, pool)) / len(pool), aggregate_bytes(spec, pool))
        for name, spec, pool in pools
    ]
    http: list[Http] = []
    with tempfile.TemporaryDirectory(prefix="ldp-bench-sizing-") as tmp, postgres(not args.no_postgres) as pg:
        work = Path(tmp)
        cluster = Cluster(pg) if pg else None
        for sizes, (name, spec, pool) in zip(rows, pools, strict=True):
            sizes.sqlite = sqlite_bytes(work, name, spec, pool, count)
            if cluster is not None and pg is not None:
                postgres_sizes(cluster, pg, sizes, spec, pool, count)
            print(f"  {name}: SQLite {sizes.sqlite:,.0f} B, PostgreSQL {fmt(sizes.postgres)} B", flush=True)
        loads.append(os.getloadavg()[0])
        if not args.no_http:
            http.append(
                http_row(
                    "sqlite",
                    lambda label: str(work / f"{label}.db"),
                    work,
                    http_count,
                    seconds,
                    args.concurrency,
                )
            )
            if cluster is not None and pg is not None:
                from postgres_cluster import create_database

                url = create_database(pg, "ldp_http")  # a server loads every task's windows at start: none
                with cluster.cpu() as cpu:
                    row = http_row("postgres", lambda label: url, work, http_count, seconds, args.concurrency)
                row.pg_cpu = 1000 * cpu[0] / row.accepted
                http.append(row)
            loads.append(os.getloadavg()[0])
        if cluster is not None:
            cluster.connection.close()
    report(args, count, rows, http, started, loads)


def report(
    args: argparse.Namespace,
    count: int,
    rows: list[Sizes],
    http: list[Http],
    started: datetime.datetime,
    loads: list[float],
) -> None:
    """Print the tables docs/how-to/sizing.md quotes."""
    per_day = args.per_day
    days = args.retain + 1
    if rows:
        print(
            f"\n## Bytes per report ({count:,} reports per mechanism and store; sizes over the second "
            f"{count - count // 2:,}; measured)\n"
        )
        print(
            "| mechanism | report JSON | SQLite | PostgreSQL | of which indexes | PG commit log | PG WAL written "
            "| PG CPU s/1k | kept aggregate per window "
            f"| PostgreSQL per day at {per_day:.0e} | with --retain {args.retain} ({days} days) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in rows:
            print(
                f"| {s.mechanism} | {s.report_json:,.0f} | {s.sqlite:,.0f} | {fmt(s.postgres)} | {fmt(s.pg_indexes)} "
                f"| {fmt(s.commit_log)} "
                f"| {fmt(s.wal)} | {fmt(s.pg_cpu, '.3f')} | {fmt(s.aggregate)} | {human(s.postgres * per_day)} | {human(s.postgres * per_day * days)} |"
            )
    if not http:
        return
    average = per_day / SECONDS_PER_DAY
    peak = args.peak * average
    print(
        f"\n## The HTTP path (GRR, batches of 100, {args.concurrency} requests in flight; measured, "
        f"load average {max(loads):.1f} at most during the run)\n"
    )
    print(
        "| store | reports/s measured | ldp serve CPU s/1k | one instance's ceiling (1 core) "
        f"| instances at {args.peak:g}× peak ({peak:,.0f}/s) at {args.utilization:.0%} CPU | PostgreSQL CPU s/1k | PostgreSQL cores at peak |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for h in http:
        ceiling = 1000 / h.server_cpu
        instances = math.ceil(peak / (ceiling * args.utilization))
        pg_cores = "—" if math.isnan(h.pg_cpu) else f"{peak * h.pg_cpu / 1000:.1f}"
        print(
            f"| {h.store} | {h.rate:,.0f} | {h.server_cpu:.4f} | {ceiling:,.0f}/s | {instances} "
            f"| {fmt(h.pg_cpu, '.4f')} | {pg_cores} |"
        )
    print(
        f"\n{per_day:.0e} reports a day = {average:,.0f}/s on average, {peak:,.0f}/s at a {args.peak:g}× peak "
        f"(extrapolated from the CPU per report above; SQLite is one writer, one instance: "
        f"the instance counts apply to PostgreSQL). Measured {started:%Y-%m-%d}, load average "
        f"{', '.join(f'{x:.1f}' for x in loads)} (start, after the sizes, after the HTTP rows)."
    )


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


if __name__ == "__main__":
    # SIGTERM (and SIGINT, ignored by a job started in the background) raise KeyboardInterrupt, so the
    # ``with`` blocks stop a running server and the throwaway cluster on the way out
    signal.signal(signal.SIGINT, _interrupted)
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        main()
    except KeyboardInterrupt as exc:
        sys.exit(f"interrupted ({exc}); the servers and the cluster were stopped")
