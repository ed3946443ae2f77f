"""The collector's durable store: tasks and the reports they received (docs/collector.md#store).

:class:`Store` is the interface; :mod:`ldp.collector.store_sqlite` (embedded,
the default) and :mod:`ldp.collector.store_postgres` implement it, and
:func:`open_store` picks one from a URL. A store keeps, per report, only
what estimation needs: the task, the report's random id, its time truncated
to the task's precision, and the report's JSON. Never an address, a user
agent or an arrival time.

Every method is safe to call from several threads of one process (each
implementation serializes or pools its connections) and from several
processes at once (the databases' own locking). :meth:`Store.insert_reports`
commits before it returns: what it reports as stored survives a ``kill -9``.

A store opened ``read_only`` never writes (SQLite ``mode=ro``, PostgreSQL
read-only transactions): what ``ldp task list`` and ``ldp aggregate --store``
use. A SQLite store opened ``exclusive`` (what ``ldp serve`` does) holds a
lock that a second exclusive opener is refused: a serving collector keeps
estimates in memory, and two of them on one file would each count only
their own uploads (docs/collector.md#single-writer).

A store that several servers share (:attr:`Store.shared`: PostgreSQL) numbers
each task's commits: every :meth:`Store.insert_reports_versioned` that
stores reports of a task raises the task's *version* by one, in the same
transaction, and versions are taken in commit order. A server that holds a
task's windows as of version ``v`` catches up with what other servers
committed by reading the reports of versions after ``v``
(:meth:`Store.reports_since`), so every server counts every committed report
exactly once (docs/collector.md#many-instances).

A task with a retention (:attr:`Task.retain <ldp.collector.tasks.Task.retain>`)
loses the raw reports of its windows older than it
(:mod:`ldp.collector.retention`): each such window's accumulator state is
kept first (:meth:`Store.keep_window`, a :class:`WindowAggregate`), then its
reports are deleted (:meth:`Store.discard_windows`). From the moment a
window's aggregate is kept, every read of raw reports skips the window (its
reports may still be being deleted), uploads into it are refused, and
:meth:`Store.read_windows` gives its aggregate instead
(docs/collector.md#retention).
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import functools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Self

from ldp.collector.tasks import Task
from ldp.errors import ParameterError, StoreError

__all__ = [
    "DEFAULT_STORE",
    "TASK_COLUMNS",
    "TASK_COLUMN_COUNT",
    "CommitLogTrimmed",
    "Insert",
    "ReadAsList",
    "Store",
    "StoreOpenError",
    "StoreUnavailable",
    "StoredColumns",
    "StoredReport",
    "TaskExistsError",
    "UnknownTaskError",
    "WindowAggregate",
    "WindowPruned",
    "open_store",
    "same_report",
    "task_columns",
    "task_of",
    "task_row",
]

#: The store ``ldp serve`` and ``ldp task`` use without ``--store``: SQLite in the working directory.
DEFAULT_STORE = "ldp-collector.db"


class StoreUnavailable(StoreError):
    """The store cannot be reached or cannot write now (a stopped server, a lock, a full disk): retry later."""


class CommitLogTrimmed(StoreError):
    """The commit log no longer holds every commit after a version: rebuild the windows from the store."""


class WindowPruned(StoreUnavailable):
    """An upload holds a report of a window whose raw reports the retention deleted meanwhile (nothing is stored).

    A :class:`StoreUnavailable`: the upload may be sent again, and is then
    refused report by report as too old for the task's retention.
    """


class UnknownTaskError(StoreError, ParameterError):
    """An upload names a task that is not (or no longer) in the store."""


class StoreOpenError(StoreError, ParameterError):
    """The store cannot be opened or used as asked (a bad ``--store``).

    A path or URL that names no store or no ldp store, a store the role lacks
    rights on, an unsupported URL scheme, or a write to a store opened
    read-only.
    """


class TaskExistsError(StoreError, ParameterError):
    """A task with the new task's id is already in the store."""


class Insert(enum.Enum):
    """What :meth:`Store.insert_reports` did with one report."""

    #: Stored now.
    STORED = "stored"
    #: A report with its id and the same content was already stored (a retry): nothing changed.
    REPLAYED = "replayed"
    #: A *different* report with its id is stored: the new one was not stored.
    CONFLICT = "conflict"


def same_report(stored_t: int, stored_text: str, report: StoredReport) -> bool:
    """True when ``report`` is the stored ``(t, text)`` again: same ``t`` and the same JSON value.

    The texts are compared as JSON values when they differ as text, so a
    report stored by an ldp that spelled a float differently (``1e-07``,
    ``1e-7``) is still a replay.
    """
    if stored_t != report.t:
        return False
    if stored_text == report.report:
        return True
    try:
        return bool(json.loads(stored_text) == json.loads(report.report))
    except ValueError:
        return False


