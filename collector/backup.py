"""``ldp store backup``: a consistent, verified copy of a live SQLite store (docs/collector.md#backup).

A plain ``cp`` of a store that ``ldp serve`` is writing misses what is still
in its ``-wal`` file (such a copy once restored 0 reports). :func:`backup_store`
instead copies one committed state through SQLite's online backup API
(:meth:`~ldp.collector.store_sqlite.SqliteStore.backup_to`) while the server
keeps committing, into a private temporary file beside the output. The copy
is checked (``PRAGMA integrity_check``, an ldp schema version, the reports
per task equal to those of the copied snapshot) and fsync'ed, and only then
gets its name (:func:`ldp.atomic.private_output`): a backup killed at any
point leaves no output, only a temporary file that the next backup to the
same name sweeps. PostgreSQL stores are backed up with ``pg_dump``
(docs/how-to/postgresql.md#backup).
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Callable
from urllib.parse import quote

from ldp.atomic import private_output
from ldp.collector.store_sqlite import BACKUP_PAGES, SqliteStore
from ldp.errors import ParameterError

__all__ = ["PG_DUMP_HINT", "BackupSummary", "backup_store", "check_backup", "restore_store"]

#: What to run instead for a PostgreSQL store (docs/how-to/postgresql.md#backup).
PG_DUMP_HINT = (
    "a PostgreSQL store is backed up with pg_dump, not ldp store backup: "
    "pg_dump --format=custom --file=ldp.dump URL (docs/how-to/postgresql.md#backup)"
)


@dataclasses.dataclass(frozen=True)
class BackupSummary:
    """What :func:`backup_store` copied.

    Parameters
    ----------
    output : str
        The backup file.
    schema_version : int
        The store's schema version (the copy's).
    counts : dict of str to int
        Reports per task id in the copy (every task, oldest first).
    size : int
        The backup file's size in bytes.
    """

    output: str
    schema_version: int
    counts: dict[str, int]
    size: int


def backup_store(
    path: str,
    output: str,
    *,
    replace: bool = False,
    pages: int = BACKUP_PAGES,
    progress: Callable[[int, int], None] | None = None,
) -> BackupSummary:
    """Copy the SQLite store ``path`` to the new file ``output`` (mode 0600), verified, as one committed state.

    Parameters
    ----------
    path : str
        The store's file; it may be served (``ldp serve`` keeps writing).
    output : str
        The backup file. Refused if it exists, unless ``replace``; the caller
        checks that it is not the store itself.
    replace : bool
        Replace an existing ``output`` (atomically, once the copy is verified).
    pages : int
        Pages copied per step.
    progress : callable, optional
        Called with (pages copied, pages in all) after each step.

    Raises
    ------
    ParameterError
        A missing store or a file that is not an ldp store, an output that
        exists or cannot be written, or a copy that fails its verification.
    """
    with SqliteStore(path, read_only=True) as store, private_output(output, replace=replace) as temporary:
        counts = store.backup_to(temporary, pages=pages, progress=progress)
        version = _verify(temporary, counts, output)
        size = os.path.getsize(temporary)
    return BackupSummary(output=output, schema_version=version, counts=counts, size=size)


def _verify(temporary: str, expected: dict[str, int], output: str) -> int:
    """Check the copy at ``temporary`` and that it holds the reports of ``expected``; its schema version."""
    version, found = check_backup(temporary, f"backup {output!r}")
    if found != expected:
        raise ParameterError(
            f"backup {output!r} holds other reports than the store's snapshot "
            f"({sum(found.values()):,} vs {sum(expected.values()):,}); nothing was written"
        )
    return version


def check_backup(path: str, what: str) -> tuple[int, dict[str, int]]:
    """Check that the SQLite file ``path`` is an intact ldp store; its schema version and reports per task.

    Parameters
    ----------
    path : str
        The file.
    what : str
        What it is, for messages (``backup 'b.db'``).

    Raises
    ------
    ParameterError
        If ``PRAGMA integrity_check`` finds a fault, or the file is no ldp
        store of a schema version this ldp reads.
    """
    try:
        connection = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
        try:
            problems = [row[0] for row in connection.execute("PRAGMA integrity_check")]
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise ParameterError(f"{what} is not a SQLite database ({exc})") from None
    if problems != ["ok"]:
        raise ParameterError(f"{what} failed its integrity check: {problems[0]}")
    with SqliteStore(path, read_only=True) as copy:
        return copy.schema_version, copy.report_counts()


def restore_store(backup: str, path: str) -> dict[str, int]:
    """Replace the content of the SQLite store ``path`` with the backup file ``backup``; reports per task restored.

    The backup is checked first (:func:`check_backup`). The store is opened
    ``exclusive``: refused while an ``ldp serve`` holds it, and no server
    can start until the restore is done. The content is replaced in one
    SQLite transaction (:meth:`~ldp.collector.store_sqlite.SqliteStore.restore_from`),
    so a restore killed at any point leaves the store as it was. A missing
    store file is created (mode 0600).

    Raises
    ------
    ParameterError
        A bad backup, a served store, or a store that cannot be written.
    """
    _, expected = check_backup(backup, f"backup {backup!r}")
    with SqliteStore(path, exclusive=True) as store:
        store.restore_from(backup)
        found = store.report_counts()
    if found != expected:  # pragma: no cover - SQLite's backup copies every page or raises
        raise ParameterError(f"store {path!r} does not hold the backup's reports after the restore")
    return found
