"""Subset selection's secure batch: the tree sampler against Floyd's algorithm on bits, at each (d, ε).

For each domain size and ε the benchmark draws ``--users`` subsets (uniform
true values) through both samplers of :func:`ldp.client.subset.uniform_subsets`'
secure path, on the OS CSPRNG's bits (:class:`ldp.client.CountingSource`
counting the bytes):

- ``tree``: :mod:`ldp.client.subset_tree` (what :func:`ldp.client.subset.uses_tree`
  picks for dense subsets);
- ``Floyd``: Floyd's algorithm, each step's uniform on about log2 of its bound
  (:func:`ldp.client.bits.uniform_below_each_bits`).

It prints, per row: ω and ω/d, which path :func:`uses_tree` picks, bytes read
÷ the report's entropy for each path (target ≤ 2), and CPU milliseconds
(user + sys, ``time.process_time``) of each, medians of ``--pairs`` runs taken
in alternation (tree, Floyd, tree, Floyd, …; the machine is shared, so only
the same-run ratio ``tree ÷ Floyd`` is meaningful), and the load average.

Usage::

    python benchmarks/bench_ss_paths.py
    python benchmarks/bench_ss_paths.py --domains 1024 --epsilons 2,2.6 --users 20000 --pairs 5
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import statistics
import time
from collections.abc import Callable

import numpy as np
from bench_entropy import entropy_bits

from ldp.client import CountingSource, SystemRandomSource
from ldp.client.bits import BitSource
from ldp.client.subset import SubsetShape, _floyd_batch, _tree_batch, uses_tree
from ldp.specs.subset import SubsetSelection

PATHS: dict[str, Callable[[BitSource, SubsetShape, np.ndarray], np.ndarray]] = {
    "tree": _tree_batch,
    "Floyd": _floyd_batch,
}


def measure(spec: SubsetSelection, users: int, pairs: int) -> dict[str, tuple[float, float]]:
    """Per path: (bytes ÷ entropy, median CPU seconds of ``pairs`` alternating runs)."""
    shape = SubsetShape.of(spec)
    idx = np.random.default_rng(1).integers(0, spec.domain_size, users)
    ratio = {}
    for name, run in PATHS.items():
        counting = CountingSource(SystemRandomSource())
        run(BitSource(counting), shape, idx)  # also the warm-up: tables built, pages touched
        ratio[name] = counting.bytes * 8 / users / entropy_bits(spec)
    seconds: dict[str, list[float]] = {name: [] for name in PATHS}
    for _ in range(pairs):
        for name, run in PATHS.items():
            bits = BitSource(SystemRandomSource())
            start = time.process_time()
            run(bits, shape, idx)
            seconds[name].append(time.process_time() - start)
    return {name: (ratio[name], statistics.median(seconds[name])) for name in PATHS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="256,1024,4096")
    parser.add_argument("--epsilons", default="1,1.5,1.7,2,2.6,3,4,6")
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{args.users:,} users, CPU ms medians of {args.pairs} alternating runs; load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'d':>5} {'ε':>4} {'ω':>5} {'ω/d':>6} {'picks':>6} {'tree B÷H':>9} {'Floyd B÷H':>10}"
        f" {'tree ms':>8} {'Floyd ms':>9} {'tree÷Floyd':>11} {'picked B÷H':>11}"
    )
    for d in (int(v) for v in args.domains.split(",")):
        for epsilon in (float(v) for v in args.epsilons.split(",")):
            spec = SubsetSelection(range(d), epsilon)
            result = measure(spec, args.users, args.pairs)
            picks = "tree" if uses_tree(spec) else "Floyd"
            (tree_ratio, tree_s), (floyd_ratio, floyd_s) = result["tree"], result["Floyd"]
            print(
                f"{d:>5} {epsilon:>4g} {spec.omega:>5} {spec.omega / d:>6.3f} {picks:>6} {tree_ratio:>9.2f}"
                f" {floyd_ratio:>10.2f} {1e3 * tree_s:>8.1f} {1e3 * floyd_s:>9.1f} {tree_s / floyd_s:>11.2f}"
                f" {result[picks][0]:>11.2f}",
                flush=True,
            )
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
