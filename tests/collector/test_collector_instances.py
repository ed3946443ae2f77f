"""Many ``ldp serve`` instances on one PostgreSQL store give one truth (issue 29).

Each instance counts what it commits at once and what the others committed
within :data:`~ldp.collector.windows.SYNC_SECONDS` (docs/collector.md#many-instances).
Every test here runs PostgreSQL (a throwaway cluster, tests/postgres_cluster.py),
so all are in the slow set.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
from collector_server import Server, create_task, envelopes, now_truncated

import ldp
from ldp.client import encode_batch
from ldp.collector.envelopes import check_envelopes
from ldp.collector.ingest import GroupCommitter
from ldp.collector.store import open_store
from ldp.collector.windows import SYNC_SECONDS, Windows

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("postgresql")]

SPEC = ldp.OUE(domain=tuple("abcdefgh"), epsilon=1.0)


@pytest.fixture
def shared_url(postgres_url):
    """A fresh database in the session's PostgreSQL cluster."""
    from postgres_cluster import create_database, drop_database

    name = f"test_{uuid.uuid4().hex}"
    yield create_database(postgres_url, name)
    drop_database(postgres_url, name)


def _reports(n: int, seed: int) -> list:
    values = np.random.default_rng(seed).integers(0, 8, n)
    return list(encode_batch(SPEC, values, np.random.default_rng(seed + 1), indices=True).reports(SPEC))


def test_two_committers_on_one_store_each_count_every_report_once(shared_url):
    """The root fault: each instance's windows counted only its own commits (half the truth each)."""
    task, _ = create_task(shared_url, SPEC, window="1h", time_precision="1m", min_batch=1, not_before=0)
    now = now_truncated(task)
    items = envelopes(_reports(600, seed=5), [now - 3_600 * (n % 3) for n in range(600)])
    checked = check_envelopes(task, items, now)
    assert not checked.rejected
    stores = [open_store(shared_url), open_store(shared_url)]
    instances = [Windows(), Windows()]
    for store, windows in zip(stores, instances):
        windows.load(store, task)
    committers = [GroupCommitter(store, windows) for store, windows in zip(stores, instances)]
    try:
        futures = [
            committers[i % 2].submit(task, checked.accepted[start : start + 50])
            for i, start in enumerate(range(0, 600, 50))
        ]
        for future in futures:
            future.result(30)
        # the same envelopes again, each to the other instance: every one a replay, nothing counted twice
        again = [
            committers[(i + 1) % 2].submit(task, checked.accepted[start : start + 50])
            for i, start in enumerate(range(0, 600, 50))
        ]
        assert all(outcome.value == "replayed" for future in again for outcome in future.result(30))
        for store, windows in zip(stores, instances):
            windows.sync(store, [task])
        with open_store(shared_url, read_only=True) as reader:
            expected = reader.count_by_window(task.task_id, task.window)
        assert sum(expected.values()) == 600
        for windows in instances:
            assert windows.counts(task) == expected
        assert instances[0].merged(task, None, None) == instances[1].merged(task, None, None)
        # an instance further behind than the commit log reaches rebuilds its windows from the store
        more = envelopes(_reports(100, seed=6), now)
        committers[0].submit(task, check_envelopes(task, more, now).accepted).result(30)
        assert stores[0].forget_commits(0) >= 1
        assert instances[1].sync(stores[1], [task]) == 700
        assert instances[1].counts(task) == instances[0].counts(task)
        assert sum(instances[1].counts(task).values()) == 700
    finally:
        for committer in committers:
            committer.close()
        for store in stores:
            store.close()


class SpreadingClient(threading.Thread):
    """Uploads fixed batches, alternating between servers; a failed batch is resent, byte for byte, to the next."""

    def __init__(self, urls: list[str], batches: list[bytes]) -> None:
        super().__init__(daemon=True)
        self.urls, self.batches = urls, batches
        self.acknowledged: list[dict] = []
        self.failures = 0

    def run(self) -> None:
        turn = 0
        with httpx.Client(timeout=10) as client:
            for body in self.batches:
                while True:
                    url = self.urls[turn % len(self.urls)]
                    turn += 1
                    try:
                        reply = client.post(url, content=body, headers={"Content-Type": "application/json"})
                    except httpx.TransportError:
                        reply = None
                    if reply is not None and reply.status_code == 200:
                        self.acknowledged.append(reply.json())
                        break
                    self.failures += 1
                    time.sleep(0.02)


def _estimates(server: Server, task_id: str, token: str) -> dict:
    reply = httpx.get(
        f"{server.url}/v1/tasks/{task_id}/estimates",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def _aggregate(*arguments: object, out: Path) -> pd.DataFrame:
    done = subprocess.run(
        [sys.executable, "-m", "ldp", "aggregate", *map(str, arguments), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return pd.read_parquet(out)


def test_two_servers_with_a_kill_9_both_give_the_estimates_of_the_uploaded_files(shared_url, tmp_path):
    task, token = create_task(shared_url, SPEC, window="1h", time_precision="1m", min_batch=1)
    reports = _reports(4_000, seed=11)
    items = envelopes(reports, now_truncated(task))
    batches = [json.dumps(items[i : i + 100]).encode() for i in range(0, len(items), 100)]
    uploaded = tmp_path / "uploaded.jsonl"
    uploaded.write_text("".join(json.dumps(item["report"]) + "\n" for item in items))
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(SPEC.to_json())

    first, second = Server(shared_url), Server(shared_url)
    path = f"/v1/tasks/{task.task_id}/reports"
    client = SpreadingClient([first.url + path, second.url + path], batches)
    client.start()
    try:
        deadline = time.monotonic() + 30
        while len(client.acknowledged) < 10 and client.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        first.kill()  # mid-upload: its batches in flight are resent to the other server
        first = Server(shared_url, port=first.port)
        client.join(180)
        assert not client.is_alive()
        assert client.failures > 0  # the kill really interrupted uploads
        assert all(reply["rejected"] == [] for reply in client.acknowledged)
        accepted = sum(reply["accepted"] for reply in client.acknowledged)
        replayed = sum(reply["replayed"] for reply in client.acknowledged)
        assert accepted <= len(items) <= accepted + replayed
        # a batch retried to the other server is a replay there
        again = httpx.post(first.url + path, content=batches[1], headers={"Content-Type": "application/json"})
        assert again.json() == {"accepted": 0, "replayed": 100, "rejected": []}

        from_file = _aggregate("--spec", spec_path, uploaded, out=tmp_path / "file.parquet")
        from_store = _aggregate("--store", shared_url, "--task", task.task_id, out=tmp_path / "store.parquet")
        pd.testing.assert_frame_equal(from_store, from_file, check_exact=True)
        time.sleep(2 * SYNC_SECONDS + 0.5)  # the stated staleness, with room for one catch-up
        replies = [_estimates(server, task.task_id, token) for server in (first, second)]
    finally:
        first.stop()
        second.stop()
    for reply in replies:
        assert reply["n"] == len(items)
        served = pd.DataFrame(reply["estimates"])
        assert list(served.columns) == list(from_file.columns)
        pd.testing.assert_frame_equal(served, from_file, check_exact=True, check_dtype=False)
