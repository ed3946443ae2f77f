"""File extensions: the one place a file name is split into its format suffix and gzip flag.

Readers and writers choose a format from the extension (``reports.jsonl.gz``
is gzip-compressed JSON Lines); each keeps its own table of allowed formats
and its own message, and all of them split names here.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["split_extension"]


def split_extension(path: str | os.PathLike) -> tuple[tuple[str, ...], bool]:
    """(lower-case suffixes without a final ``.gz``, whether it ended in ``.gz``).

    Examples
    --------
    >>> split_extension("Reports.JSONL.gz")
    (('.jsonl',), True)
    >>> split_extension("part.1.csv")
    (('.1', '.csv'), False)
    >>> split_extension("README")
    ((), False)
    """
    suffixes = tuple(s.lower() for s in Path(path).suffixes)
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    return (suffixes[:-1] if gz else suffixes), gz
