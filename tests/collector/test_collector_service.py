"""The collector's service layer without HTTP (ldp.collector.service) and its one error mapping (problems).

Each refusal is a specific error of :mod:`ldp.collector.errors`, and
:func:`ldp.collector.problems.problem_for` answers each with one problem
document; a task deleted while its upload was being stored is a
:class:`TaskDeleted` (no longer a generic error), and the service forgets it.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from collector_server import create_task, envelopes, now_truncated, store_path

import ldp
from ldp.client import encode_batch
from ldp.collector.errors import (
    CollectorError,
    NoNumericTable,
    RateLimited,
    ReportsNotStored,
    TaskDeleted,
    TaskNotFound,
    Unauthorized,
)
from ldp.collector.problems import PROBLEM_TYPE, problem_for
from ldp.collector.service import CollectorService, CollectorSettings
from ldp.collector.store import StoreUnavailable, UnknownTaskError, open_store
from ldp.collector.tasks import new_task
from ldp.errors import LDPError, ParameterError

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


def _reply(exc: BaseException) -> tuple[int, dict, dict]:
    response = problem_for(exc)
    assert response.media_type == PROBLEM_TYPE
    body = json.loads(response.body)
    assert body["status"] == response.status_code and body["type"] == "about:blank"
    return response.status_code, body, dict(response.headers)


@pytest.mark.parametrize(
    ("error", "status", "title", "header"),
    [
        (TaskNotFound("x" * 100), 404, "Unknown task", None),
        (TaskDeleted("gone"), 404, "Unknown task", None),
        (RateLimited(3), 429, "Too many requests", ("retry-after", "3")),
        (
            Unauthorized("give a token"),
            401,
            "Unauthorized",
            ("www-authenticate", 'Bearer realm="ldp-collector"'),
        ),
        (NoNumericTable("T", "grr"), 404, "Not Found", None),
        (ReportsNotStored("OSError"), 503, "Store unavailable", ("retry-after", "1")),
        (
            StoreUnavailable("postgresql://ldp@db.internal/ldp is down"),
            503,
            "Store unavailable",
            ("retry-after", "1"),
        ),
        (ParameterError("confidence must be in (0, 1), got 2"), 400, "Bad request", None),
        (KeyError("a fault of the server's own"), 500, "Internal server error", None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else None,
)
def test_every_error_has_one_problem_document(error, status, title, header):
    got, body, headers = _reply(error)
    assert (got, body["title"]) == (status, title)
    if header is not None:
        assert headers[header[0]] == header[1]
    assert "db.internal" not in body["detail"]  # a store's message may name its location: never sent
    assert "server's own" not in body["detail"]  # nor an unexpected error's message: its type alone


def test_the_collector_errors_are_ldp_errors_and_a_deleted_task_is_an_unknown_one():
    assert issubclass(CollectorError, LDPError)
    assert issubclass(TaskDeleted, TaskNotFound) and issubclass(TaskNotFound, LookupError)
    assert str(TaskNotFound("y" * 100)) == f"no task {'y' * 64 + '…'!r} on this collector"


@pytest.fixture
def service(tmp_path):
    store = store_path(tmp_path)
    opened = CollectorService(CollectorSettings(store=store), open_store(store, exclusive=True))
    yield opened, store
    opened.close()


def _items(task, values):
    reports = encode_batch(GRR, values, np.random.default_rng(1)).reports(GRR)
    return envelopes([r.to_dict() for r in reports], now_truncated(task))


def test_the_service_finds_ingests_and_estimates_without_http(service):
    collector, store = service
    task, token = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)

    async def scenario():
        found = await collector.task(task.task_id)  # created after start: one lookup
        outcome = await collector.ingestion.ingest(found, _items(found, ["a", "b", "a"]))
        assert (outcome.accepted, outcome.replayed, outcome.rejected) == (3, 0, [])
        collector.estimates.authorize(found, token)
        with pytest.raises(Unauthorized):
            collector.estimates.authorize(found, "not the token")
        with pytest.raises(ParameterError, match="confidence"):
            await collector.estimates.estimates(found, None, None, 1.5, None)
        with pytest.raises(NoNumericTable, match="no numeric table"):
            await collector.estimates.table(found)
        return await collector.estimates.estimates(found, None, None, 0.95, None)

    reply = asyncio.run(scenario())
    assert reply["n"] == 3 and reply["task"] == task.task_id


def test_unknown_tasks_and_texts_that_are_no_task_id_are_task_not_found(service):
    collector, _ = service
    with pytest.raises(TaskNotFound):
        asyncio.run(collector.task(new_task(GRR)[0].task_id))
    with pytest.raises(TaskNotFound, match="on this collector"):
        asyncio.run(collector.task("../../etc/passwd"))


def test_a_task_deleted_during_an_upload_is_task_deleted_and_forgotten(service, monkeypatch):
    collector, store = service
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    found = asyncio.run(collector.task(task.task_id))
    with open_store(store) as other:  # ldp task delete, while the collector holds the task
        other.delete_task(task.task_id)
    with pytest.raises(TaskDeleted) as caught:
        asyncio.run(collector.ingestion.ingest(found, _items(found, ["a"])))
    assert caught.value.task_id == task.task_id
    assert not isinstance(caught.value, ParameterError)  # was a generic UnknownTaskError (a ParameterError)
    assert task.task_id not in collector.registry.tasks


def test_a_failed_commit_is_reports_not_stored_naming_only_the_error_type(service, monkeypatch):
    collector, store = service
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    found = asyncio.run(collector.task(task.task_id))

    def refuse(groups):
        raise OSError("disk /srv/secret-path full")

    monkeypatch.setattr(collector.store, "insert_reports", refuse)
    with pytest.raises(ReportsNotStored) as caught:
        asyncio.run(collector.ingestion.ingest(found, _items(found, ["a"])))
    assert caught.value.cause == "OSError" and "secret-path" not in str(caught.value)
    assert not isinstance(caught.value, UnknownTaskError)


def test_the_rate_limit_is_rate_limited_with_a_retry_after(tmp_path):
    store = store_path(tmp_path)
    collector = CollectorService(
        CollectorSettings(store=store, rate_limit=1), open_store(store, exclusive=True)
    )
    collector.ingestion.limiter.clock = lambda: 0.0  # no refill between the calls, however slow the machine
    try:
        with pytest.raises(RateLimited) as caught:
            for _ in range(int(collector.ingestion.limiter.burst) + 2):  # a burst, then refused
                collector.ingestion.admit("192.0.2.1")
        assert caught.value.retry_after >= 1
    finally:
        collector.close()
