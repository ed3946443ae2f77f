"""``ldp task``: create, list, show, update, delete, prune and export the collector's tasks (docs/cli.md#task).

A task binds a spec to its collection rules (:mod:`ldp.collector.tasks`);
it lives in a store (:func:`ldp.collector.store.open_store`: a SQLite file,
``ldp-collector.db`` by default, or a ``postgresql://`` URL) that ``ldp serve``
fills with reports. ``ldp task create`` prints the collector token exactly
once: the store keeps only its SHA-256.

``ldp task update`` changes what can change of a task (its name, description,
retention and, for Bloom RAPPOR, the candidate values its windows are
decoded against) and refuses the rest; ``ldp task prune`` runs the retention
once (:mod:`ldp.collector.retention`). ``ldp task export`` writes a task's stored reports to a report file (JSON
Lines, CSV or Parquet, by extension), chunk by chunk through the
aggregator's columnar reader and writers, under a temporary name renamed
into place only on success; with ``--out DIR`` a Parquet dataset
partitioned by window (:mod:`ldp.collector.export_dataset`). ``ldp aggregate --store URL --task T`` (in
:mod:`ldp.aggregator.cli`) estimates from the store directly, through
:func:`open_task` (batches come from :func:`ldp.collector.accumulate.stored_batches`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import numpy as np

from ldp.aggregator.candidates import read_candidates
from ldp.batch import ReportBatch
from ldp.cli import OptionConflict, check_outputs_distinct, check_writable, run_guarded
from ldp.collector.accumulate import stored_batches
from ldp.collector.retention import check_prunable
from ldp.collector.store import DEFAULT_STORE, Store, open_store
from ldp.collector.tasks import (
    DEFAULT_MIN_BATCH,
    DEFAULT_TIME_PRECISION,
    DEFAULT_WINDOW,
    MAX_MIN_BATCH,
    TIME_LIMIT,
    Task,
    format_duration,
    is_task_id,
    new_task,
    parse_duration,
)
from ldp.errors import ParameterError
from ldp.extensions import split_extension
from ldp.flags import Flags
from ldp.progress import CountProgress
from ldp.specs import load_spec

__all__ = [
    "FLAGS",
    "StoreSelection",
    "check_reports_output",
    "count_reports",
    "export_reports",
    "open_task",
    "sqlite_path",
    "task",
]

#: How ``ldp task`` and ``ldp aggregate --store`` name the parameters of library errors.
FLAGS = Flags(names={"start": "--from", "end": "--to", "task_id": "--task", "url": "--store"})
#: Reports read from the store at a time by ``ldp task export`` (bounds memory).
EXPORT_CHUNK = 50_000

_STORE_HELP = "The store: a SQLite file (also sqlite:///path) or a postgresql:// URL."


@dataclasses.dataclass(frozen=True)
class StoreSelection:
    """Which stored reports a command reads: a task of a store, optionally a time range.

    Parameters
    ----------
    url : str
        The store (:func:`ldp.collector.store.open_store`).
    task_id : str
        The task.
    start, end : int or None
        Reports with ``start <= t < end`` (Unix seconds); None: unbounded.
    """

    url: str
    task_id: str
    start: int | None = None
    end: int | None = None

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and not -TIME_LIMIT < value < TIME_LIMIT:
                raise ParameterError.naming(f"{{{name}=}} is not a time in Unix seconds", **{name: value})
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ParameterError.naming(
                "{end=} must be later than {start=}: the range is start <= t < end",
                start=self.start,
                end=self.end,
            )

    def describe(self) -> str:
        """``task T`` with its range, for messages."""
        if self.start is None and self.end is None:
            return f"task {self.task_id}"
        low = "-inf" if self.start is None else _when(self.start)
        high = "+inf" if self.end is None else _when(self.end)
        return f"task {self.task_id} in [{low}, {high})"


# -- library helpers shared with ``ldp aggregate --store`` -------------------------------------------


def sqlite_path(url: str) -> str | None:
    """The SQLite file of a store URL (as :func:`open_store` reads it), or None for a server URL."""
    if url.startswith(("postgresql://", "postgres://")) or (
        "://" in url and not url.startswith("sqlite:///")
    ):
        return None
    return url.removeprefix("sqlite:///")


def _open_existing(url: str, read_only: bool = True) -> Store:
    """The store at ``url``, read-only unless ``read_only`` is False; a SQLite file that does not exist is an error."""
    path = sqlite_path(url)
    if path is not None and not Path(path).exists():
        raise ParameterError.naming(
            f"{{url}} {path!r}: no such store file (ldp task create makes one)", url=url
        )
    return open_store(url, read_only=read_only)


def open_task(url: str, task_id: str, read_only: bool = True) -> tuple[Store, Task]:
    """The store at ``url`` (which must exist; read-only unless ``read_only`` is False) and its task ``task_id``.

    Raises
    ------
    ParameterError
        Naming ``url`` or ``task_id``: a bad URL, a missing store or an unknown task.
    """
    store = _open_existing(url, read_only)
    try:
        found = store.task(task_id)
    except BaseException:
        store.close()
        raise
    if found is None:
        store.close()
        raise ParameterError.naming(
            f"{{task_id}} {task_id!r}: no such task in {store.url!r}", task_id=task_id
        )
    return store, found


def count_reports(store: Store, task: Task) -> dict[int, int]:
    """Reports per window start of ``task``."""
    return store.count_by_window(task.task_id, task.window)


def check_reports_output(path: str, option: str = "-o") -> None:
    """Refuse a report file path before any work: an unknown extension or a place that cannot be written."""
    from ldp.aggregator.writers import REPORT_FORMATS

    suffixes, gz = split_extension(path)
    ext = suffixes[-1] if suffixes else ""
    fmt = REPORT_FORMATS.get(ext)
    if fmt is None or (gz and fmt == "parquet"):
        raise ParameterError(
            f"{option} {path!r}: unknown report file extension {ext or '(none)'!r}; expected "
            f"{', '.join(sorted(REPORT_FORMATS))} (.gz allowed except for .parquet)"
        )
    check_writable(path, option)


# -- export ------------------------------------------------------------------------------------------


class _GroupsAppeared(Exception):
    """A batch with group keys followed batches without: a CSV or Parquet file needs its group column from the start."""


def _with_group_column(batches: Iterable[ReportBatch], always: bool) -> Iterator[ReportBatch]:
    """``batches`` for a CSV or Parquet file, whose first batch fixes whether it has a ``group`` column.

    With ``always``, each batch gets a group column (all None when it had
    none); otherwise a batch with group keys after one without raises
    :class:`_GroupsAppeared`.
    """
    seen_ungrouped = False
    for batch in batches:
        if batch.groups is None:
            if always:
                batch = dataclasses.replace(batch, groups=np.full(len(batch), None, dtype=object))
            seen_ungrouped = True
        elif seen_ungrouped and not always:
            raise _GroupsAppeared
        yield batch


def _is_tabular(output: str) -> bool:
    """True for a CSV or Parquet report file (one fixed set of columns); False for JSON Lines."""
    from ldp.aggregator.writers import REPORT_FORMATS

    if output == "-":
        return False
    suffixes, _ = split_extension(output)
    return REPORT_FORMATS.get(suffixes[-1] if suffixes else "") in ("csv", "parquet")


def _export_once(
    store: Store, task: Task, selection: StoreSelection, output: str, chunk: int, groups: bool
) -> int:
    """One attempt of :func:`export_reports`; ``groups``: give a CSV or Parquet file a group column from the start."""
    from ldp.aggregator.writers import write_reports
    from ldp.atomic import atomic_output

    progress = CountProgress("reports")
    written = 0

    def counted(batches: Iterator[ReportBatch]) -> Iterator[ReportBatch]:
        nonlocal written
        for batch in batches:
            written += len(batch)
            progress.update(written)
            yield batch

    chunks = store.report_texts(task.task_id, selection.start, selection.end, chunk=chunk)
    batches = stored_batches(task.spec, chunks)
    if _is_tabular(output):
        batches = _with_group_column(batches, always=groups)
    batches = counted(batches)
    try:
        if output == "-":
            return write_reports(batches, sys.stdout, task.spec)
        with atomic_output(output) as temporary:
            return write_reports(batches, temporary, task.spec)
    finally:
        progress.done()


def export_reports(selection: StoreSelection, output: str, chunk: int = EXPORT_CHUNK) -> int:
    """Write the selected stored reports to ``output`` (a report file, or ``-`` for JSON Lines on stdout).

    The file appears complete or not at all. A CSV or Parquet file gets a
    ``group`` column when any exported report has a group key (found on a
    first attempt, which is then redone with the column).

    Returns
    -------
    int
        The number of reports written.
    """
    store, task = open_task(selection.url, selection.task_id)
    with store:
        try:
            return _export_once(store, task, selection, output, chunk, groups=False)
        except _GroupsAppeared:  # raised for CSV and Parquet only
            return _export_once(store, task, selection, output, chunk, groups=True)


# -- presentation ------------------------------------------------------------------------------------


def _when(t: int) -> str:
    """Unix seconds as UTC date and time (``2025-11-24 00:00:00Z``); beyond the calendar, the number."""
    try:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return str(t)


def _bound(t: int | None) -> str:
    return "-" if t is None else f"{t} ({_when(t)})"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain fixed-width table (left-aligned text, right-aligned numbers)."""
    cells = [[str(cell) for cell in header], *[[_cell(cell) for cell in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    numeric = [all(isinstance(row[i], int) for row in rows) and bool(rows) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if right else cell.ljust(width)
            for cell, width, right in zip(row, widths, numeric)
        ).rstrip()

    return "\n".join(line(row) for row in cells)


def _cell(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters (an ellipsis marks a cut)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _indent(text: str) -> str:
    """A description's later lines aligned under its first (``ldp task show``)."""
    return "\n".join(line if i == 0 else " " * 16 + line for i, line in enumerate(text.splitlines()))


def _retention(task: Task) -> str:
    return (
        "keep every report" if task.retain is None else f"{format_duration(task.retain)} after a window ends"
    )


def _takes_candidates(task: Task) -> bool:
    """A Bloom RAPPOR task: its windows are decoded against its candidates (``--candidates``)."""
    return task.spec.report_kind == "rappor" and getattr(task.spec, "encoding", None) == "bloom"


def _candidates(task: Task) -> str:
    """``ldp task show``'s candidates line: how many, the first few; or how to give them."""
    if not task.candidates:
        return "(none: windows show bit estimates; ldp task update TASK --candidates FILE decodes them)"
    first = ", ".join(_shorten(value, 30) for value in task.candidates[:3])
    more = ", …" if len(task.candidates) > 3 else ""
    return f"{len(task.candidates):,} values decoded in each window ({first}{more})"


def _describe(task: Task, counts: dict[int, int], url: str, pruned: dict[int, int] | None = None) -> str:
    """The text of ``ldp task show`` (``pruned``: the report counts of the windows the retention pruned)."""
    pruned = pruned or {}
    spec = task.spec
    lines = [
        f"task            {task.task_id}",
        f"name            {task.name or '(none)'}",
        f"description     {_indent(task.description) or '(none)'}",
        f"store           {url}",
        f"mechanism       {spec.mechanism} (spec {task.fingerprint})",
        f"window          {format_duration(task.window)}",
        f"time precision  {format_duration(task.time_precision)}",
        f"min batch       {task.min_batch:,}",
        f"not before      {_bound(task.not_before)}",
        f"not after       {_bound(task.not_after)}",
        f"CORS origins    {', '.join(task.cors_origins) or '(none)'}",
        f"shuffle mode    {'off' if task.shuffle_delta is None else f'central delta {task.shuffle_delta:g} per window'}",
        f"retention       {_retention(task)}",
        *([f"candidates      {_candidates(task)}"] if _takes_candidates(task) else []),
        f"reports         {sum(counts.values()):,} in {len(counts):,} window(s)",
    ]
    if pruned:
        lines.append(
            f"pruned          {sum(pruned.values()):,} in {len(pruned):,} window(s): raw reports deleted, "
            "aggregates kept (estimates remain)"
        )
    every = {**counts, **pruned}
    if every:

        def note(start: int, n: int) -> str:
            notes = ["withheld"] if n < task.min_batch else []
            return ", ".join([*notes, "pruned"] if start in pruned else notes)

        rows = [
            (_when(start), _when(start + task.window), n, note(start, n))
            for start, n in sorted(every.items())
        ]
        lines += ["", _table(("window start", "window end", "reports", ""), rows)]
    return "\n".join(lines)


# -- commands ----------------------------------------------------------------------------------------


def _store_option(func):
    return click.option(
        "--store", "store_url", metavar="URL", default=DEFAULT_STORE, show_default=True, help=_STORE_HELP
    )(func)


def _guarded(func, **options) -> None:
    """Run ``func`` with library errors worded in this command's flags; exit 2 on an error."""

    def translated() -> None:
        with FLAGS.translating():
            func(**options)

    run_guarded(translated)


@click.group("task")
def task() -> None:
    """Create, list, show, delete and export the collector's tasks (the store ldp serve fills).

    \b
    Example:
      ldp task create --spec spec.json --window 1d --time-precision 1h --min-batch 1000
      ldp task list
      ldp task show TASK
      ldp task update TASK --name "signup funnel" --retain 90d
      ldp task prune
      ldp task export --task TASK --from 1764028800 --to 1764115200 -o reports.parquet
      ldp task export TASK --out export
      ldp task delete TASK --yes
    """


@task.command("create")
@_store_option
@click.option(
    "--spec", "spec_path", required=True, type=click.Path(dir_okay=False), help="The task's spec JSON."
)
@click.option("--window", default=format_duration(DEFAULT_WINDOW), show_default=True, help="Estimate window.")
@click.option(
    "--time-precision",
    default=format_duration(DEFAULT_TIME_PRECISION),
    show_default=True,
    help="Clients truncate report times to multiples of it; it divides the window.",
)
@click.option(
    "--min-batch",
    type=click.IntRange(min=1),
    default=DEFAULT_MIN_BATCH,
    show_default=True,
    help="Windows and ranges with fewer reports are withheld.",
)
@click.option("--not-before", type=int, default=None, metavar="UNIX", help="Drop reports with t before this.")
@click.option(
    "--not-after", type=int, default=None, metavar="UNIX", help="Drop reports with t at or after this."
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="An origin allowed to upload from a browser, scheme://host[:port] (or * for any); repeatable.",
)
@click.option(
    "--shuffle-delta",
    type=float,
    default=None,
    metavar="DELTA",
    help="Shuffle mode: every window's estimates carry the central epsilon of its shuffled reports at this delta.",
)
@click.option(
    "--name", default="", metavar="TEXT", help="A short name for people (one line, at most 100 characters)."
)
@click.option(
    "--description",
    default="",
    metavar="TEXT",
    help="What the task collects and why (at most 2,000 characters).",
)
@click.option(
    "--retain",
    default=None,
    metavar="DURATION",
    help="Delete a window's raw reports this long after the window ends, keeping its aggregate (its "
    "estimates remain). Default: keep every report.",
)
@click.option(
    "--candidates",
    "candidates_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Bloom RAPPOR: a file of candidate values, one per line (as ldp aggregate --candidates reads it); "
    "ldp serve decodes each window against them.",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"task": ..., "token": ...} (for scripts).')
def create(**options):
    """Create a task and print its id and collector token.

    The token reads the task's estimates; it is printed once and cannot be
    shown again (the store keeps only its SHA-256). Durations are written
    90s, 15m, 1h, 1d or 2w.
    """
    _guarded(_create, **{**options, "cors_origins": tuple(options["cors_origins"])})


def _create(
    *,
    store_url,
    spec_path,
    window,
    time_precision,
    min_batch,
    not_before,
    not_after,
    cors_origins,
    shuffle_delta,
    as_json,
    name="",
    description="",
    retain=None,
    candidates_path=None,
):
    for flag, value in (("--not-before", not_before), ("--not-after", not_after)):
        if value is not None and not -TIME_LIMIT < value < TIME_LIMIT:
            raise ParameterError(f"{flag} {value} is not a time in Unix seconds (|t| < 2**62)")
    if min_batch > MAX_MIN_BATCH:
        raise ParameterError(f"--min-batch {min_batch} is more than 2**62")
    if not_before is not None and not_after is not None and not_after <= not_before:
        raise ParameterError(f"--not-after {not_after} must be later than --not-before {not_before}")
    spec = load_spec(spec_path)
    created, token = new_task(
        spec,
        window=parse_duration(window, "--window"),
        time_precision=parse_duration(time_precision, "--time-precision"),
        min_batch=min_batch,
        not_before=not_before,
        not_after=not_after,
        cors_origins=cors_origins,
        shuffle_delta=shuffle_delta,
        name=name,
        description=description,
        retain=None if retain is None else parse_duration(retain, "--retain"),
        candidates=() if candidates_path is None else read_candidates(candidates_path),
    )
    if created.retain is not None:
        check_prunable(created)
    with open_store(store_url) as store:
        store.create_task(created)
        shown = store.url  # never a password
    if as_json:
        click.echo(json.dumps({"task": created.task_id, "token": token}))
        return
    click.echo(f"task {created.task_id}")
    click.echo(f"token {token}")
    click.echo(
        f"created {spec.mechanism} task in {shown}: window {format_duration(created.window)}, "
        f"time precision {format_duration(created.time_precision)}, min batch {created.min_batch:,}, "
        f"retention: {_retention(created)}"
        + (f", {len(created.candidates):,} candidates" if created.candidates else ""),
        err=True,
    )
    click.echo("keep the token now: it cannot be shown again (the store keeps only its hash)", err=True)


@task.command("list")
@_store_option
def list_tasks(store_url):
    """List the store's tasks (oldest first) with their names and report counts."""
    _guarded(_list, store_url=store_url)


def _list(*, store_url) -> None:
    with _open_existing(store_url) as store:
        shown = store.url
        rows = [
            (
                t.task_id,
                _shorten(t.name, 40) or "-",
                t.spec.mechanism,
                format_duration(t.window),
                format_duration(t.time_precision),
                t.min_batch,
                sum(count_reports(store, t).values()),
            )
            for t in store.tasks()
        ]
    if not rows:
        click.echo(f"no tasks in {shown}", err=True)
        return
    click.echo(
        _table(("task", "name", "mechanism", "window", "time precision", "min batch", "reports"), rows)
    )


class _TaskIdCommand(click.Command):
    """``ldp task show``, ``delete`` and ``export``: a whole task id is TASK even when it begins with ``-`` (``--`` works too).

    Ids minted before they were kept from beginning with ``-`` (one in 64)
    would otherwise be read as a cluster of short options, ``-h`` among them.
    An argument that is a well-formed task id (43 base64url characters, never
    an option name) is moved behind ``--`` before click parses the line.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            valued = {  # an id after one of these is that option's value (ldp task export --task ID)
                name
                for param in self.params
                if isinstance(param, click.Option) and not param.is_flag and not param.count
                for name in param.opts
            }
            ids = [
                i
                for i, arg in enumerate(args)
                if arg.startswith("-") and is_task_id(arg) and (i == 0 or args[i - 1] not in valued)
            ]
            if ids:
                args = [arg for i, arg in enumerate(args) if i not in ids] + ["--", *(args[i] for i in ids)]
        return super().parse_args(ctx, args)


@task.command("show", cls=_TaskIdCommand)
@_store_option
@click.argument("task_id", metavar="TASK")
def show(store_url, task_id):
    """Describe TASK: its spec, collection rules and reports per window."""
    _guarded(_show, store_url=store_url, task_id=task_id)


def _show(*, store_url, task_id) -> None:
    store, found = open_task(store_url, task_id)
    with store:
        counts = count_reports(store, found)
        pruned = store.pruned_windows(found.task_id)
    click.echo(_describe(found, counts, store.url, pruned))


@task.command("delete", cls=_TaskIdCommand)
@_store_option
@click.argument("task_id", metavar="TASK")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def delete(store_url, task_id, yes):
    """Delete TASK and every report it received (asks first, unless --yes)."""
    _guarded(_delete, store_url=store_url, task_id=task_id, yes=yes)


def _delete(*, store_url, task_id, yes) -> None:
    store, found = open_task(store_url, task_id, read_only=False)
    with store:
        total = sum(count_reports(store, found).values())
        if not yes and not click.confirm(
            f"delete task {task_id} ({found.spec.mechanism}) and its {total:,} reports from {store.url}?",
            err=True,
        ):
            click.echo("nothing deleted", err=True)
            sys.exit(1)
        store.delete_task(task_id)
    click.echo(f"deleted task {task_id} and its {total:,} reports", err=True)


#: The options ``ldp task update`` refuses, and why (a task's collection rules are fixed when it is made).
_FIXED = {
    "spec": "a task's spec cannot change: its stored reports and its clients' were made for it",
    "window": "a task's window cannot change: its reports are stored, counted and pruned by window",
    "time_precision": "a task's time precision cannot change: its clients truncate their times to it",
    "min_batch": "a task's min batch cannot change: the windows already released were released under it",
    "shuffle_delta": "a task's shuffle delta cannot change: released windows state their central privacy at it",
    "not_before": "a task's start cannot change: its clients and its acceptance of report times rely on it",
    "not_after": "a task's end cannot change: its clients and its acceptance of report times rely on it",
    "cors_origins": "a task's CORS origins cannot change with ldp task update",
}
_FLAG_OF = {"spec": "--spec", "cors_origins": "--cors-origin"}


def _refusing(name: str):
    flag = _FLAG_OF.get(name, "--" + name.replace("_", "-"))
    return click.option(flag, name, default=None, hidden=True, multiple=name == "cors_origins")


@task.command("update", cls=_TaskIdCommand)
@_store_option
@click.argument("task_id", metavar="TASK")
@click.option("--name", default=None, metavar="TEXT", help="A new name (one line; an empty one removes it).")
@click.option(
    "--description", default=None, metavar="TEXT", help="A new description (an empty one removes it)."
)
@click.option(
    "--retain",
    default=None,
    metavar="DURATION",
    help="Delete a window's raw reports this long after the window ends, keeping its aggregate; "
    "'forever' keeps every report from now on.",
)
@click.option(
    "--candidates",
    "candidates_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Bloom RAPPOR: a new file of candidate values, one per line; ldp serve decodes each window against them.",
)
@click.option(
    "--no-candidates", is_flag=True, help="Remove the candidates: the windows show bit estimates only."
)
@click.option("--yes", is_flag=True, help="Do not ask before a shorter retention prunes windows.")
@_refusing("spec")
@_refusing("window")
@_refusing("time_precision")
@_refusing("min_batch")
@_refusing("shuffle_delta")
@_refusing("not_before")
@_refusing("not_after")
@_refusing("cors_origins")
def update(store_url, task_id, name, description, retain, candidates_path, no_candidates, yes, **fixed):
    """Change TASK's name, description, retention or candidates; the rest of a task is fixed when it is created.

    A retention applies from the next retention run (ldp serve runs one
    every --prune-every, ldp task prune one now): the windows that ended
    longer ago than it lose their raw reports, their aggregates kept.

    \b
    Example:
      ldp task update TASK --name "signup funnel" --retain 90d
      ldp task update TASK --retain forever
      ldp task update TASK --candidates urls.txt
    """
    _guarded(
        _update,
        store_url=store_url,
        task_id=task_id,
        name=name,
        description=description,
        retain=retain,
        candidates_path=candidates_path,
        no_candidates=no_candidates,
        yes=yes,
        fixed={key: value for key, value in fixed.items() if value not in (None, ())},
    )


def _change(task: Task, key: str) -> str:
    """One change ``ldp task update`` made, as it reports it."""
    if key == "retain":
        return f"retain {_retention(task)}"
    if key == "candidates":
        return f"candidates {len(task.candidates):,}" if task.candidates else "candidates removed"
    return f"{key} {getattr(task, key)!r}"


def _parse_retain(text: str) -> int | None:
    """``--retain``: a duration, or ``forever`` / ``none`` (no retention)."""
    if text.strip().lower() in ("forever", "none"):
        return None
    return parse_duration(text, "--retain")


def _update(
    *, store_url, task_id, name, description, retain, yes, fixed, candidates_path=None, no_candidates=False
) -> None:
    if fixed:
        key = next(iter(fixed))
        raise ParameterError(f"{_FIXED[key]}; create a new task (ldp task create) instead")
    if candidates_path is not None and no_candidates:
        raise OptionConflict("give --candidates FILE or --no-candidates, not both")
    if (
        name is None
        and description is None
        and retain is None
        and candidates_path is None
        and not no_candidates
    ):
        raise click.UsageError(
            "nothing to change: give --name, --description, --retain, --candidates or --no-candidates"
        )
    store, found = open_task(store_url, task_id, read_only=False)
    with store:
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name.strip()
        if description is not None:
            changes["description"] = description.strip()
        if retain is not None:
            changes["retain"] = _parse_retain(retain)
        if candidates_path is not None or no_candidates:
            changes["candidates"] = () if no_candidates else tuple(read_candidates(candidates_path))
        updated = dataclasses.replace(found, **changes)  # checked as a new task is
        if updated.retain is not None:
            check_prunable(updated)
            before = updated.expired_before(time.time())
            assert before is not None
            raw = store.expired_windows(task_id, before)
            doomed = {start: n for start, n in raw.items() if start not in store.pruned_windows(task_id)}
            if (
                doomed
                and not yes
                and not click.confirm(
                    f"with a retention of {format_duration(updated.retain)}, the next retention run deletes the raw "
                    f"reports of {len(doomed):,} window(s) ({sum(doomed.values()):,} reports; their aggregates are "
                    "kept): go on?",
                    err=True,
                )
            ):
                click.echo("nothing changed", err=True)
                sys.exit(1)
        store.update_task(updated)
    shown = ", ".join(_change(updated, key) for key in changes)
    click.echo(f"updated task {task_id}: {shown}", err=True)


@task.command("prune", cls=_TaskIdCommand)
@_store_option
@click.argument("task_id", metavar="[TASK]", required=False)
def prune_command(store_url, task_id):
    """Run the retention once: the tasks with one (or TASK) lose their expired windows' raw reports.

    Each expired window's aggregate is kept first, so its estimates remain
    (ldp serve, ldp aggregate --store). Idempotent and safe to interrupt: a
    run killed midway is finished by the next. ldp serve runs it every
    --prune-every; this is for cron, or a store no server runs on.

    \b
    Example:
      ldp task prune --store ldp-collector.db
    """
    _guarded(_prune, store_url=store_url, task_id=task_id)


def _prune(*, store_url, task_id) -> None:
    from ldp.collector.retention import describe, prune_task

    if task_id is not None:
        store, found = open_task(store_url, task_id, read_only=False)
        tasks = [found]
    else:
        store = _open_existing(store_url, read_only=False)
        tasks = [t for t in store.tasks() if t.retain is not None]
    with store:
        if not tasks:
            click.echo(
                f"no task of {store.url} has a retention (ldp task update TASK --retain 90d)", err=True
            )
            return
        for chosen in tasks:
            click.echo(describe(prune_task(store, chosen), chosen), err=True)


@task.command("export", cls=_TaskIdCommand)
@_store_option
@click.argument("task_arg", metavar="[TASK]", required=False)
@click.option(
    "--task", "task_id", default=None, metavar="TASK", help="The task whose reports to export (or TASK)."
)
@click.option("--from", "start", type=int, default=None, metavar="UNIX", help="Only reports with t >= this.")
@click.option("--to", "end", type=int, default=None, metavar="UNIX", help="Only reports with t < this.")
@click.option(
    "-o",
    "--output",
    default=None,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Report file (.jsonl, .csv, .parquet; .jsonl.gz, .csv.gz); - for JSON Lines on stdout.",
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="A new directory: a Parquet dataset partitioned by window (DIR/window=START/part-*.parquet, "
    "the spec in DIR/_spec.json), read by ldp aggregate with any engine.",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=EXPORT_CHUNK,
    show_default=True,
    help="Reports read from the store at a time (bounds memory).",
)
def export(store_url, task_arg, task_id, start, end, output, out_dir, chunk_size):
    """Write a task's stored reports to a report file, or a dataset directory, for ldp aggregate (any engine).

    -o FILE writes one report file; --out DIR a Parquet dataset partitioned
    by window (hive-style: DIR/window=START/part-00000.parquet, START the
    window start in Unix seconds), which ldp aggregate and Dask read as a
    directory. Either is written under a temporary name and renamed into
    place only when complete; a file may not be the store itself, and an
    existing DIR is never written into or replaced.

    \b
    Example:
      ldp task export --task TASK -o reports.parquet
      ldp aggregate --spec spec.json reports.parquet --workers 4
      ldp task export TASK --out export
      ldp aggregate --spec export/_spec.json export --engine dask --window 1764028800
    """
    _guarded(
        _export,
        store_url=store_url,
        task_id=_one_task_id(task_arg, task_id),
        start=start,
        end=end,
        output=output,
        out_dir=out_dir,
        chunk=chunk_size,
    )


def _one_task_id(argument: str | None, option: str | None) -> str:
    """The task of ``ldp task export``: TASK or --task (the same one if both are given)."""
    if argument is None and option is None:
        raise click.UsageError("give the task to export: TASK or --task TASK")
    if argument is not None and option is not None and argument != option:
        raise click.UsageError("TASK and --task name different tasks; give one")
    return str(argument if argument is not None else option)


def _export(*, store_url, task_id, start, end, output, out_dir, chunk) -> None:
    selection = StoreSelection(store_url, task_id, start, end)
    if (output is None) == (out_dir is None):
        raise OptionConflict(
            "give -o FILE (a report file) or --out DIR (a dataset partitioned by window), one of them"
        )
    if out_dir is not None:
        _export_dataset(selection, out_dir, chunk)
        return
    if output != "-":
        check_reports_output(output)
        check_outputs_distinct([("--store", sqlite_path(store_url))], [("-o", output)])
    count = export_reports(selection, output, chunk)
    where = "standard output" if output == "-" else output
    click.echo(f"exported {count:,} reports of {selection.describe()} to {where}", err=True)
    _note_pruned(selection)


def _note_pruned(selection: StoreSelection) -> None:
    """Say which windows of the selection were not exported because the retention deleted their raw reports."""
    store, found = open_task(selection.url, selection.task_id)
    with store:
        pruned = {
            start: n
            for start, n in store.pruned_windows(found.task_id).items()
            if (selection.end is None or start < selection.end)
            and (selection.start is None or start + found.window > selection.start)
        }
    if pruned:
        click.echo(
            f"not exported: {sum(pruned.values()):,} reports of {len(pruned):,} window(s) from "
            f"{_when(min(pruned))}, pruned by the task's retention ({_retention(found)}): their raw reports "
            "are deleted; their estimates remain (ldp serve, ldp aggregate --store)",
            err=True,
        )


def _export_dataset(selection: StoreSelection, out_dir: str, chunk: int) -> None:
    from ldp.collector.export_dataset import check_dataset_output, export_dataset

    check_dataset_output(out_dir)
    check_outputs_distinct([("--store", sqlite_path(selection.url))], [("--out", out_dir)])
    store, found = open_task(selection.url, selection.task_id)
    progress = CountProgress("reports")
    try:
        with store:
            counts = export_dataset(
                store,
                found,
                out_dir,
                start=selection.start,
                end=selection.end,
                chunk=chunk,
                progress=progress.update,
            )
    finally:
        progress.done()
    total = sum(counts.values())
    click.echo(
        f"exported {total:,} reports of {selection.describe()} to {out_dir} "
        f"({len(counts):,} window{'s' if len(counts) != 1 else ''}; spec in {out_dir}/_spec.json)",
        err=True,
    )
    _note_pruned(selection)
