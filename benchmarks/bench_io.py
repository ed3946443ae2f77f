"""Batch-file aggregation benchmark: a 10-million-report RAPPOR Parquet file, end to end.

Writes N RAPPOR reports (128 bits, 2 hashes, 64 cohorts) to a Parquet file
with the seeded batch encoder, in chunks, then measures, each in a fresh
process so peak memory is that step's alone:

* the reference: pyarrow reading the file, streaming, into the columns the
  aggregator needs (``v``, ``spec``, ``bits``, ``cohort``; the reader of
  ``bench_scale.py``),
* reading only (``ldp.aggregator.io.read_reports``),
* reading and accumulating (``make_aggregator(spec).add_batch``),
* ``ldp aggregate --spec S FILE -o estimates.csv``, the whole command,

``--mechanism`` picks the reports' spec (RAPPOR by default; GRR, OUE, OLH
over 1,000 values). And, for comparison, the same path on a smaller JSON Lines file, a CSV file
as ``ldp`` writes it (no quotes) and the same CSV as pyarrow writes it
(strings quoted, as R does too). Seconds are wall-clock
(time.perf_counter) of the step inside its process, after the imports (the
``cli`` step: the whole process, imports included; the child imports only
a few standard modules (json, os, time, ...) before :func:`ldp.cli.main`,
about as the ``ldp`` command starts), the median of
``--repeat`` runs; each row prints its ratio to the pyarrow reference of the
same file, same run (the steps run in rounds, one run of each per round,
and a ratio is the median of the rounds' ratios: a round's runs share much
the same load). CPU seconds (user + system of the process, the same
span; pyarrow's threads included, in both) are printed beside them, and a
last table gives ``ldp aggregate`` against that reference per format, in
CPU time and wall-clock time, judged on the CPU ratio: on a machine shared
with other work the wall-clock ratio moves with whatever else runs (a
second core busy elsewhere slows pyarrow's parallel read most), the CPU
ratio much less. The children load ldp's modules compiled, as an installed
package does (:func:`cached_bytecode`). Peak memory is the process's maximum
resident set size (resource.getrusage). Targets: the 10-million-report
Parquet file in ≤ 10 s end to end, memory bounded (< 500 MB, independent of
the file size) (issue 3); ``ldp aggregate`` ≤ 2× pyarrow's read for Parquet
and JSON Lines, ≤ 2.5× for CSV, quoted or not, in CPU time (issue 28).

Usage::

    python benchmarks/bench_io.py                  # 10M Parquet + 1M JSONL/CSV
    python benchmarks/bench_io.py --reports 2000000 --text-reports 200000
    python benchmarks/bench_io.py --reports 1000000 --text-reports 1000000 --repeat 3
    python benchmarks/bench_io.py --mechanism grr --reports 3000000 --text-reports 3000000
    python benchmarks/bench_io.py --reports 0 --text-reports 0 --csv-reports 10000000 --repeat 3 --dir DIR

``--csv-reports N`` adds a CSV file of N reports (as ``ldp`` writes it) to
the files measured, a large one beside the 1 M-report text files: the CSV
path's cost per report, start-up aside (a file of that name in ``--dir``
is reused, as every file is).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

TARGET_SECONDS = 10.0
TARGET_MB = 500.0
#: ``ldp aggregate`` (whole process) / pyarrow's read of the same file (after imports), CPU time, by format (issue 28).
TARGET_RATIO = {"parquet": 2.0, "jsonl": 2.0, "csv": 2.5, "quoted csv": 2.5}


def rappor_spec():
    import ldp

    return ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")


#: --mechanism: the spec of the reports (the domain: the 1,000 values the generator draws).
MECHANISMS = {
    "rappor": "RAPPOR k=128 bits, h=2, m=64 cohorts",
    "grr": "GRR d=1,000, eps=1",
    "oue": "OUE d=1,000, eps=1",
    "olh": "OLH d=1,000, eps=1",
}
#: Arrow types of each report column pyarrow's reference read converts (text columns as strings).
COLUMN_TYPES = {"cohort": "int64", "bits": "string", "value": "string", "seed": "uint64"}


def spec_of(mechanism: str):
    """The benchmark's spec of ``mechanism`` (a key of :data:`MECHANISMS`)."""
    import ldp

    if mechanism == "rappor":
        return rappor_spec()
    domain = [f"value-{v}" for v in range(1000)]
    return {"grr": ldp.GRR, "oue": ldp.OUE, "olh": ldp.OLH}[mechanism](domain=domain, epsilon=1.0)


