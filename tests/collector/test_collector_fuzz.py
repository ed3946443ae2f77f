"""Fuzz the collector's API from its own OpenAPI schema (schemathesis): no request gets a 500.

Generated requests go to a real ``ldp serve``; upload bodies are aimed at a
real task (so envelope checking runs on them) and every request carries the
task's collector token (so estimates run with generated ranges and levels).
Bounded: a fixed number of examples per operation, derandomized.
"""

from __future__ import annotations

import pytest
import schemathesis
from collector_server import create_task, running, store_path
from hypothesis import HealthCheck, settings

import ldp

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]
# pyproject's addopts turn schemathesis's plugin off (`-p no:schemathesis`) for the processes that do not run
# this module, and tests/conftest.py leaves the module out of the fast set's collection: loaded here instead.
pytest_plugins = ["schemathesis.pytest.plugin"]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    store = store_path(tmp_path_factory.mktemp("fuzz"))
    task, token = create_task(
        store, ldp.GRR(domain=("a", "b", "c"), epsilon=1.0), window="1h", time_precision="1m"
    )
    with running(store, "--rate-limit", "0") as server:
        yield server, task, token


@pytest.fixture(scope="module")
def api_schema(fuzzed):
    server, _, _ = fuzzed
    return schemathesis.openapi.from_url(f"{server.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_gets_a_server_error(case, fuzzed):
    _, task, token = fuzzed
    if case.path_parameters and "task_id" in case.path_parameters and case.method == "POST":
        case.path_parameters["task_id"] = task.task_id
    response = case.call(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text[:300])
    if response.status_code >= 400:
        assert response.headers["content-type"] == ["application/problem+json"], response.text[:300]
