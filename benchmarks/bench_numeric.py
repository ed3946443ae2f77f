"""Speed of the numeric mechanisms (issue 5 targets): client encode, batch encode, aggregation.

Each figure is the best of ``--repeat`` timed runs (time.perf_counter, wall
clock, one thread).

=====================  ===============================================  ========================================
column                 work                                             same-run reference (ratio printed)
=====================  ===============================================  ========================================
single µs              ``make_encoder(spec).encode(x)``: CSPRNG, pure   ``os.urandom(8)`` per call: one
                       Python, one Report object per call; blocks of    CSPRNG draw from Python, timed in
                       500 calls, best block                            blocks alternating with the encodes
batch M/s              ``encode_batch(spec, values, rng)`` (seeded      ``rng.uniform(low, high, n)``: NumPy
                       NumPy, insecure simulation path)                 drawing as many floats
aggregate M/s          ``MeanAccumulator.add_batch`` of an in-memory    ``values.sum()``: one memory pass over
                       batch (support check + histogram)                the same reports
=====================  ===============================================  ========================================

Targets: single ≤ 20 µs per report, batch ≥ 5M reports/s, aggregate ≥ 20M reports/s.

Usage::

    python benchmarks/bench_numeric.py
    python benchmarks/bench_numeric.py --epsilon 0.1,1,8 --reports 2000000 --single 20000
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ldp.aggregator import make_aggregator
from ldp.client import encode_batch, make_encoder
from ldp.specs.numeric import NUMERIC_MECHANISMS, numeric_spec


def best(func, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", default="1", help="comma-separated epsilons")
    parser.add_argument("--reports", type=int, default=2_000_000, help="reports per batch run")
    parser.add_argument("--single", type=int, default=20_000, help="single-report encodes per timed run")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    low, high = 0.0, 100.0
    values = rng.uniform(low, high, args.reports)
    singles = values[: args.single].tolist()
    n = args.reports

    def per_call(encoder, rounds: int, block: int = 500) -> tuple[float, float]:
        """Best µs per call of encode and of os.urandom(8), timed alternately in short blocks."""
        best_encode = best_urandom = float("inf")
        for r in range(rounds):
            xs = singles[(r * block) % len(singles) :][:block]
            start = time.perf_counter()
            for x in xs:
                encoder.encode(x)
            middle = time.perf_counter()
            for _ in xs:
                os.urandom(8)
            end = time.perf_counter()
            best_encode = min(best_encode, (middle - start) / len(xs))
            best_urandom = min(best_urandom, (end - middle) / len(xs))
        return best_encode * 1e6, best_urandom * 1e6

    header = (
        f"{'mechanism':<20} {'eps':>5} {'single µs':>10} {'urandom µs':>11} {'ratio':>6}"
        f" {'batch M/s':>10} {'uniform M/s':>12} {'ratio':>6} {'aggregate M/s':>14} {'sum() M/s':>10} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for eps in [float(e) for e in args.epsilon.split(",")]:
        for name in NUMERIC_MECHANISMS:
            spec = numeric_spec(name, eps, low, high, delta=1e-5)
            encoder = make_encoder(spec)

            t_single, t_urandom = per_call(encoder, max(1, args.single // 500) * args.repeat)
            batch = encode_batch(spec, values, rng)
            t_batch = best(lambda spec=spec: encode_batch(spec, values, rng), args.repeat)
            t_uniform = best(lambda: rng.uniform(low, high, n), args.repeat)

            def aggregate(spec=spec, batch=batch):
                make_aggregator(spec).add_batch(batch)

            t_agg = best(aggregate, args.repeat)
            t_sum = best(batch.values.sum, args.repeat)
            print(
                f"{name:<20} {eps:>5g} {t_single:>10.2f} {t_urandom:>11.2f} {t_single / t_urandom:>6.1f}"
                f" {n / t_batch / 1e6:>10.2f} {n / t_uniform / 1e6:>12.1f} {t_uniform / t_batch:>6.2f}"
                f" {n / t_agg / 1e6:>14.1f} {n / t_sum / 1e6:>10.1f} {t_sum / t_agg:>6.2f}"
            )
    print(
        "ratio: ours / reference, of times for single (> 1: slower), of rates for batch and aggregate (< 1: slower)"
    )
    print("targets: single ≤ 20 µs, batch ≥ 5 M/s, aggregate ≥ 20 M/s")


if __name__ == "__main__":
    main()
