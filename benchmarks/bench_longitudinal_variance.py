"""Longitudinal oracles: empirical variance of f̂ against the exact formula, and 95 % interval coverage.

Issue 26's targets: on the grid n = 10⁵, k ∈ {2, 16, 256}, ε∞ ∈ {0.5, 1, 2, 4},
ε₁/ε∞ ∈ {0.25, 0.5, 0.75}, for L-GRR, L-OSUE and LOLOHA, over ≥ 2,000 seeded
repetitions of one round:

- the empirical variance of every value's estimate f̂_v, divided by the
  exact formula at the true f_v (``spec.variance(f, n)``: for a chain
  [f·A(1 − A) + (1 − f)·B(1 − B)]/(n (p₁ − q₁)²(p₂ − q₂)²)), averaged over the
  k values, is within 1 ± 0.05;
- the two-sided 95 % intervals of the estimate table (f̂ ± z·SE, SE at the
  clipped plug-in f̂, as the accumulators compute them) cover the true f_v
  in 95 ± 1.5 % of (value, repetition) pairs.

Each repetition draws the support counts with the mechanism's fast
simulator, looked up through the registry
(:func:`ldp.simulations.fast.frequency_support_counts`: the chains' exact
joint law; LOLOHA's users each drawing a function of the spec's public pool
and the support counts decoded as its accumulator decodes them). The
estimate and its SE are the accumulators' own functions
(:func:`ldp.frequency_math.unbiased_frequency`, or LOLOHA's
``spec.unbiased_frequencies`` conditioned on its pool, and ``spec.variance``,
which :func:`ldp.aggregator.estimates.oracle_estimates` applies), evaluated on
all repetitions at once; the first repetition of every cell is checked to
equal the accumulator's estimate table (``make_aggregator(spec)`` rebuilt from
the counts; LOLOHA's accumulator cannot be rebuilt from support counts, so
its ``oracle_estimates`` of its own f̂, which ``LolohaAccumulator.estimate``
returns for them).

Population: a fixed Zipf(1.1) histogram over the k values (``--population
fixed``, the package's fixed-data variance); ``--population iid`` draws each
repetition's histogram as a multinomial sample of the same law and compares
with the i.i.d. formula, the fixed one plus f(1 − f)/n (the issue's
s(1 − s)/(n (p₁ − q₁)²(p₂ − q₂)²) for the chains).

Noise of the statistics themselves: the variance ratio of one value over R
repetitions has relative SE √(2/(R − 1)) (3.2 % at R = 2,000). The k values'
estimates are correlated (L-GRR's two estimates at k = 2 sum to 1, so their
ratios are equal), so the ``se`` column is measured, by batch means over 20
batches of repetitions. At k = 2 and R = 2,000, ±5 % is only about 1.6 SE
wide: roughly one exact cell in ten falls outside it by chance; ``--domains
2 --reps 20000`` narrows it to about 0.7 %.

Cost: the chains' simulators are O(k) a repetition; LOLOHA's decodes each
report against every value (O(n·k) a repetition when n ≤ S·g, S = 2^16),
20–70 ms at n = 10⁵, so LOLOHA dominates the run; ``--loloha-reps`` lowers
its repetitions alone.

Usage::

    python benchmarks/bench_longitudinal_variance.py            # the full grid (2,000 repetitions)
    python benchmarks/bench_longitudinal_variance.py --quick    # k ∈ {2, 16}, ε∞ ∈ {1, 4}, ε₁/ε∞ = 0.5
    python benchmarks/bench_longitudinal_variance.py --mechanisms l-grr l-osue --population iid
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import math
import time
from dataclasses import dataclass

import numpy as np

from ldp.aggregator import make_aggregator
from ldp.aggregator.estimates import normal_quantile, oracle_estimates
from ldp.errors import LDPError
from ldp.frequency_math import unbiased_frequency
from ldp.simulations.fast import frequency_support_counts
from ldp.specs import spec_class

MECHANISMS = ("l-grr", "l-osue", "loloha")
DOMAINS = (2, 16, 256)
EPSILON_INF = (0.5, 1.0, 2.0, 4.0)
RATIOS = (0.25, 0.5, 0.75)
VARIANCE_TOLERANCE = 0.05  # |ratio − 1| ≤ 5 %
COVERAGE_TARGET, COVERAGE_TOLERANCE = 0.95, 0.015
BATCHES = 20  # batch means for the SE of the variance ratio


def zipf_frequencies(k: int, s: float = 1.1) -> np.ndarray:
    weights = 1.0 / np.arange(1, k + 1) ** s
    return weights / weights.sum()


def fixed_counts(n: int, f: np.ndarray) -> np.ndarray:
    """n·f rounded to integers summing to n (largest remainders)."""
    raw = n * f
    counts = np.floor(raw).astype(np.int64)
    short = n - int(counts.sum())
    counts[np.argsort(raw - counts)[::-1][:short]] += 1
    return counts


@dataclass(frozen=True)
class Cell:
    mechanism: str
    k: int
    epsilon_inf: float
    ratio: float
    reps: int
    variance_ratio: float
    ratio_se: float
    coverage: float
    seconds: float

    @property
    def variance_ok(self) -> bool:
        return abs(self.variance_ratio - 1.0) <= VARIANCE_TOLERANCE

    @property
    def coverage_ok(self) -> bool:
        return abs(self.coverage - COVERAGE_TARGET) <= COVERAGE_TOLERANCE


def check_against_accumulator(
    spec, support: np.ndarray, n: int, estimate: np.ndarray, se: np.ndarray
) -> None:
    """The vectorized estimate and SE of one repetition equal the accumulator's estimate table."""
    try:
        table = type(make_aggregator(spec)).from_counts(spec, support, n).estimate()
    except LDPError:  # LOLOHA: rebuilt from its table only; its table is oracle_estimates of its own f̂
        frequency = spec.unbiased_frequencies(support, n)
        table = oracle_estimates(spec.domain, support, n, spec.p_star, spec.q_star, frequency=frequency)
    if not (
        np.allclose(table["proportion"].to_numpy(), estimate, rtol=1e-12, atol=1e-15)
        and np.allclose(table["std_error"].to_numpy(), n * se, rtol=1e-12, atol=1e-12)
    ):
        raise AssertionError(
            f"{spec.mechanism}: the vectorized estimate differs from the accumulator's table"
        )


