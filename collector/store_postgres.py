"""The server store: PostgreSQL through psycopg 3 (docs/collector.md#store).

The tables mirror the SQLite store's: ``tasks`` (an integer ``seq`` key and a
unique ``task_id``), ``reports`` keyed by ``(task, report_id)`` with an index
on ``(task, t)`` and ``ON DELETE CASCADE``, and ``meta`` holding the schema
version. They are created on first open, under an advisory lock so that two
processes opening a new database at once do not race.

Writes go through one connection under a lock; :meth:`PostgresStore.insert_reports`
stores a whole group of uploads with one ``INSERT ... SELECT FROM unnest(...)
ON CONFLICT DO NOTHING RETURNING`` in one transaction, committed (with
``synchronous_commit`` at least ``local``) before it returns. Rows are
inserted in ``(task, report_id)`` order, so concurrent writers take their row
locks in the same order and cannot deadlock. Short reads share a second
connection under its own lock; :meth:`PostgresStore.reports` streams through
a server-side cursor on a connection of its own, so a long export never
blocks ingestion or other reads. A connection the server dropped is replaced
on the next call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

from ldp.collector.store import TASK_COLUMN_COUNT, TASK_COLUMNS, Store, StoredReport, task_of, task_row
from ldp.collector.tasks import Task
from ldp.errors import ParameterError

__all__ = ["PostgresStore", "redact_url"]

SCHEMA_VERSION = 2
_CONNECT_TIMEOUT_S = 10
#: pg_advisory_xact_lock key serializing schema creation (a bigint: "ldp.sch" in ASCII).
_SCHEMA_LOCK = int.from_bytes(b"ldp.sch", "big")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS tasks (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id TEXT NOT NULL UNIQUE,
        spec_json TEXT NOT NULL,
        window_seconds BIGINT NOT NULL,
        time_precision BIGINT NOT NULL,
        min_batch BIGINT NOT NULL,
        token_hash TEXT NOT NULL,
        not_before BIGINT,
        not_after BIGINT,
        cors_origins TEXT NOT NULL,
        shuffle_delta DOUBLE PRECISION
    )""",
    """CREATE TABLE IF NOT EXISTS reports (
        task BIGINT NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        report_id BYTEA NOT NULL,
        t BIGINT NOT NULL,
        report TEXT NOT NULL,
        PRIMARY KEY (task, report_id)
    )""",
    "CREATE INDEX IF NOT EXISTS reports_by_time ON reports (task, t)",
)


#: The arrays travel in binary (%b): text-format arrays cost ten times more to build, escaping every element.
_INSERT = (
    "INSERT INTO reports (task, report_id, t, report) "
    "SELECT * FROM unnest(%b::bigint[], %b::bytea[], %b::bigint[], %b::text[]) "
    "ON CONFLICT DO NOTHING RETURNING task, report_id"
)


def redact_url(url: str) -> str:
    """``url`` without its password (in the user part or as a ``password`` query parameter)."""
    parts = urlsplit(url)
    userinfo, at, hostinfo = parts.netloc.rpartition("@")
    netloc = f"{userinfo.split(':', 1)[0]}@{hostinfo}" if at else hostinfo
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _has_schema(connection: psycopg.Connection) -> bool:
    """True when every table and index of the schema exists (on the connection's search path)."""
    row = connection.execute(
        "SELECT to_regclass('meta') IS NOT NULL AND to_regclass('tasks') IS NOT NULL "
        "AND to_regclass('reports') IS NOT NULL AND to_regclass('reports_by_time') IS NOT NULL"
    ).fetchone()
    return bool(row and row[0])


def _first_occurrences(
    groups: Sequence[tuple[str, Sequence[StoredReport]]], seqs: dict[str, int]
) -> dict[tuple[int, bytes], StoredReport]:
    """Each distinct ``(task seq, report id)`` of the call with the report that first names it."""
    first: dict[tuple[int, bytes], StoredReport] = {}
    for task_id, reports in groups:
        seq = seqs[task_id]
        for report in reports:
            first.setdefault((seq, bytes(report.report_id)), report)
    return first


