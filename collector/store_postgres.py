"""The server store: PostgreSQL through psycopg 3 (docs/collector.md#store).

The tables: ``tasks`` (an integer ``seq`` key and a unique ``task_id``),
``reports``, ``task_versions`` and ``commits`` (each task's commit versions,
docs/collector.md#many-instances) and ``meta`` holding the schema version.
They are created on first open, under an advisory lock so that two processes
opening a new database at once do not race; a store of an older schema is
migrated on the first writing open (version 4 → 5 moves the reports into the
partitioned table in one transaction).

``reports`` is partitioned by window (declarative ``PARTITION BY RANGE (task,
window_start)``, one partition per task and day of windows, :func:`partition_of`)
and keyed by ``(task, window_start, report_id)``: a commit's index pages are those of the current
window, so the insert rate does not fall as a task's older windows pile up,
and retention drops whole partitions. Partitions are made on first use by
the ``SECURITY DEFINER`` function ``ldp_window_partition`` (so a serving role
needs no ``CREATE`` right), each in a transaction of its own before the
insert.

Writes go through one connection under a lock; :meth:`PostgresStore.insert_reports_versioned`
stores a whole group of uploads with one ``INSERT ... SELECT FROM unnest(...)
ON CONFLICT DO NOTHING RETURNING`` in one transaction, raises the version of
each task it stored reports of as its last statement (the row lock on
``task_versions`` orders the versions of one task as their commits) and
commits (with ``synchronous_commit`` at least ``local``) before it returns.
Rows are inserted in key order, so concurrent writers take their row locks
in the same order and cannot deadlock. Short reads share a second
connection under its own lock; :meth:`PostgresStore.reports` streams through
a server-side cursor on a connection of its own, so a long export never
blocks ingestion or other reads. A connection the server dropped is replaced
on the next call.

A store opened ``read_only`` runs every session read-only (``SET SESSION
CHARACTERISTICS AS TRANSACTION READ ONLY``) and creates or migrates nothing.
Opening checks the role's rights, so a missing grant is one line naming the
``GRANT`` to run. Once open, a failure of the server (stopped, unreachable,
out of disk, a right revoked) is a :class:`StoreUnavailable` with the
server's message, never a psycopg traceback.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import sql

from ldp.collector.store import (
    MUTABLE_TASK_COLUMNS,
    TASK_COLUMN_COUNT,
    TASK_COLUMNS,
    CommitLogTrimmed,
    Insert,
    Store,
    StoredReport,
    StoreOpenError,
    StoreUnavailable,
    TaskExistsError,
    UnknownTaskError,
    WindowAggregate,
    WindowPruned,
    same_report,
    task_columns,
    task_of,
    task_row,
)
from ldp.collector.tasks import Task
from ldp.redact import redact_url

__all__ = ["PARTITION_SECONDS", "PostgresStore", "partition_of"]

SCHEMA_VERSION = 7
#: Table rights a writing store needs (schema creation and migration need more: the tables' owner).
WRITER_RIGHTS: dict[str, tuple[str, ...]] = {
    "meta": ("SELECT",),
    "tasks": ("SELECT", "INSERT", "DELETE"),
    "reports": ("SELECT", "INSERT", "DELETE"),
    "task_versions": ("SELECT", "INSERT", "UPDATE"),
    "commits": ("SELECT", "INSERT", "DELETE"),
    "window_aggregates": ("SELECT", "INSERT", "DELETE"),
}
#: Functions a writing store calls (owned by the tables' owner, SECURITY DEFINER, not executable by PUBLIC).
WRITER_FUNCTIONS = (
    "ldp_window_partition(bigint, bigint, bigint)",
    "ldp_drop_windows(bigint, bigint)",
    "ldp_drop_partition(bigint, bigint)",
)
#: Table rights a read-only store needs.
READER_RIGHTS: dict[str, tuple[str, ...]] = {
    "meta": ("SELECT",),
    "tasks": ("SELECT",),
    "reports": ("SELECT",),
    "window_aggregates": ("SELECT",),
}
#: How long :meth:`PostgresStore.check_writable` waits for the reports table's write lock.
_PROBE_LOCK_TIMEOUT = "1s"
_CONNECT_TIMEOUT_S = 10
#: pg_advisory_xact_lock key serializing schema creation (a bigint: "ldp.sch" in ASCII).
_SCHEMA_LOCK = int.from_bytes(b"ldp.sch", "big")

_TASKS = """CREATE TABLE IF NOT EXISTS tasks (
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
        description TEXT,
        retain_seconds BIGINT,
        candidates TEXT
    )"""

#: The objects of schema version 5 beside ``meta`` and ``tasks`` (what a version 4 store is migrated to).
_REPORTS_SCHEMA = (
    # one partition per (task, window); the key holds the window, so a commit's pages are the window's
    """CREATE TABLE IF NOT EXISTS reports (
        task BIGINT NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        window_start BIGINT NOT NULL,
        report_id BYTEA NOT NULL,
        t BIGINT NOT NULL,
        report TEXT NOT NULL,
        CONSTRAINT reports_key PRIMARY KEY (task, window_start, report_id)
    ) PARTITION BY RANGE (task, window_start)""",
    "CREATE INDEX IF NOT EXISTS reports_by_t ON reports (task, t)",
    """CREATE TABLE IF NOT EXISTS task_versions (
        task BIGINT PRIMARY KEY REFERENCES tasks(seq) ON DELETE CASCADE,
        version BIGINT NOT NULL
    )""",
    # the keys each commit stored: how other servers find what they have not counted. A log kept for
    # COMMIT_LOG_SECONDS only (it links the reports of one commit), never a column of the reports
    """CREATE TABLE IF NOT EXISTS commits (
        task BIGINT NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        version BIGINT NOT NULL,
        committed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        window_starts BIGINT[] NOT NULL,
        report_ids BYTEA[] NOT NULL,
        PRIMARY KEY (task, version)
    )""",
    "CREATE INDEX IF NOT EXISTS commits_by_age ON commits (committed_at)",
    """CREATE OR REPLACE FUNCTION ldp_window_partition(p_task BIGINT, p_start BIGINT, p_width BIGINT)
    RETURNS VOID LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DECLARE
        name TEXT := format('reports_%s_%s', p_task, replace(p_start::text, '-', 'm'));
    BEGIN
        IF to_regclass(quote_ident(name)) IS NULL THEN
            -- two servers reaching a new window at once: the second waits, then finds the partition
            -- (the check above ran on a snapshot of before the lock: a partition made meanwhile is found here)
            PERFORM pg_advisory_xact_lock(hashtextextended(name, 0));
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF reports FOR VALUES FROM (%s, %s) TO (%s, %s)',
                               name, p_task, p_start, p_task, p_start + p_width);
            EXCEPTION WHEN duplicate_table THEN
                NULL;
            END;
        END IF;
    END $$""",
    """CREATE OR REPLACE FUNCTION ldp_drop_windows(p_task BIGINT, p_before BIGINT)
    RETURNS BIGINT LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DECLARE
        part RECORD;
        dropped BIGINT := 0;
    BEGIN
        FOR part IN
            SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'reports'::regclass
              AND c.relname LIKE format('reports\\_%s\\_%%', p_task)
              AND replace(substr(c.relname, length(format('reports_%s_', p_task)) + 1), 'm', '-')::bigint
                  < p_before
        LOOP
            EXECUTE format('DROP TABLE %I', part.name);
            dropped := dropped + 1;
        END LOOP;
        RETURN dropped;
    END $$""",
    "REVOKE EXECUTE ON FUNCTION ldp_window_partition(BIGINT, BIGINT, BIGINT) FROM PUBLIC",
    "REVOKE EXECUTE ON FUNCTION ldp_drop_windows(BIGINT, BIGINT) FROM PUBLIC",
)

#: The objects schema version 6 added: the aggregates of pruned windows, and the function dropping one
#: partition of them (the retention, docs/collector.md#retention).
_RETENTION_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS window_aggregates (
        task BIGINT NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        window_start BIGINT NOT NULL,
        n BIGINT NOT NULL,
        state BYTEA NOT NULL,
        pruned_at BIGINT NOT NULL,
        PRIMARY KEY (task, window_start)
    )""",
    """CREATE OR REPLACE FUNCTION ldp_drop_partition(p_task BIGINT, p_start BIGINT)
    RETURNS BOOLEAN LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DECLARE
        name TEXT := format('reports_%s_%s', p_task, replace(p_start::text, '-', 'm'));
    BEGIN
        IF to_regclass(quote_ident(name)) IS NULL THEN
            RETURN FALSE;
        END IF;
        EXECUTE format('DROP TABLE %I', name);
        RETURN TRUE;
    END $$""",
    "REVOKE EXECUTE ON FUNCTION ldp_drop_partition(BIGINT, BIGINT) FROM PUBLIC",
)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    _TASKS,
    *_REPORTS_SCHEMA,
    *_RETENTION_SCHEMA,
    "CREATE INDEX IF NOT EXISTS tasks_by_token ON tasks (token_hash)",
)
#: Rows of ``reports r`` in a window whose aggregate is kept are skipped by every read (being deleted).
_NOT_PRUNED = " AND NOT EXISTS (SELECT 1 FROM window_aggregates a WHERE a.task = r.task AND a.window_start = r.window_start)"

