"""Longitudinal chains: empirical variance and interval coverage against the exact formulas (docs/longitudinal/chains.md).

For L-GRR and L-OSUE on the grid n = 10^5, k in {2, 16, 256}, eps_inf in {0.5, 1, 2, 4},
eps_1/eps_inf in {0.25, 0.5, 0.75}: R = 2,000 seeded rounds of a fixed population (Zipf(1.1)
counts), each round's support counts drawn from their exact law (``ldp.simulations.longitudinal``),
estimated by the accumulator's estimate table. Printed per grid point: the empirical variance of
the estimates over the exact fixed-data variance (mean over values; target 1 +- 0.05) and the
coverage of the 95 % intervals (target 95 +- 1.5 %).

    python benchmarks/bench_longitudinal.py [--runs 2000] [--n 100000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import norm

from ldp.chain_math import chain_variance
from ldp.frequency_math import frequency_variance, unbiased_frequency
from ldp.simulations.longitudinal import chain_support_counts
from ldp.specs.longitudinal import LGRR, LOSUE


def zipf_counts(n: int, k: int, s: float = 1.1) -> np.ndarray:
    weights = 1 / np.arange(1, k + 1) ** s
    counts = np.floor(n * weights / weights.sum()).astype(np.int64)
    counts[0] += n - counts.sum()
    return counts


def run(cls, k: int, eps_inf: float, share: float, n: int, runs: int, rng) -> tuple[float, float]:
    spec = cls(domain=range(k), epsilon=share * eps_inf, epsilon_inf=eps_inf)
    counts = zipf_counts(n, k)
    f = counts / n
    support = np.stack([chain_support_counts(spec, counts, rng) for _ in range(runs)])
    # the estimate table's rule (ldp.aggregator.estimates.oracle_estimates), vectorized over the runs:
    # f̂ = (C/n − q*)/(p* − q*), SE = √Var at clip(f̂, 0, 1), the 95 % normal interval
    estimates = unbiased_frequency(support, n, spec.p_star, spec.q_star)
    se = np.sqrt(frequency_variance(np.clip(estimates, 0.0, 1.0), n, spec.p_star, spec.q_star))
    z = norm.isf(0.025)
    covered = (np.abs(estimates - f) <= z * se).sum(axis=0)
    exact = chain_variance(f, n, *(float(x) for x in (spec.p1, spec.q1, spec.p2, spec.q2)))
    ratio = float(np.mean(estimates.var(axis=0, ddof=1) / exact))
    return ratio, float(covered.mean() / runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    rng = np.random.default_rng(26)  # insecure-ok: seeded simulation
    print("| chain | k | eps_inf | eps_1/eps_inf | var / exact | coverage |")
    print("|---|---|---|---|---|---|")
    start = time.perf_counter()
    worst_ratio, worst_cover = 0.0, 0.0
    for cls in (LGRR, LOSUE):
        for k in (2, 16, 256):
            for eps_inf in (0.5, 1.0, 2.0, 4.0):
                for share in (0.25, 0.5, 0.75):
                    ratio, cover = run(cls, k, eps_inf, share, args.n, args.runs, rng)
                    worst_ratio = max(worst_ratio, abs(ratio - 1))
                    worst_cover = max(worst_cover, abs(cover - 0.95))
                    print(
                        f"| {cls.mechanism} | {k} | {eps_inf:g} | {share:g} | {ratio:.4f} | {100 * cover:.2f} % |"
                    )
    print(
        f"\nlargest |var/exact - 1| = {worst_ratio:.4f}, largest |coverage - 95 %| = {100 * worst_cover:.2f} points "
        f"({time.perf_counter() - start:.0f} s)"
    )


if __name__ == "__main__":
    main()
