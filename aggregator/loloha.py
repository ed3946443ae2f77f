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

The estimate inverts the spec's own pool's collision fractions
(:meth:`ldp.specs.loloha.LOLOHA.unbiased_frequencies`: unbiased for that
pool, not only over the draw of a pool); its standard errors and intervals
are the pure frequency oracle's with p* = A and q* = c·A + (1 − c)·B.

References
----------
.. [1] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs. EDBT 2023.
.. [2] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.4.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import FrequencyAccumulator, check_int_column, require_field, state_value
from ldp.aggregator.estimates import oracle_estimates
from ldp.aggregator.olh import DEFAULT_CHUNK, bucket_bounds
from ldp.batch import ReportBatch
from ldp.errors import EstimateError, InputError, ParameterError, ReportError
from ldp.hashing import LH_PRIME
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.loloha import LOLOHA

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LolohaAccumulator", "cell_support_counts", "pool_support_counts"]

_P64 = np.uint64(LH_PRIME)
_P32 = np.uint32(LH_PRIME)


#: At most this many distinct weights are counted group by group (count_nonzero); more: one weighted sum.
_GROUPED_WEIGHTS = 16


def _count_cells(
    a: np.ndarray, w: np.ndarray, width: np.ndarray, weight: np.ndarray, d: int, grouped: bool
) -> np.ndarray:
    """Weighted support counts of a chunk of cells: w holds (h(0) − lo_y) mod P and is advanced in place.

    ``grouped``: the cells are sorted by weight, with few distinct weights
    (the usual case: most cells hold one or two reports), and each weight's
    contiguous run is counted with ``count_nonzero`` on the boolean hits, as
    OLH counts reports; otherwise the hits are summed with their weights.
    """
    counts = np.zeros(d, dtype=np.int64)
    tmp = np.empty_like(w)
    hit = np.empty(w.shape, dtype=bool if grouped else np.float64)
    weights = weight if grouped else weight.astype(np.float64)
    runs: list[tuple[int, int, int]] = []
    if grouped:
        levels = np.flatnonzero(np.bincount(weight))
        bounds = [*np.searchsorted(weight, levels).tolist(), weight.size]
        runs = [(int(level), bounds[i], bounds[i + 1]) for i, level in enumerate(levels.tolist())]
    single = runs == [(1, 0, weight.size)]  # one report per cell: OLH's count
    for v in range(d):
        np.less(w, width, out=hit)  # where the cell's bucket holds v
        if single:
            counts[v] = np.count_nonzero(hit)
        elif grouped:
            counts[v] = sum(level * np.count_nonzero(hit[lo:hi]) for level, lo, hi in runs)
        else:
            counts[v] = round(float(hit @ weights))  # exact: integer sums below 2^53
        np.add(w, a, out=w)
        np.subtract(w, _P32, out=tmp)
        np.minimum(w, tmp, out=w)
    return counts


