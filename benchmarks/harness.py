"""Timing helpers the benchmarks share: wall-clock timings, their median, and batch throughput per spec.

A benchmark script imports it as a sibling module (``from harness import ...``;
``python benchmarks/bench_x.py`` puts ``benchmarks/`` on the path). Every
figure is wall-clock time (``time.perf_counter``) on a shared machine: compare
ratios measured in the same run, not absolute figures.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ldp.aggregator import make_aggregator
from ldp.client import SystemRandomSource, encode_batch

#: The rows of :func:`batch_throughput`, in order.
BATCH_OPERATIONS = ("encode (secure)", "encode (seeded)", "aggregate")


def timings(run: Callable[[], object], repeat: int, *, warm_up: bool = True) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls of ``run``, after one untimed warm-up call unless told not to."""
    if warm_up:
        run()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        out.append(time.perf_counter() - start)
    return out


def cpu_seconds(run: Callable[[], object]) -> float:
    """CPU seconds (user + system, ``time.process_time``) of one call of ``run``."""
    start = time.process_time()
    run()
    return time.process_time() - start


def median_time(run: Callable[[], object], repeat: int) -> float:
    """Median wall-clock seconds of ``repeat`` calls of ``run`` (no warm-up)."""
    return statistics.median(timings(run, repeat, warm_up=False))


def batch_throughput(
    specs: Mapping[str, Any], values: np.ndarray, repeat: int
) -> dict[str, dict[str, float]]:
    """Median seconds of each of :data:`BATCH_OPERATIONS`, per spec (by name), on the domain indices ``values``.

    ``encode (secure)``: :func:`ldp.client.encode_batch` with
    :class:`ldp.client.SystemRandomSource` (the OS CSPRNG, what ``ldp encode``
    runs); ``encode (seeded)``: the same with a seeded NumPy generator
    (simulations); ``aggregate``: the accumulator's ``add_batch`` on the seeded
    reports.
    """
    out: dict[str, dict[str, float]] = {operation: {} for operation in BATCH_OPERATIONS}
    for name, spec in specs.items():
        out["encode (secure)"][name] = median_time(
            lambda spec=spec: encode_batch(spec, values, SystemRandomSource(), indices=True), repeat
        )
        out["encode (seeded)"][name] = median_time(
            lambda spec=spec: encode_batch(spec, values, np.random.default_rng(2), indices=True), repeat
        )
        batch = encode_batch(spec, values, np.random.default_rng(3), indices=True)
        out["aggregate"][name] = median_time(
            lambda spec=spec, batch=batch: make_aggregator(spec).add_batch(batch), repeat
        )
    return out
