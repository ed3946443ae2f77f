"""Google RAPPOR's file formats: params, counts and map (interoperability).

=============  ================================================================
``params.csv`` header ``k,h,m,p,q,f`` and one row (read/written by
               :mod:`ldp.google_params`; :func:`read_params` returns spec
               keyword arguments)
``counts.csv`` no header; one row per cohort: the number of reports, then the
               number of ones of each bit, bit 0 first (k + 1 columns)
``map.csv``    no header; one row per candidate: the candidate string, then
               for each cohort j = 0..m−1 its h Bloom positions as 1-based
               indices ``j·k + bit + 1`` (h·m columns; a position repeats when
               two hashes collide). With ``hash="md5"`` these are exactly the
               indices of Google's ``hash_candidates.py``.
=============  ================================================================

These let a deployment move between ``ldp`` and Google's tools and compare
decodes on the same counts. :func:`counts_from_reports` sums ``ldp`` reports
into the counts format, reading them (any format ``ldp aggregate`` reads)
with :func:`ldp.aggregator.io.read_reports`; bad reports go to a
:class:`~ldp.aggregator.rejects.RejectsWriter`, or without one the first is an
error naming its file and line.

References
----------
.. [1] google/rappor: analysis/R/read_input.R (ReadParameterFile,
   ReadCountsFile, ReadMapFile), bin/hash_candidates.py, tests/sum_bits.py,
   client/python/rappor.py (get_bloom_bits).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse

from ldp.aggregator.accumulators import RapporAccumulator, make_aggregator
from ldp.aggregator.io import CHUNK_ROWS, read_reports
from ldp.errors import InputError, ParameterError, SpecError
from ldp.google_params import google_params_text, read_google_params
from ldp.specs.rappor import Rappor

if TYPE_CHECKING:
    from ldp.aggregator.rejects import RejectsWriter

__all__ = [
    "GoogleMap",
    "counts_from_reports",
    "counts_text",
    "map_rows",
    "read_candidates",
    "read_counts",
    "read_map",
    "read_params",
    "write_counts",
    "write_map",
    "write_params",
]


def _bloom_spec(spec: Any) -> Rappor:
    if not isinstance(spec, Rappor) or spec.encoding != "bloom":
        raise SpecError("Google RAPPOR formats describe Bloom-filter RAPPOR specs only")
    return spec


def _read_text(path: str | Path, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {str(path)!r} is not UTF-8 text") from None


def _write_text(path: str | Path, text: str, what: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ParameterError(f"cannot write {what} {str(path)!r}: {exc.strerror or exc}") from None


# -- params ------------------------------------------------------------------


def read_params(path: str | Path, *, hash: str = "md5") -> dict[str, Any]:
    """Keyword arguments of :class:`ldp.Rappor` from Google's params.csv.

    ``Rappor(**read_params(path))`` is the spec (MD5 hashing, as Google's
    client, unless ``hash`` says otherwise).
    """
    spec = read_google_params(path, hash=hash)
    return {
        "num_bits": spec.num_bits,
        "num_hashes": spec.num_hashes,
        "num_cohorts": spec.num_cohorts,
        "p": spec.p,
        "q": spec.q,
        "f": spec.f,
        "hash": spec.hash,
    }


def write_params(spec: Rappor, path: str | Path) -> None:
    """Write ``spec`` as Google's params.csv (``k,h,m,p,q,f``)."""
    _write_text(path, google_params_text(_bloom_spec(spec)), "Google params file")


# -- counts ------------------------------------------------------------------


def counts_text(cohort_counts: Any, bit_counts: Any) -> str:
    """The counts.csv text: per cohort, ``N_j,c_j0,...,c_j(k−1)``."""
    n = np.asarray(cohort_counts, dtype=np.int64)
    c = np.asarray(bit_counts, dtype=np.int64)
    if c.ndim != 2 or n.shape != (c.shape[0],):
        raise InputError(f"counts need cohort_counts (m,) and bit_counts (m, k), got {n.shape} and {c.shape}")
    rows = np.column_stack([n, c])
    return "".join(",".join(map(str, row)) + "\n" for row in rows.tolist())


