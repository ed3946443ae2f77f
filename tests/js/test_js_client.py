"""The TypeScript client (js/) end to end: its ``ldp-encode`` reports aggregate correctly, and its Uploader
survives a collector killed mid-upload (every report stored exactly once).

js/ is installed and built once per session by the ``js_dist`` fixture (tests/js_build.py); the tests are
skipped, with the reason, only where node is not installed (and fail then under CI).
"""

from __future__ import annotations

import collections
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from collector_server import Server, create_task, store_path
from collector_server import estimates as collector_estimates
from scipy.stats import norm

import ldp
from ldp.cli import cli
from ldp.collector.store import open_store

JS = Path(__file__).resolve().parents[2] / "js"
CLI = JS / "dist" / "cli.js"
ALPHA = 1e-6
Z = float(norm.isf(ALPHA / 2))  # two-sided, per estimate

TRUTH = {"a": 5_000, "b": 3_000, "c": 1_500, "d": 500}


@pytest.fixture(scope="module", autouse=True)
def built(js_dist):
    """dist/ built from the current sources (the session's ``js_dist`` fixture)."""


def _ldp(*args) -> subprocess.CompletedProcess:
    """``ldp ARGS`` through the real CLI in this process (only the JS client runs in a process of its own)."""
    result = CliRunner().invoke(cli, list(map(str, args)))
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def _values(tmp_path: Path) -> Path:
    path = tmp_path / "values.txt"
    path.write_text("".join(f"{v}\n" * n for v, n in TRUTH.items()))
    return path


def _encode(spec: Path, values: Path, out: Path) -> None:
    with open(out, "w") as handle:
        done = subprocess.run(
            ["node", CLI, "--spec", spec, values], stdout=handle, stderr=subprocess.PIPE, text=True
        )
    assert done.returncode == 0, done.stderr


_RAPPOR = "rappor --encoding basic --domain a,b,c,d --num-bits 4 --num-cohorts 1 --f 1/4 --p 1/4 --q 3/4"
SPECS = {
    name: text.split(" ")
    for name, text in {
        "grr": "grr --epsilon 1 --domain a,b,c,d",
        "oue": "oue --epsilon 1 --domain a,b,c,d",
        "rappor": _RAPPOR,
    }.items()
}


@pytest.mark.parametrize(
    "mechanism", [m if m == "grr" else pytest.param(m, marks=pytest.mark.slow) for m in sorted(SPECS)]
)  # GRR in the fast set; every JS encoder is matched to Python's reports bit for bit by `npm test`
def test_js_reports_are_valid_and_estimates_are_within_z_standard_errors(mechanism, tmp_path):
    spec = tmp_path / "spec.json"
    made = _ldp("spec", *SPECS[mechanism], "-o", spec)
    assert made.returncode == 0, made.stderr
    reports, estimates = tmp_path / "reports.jsonl", tmp_path / "estimates.csv"
    _encode(spec, _values(tmp_path), reports)
    assert len(reports.read_text().splitlines()) == sum(TRUTH.values())
    aggregated = _ldp(
        "aggregate", "--spec", spec, reports, "--rejects", tmp_path / "rejects.jsonl", "-o", estimates
    )
    assert aggregated.returncode == 0, aggregated.stderr
    assert not (tmp_path / "rejects.jsonl").exists() or not (tmp_path / "rejects.jsonl").read_text().strip()
    table = pd.read_csv(estimates, dtype={"value": str}).set_index("value")
    for value, count in TRUTH.items():
        row = table.loc[value]
        assert abs(row["estimate"] - count) <= Z * row["std_error"], (value, row.to_dict(), Z)


def _stored(store: str, task_id: str) -> list:
    with open_store(store) as opened:
        return [r for chunk in opened.reports(task_id) for r in chunk]


