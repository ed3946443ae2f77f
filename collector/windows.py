"""Per-window accumulators kept up to date as reports are committed (docs/collector.md#estimates).

The collector keeps, for each task and each window holding reports, its
reports' counts (:class:`~ldp.collector.window_counts.WindowCounts`: the
reports' columns while few, one of the aggregator's mergeable accumulators
after). Committed reports are added as they arrive; on start,
:meth:`Windows.load` rebuilds them from the store in one pass over the
task's reports in time order.

On a store several servers share (PostgreSQL), each task's windows are held
as of one of the task's commit versions (:class:`~ldp.collector.store.Store`):
this server's own commit ``v`` is added at once when the windows are at
``v - 1``; otherwise, and every :data:`SYNC_SECONDS` for every task
(:meth:`Windows.sync`), the reports of the versions in between, committed by
other servers, are read from the store first (:meth:`Windows.catch_up`). So
every server counts every committed report exactly once, and its estimates
lag what is committed by about :data:`SYNC_SECONDS` at most
(docs/collector.md#many-instances). An estimate over a range merges the range's
windows, so a request never re-reads stored reports, and its numbers are
those of ``ldp aggregate`` on the same reports: accumulators hold integer
counts, so the order of adding and merging does not change them.

A window whose raw reports the task's retention deleted
(:mod:`ldp.collector.retention`) is loaded from its kept aggregate, and its
replies say ``"pruned": true``; the held windows learn of windows pruned
while they are held through :meth:`Windows.mark_pruned` (their counts are
already those of the aggregate: the same reports).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.report_columns import batch_from_checked
from ldp.aggregator.state import load_state
from ldp.batch import ReportBatch
from ldp.collector.accumulate import StoreIntegrityError, estimate_records, stored_batches
from ldp.collector.candidate_view import CandidateDecodes, candidate_view
from ldp.collector.central import central_privacy
from ldp.collector.range_view import range_view
from ldp.collector.store import CommitLogTrimmed, Store
from ldp.collector.tasks import Task
from ldp.collector.window_counts import WindowCounts, accumulator_bytes
from ldp.errors import InputError, ParameterError
from ldp.report_check import CheckedReport

__all__ = [
    "REPLY_CACHE_ROWS",
    "SYNC_SECONDS",
    "Windows",
    "estimate_reply",
    "record_attributes",
    "task_summary",
    "windows_batches",
]

#: The most estimate rows the window reply cache keeps (about 100 MB of replies).
REPLY_CACHE_ROWS = 200_000
#: Seconds between two catch-ups with what other servers committed to a shared store.
SYNC_SECONDS = 1.0


def _kind(task: Task) -> str:
    """How the dashboard draws a task's estimates: a mean, a frequency table, or a table of several attributes."""
    kind = task.spec.report_kind
    return "mean" if kind == "numeric" else "records" if kind == "record" else "frequency"


def windows_batches(task: Task, reports: Sequence[tuple[int, CheckedReport]]) -> dict[int, ReportBatch]:
    """``(t, checked report)`` pairs as one batch per window start."""
    by_window: dict[int, list[CheckedReport]] = {}
    for t, checked in reports:
        by_window.setdefault(task.window_start(t), []).append(checked)
    return {start: batch_from_checked(task.spec, checked) for start, checked in by_window.items()}


