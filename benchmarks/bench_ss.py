"""Subset selection (ss): encode and aggregate throughput beside OUE, the fast simulator, and Var* by theory.

Throughput rows (d = 1,024, ε = 1, n users with uniform values, one thread):

- ``encode (secure)``: :func:`ldp.client.encode_batch` with
  :class:`ldp.client.SystemRandomSource` (every coin from the OS CSPRNG, what
  ``ldp encode`` runs); ``encode (seeded)``: the same with a seeded NumPy
  generator (simulations);
- ``aggregate``: the accumulator's ``add_batch`` on the encoded reports (SS
  also checks that every report has exactly ω bits set);
- ``fast simulate``: one draw of the support counts from the true counts.

Each is timed for SS and, in the same run, for OUE (the same d-bit reports):
the ratio column is OUE's time over SS's (above 1: SS faster). Rows are the
median of ``--repeat`` runs (time.perf_counter, wall clock); the machine is
shared, so only same-run ratios are meaningful.

The variance table is theory (no sampling): Var* = n·Var at small frequency
of SS, OUE and OLH, built from each spec's exact calibrated probabilities at
ε = 0.5, 1, 2, 4 and d = 16, 128, 1,024, with ω and the ratio SS/OUE; and the
report sizes: the d-bit wire form, ω·⌈log₂ d⌉ as an index list, and the
information ⌈log₂ C(d, ω)⌉.

Usage::

    python benchmarks/bench_ss.py
    python benchmarks/bench_ss.py --users 200000 --repeat 3
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import math

import numpy as np
from harness import batch_throughput, median_time

import ldp
from ldp.simulations.fast import frequency_support_counts


def throughput_rows(users: int, d: int, epsilon: float, repeat: int) -> list[tuple[str, float, float]]:
    """(row, SS seconds, OUE seconds) for each timed operation."""
    values = np.random.default_rng(1).integers(0, d, users)
    specs = {"ss": ldp.SubsetSelection(range(d), epsilon), "oue": ldp.OUE(range(d), epsilon)}
    seconds = batch_throughput(specs, values, repeat)
    counts = np.bincount(values, minlength=d)
    seconds["fast simulate"] = {
        name: median_time(
            lambda spec=spec: frequency_support_counts(spec, counts, np.random.default_rng(4)), repeat
        )
        for name, spec in specs.items()
    }
    return [(op, row["ss"], row["oue"]) for op, row in seconds.items()]


def variance_rows() -> list[tuple[float, int, int, float, float, float]]:
    rows = []
    for epsilon in (0.5, 1.0, 2.0, 4.0):
        for d in (16, 128, 1024):
            ss = ldp.SubsetSelection(range(d), epsilon)
            oue = ldp.OUE(range(d), epsilon)
            olh = ldp.OLH(range(d), epsilon)
            rows.append((epsilon, d, ss.omega, ss.variance_star, oue.variance_star, olh.variance_star))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--domain-size", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, d = args.users, args.domain_size
    omega = ldp.SubsetSelection(range(d), args.epsilon).omega

    print(
        f"Throughput, d = {d:,}, epsilon = {args.epsilon:g} (omega = {omega}), n = {n:,}, median of {args.repeat}"
    )
    header = f"{'operation':<18} {'ss reports/s':>14} {'oue reports/s':>14} {'ss/oue speed':>13}"
    print(header)
    print("-" * len(header))
    for op, ss_s, oue_s in throughput_rows(n, d, args.epsilon, args.repeat):
        if op == "fast simulate":
            print(f"{op:<18} {ss_s * 1e3:>11.2f} ms {oue_s * 1e3:>11.2f} ms {oue_s / ss_s:>13.3f}")
        else:
            print(f"{op:<18} {n / ss_s:>14,.0f} {n / oue_s:>14,.0f} {oue_s / ss_s:>13.3f}")
    print()

    print("Var* = n * variance at small frequency (theory, exact calibrated specs)")
    header = f"{'epsilon':>7} {'d':>6} {'omega':>6} {'ss':>9} {'oue':>9} {'olh':>9} {'ss/oue':>7}"
    print(header)
    print("-" * len(header))
    for epsilon, size, w, ss_v, oue_v, olh_v in variance_rows():
        print(
            f"{epsilon:>7g} {size:>6,} {w:>6} {ss_v:>9.4f} {oue_v:>9.4f} {olh_v:>9.4f} {ss_v / oue_v:>7.3f}"
        )
    print()

    print("Report size in bits (ss): wire d-bit vector, an index list, the information log2 C(d, omega)")
    header = f"{'epsilon':>7} {'d':>6} {'omega':>6} {'wire':>6} {'indices':>8} {'log2 C':>7}"
    print(header)
    print("-" * len(header))
    for epsilon in (0.5, 1.0, 2.0, 4.0):
        for size in (16, 128, 1024):
            spec = ldp.SubsetSelection(range(size), epsilon)
            w = spec.omega
            index_bits = w * (size - 1).bit_length()
            info = math.ceil(math.log2(math.comb(size, w)))
            print(f"{epsilon:>7g} {size:>6,} {w:>6} {spec.report_bits:>6} {index_bits:>8} {info:>7}")


if __name__ == "__main__":
    main()
