"""Side by side with the Python LDP libraries people use today: pure-ldp and multi-freq-ldpy.

Same machine, same run, same population: n users with values drawn from a
Zipf(1.1) distribution over d values, ε = 1. For each mechanism the time is
encode + estimate for all n users, and the error is the MSE of the count
estimates over the d values divided by the theoretical variance of an
unbiased estimate (docs/mechanisms.md#variance: n·[q*(1−q*)/(p*−q*)² + f(1−p*−q*)/(p*−q*)]
per value, averaged over the values), so a correct unbiased oracle shows
≈ 1 (within statistical noise: the MSE over d values of one run has a
relative standard deviation of roughly √(2/d)).

========  ===========================================  =========================================
row       ours (batch path)                            peers
========  ===========================================  =========================================
GRR       encode_batch → add_batch → estimate          pure-ldp DE, multi-freq-ldpy GRR
OUE, SUE  packed bits, byte-histogram bit counts        pure-ldp UE, multi-freq-ldpy UE
OLH       g = 4, support counts by vectorized hashing  pure-ldp LH (OLH), multi-freq-ldpy LH
RAPPOR    128 bits, 2 hashes, 64 cohorts, PRR only     pure-ldp RAPPOR (256 bits, 2 hashes,
          (q = 1, p = 0), ε∞ = 1; candidate decode     8 cohorts, PRR only, ε = 1); regression
          of all d values                              decode (LASSO selection when d > 1000)
========  ===========================================  =========================================

Our encode uses ``ldp.client.encode_batch`` with a seeded NumPy generator
(the simulation/server path, not the device client) and the estimate
``make_aggregator(spec).add_batch(batch).estimate()``. The peers encode one
user per Python call, as their APIs do. multi-freq-ldpy's estimator clips
negative frequencies and renormalizes (biased); the benchmark replaces that
last step with the plain inversion so every MSE is of an unbiased estimate
(its timing is unchanged: the counting loop is theirs). For RAPPOR the "theory" column is
the mean squared standard error our decode reports (the decode selects
candidates, so its error is not the oracle formula); the peer's RAPPOR MSE is
divided by the same figure.

The peers are slow (exact OLH decoding hashes every report d times), so
``--peer-cap N`` runs a peer on at most N users for the mechanisms in
``--cap-mechanisms`` and extrapolates its time linearly to n users; such
cells are marked ``~`` and their MSE/theory is that of the capped run.

Times are wall clock (time.perf_counter), ours the median of ``--repeats``
runs, peers one run each unless ``--peer-repeats`` says otherwise. The
machine may be shared: re-run rows that matter. BLAS runs single-threaded
for everyone by default (``--blas-threads``, via threadpoolctl): on a busy
2-core machine multithreaded OpenBLAS is 20–50× slower on the 1,024 × 1,024
factorizations of the RAPPOR decodes (ours and pure-ldp's regression).

Install the peers with ``pip install -e ".[bench]"`` (this script installs
nothing). Import names: ``pure_ldp``, ``multi_freq_ldpy``.

Usage::

    python benchmarks/bench_peers.py                                   # d = 100, 1024; n = 100k, 1M
    python benchmarks/bench_peers.py --domains 1024 --users 1000000 --peer-cap 20000
    python benchmarks/bench_peers.py --mechanisms grr oue --peers pure-ldp --users 100000
"""

from __future__ import annotations

import argparse
import contextlib
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

import ldp
from ldp.aggregator import make_aggregator
from ldp.client import encode_batch

EPSILON = 1.0
MECHANISMS = ("grr", "oue", "sue", "olh", "rappor")
PEERS = ("pure-ldp", "multi-freq-ldpy")
#: Targets at n = 1,000,000, d = 1,024, ε = 1 (seconds, ours).
TARGETS = {"grr": 0.25, "oue": 1.6, "sue": 1.6, "olh": 10.0, "rappor": 3.0}
RAPPOR_HASHES = 2


def population(n: int, d: int, seed: int) -> np.ndarray:
    """Value indices 0 … d−1 of n users, Zipf(1.1) over the d values."""
    weights = 1.0 / np.arange(1, d + 1) ** 1.1
    rng = np.random.default_rng([seed, 0])  # its own stream: never the encoder's
    return rng.choice(d, size=n, p=weights / weights.sum())


def rappor_f(epsilon: float, hashes: int) -> Fraction:
    """PRR-only RAPPOR: the f with 2h·ln((1 − f/2)/(f/2)) ≤ ε."""
    f = 2 / (1 + math.exp(epsilon / (2 * hashes)))
    return Fraction(f).limit_denominator(10**6) + Fraction(1, 10**6)


