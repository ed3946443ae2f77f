"""ldp.collector.client against the session's real ``ldp serve`` (conftest's shared_collector)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from collector_server import create_task

import ldp
from ldp.cli import cli
from ldp.client import encode_batch
from ldp.client.upload import UploadError
from ldp.collector.client import CollectorClient
from ldp.errors import InputError, ParameterError

# the tests of this group share one pytest-xdist worker, so the session's `ldp serve` starts once
pytestmark = pytest.mark.xdist_group("collector_server")

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


def _reports(n: int, seed: int = 3) -> list[ldp.Report]:
    values = list(np.random.default_rng(seed).choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]))
    return list(encode_batch(GRR, values, np.random.default_rng(seed)).reports(GRR))


def test_upload_from_memory_then_estimates_as_a_data_frame_equal_to_aggregate(shared_collector, tmp_path):
    server = shared_collector
    task, token = create_task(server.store, GRR, window="1h", time_precision="1m", min_batch=1, name="demo")
    client = CollectorClient(server.url, token=token)
    reports = _reports(400)
    spool = tmp_path / "spool.envelopes.jsonl"
    summary = client.upload(task.task_id, reports, spool, batch_size=150)
    assert (summary.accepted, summary.replayed, summary.rejected) == (400, 0, [])
    stored = spool.read_bytes()

    # the same reports again (a retry, a rerun after a crash): the same envelopes, nothing counted twice
    envelopes, again = client.upload_envelopes(task.task_id, [r.to_dict() for r in reports], spool)
    assert (again.accepted, again.replayed, envelopes.created) == (0, 400, False)
    assert spool.read_bytes() == stored

    table = client.estimates(task.task_id)
    assert table.attrs["n"] == 400 and table.attrs["withheld"] is None
    reports_path, out = tmp_path / "reports.jsonl", tmp_path / "estimates.parquet"
    reports_path.write_text("".join(r.to_json() + "\n" for r in reports))
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    assert (
        CliRunner()
        .invoke(cli, ["aggregate", "--spec", str(spec_path), str(reports_path), "-o", str(out)])
        .exit_code
        == 0
    )
    pd.testing.assert_frame_equal(table, pd.read_parquet(out), check_exact=True, check_dtype=False)

    windows = client.estimates(task.task_id, by_window=True)
    assert list(windows.columns[:3]) == ["window_start", "n", "pruned"] and set(windows["n"]) == {400}
    assert not windows["pruned"].any() and table.attrs["pruned_windows"] == 0

    listed = client.tasks()
    assert listed.loc[0, ["task", "name", "mechanism", "reports"]].tolist() == [
        task.task_id,
        "demo",
        "grr",
        400,
    ]
    assert client.task(task.task_id).fingerprint == GRR.fingerprint


def test_a_bloom_rappor_tasks_candidates_as_a_data_frame_equal_to_aggregate(shared_collector, tmp_path):
    """Issue 29: the decoded candidates the collector serves, read from Python, are ldp aggregate --candidates'."""
    server = shared_collector
    spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
    candidates = [f"v{i}" for i in range(8)]
    task, token = create_task(
        server.store, spec, window="1h", time_precision="1m", min_batch=1, candidates=tuple(candidates)
    )
    client = CollectorClient(server.url, token=token)
    values = list(np.random.default_rng(4).choice(candidates[:3], 600, p=[0.5, 0.3, 0.2]))
    reports = list(encode_batch(spec, values, np.random.default_rng(4)).reports(spec))
    assert client.upload(task.task_id, reports, tmp_path / "spool.envelopes.jsonl").accepted == 600
    table = client.candidates(task.task_id)
    assert (
        table.attrs["n"] == 600 and table.attrs["num_candidates"] == 8 and table.attrs["correction"] == "bh"
    )
    listed, out = tmp_path / "candidates.txt", tmp_path / "decode.parquet"
    listed.write_text("\n".join(candidates))
    args = ["aggregate", "--store", server.store, "--task", task.task_id, "--candidates", listed, "-o", out]
    assert CliRunner().invoke(cli, [str(a) for a in args]).exit_code == 0
    expected = pd.read_parquet(out).sort_values("estimate", ascending=False, kind="stable", ignore_index=True)
    pd.testing.assert_frame_equal(table, expected, check_exact=True, check_dtype=False)
    windows = client.candidates(task.task_id, by_window=True)
    assert list(windows.columns[:3]) == ["window_start", "n", "value"] and len(windows) == 8
    assert client.estimates(task.task_id).columns[:2].tolist() == ["cohort", "bit"]  # the bits, as before


def test_client_refusals_are_one_line_errors(shared_collector, tmp_path):
    server = shared_collector
    task, token = create_task(server.store, GRR, window="1h", time_precision="1m", min_batch=1)
    client = CollectorClient(server.url)
    with pytest.raises(ParameterError, match="give a collector token"):
        client.estimates(task.task_id)
    with pytest.raises(UploadError, match="401") as refused:
        client.estimates(task.task_id, token=token + "x")
    assert refused.value.status == 401
    other = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    with pytest.raises(InputError, match="the task takes spec fingerprint"):
        client.upload(
            task.task_id,
            encode_batch(other, ["a"], np.random.default_rng(1)).reports(other),
            tmp_path / "x.jsonl",
        )
    assert not (tmp_path / "x.jsonl").exists()  # refused before the spool was written
    with pytest.raises(InputError, match="no reports given"):
        client.upload(task.task_id, [], tmp_path / "y.jsonl")


def test_the_client_needs_no_server_dependency():
    code = "import sys, ldp.collector.client; print(sorted({'fastapi', 'uvicorn', 'starlette'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
