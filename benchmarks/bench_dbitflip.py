"""dBitFlip: throughput beside SUE, the memoizing client, and the empirical variance against the exact formula.

Throughput rows (b buckets, ε = 1, n one-report users with uniform values, one thread):

- ``encode (secure)``: :func:`ldp.client.encode_batch` with
  :class:`ldp.client.SystemRandomSource` (the OS CSPRNG); ``encode (seeded)``:
  a seeded NumPy generator (simulations);
- ``aggregate``: the accumulator's ``add_batch``;
- ``fast simulate``: one exact joint draw of the accumulator's counts.

Each is timed for dBitFlip (d = 1 and d = 4) and, in the same run, for SUE
over the same b values. ``client reports/s``: one persistent client's
``encode`` (keyed PRF memo, CSPRNG flips with γ = 0.05).

The variance table draws ``--runs`` estimates from the fast simulator at
n = ``--users`` and compares the empirical variance, mean over values, with
the exact formula (target ±5 %), and the coverage of the 95 % intervals.

Usage::

    python benchmarks/bench_dbitflip.py
    python benchmarks/bench_dbitflip.py --users 100000 --runs 2000
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import numpy as np
from harness import batch_throughput, median_time

import ldp
from ldp.client import make_encoder
from ldp.simulations.dbitflip import dbitflip_counts
from ldp.specs.dbitflip import DBitFlip


def throughput(users: int, b: int, repeat: int) -> None:
    values = np.random.default_rng(1).integers(0, b, users)
    specs = {
        "dbitflip d=1": DBitFlip(range(b), 1.0, d=1),
        "dbitflip d=4": DBitFlip(range(b), 1.0, d=4),
        "sue": ldp.SUE(range(b), 1.0),
    }
    print(f"throughput, b = {b}, n = {users:,} (seconds, median of {repeat})")
    print(f"{'operation':18} " + " ".join(f"{name:>14}" for name in specs))
    for operation, times in batch_throughput(specs, values, repeat).items():
        print(f"{operation:18} " + " ".join(f"{times[name]:14.4f}" for name in specs))
    counts = np.bincount(values, minlength=b)
    for name in ("dbitflip d=1", "dbitflip d=4"):
        spec = specs[name]
        seconds = median_time(lambda s=spec: dbitflip_counts(s, counts, np.random.default_rng(4)), repeat)
        print(f"fast simulate      {name:>14} {seconds:10.4f} s")
    client = make_encoder(DBitFlip(range(b), 1.0, d=4, gamma="0.05"))
    reports = 2000
    seconds = median_time(lambda: [client.encode(i % b) for i in range(reports)], repeat)
    print(f"client reports/s   (d = 4, gamma = 0.05): {reports / seconds:,.0f}")


def variance_table(users: int, runs: int) -> None:
    print(
        f"\nempirical variance / exact formula (fast simulator, n = {users:,}, {runs} runs, mean over values)"
    )
    print(f"{'b':>5} {'d':>3} {'gamma':>6} {'eps':>5} {'var ratio':>10} {'coverage':>9}")
    rng = np.random.default_rng(2017)
    for b, d, gamma, epsilon in [
        (2, 1, "0", 1.0),
        (16, 1, "0", 1.0),
        (16, 4, "0.05", 2.0),
        (256, 8, "0", 0.5),
    ]:
        spec = DBitFlip(range(b), epsilon, d=d, gamma=gamma)
        weights = 1.0 / np.arange(1, b + 1)
        counts = rng.multinomial(users, weights / weights.sum())
        truth = counts / users
        est = np.empty((runs, b))
        covered = np.zeros(b)
        for r in range(runs):
            table = dbitflip_counts(spec, counts, rng).estimate(0.95)
            est[r] = table["proportion"].to_numpy()
            low, high = table["ci_low"].to_numpy() / users, table["ci_high"].to_numpy() / users
            covered += (low <= truth) & (truth <= high)
        ratio = float(np.mean(est.var(axis=0, ddof=1) / spec.variance(truth, users)))
        print(f"{b:5d} {d:3d} {gamma:>6} {epsilon:5.1f} {ratio:10.4f} {covered.mean() / runs:9.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--buckets", type=int, default=64)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    throughput(args.users, args.buckets, args.repeat)
    variance_table(args.users, args.runs)


if __name__ == "__main__":
    main()