def write_counts(path: str | Path, cohort_counts: Any, bit_counts: Any) -> None:
    """Write Google's counts.csv (no header, one row per cohort)."""
    _write_text(path, counts_text(cohort_counts, bit_counts), "Google counts file")


def read_counts(path: str | Path, spec: Rappor) -> tuple[np.ndarray, np.ndarray]:
    """``(cohort_counts (m,), bit_counts (m, k))`` from Google's counts.csv.

    Raises
    ------
    ParameterError
        Wrong number of rows (m) or columns (k + 1), non-integer or negative
        counts, or a bit count above its cohort's number of reports.
    """
    spec = _bloom_spec(spec)
    text = _read_text(path, "Google counts file")
    rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    m, k = spec.num_cohorts, spec.num_bits
    if len(rows) != m:
        raise InputError(
            f"Google counts file {str(path)!r} has {len(rows)} rows, expected m = {m} (one per cohort)"
        )
    table = np.zeros((m, k + 1), dtype=np.int64)
    for j, row in enumerate(rows):
        if len(row) != k + 1:
            raise InputError(
                f"Google counts file {str(path)!r} row {j + 1} has {len(row)} columns, expected k + 1 = {k + 1}"
            )
        try:
            values = [_count(cell) for cell in row]
        except ValueError:
            raise InputError(
                f"Google counts file {str(path)!r} row {j + 1} holds a non-integer: {row}"
            ) from None
        table[j] = values
    if (table < 0).any():
        raise InputError(f"Google counts file {str(path)!r} has negative counts")
    over = table[:, 1:] > table[:, :1]
    if over.any():
        j, i = map(int, np.argwhere(over)[0])
        raise InputError(
            f"Google counts file {str(path)!r} row {j + 1}: bit {i} count {table[j, i + 1]} exceeds "
            f"the cohort's {table[j, 0]} reports"
        )
    return table[:, 0].copy(), table[:, 1:].copy()


def _count(cell: str) -> int:
    text = cell.strip()
    try:
        return int(text)
    except ValueError:
        value = float(text)  # R may write 12345 as "12345" or "1.2345e+04"
        if not value.is_integer():
            raise
        return int(value)


# -- map ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GoogleMap:
    """A map file: candidate strings and their 1-based Bloom indices (M, h·m)."""

    candidates: tuple[str, ...]
    indices: np.ndarray
    num_rows: int

    def design_matrix(self) -> scipy.sparse.csc_matrix:
        """The (m·k, M) 0/1 matrix of :func:`ldp.aggregator.rappor.decode.design_matrix`."""
        num = len(self.candidates)
        cols = np.repeat(np.arange(num), self.indices.shape[1])
        x = scipy.sparse.csc_matrix(
            (np.ones(cols.size), (self.indices.ravel() - 1, cols)), shape=(self.num_rows, num)
        )
        x.sum_duplicates()
        x.data[:] = 1.0
        return x


def map_rows(spec: Rappor, candidates: Iterable[Any]) -> Iterable[list]:
    """Rows of the map: candidate, then ``j·k + bit + 1`` for each cohort j and hash."""
    spec = _bloom_spec(spec)
    k = spec.num_bits
    for value in candidates:
        row: list = [str(value)]
        for j in range(spec.num_cohorts):
            row.extend(j * k + bit + 1 for bit in spec.bit_positions(value, j))
        yield row


