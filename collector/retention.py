"""Per-task retention: old windows keep their aggregate and lose their raw reports (docs/collector.md#retention).

A task with a retention ``R`` (:attr:`Task.retain <ldp.collector.tasks.Task.retain>`)
keeps the raw reports of a window until ``R`` after the window's end. Then
:func:`prune_task`, for each expired window still holding reports:

1. reads the window's reports (a read: ingestion goes on) into the task's
   accumulator, and saves its state (:func:`ldp.aggregator.state.dump_state`);
2. keeps that state in one short write transaction that first counts the
   window's stored reports again (:meth:`Store.keep_window
   <ldp.collector.store.Store.keep_window>`): a window that received a report
   meanwhile is left for the next run, so the kept state always holds
   exactly the reports stored;
3. deletes the window's reports (:meth:`Store.discard_windows
   <ldp.collector.store.Store.discard_windows>`: SQLite in batches of a
   bounded size, PostgreSQL by dropping whole partitions).

From step 2 on, the window is read from its aggregate, and its raw reports,
however many are left, are skipped by every read. So a run killed at any
point (``kill -9`` included) leaves every window either whole or kept, and
the next run finishes the deletion: pruning is idempotent. A window's
estimate is the same before and after: the kept state holds the same
counts. Uploads into an expired window are refused at the door
(:mod:`ldp.collector.acceptance`) and, for one racing a run, at commit.

``ldp serve`` prunes every :data:`PRUNE_SECONDS`; ``ldp task prune`` does it
once (for cron, or a store no server runs on).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.state import dump_state, load_state
from ldp.collector.accumulate import accumulate_stored
from ldp.collector.store import Store, WindowAggregate
from ldp.collector.tasks import Task, format_duration
from ldp.errors import ParameterError

__all__ = [
    "DISCARD_BATCH",
    "PRUNE_SECONDS",
    "PruneResult",
    "accumulate_range",
    "check_prunable",
    "describe",
    "prune",
    "prune_task",
]

#: Seconds between two retention runs of ``ldp serve``.
PRUNE_SECONDS = 3_600.0
#: Reports SQLite deletes per transaction (an upload waits for one batch at most).
DISCARD_BATCH = 10_000


@dataclasses.dataclass(frozen=True)
class PruneResult:
    """What one retention run did to one task.

    Parameters
    ----------
    task_id : str
        The task.
    before : int or None
        Windows starting before this were expired (None: the task has no retention).
    kept : tuple of int
        The starts of the windows whose aggregate was kept in this run.
    reports_deleted : int
        Raw reports deleted in this run (of these windows, or left by an earlier, interrupted run).
    retry : tuple of int
        The starts of expired windows that received reports while being read: kept by a later run.
    """

    task_id: str
    before: int | None
    kept: tuple[int, ...] = ()
    reports_deleted: int = 0
    retry: tuple[int, ...] = ()


def check_prunable(task: Task) -> None:
    """Refuse a retention for a task whose accumulator has no saved state (an installed mechanism may lack one)."""
    kind = type(make_aggregator(task.spec))
    if not kind.restorable():
        raise ParameterError(
            f"task {task.task_id} ({task.spec.mechanism}) cannot have a retention: its accumulator "
            f"{kind.__name__} has no saved state, so an old window's estimate could not be kept"
        )


def prune_task(
    store: Store, task: Task, now: float | None = None, *, batch: int = DISCARD_BATCH, chunk: int = 50_000
) -> PruneResult:
    """Keep the aggregate of every expired window of ``task`` and delete its raw reports (see the module).

    Parameters
    ----------
    store : Store
        The store, open for writing.
    task : Task
        The task (nothing is done without :attr:`~ldp.collector.tasks.Task.retain`).
    now : float, optional
        The time the retention is measured from (default: the clock).
    batch : int
        Reports SQLite deletes per transaction.
    chunk : int
        Reports read at a time while a window's aggregate is made.
    """
    now = time.time() if now is None else now
    before = task.expired_before(now)
    if before is None:
        return PruneResult(task.task_id, None)
    check_prunable(task)
    raw = store.expired_windows(task.task_id, before)
    pruned = store.pruned_windows(task.task_id)
    kept, retry = [], []
    for start in sorted(raw):
        if start in pruned:
            continue  # kept by an earlier run: only its deletion is left
        chunks = store.report_texts(task.task_id, start, start + task.window, chunk=chunk)
        accumulator = accumulate_stored(task.spec, chunks)
        aggregate = WindowAggregate(start, accumulator.n, dump_state(accumulator), int(now))
        if store.keep_window(task.task_id, aggregate):  # it counts the window's reports again
            kept.append(start)
        else:
            retry.append(start)
    deleted = store.discard_windows(task.task_id, before, batch)
    return PruneResult(task.task_id, before, tuple(kept), deleted, tuple(retry))


def prune(store: Store, tasks: Sequence[Task] | None = None, now: float | None = None) -> list[PruneResult]:
    """:func:`prune_task` for each task of ``tasks`` (default: every task of the store) that has a retention."""
    chosen = store.tasks() if tasks is None else list(tasks)
    return [prune_task(store, task, now) for task in chosen if task.retain is not None]


def describe(result: PruneResult, task: Task) -> str:
    """One line for ``ldp task prune`` and the server's log."""
    if result.before is None or task.retain is None:
        return f"task {task.task_id}: no retention"
    line = (
        f"task {task.task_id}: retention {format_duration(task.retain)}; "
        f"{len(result.kept):,} window(s) pruned now, {result.reports_deleted:,} raw report(s) deleted"
    )
    if result.retry:
        line += f"; {len(result.retry):,} window(s) received reports while read, pruned next time"
    return line


