"""Every report of a set of files in one accumulator, the bad ones written to a rejects file.

:func:`accumulate_files` is what ``ldp aggregate`` and ``ldp google-rappor
counts`` run before they estimate or write counts: one engine
(:func:`ldp.aggregator.engines.aggregate_files`), one rejects file, one
summary. It prints nothing; the commands print :attr:`Accumulated.summary`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ldp.aggregator.accumulators import Accumulator
from ldp.aggregator.io import CHUNK_ROWS
from ldp.aggregator.rejects import Reject
from ldp.errors import InputError

__all__ = ["Accumulated", "accumulate_files"]


@dataclasses.dataclass(frozen=True)
class Accumulated:
    """What reading a set of report files gave.

    Parameters
    ----------
    accumulator : Accumulator
        The merged counts of every valid report.
    valid : int
        Number of valid reports.
    files : int
        Number of files read.
    reasons : tuple of (str, int)
        Rejects per reason code, most frequent first.
    examples : tuple of Reject
        The first few rejects.
    rejects_path : str, optional
        Where every reject was written (None: nowhere).
    """

    accumulator: Accumulator
    valid: int
    files: int
    reasons: tuple[tuple[str, int], ...] = ()
    examples: tuple[Reject, ...] = ()
    rejects_path: str | None = None

    @property
    def rejected(self) -> int:
        """Number of rejected reports."""
        return sum(count for _, count in self.reasons)

    @property
    def summary(self) -> str:
        """One line: reports read, valid, rejected (by reason) and where the rejects went."""
        files = f"{self.files} file{'s' if self.files != 1 else ''}"
        rejected = self.rejected
        text = f"{self.valid + rejected:,} reports read from {files}: {self.valid:,} valid, {rejected:,} rejected"
        if rejected:
            text += " (" + ", ".join(f"{reason} {count:,}" for reason, count in self.reasons) + ")"
            if self.rejects_path is not None:
                text += f"; rejects written to {self.rejects_path}"
        return text


def accumulate_files(
    spec,
    paths: Sequence[str],
    *,
    rejects_path: str | None = None,
    chunk_size: int = CHUNK_ROWS,
    engine: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Accumulated:
    """Read every report of ``paths`` with the chosen engine; write the rejected ones to ``rejects_path``.

    Parameters
    ----------
    spec : Spec
        The spec the reports were encoded with.
    paths : sequence of str
        Report files (see :func:`~ldp.aggregator.engines.aggregate_files`).
    rejects_path : str, optional
        Rejects file (.jsonl or .csv); None keeps only the counts and a few examples.
    chunk_size, engine, workers, scheduler, progress
        As for :func:`~ldp.aggregator.engines.aggregate_files`.

    Raises
    ------
    ParameterError
        Bad engine options, unreadable files, or no valid report at all
        (the message ends with the summary).
    """
    from ldp.aggregator.engines import aggregate_files
    from ldp.aggregator.rejects import RejectsWriter

    with RejectsWriter(rejects_path) as rejects:
        accumulator, valid = aggregate_files(
            spec,
            paths,
            rejects,
            chunk_size=chunk_size,
            engine=engine,
            workers=workers,
            scheduler=scheduler,
            progress=progress,
        )
    result = Accumulated(
        accumulator=accumulator,
        valid=valid,
        files=len(paths),
        reasons=tuple(rejects.counts.most_common()),
        examples=tuple(rejects.examples),
        rejects_path=None if rejects.path is None else str(rejects.path),
    )
    if valid == 0:
        raise InputError(f"nothing could be read: {result.summary}")
    return result
