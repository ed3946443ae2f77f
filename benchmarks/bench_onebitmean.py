"""1BitMean accuracy targets (docs/longitudinal/onebitmean.md#targets): the Hoeffding bound and the α-rounding bias.

For each configuration (mode, ε₁, ε∞ when memoized, grid s, population)
``--runs`` collections of ``--users`` users are simulated, every run with
fresh clients (new α, memoized bits and flips), and two figures are printed:

- **bound**: the fraction of runs with |σ̂ − σ| ≤ (m/√(2n))·C′·√(ln(2/β)),
  C′ = 1/(2k − 1) (the paper's bound for the composite keep k; the target is
  ≥ 95 % at β = 0.05; Hoeffding is conservative, so expect about 100 %);
- **α bias**: the mean error over the runs and its standard error SE =
  sd/√runs; the target is |mean error| < 3 SE (α-point rounding is unbiased
  over α to within (high − low)/s·2^-32).

Each run uses the faithful batch encoder (``encode_batch`` with a seeded
generator: per user a uniform α index, its grid point, the memoized bit,
the γ flip) and the real ``MeanAccumulator``; ``--fast`` draws the count of
ones from its exact marginal instead (:mod:`ldp.simulations.onebitmean`),
which is for the bound only (it presumes the unbiasedness the bias column
tests).

Usage::

    python benchmarks/bench_onebitmean.py
    python benchmarks/bench_onebitmean.py --runs 2000 --users 100000
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ldp.aggregator.numeric import MeanAccumulator
from ldp.client import encode_batch
from ldp.simulations.onebitmean import onebitmean_value_counts
from ldp.specs.onebitmean import OneBitMean

#: (label, spec keyword arguments) of the configurations, on [0, m] with m = 3600 (seconds of app use a day).
CONFIGS = [
    ("plain ε=1", {"epsilon": 1.0}),
    ("alpha s=16 ε=1", {"epsilon": 1.0, "rounding": "alpha", "grid": 16}),
    ("alpha s=4 ε₁=0.5 ε∞=2", {"epsilon": 0.5, "rounding": "alpha", "grid": 4, "epsilon_inf": 2.0}),
    ("alpha s=64 ε₁=1 ε∞=4", {"epsilon": 1.0, "rounding": "alpha", "grid": 64, "epsilon_inf": 4.0}),
]
HIGH = 3600.0


def population(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """The users' counters: beta(2, 5)·m (skewed, off the grid) or a point mass between two grid points."""
    if name == "beta":
        return rng.beta(2.0, 5.0, n) * HIGH
    return np.full(n, 0.3 * HIGH + 1.234)  # 4.8 + steps of s = 16: the rounding is all α


def run(spec: OneBitMean, values: np.ndarray, runs: int, seed: int, fast: bool) -> np.ndarray:
    """The error σ̂ − σ of each run (fresh clients each run)."""
    rng = np.random.default_rng(seed)
    truth = float(np.clip(values, spec.low, spec.high).mean())
    errors = np.empty(runs)
    for r in range(runs):
        if fast:
            acc = MeanAccumulator.from_counts(spec, onebitmean_value_counts(spec, values, rng))
        else:
            acc = MeanAccumulator(spec)
            acc.add_batch(encode_batch(spec, values, rng))
        errors[r] = float(acc.estimate(with_sum=False)["mean"].iloc[0]) - truth
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=20171204)
    parser.add_argument(
        "--fast", action="store_true", help="exact marginal counts instead of the batch encoder"
    )
    args = parser.parse_args(argv)
    n, runs, beta = args.users, args.runs, args.beta
    print(
        f"{runs} runs of n = {n:,} users on [0, {HIGH:g}], beta = {beta}, {'fast' if args.fast else 'faithful'}"
    )
    header = (
        f"| {'configuration':24} | {'population':10} | {'bound':>8} | {'within':>7} | "
        f"{'mean error':>10} | {'SE':>7} | {'err/SE':>8} | {'s':>5} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(cell)) for cell in header.split("|")[1:-1]) + "|")
    for i, (label, kwargs) in enumerate(CONFIGS):
        spec = OneBitMean(low=0.0, high=HIGH, **kwargs)
        c = 1 / (2 * float(spec.keep) - 1)
        bound = HIGH / math.sqrt(2 * n) * c * math.sqrt(math.log(2 / beta))
        for j, name in enumerate(("beta", "point")):
            values = population(name, n, np.random.default_rng(args.seed + 7))
            started = time.perf_counter()
            errors = run(spec, values, runs, args.seed + 100 * i + j, args.fast)
            seconds = time.perf_counter() - started
            within = float(np.mean(np.abs(errors) <= bound))
            se = float(errors.std(ddof=1) / math.sqrt(runs))
            print(
                f"| {label:24} | {name:10} | {bound:8.2f} | {within:7.2%} | {errors.mean():10.3f} | "
                f"{se:7.3f} | {abs(errors.mean()) / se:8.2f} | {seconds:5.1f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