def accumulate_range(
    store: Store,
    task: Task,
    start: int | None = None,
    end: int | None = None,
    chunk: int = 50_000,
    on_chunk: Callable[[int], None] | None = None,
) -> tuple[Accumulator, int, int]:
    """The accumulator of the task's reports with ``start <= t < end``: raw reports, and kept aggregates.

    A pruned window inside the range counts through its kept aggregate;
    one the range cuts is refused (its reports, which the cut would split,
    are gone). The aggregates are read before and after the raw reports, and
    the whole read is redone if a window was pruned in between, so each
    report is counted once. ``on_chunk`` is called with each chunk's size.

    Returns
    -------
    (Accumulator, int, int)
        The accumulator, the raw reports read and the pruned windows merged.

    Raises
    ------
    ParameterError
        When the range cuts a pruned window.
    """
    while True:
        first = _aggregates_in(store, task, start, end)
        chunks = store.report_texts(task.task_id, start, end, chunk=chunk)

        def counted(chunks: Iterable[list[str]]) -> Iterator[list[str]]:
            for texts in chunks:
                if on_chunk is not None:
                    on_chunk(len(texts))
                yield texts

        accumulator = accumulate_stored(task.spec, counted(chunks))
        seen = accumulator.n
        again = _aggregates_in(store, task, start, end)
        if [a.start for a in again] == [a.start for a in first]:
            break
    for aggregate in first:
        accumulator = accumulator.merge(load_state(task.spec, aggregate.state))
    return accumulator, seen, len(first)


def _aggregates_in(store: Store, task: Task, start: int | None, end: int | None) -> list[WindowAggregate]:
    """The kept aggregates of the pruned windows inside ``[start, end)``; a window the range cuts is refused."""
    inside = []
    for aggregate in store.window_aggregates(task.task_id):
        low, high = aggregate.start, aggregate.start + task.window
        if (end is not None and low >= end) or (start is not None and high <= start):
            continue
        if (start is not None and low < start) or (end is not None and high > end):
            raise ParameterError.naming(
                f"{{start}}/{{end}} cut the window [{low}, {high}) of task {task.task_id}, whose raw reports the "
                "retention deleted (its aggregate is kept whole): give window boundaries",
                start=start,
                end=end,
            )
        inside.append(aggregate)
    return inside
