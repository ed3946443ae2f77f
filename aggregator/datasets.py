"""Report datasets: a directory of Parquet report files, such as ``ldp task export --out DIR`` writes.

A directory given where report files are expected stands for the Parquet
files under it (``.parquet``, ``.pq``, at any depth, in path order), so a
hive-style dataset partitioned by window::

    DIR/window=1764028800/part-00000.parquet
    DIR/window=1764115200/part-00000.parquet

is read like the list of its files, by every engine. Names beginning with
``_`` or ``.`` (``_spec.json``, ``_SUCCESS``, temporary files) are skipped,
as Arrow's and Dask's dataset readers skip them. ``windows`` keeps only the
files under a ``window=W`` directory for one of the given window starts
(``ldp aggregate --window W``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ldp.errors import InputError, ParameterError

__all__ = [
    "DATASET_SUFFIXES",
    "PARTITION_KEY",
    "SPEC_FILE",
    "dataset_files",
    "dataset_windows",
    "expand_datasets",
]

#: The report files a dataset directory holds.
DATASET_SUFFIXES = (".parquet", ".pq")
#: The hive partition key of a window start.
PARTITION_KEY = "window"
#: The spec file at the root of an exported dataset (``ldp task export --out``).
SPEC_FILE = "_spec.json"


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _window_of(relative: Path) -> int | None:
    """The window start of a file's ``window=W`` directory (None when it has none)."""
    for part in relative.parts[:-1]:
        key, sep, value = part.partition("=")
        if sep and key == PARTITION_KEY:
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _walk(directory: Path) -> list[tuple[Path, int | None]]:
    """Every visible Parquet file under ``directory`` (path order) with its window start."""
    found = []
    for root, dirs, files in os.walk(directory, onerror=None):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        for name in sorted(files):
            if not _hidden(name) and name.lower().endswith(DATASET_SUFFIXES):
                path = Path(root) / name
                found.append((path, _window_of(path.relative_to(directory))))
    return sorted(found, key=lambda item: (item[1] is not None, item[1] or 0, str(item[0])))


def dataset_windows(directory: str | os.PathLike[str]) -> list[int]:
    """The window starts of a dataset directory's ``window=W`` partitions, ascending."""
    return sorted({window for _, window in _walk(Path(directory)) if window is not None})


def dataset_files(directory: str | os.PathLike[str], windows: Sequence[int] | None = None) -> list[str]:
    """The Parquet report files of a dataset directory (those of ``windows`` only, when given).

    Files are ordered by window start, then path, so rejects and results are
    the same on every run.

    Raises
    ------
    InputError
        The directory holds no Parquet report file (and is not an export of
        no reports, which has its :data:`SPEC_FILE` only), or none of ``windows``.
    """
    path = Path(directory)
    found = _walk(path)
    if not found and not (path / SPEC_FILE).is_file():  # an export of no reports has its spec only
        raise InputError(
            f"report directory {str(directory)!r} holds no Parquet report files (.parquet, .pq); "
            "expected a dataset such as ldp task export --out writes"
        )
    if windows is None:
        return [str(file) for file, _ in found]
    wanted = set(windows)
    missing = sorted(wanted - {window for _, window in found})
    if missing:
        present = sorted({window for _, window in found if window is not None})
        shown = ", ".join(map(str, present[:10])) + (", ..." if len(present) > 10 else "")
        raise InputError(
            f"report directory {str(directory)!r} has no partition {PARTITION_KEY}={missing[0]}; "
            f"its windows: {shown or 'none (it is not partitioned by window)'}"
        )
    return [str(file) for file, window in found if window in wanted]


def expand_datasets(
    paths: Iterable[str | os.PathLike[str]], windows: Sequence[int] | None = None
) -> list[str]:
    """``paths`` with each directory replaced by its report files (:func:`dataset_files`).

    With ``windows``, every path must be a directory (a report file has no
    windows) and only its partitions of those windows are read.

    Raises
    ------
    ParameterError
        ``windows`` with a path that is not a directory.
    InputError
        A directory without (selected) report files.
    """
    expanded: list[str] = []
    for path in paths:
        if str(path) != "-" and Path(path).is_dir():
            expanded.extend(dataset_files(path, windows))
        elif windows is not None:
            raise ParameterError(
                f"--window selects partitions of report directories (ldp task export --out DIR); "
                f"{str(path)!r} is not a directory"
            )
        else:
            expanded.append(str(path))
    return expanded
