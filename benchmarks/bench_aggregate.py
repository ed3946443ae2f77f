"""Accumulation and decoding speed of the in-memory aggregators (issue 3 targets).

Reports are random but valid and already in memory as a ReportBatch (packed
bytes for unary encoding and RAPPOR), so this measures the accumulators
alone: no parsing, no encoding. Each row is the best of ``--repeat`` timed
runs (time.perf_counter, wall clock, single thread unless stated).

======================  ==============================================  ========================
row                     work                                            target
======================  ==============================================  ========================
GRR                     bincount of value indices, d = 1,024            -
OUE                     packed bits, d = 1,024 (128 bytes per report)   -
OLH decode              support counts, d = 1,024, g = e^ε + 1          1M reports in ≤ 5 s
RAPPOR                  128 bits, 64 cohorts, packed bytes              ≥ 5M reports/s/core
======================  ==============================================  ========================

Usage::

    python benchmarks/bench_aggregate.py
    python benchmarks/bench_aggregate.py --reports 2000000 --olh-reports 1000000 --threads 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ldp
from ldp.aggregator import make_aggregator
from ldp.batch import ReportBatch
from ldp.hashing import LH_SEED_SPACE


def best_time(spec, batch: ReportBatch, repeat: int, threads: int | None = 1) -> float:
    times = []
    for _ in range(repeat):
        acc = make_aggregator(spec, threads=threads)
        start = time.perf_counter()
        acc.add_batch(batch)
        if hasattr(acc, "support_counts"):
            acc.support_counts  # noqa: B018 - includes any deferred work
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=4_000_000, help="reports for GRR, OUE and RAPPOR")
    parser.add_argument("--olh-reports", type=int, default=1_000_000)
    parser.add_argument("--domain", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1, help="OLH decode threads (also runs 1 thread)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    domain = [f"v{i}" for i in range(args.domain)]
    n, d = args.reports, args.domain
    rows: list[tuple[str, int, float, str]] = []

    grr = ldp.GRR(domain=domain, epsilon=4.0)
    batch = ReportBatch(spec=grr.fingerprint, values=rng.integers(0, d, n))
    rows.append((f"GRR (d={d})", n, best_time(grr, batch, args.repeat), "-"))

    oue = ldp.OUE(domain=domain, epsilon=1.0)
    oue_n = min(n, 1_000_000)  # 128 bytes per report
    bits = rng.integers(0, 256, (oue_n, (d + 7) // 8), dtype=np.uint8)
    batch = ReportBatch(spec=oue.fingerprint, bits=bits)
    rows.append((f"OUE (d={d})", oue_n, best_time(oue, batch, args.repeat), "-"))
    del bits, batch

    olh = ldp.OLH(domain=domain, epsilon=1.0)
    m = args.olh_reports
    seeds = rng.integers(0, LH_SEED_SPACE, m, dtype=np.int64).astype(np.uint64)
    batch = ReportBatch(spec=olh.fingerprint, seeds=seeds, values=rng.integers(0, olh.g, m))
    olh_repeat = max(1, min(args.repeat, 2))
    seconds = best_time(olh, batch, olh_repeat)
    rows.append((f"OLH decode (d={d}, g={olh.g}, 1 thread)", m, seconds, "≤ 5 s" if m == 1_000_000 else "-"))
    if args.threads > 1:
        seconds = best_time(olh, batch, olh_repeat, threads=args.threads)
        rows.append((f"OLH decode ({args.threads} threads)", m, seconds, "≤ 5 s" if m == 1_000_000 else "-"))

    rappor = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    bits = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    batch = ReportBatch(spec=rappor.fingerprint, bits=bits, cohorts=rng.integers(0, 64, n))
    rows.append(("RAPPOR (k=128, m=64)", n, best_time(rappor, batch, args.repeat), "≥ 5M reports/s"))

    header = f"{'aggregator':<40} {'reports':>10} {'seconds':>9} {'reports/s':>12}  target"
    print(header)
    print("-" * len(header))
    for name, count, secs, target in rows:
        print(f"{name:<40} {count:>10,} {secs:>9.3f} {count / secs:>12,.0f}  {target}")


if __name__ == "__main__":
    main()
