"""Memory and speed of ``ldp aggregate`` on 10 million reports, by engine and worker count (issue 7).

Writes N RAPPOR reports (128 bits, 2 hashes, 64 cohorts; the generator of
``bench_io.py``) to a Parquet file and a JSON Lines file, then runs the whole
command ``ldp aggregate --spec S FILE -o estimates.csv [--workers W]
[--engine dask]`` in a fresh process for each setting and reports

* wall-clock seconds and reports per second,
* peak MB of the largest single process (the command's own
  ``resource.getrusage`` peak, or the largest RSS sampled in any of its
  descendants; what ``/usr/bin/time -v`` would call the maximum resident
  set size),
* peak MB of the whole process tree, sampled every 20 ms with psutil over
  the command and all its descendants: the sum of resident set sizes (RSS;
  counts pages shared between processes, such as imported libraries, once
  per process) and the sum of proportional set sizes (PSS; shared pages
  split between their users, so the sum is the memory the tree really
  holds). Workers add up: the tree figures are the ones to compare.

Target: peak memory under 500 MB for the local engine on the 10-million-report
Parquet and JSON Lines files, whatever the number of workers (checked on the
tree PSS).

Usage::

    python benchmarks/bench_scale.py                       # 10M reports, local engine, 1 and 2 workers
    python benchmarks/bench_scale.py --reports 1000000 --workers 1 2 --dask
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_io import rappor_spec, write_file

TARGET_MB = 500.0


def child(args: list[str]) -> None:
    """Run ``ldp aggregate`` here; print the largest RSS of this process and of its waited children."""
    from ldp.cli import main

    try:
        main(["aggregate", *args])
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"self_mb": own, "children_mb": children}))


def _tree_mb(pid: int) -> tuple[float, float, float]:
    """(sum of RSS, sum of PSS, largest single RSS) in MB over a process and its descendants."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0, 0.0, 0.0
    rss = pss = largest = 0
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += info.rss
        pss += getattr(info, "pss", info.rss)
        largest = max(largest, info.rss)
    return rss / 2**20, pss / 2**20, largest / 2**20


def measure(args: list[str]) -> dict:
    """Seconds, largest single-process peak and sampled process-tree peak of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = [0.0, 0.0, 0.0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            sample_mb = _tree_mb(proc.pid)
            peak[:] = [max(a, b) for a, b in zip(peak, sample_mb)]
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"ldp aggregate {' '.join(args)} failed ({proc.returncode}):\n{err}")
    result = json.loads(out.strip().splitlines()[-1])
    return {
        "seconds": seconds,
        "process_mb": max(result["self_mb"], peak[2]),
        "tree_rss_mb": peak[0],
        "tree_pss_mb": peak[1],
        "summary": err.strip().splitlines()[-1] if err.strip() else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=10_000_000)
    parser.add_argument(
        "--formats", nargs="+", choices=["parquet", "jsonl", "csv"], default=["parquet", "jsonl"]
    )
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument(
        "--dask", action="store_true", help="also run --engine dask (a local cluster of 2 workers)"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="work directory (default: a temporary one; files are reused if present)",
    )
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return

    with tempfile.TemporaryDirectory() as tmp:
        work = args.dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        spec_path = work / "spec.json"
        spec_path.write_text(rappor_spec().to_json())
        print(
            f"RAPPOR k=128 bits, h=2, m=64 cohorts; {args.reports:,} reports; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}"
        )
        print(
            f"{'file':<8}{'size MB':>9}  {'engine':<16}{'seconds':>9}{'reports/s':>12}{'1 process MB':>14}"
            f"{'tree RSS MB':>13}{'tree PSS MB':>13}  target (PSS)"
        )
        for fmt in args.formats:
            path = work / f"reports-{args.reports}.{fmt}"
            if not path.exists():
                write_seconds = write_file(path, args.reports)
                print(f"(wrote {path.name} in {write_seconds:.0f} s)")
            size = path.stat().st_size / 2**20
            settings = [
                (f"local, {w} worker{'s' if w > 1 else ''}", ["--workers", str(w)]) for w in args.workers
            ]
            if args.dask:
                settings.append(("dask, 2 workers", ["--engine", "dask", "--workers", "2"]))
            for name, extra in settings:
                out = work / "estimates.csv"
                result = measure(["--spec", str(spec_path), str(path), "-o", str(out), *extra])
                ok = "OK" if result["tree_pss_mb"] < TARGET_MB else "MISSED"
                target = f"< {TARGET_MB:.0f} MB {ok}" if name.startswith("local") else "-"
                print(
                    f"{fmt:<8}{size:>9.0f}  {name:<16}{result['seconds']:>9.2f}{args.reports / result['seconds']:>12,.0f}"
                    f"{result['process_mb']:>14.0f}{result['tree_rss_mb']:>13.0f}{result['tree_pss_mb']:>13.0f}  {target}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