def _pool_coefficients(pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of every pool function as uint32 (h(v) = (a·v + b) mod P), cached per pool array."""
    key = id(pool)
    cached = _COEFFICIENTS.get(key)
    if cached is not None and cached[0] is pool:
        return cached[1], cached[2]
    seeds = np.asarray(pool, dtype=np.uint64)
    a = (seeds // _P64 + np.uint64(1)).astype(np.uint32)
    b = (seeds % _P64).astype(np.uint32)
    if len(_COEFFICIENTS) >= 8:
        _COEFFICIENTS.clear()
    _COEFFICIENTS[key] = (pool, a, b)
    return a, b


#: Pool arrays (read-only, one per spec) and their coefficients, by id (the array is kept, so its id stays its own).
_COEFFICIENTS: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def cell_support_counts(
    indices: np.ndarray,
    buckets: np.ndarray,
    weights: np.ndarray | None,
    pool: np.ndarray,
    g: int,
    d: int,
    *,
    threads: int | None = 1,
    chunk: int = DEFAULT_CHUNK,
) -> np.ndarray:
    """C_v = Σ over cells ⟨j, y⟩ of their weight where H_j(v) = y, for v = 0…d−1.

    Parameters
    ----------
    indices, buckets : array of int, shape (m,)
        The cells: pool index j and bucket y of each (a cell may repeat).
    weights : array of int, shape (m,), or None
        Reports in each cell (positive); None: one each (every report its own cell).
    pool : array of uint64, shape (S,)
        The pool's hash seeds (:func:`ldp.specs.loloha.hash_pool`).
    g, d : int
        Buckets and domain size.
    threads : int or None, default 1
        Worker threads over chunks of cells; ``None`` uses every CPU.
    chunk : int
        Cells per chunk (cache-sized).

    Returns
    -------
    numpy.ndarray of int64, shape (d,)
    """
    if chunk < 1:
        raise ParameterError(f"chunk must be positive, got {chunk}")
    j = np.asarray(indices, dtype=np.int64)
    y = np.asarray(buckets, dtype=np.int64)
    if j.size == 0:
        return np.zeros(d, dtype=np.int64)
    if weights is None:
        weights, grouped = np.ones(j.size, dtype=np.int64), True
    else:
        weights = np.asarray(weights, dtype=np.int64)
        levels = np.flatnonzero(np.bincount(weights))
        grouped = levels.size <= _GROUPED_WEIGHTS
        if grouped and levels.size > 1:  # cells in runs of equal weight (a counting sort: few levels)
            order = np.concatenate([np.flatnonzero(weights == level) for level in levels.tolist()])
            j, y, weights = j[order], y[order], weights[order]
    a_pool, b_pool = _pool_coefficients(pool)
    a_all, b_all = a_pool[j], b_pool[j]
    lo_y, width_y = bucket_bounds(np.arange(g), g)  # per bucket, then gathered per cell
    lo_all, width_all = lo_y[y], width_y[y]
    size = j.size
    starts = range(0, size, chunk)

    def work(start: int) -> np.ndarray:
        stop = min(start + chunk, size)
        w = b_all[start:stop] - lo_all[start:stop]  # (b − lo) mod P: add P back where it wrapped
        np.minimum(w, w + _P32, out=w)
        return _count_cells(
            a_all[start:stop].copy(), w, width_all[start:stop], weights[start:stop], d, grouped
        )

    workers = (os.cpu_count() or 1) if threads is None else int(threads)
    if workers < 1:
        raise ParameterError(f"threads must be at least 1, got {threads}")
    total = np.zeros(d, dtype=np.int64)
    if workers == 1 or len(starts) == 1:
        for start in starts:
            total += work(start)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool_threads:
            for counts in pool_threads.map(work, starts):
                total += counts
    return total


def pool_support_counts(
    table: np.ndarray, pool: np.ndarray, d: int, *, threads: int | None = 1
) -> np.ndarray:
    """C_v = Σ_j N[j, H_j(v)] for v = 0…d−1, from the table N (shape (S, g)) of reports per (pool function, bucket)."""
    table = np.asarray(table)
    if table.ndim != 2 or table.shape[0] != len(pool) or table.shape[1] < 2:
        raise ParameterError(f"table must have shape ({len(pool)}, g >= 2), got {table.shape}")
    flat = table.reshape(-1)
    cells = np.flatnonzero(flat)
    j, y = np.divmod(cells, table.shape[1])
    return cell_support_counts(j, y, flat[cells], pool, table.shape[1], d, threads=threads)


class LolohaAccumulator(FrequencyAccumulator):
    """LOLOHA reports as counts per (pool function, bucket); support counts decoded when asked for.

    Batches are kept as their reports' cells j·g + y until they outnumber
    the table's S·g cells, then counted into the dense table N. So decoding
    n ≤ S·g reports hashes each value once per report, as OLH does, and
    decoding more hashes it once per occupied cell: never more than OLH.

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
    >>> type(aggregator).__name__, aggregator.n, int(aggregator.table.sum())
    ('LolohaAccumulator', 3, 3)
    """

    _state_fields = ("table", "n")

    @classmethod
    def for_spec(cls, spec: Any, threads: int | None = 1) -> Self:
        """An empty accumulator decoding with ``threads`` threads."""
        return cls(spec, threads=threads)

    def __init__(self, spec: LOLOHA, *, threads: int | None = 1):
        super().__init__(spec)
        self.threads = threads
        self._size = spec.pool_size * spec.g
        # N as S·g counts: allocated now (zero pages cost nothing until written; its size is the
        # accumulator's true footprint, which the collector reads), filled once the reports are many
        self._dense = np.zeros(self._size, dtype=np.int64)
        self._filled = False
        self._cells: list[
            tuple[np.ndarray, np.ndarray]
        ] = []  # reports (pool index, bucket) not yet in the table
        self._pending = 0
        self._single: list[tuple[int, int]] = []  # reports added one at a time
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
        acc._dense = counts.astype(np.int64).reshape(-1)
        acc._filled = True
        acc._n = int(acc._dense.sum())
        return acc

    def state(self) -> dict[str, Any]:
        """``{"table"}``: reports per (pool function, bucket) (n is their sum)."""
        return {"table": self.table}

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"table"}`` (:meth:`from_table`)."""
        return cls.from_table(spec, state_value(state, "table"))

    @classmethod
    def from_counts(cls, spec: Any, support_counts: Any, n: int) -> Self:
        """Not available: support counts lose the table LOLOHA decodes from (use :meth:`from_table`)."""
        raise ParameterError(
            "a LOLOHA accumulator is rebuilt from its table of reports per (pool function, bucket): "
            "use LolohaAccumulator.from_table"
        )

    def _gather(self) -> tuple[np.ndarray, np.ndarray]:
        """The pending reports' pool indices and buckets (the single reports included), forgotten here."""
        if self._single:
            pairs = np.array(self._single, dtype=np.int64).reshape(-1, 2)
            self._cells.append((pairs[:, 0], pairs[:, 1]))
            self._single = []
        if len(self._cells) == 1:
            pending = self._cells[0]
        elif self._cells:
            pending = (
                np.concatenate([c[0] for c in self._cells]),
                np.concatenate([c[1] for c in self._cells]),
            )
        else:
            pending = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self._cells, self._pending = [], 0
        return pending

    def _densify(self) -> np.ndarray:
        dense = self._dense
        seeds, buckets = self._gather()
        if seeds.size:
            dense += np.bincount(seeds * self.spec.g + buckets, minlength=self._size)
        self._filled = True
        return dense

    @property
    def table(self) -> np.ndarray:
        """N[j, y]: reports per pool index j and bucket y (read-only, shape (S, g))."""
        view = self._densify().reshape(self.spec.pool_size, self.spec.g).view()
        view.flags.writeable = False
        return view

    @property
    def support_counts(self) -> np.ndarray:
        """C_v, decoded from the occupied cells (cached until more reports arrive)."""
        if self._decoded is None:
            spec = self.spec
            if not self._filled:  # at most S·g reports: each its own cell of weight 1, as OLH decodes
                seeds, buckets = self._gather()
                self._cells, self._pending = [(seeds, buckets)], seeds.size
                weights = None
            else:
                dense = self._densify()
                cells = np.flatnonzero(dense)
                seeds, buckets = np.divmod(cells, spec.g)
                weights = dense[cells]
            self._decoded = cell_support_counts(
                seeds, buckets, weights, spec.pool, spec.g, spec.domain_size, threads=self.threads
            )
        view = self._decoded.view()
        view.flags.writeable = False
        return view

    def _changed(self, added: int) -> None:
        self._n += added
        self._decoded = None
        if self._pending + len(self._single) > self._size:
            self._densify()

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        seed = require_field(checked.seed, "seed")
        self._single.append((seed, checked.value))
        self._changed(1)

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        if batch.seeds is None:
            raise ReportError("batch has no 'seeds' column")
        seeds = check_int_column(batch.seeds, "seeds", self.spec.pool_size).astype(np.int64)
        buckets = check_int_column(batch.values, "values", self.spec.g).astype(np.int64)
        if seeds.shape != buckets.shape:
            raise ReportError(f"batch seeds and values differ in length: {seeds.shape} and {buckets.shape}")
        self._cells.append((seeds, buckets))
        self._pending += buckets.size
        self._changed(int(buckets.shape[0]))

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", alpha: float = 0.05, **options: Any
    ) -> pd.DataFrame:
        """The estimate table of :meth:`FrequencyAccumulator.estimate`, f̂ conditioned on the spec's pool.

        f̂ is :meth:`ldp.specs.loloha.LOLOHA.unbiased_frequencies` (unbiased for
        the spec's own pool of hash functions); the standard errors are the
        pure oracle's with p* = A and q* = c·A + (1 − c)·B
        (docs/longitudinal/loloha.md#pool).
        """
        self._refuse_options(options)
        if self.n <= 0:
            raise EstimateError("cannot estimate from zero reports")
        return oracle_estimates(
            self.spec.domain,
            self.support_counts,
            self.n,
            self.spec.p_star,
            self.spec.q_star,
            confidence=confidence,
            consistency=consistency,
            alpha=alpha,
            frequency=self.spec.unbiased_frequencies(self.support_counts, self.n),
        )

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both: the tables added."""
        self._check_mergeable(other)
        merged = type(self).from_table(self.spec, self.table + other.table)
        merged.threads = self.threads
        return merged
