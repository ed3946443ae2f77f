"""One-hot secure batch: the blocks-or-runs policy against the former one, and where the kernel's time goes.

For each unary mechanism (OUE, SUE, CMS, l-oue, l-sue, l-osue), each ε of
``--epsilons`` and each d of ``--domains`` the benchmark encodes ``--coins`` ÷ d
reports (d coins each; CMS has its own m) with
:func:`ldp.client.secure_encode_batch` from the OS CSPRNG, the compiled kernel
of :mod:`ldp.client.onehot` serving every batch (its load is untimed), two
ways in alternating runs (ABAB…, ``--pairs`` pairs):

- ``before``: an earlier policy, reproduced here: runs wherever they read
  fewer digits per coin than blocks (:func:`fewer_digits`);
- ``after``: the current one (:func:`ldp.client.onehot.draws_runs`, one rule
  for every caller: blocks unless they read more than ``BLOCKS_ENTROPY`` × h(q)).

It prints each one's draw (blocks or runs), bytes read per report ÷ the
report's entropy (:func:`bench_entropy.entropy_bits`, counted in one untimed
run), the CPU time (user + sys, ``time.process_time``) per report, its ratio
to the CPU time ``os.urandom`` takes for the same bytes (timed in the same
pairs), all medians of the pairs, and the median of the pairs' after ÷ before.

``--breakdown`` prints instead, for the current policy, where one batch's CPU
time goes: the kernel's passes (:func:`ldp.client.onehot_kernel.run_kernel`),
the rest of :func:`~ldp.client.onehot.one_hot_coins` (tables, rows, the
CSPRNG words, refills: NumPy), and the rest of the encoder, each per coin and
÷ ``os.urandom`` of the batch's bytes; and the kernel alone by blocks and by
runs at each q (ns per coin), the policy's ground. Run it on one core:
``OPENBLAS_NUM_THREADS=1`` is set before NumPy loads.

Usage::

    python benchmarks/bench_onehot_coins.py
    python benchmarks/bench_onehot_coins.py --domains 64,1024,16384 --pairs 3
    python benchmarks/bench_onehot_coins.py --breakdown
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import statistics
import time
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
from bench_entropy import build_spec, entropy_bits, inputs
from harness import cpu_seconds

import ldp.client.onehot as onehot
from ldp.client import CountingSource, SystemRandomSource, secure_encode_batch
from ldp.registry import declarations

MECHANISMS = ("oue", "sue", "cms", "l-oue", "l-sue", "l-osue")
CURRENT = onehot.draws_runs


def fewer_digits(q: Fraction) -> bool:
    """The earlier policy: runs wherever they read fewer digits per coin than blocks of 8."""
    blocks, runs = onehot._digits_per_coin(Fraction(q))
    return runs < blocks


def coin_probabilities(spec: Any) -> tuple[Fraction, Fraction]:
    """(p, q) of the spec's one-hot coins."""
    return tuple(spec.support) if hasattr(spec, "support") else (spec.p, spec.q)  # type: ignore[return-value]


def drawn_by(q: Fraction, policy: Callable[[Fraction], bool]) -> str:
    return "runs" if policy(q) else "blocks"


