"""``ldp task export --out DIR``: a task's stored reports as a Parquet dataset partitioned by window.

The dataset is hive-style, one directory per window start (Unix seconds,
:meth:`ldp.collector.tasks.Task.window_start`)::

    DIR/_spec.json                          the task's spec (ldp aggregate --spec DIR/_spec.json)
    DIR/window=1764028800/part-00000.parquet
    DIR/window=1764115200/part-00000.parquet

Each part file has the columns of a Parquet report file (``v``, ``spec``, the
spec's report fields, ``group``; :mod:`ldp.aggregator.writers`), the same in
every file, so ``ldp aggregate`` with either engine reads the directory
(:mod:`ldp.aggregator.datasets`), and so do Dask and Arrow's dataset readers
(which skip ``_spec.json``; the window is the ``window`` partition key).

The reports are read once, through :meth:`Store.reports` (one query, in
chunks; both stores give them in ``t`` order), and written one window at a
time: memory is bounded by the chunk size whatever the task's size. Should a
store give a window's reports in several runs, each run is a part file of
its own (``part-00001`` ...), so the dataset is right in any order.

The dataset is written into a temporary directory beside ``DIR`` (its name
has the mark :data:`ldp.atomic.TEMP_MARK`, mode 0700) and renamed to ``DIR``
only when complete: a failed or killed export leaves no partial dataset,
and an existing ``DIR`` is never written into or replaced. The export holds
the temporary directory under ``flock`` (:func:`ldp.atomic.temporary_directory`);
one left behind by a killed export is removed by the next export to the same
``DIR`` once it is stale (its writer gone, older than a minute).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from ldp.aggregator.datasets import PARTITION_KEY, SPEC_FILE
from ldp.atomic import temporary_directory
from ldp.batch import ReportBatch
from ldp.collector.accumulate import stored_batches
from ldp.collector.store import Store, StoredReport
from ldp.collector.tasks import Task
from ldp.errors import ParameterError

__all__ = ["PARTITION_KEY", "SPEC_FILE", "check_dataset_output", "export_dataset", "part_name"]


def part_name(window_start: int, part: int) -> str:
    """The path of a part file inside the dataset, e.g. ``window=1764028800/part-00000.parquet``."""
    return f"{PARTITION_KEY}={window_start}/part-{part:05d}.parquet"


def check_dataset_output(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """Refuse a dataset directory before any work: it must not exist, and its parent must be a writable directory."""
    target = Path(path)
    if target.exists() or target.is_symlink():
        raise ParameterError(
            f"{option} {str(path)!r} already exists; give a new directory (an export never writes into "
            "or replaces one)"
        )
    parent = target.parent
    if not parent.is_dir():
        raise ParameterError(f"{option} {str(path)!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ParameterError(f"{option} {str(path)!r}: directory {str(parent)!r} is not writable")
    return target


def _window_runs(
    task: Task, chunks: Iterable[list[StoredReport]]
) -> Iterator[tuple[int, Iterator[list[str]]]]:
    """``(window start, chunks of its report texts)`` for each run of consecutive reports of one window."""

    def pieces() -> Iterator[tuple[int, list[str]]]:
        for reports in chunks:
            if not reports:
                continue
            times = np.fromiter((report.t for report in reports), dtype=np.int64, count=len(reports))
            starts = times - times % task.window  # Task.window_start, for the whole chunk at once
            bounds = [0, *(np.flatnonzero(np.diff(starts)) + 1).tolist(), len(reports)]
            for begin, stop in itertools.pairwise(bounds):
                yield int(starts[begin]), [report.report for report in reports[begin:stop]]

    for start, run in itertools.groupby(pieces(), key=lambda piece: piece[0]):
        yield start, (texts for _, texts in run)


def _with_group(batches: Iterable[ReportBatch]) -> Iterator[ReportBatch]:
    """Every batch with a ``groups`` column (None where a report has no key): one schema in every part file."""
    for batch in batches:
        if batch.groups is None:
            batch = dataclasses.replace(batch, groups=np.full(len(batch), None, dtype=object))
        yield batch


def export_dataset(
    store: Store,
    task: Task,
    out: str | os.PathLike[str],
    *,
    start: int | None = None,
    end: int | None = None,
    chunk: int = 50_000,
    progress: Callable[[int], None] | None = None,
) -> dict[int, int]:
    """Write ``task``'s reports with ``start <= t < end`` to the dataset directory ``out``.

    Parameters
    ----------
    store : Store
        The store holding the task (read through :meth:`Store.reports` only).
    task : Task
        The task; its spec is written to ``out/_spec.json``.
    out : path
        The dataset directory; it must not exist (:func:`check_dataset_output`).
    start, end : int, optional
        The range of report times (Unix seconds); None: unbounded.
    chunk : int
        Reports read from the store at a time (bounds memory).
    progress : callable, optional
        Called with the running count of reports written.

    Returns
    -------
    dict of int to int
        Reports written per window start.

    Raises
    ------
    ParameterError
        ``out`` exists or cannot be created, or a file cannot be written.
    """
    from ldp.aggregator.writers import write_reports

    target = check_dataset_output(out)
    report = progress or (lambda count: None)
    counts: dict[int, int] = {}
    parts: dict[int, int] = {}
    written = 0

    def counted(batches: Iterable[ReportBatch]) -> Iterator[ReportBatch]:
        nonlocal written
        for batch in batches:
            written += len(batch)
            report(written)
            yield batch

    with temporary_directory(target.parent, target.name) as temporary:
        (temporary / SPEC_FILE).write_text(task.spec_json, encoding="utf-8")
        chunks = store.reports(task.task_id, start, end, chunk)
        for window, texts in _window_runs(task, chunks):
            part = parts.get(window, 0)
            parts[window] = part + 1
            path = temporary / part_name(window, part)
            path.parent.mkdir(exist_ok=True)
            batches = counted(_with_group(stored_batches(task.spec, texts)))
            counts[window] = counts.get(window, 0) + write_reports(batches, path, task.spec)
        if target.exists() or target.is_symlink():  # made while this export ran
            raise ParameterError(
                f"--out {str(out)!r} appeared while exporting; the export was not renamed to it"
            )
        os.rename(temporary, target)
    return counts
