"""Speed of ``ldp simulate``: prints a table of wall times against the issue's targets.

Run by hand from the repository root::

    python benchmarks/bench_simulate.py            # all three rows
    python benchmarks/bench_simulate.py --quick    # smaller faithful run

Rows
----
1. ``ldp simulate`` with no arguments, as a subprocess (includes interpreter
   start-up and imports): target ≤ 10 s.
2. Fast mode: 6 mechanisms (grr, sue, oue, olh, blh, auto) × 8 ε × 1,000,000
   users × 20 repeats over 1,024 values: target ≤ 30 s.
   Beside it, the same sweep's ``auto`` cells alone: at D = 1,024 ``auto``
   picks subset selection for every ε below 8, whose exact joint fast draw
   takes d sequential NumPy steps (about 0.1 to 0.3 s per draw,
   simulations/subset.py) against OUE's 0.3 ms, so those 140 cells are
   nearly all of the row's time (issue 28: its CPU is real work, not
   threads; tracemalloc had inflated it, see below).
3. ``ldp simulate`` with RAPPOR (issue 15), as a subprocess: grr, sue, oue,
   olh, blh, rappor × 8 ε (0.25 … 6) × 1,000,000 users × 20 repeats over
   1,024 values, the RAPPOR cells decoded against all 1,024 values as
   candidates: target ≤ 30 s (``--rappor-repeats`` runs fewer repeats and
   scales the time; not under tracemalloc, which slows the decode's many
   NumPy allocations).
4. Faithful mode: 1,000,000 users, OUE over 1,024 values, through
   ``ldp.client.encode_batch`` and the real aggregator: target ≤ 20 s.

``cpu s`` is the CPU time of the run (of the child process for row 1): on a
shared machine the wall time also counts waiting for a core. Every row also
prints a same-run reference, the time of ``numpy.linalg.lstsq``
on a fixed 8192 × 400 matrix (``ref s``), and the ratio. Run with
``OPENBLAS_NUM_THREADS=1`` (set here, for this process and its children, unless given).

Peak Python memory is measured with tracemalloc for rows 2 and 4 (NumPy
buffers are traced), in a second run of the row's cells (one repeat for the
sweeps: the peak is per cell): times are measured without tracemalloc, which
hooks every NumPy allocation and made the fast row's subset-selection cells
about 4.5 times slower (its 30.5 s of CPU in issue 28 was mostly that).
"""

from __future__ import annotations

import argparse
import math
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread, before NumPy loads

import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from ldp.simulations import run


def _reference() -> float:
    """Seconds of one dense least squares of a fixed 8192 × 400 matrix (best of 3)."""
    rng = np.random.default_rng(0)
    a, b = rng.random((8192, 400)), rng.random(8192)
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        np.linalg.lstsq(a, b, rcond=None)
        best = min(best, time.perf_counter() - started)
    return best


def _timed(func, traced=None):
    """(result, seconds, CPU seconds, peak MiB) of ``func()``, timed untraced; the peak from ``traced()``.

    tracemalloc hooks every NumPy allocation: under it, code taking many small
    NumPy steps (subset selection's joint draw, d steps a draw) runs about
    4.5 times slower, so the time is measured without it and the peak
    memory in a second run (``traced``, a smaller one of the same cells:
    the peak is per cell, not per repeat; default ``func`` itself).
    """
    started, cpu = time.perf_counter(), time.process_time()
    result = func()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    tracemalloc.start()
    (traced or func)()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, cpu, peak / 2**20


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="faithful row with 200,000 users")
    parser.add_argument(
        "--rappor-repeats", type=int, default=20, help="repeats of the RAPPOR sweep (time scaled to 20)"
    )
    args = parser.parse_args(argv)

    rows = []

    started = time.perf_counter()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "ldp.cli", "simulate"], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows.append(
        (
            "ldp simulate (defaults: 5 mech x 5 eps x 100k users x 5 repeats, D=64)",
            1,
            time.perf_counter() - started,
            (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime),
            float("nan"),
            10.0,
        )
    )

    def sweep(mechanisms: str, repeats: int = 20):
        return lambda: run(
            mechanisms=mechanisms,
            epsilons=[0.25, 0.5, 1, 2, 3, 4, 6, 8],
            users=1_000_000,
            domain_size=1024,
            repeats=repeats,
            seed=1,
        )

    frame, seconds, cpu, peak = _timed(
        sweep("grr,sue,oue,olh,blh,auto"), traced=sweep("grr,sue,oue,olh,blh,auto", repeats=1)
    )
    rows.append(
        ("fast: 6 mech x 8 eps x 1M users x 20 repeats, D=1024", len(frame), seconds, cpu, peak, 30.0)
    )
    frame, seconds, cpu, peak = _timed(sweep("auto"), traced=sweep("auto", repeats=1))
    rows.append(
        ("  of which the auto cells (ss for eps < 8, grr at 8)", len(frame), seconds, cpu, peak, math.nan)
    )

    repeats = args.rappor_repeats
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            "-m",
            "ldp.cli",
            "simulate",
            "--mechanism",
            "grr,sue,oue,olh,blh,rappor",
            "--epsilon",
            "0.25,0.5,1,1.5,2,3,4,6",
            "--users",
            "1000000",
            "--domain-size",
            "1024",
            "--repeats",
            str(repeats),
            "--seed",
            "1",
            "-o",
            str(Path(tmp) / "sweep.csv"),
        ]
        started = time.perf_counter()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = time.perf_counter() - started
        cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    scale = 20 / repeats
    scaled = "" if repeats == 20 else f" ({repeats} repeats, time x {scale:g})"
    rows.append(
        (
            f"ldp simulate + rappor: 6 mech x 8 eps x 1M users x 20 repeats, D=1024{scaled}",
            6 * 8 * repeats,
            seconds * scale,
            cpu * scale,
            float("nan"),
            30.0,
        )
    )

    users = 200_000 if args.quick else 1_000_000
    frame, seconds, cpu, peak = _timed(
        lambda: run(
            mechanisms="oue", epsilons=1.0, users=users, domain_size=1024, repeats=1, seed=1, mode="faithful"
        )
    )
    rows.append(
        (
            f"faithful: OUE, {users:,} users, D=1024 (client batch + aggregator)",
            len(frame),
            seconds,
            cpu,
            peak,
            20.0,
        )
    )

    reference = _reference()
    print(f"reference: numpy.linalg.lstsq of an 8192 x 400 matrix, {reference:.3f} s (same run)")
    print(
        f"{'benchmark':<92} {'cells':>6} {'seconds':>8} {'cpu s':>7} {'x ref':>7} {'peak MiB':>9} "
        f"{'target s':>9}  ok"
    )
    for name, cells, secs, cpu, mib, target in rows:
        ok = "-" if math.isnan(target) else "yes" if secs <= target else "NO"
        print(
            f"{name:<92} {cells:>6} {secs:>8.2f} {cpu:>7.2f} {secs / reference:>7.0f} {mib:>9.1f} "
            f"{target:>9.0f}  {ok}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