def setting(name: str, domain: int, epsilon: float, coins: int) -> tuple[Any, Any, bool, int]:
    """(spec, values, indices, reports) of ``coins`` ÷ the report's coins reports."""
    decl = next(decl for decl in declarations() if decl.name == name)
    spec = build_spec(decl, domain, epsilon)
    width = spec.m if name == "cms" else domain
    reports = max(onehot.NUMBA_THRESHOLD, coins // width)
    values, indices = inputs(spec, reports)
    return spec, values, indices, reports


def compare(args: argparse.Namespace) -> None:
    source = SystemRandomSource()
    print(
        f"secure one-hot batches, ~{args.coins:,} coins each, kernel; CPU ns/report and ÷ urandom CPU of the same "
        f"bytes, medians of {args.pairs} alternating pairs (before: runs wherever fewer digits; after: blocks up "
        f"to {onehot.BLOCKS_ENTROPY}× h(q))"
    )
    header = (
        f"{'mechanism':<8} {'d':>6} {'ε':>4} {'q':>7} | {'before':>6} {'B÷H':>5} {'ns':>8} {'÷ur':>5} |"
        f" {'after':>6} {'B÷H':>5} {'ns':>8} {'÷ur':>5} | {'after÷before':>12}"
    )
    print(header)
    print("-" * len(header))
    for domain in args.domains:
        for epsilon in args.epsilons:
            for name in args.only:
                spec, values, indices, reports = setting(name, domain, epsilon, args.coins)
                q = coin_probabilities(spec)[1]
                entropy = entropy_bits(spec, values) / 8
                policies = {"before": fewer_digits, "after": CURRENT}
                read, secs, urandom, ratios = {}, {"before": [], "after": []}, {"before": [], "after": []}, []
                for label, policy in policies.items():
                    onehot.draws_runs = policy
                    counting = CountingSource()
                    secure_encode_batch(
                        spec, values, indices=indices, source=counting
                    )  # untimed: bytes, warm-up
                    read[label] = counting.bytes
                for _ in range(args.pairs):
                    pair = {}
                    for label, policy in policies.items():
                        onehot.draws_runs = policy
                        pair[label] = cpu_seconds(
                            partial(secure_encode_batch, spec, values, indices=indices, source=source)
                        )
                        secs[label].append(pair[label])
                        urandom[label].append(cpu_seconds(lambda: os.urandom(read[label])))  # noqa: B023
                    ratios.append(pair["after"] / pair["before"])
                onehot.draws_runs = CURRENT
                cells = []
                for label, policy in policies.items():
                    t, u = statistics.median(secs[label]), statistics.median(urandom[label])
                    cells.append(
                        f" {drawn_by(q, policy):>6} {read[label] / reports / entropy:>5.2f}"
                        f" {t / reports * 1e9:>8.0f} {t / u:>5.2f} "
                    )
                print(
                    f"{name:<8} {domain:>6} {epsilon:>4} {float(q):>7.4f} |{cells[0]}|{cells[1]}|"
                    f" {statistics.median(ratios):>12.2f}"
                )
    print(f"(load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")


class TimedSource(CountingSource):
    """The OS CSPRNG, adding up the CPU time of its reads."""

    def __init__(self) -> None:
        super().__init__(SystemRandomSource())
        self.seconds = 0.0

    def words(self, n: int) -> np.ndarray:
        start = time.process_time()
        out = super().words(n)
        self.seconds += time.process_time() - start
        return out


class Clock:
    """Wraps a function (the kernel's passes, one_hot_coins), adding up the CPU time of its calls."""

    def __init__(self, function: Any):
        self.function, self.seconds = function, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        out = self.function(*args, **kwargs)
        self.seconds += time.process_time() - start
        return out


def breakdown(args: argparse.Namespace) -> None:
    import ldp.client.batch as batch

    print(
        f"where a secure one-hot batch's CPU goes (current policy, ~{args.coins:,} coins a batch, medians of "
        f"{args.pairs}): ns per coin, ÷ur: over os.urandom's CPU for the batch's bytes; kernel: its passes; CSPRNG: "
        "the words read; NumPy: the rest of one_hot_coins; encoder: the rest"
    )
    header = (
        f"{'mechanism':<8} {'d':>6} {'ε':>4} {'draw':>6} | {'kernel':>7} {'÷ur':>5} | {'CSPRNG':>7} {'÷ur':>5} |"
        f" {'NumPy':>7} {'÷ur':>5} |"
        f" {'encoder':>7} {'÷ur':>5} | {'total':>7} {'÷ur':>5} | {'urandom':>7}"
    )
    print(header)
    print("-" * len(header))
    onehot._backend("numba", onehot.NUMBA_THRESHOLD)  # loaded, untimed
    kernel = onehot._KERNEL[0]
    original = batch.one_hot_coins
    for domain in args.domains:
        for epsilon in args.epsilons:
            for name in args.only:
                spec, values, indices, reports = setting(name, domain, epsilon, args.coins)
                q = coin_probabilities(spec)[1]
                width = spec.m if name == "cms" else domain
                counting = CountingSource()
                secure_encode_batch(spec, values, indices=indices, source=counting)  # untimed
                rows: dict[str, list[float]] = {
                    key: [] for key in ("kernel", "csprng", "numpy", "encoder", "total", "ur")
                }
                for _ in range(args.pairs):
                    clock, sampler, source = Clock(kernel), Clock(original), TimedSource()
                    onehot._KERNEL[0], batch.one_hot_coins = clock, sampler
                    try:
                        total = cpu_seconds(
                            partial(secure_encode_batch, spec, values, indices=indices, source=source)
                        )
                    finally:
                        onehot._KERNEL[0], batch.one_hot_coins = kernel, original
                    rows["kernel"].append(clock.seconds)
                    rows["csprng"].append(source.seconds)
                    rows["numpy"].append(sampler.seconds - clock.seconds - source.seconds)
                    rows["encoder"].append(total - sampler.seconds)
                    rows["total"].append(total)
                    rows["ur"].append(cpu_seconds(lambda: os.urandom(counting.bytes)))  # noqa: B023
                med = {key: statistics.median(value) for key, value in rows.items()}
                per = 1e9 / (reports * width)
                print(
                    f"{name:<8} {domain:>6} {epsilon:>4} {drawn_by(q, CURRENT):>6} |"
                    + "|".join(
                        f" {med[key] * per:>7.3f} {med[key] / med['ur']:>5.2f} "
                        for key in rows
                        if key != "ur"
                    )
                    + f"| {med['ur'] * per:>7.3f}"
                )
    print()
    print(
        "the kernel alone (one_hot_coins, d = 1,024), ns per coin by blocks and by runs, median of the pairs"
    )
    print(
        f"{'q':>8} {'blocks':>7} {'runs':>7} {'runs÷blocks':>11} | digits÷h(q): {'blocks':>6} {'runs':>6} | drawn by"
    )
    d, n = 1024, max(onehot.NUMBA_THRESHOLD, args.coins // 1024)
    idx = np.arange(n, dtype=np.int64) % d
    source = SystemRandomSource()
    for q in (
        Fraction(3, 8),
        Fraction(1, 4),
        Fraction(1, 8),
        Fraction(1, 16),
        Fraction(1, 24),
        Fraction(1, 32),
        Fraction(1, 64),
        Fraction(1, 128),
        Fraction(1, 256),
    ):
        secs: dict[bool, list[float]] = {False: [], True: []}
        for pair in range(args.pairs + 1):  # the first, untimed: the tables are built
            for runs in (False, True):
                onehot.draws_runs = lambda _q, runs=runs: runs  # type: ignore[misc]
                try:
                    seconds = cpu_seconds(lambda: onehot.one_hot_coins(source, idx, d, Fraction(1, 2), q))  # noqa: B023
                    if pair:
                        secs[runs].append(seconds)
                finally:
                    onehot.draws_runs = CURRENT
        blocks, runs_ = (statistics.median(secs[r]) * 1e9 / (n * d) for r in (False, True))
        digits = onehot._digits_per_coin(q)
        x = float(q)
        h = -x * np.log2(x) - (1 - x) * np.log2(1 - x)
        print(
            f"{q!s:>8} {blocks:>7.3f} {runs_:>7.3f} {runs_ / blocks:>11.2f} |"
            f" {'':>12} {digits[0] / h:>6.2f} {digits[1] / h:>6.2f} | {drawn_by(q, CURRENT)}"
        )
    print(f"(load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coins", type=int, default=20_000 * 1024, help="coins per batch (reports × d)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--domains", default="1024")
    parser.add_argument("--epsilons", default="0.5,1,2,4")
    parser.add_argument("--only", default=",".join(MECHANISMS))
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    args.domains = [int(x) for x in args.domains.split(",")]
    args.epsilons = [float(x) for x in args.epsilons.split(",")]
    args.only = [x for x in args.only.split(",") if x]
    onehot.KERNEL_AFTER = 0  # a long-running process: the kernel serves every large batch
    if not onehot.serves_secure_batch(onehot.NUMBA_THRESHOLD):
        parser.error("the compiled kernel is not available (pip install 'ldp-telemetry[fast]')")
    (breakdown if args.breakdown else compare)(args)


if __name__ == "__main__":
    main()
