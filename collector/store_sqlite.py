"""The embedded store: one SQLite database file in WAL mode (docs/collector.md#store).

Writes go through one connection under a lock (SQLite has one writer at a
time anyway); :meth:`SqliteStore.insert_reports` commits a whole group of
uploads in one transaction with ``synchronous=FULL``, so an acknowledged
report is on disk and one fsync serves hundreds of reports. Reads use a
connection per call, so a long export never blocks ingestion (WAL readers do
not block the writer). Other processes (``ldp task``, ``ldp aggregate
--store``) open the same file; ``busy_timeout`` makes them wait for a lock
instead of failing.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from ldp.collector.store import TASK_COLUMN_COUNT, TASK_COLUMNS, Store, StoredReport, task_of, task_row
from ldp.collector.tasks import Task
from ldp.errors import ParameterError

__all__ = ["SqliteStore"]

SCHEMA_VERSION = 2
_BUSY_TIMEOUT_MS = 30_000
#: The writer's page cache and WAL size before an automatic checkpoint. Report ids are random, so
#: every commit dirties pages all over the reports B-trees: with SQLite's defaults (2 MB cache,
#: checkpoint every 1,000 pages) inserting fell from 48,000 to 22,000 reports/s between the first
#: and the fourth 100,000 reports of a task; with a 64 MB cache and 10,000-page checkpoints
#: (a WAL of up to ~40 MB) it holds 36,000 (groups of 1,000, synchronous=FULL, 2 shared cores).
_WRITER_CACHE_KIB = 65_536
_WAL_AUTOCHECKPOINT_PAGES = 10_000

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
    shuffle_delta REAL
);
CREATE TABLE IF NOT EXISTS reports (
    task INTEGER NOT NULL REFERENCES tasks(seq) ON DELETE CASCADE,
    report_id BLOB NOT NULL,
    t INTEGER NOT NULL,
    report TEXT NOT NULL,
    PRIMARY KEY (task, report_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS reports_by_time ON reports (task, t);
"""


