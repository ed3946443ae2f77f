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

A store opened ``read_only`` runs every session read-only (``SET SESSION
CHARACTERISTICS AS TRANSACTION READ ONLY``) and creates or migrates nothing.
Opening checks the role's table rights, so a missing grant is one line
naming the ``GRANT`` to run. Once open, a failure of the server (stopped,
unreachable, out of disk, a right revoked) is a :class:`StoreUnavailable`
with the server's message, never a psycopg traceback.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import sql

from ldp.collector.store import (
    TASK_COLUMN_COUNT,
    TASK_COLUMNS,
    Insert,
    Store,
    StoredReport,
    StoreOpenError,
    StoreUnavailable,
    TaskExistsError,
    UnknownTaskError,
    same_report,
    task_columns,
    task_of,
    task_row,
)
from ldp.collector.tasks import Task
from ldp.redact import redact_url

__all__ = ["PostgresStore"]

SCHEMA_VERSION = 4
#: Table rights a writing store needs (schema creation and migration need more: the tables' owner).
WRITER_RIGHTS: dict[str, tuple[str, ...]] = {
    "meta": ("SELECT",),
    "tasks": ("SELECT", "INSERT", "DELETE"),
    "reports": ("SELECT", "INSERT", "DELETE"),
}
#: Table rights a read-only store needs.
READER_RIGHTS: dict[str, tuple[str, ...]] = {
    "meta": ("SELECT",),
    "tasks": ("SELECT",),
    "reports": ("SELECT",),
}
#: How long :meth:`PostgresStore.check_writable` waits for the reports table's write lock.
_PROBE_LOCK_TIMEOUT = "1s"
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
        shuffle_delta DOUBLE PRECISION,
        created_at BIGINT,
        name TEXT,
        description TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS reports (
        task BIGINT NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        report_id BYTEA NOT NULL,
        t BIGINT NOT NULL,
        report TEXT NOT NULL,
        PRIMARY KEY (task, report_id)
    )""",
    "CREATE INDEX IF NOT EXISTS reports_by_time ON reports (task, t)",
    # new stores only (a store made before it has no index: the lookup scans the small tasks table)
    "CREATE INDEX IF NOT EXISTS tasks_by_token ON tasks (token_hash)",
)


#: The arrays travel in binary (%b): text-format arrays cost ten times more to build, escaping every element.
_INSERT = (
    "INSERT INTO reports (task, report_id, t, report) "
    "SELECT * FROM unnest(%b::bigint[], %b::bytea[], %b::bigint[], %b::text[]) "
    "ON CONFLICT DO NOTHING RETURNING task, report_id"
)


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


def _outcomes(
    groups: Sequence[tuple[str, Sequence[StoredReport]]],
    seqs: dict[str, int],
    inserted: set[tuple[int, bytes]],
    stored: dict[tuple[int, bytes], tuple[int, str]],
) -> list[list[Insert]]:
    """Per report, in order: stored now (the first occurrence of a key this call inserted), replayed or in conflict.

    ``stored`` holds the stored ``(t, text)`` of every other key.
    """
    pending = set(inserted)
    results: list[list[Insert]] = []
    for task_id, reports in groups:
        seq = seqs[task_id]
        outcomes = []
        for report in reports:
            key = (seq, bytes(report.report_id))
            if key in pending:
                outcomes.append(Insert.STORED)
                pending.discard(key)
                continue
            same = same_report(*stored[key], report)
            outcomes.append(Insert.REPLAYED if same else Insert.CONFLICT)
        results.append(outcomes)
    return results


def _missing_rights(connection: psycopg.Connection, rights: dict[str, tuple[str, ...]]) -> list[str]:
    """``"INSERT on reports"`` for every right of ``rights`` the session's role lacks."""
    pairs = [(table, right) for table, names in rights.items() for right in names]
    row = connection.execute(
        "SELECT " + ", ".join("has_table_privilege(%s, %s)" for _ in pairs),
        [item for pair in pairs for item in pair],
    ).fetchone()
    return [f"{right} on {table}" for (table, right), granted in zip(pairs, row or ()) if not granted]


