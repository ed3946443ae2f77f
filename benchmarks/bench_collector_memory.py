"""Server memory (RSS) grown by single uploads: issue 24's two scenarios against a real ``ldp serve``.

1. ``grr``: one upload of 1,000 envelopes (~110 kB) to a GRR task over
   16,384 values, each envelope's ``t`` in a different past day (a new
   window each).
2. ``cms``: ten count-mean-sketch reports (k = m = 1,024), each in a
   different past day.

Each runs against a fresh server and SQLite store; the figure is the
server's VmRSS after the upload minus before (after one warm-up upload of a
current report, so the import and first-request costs are not counted).
``--wide`` creates the tasks with ``not_before=0`` and serves with the
acceptance range opened (``--max-report-age 10000d --max-windows 100000``),
so every envelope is accepted: what the windows alone cost.

Run: ``python benchmarks/bench_collector_memory.py [--wide]``.
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from collector_server import Server

import ldp
from ldp.client import encode_batch
from ldp.collector.store import open_store
from ldp.collector.tasks import new_task

DAY = 86_400


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def envelope(t: int, report: dict) -> dict:
    return {
        "id": base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode(),
        "t": t,
        "report": report,
    }


def scenario(name: str, spec, count: int, wide: bool) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as work:
        store = str(Path(work) / "memory.db")
        options = {"window": "1d", "time_precision": "1h", "min_batch": 1}
        if wide:
            options["not_before"] = 0
        task, _ = new_task(spec, **options)
        with open_store(store) as opened:
            opened.create_task(task)
        extra = ("--max-report-age", "10000d", "--max-windows", "100000") if wide else ()
        server = Server(store, "--rate-limit", "0", *extra)
        try:
            now = int(time.time())
            now -= now % 3_600
            values = list(spec.domain[:count]) if len(spec.domain) >= count else [spec.domain[0]] * count
            reports = [
                r.to_dict() for r in encode_batch(spec, values, np.random.default_rng(1)).reports(spec)
            ]
            url = f"{server.url}/v1/tasks/{task.task_id}/reports"
            httpx.post(url, json=[envelope(now, reports[0])], timeout=60).raise_for_status()  # warm-up
            time.sleep(0.5)
            before = rss_kib(server.process.pid)
            body = [envelope(now - (i + 1) * DAY, report) for i, report in enumerate(reports)]
            data = json.dumps(body).encode()
            reply = httpx.post(url, content=data, headers={"content-type": "application/json"}, timeout=600)
            time.sleep(0.5)
            after = rss_kib(server.process.pid)
            summary = reply.json()
            reasons: dict[str, int] = {}
            for rejected in summary.get("rejected", []):
                reasons[rejected["reason"]] = reasons.get(rejected["reason"], 0) + 1
            return (after - before) / 1024, {
                "bytes": len(data),
                "accepted": summary.get("accepted"),
                "rejected": reasons,
            }
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--wide", action="store_true", help="accept every envelope (not_before=0, wide limits)"
    )
    args = parser.parse_args()
    cases = {
        "grr": (ldp.GRR(domain=[f"v{i}" for i in range(16_384)], epsilon=1.0), 1_000),
        "cms": (ldp.CMS(domain=range(1_000), epsilon=1.0, k=1_024, m=1_024), 10),
    }
    for name, (spec, count) in cases.items():
        grown, summary = scenario(name, spec, count, args.wide)
        print(
            f"{name}: {count} envelopes in {count} past windows, {summary['bytes']:,} bytes: "
            f"server RSS +{grown:.1f} MiB; {summary}"
        )


if __name__ == "__main__":
    main()
