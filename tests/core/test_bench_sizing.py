"""benchmarks/bench_sizing.py, the figures of docs/how-to/sizing.md: its SQLite measure on a few reports (fast)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_sizing

        yield bench_sizing
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_a_stored_report_costs_its_text_and_a_bounded_row_overhead_on_sqlite(bench, tmp_path):
    [(name, spec, pool)] = bench.typical_pools(["grr"])
    assert name == "grr" and len(spec.domain) == len(bench.TYPICAL["domain"]) and len(pool) == bench.POOL
    text = sum(map(len, pool)) / len(pool)
    per_report = bench.sqlite_bytes(
        tmp_path, name, spec, pool, 5_000
    )  # halves of 2,500: groups of 1,000 and a rest
    # the id (16 bytes), the times and the time index come on top of the text; B-tree pages are not empty
    assert text + 16 < per_report < 3 * (text + 64)
    assert not list(tmp_path.iterdir()), "the store's files are removed"
    assert 0 < bench.aggregate_bytes(spec, pool) < 10_000  # GRR over 64 values: a few arrays of counts