def our_spec(mechanism: str, d: int):
    domain = [f"v{i}" for i in range(d)]
    if mechanism == "grr":
        return ldp.GRR(domain=domain, epsilon=EPSILON)
    if mechanism == "oue":
        return ldp.OUE(domain=domain, epsilon=EPSILON)
    if mechanism == "sue":
        return ldp.SUE(domain=domain, epsilon=EPSILON)
    if mechanism == "olh":
        return ldp.OLH(domain=domain, epsilon=EPSILON)
    return ldp.Rappor(
        num_bits=128, num_hashes=RAPPOR_HASHES, num_cohorts=64, f=rappor_f(EPSILON, RAPPOR_HASHES), p=0, q=1
    )


def oracle_theory(spec, true_counts: np.ndarray) -> float:
    """Mean over values of the variance of an unbiased count estimate."""
    n = int(true_counts.sum())
    return float(np.mean(spec.variance(true_counts / n, n) * n * n))


# -- ours ----------------------------------------------------------------------------


def run_ours(mechanism: str, d: int, values: np.ndarray, seed: int) -> tuple[float, np.ndarray, float]:
    """(seconds, estimated counts, theory) of one encode + estimate through the batch path."""
    spec = our_spec(mechanism, d)
    rng = np.random.default_rng([seed, 1])
    true_counts = np.bincount(values, minlength=d)
    if mechanism == "rappor":
        names = [f"v{i}" for i in range(d)]
        start = time.perf_counter()
        batch = encode_batch(spec, [names[i] for i in values.tolist()], rng)
        accumulator = make_aggregator(spec)
        accumulator.add_batch(batch)
        table = accumulator.estimate(candidates=names)
        seconds = time.perf_counter() - start
        table = table.set_index("value").reindex(names)
        estimate = table["estimate"].fillna(0).to_numpy(dtype=float)
        theory = float(np.mean(table["std_error"].fillna(0).to_numpy(dtype=float) ** 2))
        return seconds, estimate, theory
    start = time.perf_counter()
    batch = encode_batch(spec, values, rng, indices=True)
    accumulator = make_aggregator(spec)
    accumulator.add_batch(batch)
    table = accumulator.estimate()
    seconds = time.perf_counter() - start
    return seconds, table["estimate"].to_numpy(dtype=float), oracle_theory(spec, true_counts)


# -- peers ---------------------------------------------------------------------------


def _pure_ldp(mechanism: str, d: int, values: list[int]) -> np.ndarray | None:
    from pure_ldp.frequency_oracles import (
        DEClient,
        DEServer,
        LHClient,
        LHServer,
        RAPPORClient,
        RAPPORServer,
        UEClient,
        UEServer,
    )

    if mechanism == "grr":
        client, server = DEClient(EPSILON, d), DEServer(EPSILON, d)
    elif mechanism in ("oue", "sue"):
        oue = mechanism == "oue"
        client, server = UEClient(EPSILON, d, use_oue=oue), UEServer(EPSILON, d, use_oue=oue)
    elif mechanism == "olh":
        client, server = LHClient(EPSILON, d, use_olh=True), LHServer(EPSILON, d, use_olh=True)
    else:
        f = float(rappor_f(EPSILON, RAPPOR_HASHES))
        server = RAPPORServer(f, 256, RAPPOR_HASHES, d, num_of_cohorts=8)
        client = RAPPORClient(f, 256, server.get_hash_funcs(), num_of_cohorts=8)
    for v in values:  # pure-ldp's default index mapper takes values 1 … d
        server.aggregate(client.privatise(v + 1))
    return np.array([server.estimate(v + 1, suppress_warnings=True) for v in range(d)], dtype=float)


def _unbiased_mi(count_report, n, p, q):
    """multi-freq-ldpy's matrix inversion without its clip-and-renormalize step (unbiased)."""
    return (np.asarray(count_report, dtype=float) - n * q) / (p - q) / n


def _multi_freq_ldpy(mechanism: str, d: int, values: list[int]) -> np.ndarray | None:
    from multi_freq_ldpy.pure_frequency_oracles import GRR, LH, UE

    for module in (GRR, UE, LH):  # same counts, same arithmetic; only the biased post-processing is dropped
        module.MI = _unbiased_mi
    n = len(values)
    if mechanism == "grr":
        reports = [GRR.GRR_Client(v, d, EPSILON) for v in values]
        freq = GRR.GRR_Aggregator_MI(reports, d, EPSILON)
    elif mechanism in ("oue", "sue"):
        optimal = mechanism == "oue"
        reports = [UE.UE_Client(v, d, EPSILON, optimal) for v in values]
        freq = UE.UE_Aggregator_MI(reports, EPSILON, optimal)
    elif mechanism == "olh":
        reports = [LH.LH_Client(v, d, EPSILON, True) for v in values]
        freq = LH.LH_Aggregator_MI(reports, d, EPSILON, True)
    else:
        return None
    return np.asarray(freq, dtype=float) * n  # normalized frequencies → counts


