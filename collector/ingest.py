"""Group commit: uploads wait for one shared transaction instead of one fsync each (docs/collector.md#upload).

Upload handlers :meth:`GroupCommitter.submit` their checked reports and
await the returned future. One writer thread takes everything queued when
it is free (up to :attr:`GroupCommitter.max_reports` reports), stores it with
one :meth:`~ldp.collector.store.Store.insert_reports_versioned` call (one
transaction, committed before it returns), adds the newly stored reports to
the window accumulators (at the task versions the commit reached, on a shared
store), and only then resolves the futures. While one group commits,
the next one gathers, so throughput grows with load and an idle collector
adds no delay. Uploads waiting on an event loop (:meth:`GroupCommitter.commit`)
are woken by one call per group and loop, not one per upload: each wake-up
is a write to the loop's self-pipe by the writer and a read, a callback and
a task step on the loop. A failed commit fails every upload of its group (the
clients retry the same envelopes; nothing was acknowledged); it is logged
as one line and counted (``on_failure``: the metrics' store errors).
:func:`upload_outcome` turns one upload's store outcomes into its reply.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ldp.aggregator.report_columns import batch_from_fields, concat_batches
from ldp.batch import ReportBatch
from ldp.collector.envelopes import Accepted, AcceptedColumns, CheckedUpload, Rejection
from ldp.collector.store import Insert, Store, StoredColumns, StoredReport, UnknownTaskError
from ldp.collector.tasks import Task
from ldp.collector.windows import Windows, windows_batches
from ldp.report_check import CheckedReport

__all__ = ["CommitStats", "GroupCommitter", "UploadOutcome", "upload_outcome"]

#: The detail of an ``id_conflict`` rejection.
ID_CONFLICT_DETAIL = (
    "a different report with this id is already stored; this one was not stored "
    "(a retry resends the same envelope byte for byte; a new report needs a new id)"
)

_log = logging.getLogger("ldp.collector")


@dataclasses.dataclass(frozen=True)
class CommitStats:
    """What one group commit did: uploads, reports, seconds in the store."""

    uploads: int
    reports: int
    seconds: float


@dataclasses.dataclass(frozen=True)
class UploadOutcome:
    """What one upload did: reports stored now, replays, and every rejection in request order."""

    accepted: int
    replayed: int
    rejected: list[Rejection]

    def to_dict(self) -> dict[str, Any]:
        """The upload's reply body."""
        return {
            "accepted": self.accepted,
            "replayed": self.replayed,
            "rejected": [rejection.to_dict() for rejection in self.rejected],
        }


def upload_outcome(checked: CheckedUpload, outcomes: Sequence[Insert]) -> UploadOutcome:
    """The reply to an upload whose accepted envelopes the store answered with ``outcomes`` (in order).

    An envelope whose id holds a different stored report is rejected as
    ``id_conflict``: its report was not stored, and calling it a replay
    would tell the client it was.
    """
    conflicts = (
        [
            Rejection(accepted.index, accepted.id, "id_conflict", ID_CONFLICT_DETAIL)
            for accepted, outcome in zip(checked.accepted, outcomes)
            if outcome is Insert.CONFLICT
        ]
        if Insert.CONFLICT in outcomes
        else []
    )
    rejected = sorted([*checked.rejected, *conflicts], key=lambda rejection: rejection.index)
    return UploadOutcome(
        accepted=outcomes.count(Insert.STORED), replayed=outcomes.count(Insert.REPLAYED), rejected=rejected
    )


@dataclasses.dataclass
class _Pending:
    task: Task
    accepted: Sequence[Accepted]
    #: a concurrent future (:meth:`GroupCommitter.submit`), or an asyncio future of ``loop`` (:meth:`GroupCommitter.commit`)
    future: concurrent.futures.Future[list[Insert]] | asyncio.Future[list[Insert]]
    loop: asyncio.AbstractEventLoop | None = None


#: One upload's result: what the store did with each report, or why the commit failed.
_Settled = tuple[
    "concurrent.futures.Future[list[Insert]] | asyncio.Future[list[Insert]]", Any, "BaseException | None"
]


def _settle(settled: Sequence[_Settled]) -> None:
    """Give each future its result or exception, unless it is done already (cancelled: nobody waits for it)."""
    for future, result, exc in settled:
        if future.done():
            continue
        with contextlib.suppress(concurrent.futures.InvalidStateError, asyncio.InvalidStateError):
            if exc is not None:  # (a concurrent future cancelled since done() was asked: suppressed)
                future.set_exception(exc)
            else:
                future.set_result(result)


