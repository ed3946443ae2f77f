"""What keeps plain ``pytest`` (the fast set) fast: one BLAS thread per xdist worker, no unused plugins.

docs/development.md#tests gives the measurements behind each.
"""

from __future__ import annotations

import os
import sys

import pytest


def test_an_xdist_worker_runs_numpys_blas_on_one_thread():
    """tests/conftest.py sets the BLAS thread count in each worker before numpy loads (a developer's value wins)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("only under pytest-xdist: with -n 0 the one process keeps the default BLAS threads")
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        assert os.environ.get(variable), f"{variable} is not set in this xdist worker"


def test_the_fast_set_loads_neither_schemathesis_nor_anyio(pytestconfig):
    """pyproject's addopts turn both plugins off; the fast set does not import the schemathesis module either."""
    if pytestconfig.getoption("markexpr") != "not slow":
        pytest.skip("the fast set's collection only (plain `pytest`, -m 'not slow')")
    assert not pytestconfig.pluginmanager.has_plugin("schemathesis")
    assert not pytestconfig.pluginmanager.has_plugin("anyio")
    assert "schemathesis" not in sys.modules


def test_xdist_hands_out_groups_whole_and_other_tests_a_few_of_one_module_at_a_time():
    """tests/xdist_chunks.py: before, ``--dist loadgroup`` made each ungrouped test a work unit of its own."""
    from xdist_chunks import CHUNK, ChunkedLoadGroupScheduling

    ids = [f"tests/a.py::t[{i}]" for i in range(CHUNK + 2)]
    ids += ["tests/a.py::u@readme", "tests/b.py::t", "tests/b.py::u@readme", "tests/b.py::v"]
    scheduler = ChunkedLoadGroupScheduling.__new__(ChunkedLoadGroupScheduling)  # only its scopes are used
    scheduler.registered_collections = {"gw0": ids}
    scopes = [scheduler._split_scope(nodeid) for nodeid in ids]
    # 12 ungrouped tests: the last eighth (one test) is a unit of its own, handed out last
    first_module = [*(["tests/a.py::0"] * CHUNK), "tests/a.py::1", "tests/a.py::1"]
    assert scopes == [*first_module, "readme", "tests/b.py::0", "readme", "tests/b.py::v"]
