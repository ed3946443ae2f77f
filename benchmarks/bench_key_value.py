"""Key-value mechanisms: mean-estimate MSE of PCKV against PrivKVM at equal ε, and interval coverage.

Part 1, the paper's synthetic setup (Gu et al., PCKV, USENIX Security 2020, §6, "UU"): n users with one
(key, value) pair each, d = 100 keys drawn uniformly, each key's value uniform on [−1, 1] (all holders of a
key hold its value), ℓ = 1. Per mechanism and ε (nominal, the paper's comparison; PrivKVM's exact ε is
smaller and is shown): the per-key frequency MSE (with the mean of the reported variances beside it) and
the mean MSE over the keys (estimates clipped to [−1, 1]), averaged over ``--repeats`` populations
(:func:`ldp.simulations.key_value.run_key_value`: the real batch encoders and accumulators).

Part 2, coverage on a moderate grid: PCKV-UE and PCKV-GRR × ε ∈ {1, 2} × ℓ ∈ {1, 2}; ``--runs`` seeded
runs of ``--coverage-users`` users with four keys of frequencies 0.5, 0.3, 0, 0.2 (ℓ = 2 adds a fourth key
held by half the users, so nobody holds more than ℓ pairs); pooled share of the 95 % intervals of the
frequency (every key) and of the mean (held keys) that hold the truth.

Part 3, where PCKV-GRR's mean overtakes PrivKVM's: the setup of part 1 at ε ∈ ``--small-epsilons`` over
d ∈ ``--domains`` keys; per cell the mean MSE of PCKV-GRR, PCKV-UE and PrivKVM, and of answering 0 for every
key (mean of m², the score of an estimate that says nothing about the means).

Usage::

    python benchmarks/bench_key_value.py                       # n = 10^6, 1 repeat, 100 runs
    python benchmarks/bench_key_value.py --users 200000 --runs 50
    python benchmarks/bench_key_value.py --parts 3 --domains 10,30,100
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time

import numpy as np

from ldp.aggregator import make_aggregator
from ldp.client import encode_batch
from ldp.simulations.key_value import format_key_value_report, run_key_value
from ldp.specs.key_value import PCKVGRR, PCKVUE

MEANS = {"a": 0.6, "b": -0.3, "c": 0.0, "d": 0.9}


def population(n: int, ell: int) -> list[dict]:
    out = []
    for i in range(n):
        r = i % 10
        held = {"a": MEANS["a"]} if r < 5 else {"b": MEANS["b"]} if r < 8 else {}
        if ell >= 2 and r % 2 == 0:
            held["d"] = MEANS["d"]
        out.append(held)
    return out


def coverage(runs: int, users: int) -> list[str]:
    lines = [
        f"{'mechanism':<9} {'eps':>4} {'ell':>4} {'freq cover':>11} {'mean cover':>11} {'intervals':>10}"
    ]
    for cls in (PCKVUE, PCKVGRR):
        for epsilon in (1.0, 2.0):
            for ell in (1, 2):
                spec = cls(tuple(MEANS), epsilon, ell=ell)
                values = population(users, ell)
                truth = {k: sum(k in v for v in values) for k in MEANS}
                f_cov, m_cov = [], []
                for r in range(runs):
                    acc = make_aggregator(spec)
                    acc.add_batch(encode_batch(spec, values, np.random.default_rng([r, ell, int(epsilon)])))
                    t = acc.estimate(0.95).set_index("value")
                    for k in MEANS:
                        f_cov.append(t.loc[k, "ci_low"] <= truth[k] <= t.loc[k, "ci_high"])
                        if truth[k]:
                            m_cov.append(t.loc[k, "mean_ci_low"] <= MEANS[k] <= t.loc[k, "mean_ci_high"])
                lines.append(
                    f"{spec.mechanism:<9} {epsilon:>4g} {ell:>4} {np.mean(f_cov):>11.1%} {np.mean(m_cov):>11.1%} "
                    f"{len(f_cov) + len(m_cov):>10}"
                )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--epsilons", default="0.5,1,2,4")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--coverage-users", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--parts", default="1,2,3", help="which parts to run (comma-separated)")
    parser.add_argument("--domains", default="10,30,100", help="part 3: numbers of keys d")
    parser.add_argument("--small-epsilons", default="0.5,1", help="part 3: the ε")
    args = parser.parse_args()
    parts = {int(x) for x in args.parts.split(",")}
    start = time.perf_counter()
    eps = [float(x) for x in args.epsilons.split(",")]
    if 1 in parts:
        results = run_key_value(None, eps, args.users, 100, "uniform", repeats=args.repeats, seed=args.seed)
        print("## Mean and frequency MSE, the paper's UU setup\n")
        print(format_key_value_report(results))
        mean = results.groupby(["mechanism", "epsilon"])["mean_mse"].mean().unstack(0)
        print("\nmean MSE ratio PCKV/PrivKVM at equal nominal ε:")
        for e, row in mean.iterrows():
            print(
                f"  ε = {e:g}: pckv-ue {row['pckv-ue'] / row['privkvm']:.3f}, "
                f"pckv-grr {row['pckv-grr'] / row['privkvm']:.3f}"
            )
    if 2 in parts:
        print(f"\n## Coverage of the 95 % intervals ({args.runs} runs of {args.coverage_users:,} users)\n")
        print("\n".join(coverage(args.runs, args.coverage_users)))
    if 3 in parts:
        small = [float(x) for x in args.small_epsilons.split(",")]
        print(f"\n## Mean MSE against the number of keys (n = {args.users:,}, one pair each, ℓ = 1)\n")
        print("| d | ε | pckv-grr | pckv-ue | privkvm | answer 0 | pckv-grr / privkvm |")
        print("|---|---|---|---|---|---|---|")
        for d in (int(x) for x in args.domains.split(",")):
            table = run_key_value(None, small, args.users, d, "uniform", repeats=args.repeats, seed=args.seed)
            cells = table.groupby(["epsilon", "mechanism"])[["mean_mse", "zero_mean_mse"]].mean()
            for e in small:
                m = cells.loc[e, "mean_mse"]
                zero = cells.loc[(e, "privkvm"), "zero_mean_mse"]
                print(
                    f"| {d} | {e:g} | {m['pckv-grr']:.3g} | {m['pckv-ue']:.3g} | {m['privkvm']:.3g} | {zero:.3g} | "
                    f"{m['pckv-grr'] / m['privkvm']:.2f} |"
                )
    print(f"\n({time.perf_counter() - start:.0f} s, seed {args.seed})")


if __name__ == "__main__":
    main()
