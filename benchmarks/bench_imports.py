"""Start-up cost of the ``ldp`` commands: wall time and the heavy packages each one imports.

Runs each command in a fresh interpreter ``--repeats`` times and prints the
median wall-clock seconds beside the same-run reference of a bare
``python -c pass``, the difference (what the command's imports and work
cost), the median CPU seconds (user + system) as a ratio to the same-run
``python -c "import numpy"`` (target for ``ldp --help``: at most 1.3), and which of numpy, pyarrow, pandas and scipy it imported (from
``python -X importtime``, with the cumulative import time of each;
scipy.stats and scipy.sparse shown apart from the scipy package).

Usage::

    python benchmarks/bench_imports.py
    python benchmarks/bench_imports.py --repeats 9
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("numpy", "pyarrow", "pandas", "scipy", "scipy.stats", "scipy.sparse")


def wall(argv: list[str], cwd: Path, repeats: int) -> float:
    """Median wall-clock seconds of ``argv`` run ``repeats`` times."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu(argv: list[str], cwd: Path, repeats: int) -> float:
    """Median CPU seconds (user + system) of ``argv`` run ``repeats`` times, from the children's rusage."""
    times = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


def heavy_imports(argv: list[str], cwd: Path) -> dict[str, float]:
    """Cumulative import seconds of each heavy top-level package ``argv`` imports (``-X importtime``)."""
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=cwd, capture_output=True, text=True)
    found = {}
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)$", line)
        if match and match.group(3) in HEAVY and match.group(3) not in found:
            found[match.group(3)] = int(match.group(1)) / 1e6
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_io import rappor_spec

        (work / "spec.json").write_text(rappor_spec().to_json())
        (work / "values.txt").write_text("".join(f"value-{i % 10}\n" for i in range(1000)))
        subprocess.run(
            [py, "-m", "ldp", "encode", "--spec", "spec.json", "values.txt", "-o", "reports.jsonl"],
            cwd=work,
            check=True,
            capture_output=True,
        )
        commands = {
            "python -c pass (reference)": [py, "-c", "pass"],
            "python -c 'import numpy'": [py, "-c", "import numpy"],
            "ldp --help": [py, "-m", "ldp", "--help"],
            "ldp encode (1,000 values)": [
                py,
                "-m",
                "ldp",
                "encode",
                "--spec",
                "spec.json",
                "values.txt",
                "-o",
                "out.jsonl",
            ],
            "ldp aggregate (1,000 reports)": [
                py,
                "-m",
                "ldp",
                "aggregate",
                "--spec",
                "spec.json",
                "reports.jsonl",
                "-o",
                "estimates.csv",
            ],
        }
        print(f"median of {args.repeats} runs, each in a fresh interpreter; Python {sys.version.split()[0]}")
        print(
            f"{'command':<32}{'seconds':>9}{'- python':>10}{'CPU s':>8}{'/ numpy':>9}"
            "  heavy imports (cumulative import s)"
        )
        reference = numpy_cpu = None
        for name, argv in commands.items():
            seconds = wall(argv, work, args.repeats)
            reference = seconds if reference is None else reference
            cpu_seconds = cpu(argv, work, args.repeats)
            if argv[1:] == ["-c", "import numpy"]:
                numpy_cpu = cpu_seconds
            ratio = f"{cpu_seconds / numpy_cpu:>9.2f}" if numpy_cpu else f"{'':>9}"
            heavy = heavy_imports(argv, work)
            listed = ", ".join(f"{k} {v:.2f}" for k, v in heavy.items()) or "none"
            print(
                f"{name:<32}{seconds:>9.2f}{seconds - reference:>10.2f}{cpu_seconds:>8.2f}{ratio}  {listed}",
                flush=True,
            )


if __name__ == "__main__":
    main()
