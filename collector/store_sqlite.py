"""The embedded store: one SQLite database file in WAL mode (docs/collector.md#store).

Writes go through one connection under a lock (SQLite has one writer at a
time anyway); :meth:`SqliteStore.insert_reports` commits a whole group of
uploads in one transaction with ``synchronous=FULL``, so an acknowledged
report is on disk and one fsync serves hundreds of reports. Reads use a
connection per call, so a long export never blocks ingestion (WAL readers do
not block the writer). Other processes (``ldp task``, ``ldp aggregate
--store``) open the same file; ``busy_timeout`` makes them wait for a lock
instead of failing.

The file is created mode 0600 (SQLite gives its ``-wal`` and ``-shm`` files
the database's mode). A store opened ``read_only`` opens the file as a
``mode=ro`` URI: no schema, no migration, no write. A store opened
``exclusive`` (``ldp serve``) holds an exclusive ``flock`` on the sidecar file
``<store>.serve-lock`` until it is closed; the kernel releases it when the
process dies, ``kill -9`` included, so a crash never leaves a stale lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import operator
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from urllib.parse import quote

from ldp.collector.store import (
    MUTABLE_TASK_COLUMNS,
    TASK_COLUMN_COUNT,
    TASK_COLUMNS,
    Insert,
    Store,
    StoredColumns,
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

__all__ = [
    "BACKUP_PAGES",
    "MIN_FREE_BYTES",
    "WAL_AUTOCHECKPOINT_PAGES",
    "WRITER_CACHE_KIB",
    "SqliteStore",
    "lock_path",
]

SCHEMA_VERSION = 7
_id_of, _t_of, _text_of = (operator.itemgetter(i) for i in range(3))  # a StoredReport's fields
_BUSY_TIMEOUT_MS = 30_000
#: One reports row: task seq, window start, report id, t, report text.
_Row = tuple[int, int, bytes, int, str]


class _NotAllNew(Exception):
    """A group's one-statement insert found an id already taken (or its task gone): insert row by row."""


#: How long :meth:`SqliteStore.check_writable` waits for the write lock, milliseconds.
_PROBE_TIMEOUT_MS = 1_000
#: A store whose file system has less free space than this cannot take a group commit: unhealthy.
MIN_FREE_BYTES = 16 << 20
#: The writer's page cache and WAL size before an automatic checkpoint. Report ids are random, so
#: every commit dirties pages all over the reports B-trees: with SQLite's defaults (2 MB cache,
#: checkpoint every 1,000 pages) inserting fell from 48,000 to 22,000 reports/s between the first
#: and the fourth 100,000 reports of a task; with a 64 MB cache and 10,000-page checkpoints
#: (a WAL of up to ~40 MB) it holds 36,000 (groups of 1,000, synchronous=FULL, 2 shared cores).
WRITER_CACHE_KIB = 65_536
WAL_AUTOCHECKPOINT_PAGES = 10_000

#: Pages copied per step of :meth:`SqliteStore.backup_to` (4 MiB of 4 KiB pages).
BACKUP_PAGES = 1024
_TASK_COUNTS = (
    "SELECT k.task_id, count(r.task) FROM tasks k LEFT JOIN reports r ON r.task = k.seq "
    "GROUP BY k.seq ORDER BY k.seq"
)

#: Version 4 → 5: the reports, keyed by (task, id), re-keyed by (task, window start, id) (one transaction).
_MIGRATE_4_TO_5 = (
    """CREATE TABLE reports_v5 (
        task INTEGER NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
        window_start INTEGER NOT NULL,
        report_id BLOB NOT NULL,
        t INTEGER NOT NULL,
        report TEXT NOT NULL,
        PRIMARY KEY (task, window_start, report_id)
    ) WITHOUT ROWID""",
    # SQLite's % truncates toward zero; a window start is t's floor multiple of the window (as in Python)
    """INSERT INTO reports_v5 (task, window_start, report_id, t, report)
        SELECT r.task, r.t - ((r.t % k.window_seconds) + k.window_seconds) % k.window_seconds, r.report_id,
               r.t, r.report
        FROM reports r JOIN tasks k ON r.task = k.seq ORDER BY 1, 2, 3""",
    "DROP TABLE reports",
    "ALTER TABLE reports_v5 RENAME TO reports",
)

_TIME_INDEX = "CREATE INDEX IF NOT EXISTS reports_by_t ON reports (task, t)"

