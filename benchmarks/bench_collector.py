"""Collector ingestion benchmark: ``ldp serve`` on loopback under a bounded load generator.

For each row a fresh ``ldp serve --rate-limit 0`` process (a fresh SQLite
file in a temporary directory unless ``--store`` names one; a fresh task
either way) receives uploads of GRR reports (domain 16, ε = 1) in batches
of 1, 100 and 1,000 envelopes per request, plus RAPPOR (128 bits) and OUE
(d = 64) at batches of 100. Reports, envelopes (fresh CSPRNG ids) and the
whole HTTP requests are encoded BEFORE the clock starts; the generator then
only writes bytes and reads replies.

The generator is one asyncio process speaking HTTP/1.1 over keep-alive
connections with pre-built request bytes (``--client raw``, the default:
the least client CPU, so the server gets most of the 2 shared cores) or
``httpx.AsyncClient`` (``--client httpx``). Closed loop: ``--concurrency``
connections each send their next request as soon as the previous reply
arrived, for a fixed number of requests or ``--seconds``, whichever ends
first. (On the 2-core development machine, GRR at batches of 100: 16
connections gave the most reports/s — 4: 19,200, 8: 20,800, 16: 23,000 —
and httpx cost ten times the generator CPU of the raw client and 10-25 %
of the rate. Since envelopes are checked in one pass, more in flight make
larger group commits: 64 gave 0.77-0.86 of the store's own insert rate
where 16 gave 0.35-0.38, docs/performance.md#collector-cpu.) Columns:

* reports/s: accepted reports (summed from the replies' ``accepted``) over
  the wall time of the timed phase; every reply must be 200 with
  ``accepted`` = its batch size, nothing replayed or rejected, and the
  store must hold exactly that many reports at the end;
* p50/p99 ms: request latency (write of the request to the end of the reply);
* srv CPU s/1k: the server process's CPU seconds (user + system, all its
  threads; psutil) per 1,000 accepted reports; loop CPU the part of it spent
  by the event loop's thread (HTTP, parsing and checking envelopes; the rest
  is the group-commit writer's: the store's inserts and commits, counting);
  gen CPU the same for this process (the load generator shares the cores).

Then, for GRR at batches of 100, an open-loop paced sender at HALF the
measured maximum rate (requests released on a fixed schedule, latency
measured from each request's scheduled time so a stalled server is not
hidden) gives p50/p99 at that rate. Targets (collector issue): ≥ 20,000
reports/s into SQLite with batches of 100, and p99 ≤ 100 ms at half that rate.

Same-run references without HTTP, in this process, on the same reports: the
store's own ``insert_reports`` of as many reports as one batched row sends
(``--reports``) into a new task (a fresh file for SQLite) in groups of 1,000
(one transaction each; SQLite ``synchronous=FULL``; report ids are random, so
the rate falls as the table grows: compare rows of equal size), measured
before and again after each store's rows (the ``÷ insert`` column divides
by the first; the summary by their mean, as the machine's other work moves
both), with its CPU per 1,000 reports (this process's; a PostgreSQL server's
own work is not in it), and the server's upload check (``check_upload_body``: the body decoded into
typed records and checked as a whole) on bodies of 100 envelopes —
so the HTTP and framework cost shows as a ratio. Target (collector issue):
the HTTP path at GRR batches of 100 ≥ 0.8 × the store's own insert rate.

``--postgres`` also runs the rows against a throwaway PostgreSQL cluster
from ``tests/postgres_cluster.py`` when that helper is importable (else it
says why it is skipped).

Usage::

    python benchmarks/bench_collector.py            # ≤ 20 s per row
    python benchmarks/bench_collector.py --quick    # < 60 s in all
    python benchmarks/bench_collector.py --runs 3   # and the median of 3 runs
    python benchmarks/bench_collector.py --store postgresql://ldp@localhost/ldp
    python benchmarks/bench_collector.py --quick --mechanism ss piecewise   # and rows of these at batches of 100
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import functools
import importlib
import importlib.util
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import numpy as np
import orjson
import psutil

import ldp
from ldp.client import encode_batch
from ldp.collector.store import Insert, StoredReport, open_store
from ldp.collector.tasks import Task, new_task
from ldp.collector.upload_batch import check_upload_body

HOST = "127.0.0.1"
TARGET_RATE = 20_000.0  # reports/s into SQLite, batches of 100
TARGET_P99_MS = 100.0  # at half the maximum rate
TARGET_RATIO = 0.8  # GRR batches of 100 over the store's own insert rate, same run
TIME_PRECISION = 60
POOL = 20_000  # distinct encoded reports per spec; each envelope gets its own fresh id
REPO = Path(__file__).resolve().parent.parent


def spec_of(name: str) -> ldp.Spec:
    """The spec of a row: GRR, OUE and RAPPOR as the module says; any other registered mechanism (``--mechanism``)
    its typical spec, as ``benchmarks/bench_sizing.py`` derives it (a domain of 64 values)."""
    if name == "grr":
        return ldp.GRR(domain=[f"v{i}" for i in range(16)], epsilon=1.0)
    if name == "oue":
        return ldp.OUE(domain=[f"v{i}" for i in range(64)], epsilon=1.0)
    if name == "rappor":
        return ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    return _typical_spec(name)


@functools.cache
def _typical_spec(name: str) -> Any:
    from ldp.registry import declarations

    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "conformance")]
    from mechanism_examples import example_spec

    typical = {"domain": tuple(f"v{i}" for i in range(64)), "epsilon": 1.0, "delta": 1e-5}
    for decl in declarations():
        if decl.name == name:
            return example_spec(decl, typical, {})
    raise ValueError(f"no registered mechanism {name!r}")


_pools: dict[str, list[dict[str, Any]]] = {}


def report_pool(name: str) -> list[dict[str, Any]]:
    """POOL encoded reports of spec ``name`` (Zipf values), as the dicts a client sends."""
    if name not in _pools:
        spec = spec_of(name)
        rng = np.random.default_rng(7)
        if name in ("grr", "oue", "rappor"):
            values = (rng.zipf(1.3, POOL) % 16 if name == "grr" else rng.zipf(1.3, POOL) % 64).tolist()
            inputs: list[Any] = [f"v{v}" for v in values]
        else:
            from mechanism_examples import example_values  # (tests/ on the path: spec_of put it there)

            inputs = example_values(spec, POOL)
        _pools[name] = [r.to_dict() for r in encode_batch(spec, inputs, rng).reports(spec)]
    return _pools[name]


def fresh_ids(n: int) -> list[str]:
    raw = os.urandom(16 * n)
    return [
        base64.urlsafe_b64encode(raw[i : i + 16]).rstrip(b"=").decode("ascii") for i in range(0, 16 * n, 16)
    ]


def build_bodies(name: str, batch: int, requests: int, t: int) -> list[bytes]:
    """``requests`` JSON upload bodies of ``batch`` envelopes each, every id fresh."""
    pool = report_pool(name)
    ids = fresh_ids(batch * requests)
    bodies = []
    for r in range(requests):
        base = r * batch
        bodies.append(
            orjson.dumps(
                [{"id": ids[base + i], "t": t, "report": pool[(base + i) % POOL]} for i in range(batch)]
            )
        )
    return bodies


# -- the server ----------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class Server:
    """One ``ldp serve --rate-limit 0`` on 127.0.0.1 and a free port; stop() always runs via ``with``."""

    def __init__(self, store: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.log = log
        self._log_file = log.open("wb")
        command = [sys.executable, "-m", "ldp", "serve", "--store", store, "--host", HOST]
        command += ["--port", str(self.port), "--rate-limit", "0"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log_file)
        self.ps = psutil.Process(self.process.pid)

    def __enter__(self) -> Self:
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ldp serve exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), timeout=1) as s:
                s.sendall(f"GET /healthz HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return
            time.sleep(0.05)
        raise RuntimeError("ldp serve did not answer /healthz within 30 s")

    def cpu_seconds(self) -> float:
        times = self.ps.cpu_times()
        return float(times.user + times.system)

    def loop_cpu_seconds(self) -> float:
        """CPU seconds of the server's main thread (the event loop's)."""
        for thread in self.ps.threads():
            if thread.id == self.process.pid:
                return float(thread.user_time + thread.system_time)
        return math.nan

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log_file.close()


# -- the load generator --------------------------------------------------------
@dataclass
class Load:
    """What one timed phase did."""

    seconds: float = 0.0
    requests: int = 0
    accepted: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def check(self, batch: int) -> None:
        if self.errors:
            raise RuntimeError(f"{len(self.errors)} bad replies, first: {self.errors[0]}")
        if self.accepted != self.requests * batch:
            raise RuntimeError(f"accepted {self.accepted} of {self.requests * batch} reports")


def _check_reply(load: Load, status: int, body: bytes, batch: int, latency: float) -> None:
    load.latencies.append(latency)
    load.requests += 1
    if status != 200:
        load.errors.append(f"HTTP {status}: {body[:300]!r}")
        return
    reply = orjson.loads(body)
    load.accepted += reply["accepted"]
    if reply["accepted"] != batch or reply["replayed"] or reply["rejected"]:
        load.errors.append(f"reply {reply!r}"[:300])


class RawConnection:
    """One keep-alive HTTP/1.1 connection sending pre-built requests."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> RawConnection:
        reader, writer = await asyncio.open_connection(HOST, port)
        return cls(reader, writer)

    async def send(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


class Sender:
    """Sends request bodies of one task over ``--client raw`` or ``--client httpx``."""

    def __init__(self, kind: str, port: int, task: Task) -> None:
        self.kind, self.port = kind, port
        self.path = f"/v1/tasks/{task.task_id}/reports"
        self.url = f"http://{HOST}:{port}{self.path}"
        self._httpx: Any = None

    def prepare(self, body: bytes) -> bytes:
        if self.kind == "httpx":
            return body
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {HOST}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("ascii") + body

    async def __aenter__(self) -> Self:
        if self.kind == "httpx":
            import httpx

            limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
            self._httpx = httpx.AsyncClient(limits=limits, timeout=60)
        self._idle: list[RawConnection] = []
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._httpx is not None:
            await self._httpx.aclose()
        for connection in self._idle:
            connection.close()

    async def send(self, request: bytes) -> tuple[int, bytes]:
        if self.kind == "httpx":
            reply = await self._httpx.post(
                self.url, content=request, headers={"Content-Type": "application/json"}
            )
            return reply.status_code, reply.content
        reused = bool(self._idle)
        connection = self._idle.pop() if reused else await RawConnection.open(self.port)
        try:
            result = await connection.send(request)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            connection.close()
            if not reused or (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                raise
            # The server closed this keep-alive connection while it sat idle (ldp serve's keep-alive
            # timeout, 5 s) before reading the request: send it again on a new connection, as HTTP
            # clients do. A reply cut off after its first byte is not retried (raised above).
            connection = await RawConnection.open(self.port)
            try:
                result = await connection.send(request)
            except BaseException:
                connection.close()
                raise
        except BaseException:
            connection.close()
            raise
        self._idle.append(connection)
        return result


async def closed_loop(
    sender: Sender, requests: list[bytes], batch: int, concurrency: int, limit: float
) -> Load:
    """``concurrency`` workers, each sending its next request when its reply is in, until done or ``limit`` s."""
    load = Load()
    queue = iter(requests)
    start = time.perf_counter()
    deadline = start + limit

    async def worker() -> None:
        for request in queue:
            if time.perf_counter() > deadline:
                return
            sent = time.perf_counter()
            status, body = await sender.send(request)
            _check_reply(load, status, body, batch, time.perf_counter() - sent)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    load.seconds = time.perf_counter() - start
    return load


async def open_loop(sender: Sender, requests: list[bytes], batch: int, rate: float) -> Load:
    """Request i released at ``start + i / rate`` whatever the replies do; latency from that time."""
    load = Load()
    start = time.perf_counter() + 0.05
    tasks: list[asyncio.Task[None]] = []

    async def one(request: bytes, scheduled: float) -> None:
        try:
            status, body = await sender.send(request)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:  # a failed request is a bad reply
            load.requests += 1
            load.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            return
        _check_reply(load, status, body, batch, time.perf_counter() - scheduled)

    for i, request in enumerate(requests):
        scheduled = start + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(request, scheduled)))
    # Every task is awaited here, finished or not, so none is left with an exception nobody retrieved.
    await asyncio.gather(*tasks)
    load.seconds = time.perf_counter() - start
    return load


