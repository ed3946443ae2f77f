"""Speed and memory of ``ldp aggregate`` on millions of reports, against pyarrow reading the same file.

Writes N RAPPOR reports (128 bits, 2 hashes, 64 cohorts; the generator of
``bench_io.py``) to a Parquet, a JSON Lines and a CSV file, each written by a
child process of its own (so no measurement inherits the writer's memory).
Then, for each file, in the same run:

* the **reference**: a fresh Python process that imports pyarrow and reads
  the file, streaming, into the columns ``ldp aggregate`` needs (``v``,
  ``spec``, ``bits``, ``cohort``; Parquet with
  :meth:`pyarrow.parquet.ParquetFile.iter_batches`, CSV with
  :func:`pyarrow.csv.open_csv` and explicit column types, JSON Lines with
  :func:`pyarrow.json.open_json`), wall-clock seconds from start to exit;
* the whole command ``ldp aggregate --spec S FILE -o estimates.csv
  --workers W`` in a fresh process, wall-clock seconds from start to exit,
  and the ratio of the two.

Each is run ``--repeats`` times, alternating with the other, and the fastest
run of each is shown (on a shared machine the minimum is the figure least
disturbed by other work).

Peak memory is the maximum resident set size from the kernel
(:func:`os.wait4` of the fresh child: the largest single process among the
child and its descendants, what ``/usr/bin/time -v`` reports); nothing is
sampled while the command runs. With W workers the tree holds the main
process and W workers, so the tree's memory is at most (W + 1) × that figure.

Targets (issue 15): ``ldp aggregate`` ≤ 2 × the reference on Parquet and
≤ 2.5 × on CSV and JSON Lines; peak memory < 500 MB per process.

Usage::

    python benchmarks/bench_scale.py                        # 10M reports, 1 and 2 workers
    python benchmarks/bench_scale.py --reports 2000000 --workers 1 2 --dir /tmp/scale
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MB = 500.0
TARGET_RATIO = {"parquet": 2.0, "jsonl": 2.5, "csv": 2.5}

#: What the reference child runs: pyarrow reading FILE into the needed columns, streaming.
_REFERENCE = r"""
import sys
import pyarrow as pa
path, fmt = sys.argv[1], sys.argv[2]
needed = ["v", "spec", "bits", "cohort"]
rows = 0
if fmt == "parquet":
    import pyarrow.parquet as pq
    f = pq.ParquetFile(path, read_dictionary=["spec"], pre_buffer=False, buffer_size=1 << 20)
    for batch in f.iter_batches(batch_size=100_000, columns=needed):
        rows += batch.num_rows
elif fmt == "csv":
    import pyarrow.csv as pc
    types = {"v": pa.int64(), "spec": pa.string(), "bits": pa.string(), "cohort": pa.int64()}
    reader = pc.open_csv(path, convert_options=pc.ConvertOptions(column_types=types, include_columns=needed))
    for batch in reader:
        rows += batch.num_rows
else:
    import pyarrow.json as pj
    schema = pa.schema([("v", pa.int64()), ("spec", pa.string()), ("bits", pa.string()), ("cohort", pa.int64())])
    reader = pj.open_json(path, parse_options=pj.ParseOptions(explicit_schema=schema))
    for batch in reader:
        rows += batch.num_rows
print(rows)
"""


def run_child(argv: list[str]) -> tuple[float, float, str, str]:
    """(wall seconds, peak RSS MB of the child and its descendants, stdout, stderr) of a fresh process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{stderr}")
    return seconds, usage.ru_maxrss / 1024, stdout, stderr  # Linux: ru_maxrss in KiB


def write_child(path: str, n: int) -> None:
    """Write ``n`` reports to ``path`` (run in a child process of its own)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_io import write_file

    print(f"{write_file(Path(path), n):.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=10_000_000)
    parser.add_argument(
        "--formats", nargs="+", choices=["parquet", "jsonl", "csv"], default=["parquet", "jsonl", "csv"]
    )
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs of each measurement, alternating reference and command; the fastest of each is shown",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="work directory (default: a temporary one; files are reused if present)",
    )
    parser.add_argument("--write", nargs=2, metavar=("FILE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write is not None:
        write_child(args.write[0], int(args.write[1]))
        return

    with tempfile.TemporaryDirectory() as tmp:
        work = args.dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        spec_path = work / "spec.json"
        if not spec_path.exists():
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from bench_io import rappor_spec

            spec_path.write_text(rappor_spec().to_json())
        print(
            f"RAPPOR k=128 bits, h=2, m=64 cohorts; {args.reports:,} reports; {os.cpu_count()} CPUs; "
            f"Python {sys.version.split()[0]}"
        )
        print(
            "seconds: wall clock of a fresh process (start, imports, read, exit), fastest of "
            f"{args.repeats}; MB: largest peak RSS (wait4)"
        )
        print(
            f"{'file':<8}{'MB':>6}  {'workers':>7}{'ldp s':>8}{'pyarrow s':>11}{'ratio':>7}{'target':>8}"
            f"{'ldp MB':>8}{'pyarrow MB':>12}  reports/s"
        )
        for fmt in args.formats:
            path = work / f"reports-{args.reports}.{fmt}"
            if not path.exists():
                seconds, _, _, _ = run_child(
                    [sys.executable, __file__, "--write", str(path), str(args.reports)]
                )
                print(f"(wrote {path.name} in {seconds:.0f} s, in a child process)", flush=True)
            size = path.stat().st_size / 2**20
            for w in args.workers:
                out = work / "estimates.csv"
                command = [sys.executable, "-m", "ldp", "aggregate", "--spec", str(spec_path), str(path)]
                refs, runs = [], []
                for _ in range(args.repeats):  # alternate, so both see the same load on a shared machine
                    ref_s, ref_mb, rows, _ = run_child([sys.executable, "-c", _REFERENCE, str(path), fmt])
                    if int(rows) != args.reports:
                        raise SystemExit(
                            f"pyarrow read {rows.strip()} rows of {path.name}, expected {args.reports}"
                        )
                    ldp_s, ldp_mb, _, err = run_child([*command, "-o", str(out), "--workers", str(w)])
                    if f"{args.reports:,} valid" not in err:
                        raise SystemExit(f"ldp aggregate did not count every report of {path.name}:\n{err}")
                    refs.append((ref_s, ref_mb))
                    runs.append((ldp_s, ldp_mb))
                ref_s, ref_mb = min(refs)[0], max(mb for _, mb in refs)
                ldp_s, ldp_mb = min(runs)[0], max(mb for _, mb in runs)
                ratio = ldp_s / ref_s
                ok = "OK" if ratio <= TARGET_RATIO[fmt] and ldp_mb < TARGET_MB else "MISSED"
                print(
                    f"{fmt:<8}{size:>6.0f}  {w:>7}{ldp_s:>8.2f}{ref_s:>11.2f}{ratio:>7.2f}"
                    f"{'≤' + format(TARGET_RATIO[fmt], 'g'):>8}{ldp_mb:>8.0f}{ref_mb:>12.0f}  "
                    f"{args.reports / ldp_s:,.0f} {ok}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
