"""A Bloom RAPPOR task's candidates: each window decoded by the service, as ``ldp aggregate --candidates`` decodes.

The service (SQLite, no HTTP) decodes every window and any range of windows
against the task's candidates with the aggregator's decode; the numbers must
be those of ``ldp aggregate --store --task --candidates`` on the same stored
reports. Decodes are kept by the window's counts: polling the dashboard
decodes nothing again until a window receives reports or the candidates
change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from collector_server import create_task, envelopes, now_truncated, store_path

import ldp
from ldp.cli import cli
from ldp.client import encode_batch
from ldp.collector.candidate_view import top_candidates
from ldp.collector.envelopes import MAX_ENVELOPES
from ldp.collector.service import DASHBOARD_CANDIDATES, CollectorService, CollectorSettings
from ldp.collector.store import open_store

SPEC = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
#: The candidates: the five values reported, and twenty never reported (more than the dashboard shows).
CANDIDATES = tuple(f"https://site.example/{i}" for i in range(25))
SHARES = {CANDIDATES[i]: share for i, share in enumerate((0.4, 0.25, 0.15, 0.12, 0.08))}
HOUR = 3_600


def _values(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return list(rng.choice(list(SHARES), size=n, p=list(SHARES.values())))


@pytest.fixture
def service(tmp_path):
    store = store_path(tmp_path)
    opened = CollectorService(CollectorSettings(store=store), open_store(store, exclusive=True))
    yield opened, store
    opened.close()


def _create(store: str, **options):
    """A Bloom RAPPOR task of hourly windows that accepts reports from four hours back."""
    start = int(time.time()) // HOUR * HOUR - 4 * HOUR
    return create_task(store, SPEC, window="1h", time_precision="1m", not_before=start, **options)


def _ingest(collector: CollectorService, task, values: list[str], t: int, seed: int) -> None:
    reports = encode_batch(SPEC, values, np.random.default_rng(seed)).reports(SPEC)
    items = envelopes([r.to_dict() for r in reports], t)

    async def send() -> None:
        found = await collector.task(task.task_id)
        for i in range(0, len(items), MAX_ENVELOPES):
            outcome = await collector.ingestion.ingest(found, items[i : i + MAX_ENVELOPES])
            assert outcome.accepted == len(items[i : i + MAX_ENVELOPES])

    asyncio.run(send())


def _aggregate(store: str, task_id: str, tmp_path: Path, *bounds: object) -> list[dict]:
    """``ldp aggregate --store --task --candidates`` on the task's stored reports (Parquet: floats exact), as records."""
    listed, output = tmp_path / "candidates.txt", tmp_path / "decode.parquet"
    listed.write_text("\n".join(CANDIDATES) + "\n", encoding="utf-8")
    args = ["aggregate", "--store", store, "--task", task_id, "--candidates", listed, "-o", output, *bounds]
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return pd.read_parquet(output).to_dict("records")


def _by_value(rows: list[dict]) -> dict[str, dict]:
    return {row["value"]: row for row in rows}


def test_each_window_and_the_whole_task_decode_as_ldp_aggregate_candidates(service, tmp_path):
    """Issue 29: a Bloom RAPPOR window showed only bit shares; now the candidates, decoded as ldp aggregate does."""
    collector, store = service
    task, _ = _create(store, min_batch=500, candidates=CANDIDATES)
    now = now_truncated(task)
    _ingest(collector, task, _values(3_000, 1), now - HOUR, seed=1)
    _ingest(collector, task, _values(2_000, 2), now, seed=2)
    _ingest(collector, task, _values(100, 3), now - 3 * HOUR, seed=3)  # withheld: under the min batch

    async def replies():
        found = await collector.task(task.task_id)
        windows = await collector.estimates.estimates(found, None, None, 0.95, "window")
        whole = await collector.estimates.estimates(found, None, None, 0.95, None)
        return windows["windows"], whole

    windows, whole = asyncio.run(replies())
    assert [w["n"] for w in windows] == [100, 3_000, 2_000]
    assert "candidates" not in windows[0] and windows[0]["estimates"] is None  # withheld: nothing decoded
    for window in [*windows[1:], whole]:
        block = window["candidates"]
        bounds = () if window is whole else ("--from", window["start"], "--to", window["end"])
        expected = _aggregate(store, task.task_id, tmp_path, *bounds)
        assert _by_value(block["rows"]) == _by_value(expected)  # every column, every float exactly
        estimates = [row["estimate"] for row in block["rows"]]
        assert estimates == sorted(estimates, reverse=True)  # largest first
        assert block["num_candidates"] == len(CANDIDATES)
        assert block["num_detected"] == sum(row["detected"] for row in expected)
        detected = sum(row["proportion"] for row in expected if row["detected"])
        assert block["allocated_mass"] == pytest.approx(detected, rel=1e-12)
        assert block["explained_mass"] == pytest.approx(sum(r["proportion"] for r in expected), rel=1e-12)
        assert (block["alpha"], block["correction"]) == (0.05, "bh")
        assert window["estimates"] and "bit" in window["estimates"][0]  # the bit estimates stay beside them
    # the most reported values are found: the decode is the one that matters, not a reshuffled table
    assert [row["value"] for row in whole["candidates"]["rows"][:2]] == list(CANDIDATES[:2])
    assert all(row["detected"] for row in whole["candidates"]["rows"][:2])


