"""RAPPOR's secure batch over a sweep of (f, p, q): the current policy against a reference, one process.

For each (f, p, q) of ``--sweep`` (default: f ∈ {0, 1/4, 1/2, 3/4}, p ∈ {0,
1/4, 1/3, 1/2}, q ∈ {1/2, 3/4, 1}, the valid ones) the benchmark encodes
``--reports`` fresh clients (k = 128 bits, h = 2 hashes, 64 cohorts) with
:func:`ldp.client.secure_encode_batch` from the OS CSPRNG two ways, in
alternating runs (ABAB…, ``--pairs`` pairs):

- ``before``, by ``--against``: ``former``, the policy before the corrected
  coins, reproduced here: the true-coin sampler :func:`ldp.client.onehot.marked_coins`
  where the lanes would read at least 3 digits a coin and P[1|1] + P[1|0] = 1,
  or at least 5, else the bit-sliced lanes (:func:`ldp.client.batch.bernoulli_words`);
  ``main``, the corrected coins with their q-coins by :func:`ldp.client.onehot.plain_coins`
  (rows per report) from 3 lane digits (flipped) or 4, else the lanes; ``lanes``,
  the lanes for every triple;
- ``after``: the current policy (:func:`ldp.client.onehot.serves_marked_batch`:
  :func:`ldp.client.marked_correction.corrected_coins`, q-coins by
  :func:`ldp.client.plain_streams.stream_coins`, from 2 lane digits).

It prints each path, the bytes read per report ÷ the report's entropy (log2 m
for the cohort, h·h(P[1|1]) + (k − h)·h(P[1|0]); counted in one untimed run),
the CPU time (user + sys, ``time.process_time``) per report as the median of
the pairs, and the median of the pairs' after ÷ before ratios. The compiled
kernel serves both (its load is untimed). Run it on one core:
``OPENBLAS_NUM_THREADS=1`` is set before NumPy loads.

Usage::

    python benchmarks/bench_rappor_coins.py
    python benchmarks/bench_rappor_coins.py --sweep 1/2,1/2,3/4 --pairs 7
    python benchmarks/bench_rappor_coins.py --against main
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import math
import statistics
from collections.abc import Callable
from fractions import Fraction
from itertools import product

from harness import cpu_seconds

import ldp
import ldp.client.batch as batch
import ldp.client.onehot as onehot
from ldp.client import CountingSource, SystemRandomSource, marked_correction, secure_encode_batch
from ldp.client.marked_correction import corrected_coins
from ldp.errors import SpecError

SWEEP = [
    (f, p, q)
    for f, p, q in product(("0", "1/4", "1/2", "3/4"), ("0", "1/4", "1/3", "1/2"), ("1/2", "3/4", "1"))
]


def binary_entropy(x: Fraction) -> float:
    v = float(x)
    return 0.0 if v in (0.0, 1.0) else -v * math.log2(v) - (1 - v) * math.log2(1 - v)


def former_policy(spec: ldp.Rappor) -> Callable[..., bool]:
    """The policy before the corrected coins: true coins placed from 5 lane digits, flipped ones from 3."""
    least = 3 if spec.prob_one_given_one + spec.prob_one_given_zero == 1 else 5
    return _from_digits(least)


def main_policy(spec: ldp.Rappor) -> Callable[..., bool]:
    """The policy before the q-coins came from plain_streams: corrected coins from 3 lane digits (flipped), else 4."""
    return _from_digits(3 if spec.prob_one_given_one + spec.prob_one_given_zero == 1 else 4)


def lanes_only(spec: ldp.Rappor) -> Callable[..., bool]:
    """The bit-sliced lanes for every batch (``--against lanes``)."""
    return lambda n, lane_digits, coins=1024: False


def current_policy(spec: ldp.Rappor) -> Callable[..., bool]:
    """This checkout's policy (:func:`ldp.client.onehot.serves_marked_batch`)."""
    return onehot.serves_marked_batch


def _from_digits(least: float) -> Callable[..., bool]:
    """A policy of :func:`ldp.client.onehot.serves_marked_batch`'s signature: from ``least`` lane digits a coin."""

    def policy(n: int, lane_digits: float, coins: int = 1024) -> bool:
        return lane_digits >= least and onehot.serves_secure_batch(n, coins / onehot.KERNEL_AFTER_COINS)

    return policy


