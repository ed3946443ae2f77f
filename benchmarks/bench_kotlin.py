"""The Kotlin client (kotlin/): encoding speed on one core beside SecureRandom, and the JAR's size.

Speed: ``dev.ldp.client.bench.EncodeBench`` (kotlin/ldp-client-tests/src/test/kotlin/.../bench, a plain timed harness) encodes
one value repeatedly on one thread with the pooled ``SecureRandom`` source apps use (``ByteSources.secure``):
after a warm-up for the JIT, the median of 5 rounds (the measurements of a spec taken in turn), in reports per
second of the thread's CPU time: one core's rate, even on a machine other processes share. The reference of the same run is
``SecureRandom.nextBytes`` into 16 KiB blocks (the pool's block size): the reports per second that drawing each
report's bytes alone would allow (``bytes/report`` is counted on the encoder's source). ``ratio`` is the
encoder's rate over that reference: 1 would mean the encoder costs no more than its random bytes.

=========  ===================================================================  ==============
row        spec                                                                 target
=========  ===================================================================  ==============
GRR        d = 100, epsilon = 1                                                 >= 1 M/s
OUE        d = 100, epsilon = 1                                                 (none)
RAPPOR     128 bits, 2 hashes, 64 cohorts, f = 1/2, p = 1/2, q = 3/4 (one       >= 100 k/s
           persistent client: its permanent responses memoized)
=========  ===================================================================  ==============

A mechanism the Kotlin registry does not encode yet is listed as not ported. Size: each artifact's JAR
(``kotlin/<artifact>/target``; target: <= 150 kB without dependencies), by package, and its runtime
dependencies (``target/runtime-dependencies.txt``, which ``mvn package`` writes) with their sizes. Figures are
wall-clock on a shared machine: read the ratios.

Usage::

    python benchmarks/bench_kotlin.py               # 2 s per measurement
    python benchmarks/bench_kotlin.py --seconds 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from pathlib import Path

import ldp

KOTLIN = Path(__file__).resolve().parent.parent / "kotlin"
VERSION = "0.1.0"
_POM = "{http://maven.apache.org/POM/4.0.0}"


def published_artifacts(root: Path = KOTLIN) -> tuple[str, ...]:
    """The parent POM's modules, in its order, less those that skip deployment (the testkit and the tests)."""
    modules = [m.text or "" for m in ET.parse(root / "pom.xml").getroot().iter(f"{_POM}module")]
    return tuple(
        name
        for name in modules
        if (
            ET.parse(root / name / "pom.xml").getroot().findtext(f"{_POM}properties/{_POM}maven.deploy.skip")
            or ""
        )
        .strip()
        .lower()
        != "true"
    )


ARTIFACTS = published_artifacts()
ARTIFACTS = (
    "ldp-client-core",
    "ldp-client-frequency",
    "ldp-client-rappor",
    "ldp-client-state",
    "ldp-client-numeric",
    "ldp-client-heavyhitters",
    "ldp-client-longitudinal",
    "ldp-client-keyvalue",
    "ldp-client-multiattribute",
    "ldp-client-upload",
    "ldp-client-cli",
)
REPOSITORY = Path(os.environ.get("MAVEN_REPOSITORY", Path.home() / ".m2" / "repository"))
JAR_TARGET_KB = 150
TARGETS = {"grr": 1_000_000, "rappor": 100_000}


def build() -> None:
    """``mvn package`` with the test classes compiled (the harness lives there), offline first."""
    command = ["mvn", "-B", "-q", "-DskipTests", "package"]
    done = subprocess.run([*command[:3], "-o", *command[3:]], cwd=KOTLIN, capture_output=True, text=True)
    if done.returncode != 0:
        done = subprocess.run(command, cwd=KOTLIN, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"mvn package failed in kotlin/:\n{(done.stdout + done.stderr)[-3000:]}")


def jar(artifact: str, kotlin: Path = KOTLIN) -> Path:
    """The JAR ``mvn package`` writes for one of the library's artifacts (in ``kotlin``, default this checkout's)."""
    return kotlin / artifact / "target" / f"{artifact}-{VERSION}.jar"


def classpath(kotlin: Path = KOTLIN) -> str:
    """The harness (the tests module's classes), the command line's JAR and its runtime class path (every family),
    of the built ``kotlin/`` directory ``kotlin`` (default this checkout's)."""
    return os.pathsep.join(
        [
            str(kotlin / "ldp-client-tests" / "target" / "test-classes"),
            str(jar("ldp-client-cli", kotlin)),
            *sorted(str(p) for p in (kotlin / "ldp-client-cli" / "target" / "lib").glob("*.jar")),
        ]
    )


