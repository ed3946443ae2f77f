"""``ldp store``: back up and restore a collector's SQLite store (docs/cli.md#store).

``ldp store backup`` copies a store, live or not, through SQLite's online
backup API into a verified private file (:func:`ldp.collector.backup.backup_store`);
``ldp store restore`` puts a backup back in one transaction, refused while an
``ldp serve`` holds the store (:func:`ldp.collector.backup.restore_store`).
PostgreSQL stores use ``pg_dump`` and ``pg_restore`` instead
(docs/how-to/postgresql.md#backup).
"""

from __future__ import annotations

import os
import sys

import click

from ldp.cli import check_outputs_distinct, check_writable, run_guarded
from ldp.collector.backup import PG_DUMP_HINT, backup_store, check_backup, restore_store
from ldp.collector.cli import sqlite_path
from ldp.collector.store import DEFAULT_STORE
from ldp.collector.store_sqlite import BACKUP_PAGES, lock_path
from ldp.errors import ParameterError
from ldp.progress import CountProgress

__all__ = ["store"]

_STORE_HELP = "The SQLite store: a file path or sqlite:///path (PostgreSQL: use pg_dump)."


def _sqlite_file(store_url: str) -> str:
    """The store's SQLite file; a PostgreSQL URL is an error pointing at ``pg_dump``."""
    path = sqlite_path(store_url)
    if path is None:
        if store_url.startswith(("postgresql://", "postgres://")):
            raise ParameterError(f"--store: {PG_DUMP_HINT}")
        raise ParameterError("--store: give a SQLite file path (or sqlite:///path) or a postgresql:// URL")
    return path


def _describe(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    return f"{total:,} reports of {len(counts):,} task(s)"


@click.group("store")
def store() -> None:
    """Back up and restore the collector's SQLite store, also while ldp serve runs.

    \b
    Example:
      ldp store backup --store ldp-collector.db -o backup-2025-11-27.db
      ldp aggregate --store backup-2025-11-27.db --task TASK
      ldp store restore --store ldp-collector.db backup-2025-11-27.db --yes
    """


@store.command("backup")
@click.option(
    "--store", "store_url", metavar="URL", default=DEFAULT_STORE, show_default=True, help=_STORE_HELP
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The backup file to write (mode 0600).",
)
@click.option("--force", is_flag=True, help="Replace an existing backup file (never the store itself).")
@click.option(
    "--step-pages",
    type=click.IntRange(min=1),
    default=BACKUP_PAGES,
    show_default=True,
    help="Database pages copied per step of SQLite's online backup.",
)
def backup(store_url, output, force, step_pages):
    """Copy the store, as one committed state, to a new verified file, while ldp serve keeps writing.

    The copy is checked (integrity, schema version, reports per task) and
    renamed into place only then; a backup that is interrupted leaves no
    file at -o. A plain cp of a live store misses what is still in its -wal
    file: use this instead. For PostgreSQL, use pg_dump.

    \b
    Example:
      ldp store backup --store ldp-collector.db -o backup.db
    """
    run_guarded(_backup, store_url, output, force, step_pages)


def _backup(store_url: str, output: str, force: bool, pages: int) -> None:
    path = _sqlite_file(store_url)
    check_writable(output, "-o")
    if not force and os.path.lexists(output):
        raise ParameterError(f"-o {output!r} already exists; give --force to replace it")
    store_files = [
        ("--store", path),
        *((f"--store's {s}", f"{path}{s}") for s in ("-wal", "-shm", "-journal")),
    ]
    check_outputs_distinct([*store_files, ("--store's lock", lock_path(path))], [("-o", output)])
    progress = CountProgress("pages")
    try:
        summary = backup_store(
            path, output, replace=force, pages=pages, progress=lambda copied, _: progress.update(copied)
        )
    finally:
        progress.done()
    click.echo(
        f"backed up {_describe(summary.counts)} (schema version {summary.schema_version}, "
        f"{summary.size:,} bytes) from {path} to {output}",
        err=True,
    )
    for task_id, count in summary.counts.items():
        click.echo(f"  {task_id}  {count:,} reports", err=True)


@store.command("restore")
@click.option(
    "--store", "store_url", metavar="URL", default=DEFAULT_STORE, show_default=True, help=_STORE_HELP
)
@click.argument("backup_path", metavar="BACKUP", type=click.Path(dir_okay=False))
@click.option("--yes", is_flag=True, help="Do not ask before replacing the store's content.")
def restore(store_url, backup_path, yes):
    """Replace the store's content with BACKUP (from ldp store backup); ldp serve must be stopped.

    Refused while an ldp serve holds the store. The content is replaced in
    one transaction: a restore that is interrupted leaves the store as it
    was. Start ldp serve again afterwards.
    """
    run_guarded(_restore, store_url, backup_path, yes)


def _restore(store_url: str, backup_path: str, yes: bool) -> None:
    path = _sqlite_file(store_url)
    check_outputs_distinct([("BACKUP", backup_path)], [("--store", path)])
    _, counts = check_backup(backup_path, f"BACKUP {backup_path!r}")
    if not yes and not click.confirm(
        f"replace everything in {path} with the {_describe(counts)} of {backup_path}?", err=True
    ):
        click.echo("nothing restored", err=True)
        sys.exit(1)
    restored = restore_store(backup_path, path)
    click.echo(f"restored {_describe(restored)} from {backup_path} into {path}", err=True)