# -- rows ----------------------------------------------------------------------
@dataclass
class Row:
    label: str
    mechanism: str
    batch: int
    mode: str  # "max" (closed loop) or "paced at R/s"
    load: Load
    server_cpu: float
    loop_cpu: float  # the server's event-loop thread, part of server_cpu
    client_cpu: float
    reference: float = math.nan  # the store's own insert rate measured just before this store's rows

    @property
    def rate(self) -> float:
        return self.load.accepted / self.load.seconds

    @property
    def ratio(self) -> float:
        """reports/s over the store's own insert rate (same run)."""
        return self.rate / self.reference

    def percentile(self, q: float) -> float:
        ordered = sorted(self.load.latencies)
        return 1000 * ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def run_row(
    args: argparse.Namespace,
    store_url: Callable[[str], str],
    work: Path,
    mechanism: str,
    batch: int,
    count: int,
    seconds: float,
    paced: float | None = None,
) -> Row:
    """One fresh server and task; ``count`` reports sent (closed loop, or open loop at ``paced`` reports/s)."""
    label = f"{mechanism}-b{batch}" + ("-paced" if paced else "")
    url = store_url(label)
    task, _token = new_task(spec_of(mechanism), window="1h", time_precision=TIME_PRECISION, min_batch=1)
    with open_store(url) as store:
        store.create_task(task)
    now = int(time.time())
    bodies = build_bodies(mechanism, batch, max(1, count // batch), now - now % TIME_PRECISION)
    with Server(url, work / f"{label}.log") as server:
        sender = Sender(args.client, server.port, task)
        requests = [sender.prepare(body) for body in bodies]
        del bodies

        async def go() -> tuple[Load, float, float]:
            async with sender:
                cpu0, loop0, gen0 = server.cpu_seconds(), server.loop_cpu_seconds(), time.process_time()
                if paced:
                    load = await open_loop(sender, requests, batch, paced / batch)
                else:
                    load = await closed_loop(sender, requests, batch, args.concurrency, seconds)
                cpu, loop = server.cpu_seconds() - cpu0, server.loop_cpu_seconds() - loop0
                return load, cpu, loop, time.process_time() - gen0

        load, server_cpu, loop_cpu, client_cpu = asyncio.run(go())
    load.check(batch)
    with open_store(url) as store:
        stored = sum(store.count_by_window(task.task_id, task.window).values())
    if stored != load.accepted:
        raise RuntimeError(f"{label}: the store holds {stored} reports, the replies accepted {load.accepted}")
    mode = f"{paced:,.0f}/s" if paced else f"max c={args.concurrency}"
    return Row(label, mechanism, batch, mode, load, server_cpu, loop_cpu, client_cpu)


def insert_rate(url: str, count: int) -> tuple[float, float]:
    """Reports/s of the store's own ``insert_reports``, and this process's CPU seconds per 1,000 reports: ``count``
    GRR reports (fresh ids) into a new task at ``url`` in groups of 1,000, one transaction each (no HTTP)."""
    pool = report_pool("grr")
    task, _token = new_task(spec_of("grr"), window="1h", time_precision=TIME_PRECISION, min_batch=1)
    now = int(time.time())
    t = now - now % TIME_PRECISION
    raw = os.urandom(16 * count)
    json_texts = [ldp.Report.from_dict(r).to_json() for r in pool]
    stored = [StoredReport(raw[16 * i : 16 * i + 16], t, json_texts[i % POOL]) for i in range(count)]
    with open_store(url) as store:
        store.create_task(task)
        start, cpu = time.perf_counter(), time.process_time()
        for begin in range(0, count, 1_000):
            flags = store.insert_reports([(task.task_id, stored[begin : begin + 1_000])])
            assert all(flag is Insert.STORED for flag in flags[0])
        return count / (time.perf_counter() - start), (time.process_time() - cpu) / count * 1_000


def check_rate(checks: int) -> float:
    """Reports/s of check_upload_body (the server's decode and check of an upload body) on ``checks`` GRR reports
    in bodies of 100."""
    task, _token = new_task(spec_of("grr"), window="1h", time_precision=TIME_PRECISION, min_batch=1)
    now = int(time.time())
    bodies = build_bodies("grr", 100, checks // 100, now - now % TIME_PRECISION)
    start = time.perf_counter()
    for body in bodies:
        checked = check_upload_body(task, body, "application/json", time.time())
        assert checked is not None and len(checked.accepted) == 100
    return checks / (time.perf_counter() - start)


def postgres_cluster() -> tuple[AbstractContextManager[str] | None, str]:
    """A throwaway PostgreSQL cluster (tests/postgres_cluster.py) as a context manager yielding its URL, or None and why not."""
    sys.path.insert(0, str(REPO / "tests"))
    from postgres_cluster import find_binaries
    from postgres_cluster import postgres_cluster as cluster

    if find_binaries() is None:
        return None, "no PostgreSQL binaries (initdb, pg_ctl)"
    return cluster(), ""


# -- output --------------------------------------------------------------------
HEADER = (
    f"{'store':<9}{'row':<12}{'batch':>6}  {'load':<13}{'requests':>9}{'reports':>9}{'seconds':>8}"
    f"{'reports/s':>11}{'÷ insert':>9}{'p50 ms':>8}{'p99 ms':>8}{'srv CPU s/1k':>13}{'loop CPU s/1k':>14}"
    f"{'gen CPU s/1k':>13}"
)


def print_row(store: str, row: Row) -> None:
    k = row.load.accepted / 1000
    print(
        f"{store:<9}{row.mechanism:<12}{row.batch:>6}  {row.mode:<13}{row.load.requests:>9,}{row.load.accepted:>9,}"
        f"{row.load.seconds:>8.2f}{row.rate:>11,.0f}{row.ratio:>9.2f}{row.percentile(0.5):>8.1f}{row.percentile(0.99):>8.1f}"
        f"{row.server_cpu / k:>13.4f}{row.loop_cpu / k:>14.4f}{row.client_cpu / k:>13.4f}",
        flush=True,
    )


@dataclass
class StoreRun:
    """One store's rows in one run, between two measures of the store's own insert rate."""

    rows: list[Row]
    before: float
    after: float
    cpu: float  # the store's own insert_reports: CPU seconds per 1,000 reports (mean of before and after)

    @property
    def reference(self) -> float:
        """The store's own insert rate: the mean of the measures before and after the rows."""
        return (self.before + self.after) / 2


def run_store(args: argparse.Namespace, name: str, store_url: Callable[[str], str], work: Path) -> StoreRun:
    """Every row against one kind of store, between two insert references; prints as it goes."""
    before, cpu_before = insert_rate(store_url(f"reference-{time.time_ns()}"), args.reports)
    print(
        f"{name}: the store's own insert_reports before the rows: {before:,.0f} reports/s, "
        f"CPU {cpu_before:.4f} s/1k",
        flush=True,
    )
    rows: list[Row] = []
    plan = [("grr", 1), ("grr", 100), ("grr", 1_000), ("rappor", 100), ("oue", 100)]
    plan += [(mechanism, 100) for mechanism in args.mechanism]
    for mechanism, batch in plan:
        count = args.reports if batch > 1 else args.reports_single
        row = run_row(args, store_url, work, mechanism, batch, count, args.seconds)
        row.reference = before
        rows.append(row)
        print_row(name, row)
    half = _grr_100(rows).rate / 2
    count = min(args.reports, int(half * args.paced_seconds))
    paced = run_row(args, store_url, work, "grr", 100, max(100, count), args.paced_seconds, paced=half)
    paced.reference = before
    rows.append(paced)
    print_row(name, paced)
    after, cpu_after = insert_rate(store_url(f"reference-{time.time_ns()}"), args.reports)
    print(
        f"{name}: the store's own insert_reports after the rows: {after:,.0f} reports/s, "
        f"CPU {cpu_after:.4f} s/1k",
        flush=True,
    )
    return StoreRun(rows, before, after, (cpu_before + cpu_after) / 2)


@contextlib.contextmanager
def temporary_sqlite(work: Path) -> Iterator[Callable[[str], str]]:
    yield lambda label: str(work / f"{label}.db")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts and 4 s rows (< 60 s in all)")
    parser.add_argument("--runs", type=int, default=1, help="repeat everything; also print the median row")
    parser.add_argument("--store", help="a store URL for every row (default: a fresh SQLite file per row)")
    parser.add_argument("--postgres", action="store_true", help="also run against tests/postgres_cluster.py")
    parser.add_argument(
        "--client", choices=("raw", "httpx"), default="raw", help="the generator's HTTP client"
    )
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight (closed loop)")
    parser.add_argument("--seconds", type=float, help="time limit per row (default 20, --quick 4)")
    parser.add_argument("--reports", type=int, help="reports per row at batches > 1 (default 400,000)")
    parser.add_argument("--reports-single", type=int, help="reports (= requests) at batch 1 (default 10,000)")
    parser.add_argument(
        "--mechanism",
        nargs="*",
        default=[],
        help="also rows at batches of 100 of these registered mechanisms (their typical specs, domain 64)",
    )
    args = parser.parse_args()
    # Ctrl-C and SIGTERM raise KeyboardInterrupt wherever the generator is (asyncio's own SIGINT
    # handling only cancels the running task, which a finishing row can swallow), so every
    # ``with Server`` block stops its server on the way out
    signal.signal(signal.SIGINT, _interrupted)
    signal.signal(signal.SIGTERM, _interrupted)
    quick = args.quick
    args.seconds = args.seconds or (4.0 if quick else 20.0)
    args.paced_seconds = min(args.seconds, 4.0 if quick else 10.0)
    args.reports = args.reports or (60_000 if quick else 400_000)
    args.reports_single = args.reports_single or (2_000 if quick else 10_000)

    cpu = psutil.cpu_count() or os.cpu_count()
    print(
        f"ldp collector ingestion on loopback; {cpu} CPUs shared by server and generator "
        f"(load average {os.getloadavg()[0]:.1f}); Python {sys.version.split()[0]}; client {args.client}"
    )
    http = "httptools" if importlib.util.find_spec("httptools") else "h11 (httptools not installed)"
    print(
        f"GRR: domain 16, ε = 1; RAPPOR: 128 bits, 2 hashes, 64 cohorts; OUE: d = 64, ε = 1; uvicorn HTTP: {http}"
    )
    with tempfile.TemporaryDirectory(prefix="ldp-bench-collector-") as tmp:
        work = Path(tmp)
        stores: list[tuple[str, AbstractContextManager[Callable[[str], str]]]] = []
        if args.store:
            fixed = args.store
            stores.append(("given", contextlib.nullcontext(lambda label: fixed)))
        else:
            stores.append(("sqlite", temporary_sqlite(work)))
        skipped = ""
        if args.postgres:
            cluster, skipped = postgres_cluster()
            if cluster is not None:
                stores.append(("postgres", _urls_of(cluster)))
        checks: list[float] = []
        runs: dict[str, list[StoreRun]] = {name: [] for name, _ in stores}
        with contextlib.ExitStack() as opened:
            urls = [(name, opened.enter_context(context)) for name, context in stores]
            for run in range(args.runs):
                checks.append(check_rate(min(args.reports, 100_000)))
                print(
                    f"{f'run {run + 1} of {args.runs}: ' if args.runs > 1 else ''}"
                    f"reference, no HTTP: check_upload_body (GRR, bodies of 100) {checks[-1]:,.0f} reports/s; "
                    f"÷ insert: reports/s over the store's own insert_reports (groups of 1,000) before the rows\n"
                )
                print(HEADER)
                for name, store_url in urls:
                    runs[name].append(run_store(args, name, store_url, work))
                print()
        if skipped:
            print(f"PostgreSQL skipped: {skipped}")

    check = statistics.median(checks)
    results = {
        name: [_median_row(rows) for rows in zip(*(r.rows for r in per_run))]
        for name, per_run in runs.items()
    }
    if args.runs > 1:
        print(f"median of {args.runs} runs (each row: the run with the median reports/s)")
        print(f"reference, no HTTP: check_upload_body {check:,.0f} reports/s")
        print(HEADER)
        for name, rows in results.items():
            for row in rows:
                print_row(name, row)
    for name, rows in results.items():
        best = _grr_100(rows)
        paced = rows[-1]
        # per run: the GRR batches-of-100 rate over the mean of the store's insert rates before and after its rows
        ratios = [_grr_100(r.rows).rate / r.reference for r in runs[name]]
        ratio = statistics.median(ratios)
        inserts = statistics.median(r.reference for r in runs[name])
        ok_rate = "OK" if best.rate >= TARGET_RATE else "MISSED"
        ok_p99 = "OK" if paced.percentile(0.99) <= TARGET_P99_MS else "MISSED"
        ok_ratio = "OK" if ratio >= TARGET_RATIO else "MISSED"
        store_cpu = statistics.median(r.cpu for r in runs[name])
        server_cpu = best.server_cpu / best.load.accepted * 1_000
        print(
            f"\n{name}: GRR batches of 100 at {best.rate:,.0f} reports/s (target ≥ {TARGET_RATE:,.0f}: {ok_rate}); "
            f"p99 {paced.percentile(0.99):.1f} ms at {paced.rate:,.0f} reports/s (target ≤ {TARGET_P99_MS:.0f} ms: {ok_p99}); "
            f"HTTP path / the store's own insert_reports ({inserts:,.0f} reports/s, mean of before and after the rows) "
            f"= {ratio:.2f} (target ≥ {TARGET_RATIO}: {ok_ratio}), / check_upload_body = {best.rate / check:.2f}; "
            f"CPU per 1,000 reports: the server {server_cpu:.4f} s (its event loop {best.loop_cpu / best.load.accepted * 1_000:.4f}), "
            f"the store's own insert_reports {store_cpu:.4f} s in this process"
            + (
                " (without the PostgreSQL server's own work)"
                if name == "postgres"
                else f" (their ratio {store_cpu / server_cpu:.2f} bounds the HTTP path's when no core is free)"
            )
        )


def _grr_100(rows: list[Row]) -> Row:
    return next(r for r in rows if r.mechanism == "grr" and r.batch == 100 and "/s" not in r.mode)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _median_row(rows: tuple[Row, ...]) -> Row:
    return sorted(rows, key=lambda row: row.rate)[(len(rows) - 1) // 2]


@contextlib.contextmanager
def _urls_of(cluster: AbstractContextManager[str]) -> Iterator[Callable[[str], str]]:
    with cluster as url:
        yield lambda label: url


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as exc:
        sys.exit(f"interrupted ({exc}); the servers were stopped")
