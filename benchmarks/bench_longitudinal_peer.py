"""Longitudinal chains beside multi-freq-ldpy 0.2.5's (L-GRR, L-OSUE): time per round and MSE, same run.

One round of n users (default 10⁶), Zipf(1.1) values over k, per configuration
(k, ε∞, ε₁ = ratio·ε∞):

- ours: the registry's batch encoder with a seeded generator
  (:func:`ldp.client.encode_batch`, one new client per user: its memo and
  its fresh round drawn together as one exact draw of the composite
  channel), then ``make_aggregator(spec).add_batch`` and ``estimate()``;
- theirs: ``L_GRR_Client`` / ``L_OSUE_Client`` once per user (they draw
  the "permanent" round afresh on every call, which for one round of new
  users is the same law) and ``L_GRR_Aggregator_MI`` /
  ``L_OSUE_Aggregator_MI``; their numba generator is seeded.

Timed: encode + aggregate + estimate of one round, in CPU seconds of this
process (time.process_time: both sides run on one thread, and on a shared
machine CPU time moves far less with the load than wall time does).

MSE, like with like: their aggregator clips negative estimates to 0 and
renormalizes to sum 1; ours is unbiased by default. So the table gives
(a) theirs against our estimate with ``consistency="norm-mul"`` (the same
post-processing: clip, then scale to sum 1), and (b) both unbiased: ours
as is, theirs by their own unbiased formula (MI_long without the clip,
i.e. (C_v/n − q₁(p₂ − q₂) − q₂)/((p₁ − q₁)(p₂ − q₂)) on their reports'
counts, computed here). ``theory`` is Σ_v Var f̂_v of each side's own
probabilities (fixed data), so MSE/theory is about 1 for an unbiased
estimator; with R rounds its relative noise is about √(2/(R·k)).

Their L-GRR p₂ solves A/B = e^ε₁ with B = p₁q₂ + q₁p₂, the chance that a
report names v when x ≠ v only for k = 2 (for k > 2 it is
q₁p₂ + (1 − q₁)q₂). So for k > 2 their chain is not calibrated to the ε₁ it
is given: the script prints their p₂ beside ours, the ε₁ their
probabilities really give (ln A/B) and the variance that costs.

Usage::

    python benchmarks/bench_longitudinal_peer.py                 # n = 10⁶, k ∈ {2, 16, 256}, ε∞ ∈ {1, 4}, ratio 0.5
    python benchmarks/bench_longitudinal_peer.py --users 100000 --rounds 3
    python benchmarks/bench_longitudinal_peer.py --mechanisms l-grr --domains 16 256 --epsilon-inf 0.5 1 2 4

Needs ``pip install multi-freq-ldpy==0.2.5`` (the ``bench`` extra); it pulls numba.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import math
import time
from dataclasses import dataclass

import numpy as np

from ldp.aggregator import make_aggregator
from ldp.chain_math import chain_support, chain_variance
from ldp.client import encode_batch
from ldp.specs import spec_class

MECHANISMS = ("l-grr", "l-osue")


def zipf_values(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    weights = 1.0 / np.arange(1, k + 1) ** 1.1
    return rng.choice(k, size=n, p=weights / weights.sum())


# -- theirs --------------------------------------------------------------------


def peer_probabilities(
    mechanism: str, k: int, eps_inf: float, eps1: float
) -> tuple[float, float, float, float]:
    """p₁, q₁, p₂, q₂ exactly as multi-freq-ldpy 0.2.5 computes them (long_freq_est/L_GRR.py, L_OSUE.py)."""
    if mechanism == "l-grr":
        p1 = math.exp(eps_inf) / (math.exp(eps_inf) + k - 1)
        q1 = (1 - p1) / (k - 1)
        e1 = math.exp(eps1)
        p2 = (q1 - e1 * p1) / ((-p1 * e1) + k * q1 * e1 - q1 * e1 - p1 * (k - 1) + q1)
        return p1, q1, p2, (1 - p2) / (k - 1)
    p1, q1 = 0.5, 1 / (math.exp(eps_inf) + 1)
    p2 = (1 - math.exp(eps1 + eps_inf)) / (math.exp(eps1) - math.exp(eps_inf) - math.exp(eps1 + eps_inf) + 1)
    return p1, q1, p2, 1 - p2


def seed_peer(seed: int) -> None:
    """Seed numba's generator (their clients draw with numba's np.random) and NumPy's global one."""
    from numba import njit

    @njit
    def _seed(value: int) -> None:
        np.random.seed(value)

    _seed(seed)
    np.random.seed(seed)


