"""A longitudinal spec as a collector task: windows are rounds (docs/collector.md#longitudinal).

Each client keeps its state (the secret its memo is derived from) across
rounds and sends one report per round; the task's window is the round. The
collector's per-window estimates, with their standard errors and intervals,
must be exactly ``ldp aggregate``'s table on that round's reports. The fast
test goes through the service layer; the slow one runs ``ldp serve``, ``ldp
task create``, ``ldp encode --state`` and ``ldp upload`` as processes and
lets the TypeScript client (``ldp-encode --state --upload``) send a round
from the same state directory: both clients derive the same memo from it. The
fast test runs over every registered mechanism that memoizes, without naming
them.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from collector_server import Server, create_task, envelopes, http_client, store_path
from conformance.mechanism_examples import example_spec, example_values, mechanism_declarations

from ldp.aggregator import make_aggregator
from ldp.aggregator.views import default_consistency
from ldp.client import ClientState, make_encoder
from ldp.client.state_paths import state_path
from ldp.collector.service import CollectorService, CollectorSettings
from ldp.collector.store import open_store
from ldp.specs.base import load_spec

DOMAIN = ("a", "b", "c", "d")
HOUR = 3_600
ROUNDS = 3
#: Each round a client's value changes with this probability (to one drawn uniformly).
CHANGE = 0.2


def _evolving_values(users: int, seed: int) -> list[list[str]]:
    """``ROUNDS`` lists of the users' values: round r + 1 is round r with each value redrawn w.p. ``CHANGE``."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, len(DOMAIN), users)
    rounds = []
    for _ in range(ROUNDS):
        rounds.append([DOMAIN[v] for v in values])
        values = np.where(rng.random(users) < CHANGE, rng.integers(0, len(DOMAIN), users), values)
    return rounds


def _aggregate(spec, reports, confidence: float) -> pd.DataFrame:
    """What ``ldp aggregate`` computes from ``reports``: the accumulator's estimate table."""
    accumulator = make_aggregator(spec)
    accumulator.add_reports(reports)
    return accumulator.estimate(confidence=confidence, consistency=default_consistency(spec))


def _memoized_examples() -> list:
    """An example spec of every registered mechanism that memoizes (RAPPOR, the longitudinal ones)."""
    specs = [example_spec(decl) for decl in mechanism_declarations()]
    return [spec for spec in specs if getattr(spec, "memoized", False)]


def _rounds_of(spec, users: int) -> list[list]:
    """``ROUNDS`` lists of the users' values of ``spec``; each round a fifth of the users change value."""
    values = example_values(spec, users)
    rounds = []
    for r in range(ROUNDS):
        rounds.append(list(values))
        values = [values[(u + 1) % users] if u % 5 == r else v for u, v in enumerate(values)]
    return rounds


def test_the_memoized_examples_include_a_longitudinal_chain():
    assert "l-grr" in {spec.mechanism for spec in _memoized_examples()}


@pytest.mark.parametrize("spec", _memoized_examples(), ids=lambda spec: spec.mechanism)
def test_a_longitudinal_task_estimates_each_round_as_ldp_aggregate_does(tmp_path, spec):
    store = store_path(tmp_path)
    now = int(time.time())
    first = now - now % HOUR - ROUNDS * HOUR  # round r is the window [first + r·1h, first + (r + 1)·1h)
    task, token = create_task(store, spec, window="1h", time_precision="1m", min_batch=1, not_before=first)
    users = 300
    states = [ClientState.new(spec) for _ in range(users)]  # each client's secret, kept across rounds
    rounds = []
    for values in _rounds_of(spec, users):
        encoders = [make_encoder(spec, state=state) for state in states]  # a new run: the memo from the state
        rounds.append([encoder.encode(value) for encoder, value in zip(encoders, values)])
    collector = CollectorService(CollectorSettings(store=store), open_store(store, exclusive=True))

    async def scenario():
        found = await collector.task(task.task_id)
        for r, reports in enumerate(rounds):
            outcome = await collector.ingestion.ingest(found, envelopes(reports, first + r * HOUR + 60))
            assert (outcome.accepted, outcome.rejected) == (users, [])
        windows = await collector.estimates.estimates(found, None, None, 0.9, "window")
        return windows, await collector.estimates.dashboard(token)

    try:
        reply, dashboard = asyncio.run(scenario())
    finally:
        collector.close()
    windows = reply["windows"]
    assert [(w["start"], w["end"], w["n"]) for w in windows] == [
        (first + r * HOUR, first + (r + 1) * HOUR, users) for r in range(ROUNDS)
    ]
    for window, reports in zip(windows, rounds):
        pd.testing.assert_frame_equal(
            pd.DataFrame(window["estimates"]),
            _aggregate(spec, reports, 0.9),
            check_exact=True,
            check_dtype=False,
        )
    (summary,) = dashboard["tasks"]
    assert summary["memoized"] is True and summary["mechanism"] == spec.mechanism
    assert len(summary["windows"]) == ROUNDS


