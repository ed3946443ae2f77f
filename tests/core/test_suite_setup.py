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
