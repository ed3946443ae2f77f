"""Mean estimation from numeric reports: mean, sum, per-group means, with SE and CI.

:class:`MeanAccumulator` keeps the exact histogram of report values over the
spec's finite output support (every numeric mechanism here has one, see
:mod:`ldp.specs.numeric`), so ``merge`` adds integer counts and is exactly
associative and order independent. Per-group statistics are kept the same
way: one exact integer histogram over the support per group key, so the
per-group counts n and the merge stay exact (associative and order
independent) too. Group keys come from the reports' optional ``group`` field
(a batch's ``groups`` column, as read from report files) or are passed to
``add``/``add_batch``; memory grows as (number of groups) × (support size),
so group keys are meant to be few (app versions, regions), never user ids.
Reports without a group key count in the overall mean only.

Estimator
---------
Each report y gives an unbiased estimate t̂ = a0 + a1·y of its user's native
value t ∈ [−1, 1] (:meth:`NumericSpec.native_estimate`); the mean estimate is
the average of the t̂, mapped back to value units:
mean = low + (t̄ + 1)(high − low)/2. It is unbiased for the mean of the
*clipped* values and is deliberately not clipped to ``[low, high]``.

The standard error is the sample standard deviation of the t̂ (ddof = 1)
over √n, in value units: it estimates the i.i.d.-population variance
(mechanism noise plus the spread of the users' values, docs/mechanisms.md#numeric),
which is what a confidence interval for a population mean needs. The
sum is n·mean with SE n·SE. Intervals are normal: estimate ± z·SE.

References
----------
.. [1] N. Wang et al. "Collecting and analyzing multidimensional data with
   local differential privacy". ICDE 2019.
.. [2] J. Duchi, M. Jordan, M. Wainwright. JASA 2018.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import Accumulator, state_value
from ldp.aggregator.estimates import normal_quantile
from ldp.batch import ReportBatch
from ldp.errors import InputError, ParameterError, ReportError, SpecError
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.numeric import NumericSpec

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MEAN_COLUMNS", "SUM_COLUMNS", "MeanAccumulator", "mean_table"]

#: Columns of a mean estimate, in order.
MEAN_COLUMNS = ("mean", "std_error", "ci_low", "ci_high", "n")
#: Columns of a sum estimate, in order.
SUM_COLUMNS = ("sum", "std_error", "ci_low", "ci_high", "n")


def mean_table(spec: NumericSpec, n, total, total_sq, *, confidence: float = 0.95) -> pd.DataFrame:
    """Mean rows (value units) from n, Σt̂, Σt̂² on the native scale (vectorized over groups).

    Parameters
    ----------
    spec : NumericSpec
    n, total, total_sq : array-like
        Count, sum and sum of squares of the per-report native estimates.
    confidence : float
        Level of the normal interval.
    """
    import pandas as pd

    z = normal_quantile(confidence)
    n = np.atleast_1d(np.asarray(n, dtype=np.float64))
    total = np.atleast_1d(np.asarray(total, dtype=np.float64))
    total_sq = np.atleast_1d(np.asarray(total_sq, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        t_bar = total / n
        var = np.maximum(total_sq - n * t_bar**2, 0.0) / (n - 1)
        se = np.sqrt(var / n) * spec.half_width
    mean = spec.to_user(t_bar)
    return pd.DataFrame(
        {
            "mean": mean,
            "std_error": se,
            "ci_low": mean - z * se,
            "ci_high": mean + z * se,
            "n": n.astype(np.int64),
        }
    )


class MeanAccumulator(Accumulator):
    """Histogram of numeric reports over the spec's output support (plus optional groups).

    Parameters
    ----------
    spec : NumericSpec

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import MeanAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.Duchi(epsilon=1.0, low=0, high=10)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, [2.0, 3.5, 9.0]))
    >>> isinstance(aggregator, MeanAccumulator), aggregator.n
    (True, 3)
    """

    _state_fields = ("counts",)

    def __init__(self, spec: NumericSpec):
        if not isinstance(spec, NumericSpec):
            raise SpecError(f"MeanAccumulator needs a numeric spec, got {type(spec).__name__}")
        self.spec = spec
        self._support = spec.support
        self._est = spec.native_estimate(self._support)
        self._counts = np.zeros(self._support.size, dtype=np.int64)
        self._group_counts: dict[Hashable, np.ndarray] = {}

    # -- state -----------------------------------------------------------------
    @classmethod
    def from_counts(cls, spec: NumericSpec, counts, group_counts: dict | None = None) -> Self:
        """Rebuild from the support histogram (and optional {group: support histogram})."""
        acc = cls(spec)
        acc._counts = acc._checked_counts(counts, "counts")
        for key, hist in (group_counts or {}).items():
            acc._group_counts[key] = acc._checked_counts(hist, f"counts of group {key!r}")
        return acc

    def state(self) -> dict[str, Any]:
        """``{"counts", "groups"}``: the support histogram and ``[group key, its histogram]`` pairs."""
        return {"counts": self.counts, "groups": [[key, hist] for key, hist in self._group_counts.items()]}

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"counts", "groups"}`` (:meth:`from_counts`)."""
        groups = state_value(state, "groups")
        if not isinstance(groups, list) or not all(
            isinstance(pair, list) and len(pair) == 2 for pair in groups
        ):
            raise InputError("the saved groups must be [group key, histogram] pairs")
        return cls.from_counts(spec, state_value(state, "counts"), dict(groups))

    def _checked_counts(self, counts, what: str) -> np.ndarray:
        counts = np.asarray(counts)
        if counts.shape != self._counts.shape:
            raise InputError(f"{what} must have shape {self._counts.shape}, got {counts.shape}")
        if counts.dtype.kind not in "iu" or (counts.size and counts.min() < 0):
            raise InputError(f"{what} must be non-negative integers")
        return counts.astype(np.int64)

    @property
    def group_counts(self) -> dict[Hashable, np.ndarray]:
        """{group: number of its reports of each support value} (copies)."""
        return {k: v.copy() for k, v in self._group_counts.items()}

    @property
    def counts(self) -> np.ndarray:
        """Number of reports of each support value (read-only view)."""
        view = self._counts.view()
        view.flags.writeable = False
        return view

    @property
    def n(self) -> int:
        return int(self._counts.sum())

    @property
    def groups(self) -> dict[Hashable, tuple[int, float, float]]:
        """{group: (n, Σt̂, Σt̂²)} of the reports added with a group key (native scale)."""
        return {k: self._moments(v) for k, v in self._group_counts.items()}

    def _moments(self, counts: np.ndarray) -> tuple[int, float, float]:
        weights = counts.astype(np.float64)
        return int(counts.sum()), float(weights @ self._est), float(weights @ (self._est * self._est))

    def __eq__(self, other: object) -> bool:
        result = super().__eq__(other)
        if result is NotImplemented or not result or not isinstance(other, MeanAccumulator):
            return result
        mine, theirs = self._group_counts, other._group_counts
        return mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine)

    __hash__ = None

    # -- adding ----------------------------------------------------------------
    def add(self, report: Report, group: Hashable | None = None) -> None:
        """Add one report (checked; a bad one raises :class:`ReportError` and changes nothing).

        ``group`` overrides the report's own ``group`` field (default: use it).
        """
        checked = check_report(self.spec, report)
        idx, _ = self.spec.support_index(checked.value)
        j = int(idx)
        self._counts[j] += 1
        group = checked.group if group is None else group
        if group is not None:
            self._group_hist(group)[j] += 1

    def _group_hist(self, key: Hashable) -> np.ndarray:
        hist = self._group_counts.get(key)
        if hist is None:
            hist = self._group_counts[key] = np.zeros(self._support.size, dtype=np.int64)
        return hist

    def add_batch(self, batch: ReportBatch, groups: Sequence[Hashable] | np.ndarray | None = None) -> None:
        """Add a batch (vectorized); ``groups`` gives each report's group key.

        By default the batch's own ``groups`` column is used (None entries:
        reports without a group, counted in the overall mean only).

        Raises
        ------
        ReportError
            If the batch is for another spec or has a value outside the output
            support (readers send such reports to rejects before this point).
        """
        self._check_batch(batch)
        if batch.values is None:
            raise ReportError("batch has no 'values' column")
        values = np.asarray(batch.values)
        if values.ndim != 1 or values.dtype.kind != "f":
            raise ReportError(f"batch values must be a 1-D float array, got {values.dtype} {values.shape}")
        idx, ok = self.spec.support_index(values)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise ReportError(
                f"batch value {values[bad]!r} (row {bad}) is not an output of this {self.spec.mechanism} spec"
            )
        if groups is None:
            groups = batch.groups
        if groups is not None:
            keys = np.asarray(groups, dtype=object) if not isinstance(groups, np.ndarray) else groups
            if keys.shape != values.shape:
                raise InputError(
                    f"groups must have one key per report ({values.size}), got shape {keys.shape}"
                )
            self._add_grouped(keys, idx)
        self._counts += np.bincount(idx, minlength=self._counts.size)

    def _add_grouped(self, keys: np.ndarray, idx: np.ndarray) -> None:
        """Add (group, support index) pairs: sparse exact counts, no groups × support table per batch."""
        import pandas as pd

        codes, uniques = pd.factorize(keys, use_na_sentinel=True)  # None/NaN: no group
        has = codes >= 0
        if not has.any():
            return
        size = self._support.size
        pairs, counts = np.unique(codes[has].astype(np.int64) * size + idx[has], return_counts=True)
        unique_keys = uniques.tolist() if hasattr(uniques, "tolist") else list(uniques)
        group_of, support_of = np.divmod(pairs, size)
        bounds = np.flatnonzero(np.diff(group_of)) + 1
        for block in np.split(np.arange(pairs.size), bounds):
            hist = self._group_hist(unique_keys[int(group_of[block[0]])])
            hist[support_of[block]] += counts[block]

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both (same spec required)."""
        self._check_mergeable(other)
        merged = type(self).from_counts(self.spec, self._counts + other._counts, self._group_counts)
        for key, hist in other._group_counts.items():
            merged._group_hist(key)[:] += hist
        return merged

    # -- estimates ----------------------------------------------------------------
    def native_moments(self) -> tuple[int, float, float]:
        """(n, Σt̂, Σt̂²) of all reports, native scale."""
        counts = self._counts.astype(np.float64)
        return self.n, float(counts @ self._est), float(counts @ (self._est * self._est))

    def estimate(
        self,
        confidence: float = 0.95,
        *,
        consistency: str = "none",
        by_group: bool = False,
        with_sum: bool = True,
        with_overall: bool = False,
        **options: Any,
    ) -> pd.DataFrame:
        """Unbiased mean with standard error and confidence interval, in value units.

        Parameters
        ----------
        confidence : float
            Level of ``ci_low``/``ci_high``, default 0.95.
        consistency : str
            Must be ``none`` (frequency post-processing does not apply to means).
        by_group : bool
            One row per group key (column ``group`` first, groups sorted by
            key) instead of the overall mean.
        with_overall : bool
            With ``by_group``: append the overall row (``group`` None, every
            report, with or without a group key).
        with_sum : bool
            Append the sum columns ``sum, sum_std_error, sum_ci_low, sum_ci_high``
            (overall estimate only).

        Returns
        -------
        pandas.DataFrame
            ``mean, std_error, ci_low, ci_high, n`` (one row, or one per group),
            then the sum columns.
        """
        import pandas as pd

        self._refuse_options(options)
        if consistency not in (None, "none"):
            raise ParameterError(f"consistency {consistency!r} does not apply to mean estimates (use 'none')")
        if by_group:
            keys = sorted(self._group_counts, key=lambda k: (type(k).__name__, str(k)))
            stats = np.array([self._moments(self._group_counts[k]) for k in keys], dtype=np.float64).reshape(
                -1, 3
            )
            if with_overall:
                keys.append(None)
                stats = np.vstack([stats, np.array(self.native_moments(), dtype=np.float64)])
            table = mean_table(self.spec, stats[:, 0], stats[:, 1], stats[:, 2], confidence=confidence)
            table.insert(0, "group", pd.Series(keys, dtype=object))
            return table
        n, s, s2 = self.native_moments()
        table = mean_table(self.spec, n, s, s2, confidence=confidence)
        if with_sum:
            total = self.estimate_sum(confidence)
            for column in SUM_COLUMNS[:-1]:
                table[f"sum_{column}" if column != "sum" else "sum"] = total[column].to_numpy()
        return table

    def estimate_sum(self, confidence: float = 0.95) -> pd.DataFrame:
        """Unbiased sum n·mean with SE n·SE and its normal interval (value units)."""
        import pandas as pd

        row = self.estimate(confidence, with_sum=False)
        n = row["n"].to_numpy()
        total = row["mean"].to_numpy() * n
        se = row["std_error"].to_numpy() * n
        z = normal_quantile(confidence)
        return pd.DataFrame(
            {"sum": total, "std_error": se, "ci_low": total - z * se, "ci_high": total + z * se, "n": n}
        )

    def __repr__(self) -> str:
        return f"MeanAccumulator({self.spec.mechanism}, n={self.n})"
