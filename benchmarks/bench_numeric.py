"""Speed of the numeric mechanisms (issue 5 targets): client encode, batch encode, aggregation.

Each figure is the best of ``--repeat`` timed runs (time.perf_counter, wall
clock, one thread).

=====================  =========================================================  ======================
column                 work                                                       target
=====================  =========================================================  ======================
single µs              ``make_encoder(spec).encode(x)``: CSPRNG, pure Python,     ≤ 20 µs per report
                       one Report object per call
batch M/s              ``encode_batch(spec, values, rng)`` (seeded NumPy,         ≥ 5M reports/s
                       insecure simulation path), values uniform on the range
aggregate M/s          ``MeanAccumulator.add_batch`` of an in-memory batch        ≥ 20M reports/s
                       (support check + histogram)
=====================  =========================================================  ======================

Usage::

    python benchmarks/bench_numeric.py
    python benchmarks/bench_numeric.py --epsilon 0.1,1,8 --reports 2000000 --single 20000
"""

from __future__ import annotations

import argparse
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
    header = f"{'mechanism':<20} {'eps':>5} {'single µs':>10} {'batch M/s':>10} {'aggregate M/s':>14}"
    print(header)
    print("-" * len(header))
    for eps in [float(e) for e in args.epsilon.split(",")]:
        for name in NUMERIC_MECHANISMS:
            spec = numeric_spec(name, eps, low, high, delta=1e-5)
            encoder = make_encoder(spec)

            def single(encoder=encoder):
                for x in singles:
                    encoder.encode(x)

            t_single = best(single, args.repeat) / len(singles) * 1e6
            batch = encode_batch(spec, values, rng)
            t_batch = best(lambda spec=spec: encode_batch(spec, values, rng), args.repeat)

            def aggregate(spec=spec, batch=batch):
                make_aggregator(spec).add_batch(batch)

            t_agg = best(aggregate, args.repeat)
            n = args.reports
            print(
                f"{name:<20} {eps:>5g} {t_single:>10.2f} {n / t_batch / 1e6:>10.2f} {n / t_agg / 1e6:>14.1f}"
            )
    print("targets: single ≤ 20 µs, batch ≥ 5 M/s, aggregate ≥ 20 M/s")


if __name__ == "__main__":
    main()
