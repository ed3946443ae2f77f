"""What keeps plain ``pytest`` (the fast set) fast: one BLAS thread per xdist worker, no unused plugins, no
work repeated at collection.

docs/development.md#tests gives the measurements behind each.
"""

from __future__ import annotations

import gc
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


def test_what_collection_built_is_frozen_out_of_the_garbage_collector():
    """tests/conftest.py's ``pytest_collection``: the modules, items and specs are never walked again."""
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_the_shared_spec_lists_are_built_once_and_handed_out_as_new_lists():
    """tests/conftest.py's spec lists: one set of spec objects per arguments, a fresh list each call."""
    from conftest import every_spec_shape, frequency_specs, numeric_specs

    for build, args in (
        (frequency_specs, ()),
        (frequency_specs, (3.0, tuple(range(40)))),
        (numeric_specs, ()),
    ):
        first, second = build(*args), build(*args)
        assert first == second and first is not second
        assert all(a is b for a, b in zip(first, second, strict=True))
    assert frequency_specs(3.0)[0].epsilon == 3.0 and frequency_specs()[0].epsilon == 1.0
    assert every_spec_shape()[0] is every_spec_shape()[0]


def test_collecting_the_store_tests_imports_no_postgresql_driver():
    """psycopg (about 0.07 s of imports) is imported by the PostgreSQL tests, not by the module itself,
    so the xdist worker that does not run them never imports it."""
    import ast
    from pathlib import Path

    source = Path(__file__).parents[1] / "collector" / "test_collector_store.py"
    imported = set()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    assert not {name for name in imported if "psycopg" in name or name.endswith("store_postgres")}