class Windows:
    """Report counts per (task, window start), safe to use from several threads.

    Each window is a :class:`~ldp.collector.window_counts.WindowCounts`: its
    reports as columns while they take less memory than the spec's
    accumulator, that accumulator after. So a window holding a few reports
    costs a few bytes per report, not a whole accumulator.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._windows: dict[str, dict[int, WindowCounts]] = {}
        self._dense_bytes: dict[str, int] = {}
        # The last reply of each window, reused while its count is unchanged (counts only grow, so n
        # names the window's state) and it was made at the same confidence and against the same
        # candidates: the dashboard polls every window of every task every 2 s. At most
        # REPLY_CACHE_ROWS estimate rows are kept (the least recently used replies go first): a reply
        # has a row per domain value, so an unbounded cache would grow with windows x domain again.
        self._replies: dict[tuple[str, int], tuple[tuple[float, str], dict[str, Any]]] = {}
        #: The candidate decodes of Bloom RAPPOR tasks, kept by the counts they decode (range replies too).
        self.decodes = CandidateDecodes()
        self._reply_rows = 0
        # the commit version each task's windows hold (shared stores); changed only under _sync, which
        # serializes adding commits and catching up (reads take only _lock)
        self._versions: dict[str, int] = {}
        self._sync = threading.Lock()
        # the starts of each task's windows whose raw reports were deleted by the retention
        self._pruned: dict[str, frozenset[int]] = {}

    def held(self) -> int:
        """How many windows (of every task) are held in memory now (``ldp_windows_held``)."""
        with self._lock:
            return sum(len(windows) for windows in self._windows.values())

    def _new_window(self, task: Task) -> WindowCounts:
        dense = self._dense_bytes.get(task.task_id)
        if dense is None:
            dense = self._dense_bytes[task.task_id] = accumulator_bytes(task.spec)
        return WindowCounts(task.spec, dense)

    def load(self, store: Store, task: Task) -> int:
        """Rebuild ``task``'s windows from the store (one query, in ``t`` order); the number of reports read."""
        with self._sync:
            windows: dict[int, WindowCounts] = {}
            dense = accumulator_bytes(task.spec)
            version = 0
            pruned: set[int] = set()
            for snapshot, aggregates, chunk in store.read_windows(task.task_id):
                version = snapshot
                for aggregate in aggregates:
                    try:
                        accumulator = load_state(task.spec, aggregate.state)
                    except InputError as exc:
                        raise StoreIntegrityError(
                            f"the kept aggregate of window {aggregate.start} of task {task.task_id} is unreadable: {exc}"
                        ) from None
                    windows[aggregate.start] = WindowCounts.of_accumulator(task.spec, dense, accumulator)
                    pruned.add(aggregate.start)
                self._count_rows(task, windows, dense, chunk)
            with self._lock:
                self._windows[task.task_id] = windows
                self._dense_bytes[task.task_id] = dense
                self._versions[task.task_id] = version
                self._pruned[task.task_id] = frozenset(pruned)
                self._forget_replies(task.task_id)
            return sum(window.n for window in windows.values())

    def mark_pruned(self, task_id: str, starts: Sequence[int] | set[int] | frozenset[int]) -> None:
        """Record that the windows ``starts`` of a held task lost their raw reports (their counts stay)."""
        with self._lock:
            if task_id not in self._windows:
                return
            before = self._pruned.get(task_id, frozenset())
            after = frozenset(starts)
            if after == before:
                return
            self._pruned[task_id] = after
            for start in before ^ after:
                if (task_id, start) in self._replies:
                    self._drop_reply((task_id, start))

    def pruned(self, task_id: str) -> frozenset[int]:
        """The starts of the held task's windows whose raw reports were deleted by its retention."""
        return self._pruned.get(task_id, frozenset())

    @staticmethod
    def _count_rows(
        task: Task, windows: dict[int, WindowCounts], dense: int, chunk: Sequence[tuple[int, str]]
    ) -> None:
        """Count stored ``(t, JSON text)`` rows into ``windows`` (created as needed; the caller locks)."""
        if not chunk:
            return
        starts = np.fromiter((task.window_start(t) for t, _ in chunk), dtype=np.int64, count=len(chunk))
        order = np.argsort(starts, kind="stable")  # a no-op pass for rows read in t order
        texts = [chunk[i][1] for i in order]
        starts = starts[order]
        offset = 0
        for batch in stored_batches(task.spec, [texts]):
            size = len(batch)
            for start, (low, high) in _runs(starts[offset : offset + size]):
                window = windows.get(start)
                if window is None:
                    window = windows[start] = WindowCounts(task.spec, dense)
                window.add_batch(slice_batch(batch, low, high))
            offset += size

    def catch_up(self, store: Store, task: Task) -> int:
        """Count what other servers committed to ``task`` since the held version; the reports counted.

        The reports are read into windows of their own, then merged in under
        the read lock: estimates are served meanwhile. A server further behind
        than the store's commit log reaches rebuilds the task's windows from
        the store (:meth:`load`).
        """
        with self._sync:
            held = self._versions.get(task.task_id)
            if held is None:  # not loaded (or forgotten): nothing held to bring up to date
                return 0
            fresh: dict[int, WindowCounts] = {}
            dense = self._dense_bytes.get(task.task_id) or accumulator_bytes(task.spec)
            version = held
            try:
                for snapshot, chunk in store.reports_since(task.task_id, held):
                    version = snapshot
                    self._count_rows(task, fresh, dense, chunk)
            except CommitLogTrimmed:
                trimmed = True
            else:
                trimmed = False
                self._merge_fresh(task, fresh, max(version, held))
        if trimmed:  # outside _sync: load takes it
            return self.load(store, task)
        return sum(counts.n for counts in fresh.values())

    def _merge_fresh(self, task: Task, fresh: dict[int, WindowCounts], version: int) -> None:
        """Merge counted windows into the task's and hold ``version`` (the caller holds ``_sync``)."""
        with self._lock:
            windows = self._windows.setdefault(task.task_id, {})
            for start, counts in fresh.items():
                window = windows.get(start)
                if window is None:
                    windows[start] = counts
                else:
                    window.add_counts(counts)
            self._versions[task.task_id] = version

    def sync(self, store: Store, tasks: Sequence[Task]) -> int:
        """Catch up every task of ``tasks`` whose committed version is past the held one; reports counted."""
        if not store.shared:
            return 0
        committed = store.versions()
        counted = 0
        for task in tasks:
            if committed.get(task.task_id, 0) > self._versions.get(
                task.task_id, committed.get(task.task_id, 0)
            ):
                counted += self.catch_up(store, task)
        return counted

    def version(self, task_id: str) -> int | None:
        """The commit version ``task_id``'s windows hold (None when not loaded)."""
        return self._versions.get(task_id)

    def forget(self, task_id: str) -> None:
        with self._lock:
            self._windows.pop(task_id, None)
            self._dense_bytes.pop(task_id, None)
            self._versions.pop(task_id, None)
            self._pruned.pop(task_id, None)
            self._forget_replies(task_id)

    def _forget_replies(self, task_id: str) -> None:
        for key in [key for key in self._replies if key[0] == task_id]:
            self._drop_reply(key)

    def _drop_reply(self, key: tuple[str, int]) -> None:
        _, reply = self._replies.pop(key)
        self._reply_rows -= _rows(reply)

    def _keep_reply(self, key: tuple[str, int], made: tuple[float, str], reply: dict[str, Any]) -> None:
        """Cache ``reply``, made at ``(confidence, candidates digest)`` (under the lock), dropping the least
        recently used beyond :data:`REPLY_CACHE_ROWS`."""
        if key in self._replies:
            self._drop_reply(key)
        self._replies[key] = (made, reply)
        self._reply_rows += _rows(reply)
        while self._reply_rows > REPLY_CACHE_ROWS and len(self._replies) > 1:
            self._drop_reply(next(iter(self._replies)))

    def add(
        self,
        task: Task,
        reports: Sequence[tuple[int, CheckedReport]],
        version: int | None = None,
        store: Store | None = None,
    ) -> None:
        """Count committed reports, given as ``(t, checked report)`` pairs.

        ``version`` is the task's version their commit reached in a shared
        ``store``: when the windows hold an earlier version than ``version -
        1``, the commits in between are read from ``store`` first (and then
        this one with them); when they hold ``version`` or later already, a
        catch-up counted these reports and nothing is added.
        """
        self.add_batches(task, windows_batches(task, reports), version, store)

    def add_batches(
        self,
        task: Task,
        batches: dict[int, ReportBatch],
        version: int | None = None,
        store: Store | None = None,
    ) -> None:
        """:meth:`add` the committed reports of one commit given as one batch per window start."""
        if version is None:
            self._add_batches(task, batches)
            return
        with self._sync:
            held = self._versions.get(task.task_id)
            if (
                held is None
            ):  # the task is not held (forgotten meanwhile): it is loaded in full when next used
                return
            if held == version - 1:
                self._add_batches(task, batches)
                with self._lock:
                    self._versions[task.task_id] = version
                return
        if held < version and store is not None:
            self.catch_up(store, task)  # reads through this commit: counts it with the others

    def _add_batches(self, task: Task, batches: dict[int, ReportBatch]) -> None:
        with self._lock:
            windows = self._windows.setdefault(task.task_id, {})
            for start, batch in batches.items():
                window = windows.get(start)
                if window is None:
                    window = windows[start] = self._new_window(task)
                window.add_batch(batch)

    def counts(self, task: Task) -> dict[int, int]:
        """Reports per window start, in time order."""
        with self._lock:
            windows = self._windows.get(task.task_id, {})
            return {start: windows[start].n for start in sorted(windows)}

    def merged(self, task: Task, start: int | None, end: int | None) -> Accumulator:
        """One accumulator over the windows in ``[start, end)`` (a copy: later reports do not change it)."""
        return self.merged_with_counts(task, start, end)[0]

    def merged_with_counts(
        self, task: Task, start: int | None, end: int | None
    ) -> tuple[Accumulator, list[int]]:
        """:meth:`merged` and the report count of each window it merged (in time order), read together."""
        with self._lock:
            windows = self._windows.get(task.task_id, {})
            selected = [
                windows[s]
                for s in sorted(windows)
                if (start is None or s >= start) and (end is None or s < end)
            ]
            counts = [window.n for window in selected]
            total = make_aggregator(task.spec)
            for window in selected:
                total = window.add_to(total)
        return total, counts

    def replies(self, task: Task, confidence: float) -> list[dict[str, Any]]:
        """One entry per window holding reports: start, end, n and estimates or the withheld reason.

        The entries are shared with later calls: read them, never change them.
        """
        replies = []
        pruned = self.pruned(task.task_id)
        made = (confidence, task.candidates_digest)  # a task updated with other candidates: decoded again
        for start, n in self.counts(task).items():
            key = (task.task_id, start)
            with self._lock:
                cached = self._replies.pop(key, None)
                if cached is not None:  # most recently used last
                    self._replies[key] = cached
            if (
                cached is not None
                and cached[0] == made
                and cached[1]["n"] == n
                and cached[1]["pruned"] == (start in pruned)  # a reply made as the window was being marked
            ):
                replies.append(cached[1])
                continue
            merged = self.merged(task, start, start + task.window)
            reply = {
                "start": start,
                "end": start + task.window,
                **estimate_reply(task, merged, confidence, decodes=self.decodes),
                "pruned": start in pruned,
            }
            with self._lock:
                self._keep_reply(key, made, reply)
            replies.append(reply)
        return replies