def specs() -> dict[str, tuple[object, str]]:
    domain = tuple(f"v{i}" for i in range(100))
    return {
        "GRR": (ldp.GRR(domain=domain, epsilon=1.0), "v7"),
        "OUE": (ldp.OUE(domain=domain, epsilon=1.0), "v7"),
        "RAPPOR": (ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/2", q="3/4"), "v7"),
    }


def speed(seconds: float) -> list[dict]:
    listed = subprocess.run(
        ["java", "-cp", classpath(), "dev.ldp.client.cli.Main", "--list-mechanisms"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    rows, args = [], []
    with tempfile.TemporaryDirectory() as directory:
        for name, (spec, value) in specs().items():
            if spec.mechanism not in listed:
                rows.append({"name": name, "mechanism": spec.mechanism, "ported": False})
                continue
            path = Path(directory) / f"{name}.json"
            path.write_text(spec.to_json())
            args.append(f"{name}={path}={value}")
        if args:
            done = subprocess.run(
                ["java", "-cp", classpath(), "dev.ldp.client.bench.EncodeBench", str(seconds), *args],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                sys.exit(f"EncodeBench failed:\n{done.stderr[-3000:]}")
            rows += [{**json.loads(line), "ported": True} for line in done.stdout.splitlines()]
    order = list(specs())
    return sorted(rows, key=lambda r: order.index(r["name"]))


def print_speed(rows: list[dict]) -> None:
    print(
        "Encoding on one thread, pooled SecureRandom, per CPU-second (reference: SecureRandom.nextBytes, same run)\n"
    )
    header = f"{'spec':8} {'reports/s':>12} {'+ JSON line':>12} {'bytes/report':>13} {'nextBytes reports/s':>20} {'ratio':>7}  target"
    print(header)
    print("-" * len(header))
    for r in rows:
        target = TARGETS.get(r["mechanism"])
        wanted = f">= {target:,}/s" if target else ""
        if not r["ported"]:
            print(f"{r['name']:8} {'not ported to Kotlin yet':>66}  {wanted}")
            continue
        met = "" if not target else (" met" if r["reports_per_s"] >= target else " MISSED")
        ratio = (
            r["reports_per_s"] / r["reference_reports_per_s"]
            if r["reference_reports_per_s"] > 0
            else float("nan")
        )
        print(
            f"{r['name']:8} {r['reports_per_s']:>12,.0f} {r['json_reports_per_s']:>12,.0f} "
            f"{r['bytes_per_report']:>13.2f} {r['reference_reports_per_s']:>20,.0f} {ratio:>7.3f}  {wanted}{met}"
        )
    algorithms = {r["secure_random"] for r in rows if r["ported"]}
    if algorithms:
        reference = next(r for r in rows if r["ported"])["reference_bytes_per_s"]
        print(
            f"\nSecureRandom ({', '.join(sorted(algorithms))}): {reference / 1e6:,.1f} MB/s into 16 KiB blocks"
        )


def runtime_dependencies(artifact: str) -> list[tuple[str, Path]]:
    """(group:artifact:version, its JAR) of each runtime dependency of an artifact, from ``mvn package``'s list."""
    listed = KOTLIN / artifact / "target" / "runtime-dependencies.txt"
    found = []
    for line in listed.read_text(encoding="utf-8").splitlines():
        parts = line.strip().split(":")
        if len(parts) < 5 or parts[2] != "jar":
            continue
        group, name, version = parts[0], parts[1], parts[3]
        if group == "dev.ldp":
            path = jar(name)
        else:
            path = REPOSITORY.joinpath(*group.split("."), name, version, f"{name}-{version}.jar")
        found.append((f"{group}:{name}:{version}", path))
    return sorted(found, key=lambda d: (not d[0].startswith("dev.ldp:"), d[0]))


def print_size() -> None:
    print(f"\nLibrary JARs (target <= {JAR_TARGET_KB} kB each, without dependencies)\n")
    for artifact in ARTIFACTS:
        size = jar(artifact).stat().st_size
        verdict = "met" if size <= JAR_TARGET_KB * 1000 else "MISSED"
        print(f"{artifact:28} {size / 1000:8,.1f} kB  {verdict}")
        packages: Counter[str] = Counter()
        with zipfile.ZipFile(jar(artifact)) as archive:
            for info in archive.infolist():
                if info.filename.endswith(".class"):
                    packages[info.filename.rsplit("/", 1)[0].replace("/", ".")] += info.compress_size
        for package, compressed in packages.most_common():
            print(f"    {package:36} {compressed / 1000:8,.1f} kB compressed")
    print("\nRuntime dependencies of each artifact (transitive; sizes of the JARs)\n")
    for artifact in ARTIFACTS:
        print(f"{artifact}:")
        total = 0
        for coordinates, path in runtime_dependencies(artifact):
            size = path.stat().st_size if path.exists() else 0
            total += size
            shown = f"{size / 1000:10,.1f} kB" if path.exists() else "   (not found)"
            print(f"    {coordinates:52} {shown}")
        print(f"    {'total with the artifact':52} {(total + jar(artifact).stat().st_size) / 1000:10,.1f} kB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement (default 2)")
    parser.add_argument(
        "--no-build", action="store_true", help="use the modules' target/ folders as they are"
    )
    args = parser.parse_args()
    if not args.no_build:
        build()
    print_speed(speed(args.seconds))
    print_size()


if __name__ == "__main__":
    main()