def _flags(
    groups: Sequence[tuple[str, Sequence[StoredReport]]],
    seqs: dict[str, int],
    inserted: set[tuple[int, bytes]],
) -> list[list[bool]]:
    """Per report, in order: True for the first occurrence of a key this call inserted."""
    pending = set(inserted)
    results: list[list[bool]] = []
    for task_id, reports in groups:
        seq = seqs[task_id]
        stored = []
        for report in reports:
            key = (seq, bytes(report.report_id))
            stored.append(key in pending)
            pending.discard(key)
        results.append(stored)
    return results


class _Shared:
    """One connection used by one thread at a time, replaced when the server dropped it."""

    def __init__(self, connect: Any) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._connection: psycopg.Connection | None = None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[psycopg.Connection]:
        with self._lock:
            if self._connection is None or self._connection.closed or self._connection.broken:
                self._connection = self._connect()
            yield self._connection

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


class PostgresStore(Store):
    """Tasks and reports in a PostgreSQL database.

    Parameters
    ----------
    url : str
        ``postgresql://user[:password]@host[:port]/database[?options]`` (any
        libpq connection URL); the tables are created when missing.

    Raises
    ------
    ParameterError
        The server cannot be reached or refuses the connection, or the
        database holds another schema version.
    """

    def __init__(self, url: str) -> None:
        self._conninfo = url
        self.url = redact_url(url)
        try:
            params = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise ParameterError(f"store URL {self.url} is not a PostgreSQL connection URL: {exc}") from None
        self._password = str(params.get("password") or "")
        self._connect_timeout = str(params.get("connect_timeout") or _CONNECT_TIMEOUT_S)
        self._writer = _Shared(self._connect_writer)
        self._reader = _Shared(self._connect)
        try:
            self._create_schema()
        except BaseException:
            self.close()
            raise

    # -- connections -------------------------------------------------------
    def _connect(self, autocommit: bool = True) -> psycopg.Connection:
        """A new connection; a :class:`ParameterError` naming the URL (no password) when it fails."""
        try:
            return psycopg.connect(
                self._conninfo, autocommit=autocommit, connect_timeout=self._connect_timeout
            )
        except psycopg.Error as exc:
            raise ParameterError(
                f"cannot open the PostgreSQL store {self.url}: {self._redact(exc)}"
            ) from None

    def _redact(self, exc: Exception) -> str:
        """The message of ``exc`` with the URL's password (if any) masked."""
        reason = str(exc).strip()
        return reason.replace(self._password, "***") if self._password else reason

    def _connect_writer(self) -> psycopg.Connection:
        """The writing connection: commits wait for the server's own disk (never ``synchronous_commit=off``)."""
        connection = self._connect()
        if connection.execute("SHOW synchronous_commit").fetchone() == ("off",):
            connection.execute("SET synchronous_commit = local")
        return connection

    def _create_schema(self) -> None:
        with self._writer() as connection, connection.transaction():
            if not _has_schema(
                connection
            ):  # DDL only when needed: a user without CREATE can use a made store
                connection.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (_SCHEMA_LOCK,))
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', %s) ON CONFLICT DO NOTHING",
                    (str(SCHEMA_VERSION),),
                )
            row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and row[0] == "1":  # 1 → 2: the tasks' shuffle_delta column, once
                connection.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (_SCHEMA_LOCK,))
                connection.execute(
                    "ALTER TABLE tasks ADD COLUMN IF NOT EXISTS shuffle_delta DOUBLE PRECISION"
                )
                connection.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
                row = ("2",)
        if row is None or row[0] != str(SCHEMA_VERSION):
            version = None if row is None else row[0]
            raise ParameterError(
                f"store {self.url} has schema version {version}; this ldp reads version {SCHEMA_VERSION}"
            )

    # -- tasks -------------------------------------------------------------
    def create_task(self, task: Task) -> None:
        try:
            with self._writer() as connection, connection.transaction():
                connection.execute(
                    f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({', '.join(['%s'] * TASK_COLUMN_COUNT)})",
                    task_row(task),
                )
        except psycopg.errors.UniqueViolation:
            raise ParameterError(f"task {task.task_id} already exists in {self.url}") from None

    def task(self, task_id: str) -> Task | None:
        with self._reader() as connection:
            row = connection.execute(
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = %s", (task_id,)
            ).fetchone()
        return None if row is None else task_of(row)

    def tasks(self) -> list[Task]:
        with self._reader() as connection:
            rows = connection.execute(f"SELECT {TASK_COLUMNS} FROM tasks ORDER BY seq").fetchall()
        return [task_of(row) for row in rows]

    def delete_task(self, task_id: str) -> bool:
        with self._writer() as connection, connection.transaction():
            cursor = connection.execute("DELETE FROM tasks WHERE task_id = %s", (task_id,))
            return cursor.rowcount > 0

    # -- reports -----------------------------------------------------------
    def _task_seqs(self, connection: psycopg.Connection, task_ids: list[str]) -> dict[str, int]:
        """The ``seq`` of every named task; an unknown task is a :class:`ParameterError`."""
        rows = connection.execute(
            "SELECT task_id, seq FROM tasks WHERE task_id = ANY(%s::text[])", (task_ids,)
        ).fetchall()
        seqs = {str(task_id): int(seq) for task_id, seq in rows}
        for task_id in task_ids:
            if task_id not in seqs:
                raise ParameterError(f"no task {task_id} in {self.url}")
        return seqs

    def insert_reports(self, groups: Sequence[tuple[str, Sequence[StoredReport]]]) -> list[list[bool]]:
        task_ids = sorted({task_id for task_id, _ in groups})
        if not task_ids:
            return []
        with self._writer() as connection, connection.transaction():  # committed on leaving, else rolled back
            seqs = self._task_seqs(connection, task_ids)
            first = _first_occurrences(groups, seqs)
            keys = sorted(first)  # (task, id) order: concurrent writers lock rows in the same order
            inserted = self._insert_rows(connection, keys, first) if keys else set()
        return _flags(groups, seqs, inserted)

    def _insert_rows(
        self,
        connection: psycopg.Connection,
        keys: list[tuple[int, bytes]],
        first: dict[tuple[int, bytes], StoredReport],
    ) -> set[tuple[int, bytes]]:
        """Insert the reports of ``keys`` in that order; the keys that were not stored yet."""
        try:
            cursor = connection.execute(
                _INSERT,
                (
                    [seq for seq, _ in keys],
                    [report_id for _, report_id in keys],
                    [first[key].t for key in keys],
                    [first[key].report for key in keys],
                ),
            )
        except psycopg.errors.ForeignKeyViolation:  # another process deleted the task since _task_seqs
            raise ParameterError(f"a task of this upload was deleted from {self.url}") from None
        return {(int(seq), bytes(report_id)) for seq, report_id in cursor.fetchall()}

    def reports(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[StoredReport]]:
        low = -(1 << 62) if start is None else start
        high = 1 << 62 if end is None else end
        with self._connect(autocommit=False) as connection, connection.cursor(name="ldp_reports") as cursor:
            cursor.execute(
                "SELECT r.report_id, r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq "
                "WHERE k.task_id = %s AND r.t >= %s AND r.t < %s ORDER BY r.t",
                (task_id, low, high),
            )
            while rows := cursor.fetchmany(chunk):
                yield [StoredReport(bytes(row[0]), row[1], row[2]) for row in rows]

    def count_by_window(self, task_id: str, window: int) -> dict[int, int]:
        with self._reader() as connection:
            rows = connection.execute(
                "SELECT r.t - (r.t %% %s::bigint) AS start, count(*) FROM reports r "
                "JOIN tasks k ON r.task = k.seq WHERE k.task_id = %s GROUP BY start ORDER BY start",
                (window, task_id),
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def close(self) -> None:
        self._writer.close()
        self._reader.close()