def main_corrected(source: object, marks: object, width: int, p: Fraction, q: Fraction) -> object:
    """:func:`corrected_coins` with its q-coins (and further coins) by :func:`ldp.client.onehot.plain_coins`, as
    before :mod:`ldp.client.plain_streams`."""
    streams = marked_correction._plain_coins

    def rows(source, n, width, q, backend, slack):  # type: ignore[no-untyped-def]
        return onehot.plain_coins(source, n, width, q, backend=backend, slack=slack)

    marked_correction._plain_coins = rows  # type: ignore[assignment]
    try:
        return corrected_coins(source, marks, width, p, q)  # type: ignore[arg-type]
    finally:
        marked_correction._plain_coins = streams  # type: ignore[assignment]


#: ``--against``: the reference (policy, sampler, name of its sampler).
REFERENCES = {
    "former": (former_policy, onehot.marked_coins, "marked"),
    "main": (main_policy, main_corrected, "corrected"),
    "lanes": (lanes_only, onehot.marked_coins, "marked"),
}


def using(policy: Callable[..., bool], sampler: Callable[..., object]) -> Callable[[], None]:
    """Install a (policy, sampler) pair in :mod:`ldp.client.batch` (a spec's policy)."""

    def install() -> None:
        batch.serves_marked_batch, batch.corrected_coins = policy, sampler  # type: ignore[assignment]

    return install


def path(spec: ldp.Rappor, reports: int, policy: Callable[..., bool], sampler_name: str) -> str:
    one, zero = spec.prob_one_given_one, spec.prob_one_given_zero
    served = policy(reports, batch.lane_digits(one, zero), spec.num_bits)
    return sampler_name if served else "lanes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=50_000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument(
        "--sweep", default="", help="f,p,q triples separated by ';' (default: the grid above)"
    )
    parser.add_argument(
        "--against",
        choices=sorted(REFERENCES),
        default="former",
        help="before: the former policy (true coins), main's (corrected coins by plain_coins), or the lanes",
    )
    args = parser.parse_args()
    sweep = [tuple(item.split(",")) for item in args.sweep.split(";") if item] or SWEEP
    onehot.KERNEL_AFTER = 0  # a long-running process: the kernel serves every large batch
    reference, sampler, sampler_name = REFERENCES[args.against]
    source = SystemRandomSource()
    print(
        f"secure RAPPOR batch, k = 128, h = 2, 64 cohorts, {args.reports:,} reports; CPU ns/report, medians of "
        f"{args.pairs} alternating pairs"
    )
    header = (
        f"{'f':>4} {'p':>4} {'q':>4} {'P[1|1]':>7} {'P[1|0]':>7} | {'before':>9} {'B÷H':>5} {'ns':>6} |"
        f" {'after':>9} {'B÷H':>5} {'ns':>6} | {'after÷before':>12}"
    )
    print(header)
    print("-" * len(header))
    for f, p, q in sweep:
        try:
            spec = ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f=f, p=p, q=q)
        except SpecError:
            continue  # no privacy (a certain bit) or p ≥ q
        before = using(reference(spec), sampler)
        after = using(current_policy(spec), corrected_coins)
        values = [f"u{i % 100}" for i in range(args.reports)]
        entropy = (
            math.log2(spec.num_cohorts)
            + 2 * binary_entropy(spec.prob_one_given_one)
            + (spec.num_bits - 2) * binary_entropy(spec.prob_one_given_zero)
        ) / 8
        ratios, secs = [], {"before": [], "after": []}
        read = {}
        for name, install in (("before", before), ("after", after)):
            install()
            counting = CountingSource()
            secure_encode_batch(spec, values, source=counting)  # untimed: the bytes read, and a warm-up
            read[name] = counting.bytes / args.reports / entropy
        for _ in range(args.pairs):
            pair = {}
            for name, install in (("before", before), ("after", after)):
                install()
                seconds = cpu_seconds(lambda: secure_encode_batch(spec, values, source=source))  # noqa: B023
                pair[name] = seconds / args.reports * 1e9
                secs[name].append(pair[name])
            ratios.append(pair["after"] / pair["before"])
        paths = (
            path(spec, args.reports, reference(spec), sampler_name),
            path(spec, args.reports, current_policy(spec), "corrected"),
        )
        print(
            f"{f:>4} {p:>4} {q:>4} {spec.prob_one_given_one!s:>7} {spec.prob_one_given_zero!s:>7} |"
            f" {paths[0]:>9} {read['before']:>5.2f} {statistics.median(secs['before']):>6.1f} |"
            f" {paths[1]:>9} {read['after']:>5.2f} {statistics.median(secs['after']):>6.1f} |"
            f" {statistics.median(ratios):>12.2f}"
        )
    using(onehot.serves_marked_batch, corrected_coins)()  # this checkout's pair, as before the run
    print(f"(load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