def _by_task(
    group: Sequence[_Pending],
) -> tuple[list[tuple[str, Sequence[StoredReport]]], list[tuple[int, int, int]]]:
    """The group's reports as one sequence per task (in order of first appearance), and where each upload's are.

    One store group per task and commit, not per upload: the store looks the
    task up, checks its windows and runs its insert once per group (SQLite:
    two queries and an ``executemany`` per upload before). Each upload's
    outcomes are ``per_task[index][begin:end]``. A task whose uploads were
    all accepted whole gets their columns joined (:class:`~ldp.collector.store.StoredColumns`).
    """
    parts: dict[str, list[Sequence[StoredReport]]] = {}
    slices: list[tuple[int, int, int]] = []
    sizes: dict[str, int] = {}
    order: dict[str, int] = {}
    for pending in group:
        task_id = pending.task.task_id
        index = order.setdefault(task_id, len(order))
        accepted = pending.accepted
        stored = accepted.stored if type(accepted) is AcceptedColumns else [a.stored for a in accepted]
        parts.setdefault(task_id, []).append(stored)
        begin = sizes.get(task_id, 0)
        sizes[task_id] = begin + len(stored)
        slices.append((index, begin, sizes[task_id]))
    merged: list[tuple[str, Sequence[StoredReport]]] = []
    for task_id, stored_parts in parts.items():
        if all(type(part) is StoredColumns for part in stored_parts):
            columns = StoredColumns([], [], [])
            for part in stored_parts:
                columns.extend(part)
            merged.append((task_id, columns))
        else:
            merged.append((task_id, [report for part in stored_parts for report in part]))
    return merged, slices


def _batches_by_window(
    task: Task, counted: Sequence[tuple[int, CheckedReport]], whole: Sequence[AcceptedColumns]
) -> dict[int, ReportBatch]:
    """The reports to count, one batch per window: ``(t, checked report)`` pairs, and uploads counted whole.

    An upload of one window (nearly every one) is counted from its columns
    (:meth:`~ldp.collector.envelopes.AcceptedColumns.fields`, joined with the
    others of that window); one spanning windows, as its checked records.
    """
    pairs = list(counted)
    by_window: dict[int, list[AcceptedColumns]] = {}
    for accepted in whole:
        starts = {task.window_start(t) for t in set(accepted.stored.ts)}
        if len(starts) == 1:
            by_window.setdefault(starts.pop(), []).append(accepted)
        else:
            pairs.extend((a.stored.t, a.checked) for a in accepted)
    batches = windows_batches(task, pairs)
    for start, uploads in by_window.items():
        fields: dict[str, list[Any]] = {}
        groups: list[str | None] = []
        for accepted in uploads:
            for name, column in accepted.fields().items():
                fields.setdefault(name, []).extend(column)
            groups.extend(accepted.groups)
        batch = batch_from_fields(task.spec, fields, groups)
        held = batches.get(start)
        batches[start] = batch if held is None else concat_batches(task.spec, [held, batch])
    return batches


