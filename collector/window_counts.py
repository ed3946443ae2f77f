"""One window's reports in memory: their columns while few, the spec's accumulator once that is smaller.

An accumulator's memory is fixed by its spec, not by its reports: a GRR
accumulator over 16,384 values is 128 KiB, a count-mean sketch several MiB,
even for one report. A collector keeps one per window, so windows holding a
few reports each would cost windows × that size. :class:`WindowCounts`
keeps a window's reports as report columns (:class:`~ldp.batch.ReportBatch`,
a few bytes per report) until they would take more memory than the
accumulator, and only then counts them into one. Either way its memory is at
most about the smaller of the two, and the estimates are the same:
accumulators hold integer counts, so adding a batch now or later gives the
same numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.report_columns import concat_batches
from ldp.batch import ReportBatch

__all__ = ["WindowCounts", "accumulator_bytes", "batch_bytes"]

#: Pending batches joined into one when there are more than this many (bounds the per-batch overhead).
_MAX_PENDING_BATCHES = 16
#: Python's overhead per object held in a group key column (a pointer and a small str).
_GROUP_KEY_BYTES = 64


def _footprint(value: Any, depth: int = 0) -> int:
    """Bytes of the NumPy arrays in ``value`` (an object's attributes, lists, dicts), a few levels deep."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if depth > 3:
        return 0
    if isinstance(value, dict):
        return sum(_footprint(item, depth + 1) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_footprint(item, depth + 1) for item in value)
    attributes = getattr(value, "__dict__", None)
    if attributes is not None and depth == 0:
        return sum(_footprint(item, depth + 1) for item in attributes.values())
    return 0


def accumulator_bytes(spec: Any) -> int:
    """The memory of an empty accumulator of ``spec``: the bytes of its count arrays."""
    return _footprint(make_aggregator(spec))


def batch_bytes(batch: ReportBatch) -> int:
    """The memory of a batch's columns (group keys at a fixed cost each)."""
    size = sum(int(column.nbytes) for column in batch.columns().values())
    if batch.groups is not None:
        size += _GROUP_KEY_BYTES * len(batch.groups) + sum(
            len(key) for key in batch.groups if isinstance(key, str)
        )
    return size


class WindowCounts:
    """The reports of one window of one spec (not thread-safe: :class:`~ldp.collector.windows.Windows` locks).

    Parameters
    ----------
    spec : Spec
        The task's spec.
    dense_bytes : int
        The memory of the spec's accumulator (:func:`accumulator_bytes`):
        reports are kept as columns until they would take more.
    """

    def __init__(self, spec: Any, dense_bytes: int) -> None:
        self.spec = spec
        self.dense_bytes = dense_bytes
        self._pending: list[ReportBatch] = []
        self._pending_bytes = 0
        self._pending_n = 0
        self._accumulator: Accumulator | None = None

    @classmethod
    def of_accumulator(cls, spec: Any, dense_bytes: int, accumulator: Accumulator) -> WindowCounts:
        """A window holding the reports counted in ``accumulator`` (a pruned window's kept aggregate)."""
        window = cls(spec, dense_bytes)
        window._accumulator = accumulator
        return window

    @property
    def n(self) -> int:
        """Reports counted."""
        counted = self._accumulator.n if self._accumulator is not None else 0
        return counted + self._pending_n

    @property
    def dense(self) -> bool:
        """True once the reports are counted into an accumulator."""
        return self._accumulator is not None

    def add_batch(self, batch: ReportBatch) -> None:
        """Count a batch of checked reports of the spec."""
        if not len(batch):
            return
        if self._accumulator is not None:
            self._accumulator.add_batch(batch)
            return
        self._pending.append(batch)
        self._pending_bytes += batch_bytes(batch)
        self._pending_n += len(batch)
        if self._pending_bytes > self.dense_bytes:
            accumulator = make_aggregator(self.spec)
            for pending in self._pending:
                accumulator.add_batch(pending)
            self._accumulator = accumulator
            self._pending, self._pending_bytes, self._pending_n = [], 0, 0
        elif len(self._pending) > _MAX_PENDING_BATCHES:
            self._pending = [concat_batches(self.spec, self._pending)]

    def add_counts(self, other: WindowCounts) -> None:
        """Count the reports of ``other`` (a window of the same spec) into this one."""
        for pending in other._pending:
            self.add_batch(pending)
        if other._accumulator is None:
            return
        if self._accumulator is None:
            accumulator = make_aggregator(self.spec)
            for pending in self._pending:
                accumulator.add_batch(pending)
            self._pending, self._pending_bytes, self._pending_n = [], 0, 0
            self._accumulator = accumulator
        self._accumulator = self._accumulator.merge(other._accumulator)

    def add_to(self, total: Accumulator) -> Accumulator:
        """``total`` with this window's reports counted in (``total`` may be changed: pass a fresh one)."""
        if self._accumulator is not None:
            total = total.merge(self._accumulator)
        for pending in self._pending:
            total.add_batch(pending)
        return total

    def accumulator(self) -> Accumulator:
        """A new accumulator holding this window's reports."""
        return self.add_to(make_aggregator(self.spec))