def test_the_dashboard_gets_the_largest_candidates_and_decodes_only_windows_that_changed(service):
    collector, store = service
    task, token = _create(store, min_batch=100, candidates=CANDIDATES)
    plain, plain_token = _create(store, min_batch=100)
    now = now_truncated(task)
    _ingest(collector, task, _values(1_000, 1), now - HOUR, seed=1)
    _ingest(collector, task, _values(1_000, 2), now, seed=2)
    _ingest(collector, plain, _values(1_000, 3), now, seed=3)
    decodes = collector.registry.windows.decodes

    def dashboard(key: str) -> dict:
        [shown] = asyncio.run(collector.estimates.dashboard(key))["tasks"]
        return shown

    shown = dashboard(token)
    assert shown["num_candidates"] == len(CANDIDATES) and decodes.computed == 2
    for window in shown["windows"]:
        block = window["candidates"]
        assert len(block["rows"]) == DASHBOARD_CANDIDATES < block["num_candidates"] == len(CANDIDATES)
    assert dashboard(token) == shown and decodes.computed == 2  # a poll decodes nothing again
    _ingest(collector, task, _values(50, 4), now, seed=4)
    again = dashboard(token)
    assert decodes.computed == 3  # only the window that received reports
    assert again["windows"][0] == shown["windows"][0] and again["windows"][1]["n"] == 1_050

    # other candidates (ldp task update --candidates, seen by the next refresh): every window decoded again
    with open_store(store) as opened:
        opened.update_task(dataclasses.replace(task, candidates=CANDIDATES[:3]))
    collector.registry.refresh()
    fewer = dashboard(token)
    assert decodes.computed == 5 and fewer["num_candidates"] == 3
    assert [len(w["candidates"]["rows"]) for w in fewer["windows"]] == [3, 3]

    # a Bloom RAPPOR task without candidates: bit estimates only, and the page says how to add them
    bare = dashboard(plain_token)
    assert bare["num_candidates"] == 0 and "candidates" not in bare["windows"][0]
    assert "bit" in bare["windows"][0]["estimates"][0]


def test_top_candidates_keeps_the_reply_it_trims():
    rows = [{"value": str(i), "estimate": float(10 - i)} for i in range(5)]
    reply = {"n": 10, "candidates": {"rows": rows, "num_candidates": 5}}
    trimmed = top_candidates(reply, 2)
    assert trimmed["candidates"] == {"rows": rows[:2], "num_candidates": 5}
    assert reply["candidates"]["rows"] == rows  # shared with the reply cache: never changed
    assert top_candidates(reply, 5) is reply and top_candidates({"n": 0}, 2) == {"n": 0}


def test_a_decode_asked_for_twice_at_once_is_computed_once(monkeypatch):
    """Two dashboards polling a live window at once: the second waits for the first one's decode."""
    import threading

    from ldp.aggregator.accumulators import make_aggregator
    from ldp.collector import candidate_view
    from ldp.collector.tasks import new_task

    task = new_task(SPEC, window="1h", time_precision="1m", candidates=CANDIDATES)[0]
    accumulator = make_aggregator(SPEC)
    accumulator.add_batch(encode_batch(SPEC, _values(500, 1), np.random.default_rng(1)))
    started, release = threading.Event(), threading.Event()
    real = candidate_view.decode_block

    calls = []

    def slow(*args):
        calls.append(args)
        started.set()
        assert release.wait(10)
        return real(*args)

    monkeypatch.setattr(candidate_view, "decode_block", slow)
    decodes = candidate_view.CandidateDecodes()
    blocks = []
    first = threading.Thread(target=lambda: blocks.append(decodes.decode(task, accumulator, 0.95)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: blocks.append(decodes.decode(task, accumulator, 0.95)))
    second.start()
    second.join(0.2)
    assert second.is_alive() and len(calls) == 1  # waiting for the first decode, not decoding
    release.set()
    first.join(10)
    second.join(10)
    assert decodes.computed == 1 and len(blocks) == 2 and blocks[0] is blocks[1]
