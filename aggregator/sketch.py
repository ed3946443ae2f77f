"""Accumulators of Apple's sketches, CMS and HCMS: integer k×m sketch counts (docs/mechanisms.md#cms).

=====================  =========================================================
:class:`CMSAccumulator`   reports per row j, ones per (row j, bit position)
:class:`HCMSAccumulator`  reports and ones per (row j, column l)
=====================  =========================================================

Both hold integer counts only, so :meth:`merge` adds them (associative,
commutative). The estimate reads the support count C_x of every domain value
off the sketch (CMS: Σ_j ones[j, h_j(x)]; HCMS: through the fast
Walsh–Hadamard transform of the signed sketch, O(k·m·log m)), the unbiased
count n·(C_x/n − q*)/(p* − q*) (Apple's estimator) and its standard error
from :meth:`ldp.specs.sketch.SketchSpec.count_variance` at the plug-in counts.

References
----------
.. [1] Apple Differential Privacy Team. "Learning with Privacy at Scale".
   Apple Machine Learning Journal 1(8), 2017.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import Accumulator, check_int_column, check_packed_bits, state_value
from ldp.aggregator.bitcounts import SMALL_ROWS, cohort_bit_counts, column_bit_counts
from ldp.aggregator.candidates import unique_candidates
from ldp.aggregator.estimates import add_consistent_view, estimate_table
from ldp.batch import ReportBatch
from ldp.errors import EstimateError, InputError, ParameterError, ReportError
from ldp.frequency_math import unbiased_frequency
from ldp.hadamard_math import fwht
from ldp.hashing import value_bytes
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.sketch import CMS, HCMS, SketchSpec

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CMSAccumulator",
    "HCMSAccumulator",
    "SketchAccumulator",
    "gather_rows",
    "row_bit_counts",
    "sketch_estimates",
]

#: Domain values whose k positions are gathered at once (bounded memory at large d·k).
_GATHER_VALUES = 1 << 12


def gather_rows(table: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Σ_j table[j, positions[x, j]] for every row x of ``positions`` (d, k), in chunks."""
    rows = np.arange(table.shape[0])
    out = np.empty(positions.shape[0], dtype=table.dtype)
    for start in range(0, positions.shape[0], _GATHER_VALUES):
        out[start : start + _GATHER_VALUES] = table[rows, positions[start : start + _GATHER_VALUES]].sum(
            axis=1
        )
    return out


def sketch_estimates(
    spec: SketchSpec,
    support_counts: np.ndarray,
    n: int,
    *,
    confidence: float = 0.95,
    consistency: str = "none",
    alpha: float = 0.05,
    values: Sequence[Any] | None = None,
) -> pd.DataFrame:
    """The estimate table of a sketch from the support counts C_x of ``values`` (default: the domain's).

    ``estimate`` is n·(C_x/n − q*)/(p* − q*), unbiased over a hash family drawn
    at random once; ``std_error`` the square root of
    :meth:`~ldp.specs.sketch.SketchSpec.count_variance` at the plug-in counts
    n̂_x clipped to [0, n] (Σ_{x′≠x} n̂_{x′}² for the shared-hash term). With a
    ``consistency`` method other than ``none`` the columns follow
    :func:`ldp.aggregator.estimates.oracle_estimates`. With other ``values``
    (candidates) the shared-hash term sums over them only: a heavy value left
    out of them makes the standard errors too small.
    """
    if n <= 0:
        raise EstimateError("cannot estimate from zero reports")
    f_hat = unbiased_frequency(support_counts, n, spec.p_star, spec.q_star)
    counts = n * f_hat
    plug = np.clip(counts, 0.0, float(n))
    squares = plug**2
    others = float(squares.sum()) - squares
    variance = np.maximum(spec.count_variance(plug, n, others), 0.0)
    table = estimate_table(
        spec.domain if values is None else values, counts, np.sqrt(variance), n, confidence=confidence
    )
    if str(consistency).strip().lower() != "none":
        null_se = np.sqrt(np.maximum(spec.count_variance(0.0, n, others), 0.0)) / n
        add_consistent_view(table, f_hat, n, consistency, null_se, alpha)
    return table