def needed_columns(spec_path: str) -> dict[str, str]:
    """Column name → Arrow type name of the reports of the spec file (read as JSON: no ldp import)."""
    mechanism = json.loads(Path(spec_path).read_text())["mechanism"]
    fields = {"rappor": ["cohort", "bits"], "grr": ["value"], "oue": ["bits"], "olh": ["seed", "value"]}
    types = {"v": "int64", "spec": "string"}
    for name in fields[mechanism]:
        types[name] = "int64" if (mechanism, name) == ("olh", "value") else COLUMN_TYPES[name]
    return types


def write_file(path: Path, n: int, chunk: int = 500_000, seed: int = 0, mechanism: str = "rappor") -> float:
    """Encode ``n`` reports (Zipf-distributed values) in chunks and write them; seconds."""
    import numpy as np  # here: a child running ``ldp aggregate`` starts as the command does, without it

    from ldp.aggregator.writers import write_reports
    from ldp.client import encode_batch

    spec = spec_of(mechanism)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()

    def batches():
        for begin in range(0, n, chunk):
            size = min(chunk, n - begin)
            values = [f"value-{v}" for v in (rng.zipf(1.3, size) % 1000).tolist()]
            yield encode_batch(spec, values, rng)

    write_reports(batches(), path, spec)
    return time.perf_counter() - start


def write_quoted_csv(source: Path, path: Path) -> None:
    """The reports of ``source`` (a CSV file as ``ldp`` writes it) as pyarrow writes CSV: strings quoted."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    text = dict.fromkeys(("spec", "bits", "value"), pa.string())  # a fingerprint may look like 1e5
    options = pcsv.ConvertOptions(column_types=text)
    pcsv.write_csv(pcsv.read_csv(source, convert_options=options), path)


def _kind(path: Path) -> str:
    """The row of the ratio table a file belongs to."""
    if path.name.endswith("-quoted.csv"):
        return "quoted csv"
    return path.suffix.lstrip(".")


def _peak_mb() -> float:
    """This process's peak resident memory, in MiB.

    Linux's ``ru_maxrss`` survives ``execve``: a child started by ``subprocess``
    (vfork, then exec) reports at least the parent's peak. ``VmHWM`` in
    ``/proc/self/status`` is the high-water mark of this program's own memory.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB; macOS would be bytes


def pyarrow_rows(path: str, spec_path: str) -> int:
    """Read ``path`` with pyarrow alone into the needed columns, streaming; the number of rows."""
    import pyarrow as pa

    columns = needed_columns(spec_path)
    needed = list(columns)
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        f = pq.ParquetFile(path, read_dictionary=["spec"], pre_buffer=False, buffer_size=1 << 20)
        batches = f.iter_batches(batch_size=100_000, columns=needed)
    elif path.endswith(".csv"):
        import pyarrow.csv as pcsv

        types = {name: pa.type_for_alias(alias) for name, alias in columns.items()}
        options = pcsv.ConvertOptions(column_types=types, include_columns=needed)
        batches = pcsv.open_csv(path, convert_options=options)
    else:
        import pyarrow.json as pj

        schema = pa.schema([(name, pa.type_for_alias(alias)) for name, alias in columns.items()])
        batches = pj.open_json(path, parse_options=pj.ParseOptions(explicit_schema=schema))
    return sum(batch.num_rows for batch in batches)


def child(step: str, path: str, spec_path: str, out: str) -> None:
    """Run one step in this (fresh) process and print {"rows", "peak_mb", "seconds", "cpu"} as JSON."""
    rows = 0
    if step != "cli":  # NumPy loaded before the clock starts, as ever (pyarrow's import needs it)
        import numpy  # noqa: F401
    start, cpu = time.perf_counter(), time.process_time()
    if step == "pyarrow":
        rows = pyarrow_rows(path, spec_path)
    elif step == "cli":
        from ldp.cli import main

        try:
            main(["aggregate", "--spec", spec_path, path, "-o", out])
        except SystemExit as exc:
            if exc.code not in (0, None):
                raise
        rows = -1
    else:
        from ldp.aggregator import make_aggregator
        from ldp.aggregator.io import read_reports
        from ldp.specs import load_spec

        spec = load_spec(spec_path)
        accumulator = make_aggregator(spec)
        start, cpu = time.perf_counter(), time.process_time()
        for chunk in read_reports([path], spec):
            rows += len(chunk.batch)
            if step == "accumulate":
                accumulator.add_batch(chunk.batch)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"rows": rows, "peak_mb": _peak_mb(), "seconds": seconds, "cpu": cpu}))


