"""``kill -9`` of the collector while a client uploads with retries: nothing acknowledged is lost or doubled."""

from __future__ import annotations

import json
import threading
import time

import httpx
import numpy as np
import pandas as pd
import pytest
from collector_server import Server, create_task, envelopes, now_truncated
from collector_server import estimates as collector_estimates

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.views import default_consistency
from ldp.client import encode_batch
from ldp.collector.store import open_store

SPEC = ldp.OUE(domain=tuple("abcdefgh"), epsilon=1.0)


class RetryingClient(threading.Thread):
    """Uploads fixed envelopes in batches, resending each batch's same bytes until a 200 reply."""

    def __init__(self, url: str, batches: list[bytes]) -> None:
        super().__init__(daemon=True)
        self.url, self.batches = url, batches
        self.acknowledged: list[dict] = []
        self.failures = 0

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            for body in self.batches:
                while True:
                    try:
                        reply = client.post(
                            self.url, content=body, headers={"Content-Type": "application/json"}
                        )
                    except httpx.TransportError:
                        reply = None
                    if reply is not None and reply.status_code == 200:
                        self.acknowledged.append(reply.json())
                        break
                    self.failures += 1
                    time.sleep(0.02)


# Slow set: two ldp serve processes. The fast set's kill -9: test_collector_store's
# test_acknowledged_reports_survive_sigkill (a writer killed mid-transaction keeps every acknowledged report).
@pytest.mark.slow
@pytest.mark.parametrize("kills", [1, 4])
def test_kill_9_during_uploads_loses_nothing_acknowledged_and_counts_nothing_twice(served_store_url, kills):
    store = served_store_url
    task, token = create_task(store, SPEC, window="1h", time_precision="1m", min_batch=1)
    # 30 batches of 100 for one kill (it comes after 5 acknowledged batches), 60 for four
    values = np.random.default_rng(3).integers(0, 8, 3_000 if kills == 1 else 6_000)
    reports = list(encode_batch(SPEC, values, np.random.default_rng(4), indices=True).reports(SPEC))
    items = envelopes(reports, now_truncated(task))
    batches = [json.dumps(items[i : i + 100]).encode() for i in range(0, len(items), 100)]

    server = Server(store)
    client = RetryingClient(f"{server.url}/v1/tasks/{task.task_id}/reports", batches)
    client.start()
    for _ in range(kills):  # kill the server while the client is uploading, restart on the same port
        deadline = time.monotonic() + 10
        before = len(client.acknowledged)
        while len(client.acknowledged) < before + 5 and client.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()
        server = Server(store, port=server.port)
    client.join(120)
    try:
        assert not client.is_alive()
        assert client.failures > 0  # the kills really interrupted uploads
        accepted = sum(reply["accepted"] for reply in client.acknowledged)
        replayed = sum(reply["replayed"] for reply in client.acknowledged)
        assert all(reply["rejected"] == [] for reply in client.acknowledged)
        # every report stored exactly once: accepted now, or by a request whose reply the kill swallowed
        assert accepted <= len(items) <= accepted + replayed
        with open_store(store) as opened:
            stored_ids = [report.report_id for chunk in opened.reports(task.task_id) for report in chunk]
        assert len(stored_ids) == len(set(stored_ids)) == len(items)
        reply = collector_estimates(server, task, token).json()
    finally:
        server.stop()
    expected = make_aggregator(SPEC)
    for report in reports:
        expected.add(report)
    assert reply["n"] == len(items)
    pd.testing.assert_frame_equal(
        pd.DataFrame(reply["estimates"]),
        expected.estimate(confidence=0.95, consistency=default_consistency(SPEC)),
        check_exact=True,
        check_dtype=False,
    )