#: Version 4 → 5: the reports move into the partitioned table.
_MIGRATE_4_TO_5 = (
    "ALTER TABLE reports RENAME TO reports_v3",
    *_REPORTS_SCHEMA,
    # the partitions holding the stored windows, as partition_of makes them (86400: PARTITION_SECONDS)
    """SELECT ldp_window_partition(q.task, q.start, q.span) FROM (
        SELECT DISTINCT p.task, p.w - ((p.w % p.span) + p.span) % p.span AS start, p.span FROM (
            SELECT DISTINCT r.task, r.t - ((r.t % k.window_seconds) + k.window_seconds) % k.window_seconds AS w,
                k.window_seconds * greatest(1, 86400 / k.window_seconds) AS span
            FROM reports_v3 r JOIN tasks k ON r.task = k.seq) AS p) AS q""",
    """INSERT INTO reports (task, window_start, report_id, t, report)
        SELECT r.task, r.t - ((r.t % k.window_seconds) + k.window_seconds) % k.window_seconds, r.report_id, r.t,
            r.report
        FROM reports_v3 r JOIN tasks k ON r.task = k.seq""",
    "DROP TABLE reports_v3",
)


#: The arrays travel in binary (%b): text-format arrays cost ten times more to build, escaping every element.
_INSERT = (
    "INSERT INTO reports (task, window_start, report_id, t, report) "
    "SELECT k.task, k.window_start, k.report_id, k.t, k.report "
    "FROM unnest(%b::bigint[], %b::bigint[], %b::bytea[], %b::bigint[], %b::text[]) "
    "AS k(task, window_start, report_id, t, report) "
    "ON CONFLICT DO NOTHING RETURNING task, window_start, report_id"
)
#: Raise one task's version (its row lock orders the task's commits) and log the keys the commit stored.
_BUMP = (
    "WITH bumped AS (INSERT INTO task_versions (task, version) VALUES (%s, 1) "
    "ON CONFLICT (task) DO UPDATE SET version = task_versions.version + 1 RETURNING task, version) "
    "INSERT INTO commits (task, version, window_starts, report_ids) "
    "SELECT task, version, %b::bigint[], %b::bytea[] FROM bumped RETURNING version"
)
#: Seconds the commit log keeps a commit's keys: a server further behind rebuilds its windows in full.
COMMIT_LOG_SECONDS = 600
#: A report's key: (task seq, window start, report id).
Key = tuple[int, int, bytes]
#: A partition holds the windows of (at least) this many seconds: a day of hourly windows is one table.
PARTITION_SECONDS = 86_400


