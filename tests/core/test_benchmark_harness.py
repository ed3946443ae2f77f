"""The benchmarks' shared timing harness (benchmarks/harness.py): one copy of the timing loop, used by every script."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import ldp

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import harness

        yield harness
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_timings_count_the_runs_and_the_warm_up(harness):
    calls = []
    assert len(harness.timings(lambda: calls.append(1), 3)) == 3 and len(calls) == 4  # one warm-up call
    calls.clear()
    assert len(harness.timings(lambda: calls.append(1), 3, warm_up=False)) == 3 and len(calls) == 3
    assert harness.median_time(lambda: None, 3) >= 0


def test_batch_throughput_times_every_operation_of_every_spec(harness):
    specs = {"grr": ldp.GRR(range(4), 1.0), "oue": ldp.OUE(range(4), 1.0)}
    seconds = harness.batch_throughput(specs, np.arange(20) % 4, 1)
    assert tuple(seconds) == harness.BATCH_OPERATIONS
    assert all(set(row) == set(specs) and min(row.values()) >= 0 for row in seconds.values())


def test_no_benchmark_keeps_its_own_copy_of_the_timing_loop():
    scripts = {path.name: path.read_text(encoding="utf-8") for path in BENCHMARKS.glob("*.py")}
    copies = [
        name
        for name, text in scripts.items()
        if name != "harness.py" and re.search(r"^def (median_time|timings)\(", text, re.M)
    ]
    assert copies == []
    for name in ("bench_client.py", "bench_dbitflip.py", "bench_ss.py"):
        assert re.search(r"^from harness import ", scripts[name], re.M), name