def run_peer(mechanism: str, values: np.ndarray, k: int, eps_inf: float, eps1: float):
    """Their one round: reports, then their estimate (clipped, renormalized); also the counts for the unbiased one."""
    if mechanism == "l-grr":
        from multi_freq_ldpy.long_freq_est.L_GRR import L_GRR_Aggregator_MI, L_GRR_Client

        start = time.process_time()
        reports = [L_GRR_Client(int(x), k, eps_inf, eps1) for x in values]
        estimate = L_GRR_Aggregator_MI(reports, k, eps_inf, eps1)
        seconds = time.process_time() - start
        counts = np.bincount(np.asarray(reports, dtype=np.int64), minlength=k)
    else:
        from multi_freq_ldpy.long_freq_est.L_OSUE import L_OSUE_Aggregator_MI, L_OSUE_Client

        start = time.process_time()
        reports = [L_OSUE_Client(int(x), k, eps_inf, eps1) for x in values]
        estimate = L_OSUE_Aggregator_MI(reports, eps_inf, eps1)
        seconds = time.process_time() - start
        counts = np.sum(reports, axis=0)
    return seconds, np.asarray(estimate, dtype=float), counts


def warm_peer(mechanism: str, k: int, eps_inf: float, eps1: float) -> None:
    """Compile their numba functions outside the timing."""
    run_peer(mechanism, np.zeros(4, dtype=np.int64), k, eps_inf, eps1)


# -- ours ----------------------------------------------------------------------


def run_ours(spec, values: np.ndarray, rng: np.random.Generator):
    start = time.process_time()
    acc = make_aggregator(spec)
    acc.add_batch(encode_batch(spec, values, rng, indices=True))
    table = acc.estimate()
    seconds = time.process_time() - start
    unbiased = table["proportion"].to_numpy()
    normalized = acc.estimate(consistency="norm-mul")["proportion"].to_numpy()
    return seconds, unbiased, normalized