class GroupCommitter:
    """One writer thread committing queued uploads in groups.

    Parameters
    ----------
    store : Store
        Where reports are committed.
    windows : Windows
        The accumulators that count what was newly stored.
    max_reports : int
        The most reports one transaction takes (an upload is never split).
    on_commit : callable, optional
        Called with :class:`CommitStats` after each commit (metrics).
    on_failure : callable, optional
        Called with the exception after each failed commit (metrics); the
        failure is also logged, one line.
    """

    def __init__(
        self,
        store: Store,
        windows: Windows,
        *,
        max_reports: int = 5_000,
        on_commit: Callable[[CommitStats], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.store = store
        self.windows = windows
        self.max_reports = max_reports
        self._on_commit = on_commit or (lambda stats: None)
        self._on_failure = on_failure or (lambda exc: None)
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ldp-group-commit", daemon=True)
        self._stopped = False
        self._commit_started: float | None = None  # time.monotonic() when the running commit began
        self._thread.start()

    def queued(self) -> int:
        """Uploads waiting for a group commit now (approximate: the queue's size; ``ldp_commit_queue_uploads``)."""
        return self._queue.qsize()

    def commit_seconds(self) -> float:
        """Seconds the running group commit has taken so far; 0 when none runs (a stalled commit grows)."""
        started = self._commit_started
        return 0.0 if started is None else time.monotonic() - started

    def submit(self, task: Task, accepted: Sequence[Accepted]) -> concurrent.futures.Future[list[Insert]]:
        """Queue one upload's accepted reports; the future gives, per report, what the store did (:class:`Insert`)."""
        future: concurrent.futures.Future[list[Insert]] = concurrent.futures.Future()
        if self._stopped:
            future.set_exception(RuntimeError("the collector is shutting down"))
        elif not accepted:
            future.set_result([])
        else:
            self._queue.put(_Pending(task, accepted, future))
        return future

    async def commit(self, task: Task, accepted: Sequence[Accepted]) -> list[Insert]:
        """Queue one upload's accepted reports and wait for their commit: per report, what the store did.

        From an event loop. The uploads of one group waiting on one loop are
        woken by one call (:meth:`submit`'s futures are woken one by one). An
        upload cancelled while it waits is not acknowledged; its reports may
        still be committed with its group (a retry is then a replay).

        Raises
        ------
        RuntimeError
            If the committer is shutting down.
        Exception
            What the store raised when the group's commit failed (nothing of the group was stored).
        """
        if self._stopped:
            raise RuntimeError("the collector is shutting down")
        if not accepted:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Insert]] = loop.create_future()
        self._queue.put(_Pending(task, accepted, future, loop))
        return await future

    def close(self, timeout: float = 30.0) -> None:
        """Commit what is queued, then stop the writer thread."""
        self._stopped = True
        self._queue.put(None)
        self._thread.join(timeout)

    def _take_group(self, first: _Pending) -> tuple[list[_Pending], bool]:
        group, size, stop = [first], len(first.accepted), False
        while size < self.max_reports:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                stop = True
                break
            group.append(item)
            size += len(item.accepted)
        return group, stop

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            group, stop = self._take_group(first)
            self._commit(group)
            if stop:
                return

    def _commit(self, group: list[_Pending]) -> None:
        started = time.perf_counter()
        self._commit_started = time.monotonic()
        try:
            merged, slices = _by_task(group)
            per_task, versions = self.store.insert_reports_versioned(merged)
            flags = [per_task[index][begin:end] for index, begin, end in slices]
        except BaseException as exc:  # the whole group failed: nothing was stored, nobody is acknowledged
            self._commit_started = None
            self._failed(group, exc)
            self._resolve([(pending.future, None, exc) for pending in group], group)
            return
        self._commit_started = None
        seconds = time.perf_counter() - started
        try:
            # one add per task and group, not per upload: an accumulator's add_batch has a fixed cost
            # (RAPPOR 64 cohorts x 128 bits: ~2.4 ms for its byte histogram, whatever the batch size)
            fresh: dict[str, tuple[Task, list[tuple[int, CheckedReport]], list[AcceptedColumns]]] = {}
            for pending, stored in zip(group, flags):
                _task, counted, whole = fresh.setdefault(pending.task.task_id, (pending.task, [], []))
                accepted = pending.accepted
                if type(accepted) is AcceptedColumns and stored.count(Insert.STORED) == len(stored):
                    whole.append(accepted)  # every report new: counted from its columns
                    continue
                counted.extend(
                    (a.stored.t, a.checked)
                    for a, outcome in zip(accepted, stored)
                    if outcome is Insert.STORED
                )
            for task, counted, whole in fresh.values():
                if counted or whole:
                    batches = _batches_by_window(task, counted, whole)
                    self.windows.add_batches(task, batches, versions.get(task.task_id), self.store)
        except Exception:  # committed all the same: acknowledge, and rebuild the windows from the store
            _log.exception("counting committed reports failed; the windows are rebuilt from the store")
            for task in {pending.task.task_id: pending.task for pending in group}.values():
                try:
                    self.windows.load(self.store, task)
                except Exception:  # the store is down too: a shared store's sync catches up later
                    _log.exception("rebuilding the windows of a task failed")
        self._resolve([(pending.future, stored, None) for pending, stored in zip(group, flags)], group)
        self._on_commit(CommitStats(len(group), sum(len(p.accepted) for p in group), seconds))

    @staticmethod
    def _resolve(settled: list[_Settled], group: list[_Pending]) -> None:
        """Settle the group's futures (in order): concurrent ones here, each loop's in one call on that loop."""
        on_loops: dict[asyncio.AbstractEventLoop, list[_Settled]] = {}
        here: list[_Settled] = []
        for item, pending in zip(settled, group):
            if pending.loop is None:
                here.append(item)
            else:
                on_loops.setdefault(pending.loop, []).append(item)
        _settle(here)
        for loop, items in on_loops.items():
            with contextlib.suppress(RuntimeError):  # the loop was closed: nobody waits on it any more
                loop.call_soon_threadsafe(_settle, items)

    def _failed(self, group: list[_Pending], exc: BaseException) -> None:
        """Log a failed commit (one line) and count it; an upload naming a deleted task is no store failure."""
        if isinstance(exc, UnknownTaskError):
            return
        reports = sum(len(pending.accepted) for pending in group)
        reason = (str(exc).strip().splitlines() or [""])[0]
        _log.error(
            "store commit failed, %d upload(s) of %d report(s) answered 503: %s%s",
            len(group),
            reports,
            type(exc).__name__,
            f": {reason}" if reason else "",
        )
        try:
            self._on_failure(exc)
        except Exception:  # pragma: no cover - metrics must never stop the writer
            _log.exception("counting a failed commit failed")