def _rows(reply: dict[str, Any]) -> int:
    """Estimate rows of a window reply (1 for a withheld one)."""
    decoded = (reply.get("candidates") or {}).get("rows") or ()
    return max(1, len(reply.get("estimates") or ()) + len(reply.get("cdf") or ()) + len(decoded))


def _runs(starts: np.ndarray) -> list[tuple[int, tuple[int, int]]]:
    """The runs of equal values of a sorted array: ``(value, (first index, end index))`` each."""
    if not starts.size:
        return []
    cuts = np.flatnonzero(np.diff(starts)) + 1
    bounds = [0, *cuts.tolist(), int(starts.size)]
    return [(int(starts[low]), (low, high)) for low, high in itertools.pairwise(bounds)]


def slice_batch(batch: ReportBatch, low: int, high: int) -> ReportBatch:
    """Rows ``[low, high)`` of ``batch`` as a batch of its own (copies: it does not keep ``batch`` alive)."""
    if low == 0 and high == len(batch):
        return batch
    columns = {name: column[low:high].copy() for name, column in batch.columns().items()}
    groups = None if batch.groups is None else batch.groups[low:high].copy()
    return ReportBatch.from_columns(batch.spec, columns, groups)


def check_range(task: Task, start: int | None, end: int | None) -> None:
    """``start`` and ``end`` must fall on window boundaries, ``start < end``."""
    for name, value in (("from", start), ("to", end)):
        if value is not None and value % task.window:
            raise ParameterError(
                f"'{name}' must be a window boundary (a multiple of {task.window} s), got {value}"
            )
    if start is not None and end is not None and end <= start:
        raise ParameterError(f"'to' ({end}) must come after 'from' ({start})")