def partition_of(window_start: int, width: int) -> tuple[int, int]:
    """``(start, span)`` of the partition holding the window ``window_start`` of ``width`` seconds.

    The span is the largest multiple of the window of at most
    :data:`PARTITION_SECONDS` (the window itself when longer), so every
    window lies in one partition and windows of a minute do not make 1,440
    tables a day.
    """
    span = width * max(1, PARTITION_SECONDS // width)
    return window_start - window_start % span, span


def _aggregates(connection: psycopg.Connection, task_id: str) -> list[WindowAggregate]:
    """The kept aggregates of a task's pruned windows, in time order."""
    rows = connection.execute(
        "SELECT a.window_start, a.n, a.state, a.pruned_at FROM window_aggregates a JOIN tasks k ON a.task = k.seq "
        "WHERE k.task_id = %s ORDER BY a.window_start",
        (task_id,),
    ).fetchall()
    return [WindowAggregate(int(start), int(n), bytes(state), int(at)) for start, n, state, at in rows]


def _has_schema(connection: psycopg.Connection) -> bool:
    """True when the schema's tables exist (on the connection's search path), of any version."""
    row = connection.execute(
        "SELECT to_regclass('meta') IS NOT NULL AND to_regclass('tasks') IS NOT NULL "
        "AND to_regclass('reports') IS NOT NULL"
    ).fetchone()
    return bool(row and row[0])


def _key(task: tuple[int, int], report: StoredReport) -> Key:
    """The key of ``report`` in the task of ``(seq, window seconds)``: (seq, window start, id)."""
    seq, width = task
    return (seq, report.t - report.t % width, bytes(report.report_id))


def _outcomes(
    keyed: Sequence[tuple[str, Sequence[tuple[Key, StoredReport]]]],
    inserted: set[Key],
    stored: dict[Key, tuple[int, str]],
) -> list[list[Insert]]:
    """Per report, in order: stored now (the first occurrence of a key this call inserted), replayed or in conflict.

    ``stored`` holds the stored ``(t, text)`` of every other key.
    """
    pending = set(inserted)
    results: list[list[Insert]] = []
    for _, pairs in keyed:
        outcomes = []
        for key, report in pairs:
            if key in pending:
                outcomes.append(Insert.STORED)
                pending.discard(key)
                continue
            same = same_report(*stored[key], report)
            outcomes.append(Insert.REPLAYED if same else Insert.CONFLICT)
        results.append(outcomes)
    return results


def _missing_rights(
    connection: psycopg.Connection, rights: dict[str, tuple[str, ...]], functions: Sequence[str] = ()
) -> list[str]:
    """``"INSERT on reports"`` for every right of ``rights`` (and EXECUTE of ``functions``) the role lacks."""
    pairs = [(table, right) for table, names in rights.items() for right in names]
    checks = ["has_table_privilege(%s, %s)"] * len(pairs) + ["has_function_privilege(%s, 'EXECUTE')"] * len(
        functions
    )
    row = connection.execute(
        "SELECT " + ", ".join(checks), [*[item for pair in pairs for item in pair], *functions]
    ).fetchone()
    granted = list(row or ())
    missing = [f"{right} on {table}" for (table, right), ok in zip(pairs, granted) if not ok]
    return missing + [f"EXECUTE on {name}" for name, ok in zip(functions, granted[len(pairs) :]) if not ok]


def _grant(rights: dict[str, tuple[str, ...]], role: str, functions: Sequence[str] = ()) -> str:
    """The GRANT statements that give ``role`` ``rights`` (and EXECUTE on ``functions``)."""
    by_rights: dict[tuple[str, ...], list[str]] = {}
    for table, names in rights.items():
        by_rights.setdefault(names, []).append(table)
    grants = [
        f"GRANT {', '.join(names)} ON {', '.join(tables)} TO {role}" for names, tables in by_rights.items()
    ]
    if functions:
        grants.append(f"GRANT EXECUTE ON FUNCTION {', '.join(functions)} TO {role}")
    return "; ".join(grants)


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
    """Tasks and reports in a PostgreSQL database, shared by any number of servers.

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

    shared = True

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
        self._version = SCHEMA_VERSION
        #: (task seq, window start, width) of the partitions known to exist (made or found by this store).
        self._partitions: set[tuple[int, int, int]] = set()
        try:
            version = self._read_schema() if read_only else self._create_schema()
            self._task_columns = task_columns(version)
            self._version = version
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
            rights, functions = self._rights()
            try:
                role = self._role()
            except (psycopg.Error, StoreUnavailable):
                role = "ROLE"
            return (
                f"PostgreSQL store {self.url}: {reason}; the store's role needs, as the tables' owner "
                f"grants: {_grant(rights, role, functions)}"
            )
        return f"PostgreSQL store {self.url}: {reason}"

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Server errors as :class:`StoreUnavailable` (one line, no password)."""
        try:
            yield
        except psycopg.Error as exc:
            raise StoreUnavailable(self._explain(exc)) from None

    def _rights(self) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
        """The table rights and the functions this store's role needs (a store read as of version 5 has no aggregates)."""
        if not self.read_only:
            return WRITER_RIGHTS, WRITER_FUNCTIONS
        if self._version < 6:
            return {
                table: rights for table, rights in READER_RIGHTS.items() if table != "window_aggregates"
            }, ()
        return READER_RIGHTS, ()

    @property
    def _not_pruned(self) -> str:
        """The condition skipping rows of pruned windows (none in a store read as of version 5)."""
        return _NOT_PRUNED if self._version >= 6 else ""

    def _check_rights(self) -> None:
        """A :class:`~ldp.collector.store.StoreOpenError` naming the GRANT when the role lacks a right the store needs."""
        rights, functions = self._rights()
        with self._reader() as connection:
            missing = _missing_rights(connection, rights, functions)
        if missing:
            role = self._role()
            raise StoreOpenError(
                f"PostgreSQL role {role} lacks {', '.join(missing)} in {self.url}; "
                f"as the tables' owner run: {_grant(rights, role, functions)}"
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
            if row is not None and row[0] in (
                "1",
                "2",
                "3",
                "4",
                "5",
                "6",
            ):  # older: migrated once, under the schema lock
                connection.execute("SELECT pg_advisory_xact_lock(%s::bigint)", (_SCHEMA_LOCK,))
                row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                try:
                    row = self._migrate(connection, None if row is None else str(row[0]))
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

    @staticmethod
    def _migrate(connection: psycopg.Connection, version: str | None) -> tuple[str] | None:
        """Bring a store of schema ``version`` to :data:`SCHEMA_VERSION` in the caller's transaction.

        1 → 2 adds the tasks' ``shuffle_delta``, 2 → 3 their ``created_at``,
        3 → 4 their ``name`` and ``description``, 4 → 5 moves the reports
        into the table partitioned by window (one ``INSERT ... SELECT``), 5 → 6
        adds the tasks' ``retain_seconds`` and the ``window_aggregates`` of
        pruned windows, 6 → 7 the tasks' ``candidates``.
        """
        columns = {
            "1": (("shuffle_delta DOUBLE PRECISION",), "2"),
            "2": (("created_at BIGINT",), "3"),
            "3": (("name TEXT", "description TEXT"), "4"),
        }
        while version in columns:
            added, version = columns[version]
            for column in added:
                connection.execute(f"ALTER TABLE tasks ADD COLUMN IF NOT EXISTS {column}")
        if version == "4":
            row = connection.execute(
                "SELECT relkind FROM pg_class WHERE oid = 'reports'::regclass"
            ).fetchone()
            if row is None or row[0] != "p":  # not partitioned yet (a step interrupted earlier rolled back)
                for statement in _MIGRATE_4_TO_5:
                    connection.execute(statement)
            version = "5"
        if version == "5":
            connection.execute("ALTER TABLE tasks ADD COLUMN IF NOT EXISTS retain_seconds BIGINT")
            for statement in _RETENTION_SCHEMA:
                connection.execute(statement)
            version = "6"
        if version == "6":
            connection.execute("ALTER TABLE tasks ADD COLUMN IF NOT EXISTS candidates TEXT")
            version = "7"
        if version is not None:
            connection.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (version,))
        return None if version is None else (version,)

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
        """Drop the task's partitions (whole tables, not row by row), then delete it."""
        self._check_writer()
        with self._errors(), self._writer() as connection, connection.transaction():
            row = connection.execute("SELECT seq FROM tasks WHERE task_id = %s", (task_id,)).fetchone()
            if row is None:
                return False
            connection.execute("SELECT ldp_drop_windows(%s, %s)", (row[0], 1 << 62))
            connection.execute("DELETE FROM tasks WHERE seq = %s", (row[0],))
            self._partitions = {p for p in self._partitions if p[0] != row[0]}
            return True

    def update_task(self, task: Task) -> bool:
        self._check_writer()
        values = dict(zip(TASK_COLUMNS.split(", "), task_row(task), strict=True))
        assignments = ", ".join(f"{column} = %s" for column in MUTABLE_TASK_COLUMNS)
        with self._errors(), self._writer() as connection, connection.transaction():
            cursor = connection.execute(
                f"UPDATE tasks SET {assignments} WHERE task_id = %s",
                (*(values[column] for column in MUTABLE_TASK_COLUMNS), task.task_id),
            )
            return cursor.rowcount > 0

    # -- retention ---------------------------------------------------------
    def _seq_and_width(self, connection: psycopg.Connection, task_id: str) -> tuple[int, int]:
        row = connection.execute(
            "SELECT seq, window_seconds FROM tasks WHERE task_id = %s", (task_id,)
        ).fetchone()
        if row is None:
            raise UnknownTaskError(f"no task {task_id} in {self.url}")
        return int(row[0]), int(row[1])

    def window_aggregates(self, task_id: str) -> list[WindowAggregate]:
        if self._version < 6:
            return []
        with self._errors(), self._reader() as connection:
            return _aggregates(connection, task_id)

    def pruned_windows(self, task_id: str) -> dict[int, int]:
        if self._version < 6:
            return {}
        with self._errors(), self._reader() as connection:
            rows = connection.execute(
                "SELECT a.window_start, a.n FROM window_aggregates a JOIN tasks k ON a.task = k.seq "
                "WHERE k.task_id = %s ORDER BY 1",
                (task_id,),
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def expired_windows(self, task_id: str, before: int) -> dict[int, int]:
        with self._errors(), self._reader() as connection:
            rows = connection.execute(
                "SELECT r.window_start, count(*) FROM reports r JOIN tasks k ON r.task = k.seq "
                "WHERE k.task_id = %s AND r.window_start < %s GROUP BY r.window_start ORDER BY r.window_start",
                (task_id, before),
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def keep_window(self, task_id: str, aggregate: WindowAggregate) -> bool:
        """Keep the aggregate under the task's version row lock (see the module's docstring).

        An upload's commit takes that lock as its last statement and then
        checks the aggregates of its windows: a commit before this one is
        counted here (or the count differs and nothing is kept), a commit
        after it finds the aggregate and rolls back (:class:`WindowPruned`).
        """
        self._check_writer()
        with self._errors(), self._writer() as connection, connection.transaction():
            seq, _ = self._seq_and_width(connection, task_id)
            connection.execute(
                "INSERT INTO task_versions (task, version) VALUES (%s, 0) ON CONFLICT (task) DO NOTHING",
                (seq,),
            )
            connection.execute("SELECT version FROM task_versions WHERE task = %s FOR UPDATE", (seq,))
            key = (seq, aggregate.start)
            if connection.execute(
                "SELECT 1 FROM window_aggregates WHERE task = %s AND window_start = %s", key
            ).fetchone():
                return True
            row = connection.execute(
                "SELECT count(*) FROM reports WHERE task = %s AND window_start = %s", key
            ).fetchone()
            if row is None or int(row[0]) != aggregate.n:
                return False
            connection.execute(
                "INSERT INTO window_aggregates (task, window_start, n, state, pruned_at) VALUES (%s, %s, %s, %s, %s)",
                (*key, aggregate.n, aggregate.state, aggregate.pruned_at),
            )
            return True

    def discard_windows(self, task_id: str, before: int, batch: int = 10_000) -> int:
        """Drop each partition all of whose windows end before ``before`` and hold no report of a window
        without a kept aggregate; delete the kept windows' rows of the other partitions.

        Each partition is dropped, or its rows deleted, in a transaction of
        its own (dropping a partition locks the reports table until commit).
        """
        self._check_writer()
        with self._errors(), self._writer() as connection:
            seq, width = self._seq_and_width(connection, task_id)
            starts = [
                int(row[0])
                for row in connection.execute(
                    "SELECT a.window_start FROM window_aggregates a WHERE a.task = %s AND a.window_start < %s "
                    "AND EXISTS (SELECT 1 FROM reports r WHERE r.task = a.task AND r.window_start = a.window_start) "
                    "ORDER BY 1",
                    (seq, before),
                ).fetchall()
            ]
            by_partition: dict[tuple[int, int], list[int]] = {}
            for start in starts:
                by_partition.setdefault(partition_of(start, width), []).append(start)
            deleted = 0
            for (low, span), windows in sorted(by_partition.items()):
                whole = (
                    low + span <= before
                    and not connection.execute(
                        f"SELECT 1 FROM reports r WHERE r.task = %s AND r.window_start >= %s AND r.window_start < %s"
                        f"{_NOT_PRUNED} LIMIT 1",
                        (seq, low, low + span),
                    ).fetchone()
                )
                if whole:
                    row = connection.execute(
                        "SELECT count(*) FROM reports WHERE task = %s AND window_start >= %s AND window_start < %s",
                        (seq, low, low + span),
                    ).fetchone()
                    with connection.transaction():
                        connection.execute("SELECT ldp_drop_partition(%s, %s)", (seq, low))
                    self._partitions.discard((seq, low, span))
                    deleted += int(row[0]) if row else 0
                    continue
                with connection.transaction():
                    cursor = connection.execute(
                        "DELETE FROM reports r WHERE r.task = %s AND r.window_start = ANY(%s::bigint[]) AND EXISTS "
                        "(SELECT 1 FROM window_aggregates a WHERE a.task = r.task AND a.window_start = r.window_start)",
                        (seq, windows),
                    )
                    deleted += cursor.rowcount
        return deleted

    def _versioned_snapshot(self, stack: contextlib.ExitStack, task_id: str) -> tuple[Any, Any]:
        """A REPEATABLE READ connection entered on ``stack``, and the task's (seq, version) row in its snapshot (None: no task)."""
        connection = stack.enter_context(self._connect(autocommit=False))
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        row = connection.execute(
            "SELECT k.seq, coalesce(v.version, 0) FROM tasks k "
            "LEFT JOIN task_versions v ON v.task = k.seq WHERE k.task_id = %s",
            (task_id,),
        ).fetchone()
        return connection, row

    def read_windows(
        self, task_id: str, chunk: int = 50_000
    ) -> Iterator[tuple[int, list[WindowAggregate], list[tuple[int, str]]]]:
        """The aggregates and the other reports in one REPEATABLE READ snapshot, with the task's version."""
        with contextlib.ExitStack() as stack:
            with self._errors():
                connection, row = self._versioned_snapshot(stack, task_id)
                if row is None:
                    yield 0, [], []
                    return
                seq, version = int(row[0]), int(row[1])
                aggregates = _aggregates(connection, task_id) if self._version >= 6 else []
                cursor = stack.enter_context(connection.cursor(name="ldp_windows"))
                cursor.execute(
                    f"SELECT r.t, r.report FROM reports r WHERE r.task = %s{self._not_pruned} ORDER BY r.t",
                    (seq,),
                )
            first = True
            while True:
                with self._errors():
                    rows = cursor.fetchmany(chunk)
                if not rows:
                    break
                yield version, aggregates if first else [], [(int(t), str(text)) for t, text in rows]
                first = False
            if first:
                yield version, aggregates, []

    # -- reports -----------------------------------------------------------
    def _task_windows(
        self, connection: psycopg.Connection, task_ids: list[str]
    ) -> dict[str, tuple[int, int]]:
        """The ``(seq, window seconds)`` of every named task; an unknown task is an :class:`UnknownTaskError`."""
        rows = connection.execute(
            "SELECT task_id, seq, window_seconds FROM tasks WHERE task_id = ANY(%s::text[])", (task_ids,)
        ).fetchall()
        found = {str(task_id): (int(seq), int(width)) for task_id, seq, width in rows}
        for task_id in task_ids:
            if task_id not in found:
                raise UnknownTaskError(f"no task {task_id} in {self.url}")
        return found

    def insert_reports(self, groups: Sequence[tuple[str, Sequence[StoredReport]]]) -> list[list[Insert]]:
        return self.insert_reports_versioned(groups)[0]

    def insert_reports_versioned(
        self, groups: Sequence[tuple[str, Sequence[StoredReport]]]
    ) -> tuple[list[list[Insert]], dict[str, int]]:
        self._check_writer()
        task_ids = sorted({task_id for task_id, _ in groups})
        if not task_ids:
            return [], {}
        with self._errors(), self._writer() as connection:
            windows = self._task_windows(connection, task_ids)
            keyed = [
                (task_id, [(_key(windows[task_id], report), report) for report in reports])
                for task_id, reports in groups
            ]
            first: dict[Key, StoredReport] = {}
            for _, pairs in keyed:
                for key, report in pairs:
                    first.setdefault(key, report)
            widths = dict(windows.values())
            self._make_partitions(connection, {(key[0], key[1], widths[key[0]]) for key in first})
            # committed on leaving, else rolled back
            with connection.transaction():
                self._task_windows(connection, task_ids)  # deleted since? (then the insert fails on its key)
                keys = sorted(first)  # key order: concurrent writers lock rows in the same order
                inserted = self._insert_rows(connection, keys, first) if keys else set()
                repeated = {key for key in first if key not in inserted} | _repeated_keys(keyed)
                stored = self._stored(connection, sorted(repeated)) if repeated else {}
                versions = {}
                by_seq = {seq: task_id for task_id, (seq, _) in windows.items()}
                for seq in sorted({key[0] for key in inserted}):  # the last statements: locks held briefly
                    mine = sorted(key for key in inserted if key[0] == seq)
                    row = connection.execute(
                        _BUMP, (seq, [key[1] for key in mine], [key[2] for key in mine])
                    ).fetchone()
                    assert row is not None
                    versions[by_seq[seq]] = int(row[0])
                if inserted:  # after the version locks: a window kept meanwhile is seen (keep_window)
                    self._refuse_pruned(connection, inserted)
        return _outcomes(keyed, inserted, stored), versions

    def _refuse_pruned(self, connection: psycopg.Connection, inserted: set[Key]) -> None:
        """Raise :class:`WindowPruned` (rolling the commit back) when a window of ``inserted`` has a kept aggregate."""
        windows = sorted({(key[0], key[1]) for key in inserted})
        row = connection.execute(
            "SELECT a.task, a.window_start FROM window_aggregates a "
            "JOIN unnest(%b::bigint[], %b::bigint[]) AS k(task, window_start) "
            "ON a.task = k.task AND a.window_start = k.window_start LIMIT 1",
            ([w[0] for w in windows], [w[1] for w in windows]),
        ).fetchone()
        if row is not None:
            raise WindowPruned(
                f"PostgreSQL store {self.url}: the window {row[1]} was pruned by its task's retention"
            )

    def _make_partitions(self, connection: psycopg.Connection, windows: set[tuple[int, int, int]]) -> None:
        """Make the partitions holding the ``(task seq, window start, width)`` not made yet, each committed at once.

        Outside the insert's transaction: creating a partition locks the whole
        table until commit, so inside it two writers could wait for each other.
        """
        spans = {(seq, *partition_of(start, width)) for seq, start, width in windows}
        for seq, start, span in sorted(spans - self._partitions):
            with connection.transaction():
                connection.execute("SELECT ldp_window_partition(%s, %s, %s)", (seq, start, span))
            self._partitions.add((seq, start, span))

    def _stored(self, connection: psycopg.Connection, keys: list[Key]) -> dict[Key, tuple[int, str]]:
        """The stored ``(t, text)`` of each key (all stored: just inserted or found already there)."""
        rows = connection.execute(
            "SELECT r.task, r.window_start, r.report_id, r.t, r.report FROM reports r "
            "JOIN unnest(%b::bigint[], %b::bigint[], %b::bytea[]) AS k(task, window_start, report_id) "
            "ON r.task = k.task AND r.window_start = k.window_start AND r.report_id = k.report_id",
            ([key[0] for key in keys], [key[1] for key in keys], [key[2] for key in keys]),
        ).fetchall()
        return {
            (int(seq), int(start), bytes(report_id)): (int(t), str(text))
            for seq, start, report_id, t, text in rows
        }

    def _insert_rows(
        self, connection: psycopg.Connection, keys: list[Key], first: dict[Key, StoredReport]
    ) -> set[Key]:
        """Insert the reports of ``keys`` in that order; the keys that were not stored yet."""
        try:
            cursor = connection.execute(
                _INSERT,
                (
                    [key[0] for key in keys],
                    [key[1] for key in keys],
                    [key[2] for key in keys],
                    [first[key].t for key in keys],
                    [first[key].report for key in keys],
                ),
            )
        except psycopg.errors.ForeignKeyViolation:  # another process deleted the task since _task_windows
            raise UnknownTaskError(f"a task of this upload was deleted from {self.url}") from None
        except psycopg.errors.CheckViolation:  # no partition: another process dropped a window this one made
            self._partitions.clear()
            raise StoreUnavailable(
                f"PostgreSQL store {self.url}: a window's partition was dropped meanwhile; retry"
            ) from None
        return {(int(seq), int(start), bytes(report_id)) for seq, start, report_id in cursor.fetchall()}

    def versions(self) -> dict[str, int]:
        with self._errors(), self._reader() as connection:
            rows = connection.execute(
                "SELECT k.task_id, v.version FROM task_versions v JOIN tasks k ON v.task = k.seq"
            ).fetchall()
        return {str(task_id): int(version) for task_id, version in rows}

    def forget_commits(self, older_than: float = COMMIT_LOG_SECONDS) -> int:
        """Delete the commit log's entries older than ``older_than`` seconds; how many were deleted."""
        if self.read_only:
            return 0
        with self._errors(), self._writer() as connection, connection.transaction():
            cursor = connection.execute(
                "DELETE FROM commits WHERE committed_at < now() - make_interval(secs => %s)", (older_than,)
            )
            return cursor.rowcount

    def reports_since(
        self, task_id: str, version: int | None, chunk: int = 50_000
    ) -> Iterator[tuple[int, list[tuple[int, str]]]]:
        """Read in one REPEATABLE READ snapshot: the task's version, then the reports of later commits.

        The version and the reports are of the same snapshot, so a report is
        in the chunks exactly when its commit's version is at most the one
        given with them.
        """
        with contextlib.ExitStack() as stack:
            with self._errors():
                connection, row = self._versioned_snapshot(stack, task_id)
            if row is None:
                yield 0, []
                return
            seq, current = int(row[0]), int(row[1])
            params: tuple[int, ...]
            if version is None:
                query, params = (
                    f"SELECT r.t, r.report FROM reports r WHERE r.task = %s{self._not_pruned} ORDER BY r.t",
                    (seq,),
                )
            elif version >= current:
                yield current, []
                return
            else:
                with self._errors():
                    logged = connection.execute(
                        "SELECT count(*) FROM commits WHERE task = %s AND version > %s AND version <= %s",
                        (seq, version, current),
                    ).fetchone()
                if logged is None or int(logged[0]) != current - version:
                    raise CommitLogTrimmed(
                        f"the commit log of {self.url} no longer holds versions {version + 1} to {current}"
                    )
                if self._version >= 6:
                    with self._errors():
                        pruned = connection.execute(
                            "SELECT 1 FROM commits c CROSS JOIN LATERAL unnest(c.window_starts) AS w(start) "
                            "JOIN window_aggregates a ON a.task = c.task AND a.window_start = w.start "
                            "WHERE c.task = %s AND c.version > %s AND c.version <= %s LIMIT 1",
                            (seq, version, current),
                        ).fetchone()
                    if (
                        pruned is not None
                    ):  # their reports are gone: the windows are read from their aggregates
                        raise CommitLogTrimmed(
                            f"a window committed to {self.url} since version {version} was pruned since"
                        )
                query = (
                    "SELECT r.t, r.report FROM commits c "
                    "CROSS JOIN LATERAL unnest(c.window_starts, c.report_ids) AS k(window_start, report_id) "
                    "JOIN reports r ON r.task = c.task AND r.window_start = k.window_start "
                    "AND r.report_id = k.report_id "
                    "WHERE c.task = %s AND c.version > %s AND c.version <= %s"
                )
                params = (seq, version, current)
            with self._errors():
                cursor = stack.enter_context(connection.cursor(name="ldp_since"))
                cursor.execute(query, params)
            empty = True
            while True:
                with self._errors():
                    rows = cursor.fetchmany(chunk)
                if not rows:
                    break
                empty = False
                yield current, [(int(t), str(text)) for t, text in rows]
            if empty:
                yield current, []

    def reports(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[StoredReport]]:
        low = -(1 << 62) if start is None else start
        high = 1 << 62 if end is None else end
        query = (
            "SELECT r.report_id, r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq "
            f"WHERE k.task_id = %s AND r.t >= %s AND r.t < %s{self._not_pruned} ORDER BY r.t"
        )
        for rows in self._stream(query, (task_id, low, high), chunk):
            yield [StoredReport(bytes(row[0]), row[1], row[2]) for row in rows]

    def reports_by_time(self, task_id: str, chunk: int = 50_000) -> Iterator[list[tuple[int, str]]]:
        query = (
            "SELECT r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq "
            f"WHERE k.task_id = %s{self._not_pruned} ORDER BY r.t"
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
                # % truncates toward zero: the floor multiple of the window, as Task.window_start
                "SELECT r.t - ((r.t %% %s::bigint) + %s::bigint) %% %s::bigint AS start, count(*) FROM reports r "
                f"JOIN tasks k ON r.task = k.seq WHERE k.task_id = %s{self._not_pruned} "
                "GROUP BY start ORDER BY start",
                (window, window, window, task_id),
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


def _repeated_keys(keyed: Sequence[tuple[str, Sequence[tuple[Key, StoredReport]]]]) -> set[Key]:
    """The keys named more than once in the call (their later copies are compared with the first)."""
    seen: set[Key] = set()
    repeated: set[Key] = set()
    for _, pairs in keyed:
        for key, _report in pairs:
            (repeated if key in seen else seen).add(key)
    return repeated