@dataclass
class Row:
    mechanism: str
    k: int
    eps_inf: float
    eps1: float
    ours_s: float
    theirs_s: float
    mse_ours_nm: float
    mse_theirs_nm: float
    mse_ours_u: float
    mse_theirs_u: float
    theory_ours: float
    theory_theirs: float
    their_p2: float
    our_p2: float
    their_eps1: float


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    parser.add_argument("--domains", nargs="+", type=int, default=[2, 16, 256])
    parser.add_argument("--epsilon-inf", nargs="+", type=float, default=[1.0, 4.0])
    parser.add_argument("--ratios", nargs="+", type=float, default=[0.5])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1, help="rounds per configuration (times: the median)")
    parser.add_argument("--seed", type=int, default=20261127)
    args = parser.parse_args(argv)
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("multi-freq-ldpy")
    except PackageNotFoundError:
        print("multi-freq-ldpy is not installed: pip install multi-freq-ldpy==0.2.5 (it pulls numba)")
        return 2

    print(
        f"multi-freq-ldpy {version('multi-freq-ldpy')}, numba {version('numba')}; n = {args.users:,}, "
        f"{args.rounds} round(s) per configuration, Zipf(1.1), seed {args.seed}"
    )
    rng = np.random.default_rng(args.seed)
    seed_peer(args.seed)
    rows: list[Row] = []
    for mechanism in args.mechanisms:
        for k in args.domains:
            for eps_inf in args.epsilon_inf:
                for ratio in args.ratios:
                    eps1 = ratio * eps_inf
                    spec = spec_class(mechanism)(domain=list(range(k)), epsilon=eps1, epsilon_inf=eps_inf)
                    their = peer_probabilities(mechanism, k, eps_inf, eps1)
                    a, b = chain_support(*their)
                    warm_peer(mechanism, k, eps_inf, eps1)
                    run_ours(spec, np.zeros(4, dtype=np.int64), rng)  # imports and caches, outside the timing
                    times_ours, times_theirs = [], []
                    sq = np.zeros(4)
                    theory = np.zeros(2)  # Σ_v Var f̂_v of each side at the round's histogram
                    for _ in range(args.rounds):
                        values = zipf_values(args.users, k, rng)
                        truth = np.bincount(values, minlength=k) / args.users
                        t_ours, unbiased, normalized = run_ours(spec, values, rng)
                        t_theirs, their_nm, counts = run_peer(mechanism, values, k, eps_inf, eps1)
                        their_u = (counts / args.users - b) / (a - b)
                        times_ours.append(t_ours)
                        times_theirs.append(t_theirs)
                        for i, est in enumerate((normalized, their_nm, unbiased, their_u)):
                            sq[i] += float(np.sum((est - truth) ** 2))
                        theory += [
                            float(np.sum(spec.variance(truth, args.users))),
                            float(np.sum(chain_variance(truth, args.users, *their))),
                        ]
                    sq /= args.rounds
                    theory /= args.rounds
                    row = Row(
                        mechanism,
                        k,
                        eps_inf,
                        eps1,
                        float(np.median(times_ours)),
                        float(np.median(times_theirs)),
                        *sq.tolist(),
                        *theory.tolist(),
                        their[2],
                        float(spec.p2),
                        math.log(a / b),
                    )
                    rows.append(row)
                    print(
                        f"{mechanism} k={k} eps_inf={eps_inf:g} eps1={eps1:g}: ours {row.ours_s:.3f} s, "
                        f"theirs {row.theirs_s:.1f} s ({row.theirs_s / row.ours_s:.0f}x)",
                        flush=True,
                    )
    print()
    header = (
        f"{'mechanism':<8} {'k':>4} {'eps_inf':>7} {'eps1':>5} {'ours s':>7} {'theirs s':>8} {'speed-up':>8} "
        f"{'MSE/th ours':>11} {'theirs':>7} {'MSE nm ours/theirs':>18} {'th theirs/ours':>14}"
    )
    print("CPU s per round (encode + aggregate + estimate) and MSE summed over the k values")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.mechanism:<8} {r.k:>4} {r.eps_inf:>7g} {r.eps1:>5g} {r.ours_s:>7.3f} {r.theirs_s:>8.2f} "
            f"{r.theirs_s / r.ours_s:>7.0f}x {r.mse_ours_u / r.theory_ours:>11.3f} "
            f"{r.mse_theirs_u / r.theory_theirs:>7.3f} {r.mse_ours_nm / r.mse_theirs_nm:>18.3f} "
            f"{r.theory_theirs / r.theory_ours:>14.3f}"
        )
    grr = [r for r in rows if r.mechanism == "l-grr"]
    if grr:
        print()
        print("L-GRR calibration: their p2 solves A/B = e^eps1 with B = p1*q2 + q1*p2 (exact for k = 2 only)")
        print(
            f"{'k':>4} {'eps_inf':>7} {'eps1':>5} {'our p2':>10} {'their p2':>10} {'their real eps1':>15} {'their Var/ours':>14}"
        )
        for r in grr:
            print(
                f"{r.k:>4} {r.eps_inf:>7g} {r.eps1:>5g} {r.our_p2:>10.6f} {r.their_p2:>10.6f} "
                f"{r.their_eps1:>15.4f} {r.theory_theirs / r.theory_ours:>14.3f}"
            )
    speedups = [r.theirs_s / r.ours_s for r in rows]
    if rows:
        print()
        print(
            f"speed-up {min(speedups):.0f}x-{max(speedups):.0f}x (target >= 10x: "
            f"{sum(s >= 10 for s in speedups)}/{len(rows)} configurations)"
        )
        print(
            "MSE/theory ≈ 1 on both sides means each estimator matches its own variance; noise of one row's "
            f"ratio ≈ sqrt(2/(rounds*k)) (k = 2, {args.rounds} round(s): {math.sqrt(2 / (args.rounds * 2)):.0%})"
        )
        noise = math.sqrt(sum(2 / (args.rounds * r.k) for r in rows)) / len(rows)
        ours = np.mean([r.mse_ours_u / r.theory_ours for r in rows])
        theirs = np.mean([r.mse_theirs_u / r.theory_theirs for r in rows])
        print(
            f"unbiased MSE/theory, mean over the {len(rows)} rows: ours {ours:.3f}, theirs {theirs:.3f} "
            f"(each ± {noise:.3f}, one SE)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
