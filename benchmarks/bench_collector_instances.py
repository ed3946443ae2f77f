"""Ingestion into one PostgreSQL store by one and by two ``ldp serve`` instances, same load generator, same run.

A throwaway PostgreSQL cluster (``tests/postgres_cluster.py``) holds a fresh
database per row. Each row starts 1 or 2 ``ldp serve --rate-limit 0``
processes on it, and the load generator of ``bench_collector.py`` (raw
HTTP/1.1 keep-alive connections, pre-built requests of GRR reports, domain
16, batches of 100, fresh ids) sends a closed loop of ``--concurrency``
requests in flight in all, split evenly over the instances, for
``--seconds`` or ``--reports``, whichever ends first. Every reply must be a
200 accepting its whole batch, and the store must hold exactly the accepted
reports at the end; after :data:`~ldp.collector.windows.SYNC_SECONDS` every
instance must report that many (one truth).

The rows alternate (1, 2, 1, 2, ...) ``--runs`` times; the table shows each
row's reports/s and the ratio of the two-instance median to the
one-instance median. On the 2-core development machine the server
processes, PostgreSQL and the generator share the same two cores, so the
ratio says what a second instance costs or buys there, not on a larger host.

Usage::

    python benchmarks/bench_collector_instances.py                 # 3 runs of 10 s rows
    python benchmarks/bench_collector_instances.py --runs 1 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from bench_collector import (
    REPO,
    TIME_PRECISION,
    Load,
    Sender,
    Server,
    build_bodies,
    closed_loop,
    spec_of,
)

from ldp.collector.store import open_store
from ldp.collector.tasks import new_task
from ldp.collector.windows import SYNC_SECONDS

BATCH = 100


async def _spread(
    senders: list[Sender], requests: list[list[bytes]], concurrency: int, seconds: float
) -> Load:
    """One closed loop per instance, ``concurrency`` requests in flight in all; their loads summed."""
    share = max(1, concurrency // len(senders))
    started = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        for sender in senders:
            await stack.enter_async_context(sender)
        loads = await asyncio.gather(
            *(closed_loop(sender, part, BATCH, share, seconds) for sender, part in zip(senders, requests))
        )
    total = Load(seconds=time.perf_counter() - started)
    for load in loads:
        load.check(BATCH)
        total.requests += load.requests
        total.accepted += load.accepted
        total.latencies += load.latencies
    return total


def run_row(cluster: str, instances: int, args: argparse.Namespace, work: Path) -> tuple[float, float]:
    """Reports/s with ``instances`` servers on a fresh database, and the p99 latency in ms."""
    from postgres_cluster import create_database, drop_database

    name = f"bench_{uuid.uuid4().hex[:12]}"
    url = create_database(cluster, name)
    try:
        task, token = new_task(spec_of("grr"), window="1h", time_precision=TIME_PRECISION, min_batch=1)
        with open_store(url) as store:
            store.create_task(task)
        now = int(time.time())
        bodies = build_bodies("grr", BATCH, args.reports // BATCH, now - now % TIME_PRECISION)
        with contextlib.ExitStack() as stack:
            servers = [stack.enter_context(Server(url, work / f"{name}-{i}.log")) for i in range(instances)]
            senders = [Sender("raw", server.port, task) for server in servers]
            requests = [[senders[i].prepare(body) for body in bodies[i::instances]] for i in range(instances)]
            load = asyncio.run(_spread(senders, requests, args.concurrency, args.seconds))
            with open_store(url, read_only=True) as store:
                stored = sum(store.count_by_window(task.task_id, task.window).values())
            if stored != load.accepted:
                raise RuntimeError(f"the store holds {stored} reports, the replies accepted {load.accepted}")
            time.sleep(2 * SYNC_SECONDS + 0.5)
            for server in servers:
                reply = httpx.get(
                    f"{server.url}/v1/tasks/{task.task_id}/estimates",
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=60,
                ).json()
                if reply["n"] != stored:
                    raise RuntimeError(f"an instance reports n = {reply['n']}, the store holds {stored}")
        ordered = sorted(load.latencies)
        p99 = 1000 * ordered[max(0, int(0.99 * len(ordered)) - 1)] if ordered else float("nan")
        return load.accepted / load.seconds, p99
    finally:
        drop_database(cluster, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="alternating pairs of rows (default 3)")
    parser.add_argument("--seconds", type=float, default=10.0, help="time limit per row (default 10)")
    parser.add_argument(
        "--reports", type=int, default=400_000, help="reports prepared per row (default 400,000)"
    )
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight in all (default 16)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from postgres_cluster import find_binaries, postgres_cluster

    if find_binaries() is None:
        print("PostgreSQL skipped: no PostgreSQL binaries (initdb, pg_ctl)")
        return
    print(
        f"ldp serve instances on one PostgreSQL (throwaway cluster); GRR d = 16, batches of {BATCH}, "
        f"{args.concurrency} requests in flight in all; {os.cpu_count()} CPUs shared by everything "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    print(f"{'run':>4}{'instances':>11}{'reports/s':>12}{'p99 ms':>9}")
    rates: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="ldp-bench-instances-") as tmp, postgres_cluster() as cluster:
        for run in range(args.runs):
            for instances in (1, 2):
                rate, p99 = run_row(cluster, instances, args, Path(tmp))
                rates[instances].append(rate)
                print(f"{run + 1:>4}{instances:>11}{rate:>12,.0f}{p99:>9.1f}", flush=True)
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    print(f"median: 1 instance {one:,.0f} reports/s, 2 instances {two:,.0f} reports/s, ratio {two / one:.2f}")


if __name__ == "__main__":
    main()
