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

With ``--old-root`` and ``--old-python`` (an older checkout and an
interpreter whose ``import ldp`` is it) it also times the path each
checkout picks, :func:`ldp.client.subset.uniform_subsets` on the OS
CSPRNG (what the secure batch runs), in alternating subprocesses (old,
new, old, new, …; ``--pairs`` of them, each timing every row once after a
warm-up, the median of ``--repeat`` timed runs): the CPU milliseconds of
each (medians over the pairs), ``new ÷ old``, and the bytes each reads ÷
the entropy.

Usage::

    python benchmarks/bench_ss_paths.py
    python benchmarks/bench_ss_paths.py --domains 1024 --epsilons 2,2.6 --users 20000 --pairs 5
    git worktree add --detach ../ldp-main main
    python -m venv --system-site-packages ../venv-main
    (cd ../ldp-main && ../venv-main/bin/pip install --no-deps -e .)
    python benchmarks/bench_ss_paths.py --old-root ../ldp-main --old-python ../venv-main/bin/python
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, before NumPy loads

import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from bench_entropy import entropy_bits
from harness import cpu_seconds

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
            seconds[name].append(cpu_seconds(lambda: run(bits, shape, idx)))  # noqa: B023
    return {name: (ratio[name], statistics.median(seconds[name])) for name in PATHS}


#: Run by each checkout's interpreter in its own root: prints {"d,ε": [CPU seconds, bits read a user]} of the
#: path the checkout picks (uniform_subsets on the OS CSPRNG): the median of ``repeat`` timed runs a row after
#: a warm-up (whose bits are counted).
_PICKED = r"""
import json, math, sys, time
import numpy as np
from ldp.client import CountingSource, SystemRandomSource
from ldp.client.subset import SubsetShape, uniform_subsets
from ldp.specs.subset import SubsetSelection
domains, epsilons, users, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = {}
for d in (int(v) for v in domains.split(",")):
    for epsilon in (float(v) for v in epsilons.split(",")):
        spec = SubsetSelection(range(d), epsilon)
        shape = SubsetShape.of(spec)
        idx = np.random.default_rng(1).integers(0, d, users)
        counting = CountingSource(SystemRandomSource())
        uniform_subsets(counting, idx, shape)  # the warm-up, counted
        seconds = []
        for _ in range(repeat):
            start = time.process_time()
            uniform_subsets(SystemRandomSource(), idx, shape)
            seconds.append(time.process_time() - start)
        out[f"{d},{epsilon:g}"] = [sorted(seconds)[len(seconds) // 2], counting.bytes * 8 / users]
print(json.dumps(out))
"""


def picked(python: str, root: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """One subprocess of ``python`` in the checkout ``root``: each row's CPU seconds and bits read a user."""
    done = subprocess.run(
        [python, "-c", _PICKED, args.domains, args.epsilons, str(args.users), str(args.repeat)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare_checkouts(args: argparse.Namespace) -> None:
    """The path each checkout picks, timed in alternating subprocesses (old, new, …): a table of medians."""
    sides = {
        "old": (args.old_python, args.old_root),
        "new": (sys.executable, Path(__file__).resolve().parents[1]),
    }
    load = os.getloadavg()[0]
    runs: dict[str, list[dict[str, list[float]]]] = {side: [] for side in sides}
    for _ in range(args.pairs):
        for side, (python, root) in sides.items():
            runs[side].append(picked(python, root, args))
    print(
        f"\npicked paths (uniform_subsets, OS CSPRNG), {args.users:,} users, CPU ms medians of {args.pairs}"
        f" alternating subprocess pairs; load {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(f"{'d':>5} {'ε':>4} {'old ms':>8} {'new ms':>8} {'new÷old':>8} {'old B÷H':>8} {'new B÷H':>8}")
    for row in runs["old"][0]:
        d, epsilon = row.split(",")
        entropy = entropy_bits(SubsetSelection(range(int(d)), float(epsilon)))
        old, new = (statistics.median(run[row][0] for run in runs[side]) for side in sides)
        old_bits, new_bits = (
            statistics.median(run[row][1] for run in runs[side]) / entropy for side in sides
        )
        print(
            f"{d:>5} {epsilon:>4} {1e3 * old:>8.1f} {1e3 * new:>8.1f} {new / old:>8.2f} {old_bits:>8.2f}"
            f" {new_bits:>8.2f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="256,1024,4096")
    parser.add_argument("--epsilons", default="1,1.5,1.7,2,2.6,3,4,6")
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--old-root", type=Path, help="an older checkout, to time the path each picks")
    parser.add_argument("--old-python", help="an interpreter whose `import ldp` is that checkout")
    parser.add_argument("--picked-only", action="store_true", help="only the checkouts' picked paths")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs a row in each subprocess (median)")
    args = parser.parse_args()
    if (args.old_root is None) != (args.old_python is None) or (args.picked_only and args.old_root is None):
        parser.error("--old-root and --old-python go together (and --picked-only needs them)")
    if args.picked_only:
        compare_checkouts(args)
        return
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
    if args.old_root is not None:
        compare_checkouts(args)


if __name__ == "__main__":
    main()
