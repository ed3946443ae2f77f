"""Key-value accumulators and estimates: PCKV (UE, GRR) and PrivKVM's single round (docs/key-value.md).

The table has one row per key: ``value`` (the key), ``estimate`` (holders,
n·f̂), ``std_error``, ``ci_low``, ``ci_high``, ``proportion`` (f̂), and
``mean``, ``mean_std_error``, ``mean_ci_low``, ``mean_ci_high``.

PCKV (both forms), for key k with n₁ reports of +1 and n₂ of −1 among n
(derivation in docs/key-value.md#estimators), π_u the probability that user
u's report is nonzero on k, P_u = [k ∈ S_u]/η_u, c = a(2p − 1):

- f′ = ((n₁ + n₂)/n − b)/(a − b), f̂ = ℓ·f′ (the padding correction);
- Var[n₁ + n₂] = Σπ_u(1 − π_u) = n(π̄ − b² − 2b(a − b)f′ − (a − b)²f′/ℓ);
- m̂ = (n₁ − n₂)/(n·c·f′), by the delta method with
  Var[n₁ − n₂] = nπ̄ − c²Σσ_u², Cov = c·n·f′m·((1 − b) − (a − b)/ℓ).

These hold exactly when no user holds more than ℓ pairs (then P_u = 1/ℓ for
a holder); Σσ_u² ≥ n f′ m²/ℓ is replaced by that bound, so the mean's SE
errs on the large side when k's values are spread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd

from ldp.aggregator.accumulators import Accumulator, check_int_column, check_packed_bits, state_value
from ldp.aggregator.estimates import estimate_table, normal_quantile
from ldp.batch import ReportBatch
from ldp.errors import EstimateError, InputError, ParameterError, ReportError
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.key_value import KeyValueSpec, PrivKVM

__all__ = [
    "KeyValueAccumulator",
    "PCKVGRRAccumulator",
    "PCKVUEAccumulator",
    "PrivKVMAccumulator",
    "pckv_estimates",
    "privkvm_estimates",
]


def _with_mean(table: pd.DataFrame, mean, se, confidence: float) -> pd.DataFrame:
    z = normal_quantile(confidence)
    mean = np.asarray(mean, dtype=float)
    se = np.asarray(se, dtype=float)
    table["mean"] = mean
    table["mean_std_error"] = se
    table["mean_ci_low"] = mean - z * se
    table["mean_ci_high"] = mean + z * se
    return table


def pckv_estimates(
    spec: Any, plus: np.ndarray, minus: np.ndarray, n: int, confidence: float = 0.95
) -> pd.DataFrame:
    """PCKV's per-key frequency and mean with standard errors (module docstring)."""
    if n <= 0:
        raise EstimateError("cannot estimate from zero reports")
    d, ell = spec.domain_size, spec.ell
    a, b, p = float(spec.a), float(spec.b), float(spec.p)
    c = a * (2 * p - 1)
    n1 = np.asarray(plus[:d], dtype=float)
    n2 = np.asarray(minus[:d], dtype=float)
    total, diff = n1 + n2, n1 - n2
    f1 = (total / n - b) / (a - b)
    fc = np.clip(f1, 0.0, 1.0 / ell)
    pi = b + (a - b) * fc
    var_t = n * (pi - b * b - 2 * b * (a - b) * fc - (a - b) ** 2 * fc / ell)
    freq_se = ell * np.sqrt(np.maximum(var_t, 0.0)) / (n * (a - b))
    table = estimate_table(spec.domain, n * ell * f1, n * freq_se, n, confidence=confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(f1 > 0, diff / (n * c * f1), np.nan)
        mc = np.clip(np.nan_to_num(mean), -1.0, 1.0)
        var_d = n * pi - c * c * n * fc * mc * mc / ell
        cov = c * n * fc * mc * ((1 - b) - (a - b) / ell)
        g_d = 1.0 / (c * n * fc)
        g_t = -mc / (n * (a - b) * fc)
        var_m = g_d * g_d * var_d + g_t * g_t * var_t + 2 * g_d * g_t * cov
        mean_se = np.where(fc > 0, np.sqrt(np.maximum(var_m, 0.0)), np.nan)
    return _with_mean(table, mean, mean_se, confidence)


def privkvm_estimates(spec: PrivKVM, counts: np.ndarray, confidence: float = 0.95) -> pd.DataFrame:
    """PrivKVM's single-round estimates: counts[k] = (responses −1, absent, +1) of the users that drew key k."""
    counts = np.asarray(counts, dtype=float)
    n = float(counts.sum())
    if n <= 0:
        raise EstimateError("cannot estimate from zero reports")
    p1, p2 = float(spec.p1), float(spec.p2)
    drawn = counts.sum(axis=1)
    total = counts[:, 0] + counts[:, 2]
    diff = counts[:, 2] - counts[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (total / drawn - (1 - p1)) / (2 * p1 - 1)
        fc = np.clip(np.nan_to_num(f), 0.0, 1.0)
        var_f = (p1 * (1 - p1) / (2 * p1 - 1) ** 2 + fc * (1 - fc) * (1 - drawn / n)) / drawn
        table = estimate_table(spec.domain, n * f, n * np.sqrt(var_f), int(n), confidence=confidence)
        shrunk = np.where(total > 0, diff / total, np.nan)
        mean = shrunk / (2 * p2 - 1)
        mean_se = np.sqrt((1 - np.clip(np.nan_to_num(shrunk), -1, 1) ** 2) / total) / (2 * p2 - 1)
    return _with_mean(table, mean, np.where(total > 0, mean_se, np.nan), confidence)


def _refuse_consistency(consistency: str) -> None:
    if str(consistency).strip().lower() != "none":
        raise ParameterError(
            f"consistency {consistency!r} applies to frequency oracles; key-value estimates have none"
        )


class KeyValueAccumulator(Accumulator):
    """Counts of a key-value mechanism's reports: ``counts`` (keys × outputs) and ``n``."""

    _state_fields: ClassVar[tuple[str, ...]] = ("_counts", "_n")
    _outputs: ClassVar[int] = 2

    def __init__(self, spec: KeyValueSpec) -> None:
        super().__init__(spec)
        self._counts = np.zeros((self._rows(), self._outputs), dtype=np.int64)
        self._n = np.int64(0)

    def _rows(self) -> int:
        return int(self.spec.padded_size)

    def state(self) -> dict[str, Any]:
        """``{"counts", "n"}``: the counts (keys × outputs) and the reports."""
        return {"counts": self.counts, "n": self.n}

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"counts", "n"}``, checked: the shape of this spec's counts, non-negative integers."""
        counts, n = np.asarray(state_value(state, "counts")), state_value(state, "n")
        expected = cls(spec)._counts.shape
        if counts.shape != expected or counts.dtype.kind not in "iu" or (counts.size and counts.min() < 0):
            raise InputError(f"{spec.mechanism} counts must be non-negative integers of shape {expected}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}")
        return cls.from_counts(spec, counts, n)

    @classmethod
    def from_counts(cls, spec: KeyValueSpec, counts, n: int) -> Self:
        """An accumulator holding the given counts (simulation)."""
        out = cls(spec)
        out._counts = np.asarray(counts, dtype=np.int64).reshape(out._counts.shape).copy()
        out._n = np.int64(n)
        return out

    @property
    def counts(self) -> np.ndarray:
        """A copy of the counts."""
        return self._counts.copy()

    @property
    def n(self) -> int:
        return int(self._n)

    def merge(self, other: Self) -> Self:
        self._check_mergeable(other)
        return type(self).from_counts(self.spec, self._counts + other._counts, int(self._n + other._n))


class PCKVUEAccumulator(KeyValueAccumulator):
    """PCKV-UE: per padded key, the reports with +1 and with −1 there."""

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        width = self.spec.padded_size
        plus = np.unpackbits(np.frombuffer(checked.field("plus"), np.uint8))[:width]
        minus = np.unpackbits(np.frombuffer(checked.field("minus"), np.uint8))[:width]
        if np.any(plus & minus):
            raise ReportError("a key is both +1 and -1 in one report")
        self._counts[:, 0] += plus
        self._counts[:, 1] += minus
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        width = self.spec.padded_size
        plus = np.unpackbits(check_packed_bits(batch.column("plus"), width), axis=1)[:, :width]
        minus = np.unpackbits(check_packed_bits(batch.column("minus"), width), axis=1)[:, :width]
        if np.any(plus & minus):
            raise ReportError("a key is both +1 and -1 in a report of the batch")
        self._counts[:, 0] += plus.sum(axis=0, dtype=np.int64)
        self._counts[:, 1] += minus.sum(axis=0, dtype=np.int64)
        self._n += plus.shape[0]

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> pd.DataFrame:
        self._refuse_options(options)
        _refuse_consistency(consistency)
        return pckv_estimates(self.spec, self._counts[:, 0], self._counts[:, 1], self.n, confidence)


class PCKVGRRAccumulator(KeyValueAccumulator):
    """PCKV-GRR: per padded key, the reports (key, +1) and (key, −1)."""

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        self._counts[int(checked.field("key")), 1 - int(checked.field("sign"))] += 1
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        key = check_int_column(batch.column("key"), "key", self.spec.padded_size)
        sign = check_int_column(batch.column("sign"), "sign", 2)
        np.add.at(self._counts, (key, 1 - sign), 1)
        self._n += key.shape[0]

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> pd.DataFrame:
        self._refuse_options(options)
        _refuse_consistency(consistency)
        return pckv_estimates(self.spec, self._counts[:, 0], self._counts[:, 1], self.n, confidence)


class PrivKVMAccumulator(KeyValueAccumulator):
    """PrivKVM: per key, the responses −1, absent and +1 of the users that drew it."""

    _outputs = 3

    def _rows(self) -> int:
        return int(self.spec.domain_size)

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        self._counts[int(checked.field("key")), int(checked.field("response"))] += 1
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        key = check_int_column(batch.column("key"), "key", self.spec.domain_size)
        response = check_int_column(batch.column("response"), "response", 3)
        np.add.at(self._counts, (key, response), 1)
        self._n += key.shape[0]

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> pd.DataFrame:
        self._refuse_options(options)
        _refuse_consistency(consistency)
        return privkvm_estimates(self.spec, self._counts, confidence)