def estimate_frequencies(spec, support: np.ndarray, n: int) -> np.ndarray:
    """f̂ of every repetition: the spec's own estimator when it states one (LOLOHA's, conditioned on its
    pool), else the pure oracle's (C/n − q*)/(p* − q*)."""
    own = getattr(spec, "unbiased_frequencies", None)
    if own is not None:
        return own(support, n)
    return unbiased_frequency(support, n, spec.p_star, spec.q_star)


def run_cell(
    mechanism: str, k: int, eps_inf: float, ratio: float, n: int, reps: int, population: str, rng
) -> Cell:
    spec = spec_class(mechanism)(domain=list(range(k)), epsilon=ratio * eps_inf, epsilon_inf=eps_inf)
    f = zipf_frequencies(k)
    base = fixed_counts(n, f)
    start = time.perf_counter()
    support = np.empty((reps, k), dtype=np.int64)
    truth = np.empty((reps, k))
    for r in range(reps):
        counts = base if population == "fixed" else rng.multinomial(n, f)
        support[r] = frequency_support_counts(spec, counts, rng)
        truth[r] = counts / n
    estimate = estimate_frequencies(spec, support, n)
    se = np.sqrt(spec.variance(np.clip(estimate, 0.0, 1.0), n))
    check_against_accumulator(spec, support[0], n, estimate[0], se[0])
    exact = spec.variance(f, n)
    if population == "iid":  # the population's own sampling variance on top
        exact = exact + f * (1 - f) / n
        errors = estimate - f
    else:
        errors = estimate - base / n
    empirical = errors.var(axis=0, ddof=1) if population == "fixed" else (errors**2).mean(axis=0)
    # SE of the mean ratio by batch means (the values' estimates are correlated: L-GRR's two sum to 1)
    batches = np.array_split(errors, BATCHES)
    spread = [b.var(axis=0, ddof=1) if population == "fixed" else (b**2).mean(axis=0) for b in batches]
    batch_ratios = np.array([np.mean(s / exact) for s in spread])
    z = normal_quantile(0.95)
    covered = np.abs(estimate - truth) <= z * se
    return Cell(
        mechanism,
        k,
        eps_inf,
        ratio,
        reps,
        float(np.mean(empirical / exact)),
        float(batch_ratios.std(ddof=1) / math.sqrt(len(batch_ratios))),
        float(covered.mean()),
        time.perf_counter() - start,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="k in {2, 16}, eps_inf in {1, 4}, ratio 0.5, 500 reps"
    )
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    parser.add_argument("--domains", nargs="+", type=int, default=None)
    parser.add_argument("--epsilon-inf", nargs="+", type=float, default=None)
    parser.add_argument("--ratios", nargs="+", type=float, default=None)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument(
        "--reps", type=int, default=None, help="repetitions per cell (default 2000; 500 with --quick)"
    )
    parser.add_argument("--loloha-reps", type=int, default=None, help="LOLOHA's repetitions (default --reps)")
    parser.add_argument("--population", choices=("fixed", "iid"), default="fixed")
    parser.add_argument("--seed", type=int, default=20261127)
    args = parser.parse_args(argv)
    domains = args.domains or ([2, 16] if args.quick else list(DOMAINS))
    eps_infs = args.epsilon_inf or ([1.0, 4.0] if args.quick else list(EPSILON_INF))
    ratios = args.ratios or ([0.5] if args.quick else list(RATIOS))
    reps = args.reps or (500 if args.quick else 2000)
    rng = np.random.default_rng(args.seed)
    print(
        f"n = {args.users:,}, {reps:,} repetitions (LOLOHA {args.loloha_reps or reps:,}), "
        f"population {args.population} Zipf(1.1), seed {args.seed}"
    )
    header = f"{'mechanism':<9} {'k':>4} {'eps_inf':>7} {'eps1/inf':>8} {'reps':>5} {'var ratio':>9} {'se':>6} {'coverage':>8} {'time s':>7}"
    print(header)
    print("-" * len(header))
    cells: list[Cell] = []
    skipped: list[str] = []
    total = time.perf_counter()
    for mechanism in args.mechanisms:
        for k in domains:
            for eps_inf in eps_infs:
                for ratio in ratios:
                    cell_reps = (args.loloha_reps or reps) if mechanism == "loloha" else reps
                    try:
                        cell = run_cell(
                            mechanism, k, eps_inf, ratio, args.users, cell_reps, args.population, rng
                        )
                    except LDPError as exc:
                        skipped.append(f"{mechanism} k={k} eps_inf={eps_inf} ratio={ratio}: {exc}")
                        print(f"{mechanism:<9} {k:>4} {eps_inf:>7g} {ratio:>8g}  not a valid spec: {exc}")
                        continue
                    cells.append(cell)
                    marks = ("" if cell.variance_ok else " V") + ("" if cell.coverage_ok else " C")
                    print(
                        f"{mechanism:<9} {k:>4} {eps_inf:>7g} {ratio:>8g} {cell.reps:>5} {cell.variance_ratio:>9.4f} "
                        f"{cell.ratio_se:>6.3f} {100 * cell.coverage:>7.2f}% {cell.seconds:>7.1f}{marks}",
                        flush=True,
                    )
    elapsed = time.perf_counter() - total
    print("-" * len(header))
    variance_pass = sum(c.variance_ok for c in cells)
    coverage_pass = sum(c.coverage_ok for c in cells)
    ratios_all = [c.variance_ratio for c in cells]
    coverages = [c.coverage for c in cells]
    if cells:
        print(
            f"variance within ±5 %: {variance_pass}/{len(cells)} cells (ratios {min(ratios_all):.4f}–{max(ratios_all):.4f}); "
            f"coverage within 95 ± 1.5 %: {coverage_pass}/{len(cells)} cells "
            f"({100 * min(coverages):.2f}–{100 * max(coverages):.2f} %); {elapsed:.0f} s"
        )
        for mechanism in args.mechanisms:
            own = [c for c in cells if c.mechanism == mechanism]
            if own:
                print(
                    f"  {mechanism}: variance {sum(c.variance_ok for c in own)}/{len(own)}, "
                    f"coverage {sum(c.coverage_ok for c in own)}/{len(own)}"
                )
    print("  (V: variance ratio outside 1 ± 0.05; C: coverage outside 95 ± 1.5 %)")
    if skipped:
        print(f"{len(skipped)} cells are not valid specs (skipped).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