#: The aggregates of windows whose raw reports the retention deleted (schema version 6).
_AGGREGATES = """CREATE TABLE IF NOT EXISTS window_aggregates (
    task INTEGER NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
    window_start INTEGER NOT NULL,
    n INTEGER NOT NULL,
    state BLOB NOT NULL,
    pruned_at INTEGER NOT NULL,
    PRIMARY KEY (task, window_start)
) WITHOUT ROWID"""
#: Rows of ``reports r`` in a window whose aggregate is kept are skipped by every read (being deleted).
_NOT_PRUNED = " AND NOT EXISTS (SELECT 1 FROM window_aggregates a WHERE a.task = r.task AND a.window_start = r.window_start)"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL UNIQUE,
    spec_json TEXT NOT NULL,
    window_seconds INTEGER NOT NULL,
    time_precision INTEGER NOT NULL,
    min_batch INTEGER NOT NULL,
    token_hash TEXT NOT NULL,
    not_before INTEGER,
    not_after INTEGER,
    cors_origins TEXT NOT NULL,
    shuffle_delta REAL,
    created_at INTEGER,
    name TEXT,
    description TEXT,
    retain_seconds INTEGER,
    candidates TEXT
);
CREATE TABLE IF NOT EXISTS reports (
    task INTEGER NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
    window_start INTEGER NOT NULL,
    report_id BLOB NOT NULL,
    t INTEGER NOT NULL,
    report TEXT NOT NULL,
    PRIMARY KEY (task, window_start, report_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tasks_by_token ON tasks (token_hash);
"""


def _aggregates(connection: sqlite3.Connection, task_id: str) -> list[WindowAggregate]:
    """The kept aggregates of a task's pruned windows, in time order."""
    rows = connection.execute(
        "SELECT a.window_start, a.n, a.state, a.pruned_at FROM window_aggregates a JOIN tasks k ON a.task = k.seq "
        "WHERE k.task_id = ? ORDER BY a.window_start",
        (task_id,),
    ).fetchall()
    return [WindowAggregate(int(start), int(n), bytes(state), int(at)) for start, n, state, at in rows]


def lock_path(path: str) -> str:
    """The sidecar file a serving collector locks for the SQLite store ``path``."""
    return f"{path}.serve-lock"


def _create_private(path: str) -> None:
    """Create the (empty) database file mode 0600 when it is missing; SQLite then fills it in."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreOpenError(f"cannot create store {path!r}: {exc.strerror}") from None
    os.close(descriptor)


def _take_serve_lock(path: str) -> int:
    """An exclusive ``flock`` on :func:`lock_path` (its open descriptor); refused while another process holds it."""
    where = lock_path(path)
    try:
        descriptor = os.open(where, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreOpenError(f"cannot create the store's lock file {where!r}: {exc.strerror}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise StoreOpenError(
            f"store {path!r} is already served by another ldp serve (it holds {where!r}); "
            "a SQLite store has one server at a time: stop the other one, or use PostgreSQL for several"
        ) from None
    return descriptor


class SqliteStore(Store):
    """Tasks and reports in one SQLite file.

    Parameters
    ----------
    path : str
        The database file; created (mode 0600, with its tables) when missing.
    read_only : bool
        Open the file read-only (``mode=ro``); it must exist. Never writes.
    exclusive : bool
        Hold the serve lock (:func:`lock_path`) until :meth:`close`: a
        second exclusive opener is a :class:`~ldp.collector.store.StoreOpenError`.
    """

    def __init__(self, path: str, *, read_only: bool = False, exclusive: bool = False) -> None:
        self.path = str(path)
        self.url = self.path
        self.read_only = read_only
        if Path(self.path).is_dir():
            raise StoreOpenError(f"store {self.path!r} is a directory, not a SQLite database file")
        self._lock = threading.Lock()
        self._serve_lock: int | None = None
        if read_only and not Path(self.path).exists():
            raise StoreOpenError(f"store {self.path!r}: no such file")
        if exclusive and not read_only:
            self._serve_lock = _take_serve_lock(self.path)
        try:
            if not read_only:
                _create_private(self.path)
            self._writer = self._connect()
            if read_only:
                version = self._read_version()
            else:
                self._writer.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
                self._writer.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
                with self._writer:
                    self._writer.executescript(_SCHEMA)
                    self._writer.execute(
                        "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),),
                    )
                version = self._migrate()
                with self._writer:  # after migrating: never built on a version 4 table about to be dropped
                    self._writer.execute(_TIME_INDEX)
                    self._writer.execute(_AGGREGATES)
        except sqlite3.DatabaseError as exc:
            self._release_serve_lock()
            raise StoreOpenError(f"cannot open store {self.path!r} as a SQLite database: {exc}") from None
        except BaseException:
            self._release_serve_lock()
            raise
        supported = range(1, SCHEMA_VERSION + 1) if read_only else range(SCHEMA_VERSION, SCHEMA_VERSION + 1)
        if not version.isdigit() or int(version) not in supported:
            self._writer.close()
            self._release_serve_lock()
            raise StoreOpenError(
                f"store {self.path!r} has schema version {version}; this ldp reads version {SCHEMA_VERSION}"
            )
        #: The store's schema version (a read-only store may be older than :data:`SCHEMA_VERSION`).
        self.schema_version = int(version)
        self._task_columns = task_columns(int(version))
        #: Stores before version 6 have no aggregates: nothing to skip.
        self._not_pruned = _NOT_PRUNED if int(version) >= 6 else ""

    def _read_version(self) -> str:
        """The schema version of a store opened read-only (a file that is no store is an error)."""
        try:
            row = self._writer.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is None:
            raise StoreOpenError(f"store {self.path!r} is not an ldp store (it has no schema version)")
        return str(row[0])

    def _migrate(self) -> str:
        """Bring a store of an earlier schema version up to :data:`SCHEMA_VERSION`; the version it ends at.

        Version 1 → 2 adds the tasks' ``shuffle_delta`` column (NULL: not in
        shuffle mode), 2 → 3 their ``created_at`` (NULL: not known), 3 → 4
        their ``name`` and ``description`` (NULL: none), 4 → 5 re-keys the
        reports by window (``(task, window_start, report_id)``: an insert
        touches the current window's pages, not pages all over the task's),
        5 → 6 adds the tasks' ``retain_seconds`` (NULL: keep every report) and
        the ``window_aggregates`` table of pruned windows, 6 → 7 their
        ``candidates`` (a JSON array of text; NULL: none).
        Each step runs in one immediate transaction and re-reads the version
        inside it, so two processes opening one old store migrate it once,
        and a process killed during a step leaves the store as it was.
        """
        read = "SELECT value FROM meta WHERE key = 'schema_version'"
        steps = {
            "1": ((("shuffle_delta", "REAL"),), "2"),
            "2": ((("created_at", "INTEGER"),), "3"),
            "3": ((("name", "TEXT"), ("description", "TEXT")), "4"),
            "5": ((("retain_seconds", "INTEGER"),), "6"),
            "6": ((("candidates", "TEXT"),), "7"),
        }
        (version,) = self._writer.execute(read).fetchone()
        while version in steps or version == "4":
            self._writer.execute("BEGIN IMMEDIATE")
            try:
                (version,) = self._writer.execute(read).fetchone()
                if version in steps:
                    columns, version = steps[version]
                    present = {row[1] for row in self._writer.execute("PRAGMA table_info(tasks)")}
                    for column, kind in columns:
                        if column not in present:
                            self._writer.execute(f"ALTER TABLE tasks ADD COLUMN {column} {kind}")
                    if version == "6":
                        self._writer.execute(_AGGREGATES)
                    self._writer.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
                elif version == "4":
                    present = {row[1] for row in self._writer.execute("PRAGMA table_info(reports)")}
                    if "window_start" not in present:
                        for statement in _MIGRATE_4_TO_5:
                            self._writer.execute(statement)
                    version = "5"
                    self._writer.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
                self._writer.execute("COMMIT")
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
        return str(version)

    def _connect(self, busy_timeout_ms: int = _BUSY_TIMEOUT_MS) -> sqlite3.Connection:
        if self.read_only:
            uri = f"file:{quote(os.path.abspath(self.path))}?mode=ro"
            connection = sqlite3.connect(
                uri, uri=True, timeout=busy_timeout_ms / 1000, check_same_thread=False
            )
        else:
            connection = sqlite3.connect(self.path, timeout=busy_timeout_ms / 1000, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("PRAGMA foreign_keys=ON")
        connection.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        return connection

    def _release_serve_lock(self) -> None:
        if self._serve_lock is not None:
            os.close(self._serve_lock)  # closing the descriptor releases the flock
            self._serve_lock = None

    @contextlib.contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        connection = self._connect()
        try:
            yield connection
        finally:
            connection.close()

    @contextlib.contextmanager
    def _raw_reader(self, task_id: str) -> Iterator[tuple[sqlite3.Connection, str]]:
        """A connection in a read transaction (one snapshot), and the condition a read of ``reports r`` adds.

        The condition skips the rows of windows whose aggregate is kept. It
        is needed only while such rows are left (a deletion in progress, or
        interrupted); otherwise it is empty, and a read costs what it cost
        before retention existed (the anti-join more than doubled the time of
        a full read of a task).
        """
        with self._reader() as connection:
            connection.execute(
                "BEGIN"
            )  # a deferred read transaction: the check and the read see one snapshot
            condition = ""
            if self._not_pruned:
                lingering = connection.execute(
                    "SELECT 1 FROM window_aggregates a JOIN tasks k ON a.task = k.seq WHERE k.task_id = ? "
                    "AND EXISTS (SELECT 1 FROM reports r WHERE r.task = a.task AND r.window_start = a.window_start) "
                    "LIMIT 1",
                    (task_id,),
                ).fetchone()
                condition = self._not_pruned if lingering else ""
            yield connection, condition

    # -- tasks -------------------------------------------------------------
    def _check_writer(self) -> None:
        if self.read_only:
            raise StoreOpenError(f"store {self.path!r} was opened read-only")

    def create_task(self, task: Task) -> None:
        self._check_writer()
        with self._lock, self._writer:
            try:
                self._writer.execute(
                    f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({', '.join('?' * TASK_COLUMN_COUNT)})",
                    task_row(task),
                )
            except sqlite3.IntegrityError:
                raise TaskExistsError(f"task {task.task_id} already exists in {self.path!r}") from None

    def task(self, task_id: str) -> Task | None:
        with self._reader() as connection:
            row = connection.execute(
                f"SELECT {self._task_columns} FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
        return None if row is None else task_of(row)

    def tasks(self) -> list[Task]:
        with self._reader() as connection:
            rows = connection.execute(f"SELECT {self._task_columns} FROM tasks ORDER BY seq").fetchall()
        return [task_of(row) for row in rows]

    def tasks_with_token_hash(self, token_hash: str) -> list[Task]:
        with self._reader() as connection:
            rows = connection.execute(
                f"SELECT {self._task_columns} FROM tasks WHERE token_hash = ? ORDER BY seq", (token_hash,)
            ).fetchall()
        return [task_of(row) for row in rows]

    def delete_task(self, task_id: str) -> bool:
        self._check_writer()
        with self._lock, self._writer:
            cursor = self._writer.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,))
            return cursor.rowcount > 0

    def update_task(self, task: Task) -> bool:
        self._check_writer()
        values = dict(zip(TASK_COLUMNS.split(", "), task_row(task), strict=True))
        assignments = ", ".join(f"{column} = ?" for column in MUTABLE_TASK_COLUMNS)
        with self._lock, self._writer:
            cursor = self._writer.execute(
                f"UPDATE tasks SET {assignments} WHERE task_id = ?",
                (*(values[column] for column in MUTABLE_TASK_COLUMNS), task.task_id),
            )
            return cursor.rowcount > 0

    # -- retention ---------------------------------------------------------
    def window_aggregates(self, task_id: str) -> list[WindowAggregate]:
        if not self._not_pruned:
            return []
        with self._reader() as connection:
            return _aggregates(connection, task_id)

    def pruned_windows(self, task_id: str) -> dict[int, int]:
        if not self._not_pruned:
            return {}
        with self._reader() as connection:
            rows = connection.execute(
                "SELECT a.window_start, a.n FROM window_aggregates a JOIN tasks k ON a.task = k.seq "
                "WHERE k.task_id = ? ORDER BY 1",
                (task_id,),
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def expired_windows(self, task_id: str, before: int) -> dict[int, int]:
        with self._reader() as connection:
            rows = connection.execute(
                "SELECT r.window_start, count(*) FROM reports r JOIN tasks k ON r.task = k.seq "
                "WHERE k.task_id = ? AND r.window_start < ? GROUP BY r.window_start ORDER BY r.window_start",
                (task_id, before),
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def keep_window(self, task_id: str, aggregate: WindowAggregate) -> bool:
        self._check_writer()
        with (
            self._lock,
            self._writer,
        ):  # one write transaction: no commit comes between the count and the insert
            found = self._writer.execute("SELECT seq FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
            if found is None:
                raise UnknownTaskError(f"no task {task_id} in {self.path!r}")
            key = (found[0], aggregate.start)
            kept = self._writer.execute(
                "SELECT 1 FROM window_aggregates WHERE task = ? AND window_start = ?", key
            ).fetchone()
            if kept is not None:
                return True
            (stored,) = self._writer.execute(
                "SELECT count(*) FROM reports WHERE task = ? AND window_start = ?", key
            ).fetchone()
            if stored != aggregate.n:
                return False
            self._writer.execute(
                "INSERT INTO window_aggregates (task, window_start, n, state, pruned_at) VALUES (?, ?, ?, ?, ?)",
                (*key, aggregate.n, aggregate.state, aggregate.pruned_at),
            )
            return True

    def discard_windows(self, task_id: str, before: int, batch: int = 10_000) -> int:
        self._check_writer()
        with self._reader() as connection:
            starts = [
                int(row[0])
                for row in connection.execute(
                    "SELECT a.window_start FROM window_aggregates a JOIN tasks k ON a.task = k.seq "
                    "WHERE k.task_id = ? AND a.window_start < ? AND EXISTS (SELECT 1 FROM reports r "
                    "WHERE r.task = a.task AND r.window_start = a.window_start) ORDER BY 1",
                    (task_id, before),
                )
            ]
        deleted = 0
        for start in starts:
            while True:
                with self._lock, self._writer:  # a batch per transaction: an upload waits one batch at most
                    cursor = self._writer.execute(
                        "DELETE FROM reports WHERE (task, window_start, report_id) IN ("
                        "SELECT r.task, r.window_start, r.report_id FROM reports r "
                        "JOIN window_aggregates a ON a.task = r.task AND a.window_start = r.window_start "
                        "JOIN tasks k ON k.seq = r.task WHERE k.task_id = ? AND r.window_start = ? LIMIT ?)",
                        (task_id, start, max(1, batch)),
                    )
                    count = cursor.rowcount
                deleted += count
                if count < batch:
                    break
        return deleted

    def read_windows(
        self, task_id: str, chunk: int = 50_000
    ) -> Iterator[tuple[int, list[WindowAggregate], list[tuple[int, str]]]]:
        with self._raw_reader(task_id) as (connection, skip):  # one snapshot: the aggregates and the reports
            aggregates = _aggregates(connection, task_id) if self._not_pruned else []
            cursor = connection.execute(
                f"SELECT r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq WHERE k.task_id = ?{skip} "
                "ORDER BY r.t",
                (task_id,),
            )
            first = True
            while rows := cursor.fetchmany(chunk):
                yield 0, aggregates if first else [], rows
                first = False
            if first:
                yield 0, aggregates, []

    # -- reports -----------------------------------------------------------
    def insert_reports(self, groups: Sequence[tuple[str, Sequence[StoredReport]]]) -> list[list[Insert]]:
        """One transaction. First every group in one ``executemany`` each, which is all it takes when every
        id is new; when one is not (a replay, a conflict, an id twice in a call, a task deleted meanwhile),
        that transaction is rolled back and the call is made again one report at a time."""
        self._check_writer()
        try:
            with self._lock:
                try:
                    with self._writer:  # one transaction: committed on leaving, rolled back on an exception
                        return self._insert(self._writer.cursor(), groups, self._insert_all_new)
                except _NotAllNew:
                    pass
                with self._writer:
                    return self._insert(self._writer.cursor(), groups, self._insert_each)
        except (
            sqlite3.OperationalError
        ) as exc:  # locked past busy_timeout, disk full, read-only file, I/O error
            raise StoreUnavailable(f"store {self.path!r} cannot commit: {exc}") from None

    def _insert(
        self,
        cursor: sqlite3.Cursor,
        groups: Sequence[tuple[str, Sequence[StoredReport]]],
        insert: Callable[[sqlite3.Cursor, str, list[_Row], Sequence[StoredReport]], list[Insert]],
    ) -> list[list[Insert]]:
        results: list[list[Insert]] = []
        for task_id, reports in groups:
            found = cursor.execute(
                "SELECT seq, window_seconds FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            if found is None:
                raise UnknownTaskError(f"no task {task_id} in {self.path!r}")
            seq, width = found
            ts = reports.ts if type(reports) is StoredColumns else list(map(_t_of, reports))
            start_of = {t: t - t % width for t in set(ts)}
            starts = sorted(set(start_of.values()))
            if starts and self._not_pruned:
                pruned = cursor.execute(
                    f"SELECT window_start FROM window_aggregates WHERE task = ? "
                    f"AND window_start IN ({', '.join('?' * len(starts))}) LIMIT 1",
                    (seq, *starts),
                ).fetchone()
                if pruned is not None:
                    raise WindowPruned(
                        f"store {self.path!r}: the window {pruned[0]} of task {task_id} was pruned by its retention"
                    )
            # the rows made by zip from the columns, not a Python expression per report
            if type(reports) is StoredColumns:
                ids, texts = reports.report_ids, reports.texts
            else:
                ids, texts = list(map(_id_of, reports)), list(map(_text_of, reports))
            rows = list(zip(repeat(seq), map(start_of.__getitem__, ts), ids, ts, texts))
            results.append(insert(cursor, task_id, rows, reports))
        return results

    def _insert_all_new(
        self, cursor: sqlite3.Cursor, task_id: str, rows: list[_Row], reports: Sequence[StoredReport]
    ) -> list[Insert]:
        """Every row stored by one ``executemany``; :class:`_NotAllNew` when one was not.

        ``ON CONFLICT DO NOTHING`` (as row by row): a statement that cannot
        fail on a key writes no statement journal, which a plain ``INSERT``
        of a table with two indexes does (doubling the writer's I/O).
        """
        try:
            cursor.executemany(
                "INSERT INTO reports (task, window_start, report_id, t, report) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (task, window_start, report_id) DO NOTHING",
                rows,
            )
        except sqlite3.IntegrityError:  # the task was deleted meanwhile: row by row says so
            raise _NotAllNew from None
        if cursor.rowcount != len(rows):
            raise _NotAllNew
        return [Insert.STORED] * len(rows)

    def _insert_each(
        self, cursor: sqlite3.Cursor, task_id: str, rows: list[_Row], reports: Sequence[StoredReport]
    ) -> list[Insert]:
        """Each row stored unless its id is: then a replay (the same report) or a conflict."""
        outcomes = []
        for row, report in zip(rows, reports):
            try:
                cursor.execute(
                    "INSERT INTO reports (task, window_start, report_id, t, report) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (task, window_start, report_id) DO NOTHING",  # only a stored id is a replay
                    row,
                )
            except sqlite3.IntegrityError:  # the task was deleted by another process meanwhile
                raise UnknownTaskError(f"no task {task_id} in {self.path!r}") from None
            if cursor.rowcount == 1:
                outcomes.append(Insert.STORED)
                continue
            stored_t, stored_text = cursor.execute(
                "SELECT t, report FROM reports WHERE task = ? AND window_start = ? AND report_id = ?",
                row[:3],
            ).fetchone()
            same = same_report(stored_t, stored_text, report)
            outcomes.append(Insert.REPLAYED if same else Insert.CONFLICT)
        return outcomes

    def reports(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[StoredReport]]:
        low = -(1 << 62) if start is None else start
        high = 1 << 62 if end is None else end
        with self._raw_reader(task_id) as (connection, skip):
            cursor = connection.execute(
                "SELECT r.report_id, r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq "
                f"WHERE k.task_id = ? AND r.t >= ? AND r.t < ?{skip} ORDER BY r.t",
                (task_id, low, high),
            )
            while rows := cursor.fetchmany(chunk):
                yield [StoredReport(bytes(row[0]), row[1], row[2]) for row in rows]

    def report_texts(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[str]]:
        low = -(1 << 62) if start is None else start
        high = 1 << 62 if end is None else end
        with self._raw_reader(task_id) as (connection, skip):
            cursor = connection.execute(
                "SELECT r.report FROM reports r JOIN tasks k ON r.task = k.seq "
                f"WHERE k.task_id = ? AND r.t >= ? AND r.t < ?{skip} ORDER BY r.t",
                (task_id, low, high),
            )
            while rows := cursor.fetchmany(chunk):
                yield [row[0] for row in rows]

    def reports_by_time(self, task_id: str, chunk: int = 50_000) -> Iterator[list[tuple[int, str]]]:
        with self._raw_reader(task_id) as (connection, skip):
            cursor = connection.execute(
                f"SELECT r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq WHERE k.task_id = ?{skip} "
                "ORDER BY r.t",
                (task_id,),
            )
            while rows := cursor.fetchmany(chunk):
                yield rows

    def check_writable(self) -> None:
        """Unavailable when the file system is (nearly) full, the file is read-only or the write lock is held.

        A probe connection takes SQLite's write lock (``BEGIN IMMEDIATE``,
        waiting :data:`_PROBE_TIMEOUT_MS` at most) and rolls back at once.
        """
        if self.read_only:
            raise StoreUnavailable(f"store {self.path!r} was opened read-only")
        directory = os.path.dirname(os.path.abspath(self.path))
        free = shutil.disk_usage(directory).free
        if free < MIN_FREE_BYTES:
            raise StoreUnavailable(
                f"store {self.path!r}: its file system has {free:,} bytes free "
                f"(a commit needs at least {MIN_FREE_BYTES:,})"
            )
        if not os.access(self.path, os.W_OK):
            raise StoreUnavailable(f"store {self.path!r} is not writable")
        try:
            probe = self._connect(_PROBE_TIMEOUT_MS)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
            finally:
                probe.close()
        except sqlite3.Error as exc:
            reason = "is locked by another writer" if "locked" in str(exc) else f"cannot write: {exc}"
            raise StoreUnavailable(f"store {self.path!r} {reason}") from None

    def count_by_window(self, task_id: str, window: int) -> dict[int, int]:
        with self._raw_reader(task_id) as (connection, skip):
            rows = connection.execute(
                "SELECT r.t - ((r.t % ?) + ?) % ? AS start, count(*) FROM reports r JOIN tasks k ON r.task = k.seq "
                f"WHERE k.task_id = ?{skip} GROUP BY start ORDER BY start",
                (window, window, window, task_id),  # the floor multiple (% truncates)
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def report_counts(self) -> dict[str, int]:
        """Reports per task id (every task, oldest first; 0 for a task without reports)."""
        with self._reader() as connection:
            return {task_id: int(n) for task_id, n in connection.execute(_TASK_COUNTS)}

    def backup_to(
        self,
        target: str,
        *,
        pages: int = BACKUP_PAGES,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Copy the whole database, as one committed state, into the SQLite file ``target``.

        SQLite's online backup API copies ``pages`` pages per step. A read
        transaction held on the source for the whole copy pins one snapshot:
        in WAL mode a server keeps committing meanwhile (its commits go to
        the WAL, after the snapshot), and the copy never restarts because of
        them. The copy is left in rollback-journal mode (one self-contained
        file); ``target`` should be new (its content is replaced).

        Parameters
        ----------
        target : str
            The file to write.
        pages : int
            Pages per step (at least 1).
        progress : callable, optional
            Called after each step with (pages copied, pages in all).

        Returns
        -------
        dict of str to int
            Reports per task id in the copied snapshot.
        """
        source = self._connect()
        source.isolation_level = None  # transactions by hand: the read transaction spans the steps
        try:
            source.execute("BEGIN")
            counts = {task_id: int(n) for task_id, n in source.execute(_TASK_COUNTS)}
            destination = sqlite3.connect(target)
            try:

                def step(status: int, remaining: int, total: int) -> None:
                    if progress is not None:
                        progress(total - remaining, total)

                source.backup(destination, pages=max(1, pages), progress=step, sleep=0.0)
                destination.execute("PRAGMA journal_mode=DELETE")
            finally:
                destination.close()
            source.execute("COMMIT")
        finally:
            source.close()
        return counts

    def restore_from(self, source: str) -> None:
        """Replace the whole database with the SQLite file ``source`` (a backup), in one transaction.

        SQLite's backup API copies ``source`` into this store's own connection
        in a single step under its write lock: readers see the old content or
        the new, and a process killed meanwhile leaves the old content (the
        transaction never committed). Open the store ``exclusive`` first, so
        no running ``ldp serve`` holds state of the content being replaced.
        """
        self._check_writer()
        uri = f"file:{quote(os.path.abspath(source))}?mode=ro"
        backup = sqlite3.connect(uri, uri=True)
        try:
            with self._lock:
                backup.backup(self._writer)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot restore store {self.path!r} from {source!r}: {exc}") from None
        finally:
            backup.close()

    def close(self) -> None:
        with self._lock:
            self._writer.close()
            self._release_serve_lock()