@pytest.mark.slow  # fast representative: test_js_browser's outage test (the same Uploader, a stopped collector)
def test_js_uploader_survives_a_killed_collector_and_stores_every_report_once(tmp_path):
    spec = ldp.GRR(domain=tuple(TRUTH), epsilon=1.0)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    reports = tmp_path / "reports.jsonl"
    _encode(spec_path, _values(tmp_path), reports)
    n = sum(TRUTH.values())
    store = store_path(tmp_path)
    task, token = create_task(store, spec, window="1h", time_precision="1m", min_batch=1)
    servers = [Server(store, "--rate-limit", "0")]
    try:
        script = [
            JS / "scripts" / "upload.mjs",
            servers[0].url,
            task.task_id,
            reports,
            tmp_path / "spool.jsonl",
            500,
        ]
        uploader = subprocess.Popen(["node", *map(str, script)], stdout=subprocess.PIPE, text=True)
        assert uploader.stdout is not None
        assert uploader.stdout.readline().strip() == "batch 1"
        servers[0].kill()  # kill -9 mid-upload: later batches find nobody listening until the restart
        servers.append(Server(store, "--rate-limit", "0", port=servers[0].port))
        out, _ = uploader.communicate(timeout=120)
        assert uploader.returncode == 0
        summary = json.loads(out.strip().splitlines()[-1])
        assert summary["accepted"] + summary["replayed"] == n and summary["rejected"] == []
        assert summary["spooled"] == 0 and summary["retries"] >= 1  # it did meet the dead collector

        stored = _stored(store, task.task_id)
        assert len(stored) == n and len({r.report_id for r in stored}) == n
        sent = collections.Counter(
            json.dumps(json.loads(line), sort_keys=True) for line in reports.read_text().splitlines()
        )
        kept = collections.Counter(json.dumps(json.loads(r.report), sort_keys=True) for r in stored)
        assert kept == sent  # each JS report stored exactly once

        served = collector_estimates(servers[-1], task, token).json()
        offline = tmp_path / "estimates.parquet"
        assert _ldp("aggregate", "--spec", spec_path, reports, "-o", offline).returncode == 0
        assert served["n"] == n
        pd.testing.assert_frame_equal(
            pd.DataFrame(served["estimates"]), pd.read_parquet(offline), check_exact=True, check_dtype=False
        )
    finally:
        for server in servers:
            server.stop()


def test_js_and_python_pick_the_same_state_and_ledger_files_by_client_id(tmp_path):
    """ldp-encode --state reads CSV client_id cells as Python does: same state and ledger file per client."""
    from ldp.client.cli import ledger_path, state_path

    spec = tmp_path / "spec.json"
    made = _ldp("spec", *_RAPPOR.split(" "), "-o", spec)
    assert made.returncode == 0, made.stderr
    values = tmp_path / "values.csv"
    ids = ["1", "1.0", "007", "alice", "1.000", "é"]
    values.write_text("client_id,url\n" + "".join(f"{c},{'abcd'[i % 4]}\n" for i, c in enumerate(ids)))
    states = tmp_path / "states"
    done = subprocess.run(
        ["node", CLI, "--spec", spec, values, "--column", "url", "--state", states, "--budget", "20"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(ids)
    clients = {"1", "007", "alice", "é"}  # 1, 1.0 and 1.000 are one client
    expected = {state_path(states, c).name for c in clients} | {ledger_path(states, c).name for c in clients}
    written = {p.name for p in states.iterdir() if p.name.endswith(".json")}
    assert written == expected
    before = {
        p.name: p.read_bytes() for p in states.iterdir() if p.name in expected and ".ledger" not in p.name
    }
    # Python's ldp encode on the same directory opens the JS client's files (same secrets, same ledgers)
    again = _ldp(
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
    assert again.returncode == 0, again.stderr
    after = {
        p.name: p.read_bytes() for p in states.iterdir() if p.name in expected and ".ledger" not in p.name
    }
    assert after == before
    # and the JS client again after Python (whose flock file <ledger>.lock stays behind: JS locks <ledger>.jslock)
    third = subprocess.run(
        ["node", CLI, "--spec", spec, values, "--column", "url", "--state", states, "--budget", "20"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert third.returncode == 0, third.stderr
    ledger = json.loads((states / ledger_path(states, "1").name).read_text())
    # three rows of client 1 ("1", "1.0", "1.000"), three runs
    assert sum(s["reports"] for s in ledger["streams"].values()) == 3 * 3


def test_js_cli_writes_every_report_to_a_pipe(tmp_path):
    """ldp-encode's output through a pipe is complete (process.exit() used to cut it after the first 64 KiB)."""
    spec = tmp_path / "grr.json"
    assert _ldp("spec", *SPECS["grr"], "-o", spec).returncode == 0
    values = _values(tmp_path)
    done = subprocess.run(["node", CLI, "--spec", spec, values], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == sum(TRUTH.values()) and len(done.stdout) > 1 << 16
