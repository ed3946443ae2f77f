"""Range and quantile queries: the issue's accuracy targets, with the fast simulators (docs/range-queries.md).

Data: n users over D ordered values drawn from a Cauchy distribution centred
at D/3 with scale D/20, values outside [0, D) redrawn (Cormode et al. use
Cauchy data too); one fixed seeded population. For each ε and method,
``--reps`` seeded simulations of the aggregated counts
(:mod:`ldp.simulations.ranges`: their exact distribution) answer the same
``--ranges`` uniform random ranges [lo, hi].

Rows:

- measured MSE (over ranges and runs) against the mean *reported* variance
  (the estimate's plug-in variance) and the exact variance (true counts);
  target: within ±10 %;
- hierarchy with Hay's inference against the raw B-adic answers
  (consistency never increases MSE);
- the crossover ε between wavelet and hierarchy, from the exact mean
  variances over a grid of ε (and the measured MSEs at the run's ε);
- quantiles 0.5, 0.9, 0.99 at ε = 1: rank error |F(v) − q| (0 when v is a
  true q-quantile), mean and max over runs; target ≤ 0.01.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_range.py            # n = 10^6, D = 1,024, 1,000 ranges
    python benchmarks/bench_range.py --quick                           # fewer runs
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from ldp.range_math import rank_error
from ldp.simulations.ranges import haar_simulated, hierarchy_simulated
from ldp.specs.ranges import RangeHaar, RangeHierarchy

QUANTILES = (0.5, 0.9, 0.99)


def population(d: int, n: int, seed: int) -> np.ndarray:
    """Leaf counts of n Cauchy(D/3, D/20) draws kept in [0, D) (seeded)."""
    rng = np.random.default_rng(seed)
    values = np.empty(0, dtype=np.int64)
    while values.size < n:
        draw = np.floor(d / 3 + d / 20 * rng.standard_cauchy(2 * n)).astype(np.int64)
        values = np.concatenate([values, draw[(draw >= 0) & (draw < d)]])
    return np.bincount(values[:n], minlength=d)


def random_ranges(d: int, count: int, seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    ends = np.sort(rng.integers(0, d, size=(count, 2)), axis=1)
    return [(int(a), int(b)) for a, b in ends]


def methods(d: int, epsilon: float, branching: int):
    return {
        "hierarchy": (
            RangeHierarchy(domain=range(d), epsilon=epsilon, branching=branching),
            hierarchy_simulated,
        ),
        "haar": (RangeHaar(domain=range(d), epsilon=epsilon), haar_simulated),
    }


def run_cell(spec, simulate, counts, queries, truth, reps, rng, inferences):
    """Per inference: (measured MSE, its SE over runs, mean reported variance, exact variance), and rank errors."""
    sq: dict[str, list[float]] = {i: [] for i in inferences}
    reported = dict.fromkeys(inferences, 0.0)
    ranks = []
    acc = None
    for _ in range(reps):
        acc = simulate(spec, counts, rng)
        for inference in inferences:
            answers, variance = acc.range_answers(queries, inference)
            sq[inference].append(float(np.mean((answers - truth) ** 2)))
            reported[inference] += float(np.mean(variance))
        table = acc.estimate(quantiles=list(QUANTILES))
        ranks.append(rank_error(counts, table["value"].astype(int).to_numpy(), QUANTILES))
    exact = {i: float(np.mean(acc.range_answers(queries, i, true_counts=counts)[1])) for i in inferences}
    out = {
        i: (float(np.mean(sq[i])), float(np.std(sq[i], ddof=1) / np.sqrt(reps)), reported[i] / reps, exact[i])
        for i in inferences
    }
    return out, np.array(ranks)


def crossover(counts, queries, d, branching, grid) -> list[tuple[float, float, float]]:
    """(ε, exact mean variance of hierarchy (Hay), of haar) over ``grid``."""
    rows = []
    rng = np.random.default_rng(0)
    for epsilon in grid:
        found = methods(d, epsilon, branching)
        spec, simulate = found["hierarchy"]
        hier = float(
            np.mean(simulate(spec, counts, rng).range_answers(queries, "hay", true_counts=counts)[1])
        )
        spec, simulate = found["haar"]
        haar = float(np.mean(simulate(spec, counts, rng).range_answers(queries, true_counts=counts)[1]))
        rows.append((epsilon, hier, haar))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=1_000_000)
    parser.add_argument("-d", type=int, default=1024)
    parser.add_argument("--branching", type=int, default=4)
    parser.add_argument("--ranges", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--epsilons", default="0.5,1,2")
    parser.add_argument("--quick", action="store_true", help="10 runs per cell")
    parser.add_argument("--seed", type=int, default=2019)
    args = parser.parse_args()
    reps = 10 if args.quick else args.reps
    counts = population(args.d, args.n, args.seed)
    queries = random_ranges(args.d, args.ranges, args.seed + 1)
    truth = np.array([counts[a : b + 1].sum() for a, b in queries], dtype=float)
    rng = np.random.default_rng(args.seed + 2)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    print(
        f"n = {args.n:,}, D = {args.d:,}, B = {args.branching}, {args.ranges:,} random ranges, {reps} runs per cell\n"
    )
    print("| ε | method | measured MSE | reported Var | MSE / reported (± 2 SE) | exact Var | MSE / exact |")
    print("|---|---|---|---|---|---|---|")
    measured = {}
    ranks_at_one = {}
    for epsilon in epsilons:
        for name, (spec, simulate) in methods(args.d, epsilon, args.branching).items():
            inferences = ("none", "hay") if name == "hierarchy" else ("none",)
            start = time.perf_counter()
            cells, ranks = run_cell(spec, simulate, counts, queries, truth, reps, rng, inferences)
            for inference, (mse, se, rep, exact) in cells.items():
                label = {"none": "raw B-adic", "hay": "Hay"}[inference] if name == "hierarchy" else "haar"
                label = f"hierarchy ({label})" if name == "hierarchy" else label
                measured[(epsilon, label)] = mse
                print(
                    f"| {epsilon:g} | {label} | {mse:,.0f} | {rep:,.0f} | {mse / rep:.3f} ± {2 * se / rep:.3f} | {exact:,.0f} | "
                    f"{mse / exact:.3f} |"
                )
            if epsilon == 1.0:
                ranks_at_one[name] = ranks
            print(f"<!-- {name} ε={epsilon:g}: {time.perf_counter() - start:.1f} s -->")
    print("\nConsistency (Hay) against raw B-adic answers, measured MSE:")
    for epsilon in epsilons:
        raw, hay = measured[(epsilon, "hierarchy (raw B-adic)")], measured[(epsilon, "hierarchy (Hay)")]
        print(f"- ε = {epsilon:g}: Hay / raw = {hay / raw:.3f}")
    print("\nWavelet against hierarchy (Hay), exact mean variance over the ranges:\n")
    print("| ε | hierarchy (Hay) | haar | haar / hierarchy |")
    print("|---|---|---|---|")
    grid = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0]
    rows = crossover(counts, queries, args.d, args.branching, grid)
    for epsilon, hier, haar in rows:
        print(f"| {epsilon:g} | {hier:,.0f} | {haar:,.0f} | {haar / hier:.3f} |")
    ratios = [(e, haar / hier) for e, hier, haar in rows]
    flips = [(a, b) for (a, ra), (b, rb) in itertools.pairwise(ratios) if (ra - 1) * (rb - 1) < 0]
    if flips:
        (a, ra), (b, rb) = next(
            ((a, ra), (b, rb)) for (a, ra), (b, rb) in itertools.pairwise(ratios) if (ra - 1) * (rb - 1) < 0
        )
        cross = a + (1 - ra) * (b - a) / (rb - ra)
        print(f"\ncrossover ε ≈ {cross:.2f} (linear interpolation of the ratio between ε = {a:g} and {b:g})")
    else:
        better = "haar" if ratios[0][1] < 1 else "hierarchy"
        print(f"\nno crossover on the grid: {better} is better at every ε in {grid}")
    if ranks_at_one:
        print("\nQuantile rank error at ε = 1 (|F(v) − q|; mean and max over runs):\n")
        print("| method | " + " | ".join(f"q = {q:g}" for q in QUANTILES) + " |")
        print("|---|" + "---|" * len(QUANTILES))
        for name, ranks in ranks_at_one.items():
            cells = " | ".join(
                f"{m:.4f} (max {x:.4f})" for m, x in zip(ranks.mean(axis=0), ranks.max(axis=0))
            )
            print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