def estimate_reply(
    task: Task,
    accumulator: Accumulator,
    confidence: float,
    window_counts: Sequence[int] | None = None,
    decodes: CandidateDecodes | None = None,
) -> dict[str, Any]:
    """``n`` and the estimate records, or the reason they are withheld.

    A range task's reply also carries ``cdf`` and ``quantiles``
    (:func:`~ldp.collector.range_view.range_view`); a Bloom RAPPOR task with
    candidates, ``candidates``: its reports decoded against them
    (:func:`~ldp.collector.candidate_view.candidate_view`, kept in
    ``decodes``), beside the bit estimates in ``estimates``.

    A frequency table carries both views: the unbiased columns and the
    consistent view in ``consistent``, named by ``consistency`` (Norm-Sub;
    None where no consistent view applies).

    In shuffle mode the reply also carries ``central``, the central (ε, δ)
    of the shuffled reports of the windows counted in ``window_counts``
    (default: one window of all the accumulator's reports).
    """
    n = accumulator.n
    extra: dict[str, Any] = {}
    if task.shuffle_delta is not None:
        extra["central"] = central_privacy(task, [n] if window_counts is None else window_counts)
    if n < task.min_batch:
        return {
            "n": n,
            "estimates": None,
            "withheld": f"fewer than min_batch ({task.min_batch}) reports: {n}",
            **extra,
        }
    from ldp.aggregator.views import default_consistency

    consistency = default_consistency(task.spec)
    return {
        "n": n,
        "estimates": estimate_records(accumulator.estimate(confidence=confidence, consistency=consistency)),
        "consistency": None if consistency == "none" else consistency,
        "withheld": None,
        **range_view(accumulator, confidence),
        **candidate_view(task, accumulator, confidence, decodes),
        **extra,
    }