class SqliteStore(Store):
    """Tasks and reports in one SQLite file.

    Parameters
    ----------
    path : str
        The database file; created (with its tables) when missing.
    """

    def __init__(self, path: str) -> None:
        self.path = str(path)
        self.url = self.path
        if Path(self.path).is_dir():
            raise ParameterError(f"store {self.path!r} is a directory, not a SQLite database file")
        self._lock = threading.Lock()
        try:
            self._writer = self._connect()
            self._writer.execute(f"PRAGMA cache_size=-{_WRITER_CACHE_KIB}")
            self._writer.execute(f"PRAGMA wal_autocheckpoint={_WAL_AUTOCHECKPOINT_PAGES}")
            with self._writer:
                self._writer.executescript(_SCHEMA)
                self._writer.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            version = self._migrate()
        except sqlite3.DatabaseError as exc:
            raise ParameterError(f"cannot open store {self.path!r} as a SQLite database: {exc}") from None
        if version != str(SCHEMA_VERSION):
            self._writer.close()
            raise ParameterError(
                f"store {self.path!r} has schema version {version}; this ldp reads version {SCHEMA_VERSION}"
            )

    def _migrate(self) -> str:
        """Bring a store of an earlier schema version up to :data:`SCHEMA_VERSION`; the version it ends at.

        Version 1 → 2 adds the tasks' ``shuffle_delta`` column (NULL: not in
        shuffle mode). It runs in one immediate transaction and re-reads the
        version inside it, so two servers opening one old store migrate it once.
        """
        read = "SELECT value FROM meta WHERE key = 'schema_version'"
        (version,) = self._writer.execute(read).fetchone()
        if version == "1":
            self._writer.execute("BEGIN IMMEDIATE")
            try:
                (version,) = self._writer.execute(read).fetchone()
                if version == "1":
                    self._writer.execute("ALTER TABLE tasks ADD COLUMN shuffle_delta REAL")
                    self._writer.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
                    version = "2"
                self._writer.execute("COMMIT")
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
        return str(version)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("PRAGMA foreign_keys=ON")
        connection.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        return connection

    @contextlib.contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        connection = self._connect()
        try:
            yield connection
        finally:
            connection.close()

    # -- tasks -------------------------------------------------------------
    def create_task(self, task: Task) -> None:
        with self._lock, self._writer:
            try:
                self._writer.execute(
                    f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES ({', '.join('?' * TASK_COLUMN_COUNT)})",
                    task_row(task),
                )
            except sqlite3.IntegrityError:
                raise ParameterError(f"task {task.task_id} already exists in {self.path!r}") from None

    def task(self, task_id: str) -> Task | None:
        with self._reader() as connection:
            row = connection.execute(
                f"SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
        return None if row is None else task_of(row)

    def tasks(self) -> list[Task]:
        with self._reader() as connection:
            rows = connection.execute(f"SELECT {TASK_COLUMNS} FROM tasks ORDER BY seq").fetchall()
        return [task_of(row) for row in rows]

    def delete_task(self, task_id: str) -> bool:
        with self._lock, self._writer:
            cursor = self._writer.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,))
            return cursor.rowcount > 0

    # -- reports -----------------------------------------------------------
    def insert_reports(self, groups: Sequence[tuple[str, Sequence[StoredReport]]]) -> list[list[bool]]:
        results: list[list[bool]] = []
        with self._lock, self._writer:  # one transaction: committed on leaving, rolled back on an exception
            cursor = self._writer.cursor()
            for task_id, reports in groups:
                found = cursor.execute("SELECT seq FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
                if found is None:
                    raise ParameterError(f"no task {task_id} in {self.path!r}")
                seq = found[0]
                stored = []
                for report in reports:
                    try:
                        cursor.execute(
                            "INSERT INTO reports (task, report_id, t, report) VALUES (?, ?, ?, ?) "
                            "ON CONFLICT (task, report_id) DO NOTHING",  # only a stored id is a replay
                            (seq, report.report_id, report.t, report.report),
                        )
                    except sqlite3.IntegrityError:  # the task was deleted by another process meanwhile
                        raise ParameterError(f"no task {task_id} in {self.path!r}") from None
                    stored.append(cursor.rowcount == 1)
                results.append(stored)
        return results

    def reports(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[StoredReport]]:
        low = -(1 << 62) if start is None else start
        high = 1 << 62 if end is None else end
        with self._reader() as connection:
            cursor = connection.execute(
                "SELECT r.report_id, r.t, r.report FROM reports r JOIN tasks k ON r.task = k.seq "
                "WHERE k.task_id = ? AND r.t >= ? AND r.t < ? ORDER BY r.t",
                (task_id, low, high),
            )
            while rows := cursor.fetchmany(chunk):
                yield [StoredReport(bytes(row[0]), row[1], row[2]) for row in rows]

    def report_texts(
        self, task_id: str, start: int | None = None, end: int | None = None, chunk: int = 50_000
    ) -> Iterator[list[str]]:
        low = -(1 << 62) if start is None else start
        high = 1 << 62 if end is None else end
        with self._reader() as connection:
            cursor = connection.execute(
                "SELECT r.report FROM reports r JOIN tasks k ON r.task = k.seq "
                "WHERE k.task_id = ? AND r.t >= ? AND r.t < ? ORDER BY r.t",
                (task_id, low, high),
            )
            while rows := cursor.fetchmany(chunk):
                yield [row[0] for row in rows]

    def count_by_window(self, task_id: str, window: int) -> dict[int, int]:
        with self._reader() as connection:
            rows = connection.execute(
                "SELECT r.t - (r.t % ?) AS start, count(*) FROM reports r JOIN tasks k ON r.task = k.seq "
                "WHERE k.task_id = ? GROUP BY start ORDER BY start",
                (window, task_id),
            ).fetchall()
        return {int(start): int(n) for start, n in rows}

    def close(self) -> None:
        with self._lock:
            self._writer.close()
