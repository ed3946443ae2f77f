"""LOLOHA: decode time beside OLH at equal n and d, and the empirical variance against the exact formula.

Decode rows (one thread, users' values uniform over d, ε₁ = 1, ε∞ = 2,
each spec's default g and LOLOHA's default pool of S = 2^16 functions): the
reports are encoded once (seeded) outside the timing; the timed part is
what the aggregator does with them, ``add_batch`` then ``support_counts``:

- OLH hashes every value once per report (O(n·d));
- LOLOHA counts reports per (pool function, bucket) (O(n)) and hashes every
  value once per occupied (pool function, bucket) cell (O(min(n, S·g)·d)).

The ratio column is LOLOHA's time over OLH's (the target: at most 2). Each
time is the fastest of ``--repeat`` runs, the two mechanisms' runs
interleaved (time.perf_counter, wall clock); the machine may be shared, so
only same-run ratios are meaningful.

``--variance`` adds the empirical variance of f̂ (mean over values) over
``--reps`` seeded simulations (:func:`ldp.simulations.loloha.loloha_support_counts`,
the spec's own pool), against the exact formula (``spec.variance``), and the
coverage of the 95 % intervals.

Usage::

    python benchmarks/bench_loloha.py
    python benchmarks/bench_loloha.py --users 100000 1000000 --domains 16 256 1024 --repeat 3
    python benchmarks/bench_loloha.py --variance --reps 2000
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import time

import numpy as np
from scipy.stats import norm

import ldp
from ldp.aggregator import make_aggregator
from ldp.client import encode_batch
from ldp.simulations.loloha import loloha_support_counts
from ldp.specs.loloha import LOLOHA


def decode_once(spec, batch) -> float:
    start = time.perf_counter()
    acc = make_aggregator(spec)
    acc.add_batch(batch)
    acc.support_counts  # noqa: B018  # the decode (LOLOHA decodes here, OLH in add_batch)
    return time.perf_counter() - start


def decode_pair(specs, batches, repeat: int) -> list[float]:
    """The fastest of ``repeat`` decodes of each, the two interleaved (a shared machine's load hits both alike)."""
    times: list[list[float]] = [[], []]
    for _ in range(repeat):
        for i in (0, 1):
            times[i].append(decode_once(specs[i], batches[i]))
    return [min(t) for t in times]


def decode_table(users: list[int], domains: list[int], repeat: int) -> None:
    print("| n | d | OLH (s) | LOLOHA (s) | LOLOHA/OLH |")
    print("|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(7)  # insecure-ok: benchmark inputs
    for d in domains:
        olh = ldp.OLH(domain=range(d), epsilon=1.0)
        loloha = LOLOHA(domain=range(d), epsilon=1.0)
        for n in users:
            values = rng.integers(0, d, n)
            batches = [encode_batch(spec, values, rng, indices=True) for spec in (olh, loloha)]
            t_olh, t_lol = decode_pair((olh, loloha), batches, repeat)
            print(f"| {n:,} | {d:,} | {t_olh:.3f} | {t_lol:.3f} | {t_lol / t_olh:.2f} |")


def variance_table(n: int, domains: list[int], reps: int) -> None:
    print(
        f"\nEmpirical variance of f̂ over {reps} simulations, n = {n:,}, Zipf(1.1) values (mean over values)\n"
    )
    print("| d | ε∞ | ε₁/ε∞ | g | empirical / exact | coverage (95 %) |")
    print("|---:|---:|---:|---:|---:|---:|")
    z = norm.isf(0.025)
    for d in domains:
        weights = 1.0 / np.arange(1, d + 1) ** 1.1
        truth = np.floor(n * weights / weights.sum()).astype(np.int64)
        truth[0] += n - truth.sum()
        f = truth / n
        for eps_inf in (0.5, 1.0, 2.0, 4.0):
            for share in (0.25, 0.5, 0.75):
                spec = LOLOHA(domain=range(d), epsilon=share * eps_inf, epsilon_inf=eps_inf)
                rng = np.random.default_rng(d * 1000 + int(eps_inf * 100) + int(share * 10))  # insecure-ok
                est = np.empty((reps, d))
                for r in range(reps):
                    counts = loloha_support_counts(spec, truth, rng)
                    est[r] = spec.unbiased_frequencies(counts, n)  # the aggregator's, conditioned on the pool
                exact = np.asarray(spec.variance(f, n), dtype=float)
                ratio = float(np.mean(est.var(axis=0, ddof=1) / exact))
                sd = np.sqrt(np.asarray(spec.variance(np.clip(est, 0, 1), n), dtype=float))
                covered = float(np.mean(np.abs(est - f) <= z * sd))
                print(f"| {d} | {eps_inf:g} | {share:g} | {spec.g} | {ratio:.3f} | {100 * covered:.1f} % |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--domains", type=int, nargs="+", default=[16, 256, 1024])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variance", action="store_true", help="also the empirical variance table")
    parser.add_argument("--reps", type=int, default=200, help="simulations per variance row")
    parser.add_argument("--variance-n", type=int, default=100_000)
    args = parser.parse_args()
    decode_table(args.users, args.domains, args.repeat)
    if args.variance:
        variance_table(args.variance_n, [2, 16, 256], args.reps)


if __name__ == "__main__":
    main()
