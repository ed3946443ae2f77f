"""The Kotlin client (kotlin/) end to end: its JUnit suite, its reports aggregated by ``ldp aggregate``, and its
command-line encoder audited by ``ldp audit --encoder-cmd``.

kotlin/ is packaged once per session by the ``kotlin_classpath`` fixture (tests/kotlin_build.py); the tests are
skipped, with the reason, only where java or mvn is not installed (and fail then under CI). Every test here is
slow: packaging the client takes Maven most of a minute, too much for the fast set (the Kotlin encoders are
matched to Python's reports byte for byte by the JUnit suite, which ``test_the_kotlin_junit_suite_passes`` runs).

The mechanisms come from the Kotlin registry (``Registry.ARTIFACTS`` in the generated
kotlin/ldp-client-core/.../Registry.kt), so a family ported later is covered with no edit here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import every_spec_shape, sample_values
from kotlin_build import JAR, KOTLIN, maven
from scipy.stats import norm

from ldp.audit import audit_claims, run_audit
from ldp.audit_sources import command_sampler
from ldp.cli import cli
from ldp.numeric_wire import has_table, numeric_table

pytestmark = pytest.mark.slow

MAIN = "dev.ldp.client.cli.Main"
REGISTRY = KOTLIN / "ldp-client-core" / "src" / "main" / "kotlin" / "dev" / "ldp" / "client" / "Registry.kt"
ALPHA = 1e-6
Z = float(norm.isf(ALPHA / 2))  # two-sided, per estimate
N = 10_000


def kotlin_mechanisms() -> list[str]:
    """``Registry.ARTIFACTS`` of the generated Registry.kt: the mechanisms the Kotlin client encodes (the command
    line has every artifact on its class path, so its ``Registry.ENCODED`` is all of them)."""
    found = re.search(
        r"val ARTIFACTS: Map<String, String> = linkedMapOf\(([^)]*)\)", REGISTRY.read_text(encoding="utf-8")
    )
    assert found, f"no ARTIFACTS table in {REGISTRY}"
    return re.findall(r'"([^"]+)" to "', found.group(1))


def _specs() -> dict[str, object]:
    """One spec per mechanism the Kotlin client encodes (the format tests' shapes; the first of each)."""
    encoded = set(kotlin_mechanisms())
    out: dict[str, object] = {}
    for spec in every_spec_shape():
        if spec.mechanism == "rappor" and spec.encoding != "basic":
            continue  # basic RAPPOR estimates its domain; Bloom RAPPOR's reports are matched by the vectors
        if spec.mechanism in encoded:
            out.setdefault(spec.mechanism, spec)
    return out


SPECS = _specs()


def _ldp(*args) -> subprocess.CompletedProcess:
    """``ldp ARGS`` through the real CLI in this process (only the Kotlin client runs in a process of its own)."""
    result = CliRunner().invoke(cli, list(map(str, args)))
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def _write_spec(spec, tmp_path: Path) -> list[str]:
    """Write ``spec`` (and a grid spec's sampling table) to ``tmp_path``: the command's spec arguments."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    args = ["--spec", str(spec_path)]
    if has_table(spec):
        table = numeric_table(spec)
        if "digest" in table:  # a grid table: the server's, never rebuilt by the client
            (tmp_path / "table.json").write_text(json.dumps(table))
            args += ["--table", str(tmp_path / "table.json")]
    return args


def _encode(classpath: str, args: list[str], values: list, out: Path) -> None:
    with open(out, "w") as handle:
        done = subprocess.run(
            ["java", "-cp", classpath, MAIN, *args],
            input="".join(f"{v}\n" for v in values),
            stdout=handle,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr


# -- the JUnit suite -------------------------------------------------------------------------------------


def test_the_kotlin_junit_suite_passes(kotlin_classpath):
    """``mvn verify`` in kotlin/ (every vector section, the chi-square tests of SecureRandom output): all pass.

    So ``pytest -m slow`` runs every Kotlin test CI runs; the surefire reports must show tests ran.
    """
    reports = KOTLIN.glob("ldp-client-*/target/surefire-reports")  # one folder per module
    for stale in KOTLIN.glob(
        "ldp-client-*/target/surefire-reports/TEST-*.xml"
    ):  # a class since deleted must not count
        stale.unlink()
    done = maven("verify", timeout=1800)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-40:])
    assert done.returncode == 0, tail
    totals = Counter()
    for report in KOTLIN.glob("ldp-client-*/target/surefire-reports/TEST-*.xml"):
        suite = ET.parse(report).getroot()
        for key in ("tests", "failures", "errors"):
            totals[key] += int(suite.get(key, "0"))
    assert totals["tests"] > 0, f"no tests ran: {sorted(str(p) for p in reports)}"
    assert totals["failures"] == 0 and totals["errors"] == 0, totals


# -- cross-language: Kotlin reports, Python aggregation --------------------------------------------------


#: mechanisms the command cannot feed: it reads one value per line, and a record is several
NOT_ONE_LINE = {"multi-attribute": "a record (one value per attribute) is not one line of text"}


def _domain_values(spec, n: int) -> list:
    """n values over the domain with unequal counts (the first values most often)."""
    domain = list(spec.domain)[:4]
    weights = [8, 4, 2, 1][: len(domain)]
    per = [n * w // sum(weights) for w in weights]
    return [v for v, count in zip(domain, per, strict=True) for _ in range(count)]


def _values(spec, n: int) -> list:
    """Inputs: unequal counts over a domain of values, else the suite's sample values (numbers, strings, key-value maps)."""
    sample = sample_values(spec, n)
    if spec.report_kind == "numeric" or getattr(spec, "domain", None) is None or isinstance(sample[0], dict):
        return sample
    return _domain_values(spec, n)


def _line(value) -> str:
    """A value as one input line: a key-value input as its JSON object (what the encoders parse), else its text."""
    return json.dumps(value) if isinstance(value, dict) else str(value)


def _check_histogram(spec, values: list, table: pd.DataFrame) -> None:
    """Each estimated count (and a key-value key's mean) within Z·SE of the truth."""
    table = table.set_index("value")
    if values and isinstance(values[0], dict):  # key-value: a key's holders, and the mean of their values
        counts = Counter(key for v in values for key in v)
        sums = Counter()
        for v in values:
            for key, x in v.items():
                sums[key] += x
    else:
        counts, sums = Counter(str(v) for v in values), Counter()
    rows = list(map(str, spec.domain)) if getattr(spec, "domain", None) is not None else list(table.index)
    assert rows, "no estimates"
    for value in rows:
        row = table.loc[value]
        assert abs(row["estimate"] - counts[value]) <= Z * row["std_error"], (value, row.to_dict(), Z)
        if "mean_std_error" in table.columns and counts[value] and pd.notna(row["mean_std_error"]):
            truth = sums[value] / counts[value]
            assert abs(row["mean"] - truth) <= Z * row["mean_std_error"], (value, row.to_dict(), truth)


@pytest.mark.parametrize("mechanism", sorted(SPECS))
def test_kotlin_reports_aggregate_within_z_standard_errors_of_the_truth(
    mechanism, kotlin_classpath, tmp_path
):
    """Reports of the Kotlin CLI, estimated by ``ldp aggregate``: each estimate within Z·SE (two-sided α = 1e-6)."""
    if mechanism in NOT_ONE_LINE:
        pytest.skip(f"{mechanism}: {NOT_ONE_LINE[mechanism]}")
    spec = SPECS[mechanism]
    args = _write_spec(spec, tmp_path)
    values = _values(spec, N)
    reports, estimates = tmp_path / "reports.jsonl", tmp_path / "estimates.csv"
    _encode(kotlin_classpath, args, [_line(v) for v in values], reports)
    assert len(reports.read_text().splitlines()) == len(values)
    rejects = tmp_path / "rejects.jsonl"
    done = _ldp("aggregate", "--spec", args[1], reports, "--rejects", rejects, "-o", estimates)
    assert done.returncode == 0, done.stderr
    assert not rejects.exists() or not rejects.read_text().strip()
    table = pd.read_csv(estimates, dtype={"value": str})
    if spec.report_kind == "numeric":  # a mean
        truth = sum(float(v) for v in values) / len(values)
        row = table.iloc[0]
        assert abs(row["mean"] - truth) <= Z * row["std_error"], (row.to_dict(), truth, Z)
    else:
        _check_histogram(spec, values, table)


# -- the audit of the Kotlin CLI -------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", sorted(SPECS))
def test_the_kotlin_cli_is_consistent_with_its_claim(mechanism, kotlin_classpath, tmp_path):
    """``ldp audit --encoder-cmd`` on the Kotlin CLI (each line a new client): no violation at confidence 1 − 1e-6."""
    if mechanism in NOT_ONE_LINE:
        pytest.skip(f"{mechanism}: {NOT_ONE_LINE[mechanism]}")
    spec = SPECS[mechanism]
    args = _write_spec(spec, tmp_path)
    command = shlex.join(["java", "-cp", kotlin_classpath, MAIN, *args])
    claims = audit_claims(spec, memoized=False)
    result = run_audit(spec, command_sampler(spec, command), 2000, confidence=1 - ALPHA, claims=claims)
    assert not result.violation, result.worst


def test_the_packaged_cli_finds_every_family_artifact_on_its_class_path(kotlin_classpath):
    """``--list-mechanisms`` is ``Registry.ENCODED``: core finds each family JAR of ``lib/`` through ServiceLoader."""
    done = subprocess.run(
        ["java", "-cp", kotlin_classpath, MAIN, "--list-mechanisms"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == kotlin_mechanisms()


def test_ldp_audit_runs_the_kotlin_cli_as_documented(kotlin_classpath, tmp_path):
    """The command of docs/kotlin.md#cli through ``ldp audit`` itself: a class path with ``lib/*`` (the JVM expands it)."""
    spec = SPECS["grr"]
    args = _write_spec(spec, tmp_path)
    copy = Path(kotlin_classpath.split(os.pathsep)[0]).parent
    classpath = os.pathsep.join([str(copy / JAR.name), str(copy / "lib" / "*")])
    command = shlex.join(["java", "-cp", classpath, MAIN, *args])
    done = _ldp("audit", *args[:2], "--encoder-cmd", command, "--samples", "2000", "--confidence", 1 - ALPHA)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: consistent" in done.stdout


# -- persistent clients shared with Python ---------------------------------------------------------------

_RAPPOR = "rappor --encoding basic --domain a,b,c,d --num-bits 4 --num-cohorts 8 --f 1/4 --p 1/4 --q 3/4"


def test_kotlin_and_python_share_a_clients_state_and_ledger_files(kotlin_classpath, tmp_path):
    """--state DIR --client ID opens the files Python's ``ldp encode --state DIR`` opens for a row of that client_id."""
    from ldp.client.cli import ledger_path, state_path

    spec = tmp_path / "spec.json"
    assert _ldp("spec", *_RAPPOR.split(" "), "-o", spec).returncode == 0
    states = tmp_path / "states"
    ids = ["1", "007", "alice", "é"]

    def kotlin(client: str) -> None:
        command = ["java", "-cp", kotlin_classpath, MAIN, "--spec", str(spec), "--state", str(states)]
        done = subprocess.run(
            [*command, "--client", client, "--budget", "20"], input="a\n", capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) == 1

    for client in ids:
        kotlin(client)
    expected = {state_path(states, c).name for c in ids} | {ledger_path(states, c).name for c in ids}
    assert {p.name for p in states.iterdir() if p.name.endswith(".json")} == expected
    secrets = {c: state_path(states, c).read_bytes() for c in ids}

    # Python's ldp encode on the same directory opens the Kotlin client's files: same secrets, same ledgers
    values = tmp_path / "values.csv"
    values.write_text("client_id,url\n" + "".join(f"{c},b\n" for c in ["1.0", *ids]))
    done = _ldp(
        "encode",
        "--spec",
        spec,
        values,
        "--column",
        "url",
        "--state",
        states,
        "--budget",
        "20",
        "-o",
        tmp_path / "py.jsonl",
    )
    assert done.returncode == 0, done.stderr
    assert {c: state_path(states, c).read_bytes() for c in ids} == secrets
    kotlin("1.000")  # and Kotlin again after Python: client 1 once more
    ledger = json.loads(ledger_path(states, "1").read_text())
    assert (
        sum(s["reports"] for s in ledger["streams"].values()) == 4
    )  # Kotlin, Python twice ("1.0", "1"), Kotlin