def write_map(path: str | Path, spec: Rappor, candidates: Iterable[Any]) -> None:
    """Write Google's map.csv for ``candidates`` (CSV-quoted where needed)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in map_rows(spec, candidates):
        writer.writerow(row)
    _write_text(path, out.getvalue(), "Google map file")


def read_map(path: str | Path, spec: Rappor) -> GoogleMap:
    """Read Google's map.csv. As Google's reader: duplicated strings keep their first row.

    Raises
    ------
    ParameterError
        A row without h·m indices or with an index outside 1..m·k.
    """
    spec = _bloom_spec(spec)
    text = _read_text(path, "Google map file")
    width = spec.num_hashes * spec.num_cohorts
    limit = spec.num_cohorts * spec.num_bits
    names: list[str] = []
    seen: set[str] = set()
    rows: list[list[int]] = []
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row:
            continue
        if len(row) - 1 != width:
            raise InputError(
                f"Google map file {str(path)!r} line {number} has {len(row) - 1} indices, expected h·m = {width}"
            )
        try:
            indices = [int(cell) for cell in row[1:]]
        except ValueError:
            raise InputError(
                f"Google map file {str(path)!r} line {number} holds a non-integer index"
            ) from None
        if min(indices) < 1 or max(indices) > limit:
            raise InputError(f"Google map file {str(path)!r} line {number} has an index outside 1..{limit}")
        if row[0] in seen:
            continue
        seen.add(row[0])
        names.append(row[0])
        rows.append(indices)
    array = np.asarray(rows, dtype=np.int64).reshape(len(rows), width)
    return GoogleMap(candidates=tuple(names), indices=array, num_rows=limit)


def read_candidates(path: str | Path) -> list[str]:
    """Candidate values from a text file, one per line (blank lines skipped, surrounding spaces kept off)."""
    text = _read_text(path, "candidates file")
    return [line.strip() for line in text.splitlines() if line.strip()]


# -- counts from reports -----------------------------------------------------


def counts_from_reports(
    spec: Rappor,
    paths: Sequence[str | Path],
    *,
    rejects: RejectsWriter | None = None,
    chunk_size: int = CHUNK_ROWS,
) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``ldp`` RAPPOR reports into ``(cohort_counts, bit_counts)``.

    The reports are read by :func:`ldp.aggregator.io.read_reports`, the
    reader of ``ldp aggregate``: JSON Lines, CSV or Parquet by extension,
    ``.jsonl.gz``/``.csv.gz``, ``-`` for JSON Lines on standard input, in
    bounded-memory chunks.

    Parameters
    ----------
    spec : Rappor
        A Bloom-filter RAPPOR spec.
    paths : sequence of str or Path
        Report files.
    rejects : RejectsWriter, optional
        Where bad reports go (each with its file, line, reason and raw text;
        they are not counted). Without one, the first bad report is an error.
    chunk_size : int
        Reports read at a time.

    Returns
    -------
    cohort_counts : numpy.ndarray of int64, shape (m,)
        Number of valid reports of each cohort.
    bit_counts : numpy.ndarray of int64, shape (m, k)
        Number of ones of each bit, per cohort.

    Raises
    ------
    ParameterError
        A file is missing, has an unknown extension or cannot be read; or,
        without ``rejects``, a report is bad (naming its file, line and
        reason).
    """
    spec = _bloom_spec(spec)
    accumulator = make_aggregator(spec)
    # RAPPOR's registered aggregator is a RapporAccumulator; checked because the registry is typed loosely
    if not isinstance(accumulator, RapporAccumulator):  # pragma: no cover
        raise SpecError(f"counting needs RAPPOR's accumulator, got {type(accumulator).__name__}")
    for chunk in read_reports(paths, spec, chunk_size=chunk_size):
        if chunk.rejects and rejects is None:
            first = chunk.rejects[0]
            raise ParameterError(f"{first.file}:{first.line}: bad report ({first.reason}): {first.detail}")
        if len(chunk.batch):
            accumulator.add_batch(chunk.batch)
        if rejects is not None:
            rejects.write(chunk.rejects)
    return accumulator.cohort_counts.astype(np.int64), accumulator.bit_counts.astype(np.int64)