class StoredReport(NamedTuple):
    """One stored report: its id (16 bytes), its truncated time and its JSON text.

    A named tuple, not a dataclass: one is made per report uploaded or read,
    and a tuple is built in a third of a frozen dataclass's time.
    """

    report_id: bytes
    t: int
    report: str


_stored_report = functools.partial(tuple.__new__, StoredReport)


class ReadAsList(Sequence[Any]):
    """A sequence of records held some other way (columns) that compares, hashes and prints as the list of them."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


class StoredColumns(ReadAsList, Sequence[StoredReport]):
    """Reports to store held as three columns (ids, times, texts); a :class:`StoredReport` is made when read.

    What the collector hands the store for an upload it accepted whole
    (:class:`~ldp.collector.envelopes.AcceptedColumns`): no record per report
    on the event loop, and a store that reads the columns (SQLite) makes its
    rows from them directly (docs/performance.md#collector-columns).
    """

    __slots__ = ("report_ids", "texts", "ts")

    def __init__(self, report_ids: list[bytes], ts: list[int], texts: list[str]) -> None:
        self.report_ids = report_ids
        self.ts = ts
        self.texts = texts

    def extend(self, reports: Sequence[StoredReport]) -> None:
        """Append ``reports`` (columns when they are :class:`StoredColumns`)."""
        if type(reports) is StoredColumns:
            self.report_ids.extend(reports.report_ids)
            self.ts.extend(reports.ts)
            self.texts.extend(reports.texts)
            return
        for report_id, t, text in reports:
            self.report_ids.append(report_id)
            self.ts.append(t)
            self.texts.append(text)

    def __len__(self) -> int:
        return len(self.ts)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return list(map(_stored_report, zip(self.report_ids[index], self.ts[index], self.texts[index])))
        return StoredReport(self.report_ids[index], self.ts[index], self.texts[index])

    def __iter__(self) -> Iterator[StoredReport]:
        return map(_stored_report, zip(self.report_ids, self.ts, self.texts))


@dataclasses.dataclass(frozen=True)
class WindowAggregate:
    """What the store keeps of a window whose raw reports were deleted by the task's retention.

    Parameters
    ----------
    start : int
        The window's start (Unix seconds).
    n : int
        The reports it held.
    state : bytes
        Their accumulator's state (:func:`ldp.aggregator.state.dump_state`).
    pruned_at : int
        When the aggregate was kept (Unix seconds).
    """

    start: int
    n: int
    state: bytes
    pruned_at: int


#: The tasks table's columns, in the order of :func:`task_row` and :func:`task_of` (both stores use them).
TASK_COLUMNS = (
    "task_id, spec_json, window_seconds, time_precision, min_batch, token_hash, not_before, not_after, cors_origins, "
    "shuffle_delta, created_at, name, description, retain_seconds, candidates"
)
#: The columns :meth:`Store.update_task` changes (the others are fixed when the task is created).
MUTABLE_TASK_COLUMNS = ("name", "description", "retain_seconds", "candidates")
#: Number of :data:`TASK_COLUMNS` (placeholders in an INSERT).
TASK_COLUMN_COUNT = TASK_COLUMNS.count(",") + 1


def task_row(task: Task) -> tuple[Any, ...]:
    """A task as the values of :data:`TASK_COLUMNS`."""
    return (
        task.task_id,
        task.spec_json,
        task.window,
        task.time_precision,
        task.min_batch,
        task.token_hash,
        task.not_before,
        task.not_after,
        json.dumps(list(task.cors_origins)),
        task.shuffle_delta,
        task.created,
        task.name or None,
        task.description or None,
        task.retain,
        json.dumps(list(task.candidates), ensure_ascii=False) if task.candidates else None,
    )


def task_columns(version: int) -> str:
    """:data:`TASK_COLUMNS` as a SELECT list for a store of schema ``version`` (NULL for columns it lacks).

    A read-only store cannot migrate an older schema; it reads it this way.
    """
    columns = TASK_COLUMNS.split(", ")
    added = {
        "shuffle_delta": 2,
        "created_at": 3,
        "name": 4,
        "description": 4,
        "retain_seconds": 6,
        "candidates": 7,
    }
    return ", ".join("NULL" if added.get(name, 1) > version else name for name in columns)


def task_of(row: Sequence[Any]) -> Task:
    """The task of a row of :data:`TASK_COLUMNS`."""
    return Task(
        task_id=row[0],
        spec_json=row[1],
        window=row[2],
        time_precision=row[3],
        min_batch=row[4],
        token_hash=row[5],
        not_before=row[6],
        not_after=row[7],
        cors_origins=tuple(json.loads(row[8])),
        shuffle_delta=row[9],
        created=row[10],
        name=row[11] or "",
        description=row[12] or "",
        retain=None if row[13] is None else int(row[13]),
        candidates=() if row[14] is None else tuple(json.loads(row[14])),
    )


class Store(abc.ABC):
    """Tasks and their reports, durably."""

    #: The URL the store was opened from, without any password.
    url: str
    #: True when several servers may write the store at once (commits are versioned); False: one writer.
    shared: bool = False

    # -- tasks -------------------------------------------------------------
    @abc.abstractmethod
    def create_task(self, task: Task) -> None:
        """Add ``task``; a task with the same id is a :class:`TaskExistsError` (a :class:`ParameterError`)."""

    @abc.abstractmethod
    def task(self, task_id: str) -> Task | None:
        """The task ``task_id``, or None."""

    @abc.abstractmethod
    def tasks(self) -> list[Task]:
        """Every task, oldest first."""

    @abc.abstractmethod
    def tasks_with_token_hash(self, token_hash: str) -> list[Task]:
        """The tasks whose collector token hashes to ``token_hash``, oldest first (one indexed read)."""

    @abc.abstractmethod
    def delete_task(self, task_id: str) -> bool:
        """Delete a task and all its reports; False when there was none."""

    @abc.abstractmethod
    def update_task(self, task: Task) -> bool:
        """Write ``task``'s :data:`MUTABLE_TASK_COLUMNS` (name, description, retention, candidates) over the stored task's.

        The other fields (the spec, the windows, the token, ...) are never
        changed: the caller refuses a change of them. False when there is no
        task ``task.task_id``.
        """

    # -- retention -----------------------------------------------------------
    @abc.abstractmethod
    def window_aggregates(self, task_id: str) -> list[WindowAggregate]:
        """The kept aggregates of the task's pruned windows, in time order."""

    @abc.abstractmethod
    def pruned_windows(self, task_id: str) -> dict[int, int]:
        """The start and report count of each of the task's pruned windows (their aggregates, without the states)."""

    @abc.abstractmethod
    def expired_windows(self, task_id: str, before: int) -> dict[int, int]:
        """Raw reports per window start ``< before`` that still has raw reports (aggregated windows included)."""

    @abc.abstractmethod
    def keep_window(self, task_id: str, aggregate: WindowAggregate) -> bool:
        """Keep ``aggregate`` for its window, in one transaction, when it holds every report of the window.

        True when the window's aggregate is kept now or was kept already;
        False (nothing written) when the window's stored reports are not
        ``aggregate.n`` any more (reports were committed since they were
        read): read them again. From its commit on, the window's raw reports
        are skipped by every read and uploads into it are refused
        (:class:`WindowPruned`).
        """

    @abc.abstractmethod
    def discard_windows(self, task_id: str, before: int, batch: int = 10_000) -> int:
        """Delete the raw reports of the windows starting before ``before`` whose aggregates are kept; how many.

        A window without a kept aggregate is left alone. SQLite deletes
        ``batch`` reports per transaction (ingestion waits one batch at
        most); PostgreSQL drops a partition whose windows are all kept, and
        deletes the other windows' rows. Idempotent; a process killed
        meanwhile leaves reports that the next call deletes, and the kept
        aggregate in the meantime.
        """

    @abc.abstractmethod
    def read_windows(
        self, task_id: str, chunk: int = 50_000
    ) -> Iterator[tuple[int, list[WindowAggregate], list[tuple[int, str]]]]:
        """The task's kept aggregates and the ``(t, JSON text)`` of its other reports, read in one snapshot.

        Yields ``(version, aggregates, chunk)``: the aggregates with the
        first item, then chunks of raw reports in ``t`` order (none of a
        window with an aggregate), every item carrying the task's commit
        version (as :meth:`reports_since` with ``version`` None). What a
        server reads to rebuild a task's windows.
        """

    # -- reports -----------------------------------------------------------
    @abc.abstractmethod
    def insert_reports(self, groups: Sequence[tuple[str, Sequence[StoredReport]]]) -> list[list[Insert]]:
        """Store the reports of several uploads in one transaction, committed before returning.

        ``groups`` holds ``(task_id, reports)`` pairs (one per upload). The
        result says, for each report in the same order, :attr:`Insert.STORED`
        when it was stored now, :attr:`Insert.REPLAYED` when the same report
        (same ``t`` and JSON) with its id was already stored for that task
        (also within this call), and :attr:`Insert.CONFLICT` when a
        different report with its id is stored (the new one is dropped).
        Either every report is committed or, on an exception, none is.

        Raises
        ------
        UnknownTaskError
            A group names a task the store does not hold (nothing is stored).
        StoreUnavailable
            The store could not commit (nothing is stored; retry later).
        """

    @abc.abstractmethod
    def reports(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[StoredReport]]:
        """The task's reports with ``start <= t < end`` (either bound optional), in chunks."""

    def report_texts(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[str]]:
        """Only the JSON texts of :meth:`reports`, in chunks (what estimation and export read)."""
        for reports in self.reports(task_id, start, end, chunk):
            yield [report.report for report in reports]

    @abc.abstractmethod
    def count_by_window(self, task_id: str, window: int) -> dict[int, int]:
        """Number of reports per window start (``t - t % window``)."""

    def reports_by_time(self, task_id: str, chunk: int = 50_000) -> Iterator[list[tuple[int, str]]]:
        """Every ``(t, JSON text)`` of the task in ``t`` order, in chunks: one query (what a restart reads)."""
        for reports in self.reports(task_id, chunk=chunk):
            yield [(report.t, report.report) for report in reports]

    def insert_reports_versioned(
        self, groups: Sequence[tuple[str, Sequence[StoredReport]]]
    ) -> tuple[list[list[Insert]], dict[str, int]]:
        """:meth:`insert_reports`, and the version each task of ``groups`` that stored reports reached.

        A task's version rises by exactly one per commit that stored reports
        of it, so a result of ``v`` means the commit before this one was
        ``v - 1``. A store with one writer (``shared`` False) numbers
        nothing: the mapping is empty.
        """
        return self.insert_reports(groups), {}

    def forget_commits(self, older_than: float = 600.0) -> int:
        """Delete the commit log's entries older than ``older_than`` seconds (none in a store with one writer)."""
        return 0

    def versions(self) -> dict[str, int]:
        """The committed version of every task (empty for a store with one writer: nothing to catch up on)."""
        return {}

    def reports_since(
        self, task_id: str, version: int | None, chunk: int = 50_000
    ) -> Iterator[tuple[int, list[tuple[int, str]]]]:
        """The ``(t, JSON text)`` of the reports committed after ``version``, read in one snapshot.

        Yields ``(snapshot version, chunk)`` pairs, at least one (with an
        empty chunk when nothing is new); every pair carries the same
        snapshot version, the task's version the chunks bring a reader to.
        ``version`` None reads every report in ``t`` order (what a restart
        reads). A store with one writer reads everything as version 0.

        Raises
        ------
        CommitLogTrimmed
            The log of commits no longer reaches back to ``version`` (its
            entries are kept for minutes): read everything instead.
        """
        if version is not None:
            raise StoreOpenError(f"store {self.url} does not version its commits")
        empty = True
        for reports in self.reports_by_time(task_id, chunk):
            empty = False
            yield 0, reports
        if empty:
            yield 0, []

    @abc.abstractmethod
    def check_writable(self) -> None:
        """Raise :class:`StoreUnavailable` (one line, naming why) when the store could not commit a write now.

        Cheap enough for a health check: it waits about a second at most
        for a lock and writes nothing.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(url: str | Path | None = None, *, read_only: bool = False, exclusive: bool = False) -> Store:
    """The store at ``url``.

    ``None`` is :data:`DEFAULT_STORE`; ``postgresql://...`` (or
    ``postgres://``) is PostgreSQL through psycopg 3; a plain file path,
    ``sqlite:///relative/path`` or ``sqlite:////absolute/path`` is SQLite
    (created on first use, mode 0600, in WAL mode).

    With ``read_only`` the store never writes (and is never created or
    migrated). With ``exclusive`` a SQLite store is refused while another
    exclusive opener (a running ``ldp serve``) holds it; the lock is
    released when the store is closed or its process dies, ``kill -9``
    included. PostgreSQL stores ignore ``exclusive``: several servers may
    share one (docs/collector.md#deployment).
    """
    text = str(url) if url is not None else DEFAULT_STORE
    if text.startswith(("postgresql://", "postgres://")):
        from ldp.collector.store_postgres import PostgresStore

        return PostgresStore(text, read_only=read_only)
    if "://" in text and not text.startswith("sqlite:///"):
        scheme = text.split("://", 1)[0]
        raise StoreOpenError(
            f"store URL scheme {scheme!r} is not supported: give a SQLite file path "
            "(or sqlite:///path) or a postgresql:// URL"
        )
    from ldp.collector.store_sqlite import SqliteStore

    return SqliteStore(text.removeprefix("sqlite:///"), read_only=read_only, exclusive=exclusive)