def row_bit_counts(bits: np.ndarray, rows: np.ndarray, k: int, m: int) -> np.ndarray:
    """Ones per (row, bit position) of packed reports, int64 (k, m).

    With many reports per row (≥ :data:`~ldp.aggregator.bitcounts.SMALL_ROWS` on average) the
    reports are sorted by row and each row's run counted by the bit-sliced column kernel
    (:func:`~ldp.aggregator.bitcounts.column_bit_counts`); otherwise RAPPOR's per-cohort kernel.
    """
    if rows.size < SMALL_ROWS * k:
        return cohort_bit_counts(bits, rows, k, m)
    order = np.argsort(rows, kind="stable")
    ordered = bits[order]
    bounds = np.searchsorted(rows[order], np.arange(k + 1))
    out = np.zeros((k, m), dtype=np.int64)
    for j in np.flatnonzero(np.diff(bounds)).tolist():
        out[j] = column_bit_counts(ordered[bounds[j] : bounds[j + 1]], m)
    return out


class SketchAccumulator(Accumulator):
    """Common part of the sketch accumulators: counts, merge, the estimate from support counts."""

    spec: SketchSpec
    _state_fields = ("reports", "ones")

    def __init__(self, spec: SketchSpec):
        self.spec = spec
        self.reports = np.zeros(self._reports_shape(), dtype=np.int64)
        self.ones = np.zeros((spec.k, spec.m), dtype=np.int64)

    def _reports_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"reports", "ones"}`` (:meth:`from_counts`)."""
        return cls.from_counts(spec, state_value(state, "reports"), state_value(state, "ones"))

    @classmethod
    def from_counts(cls, spec: SketchSpec, reports: Any, ones: Any) -> Self:
        """Rebuild an accumulator from its sketch counts (validated)."""
        acc = cls(spec)
        reports = np.asarray(reports)
        ones = np.asarray(ones)
        if reports.shape != acc.reports.shape or ones.shape != acc.ones.shape:
            raise InputError(
                f"{spec.mechanism} counts must have shapes {acc.reports.shape} and {acc.ones.shape}, "
                f"got {reports.shape} and {ones.shape}"
            )
        for name, counts in (("reports", reports), ("ones", ones)):
            if counts.dtype.kind not in "iu" or (counts.size and counts.min() < 0):
                raise InputError(f"{spec.mechanism} {name} counts must be non-negative integers")
        acc.reports = reports.astype(np.int64)
        acc.ones = ones.astype(np.int64)
        acc._check_ones()
        return acc

    def _check_ones(self) -> None:
        raise NotImplementedError

    @property
    def n(self) -> int:
        return int(self.reports.sum())

    def merge(self, other: Self) -> Self:
        self._check_mergeable(other)
        return type(self).from_counts(self.spec, self.reports + other.reports, self.ones + other.ones)

    def support_counts_at(self, positions: np.ndarray) -> np.ndarray:
        """C_x of values whose k hash positions are the rows of ``positions`` (d, k)."""
        raise NotImplementedError

    @property
    def support_counts(self) -> np.ndarray:
        """C_x: the reports supporting each domain value (int64, in ``spec.domain`` order)."""
        return self.support_counts_at(self.spec.domain_positions)

    def estimate(
        self,
        confidence: float = 0.95,
        *,
        consistency: str = "none",
        alpha: float = 0.05,
        candidates: Sequence[Any] | None = None,
        **options: Any,
    ) -> pd.DataFrame:
        """Unbiased count estimates with standard errors and confidence intervals (:func:`sketch_estimates`).

        Parameters
        ----------
        confidence : float
            Two-sided level of ``ci_low``/``ci_high``, default 0.95.
        consistency : str
            ``none`` (default, unbiased) or a method of :mod:`ldp.aggregator.consistency`.
        alpha : float
            Level of the ``base-cut`` threshold.
        candidates : sequence, optional
            Values to estimate instead of the domain's (the sketch holds any
            value the clients hashed; duplicates by their bytes are dropped).
        """
        self._refuse_options(options)
        if candidates is None:
            values, support = None, self.support_counts
        else:
            values = _unique_values(candidates)
            step = max(1, (1 << 20) // self.spec.k)
            support = np.concatenate(
                [
                    self.support_counts_at(self.spec.positions(values[i : i + step]))
                    for i in range(0, len(values), step)
                ]
            )
        return sketch_estimates(
            self.spec,
            support,
            self.n,
            confidence=confidence,
            consistency=consistency,
            alpha=alpha,
            values=values,
        )


def _unique_values(candidates: Sequence[Any]) -> list[Any]:
    """The candidates in order, without values of equal bytes; a non-empty list of values."""
    if not isinstance(candidates, (str, bytes)):  # a single string is refused by unique_candidates
        candidates = list(candidates)
        if any(value is None for value in candidates):
            raise InputError("a candidate must not be None")
    values = unique_candidates(candidates, key=value_bytes)
    if not values:
        raise ParameterError("no candidates given")
    return values


class CMSAccumulator(SketchAccumulator):
    """CMS: ``reports[j]`` reports of row j, ``ones[j, i]`` of them with bit i set.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import CMSAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.CMS(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> isinstance(aggregator, CMSAccumulator), aggregator.n
    (True, 3)
    """

    spec: CMS

    def _reports_shape(self) -> tuple[int, ...]:
        return (self.spec.k,)

    def _check_ones(self) -> None:
        if np.any(self.ones > self.reports[:, None]):
            raise InputError("cms ones counts cannot exceed the reports of their row")

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        row = checked.field("row")
        bits = np.unpackbits(np.frombuffer(checked.field("bits"), dtype=np.uint8), count=self.spec.m)
        self.ones[row] += bits
        self.reports[row] += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        spec = self.spec
        rows = check_int_column(batch.column("row"), "row", spec.k)
        bits = check_packed_bits(batch.column("bits"), spec.m)
        if bits.shape[0] != rows.shape[0]:
            raise ReportError(f"batch has {rows.shape[0]} rows but {bits.shape[0]} bit vectors")
        self.ones += row_bit_counts(bits, rows.astype(np.int64), spec.k, spec.m)
        self.reports += np.bincount(rows, minlength=spec.k)

    def support_counts_at(self, positions: np.ndarray) -> np.ndarray:
        return gather_rows(self.ones, positions)


class HCMSAccumulator(SketchAccumulator):
    """HCMS: ``reports[j, l]`` reports of row j and column l, ``ones[j, l]`` of them with bit 1 (+1).

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import HCMSAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.HCMS(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> isinstance(aggregator, HCMSAccumulator), aggregator.n
    (True, 3)
    """

    spec: HCMS

    def _reports_shape(self) -> tuple[int, ...]:
        return (self.spec.k, self.spec.m)

    def _check_ones(self) -> None:
        if np.any(self.ones > self.reports):
            raise InputError("hcms ones counts cannot exceed the reports of their cell")

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        row, column = checked.field("row"), checked.field("column")
        self.reports[row, column] += 1
        self.ones[row, column] += checked.field("bit")

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        spec = self.spec
        rows = check_int_column(batch.column("row"), "row", spec.k)
        columns = check_int_column(batch.column("column"), "column", spec.m)
        bits = check_int_column(batch.column("bit"), "bit", 2)
        if not rows.shape == columns.shape == bits.shape:
            raise ReportError("batch row, column and bit columns differ in length")
        cells = rows.astype(np.int64) * spec.m + columns
        size = spec.k * spec.m
        self.reports += np.bincount(cells, minlength=size).reshape(spec.k, spec.m)
        self.ones += np.bincount(cells[bits.astype(bool)], minlength=size).reshape(spec.k, spec.m)

    @property
    def transformed(self) -> np.ndarray:
        """The signed sketch Σ(±1) per (j, l), Walsh–Hadamard transformed: entry (j, u) = Σ_i y_i H_m[l_i, u]."""
        return fwht(2 * self.ones - self.reports)

    def support_counts_at(self, positions: np.ndarray) -> np.ndarray:
        agreement = gather_rows(self.transformed, positions)  # Σ_i y_i H[l_i, h_{j_i}(x)]
        return (self.n + agreement) // 2