def _run(*command: object, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return done


def _ldp(*args: object) -> subprocess.CompletedProcess:
    return _run(sys.executable, "-m", "ldp", *args)


def _write_round(path: Path, values: list[str]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["client_id", "value"])
        writer.writerows((f"user-{u}", value) for u, value in enumerate(values))


def _after(t: float) -> None:
    """Sleep until the clock is past ``t``."""
    while time.time() <= t:
        time.sleep(max(0.01, t - time.time() + 0.01))


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.glob("*.json"))}


_TS_MEMOS = """
import { readFileSync } from "node:fs";
import { loadSpec, makeEncoder } from "./dist/index.js";
import { loadClientState, nativeShake256 } from "./dist/node.js";
const [specFile, ...files] = process.argv.slice(2);
const spec = loadSpec(readFileSync(specFile, "utf8"));
const memos = files.map((file) => {
  const encoder = makeEncoder(spec, { client: loadClientState(file, spec), shake: nativeShake256 });
  return spec.fields.domain.map((value) => encoder.memoIndex(value));
});
process.stdout.write(JSON.stringify(memos));
"""


@pytest.mark.slow
def test_python_and_typescript_clients_report_rounds_to_a_served_longitudinal_task(tmp_path, js_dist):
    spec_path, store, states = tmp_path / "spec.json", store_path(tmp_path), tmp_path / "states"
    _ldp("spec", "l-grr", "--epsilon", "2", "--domain", ",".join(DOMAIN), "-o", spec_path)
    spec = load_spec(spec_path.read_text())
    window = 2  # seconds: each round waits for the next window
    created = json.loads(
        _ldp(
            "task", "create", "--store", store, "--spec", spec_path, "--window", f"{window}s",
            "--time-precision", "1s", "--min-batch", "1", "--json",
        ).stdout
    )  # fmt: skip
    task_id, token = created["task"], created["token"]
    users = 120
    rounds = _evolving_values(users, seed=7)
    reports: list[Path] = []
    state_files: dict[str, str] = {}
    server = Server(store)
    try:
        previous_end = 0.0
        for r, values in enumerate(rounds):
            values_path, out = tmp_path / f"round{r}.csv", tmp_path / f"round{r}.jsonl"
            _write_round(values_path, values)
            _after(previous_end)  # this round's reports fall in a window after the last round's
            if r == 1:  # the TypeScript client, from the same state directory
                done = _run(
                    "node", js_dist / "dist" / "cli.js", "--spec", spec_path, values_path, "--state", states,
                    "--upload", server.url, "--task", task_id,
                )  # fmt: skip
                out.write_text(done.stdout)
                assert f"uploaded: {users} accepted" in done.stderr
            else:
                _ldp("encode", "--spec", spec_path, values_path, "--state", states, "-o", out)
                assert (
                    f"{users} accepted" in _ldp("upload", "--to", server.url, "--task", task_id, out).stderr
                )
            reports.append(out)
            previous_end = (time.time() // window + 1) * window
            if r == 0:
                state_files = _digests(states)
            assert _digests(states) == state_files  # created once, never re-drawn by either client
        reply = (
            http_client()
            .get(
                f"{server.url}/v1/tasks/{task_id}/estimates",
                params={"by": "window"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            )
            .json()
        )
    finally:
        server.stop()
    windows = reply["windows"]
    assert [w["n"] for w in windows] == [users] * ROUNDS
    assert all(w["end"] - w["start"] == window for w in windows)
    for r, (found, path) in enumerate(zip(windows, reports)):
        table = tmp_path / f"round{r}.parquet"
        _ldp("aggregate", "--spec", spec_path, path, "--confidence", "0.95", "-o", table)
        pd.testing.assert_frame_equal(
            pd.DataFrame(found["estimates"]), pd.read_parquet(table), check_exact=True, check_dtype=False
        )
    # one memo per (client, value), whichever client derives it from the state file
    files = [state_path(states, f"user-{u}") for u in range(users)]
    assert sorted(p.name for p in files) == sorted(state_files)
    script = tmp_path / "memos.mjs"
    script.write_text(_TS_MEMOS.replace("./dist/", (js_dist / "dist").as_uri() + "/"))
    typescript = json.loads(_run("node", script, spec_path, *files).stdout)
    python = [[make_encoder(spec, state=file).memo(value) for value in DOMAIN] for file in files]
    assert typescript == python
