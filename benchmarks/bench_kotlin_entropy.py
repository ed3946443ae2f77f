"""The Kotlin client's CSPRNG bytes per report against the entropy a report needs (issue 28: at most 2×).

Runs ``dev.ldp.client.bench.EntropyBench`` (kotlin/ldp-client-tests/src/test/kotlin/.../bench), which
prints the table, every figure measured in the same run: for each spec below, the bytes one report draws
from the CSPRNG before the per-report bit samplers (``B/rep before``: the encoder's fresh draws made with
the byte samplers it used until then, randbelow, the bit-sliced lanes and Floyd's sampling, which the
keyed PRF streams still use) and after (``B/rep after``: counted on the encoder's source), each over
10,000 reports of one value; the Shannon entropy of one report given the input in bytes (``H B/rep``, the
formulas of ``bench_entropy.py``); both ratios (target: after ≤ 2× the entropy); the draws alone per
CPU-second with the pooled ``SecureRandom``, before and after, and their ratio (``after÷``); and the
whole encoder's reports per CPU-second.

=======  ====================================================================
row      spec
=======  ====================================================================
GRR      d = 1,024, ε = 1
BinRR    binary RR, ε = 1
OUE      d = 1,024, ε = 1
SS       subset selection, d = 1,024, ε = 1 (ω = 275)
RAPPOR   basic, d = 1,024 bits, f = 1/2, p = 1/4, q = 3/4, one persistent
         client (its permanent responses memoized: a report's fresh coins are
         the instantaneous response's, entropy d·h(3/8))
=======  ====================================================================

Figures are per CPU-second on a shared machine: read the ratios.

``--before DIR`` then compares whole encoders with another build of the client (``DIR``: a checkout whose
``kotlin/`` was built with ``mvn package``, e.g. a second worktree of the commit before the per-report bit
samplers): ``EncodeBench`` of each build in its own JVM, the two builds' runs alternating (ABAB…, ``--pairs``
pairs), each row the median reports per CPU-second of each build and their ratio, with the load average.

Usage::

    python benchmarks/bench_kotlin_entropy.py               # 2 s per measurement
    python benchmarks/bench_kotlin_entropy.py --seconds 5 --no-build
    python benchmarks/bench_kotlin_entropy.py --before /work/wt-old --pairs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_entropy import binary_entropy, entropy_bits
from bench_kotlin import build, classpath

import ldp

DOMAIN = tuple(f"v{i}" for i in range(1024))


def specs() -> dict[str, tuple[object, str, float]]:
    """Per row: (spec, the value encoded, entropy of one report in bits)."""
    grr = ldp.GRR(domain=DOMAIN, epsilon=1.0)
    binary = ldp.BinaryRR(epsilon=1.0)
    oue = ldp.OUE(domain=DOMAIN, epsilon=1.0)
    ss = ldp.SubsetSelection(domain=DOMAIN, epsilon=1.0)
    rappor = ldp.Rappor(encoding="basic", domain=DOMAIN, f="1/2", p="1/4", q="3/4")
    # a persistent client's fresh coins: d instantaneous bits, each 1 with 5/8 or 3/8 (the same entropy)
    assert binary_entropy(rappor.prob_one_given_one) == binary_entropy(rappor.prob_one_given_zero)
    rappor_bits = rappor.num_bits * binary_entropy(rappor.prob_one_given_one)
    return {
        "GRR": (grr, "v7", entropy_bits(grr)),
        "BinRR": (binary, "1", entropy_bits(binary)),
        "OUE": (oue, "v7", entropy_bits(oue)),
        "SS": (ss, "v7", entropy_bits(ss)),
        "RAPPOR": (rappor, "v7", rappor_bits),
    }


def encode_rate(classpath: str, item: str, seconds: float) -> float:
    """One ``EncodeBench`` run of ``NAME=SPEC.json=VALUE`` in its own JVM: reports per CPU-second."""
    done = subprocess.run(
        ["java", "-cp", classpath, "dev.ldp.client.bench.EncodeBench", str(seconds), item],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"EncodeBench failed:\n{done.stderr[-3000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["reports_per_s"])


def before_after(before: Path, seconds: float, pairs: int) -> None:
    """Whole encoders of this build against ``before``'s, runs alternating, medians and their ratio."""
    builds = {"after": classpath(), "before": classpath(before / "kotlin")}
    print(
        f"Encoders, reports per CPU-second, median of {pairs} runs each, builds alternating ({before} before)"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print(f"{'spec':<7} {'before':>12} {'after':>12} {'after÷before':>13}")
    with tempfile.TemporaryDirectory() as directory:
        for name, (spec, value, _) in specs().items():
            path = Path(directory) / f"{name}.json"
            path.write_text(spec.to_json())  # type: ignore[attr-defined]
            rates: dict[str, list[float]] = {"before": [], "after": []}
            for pair in range(pairs):
                order = ["before", "after"] if pair % 2 == 0 else ["after", "before"]
                for build_name in order:
                    rates[build_name].append(
                        encode_rate(builds[build_name], f"{name}={path}={value}", seconds)
                    )
            old, new = statistics.median(rates["before"]), statistics.median(rates["after"])
            print(f"{name:<7} {old:>12,.0f} {new:>12,.0f} {new / old:>13.2f}")
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement (default 2)")
    parser.add_argument(
        "--no-build", action="store_true", help="use the modules' target/ folders as they are"
    )
    parser.add_argument(
        "--before", type=Path, help="another checkout with kotlin/ built: compare whole encoders"
    )
    parser.add_argument(
        "--pairs", type=int, default=3, help="alternating runs per build with --before (default 3)"
    )
    args = parser.parse_args()
    if not args.no_build:
        build()
    if args.before is not None:
        before_after(args.before, args.seconds, args.pairs)
        return
    with tempfile.TemporaryDirectory() as directory:
        items = []
        for name, (spec, value, entropy) in specs().items():
            path = Path(directory) / f"{name}.json"
            path.write_text(spec.to_json())  # type: ignore[attr-defined]
            items.append(f"{name}={path}={value}={entropy!r}")
        done = subprocess.run(
            ["java", "-cp", classpath(), "dev.ldp.client.bench.EntropyBench", str(args.seconds), *items],
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        sys.exit(f"EntropyBench failed:\n{done.stderr[-3000:]}")
    print("CSPRNG bytes per report (Kotlin client), one thread, pooled SecureRandom, per CPU-second\n")
    print(done.stdout, end="")


if __name__ == "__main__":
    main()
