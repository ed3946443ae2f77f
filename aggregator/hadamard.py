"""Hadamard response aggregation: the output histogram, decoded by a fast Walsh–Hadamard transform.

The accumulator holds the K counts of outputs (np.bincount of the reports)
and n; merging adds them. :meth:`HadamardAccumulator.estimate` transforms
each block of the histogram once (O(K log b)) and reads every value's signed
count S_x and its block's report count from the result
(docs/mechanisms.md#hr).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import Accumulator, check_int_column, state_value
from ldp.aggregator.estimates import add_consistent_view, estimate_table
from ldp.batch import ReportBatch
from ldp.errors import EstimateError, InputError
from ldp.hadamard_math import hr_estimates, signed_counts
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs import HR

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HadamardAccumulator"]


class HadamardAccumulator(Accumulator):
    """Counts of each HR output y in [0, K).

    Parameters
    ----------
    spec : HR
    """

    _state_fields = ("histogram", "n")

    def __init__(self, spec: HR):
        self.spec = spec
        self._hist = np.zeros(spec.outputs, dtype=np.int64)
        self._n = 0

    def state(self) -> dict[str, Any]:
        """``{"histogram"}``: the reports per output (n is their sum)."""
        return {"histogram": self.histogram}

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"histogram"}`` (:meth:`from_histogram`)."""
        return cls.from_histogram(spec, state_value(state, "histogram"))

    @classmethod
    def from_histogram(cls, spec: HR, histogram: Any) -> Self:
        """Rebuild an accumulator from its output counts (validated); n is their sum."""
        acc = cls(spec)
        hist = np.asarray(histogram)
        if hist.shape != (spec.outputs,):
            raise InputError(f"histogram must have shape ({spec.outputs},), got {hist.shape}")
        if hist.dtype.kind not in "iu" and not np.all(np.mod(hist, 1) == 0):
            raise InputError("histogram must hold integers")
        hist = hist.astype(np.int64)
        if hist.size and hist.min() < 0:
            raise InputError("histogram counts must be >= 0")
        acc._hist = hist
        acc._n = int(hist.sum())
        return acc

    @property
    def histogram(self) -> np.ndarray:
        """Reports per output (read-only view)."""
        view = self._hist.view()
        view.flags.writeable = False
        return view

    @property
    def n(self) -> int:
        return self._n

    @property
    def support_counts(self) -> np.ndarray:
        """S_x per domain value: reports in C_x minus reports in the rest of x's block (signed)."""
        spec = self.spec
        return signed_counts(self._hist, spec.blocks, spec.block_size, spec.domain_size)[0]

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        self._hist[checked.value] += 1
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        outputs = check_int_column(batch.values, "values", self.spec.outputs)
        self._hist += np.bincount(outputs, minlength=self.spec.outputs)
        self._n += int(outputs.shape[0])

    def merge(self, other: Self) -> Self:
        self._check_mergeable(other)
        return type(self).from_histogram(self.spec, self._hist + other._hist)

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", alpha: float = 0.05, **options: Any
    ) -> pd.DataFrame:
        """Unbiased count estimates with plug-in standard errors and confidence intervals.

        f̂_x = (c/(e − 1))·S_x/n; the standard error is n·√Var with
        n·Var = (c/(e − 1))²·(block reports)/n − clip(f̂_x, 0, 1)
        (docs/mechanisms.md#hr-variance). ``consistency`` and ``alpha`` as for
        the other frequency oracles (:mod:`ldp.aggregator.consistency`).

        Returns
        -------
        pandas.DataFrame
            ``value, estimate, std_error, ci_low, ci_high, proportion``.
        """
        self._refuse_options(options)
        spec, n = self.spec, self._n
        if n <= 0:
            raise EstimateError("cannot estimate from zero reports")
        signed, block_reports = signed_counts(self._hist, spec.blocks, spec.block_size, spec.domain_size)
        f_hat, variance = hr_estimates(signed, block_reports, n, spec.ratio, spec.blocks)
        table = estimate_table(spec.domain, n * f_hat, n * np.sqrt(variance), n, confidence=confidence)
        if str(consistency).strip().lower() != "none":
            null_se = np.sqrt(variance + np.clip(f_hat, 0.0, 1.0) / n)  # the standard error at f = 0
            add_consistent_view(table, f_hat, n, consistency, null_se, alpha)
        return table