def measure_rounds(
    steps: tuple[str, ...],
    path: Path,
    spec_path: Path,
    out: Path,
    repeat: int = 1,
    env: dict[str, str] | None = None,
) -> dict[str, tuple[tuple[float, float, float, int], tuple[float, float, float]]]:
    """Each step's ((seconds, CPU seconds, peak MB, rows), (wall ratio, CPU ratio, whole-process CPU ratio)).

    The first step is the reference. The whole-process ratio compares the two
    processes' CPU from interpreter start: a script that reads the file with
    pyarrow against, for ``cli``, the ``ldp aggregate`` command.

    The steps run in rounds, one run of each per round, so a step and the
    reference run minutes apart at most, under much the same load; a step's
    ratio is the median over the rounds of its ratio to the reference of
    the same round, its seconds the medians of its runs, its peak the
    largest.
    """
    rounds = [
        {step: _measure_once(step, path, spec_path, out, env) for step in steps}
        for _ in range(max(1, repeat))
    ]
    result = {}
    for step in steps:
        runs = [r[step] for r in rounds]
        wall = statistics.median(r[step][0] / r[steps[0]][0] for r in rounds)
        cpu = statistics.median(r[step][1] / r[steps[0]][1] for r in rounds)
        process = statistics.median(r[step][4] / r[steps[0]][4] for r in rounds)
        result[step] = (
            (
                statistics.median(run[0] for run in runs),
                statistics.median(run[1] for run in runs),
                max(run[2] for run in runs),
                runs[-1][3],
            ),
            (wall, cpu, process),
        )
    return result


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cached_bytecode(work: Path) -> dict[str, str]:
    """An environment whose processes load ldp's modules from byte code compiled once, under ``work``.

    pip compiles a package's modules when it installs it, and Python caches
    them on first import; but with ``PYTHONDONTWRITEBYTECODE`` set (as in CI
    containers) and an editable install, every child would compile every ldp
    module from source again (about 0.1 s of CPU per process, more than the
    reading of a small file). So the children read compiled modules from a
    cache in the work directory (``PYTHONPYCACHEPREFIX``), filled here once,
    as an installed ``ldp`` would have them. pyarrow's and numpy's own
    modules are compiled already (site-packages).
    """
    import importlib.util
    import subprocess

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    packages = ("ldp", "ldp.client", "ldp.aggregator", "ldp.simulations", "ldp.collector")
    found = [importlib.util.find_spec(name) for name in packages]
    folders = sorted({str(Path(spec.origin).parent) for spec in found if spec is not None and spec.origin})
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *folders], env=env, check=True, capture_output=True
    )
    return env


def _measure_once(
    step: str, path: Path, spec_path: Path, out: Path, env: dict[str, str] | None = None
) -> tuple[float, float, float, int, float]:
    """(seconds, CPU seconds, peak MB, rows, the whole process's CPU seconds) of one run of ``step``.

    The first two are the step's own (from its start; the whole process for ``cli``).
    """
    import subprocess

    start, cpu = time.perf_counter(), _cpu_of_children()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", step, str(path), str(spec_path), str(out)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    seconds, cpu = time.perf_counter() - start, _cpu_of_children() - cpu
    process_cpu = cpu
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if step != "cli":
        seconds, cpu = result["seconds"], result["cpu"]
    return seconds, cpu, result["peak_mb"], result["rows"], process_cpu