def _grant(rights: dict[str, tuple[str, ...]], role: str) -> str:
    """The GRANT statements that give ``role`` ``rights``."""
    by_rights: dict[tuple[str, ...], list[str]] = {}
    for table, names in rights.items():
        by_rights.setdefault(names, []).append(table)
    return "; ".join(
        f"GRANT {', '.join(names)} ON {', '.join(tables)} TO {role}" for names, tables in by_rights.items()
    )


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
    read_only : bool
        Every session is read-only; nothing is created or migrated.

    Raises
    ------
    StoreOpenError
        The server cannot be reached or refuses the connection, the role
        lacks a right the store needs (the message names the GRANT), or the
        database holds another schema version.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self._conninfo = url
        self.url = redact_url(url)
        self.read_only = read_only
        try:
            params = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise StoreOpenError(f"store URL {self.url} is not a PostgreSQL connection URL: {exc}") from None
        self._password = str(params.get("password") or "")
        self._connect_timeout = str(params.get("connect_timeout") or _CONNECT_TIMEOUT_S)
        self._writer = _Shared(self._connect_writer)
        self._reader = _Shared(self._connect)
        self._task_columns = TASK_COLUMNS
        try:
            version = self._read_schema() if read_only else self._create_schema()
            self._task_columns = task_columns(version)
            self._check_rights()
        except StoreUnavailable as exc:  # at open, an unreachable server is a bad --store
            self.close()
            raise StoreOpenError(str(exc)) from None
        except psycopg.Error as exc:
            self.close()
            raise StoreOpenError(self._explain(exc)) from None
        except BaseException:
            self.close()
            raise

    # -- connections -------------------------------------------------------
    def _connect(self, autocommit: bool = True) -> psycopg.Connection:
        """A new connection (read-only sessions for a read-only store); :class:`StoreUnavailable` when it fails."""
        try:
            connection = psycopg.connect(
                self._conninfo, autocommit=autocommit, connect_timeout=self._connect_timeout
            )
            if self.read_only:
                connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                if not autocommit:
                    connection.commit()
            return connection
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot open the PostgreSQL store {self.url}: {self._redact(exc)}"
            ) from None

    def _role(self) -> str:
        with self._reader() as connection:
            row = connection.execute("SELECT current_user").fetchone()
        return str(row[0]) if row else "the store's role"

    def _explain(self, exc: psycopg.Error) -> str:
        """One line for a server error: the server's message, and for a missing right the GRANT it needs."""
        reason = self._redact(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            rights = READER_RIGHTS if self.read_only else WRITER_RIGHTS
            try:
                role = self._role()
            except (psycopg.Error, StoreUnavailable):
                role = "ROLE"
            return (
                f"PostgreSQL store {self.url}: {reason}; the store's role needs, as the tables' owner "
                f"grants: {_grant(rights, role)}"
            )
        return f"PostgreSQL store {self.url}: {reason}"

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Server errors as :class:`StoreUnavailable` (one line, no password)."""
        try:
            yield
        except psycopg.Error as exc:
            raise StoreUnavailable(self._explain(exc)) from None

    def _check_rights(self) -> None:
        """A :class:`~ldp.collector.store.StoreOpenError` naming the GRANT when the role lacks a table right the store needs."""
        rights = READER_RIGHTS if self.read_only else WRITER_RIGHTS
        with self._reader() as connection:
            missing = _missing_rights(connection, rights)
        if missing:
            role = self._role()
            raise StoreOpenError(
                f"PostgreSQL role {role} lacks {', '.join(missing)} in {self.url}; "
                f"as the tables' owner run: {_grant(rights, role)}"
            )

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

    def _create_schema(self) -> int:
        """Create the tables when missing and migrate an older schema; the schema version."""
        with self._writer() as connection, connection.transaction():
            if not _has_schema(
                connection
            ):  # DDL only when needed: a user without CREATE can use a made store
                connection.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (_SCHEMA_LOCK,))
                try:
                    for statement in _SCHEMA:
                        connection.execute(statement)
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise StoreOpenError(
                        f"PostgreSQL store {self.url} has no tables yet and its role cannot create them "
                        f"({self._redact(exc).splitlines()[0]}): open it once as a role that can "
                        "(e.g. ldp task create as the database owner), or GRANT CREATE ON SCHEMA to this role"
                    ) from None
                connection.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', %s) ON CONFLICT DO NOTHING",
                    (str(SCHEMA_VERSION),),
                )
            row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            steps = {
                "1": (("shuffle_delta DOUBLE PRECISION",), "2"),
                "2": (("created_at BIGINT",), "3"),
                "3": (("name TEXT", "description TEXT"), "4"),
            }
            if row is not None and row[0] in steps:  # added columns, once, under the schema lock
                connection.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (_SCHEMA_LOCK,))
                row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                try:
                    while row is not None and row[0] in steps:
                        columns, target = steps[row[0]]
                        for column in columns:
                            connection.execute(f"ALTER TABLE tasks ADD COLUMN IF NOT EXISTS {column}")
                        connection.execute(
                            "UPDATE meta SET value = %s WHERE key = 'schema_version'", (target,)
                        )
                        row = (target,)
                except psycopg.errors.InsufficientPrivilege:
                    raise StoreOpenError(
                        f"PostgreSQL store {self.url} has an older schema that only the tables' owner can "
                        f"migrate to version {SCHEMA_VERSION}: open it once as the owner (e.g. ldp task list "
                        "is not enough; ldp serve or ldp task create is)"
                    ) from None
        if row is None or row[0] != str(SCHEMA_VERSION):
            version = None if row is None else row[0]
            raise StoreOpenError(
                f"store {self.url} has schema version {version}; this ldp reads version {SCHEMA_VERSION}"
            )
        return SCHEMA_VERSION

    def _read_schema(self) -> int:
        """The schema version of a store opened read-only (1 to :data:`SCHEMA_VERSION`; nothing is changed)."""
        with self._reader() as connection:
            if not _has_schema(connection):
                raise StoreOpenError(f"PostgreSQL store {self.url} holds no ldp tables")
            row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = None if row is None else row[0]
        if version is None or not str(version).isdigit() or not 1 <= int(version) <= SCHEMA_VERSION:
            raise StoreOpenError(
                f"store {self.url} has schema version {version}; this ldp reads version {SCHEMA_VERSION}"
            )
        return int(version)

    # -- tasks -------------------------------------------------------------
    def _check_writer(self) -> None:
        if self.read_only:
            raise StoreOpenError(f"store {self.url} was opened read-only")

    def create_task(self, task: Task) -> None:
        self._check_writer()
        with self._errors(), self._writer() as connection:
            try:
                with connection.transaction():
                    connection.execute(
                        f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({', '.join(['%s'] * TASK_COLUMN_COUNT)})",
                        task_row(task),
                    )
            except psycopg.errors.UniqueViolation:
                raise TaskExistsError(f"task {task.task_id} already exists in {self.url}") from None

    def task(self, task_id: str) -> Task | None:
        with self._errors(), self._reader() as connection:
            row = connection.execute(
                f"SELECT {self._task_columns} FROM tasks WHERE task_id = %s", (task_id,)
            ).fetchone()
        return None if row is None else task_of(row)

    def tasks(self) -> list[Task]:
        with self._errors(), self._reader() as connection:
            rows = connection.execute(f"SELECT {self._task_columns} FROM tasks ORDER BY seq").fetchall()
        return [task_of(row) for row in rows]

    def tasks_with_token_hash(self, token_hash: str) -> list[Task]:
        with self._errors(), self._reader() as connection:
            rows = connection.execute(
                f"SELECT {self._task_columns} FROM tasks WHERE token_hash = %s ORDER BY seq", (token_hash,)
            ).fetchall()
        return [task_of(row) for row in rows]

    def delete_task(self, task_id: str) -> bool:
        self._check_writer()
        with self._errors(), self._writer() as connection, connection.transaction():
            cursor = connection.execute("DELETE FROM tasks WHERE task_id = %s", (task_id,))
            return cursor.rowcount > 0

    # -- reports -----------------------------------------------------------
    def _task_seqs(self, connection: psycopg.Connection, task_ids: list[str]) -> dict[str, int]:
        """The ``seq`` of every named task; an unknown task is an :class:`UnknownTaskError`."""
        rows = connection.execute(
            "SELECT task_id, seq FROM tasks WHERE task_id = ANY(%s::text[])", (task_ids,)
        ).fetchall()
        seqs = {str(task_id): int(seq) for task_id, seq in rows}
        for task_id in task_ids:
            if task_id not in seqs:
                raise UnknownTaskError(f"no task {task_id} in {self.url}")
        return seqs

    def insert_reports(self, groups: Sequence[tuple[str, Sequence[StoredReport]]]) -> list[list[Insert]]:
        self._check_writer()
        task_ids = sorted({task_id for task_id, _ in groups})
        if not task_ids:
            return []
        # committed on leaving, else rolled back
        with self._errors(), self._writer() as connection, connection.transaction():
            seqs = self._task_seqs(connection, task_ids)
            first = _first_occurrences(groups, seqs)
            keys = sorted(first)  # (task, id) order: concurrent writers lock rows in the same order
            inserted = self._insert_rows(connection, keys, first) if keys else set()
            repeated = {key for key in first if key not in inserted} | _repeated_keys(groups, seqs)
            stored = self._stored(connection, sorted(repeated)) if repeated else {}
        return _outcomes(groups, seqs, inserted, stored)

    def _stored(
        self, connection: psycopg.Connection, keys: list[tuple[int, bytes]]
    ) -> dict[tuple[int, bytes], tuple[int, str]]:
        """The stored ``(t, text)`` of each key (all stored: just inserted or found already there)."""
        rows = connection.execute(
            "SELECT r.task, r.report_id, r.t, r.report FROM reports r "
            "JOIN unnest(%b::bigint[], %b::bytea[]) AS k(task, report_id) "
            "ON r.task = k.task AND r.report_id = k.report_id",
            ([seq for seq, _ in keys], [report_id for _, report_id in keys]),
        ).fetchall()
        return {(int(seq), bytes(report_id)): (int(t), str(text)) for seq, report_id, t, text in rows}

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
            raise UnknownTaskError(f"a task of this upload was deleted from {self.url}") from None
        return {(int(seq), bytes(report_id)) for seq, report_id in cursor.fetchall()}

    def reports(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[StoredReport]]:
        low = -(1 << 62) if start is None else start
        high = 1 << 62 if end is None else end
        query = (
            "SELECT r.report_id, r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq "
            "WHERE k.task_id = %s AND r.t >= %s AND r.t < %s ORDER BY r.t"
        )
        for rows in self._stream(query, (task_id, low, high), chunk):
            yield [StoredReport(bytes(row[0]), row[1], row[2]) for row in rows]

    def reports_by_time(self, task_id: str, chunk: int = 50_000) -> Iterator[list[tuple[int, str]]]:
        query = (
            "SELECT r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq "
            "WHERE k.task_id = %s ORDER BY r.t"
        )
        for rows in self._stream(query, (task_id,), chunk):
            yield [(int(t), str(text)) for t, text in rows]

    def _stream(self, query: str, params: tuple[Any, ...], chunk: int) -> Iterator[list[Any]]:
        """The rows of ``query`` in chunks, through a server-side cursor on a connection of its own."""
        with contextlib.ExitStack() as stack:
            with self._errors():
                connection = stack.enter_context(self._connect(autocommit=False))
                cursor = stack.enter_context(connection.cursor(name="ldp_reports"))
                cursor.execute(query, params)
            while True:
                with self._errors():
                    rows = cursor.fetchmany(chunk)
                if not rows:
                    return
                yield rows

    def count_by_window(self, task_id: str, window: int) -> dict[int, int]:
        with self._errors(), self._reader() as connection:
            rows = connection.execute(
                "SELECT r.t - (r.t %% %s::bigint) AS start, count(*) FROM reports r "
                "JOIN tasks k ON r.task = k.seq WHERE k.task_id = %s GROUP BY start ORDER BY start",
                (window, task_id),
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def check_writable(self) -> None:
        """Unavailable when the server is unreachable, in recovery or read-only, or the reports table is locked.

        The probe takes the lock an INSERT takes on ``reports`` (ROW
        EXCLUSIVE, waiting :data:`_PROBE_LOCK_TIMEOUT` at most) in a
        transaction it rolls back.
        """
        if self.read_only:
            raise StoreUnavailable(f"store {self.url} was opened read-only")
        with self._errors(), self._reader() as connection, connection.transaction() as transaction:
            connection.execute(
                sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(_PROBE_LOCK_TIMEOUT))
            )
            row = connection.execute(
                "SELECT pg_is_in_recovery(), current_setting('transaction_read_only')"
            ).fetchone()
            if row is not None and (row[0] or row[1] == "on"):
                raise StoreUnavailable(
                    f"PostgreSQL store {self.url} is read-only (a standby, or default_transaction_read_only)"
                )
            try:
                connection.execute("LOCK TABLE reports IN ROW EXCLUSIVE MODE")
            except psycopg.errors.LockNotAvailable:
                raise StoreUnavailable(
                    f"PostgreSQL store {self.url}: the reports table is locked by another session"
                ) from None
            raise psycopg.Rollback(transaction)  # the lock is released; nothing was written

    def close(self) -> None:
        self._writer.close()
        self._reader.close()


def _repeated_keys(
    groups: Sequence[tuple[str, Sequence[StoredReport]]], seqs: dict[str, int]
) -> set[tuple[int, bytes]]:
    """The keys named more than once in the call (their later copies are compared with the first)."""
    seen: set[tuple[int, bytes]] = set()
    repeated: set[tuple[int, bytes]] = set()
    for task_id, reports in groups:
        seq = seqs[task_id]
        for report in reports:
            key = (seq, bytes(report.report_id))
            (repeated if key in seen else seen).add(key)
    return repeated
