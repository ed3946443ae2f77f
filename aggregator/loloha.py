"""LOLOHA's accumulator: reports per (pool function, bucket), decoded in O(S·d + n) (docs/longitudinal/loloha.md).

A report ⟨j, y⟩ supports every value v with H_j(v) = y, H_j the j-th
function of the spec's public pool. Since the users' functions come from a
pool of S, the accumulator keeps N[j, y], the number of reports of each
(pool function, bucket): adding a batch is one ``bincount`` (O(n)), merging
adds tables, and the support count of v is

    C_v = Σ_j N[j, H_j(v)],

computed over the nonzero cells of N only (at most min(n, S·g) of them):
each cell ⟨j, y⟩ with weight N[j, y] supports v when H_j(v) falls in bucket
y's residues, and walking v = 0, 1, 2, … advances every cell's residue by
its multiplier a_j, as :mod:`ldp.aggregator.olh` does per report. So
decoding hashes every value once per occupied cell instead of once per
report: at most OLH's work, and S·g/n of it when n ≫ S·g.

The estimate is the pure frequency oracle's with p* = A and
q* = c·A + (1 − c)·B (:class:`ldp.specs.loloha.LOLOHA`), with its
standard errors and intervals.

References
----------
.. [1] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs. EDBT 2023.
.. [2] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.4.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self

import numpy as np

from ldp.aggregator.accumulators import FrequencyAccumulator, check_int_column, require_field
from ldp.aggregator.olh import DEFAULT_CHUNK, bucket_bounds
from ldp.batch import ReportBatch
from ldp.errors import InputError, ParameterError, ReportError
from ldp.hashing import LH_PRIME
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.loloha import LOLOHA

__all__ = ["LolohaAccumulator", "pool_support_counts"]

_P64 = np.uint64(LH_PRIME)
_P32 = np.uint32(LH_PRIME)


def _count_cells(a: np.ndarray, w: np.ndarray, width: np.ndarray, weight: np.ndarray, d: int) -> np.ndarray:
    """Weighted support counts of a chunk of cells: w holds (h(0) − lo_y) mod P and is advanced in place."""
    counts = np.empty(d, dtype=np.float64)
    tmp = np.empty_like(w)
    hit = np.empty(w.shape, dtype=np.float64)
    for v in range(d):
        np.less(w, width, out=hit)  # 1.0 where the cell's bucket holds v
        counts[v] = hit @ weight  # exact: integer sums below 2^53
        np.add(w, a, out=w)
        np.subtract(w, _P32, out=tmp)
        np.minimum(w, tmp, out=w)
    return counts


def pool_support_counts(
    table: np.ndarray,
    pool: np.ndarray,
    d: int,
    *,
    threads: int | None = 1,
    chunk: int = DEFAULT_CHUNK,
) -> np.ndarray:
    """C_v = Σ_j N[j, H_j(v)] for v = 0…d−1, from the table N of reports per (pool function, bucket).

    Parameters
    ----------
    table : array of int, shape (S, g)
        N[j, y], reports with pool index j and bucket y.
    pool : array of uint64, shape (S,)
        The pool's hash seeds (:func:`ldp.specs.loloha.hash_pool`).
    d : int
        Domain size.
    threads : int or None, default 1
        Worker threads over chunks of occupied cells; ``None`` uses every CPU.
    chunk : int
        Cells per chunk (cache-sized).

    Returns
    -------
    numpy.ndarray of int64, shape (d,)
    """
    table = np.asarray(table)
    if table.ndim != 2 or table.shape[0] != len(pool) or table.shape[1] < 2:
        raise ParameterError(f"table must have shape ({len(pool)}, g >= 2), got {table.shape}")
    if chunk < 1:
        raise ParameterError(f"chunk must be positive, got {chunk}")
    g = table.shape[1]
    flat = table.reshape(-1)
    cells = np.flatnonzero(flat)
    if cells.size == 0:
        return np.zeros(d, dtype=np.int64)
    seeds = np.asarray(pool, dtype=np.uint64)[cells // g]
    a_all = (seeds // _P64 + np.uint64(1)).astype(np.uint32)
    b_all = (seeds % _P64).astype(np.uint32)
    lo_all, width_all = bucket_bounds(cells % g, g)
    weights_all = flat[cells].astype(np.float64)
    starts = range(0, cells.size, chunk)

    def work(start: int) -> np.ndarray:
        stop = min(start + chunk, cells.size)
        w = b_all[start:stop] - lo_all[start:stop]  # (b − lo) mod P: add P back where it wrapped
        np.minimum(w, w + _P32, out=w)
        return _count_cells(a_all[start:stop].copy(), w, width_all[start:stop], weights_all[start:stop], d)

    workers = (os.cpu_count() or 1) if threads is None else int(threads)
    if workers < 1:
        raise ParameterError(f"threads must be at least 1, got {threads}")
    total = np.zeros(d, dtype=np.float64)
    if workers == 1 or len(starts) == 1:
        for start in starts:
            total += work(start)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool_threads:
            for counts in pool_threads.map(work, starts):
                total += counts
    return np.rint(total).astype(np.int64)


class LolohaAccumulator(FrequencyAccumulator):
    """LOLOHA reports as counts per (pool function, bucket); support counts decoded when asked for.

    Parameters
    ----------
    spec : LOLOHA
    threads : int or None, default 1
        Threads used to decode (None: all CPUs).

    Examples
    --------
    >>> from ldp.aggregator import make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> from ldp.specs.loloha import LOLOHA
    >>> spec = LOLOHA(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> type(aggregator).__name__, aggregator.n, aggregator.table.sum()
    ('LolohaAccumulator', 3, np.int64(3))
    """

    _state_fields = ("table", "n")

    @classmethod
    def for_spec(cls, spec: Any, threads: int | None = 1) -> Self:
        """An empty accumulator decoding with ``threads`` threads."""
        return cls(spec, threads=threads)

    def __init__(self, spec: LOLOHA, *, threads: int | None = 1):
        super().__init__(spec)
        self.threads = threads
        self._table = np.zeros(spec.pool_size * spec.g, dtype=np.int64)
        self._decoded: np.ndarray | None = None

    @classmethod
    def from_table(cls, spec: LOLOHA, table: Any) -> Self:
        """Rebuild an accumulator from its table N[j, y] of reports per (pool function, bucket) (validated)."""
        acc = cls(spec)
        counts = np.asarray(table)
        shape = (spec.pool_size, spec.g)
        if counts.shape != shape:
            raise InputError(f"table must have shape {shape}, got {counts.shape}")
        if counts.dtype.kind not in "iu" or (counts.size and counts.min() < 0):
            raise InputError("table must hold non-negative integers")
        acc._table = counts.astype(np.int64).reshape(-1)
        acc._n = int(acc._table.sum())
        return acc

    @classmethod
    def from_counts(cls, spec: Any, support_counts: Any, n: int) -> Self:
        """Not available: support counts lose the table LOLOHA decodes from (use :meth:`from_table`)."""
        raise ParameterError(
            "a LOLOHA accumulator is rebuilt from its table of reports per (pool function, bucket): "
            "use LolohaAccumulator.from_table"
        )

    @property
    def table(self) -> np.ndarray:
        """N[j, y]: reports per pool index j and bucket y (read-only view, shape (S, g))."""
        view = self._table.reshape(self.spec.pool_size, self.spec.g).view()
        view.flags.writeable = False
        return view

    @property
    def support_counts(self) -> np.ndarray:
        """C_v, decoded from the table (cached until more reports arrive)."""
        if self._decoded is None:
            self._decoded = pool_support_counts(
                self.table, self.spec.pool, self.spec.domain_size, threads=self.threads
            )
        view = self._decoded.view()
        view.flags.writeable = False
        return view

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        seed = require_field(checked.seed, "seed")
        self._table[seed * self.spec.g + checked.value] += 1
        self._n += 1
        self._decoded = None

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        if batch.seeds is None:
            raise ReportError("batch has no 'seeds' column")
        seeds = check_int_column(batch.seeds, "seeds", self.spec.pool_size).astype(np.int64)
        buckets = check_int_column(batch.values, "values", self.spec.g).astype(np.int64)
        if seeds.shape != buckets.shape:
            raise ReportError(f"batch seeds and values differ in length: {seeds.shape} and {buckets.shape}")
        self._table += np.bincount(seeds * self.spec.g + buckets, minlength=self._table.size)
        self._n += int(buckets.shape[0])
        self._decoded = None

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both: the tables added."""
        self._check_mergeable(other)
        merged = type(self).from_table(self.spec, self.table + other.table)
        merged.threads = self.threads
        return merged