def task_summary(task: Task, confidence: float) -> dict[str, Any]:
    """A task's public description with the dashboard's fields (its ``name`` and ``description`` among them).

    ``memoized`` says the spec memoizes (RAPPOR, the longitudinal
    mechanisms): its clients report the same values round after round, and
    the dashboard names its windows rounds. ``num_candidates`` counts the
    candidate values a Bloom RAPPOR task's windows are decoded against
    (0: none; the page then says how to give them). A multi-attribute task
    also lists its ``attributes`` (:func:`record_attributes`): the page's
    attribute selector offers them even before a window has estimates.
    """
    memoized = bool(getattr(task.spec, "memoized", False))
    summary = {
        **task.to_dict(),
        **task.labels(),
        "kind": _kind(task),
        "confidence": confidence,
        "memoized": memoized,
        "num_candidates": len(task.candidates),
    }
    if summary["kind"] == "records":
        summary["attributes"] = record_attributes(task.spec)
    return summary


def record_attributes(spec: Any) -> list[dict[str, Any]]:
    """A multi-attribute spec's attributes in spec order, as the dashboard offers them to choose from.

    Each is ``name``, ``statistic`` (``count``: a categorical attribute, a
    row per value in the estimate table; ``mean``: a numeric one, one row),
    ``mechanism`` and, for a categorical attribute, ``domain_size``.
    """
    from ldp.specs.numeric import NumericSpec

    attributes = []
    for name, attribute in zip(spec.names, spec.attributes, strict=True):
        numeric = isinstance(attribute, NumericSpec)
        entry: dict[str, Any] = {
            "name": name,
            "statistic": "mean" if numeric else "count",
            "mechanism": attribute.mechanism,
        }
        if not numeric:
            entry["domain_size"] = len(attribute.domain)
        attributes.append(entry)
    return attributes
