"""CPU per report of the collector's upload check, per registered mechanism: the batch decoder against the envelope path.

For every registered mechanism (its typical spec: the conformance suite's
example with a domain of 64 values, as ``benchmarks/bench_sizing.py``), JSON
upload bodies of 100 envelopes (real encoded reports, fresh ids, one ``t``)
are checked in the same process by

* ``check_upload_body`` (:mod:`ldp.collector.upload_batch`: msgspec typed
  records and column-wise rules; None when it does not type the spec, and the
  caller then runs the envelope path), and
* ``parse_upload`` + ``check_envelopes`` (:mod:`ldp.collector.envelopes`:
  orjson, then the compiled per-spec check envelope by envelope), the
  reference measured in the same run,

alternating (A B A B ..., ``--pairs`` pairs), each timing the CPU time
(``time.process_time``, user + sys: the machine is shared) of checking every
body once. The table gives the medians in µs per report and their ratio, and
whether the batch decoder took the bodies (``typed``); for a mechanism it does
not type, its column is the cost of finding that out plus nothing else.

Run: ``python benchmarks/bench_upload_batch.py [--pairs 5] [--bodies 20] [--mechanism ss ...]``
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ldp.client import encode_batch
from ldp.collector.envelopes import check_envelopes, parse_upload
from ldp.collector.tasks import new_task
from ldp.collector.upload_batch import batch_decoder, check_upload_body
from ldp.registry import declarations

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "conformance")]

from mechanism_examples import example_spec, example_values  # noqa: E402 (tests/ on the path first)

#: The typical spec's required values (benchmarks/bench_sizing.py's).
TYPICAL = {"domain": tuple(f"v{i}" for i in range(64)), "epsilon": 1.0, "delta": 1e-5}
PER_BODY = 100
JSON = "application/json"


def bodies(spec: Any, count: int, t: int, rng: np.random.Generator) -> list[bytes]:
    """``count`` JSON upload bodies of :data:`PER_BODY` real reports of ``spec`` (fresh ids, time ``t``)."""
    n = count * PER_BODY
    reports = [r.to_dict() for r in encode_batch(spec, example_values(spec, n), rng).reports(spec)]
    raw = rng.bytes(16 * n)
    ids = [base64.urlsafe_b64encode(raw[i : i + 16]).rstrip(b"=").decode() for i in range(0, 16 * n, 16)]
    envelopes = [{"id": i, "t": t, "report": r} for i, r in zip(ids, reports)]
    return [orjson.dumps(envelopes[k : k + PER_BODY]) for k in range(0, n, PER_BODY)]


def cpu_per_report(check: Any, task: Any, uploads: list[bytes], now: float) -> float:
    """CPU µs per report of ``check(task, body, now)`` over every body once."""
    start = time.process_time()
    for body in uploads:
        check(task, body, now)
    return (time.process_time() - start) / (len(uploads) * PER_BODY) * 1e6


def batch_check(task: Any, body: bytes, now: float) -> None:
    checked = check_upload_body(task, body, JSON, now)
    if checked is None:  # not typed (or not accepted whole): what the server then runs
        checked = check_envelopes(task, parse_upload(body, JSON), now)
    assert len(checked.accepted) == PER_BODY


def envelope_check(task: Any, body: bytes, now: float) -> None:
    checked = check_envelopes(task, parse_upload(body, JSON), now)
    assert len(checked.accepted) == PER_BODY


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5, help="alternating pairs (A B) per mechanism")
    parser.add_argument("--bodies", type=int, default=20, help=f"bodies of {PER_BODY} reports per timing")
    parser.add_argument("--mechanism", nargs="*", help="only these registered mechanisms")
    args = parser.parse_args()
    rng = np.random.default_rng(31)
    now = float(int(time.time()))
    print(
        f"load average {os.getloadavg()[0]:.2f}; bodies of {PER_BODY}, {args.bodies} per timing, {args.pairs} pairs"
    )
    print(f"{'mechanism':<22} {'typed':<6} {'batch µs':>9} {'envelope µs':>12} {'envelope/batch':>15}")
    for decl in declarations():
        if args.mechanism and decl.name not in args.mechanism:
            continue
        spec = example_spec(decl, TYPICAL, {})
        task, _token = new_task(spec, window="1h", time_precision=60, min_batch=1)
        uploads = bodies(spec, args.bodies, int(now) - int(now) % 60, rng)
        typed = batch_decoder(task) is not None and check_upload_body(task, uploads[0], JSON, now) is not None
        batch_check(task, uploads[0], now)  # warm: the per-spec decoders are built once
        envelope_check(task, uploads[0], now)
        fast, slow = [], []
        for _ in range(args.pairs):
            fast.append(cpu_per_report(batch_check, task, uploads, now))
            slow.append(cpu_per_report(envelope_check, task, uploads, now))
        a, b = statistics.median(fast), statistics.median(slow)
        print(f"{decl.name:<22} {'yes' if typed else 'no':<6} {a:>9.2f} {b:>12.2f} {b / a:>15.1f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
