"""Hadamard response speed: batch encoding and decoding, each beside references measured in the same run.

Each figure is the best of ``--repeat`` timed runs (time.perf_counter, wall
clock, one thread), in million reports per second; machines differ and
shared ones are noisy, so read the ratio to the reference of the same run.

==================  =====================================================  ==========================================
row                 work                                                   reference (same run)
==================  =====================================================  ==========================================
encode (seeded)     ``encode_batch`` of n domain indices, a seeded         GRR's and OLH's ``encode_batch`` of the
                    generator (simulations)                                same indices
encode (secure)     the same with the OS CSPRNG (``secure_encode_batch``)  GRR with the OS CSPRNG
decode              ``add_batch`` (bincount of the outputs) + ``estimate``  ``np.bincount`` of the same outputs; OLH
                    (the Walsh–Hadamard transform and the table)           ``add_batch`` (support counts, O(n·d)) on
                                                                           ``--olh-reports`` reports, per report
==================  =====================================================  ==========================================

OLH's decode costs O(n·d) hash evaluations, so it is timed on fewer reports
(``--olh-reports``) and quoted per report: its rate does not depend on n.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_hr.py
    python benchmarks/bench_hr.py --reports 100000 --domains 1024
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import ldp
from ldp.aggregator import make_aggregator
from ldp.client import encode_batch, secure_encode_batch


def best(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def rate(n: int, seconds: float) -> float:
    """Million reports per second."""
    return n / seconds / 1e6


def rows_for(d: int, epsilon: float, n: int, olh_n: int, repeat: int) -> list[tuple[str, str, float, float]]:
    rng = np.random.default_rng(d)
    values = rng.zipf(1.3, n) % d
    hr = ldp.HR(range(d), epsilon)
    grr = ldp.GRR(range(d), epsilon)
    olh = ldp.OLH(range(d), epsilon)
    rows = []

    seeded = best(lambda: encode_batch(hr, values, np.random.default_rng(1), indices=True), repeat)
    grr_seeded = best(lambda: encode_batch(grr, values, np.random.default_rng(1), indices=True), repeat)
    olh_seeded = best(lambda: encode_batch(olh, values, np.random.default_rng(1), indices=True), repeat)
    rows.append(("encode (seeded)", "GRR encode", rate(n, seeded), rate(n, grr_seeded)))
    rows.append(("encode (seeded)", "OLH encode", rate(n, seeded), rate(n, olh_seeded)))

    secure = best(lambda: secure_encode_batch(hr, values, indices=True), repeat)
    grr_secure = best(lambda: secure_encode_batch(grr, values, indices=True), repeat)
    rows.append(("encode (secure)", "GRR secure encode", rate(n, secure), rate(n, grr_secure)))

    batch = encode_batch(hr, values, np.random.default_rng(2), indices=True)
    outputs = batch.values

    def decode():
        acc = make_aggregator(hr)
        acc.add_batch(batch)
        acc.estimate()

    def estimate_only():
        acc.estimate()

    acc = make_aggregator(hr)
    acc.add_batch(batch)
    decoded = best(decode, repeat)
    transform = best(estimate_only, repeat)
    counted = best(lambda: np.bincount(outputs, minlength=hr.outputs), repeat)
    rows.append(("decode", "np.bincount", rate(n, decoded), rate(n, counted)))

    olh_batch = encode_batch(olh, values[:olh_n], np.random.default_rng(3), indices=True)

    def olh_decode():
        olh_acc = make_aggregator(olh)
        olh_acc.add_batch(olh_batch)
        olh_acc.estimate()

    olh_time = best(olh_decode, max(1, repeat // 2))
    rows.append(("decode", f"OLH decode ({olh_n:,} reports)", rate(n, decoded), rate(olh_n, olh_time)))
    print(
        f"d = {d:,}, epsilon = {epsilon:g}: B = {hr.blocks}, b = {hr.block_size:,}, K = {hr.outputs:,}, "
        f"{hr.report_bits} bits per report (OLH: {olh.report_bits}); "
        f"estimate alone (transform + table) {transform * 1e3:.1f} ms"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--domains", type=lambda s: [int(x) for x in s.split(",")], default=[1024, 65_536])
    parser.add_argument("--epsilon", type=float, default=2.0)
    parser.add_argument("--olh-reports", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'d':>7}  {'work':<16} {'HR M/s':>8}  {'reference':<28} {'ref M/s':>9}  {'HR/ref':>7}")
    for d in args.domains:
        table = rows_for(d, args.epsilon, args.reports, args.olh_reports, args.repeat)
        for work, reference, mine, theirs in table:
            print(f"{d:>7,}  {work:<16} {mine:>8.2f}  {reference:<28} {theirs:>9.4f}  {mine / theirs:>7.2f}")


if __name__ == "__main__":
    main()
