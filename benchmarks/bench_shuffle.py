"""Time of ``ldp privacy shuffle``'s numerical bound against the same bound summed over every value of C.

For each population n and local ε₀, prints the central ε at δ = 1e-6 and the
seconds of one query (the numerical bound: Brent's method over δ(ε), runs of
C charged their smallest value beyond 2,048 values), next to the same-run
reference that sums the divergence over every single value of C (exact up to
float rounding, no runs), with the time ratio and the relative gap of the two
ε (the runs can only raise ε). Also the reverse query (ε₀ for a target ε).

Target: every query ≤ 2 s up to n = 10⁸.

Usage::

    python benchmarks/bench_shuffle.py
    python benchmarks/bench_shuffle.py --users 1000000 100000000 --epsilon0 1 4
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

from ldp.privacy import shuffle


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[10**4, 10**5, 10**6, 10**7, 10**8])
    parser.add_argument("--epsilon0", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument(
        "--reference-limit", type=int, default=10**7, help="largest n for the every-C reference"
    )
    args = parser.parse_args()
    print(f"delta = {args.delta:g}; one process, one thread")
    header = (
        f"{'n':>11} {'eps0':>5} {'central eps':>12} {'s':>7} {'every-C eps':>12} {'every-C s':>10}"
        f" {'speed-up':>9} {'eps gap':>9} {'reverse s':>10}"
    )
    print(header)
    for n in args.users:
        for eps0 in args.epsilon0:
            value, seconds = _timed(shuffle.numerical_epsilon, eps0, n, args.delta)
            if n <= args.reference_limit:
                with mock.patch.object(shuffle, "_MAX_RANGES", 10**12):
                    reference, reference_seconds = _timed(shuffle.numerical_epsilon, eps0, n, args.delta)
                ref_text = f"{reference:12.6g} {reference_seconds:10.3f} {reference_seconds / seconds:8.1f}x"
                gap = f"{(value - reference) / reference:9.1e}" if reference else f"{'-':>9}"
            else:
                ref_text, gap = f"{'-':>12} {'-':>10} {'-':>9}", f"{'-':>9}"
            _, reverse_seconds = _timed(shuffle.local_epsilon_for, value, n, args.delta)
            print(
                f"{n:>11,} {eps0:>5g} {value:12.6g} {seconds:7.3f} {ref_text} {gap} {reverse_seconds:10.3f}"
            )


if __name__ == "__main__":
    main()
