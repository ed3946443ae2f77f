"""Single-report encoders (``encoder.encode(value)``, the device's path): this checkout against an older one.

Each round runs one subprocess per side, in a rotating order (the old
checkout; this one with the compiled run walk, numba warm; this one on its
pure-Python path), and each subprocess encodes ``--reports`` values one
report at a time with :func:`ldp.client.make_encoder` for every registered
mechanism (or ``--only``; the specs of ``bench_entropy.py``: d = 1,024, ε = 1), after one warm pass
(tables built; on the compiled side the kernel loaded, from numba's disk
cache, by ``report_bits_kernel.COMPILED_WALKS = "always"``; on the Python
side ``"never"``), ``--repeat`` times; it reports the CPU seconds
(``time.process_time``: other work on a shared machine moves the wall clock
more) of the median pass. The table gives the median over the rounds of
reports/s for each side and the ratios to the old checkout, with the load
average before and after. An old checkout without the compiled walk runs
as it is.

The older checkout needs its own environment, where ``import ldp`` is that
checkout (an editable install in a second virtual environment)::

    git worktree add --detach ../ldp-old b74775c
    python -m venv --system-site-packages ../venv-old
    (cd ../ldp-old && ../venv-old/bin/pip install --no-deps -e .)
    python benchmarks/bench_report_speed.py --old-root ../ldp-old --old-python ../venv-old/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from ldp.registry import declarations

#: Run by each checkout's interpreter in its own root: prints {mechanism: CPU seconds of one pass}.
_MEASURE = r"""
import json, statistics, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
from bench_entropy import build_spec
from ldp.client import make_encoder
from ldp.registry import declarations

names, reports, repeat, walks = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path.append(sys.argv[5])  # this checkout's benchmarks, after the measured checkout's own
from report_inputs import report_inputs
try:
    from ldp.client import report_bits_kernel
    report_bits_kernel.COMPILED_WALKS = walks
except ImportError:  # an older checkout
    pass


out = {}
for decl in declarations():
    if decl.name not in names:
        continue
    spec = build_spec(decl, 1024, 1.0)
    encoder = make_encoder(spec)
    values = report_inputs(spec, reports)
    for value in values:
        encoder.encode(value)
    passes = []
    for _ in range(repeat):
        start = time.process_time()
        for value in values:
            encoder.encode(value)
        passes.append(time.process_time() - start)
    out[decl.name] = statistics.median(passes)
print(json.dumps(out))
"""


def measure(
    python: str, root: Path, names: list[str], reports: int, repeat: int, walks: str
) -> dict[str, float]:
    """CPU seconds of one pass of ``reports`` reports per mechanism, by ``python`` in the checkout ``root``.

    ``walks``: ``report_bits_kernel.COMPILED_WALKS`` in the subprocess (when the checkout has it).
    """
    done = subprocess.run(
        [
            python,
            "-c",
            _MEASURE,
            ",".join(names),
            str(reports),
            str(repeat),
            walks,
            str(Path(__file__).parent),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-root", type=Path, required=True, help="the older checkout")
    parser.add_argument(
        "--old-python", required=True, help="an interpreter whose `import ldp` is that checkout"
    )
    parser.add_argument("--reports", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=4, help="rounds of one run a side, in a rotating order")
    parser.add_argument("--only", default="", help="comma-separated mechanism names")
    args = parser.parse_args()
    names = [name for name in args.only.split(",") if name] or [decl.name for decl in declarations()]
    new_root = Path(__file__).resolve().parent.parent
    sides = {
        "old": (args.old_python, args.old_root, "auto"),
        "new": (sys.executable, new_root, "always"),
        "python": (sys.executable, new_root, "never"),
    }
    order = list(sides)
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for round_ in range(args.rounds):
        for side in order[round_ % 3 :] + order[: round_ % 3]:
            python, root, walks = sides[side]
            runs[side].append(measure(python, root, names, args.reports, args.repeat, walks))
    load_after = os.getloadavg()
    print(
        f"single-report encoders, d = 1,024, eps = 1: {args.reports} reports x median of {args.repeat} passes, "
        f"CPU time; medians of {args.rounds} rounds in rotating order; load {load_before[0]:.1f} -> "
        f"{load_after[0]:.1f}; new: the compiled run walk loaded in the warm pass (COMPILED_WALKS = 'always'), "
        "python: the same checkout without it ('never')"
    )
    print("| mechanism | old reports/s | new reports/s | new ÷ old | python reports/s | python ÷ old |")
    print("|---|---|---|---|---|---|")
    for name in names:
        old, new, python = (
            statistics.median(args.reports / run[name] for run in runs[side] if name in run) for side in sides
        )
        print(f"| {name} | {old:,.0f} | {new:,.0f} | {new / old:.2f} | {python:,.0f} | {python / old:.2f} |")


if __name__ == "__main__":
    main()
