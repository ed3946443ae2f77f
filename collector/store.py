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
"""

from __future__ import annotations

import abc
import dataclasses
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self

from ldp.collector.tasks import Task
from ldp.errors import ParameterError

__all__ = [
    "DEFAULT_STORE",
    "TASK_COLUMNS",
    "TASK_COLUMN_COUNT",
    "Store",
    "StoredReport",
    "open_store",
    "task_of",
    "task_row",
]

#: The store ``ldp serve`` and ``ldp task`` use without ``--store``: SQLite in the working directory.
DEFAULT_STORE = "ldp-collector.db"


@dataclasses.dataclass(frozen=True)
class StoredReport:
    """One stored report: its id (16 bytes), its truncated time and its JSON text."""

    report_id: bytes
    t: int
    report: str


#: The tasks table's columns, in the order of :func:`task_row` and :func:`task_of` (both stores use them).
TASK_COLUMNS = (
    "task_id, spec_json, window_seconds, time_precision, min_batch, token_hash, not_before, not_after, cors_origins, "
    "shuffle_delta"
)
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
    )


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
    )


class Store(abc.ABC):
    """Tasks and their reports, durably."""

    #: The URL the store was opened from, without any password.
    url: str

    # -- tasks -------------------------------------------------------------
    @abc.abstractmethod
    def create_task(self, task: Task) -> None:
        """Add ``task``; a task with the same id is a :class:`ParameterError`."""

    @abc.abstractmethod
    def task(self, task_id: str) -> Task | None:
        """The task ``task_id``, or None."""

    @abc.abstractmethod
    def tasks(self) -> list[Task]:
        """Every task, oldest first."""

    @abc.abstractmethod
    def delete_task(self, task_id: str) -> bool:
        """Delete a task and all its reports; False when there was none."""

    # -- reports -----------------------------------------------------------
    @abc.abstractmethod
    def insert_reports(self, groups: Sequence[tuple[str, Sequence[StoredReport]]]) -> list[list[bool]]:
        """Store the reports of several uploads in one transaction, committed before returning.

        ``groups`` holds ``(task_id, reports)`` pairs (one per upload). The
        result says, for each report in the same order, True when it was
        stored now and False when a report with its id was already stored
        for that task (a replay, also within this call). Either every
        report is committed or, on an exception, none is.
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

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(url: str | Path | None = None) -> Store:
    """The store at ``url``.

    ``None`` is :data:`DEFAULT_STORE`; ``postgresql://...`` (or
    ``postgres://``) is PostgreSQL through psycopg 3; a plain file path,
    ``sqlite:///relative/path`` or ``sqlite:////absolute/path`` is SQLite
    (created on first use, in WAL mode).
    """
    text = str(url) if url is not None else DEFAULT_STORE
    if text.startswith(("postgresql://", "postgres://")):
        from ldp.collector.store_postgres import PostgresStore

        return PostgresStore(text)
    if "://" in text and not text.startswith("sqlite:///"):
        scheme = text.split("://", 1)[0]
        raise ParameterError(
            f"store URL scheme {scheme!r} is not supported: give a SQLite file path "
            "(or sqlite:///path) or a postgresql:// URL"
        )
    from ldp.collector.store_sqlite import SqliteStore

    return SqliteStore(text.removeprefix("sqlite:///"))