def main() -> None:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=10_000_000, help="reports in the Parquet file")
    parser.add_argument("--text-reports", type=int, default=1_000_000, help="reports in the JSONL/CSV files")
    parser.add_argument(
        "--csv-reports", type=int, default=0, help="also a CSV file of this many reports (10,000,000: 468 MB)"
    )
    parser.add_argument("--mechanism", choices=sorted(MECHANISMS), default="rappor", help="the reports' spec")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each step (median seconds)")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a temporary one)")
    parser.add_argument("--child", nargs=4, metavar=("STEP", "FILE", "SPEC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    with tempfile.TemporaryDirectory() as tmp:
        work = args.dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        env = cached_bytecode(work)
        spec_path = work / "spec.json"
        spec_path.write_text(spec_of(args.mechanism).to_json())
        out = work / "estimates.csv"
        stem = (
            "reports" if args.mechanism == "rappor" else f"{args.mechanism}-reports"
        )  # bench_scale.py's names
        files = [(work / f"{stem}-{args.reports}.parquet", args.reports)] if args.reports else []
        if args.text_reports:
            files += [
                (work / f"{stem}-{args.text_reports}.{ext}", args.text_reports) for ext in ("jsonl", "csv")
            ]
            files.append((work / f"{stem}-{args.text_reports}-quoted.csv", args.text_reports))
        if args.csv_reports and args.csv_reports != args.text_reports:
            files.append((work / f"{stem}-{args.csv_reports}.csv", args.csv_reports))
        print(f"{MECHANISMS[args.mechanism]}; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
        print(
            f"{'file':<18}{'reports':>12}{'size MB':>9}  {'step':<12}{'seconds':>9}{'reports/s':>13}{'peak MB':>9}"
            f"{'/ pyarrow':>11}{'CPU s':>8}{'/ pyarrow':>11}"
        )
        rows_out = []
        for path, n in files:
            size = path.stat().st_size / 2**20 if path.exists() else 0.0
            if path.exists():  # files of bench_scale.py (same generator, same names) are reused
                print(f"{path.name:<18}{n:>12,}{size:>9.0f}  (reused)")
            elif path.name.endswith("-quoted.csv"):
                write_quoted_csv(work / f"{stem}-{n}.csv", path)
                size = path.stat().st_size / 2**20
                print(f"{path.name:<18}{n:>12,}{size:>9.0f}  (the CSV file above, as pyarrow writes it)")
            else:
                write_seconds = write_file(path, n, mechanism=args.mechanism)
                size = path.stat().st_size / 2**20
                print(
                    f"{path.name:<18}{n:>12,}{size:>9.0f}  {'write':<12}{write_seconds:>9.2f}"
                    f"{n / write_seconds:>13,.0f}{'':>9}"
                )
            steps = ("pyarrow", "read", "accumulate", "cli")
            runs = measure_rounds(steps, path, spec_path, out, args.repeat, env)
            for step in steps:
                seconds, cpu, peak, rows = runs[step][0]
                if rows >= 0 and rows != n:
                    raise SystemExit(f"{step} read {rows} reports from {path.name}, expected {n}")
                ratios = runs[step][1]
                rows_out.append((path.name, step, seconds, peak, ratios, _kind(path)))
                print(
                    f"{'':<18}{'':>12}{'':>9}  {step:<12}{seconds:>9.2f}{n / seconds:>13,.0f}{peak:>9.0f}"
                    f"{ratios[0]:>10.2f}x{cpu:>8.2f}{ratios[1]:>10.2f}x"
                )
        print(
            f"\nldp aggregate / pyarrow's read of the same file (same run, median of {args.repeat} rounds):"
        )
        print(f"  {'format':<12}{'file':<32}{'CPU':>7}{'wall':>8}{'whole CPU':>11}")
        for name, step, _seconds, _peak, (ratio, cpu_ratio, process_ratio), kind in rows_out:
            if step == "cli":
                verdict = "OK" if cpu_ratio <= TARGET_RATIO[kind] else "MISSED"
                print(
                    f"  {kind:<12}{name:<32}{cpu_ratio:>6.2f}x{ratio:>7.2f}x{process_ratio:>10.2f}x"
                    f"  (target ≤ {TARGET_RATIO[kind]:.1f}x CPU: {verdict})"
                )
        print(
            "  (CPU, wall: the command against pyarrow's read from its start, after NumPy's import; whole CPU:"
            " both processes from interpreter start, the command against a script reading the file with pyarrow)"
        )
        parquet = [r for r in rows_out if r[0].endswith(".parquet") and r[1] == "cli"]
        if parquet:
            seconds, peak = parquet[0][2], parquet[0][3]
            ok_time = "OK" if seconds <= TARGET_SECONDS else "MISSED"
            ok_mem = "OK" if peak < TARGET_MB else "MISSED"
            print(
                f"\nldp aggregate on {args.reports:,} Parquet reports: {seconds:.2f} s (target ≤ {TARGET_SECONDS:.0f} s: {ok_time}), "
                f"peak {peak:.0f} MB (target < {TARGET_MB:.0f} MB: {ok_mem})"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"] and len(sys.argv) == 6:  # a measured step: no argparse, as `ldp` starts
        child(*sys.argv[2:])
    else:
        main()