PEER_MODULES = {
    "pure-ldp": "pure_ldp.frequency_oracles",
    "multi-freq-ldpy": "multi_freq_ldpy.pure_frequency_oracles",
}
PEER_RUNNERS: dict[str, Callable[[str, int, list[int]], np.ndarray | None]] = {
    "pure-ldp": _pure_ldp,
    "multi-freq-ldpy": _multi_freq_ldpy,
}


def run_peer(peer: str, mechanism: str, d: int, values: np.ndarray, cap: int | None, seed: int):
    """(seconds for all n users, MSE, theory, extrapolated?) or None when the peer lacks the mechanism.

    The theory of RAPPOR is NaN here: the caller divides by our decode's figure.
    """
    n = values.size
    used = values if cap is None or cap >= n else values[:cap]
    # warm up: lazy imports, numba compilation; pure-ldp's RAPPOR regression fails on so few users
    # (no feature selected)
    with contextlib.suppress(ValueError):
        PEER_RUNNERS[peer](mechanism, d, used[:200].tolist())
    np.random.seed(seed)  # the peers draw from the global generators
    random.seed(seed)
    start = time.perf_counter()
    estimate = PEER_RUNNERS[peer](mechanism, d, used.tolist())
    seconds = time.perf_counter() - start
    if estimate is None:
        return None
    true_counts = np.bincount(used, minlength=d)
    mse = float(np.mean((estimate - true_counts) ** 2))
    theory = float("nan") if mechanism == "rappor" else oracle_theory(our_spec(mechanism, d), true_counts)
    return seconds * n / used.size, mse, theory, used.size < n


# -- table ---------------------------------------------------------------------------


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    parser.add_argument("--domains", nargs="+", type=int, default=[100, 1024])
    parser.add_argument("--users", nargs="+", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--peers", nargs="*", choices=PEERS, default=list(PEERS))
    parser.add_argument(
        "--peer-cap",
        type=int,
        default=None,
        help="run peers on at most this many users (see --cap-mechanisms)",
    )
    parser.add_argument("--cap-mechanisms", nargs="+", choices=MECHANISMS, default=["olh"])
    parser.add_argument("--repeats", type=int, default=3, help="our runs per row (median)")
    parser.add_argument("--peer-repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads for everyone (0: library default)"
    )
    args = parser.parse_args(argv)
    if args.blas_threads:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=args.blas_threads):
            return _run(args)
    return _run(args)


def _run(args) -> None:

    for peer in args.peers:  # import (pure-ldp pulls in scikit-learn and statsmodels) before any timing
        __import__(PEER_MODULES[peer])
    blas = args.blas_threads or "library default"
    print(
        f"ε = {EPSILON}, Zipf(1.1) population; Python {sys.version.split()[0]}, NumPy {np.__version__}; BLAS threads: {blas}"
    )
    header = f"{'mechanism':<9} {'d':>5} {'users':>9} {'ours s':>8} {'MSE/th':>7}"
    for peer in args.peers:
        header += f" | {peer + ' s':>18} {'MSE/th':>7} {'ratio':>8}"
    print(header)
    print("-" * len(header))
    for d in args.domains:
        for n in args.users:
            values = population(n, d, args.seed)
            true_counts = np.bincount(values, minlength=d)
            for mechanism in args.mechanisms:
                runs = [run_ours(mechanism, d, values, args.seed + r) for r in range(args.repeats)]
                seconds = statistics.median(r[0] for r in runs)
                _, estimate, theory = runs[0]
                ratio_ours = float(np.mean((estimate - true_counts) ** 2)) / theory
                line = f"{mechanism.upper():<9} {d:>5} {n:>9,} {seconds:>8.3f} {ratio_ours:>7.2f}"
                for peer in args.peers:
                    cap = args.peer_cap if mechanism in args.cap_mechanisms else None
                    results = [
                        run_peer(peer, mechanism, d, values, cap, args.seed + r)
                        for r in range(args.peer_repeats)
                    ]
                    if results[0] is None:
                        line += f" | {'–':>18} {'':>7} {'':>8}"
                        continue
                    peer_seconds = statistics.median(r[0] for r in results)
                    _, mse, peer_theory, extrapolated = results[0]
                    peer_ratio = mse / (theory if math.isnan(peer_theory) else peer_theory)
                    mark = "~" if extrapolated else ""
                    line += f" | {mark + format(peer_seconds, '.2f'):>18} {peer_ratio:>7.2f} {peer_seconds / seconds:>7.0f}×"
                print(line, flush=True)
    print(
        "\nMSE/th: MSE of the count estimates over the d values ÷ theoretical variance (≈ 1 for an unbiased oracle)."
    )
    print(
        "ratio: peer seconds ÷ ours. ~: peer run on --peer-cap users, time extrapolated linearly to all users."
    )
    print(
        "multi-freq-ldpy's estimator clips and renormalizes; it is run with the plain (unbiased) inversion instead."
    )
    print(
        "RAPPOR MSE/th: ÷ the mean squared standard error of our candidate decode (same figure for the peer)."
    )


if __name__ == "__main__":
    main()
