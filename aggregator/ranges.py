"""Aggregation of the range mechanisms: leaf counts, range answers and quantiles, each with its exact variance.

The estimate table lists every domain value's count (the consistent leaves of
the hierarchy, the Haar synthesis), with standard errors from the exact
variance of :mod:`ldp.range_math` (the data terms use the estimate's own
non-negative leaves). ``estimate(ranges=[(lo, hi), ...])`` answers ranges of
domain values (both ends included) and ``estimate(quantiles=[...])`` the
quantiles of the monotone CDF; either returns that table instead
(docs/range-queries.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np
import pandas as pd

from ldp.aggregator.accumulators import (
    Accumulator,
    check_int_column,
    check_packed_bits,
    require_field,
    state_value,
)
from ldp.aggregator.estimates import estimate_table, normal_quantile
from ldp.batch import ReportBatch
from ldp.errors import InputError, ParameterError, ReportError
from ldp.range_math import (
    cdf_quantiles,
    haar_signs,
    haar_synthesis,
    hierarchy_membership,
    hierarchy_projection,
    linear_variance,
    range_indicator,
)
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.ranges import RangeHaar, RangeHierarchy, RangeSpec

__all__ = ["QUANTILE_COLUMNS", "RANGE_COLUMNS", "HaarAccumulator", "HierarchyAccumulator", "RangeAccumulator"]

#: Columns of a range table.
RANGE_COLUMNS = ("low", "high", "estimate", "std_error", "ci_low", "ci_high", "proportion")
#: Columns of a quantile table.
QUANTILE_COLUMNS = ("quantile", "value", "cdf", "std_error", "ci_low", "ci_high")


class RangeAccumulator(Accumulator):
    """Common estimation of the range mechanisms: a linear estimate θ̂ of coefficients, leaves = L·θ̂ + n·k."""

    spec: RangeSpec

    # -- subclasses -------------------------------------------------------------
    def coefficients(self) -> np.ndarray:  # pragma: no cover - overridden
        """θ̂, the unbiased estimates of the coefficients (count scale)."""
        raise NotImplementedError

    def _leaf_map(self, inference: str) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - overridden
        """(L, k): leaves = L·θ̂ + n·k (L: D × coefficients)."""
        raise NotImplementedError

    def _variance(self, weights: np.ndarray, leaves: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    #: Estimators of the leaves: ``"none"`` (each leaf from its own coefficients) first, the default last.
    _inferences: tuple[str, ...] = ("none",)

    # -- estimates ----------------------------------------------------------------
    def _check_inference(self, inference: str) -> str:
        mode = str(inference)
        if mode == "default":
            mode = self._inferences[-1]
        if mode not in self._inferences:
            raise ParameterError(
                f"{self.spec.mechanism}: inference must be one of {', '.join(self._inferences)}, got {inference!r}"
            )
        return mode

    def leaf_estimates(self, inference: str = "default") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(leaves, L, k) for the chosen view."""
        mode = self._check_inference(inference)
        lmap, const = self._leaf_map(mode)
        return lmap @ self.coefficients() + self.n * const, lmap, const

    def range_answers(
        self, queries: Sequence[tuple[int, int]], inference: str = "default", true_counts: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(answers, variances) of ranges of domain indices [lo, hi], both ends included.

        The variances are exact for the leaf counts ``true_counts`` when given
        (simulations), else with the estimate's own leaves plugged in.
        """
        leaves, lmap, const = self.leaf_estimates(inference)
        s = range_indicator(list(queries), self.spec.domain_size)
        weights = lmap.T @ s
        answers = self.coefficients() @ weights + self.n * (const @ s)
        return answers, self._variance(weights, leaves if true_counts is None else true_counts)

    def estimate(
        self,
        confidence: float = 0.95,
        *,
        consistency: str = "none",
        inference: str = "default",
        ranges: Sequence[tuple[Any, Any]] | None = None,
        quantiles: Sequence[float] | None = None,
        **options: Any,
    ) -> pd.DataFrame:
        """Leaf counts (default), or range answers (``ranges``), or quantiles (``quantiles``), with SE and CI."""
        self._refuse_options(options)
        if consistency not in (None, "none"):
            raise ParameterError(
                f"{self.spec.mechanism}: consistency {consistency!r} does not apply (its leaf estimates come from "
                "the tree or the wavelet, already consistent across levels); use consistency 'none'"
            )
        if ranges is not None and quantiles is not None:
            raise ParameterError("estimate takes ranges or quantiles, not both (call it twice)")
        z = normal_quantile(confidence)
        if ranges is not None:
            return self._range_table(ranges, z, inference)
        if quantiles is not None:
            return self._quantile_table(quantiles, z, inference)
        leaves, lmap, _ = self.leaf_estimates(inference)
        var = self._variance(lmap.T, leaves)
        table = estimate_table(self.spec.domain, leaves, np.sqrt(var), self.n, confidence=confidence)
        table.attrs["inference"] = self._check_inference(inference)
        return table

    def _indices(self, ranges: Sequence[tuple[Any, Any]]) -> list[tuple[int, int]]:
        out = []
        for lo, hi in ranges:
            a, b = self.spec.index_of(lo), self.spec.index_of(hi)
            if a > b:
                raise InputError(f"range {lo}:{hi} is empty: {lo!r} comes after {hi!r} in the domain's order")
            out.append((a, b))
        return out

    def _range_table(self, ranges: Sequence[tuple[Any, Any]], z: float, inference: str) -> pd.DataFrame:
        queries = self._indices(ranges)
        if not queries:
            raise ParameterError("no ranges given")
        answers, var = self.range_answers(queries, inference)
        se = np.sqrt(var)
        domain = self.spec.domain
        table = pd.DataFrame(
            {
                "low": pd.Series([domain[a] for a, _ in queries], dtype=object),
                "high": pd.Series([domain[b] for _, b in queries], dtype=object),
                "estimate": answers,
                "std_error": se,
                "ci_low": answers - z * se,
                "ci_high": answers + z * se,
                "proportion": answers / self.n if self.n else np.full(answers.shape, np.nan),
            }
        )
        table.attrs["inference"] = self._check_inference(inference)
        return table

    def _quantile_table(self, quantiles: Sequence[float], z: float, inference: str) -> pd.DataFrame:
        qs = np.asarray([float(q) for q in quantiles], dtype=float)
        if qs.size == 0 or np.any(~np.isfinite(qs)) or np.any((qs <= 0) | (qs >= 1)):
            raise ParameterError(f"quantiles must be numbers in (0, 1), got {list(quantiles)!r}")
        if self.n == 0:
            raise ParameterError("no reports: quantiles need at least one")
        leaves, _, _ = self.leaf_estimates(inference)
        idx = cdf_quantiles(leaves, qs, self.n)
        answers, var = self.range_answers([(0, int(v)) for v in idx], inference)
        cdf, se = answers / self.n, np.sqrt(var) / self.n
        table = pd.DataFrame(
            {
                "quantile": qs,
                "value": pd.Series([self.spec.domain[int(v)] for v in idx], dtype=object),
                "cdf": cdf,
                "std_error": se,
                "ci_low": cdf - z * se,
                "ci_high": cdf + z * se,
            }
        )
        table.attrs["inference"] = self._check_inference(inference)
        table.attrs["error_metric"] = (
            "rank error |F(value) - q| of the true CDF F; cdf is the estimate of F(value)"
        )
        return table


class HierarchyAccumulator(RangeAccumulator):
    """``range-hierarchy``: reports per level and set bits per (level, node)."""

    spec: RangeHierarchy
    _state_fields = ("level_reports", "bit_counts")
    _inferences = ("none", "hay")

    def __init__(self, spec: RangeHierarchy):
        self.spec = spec
        self.level_reports = np.zeros(spec.levels, dtype=np.int64)
        self.bit_counts = np.zeros((spec.levels, spec.leaves), dtype=np.int64)

    @property
    def n(self) -> int:
        return int(self.level_reports.sum())

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        level = int(checked.field("level"))
        bits = np.unpackbits(np.frombuffer(require_field(checked.field("bits"), "bits"), dtype=np.uint8))
        self._count(np.array([level]), bits[None, : self.spec.leaves])

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        level = check_int_column(batch.column("level"), "level", self.spec.levels)
        packed = check_packed_bits(batch.column("bits"), self.spec.leaves)
        self._count(level, np.unpackbits(packed, axis=1)[:, : self.spec.leaves])

    def _count(self, level: np.ndarray, bits: np.ndarray) -> None:
        spec = self.spec
        widths = np.power(spec.branching, level.astype(np.int64) + 1)
        beyond = np.arange(spec.leaves)[None, :] >= widths[:, None]
        if np.any(bits.astype(bool) & beyond):
            raise ReportError(
                "range-hierarchy: a report has bits set beyond its level's width (they must be 0)"
            )
        counts = np.zeros_like(self.bit_counts)
        np.add.at(counts, level, bits.astype(np.int64))
        self.bit_counts += counts
        self.level_reports += np.bincount(level, minlength=spec.levels)

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"level_reports", "bit_counts"}`` (:meth:`from_counts`)."""
        return cls.from_counts(spec, state_value(state, "level_reports"), state_value(state, "bit_counts"))

    @classmethod
    def from_counts(cls, spec: RangeHierarchy, level_reports: Any, bit_counts: Any) -> Self:
        """Rebuild from the sufficient statistics (validated): reports per level, set bits per (level, leaf slot)."""
        acc = cls(spec)
        reports = np.asarray(level_reports, dtype=np.int64)
        bits = np.asarray(bit_counts, dtype=np.int64)
        if reports.shape != acc.level_reports.shape or bits.shape != acc.bit_counts.shape:
            raise InputError("range-hierarchy counts have the wrong shape")
        if reports.min() < 0 or bits.min() < 0 or np.any(bits > reports[:, None]):
            raise InputError("range-hierarchy counts must be in [0, reports of their level]")
        acc.level_reports, acc.bit_counts = reports, bits
        return acc

    def merge(self, other: Self) -> Self:
        self._check_mergeable(other)
        out = type(self)(self.spec)
        out.level_reports = self.level_reports + other.level_reports
        out.bit_counts = self.bit_counts + other.bit_counts
        return out

    def coefficients(self) -> np.ndarray:
        """ĉ per node of levels 1..h: h(C − q·n_l)/(p − q), unbiased for the node's count over all n users."""
        spec = self.spec
        p, q, h = float(spec.p), float(spec.q), spec.levels
        parts = [
            h * (self.bit_counts[lv - 1, : spec.level_width(lv)] - q * self.level_reports[lv - 1]) / (p - q)
            for lv in range(1, h + 1)
        ]
        return np.concatenate(parts)

    def _leaf_map(self, inference: str) -> tuple[np.ndarray, np.ndarray]:
        spec = self.spec
        d = spec.domain_size
        if inference == "hay":
            projection, g = hierarchy_projection(d, spec.branching)
            return projection, g
        # raw: every leaf is its own node at level h
        width = spec.leaves
        lmap = np.zeros((d, self._node_count()))
        lmap[np.arange(d), self._node_count() - width + np.arange(d)] = 1.0
        return lmap, np.zeros(d)

    def range_answers(
        self, queries: Sequence[tuple[int, int]], inference: str = "default", true_counts: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Raw answers sum the fewest nodes covering each range (B-adic decomposition); consistent ones the leaves."""
        if self._check_inference(inference) == "hay":
            return super().range_answers(queries, inference, true_counts)
        leaves, _, _ = self.leaf_estimates("none")
        weights, const = self._decomposition(queries)
        variance = self._variance(weights, leaves if true_counts is None else true_counts)
        return self.coefficients() @ weights + self.n * const, variance

    def _node_count(self) -> int:
        return sum(self.spec.level_width(lv) for lv in range(1, self.spec.levels + 1))

    def _decomposition(self, queries: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """(W, c): node weights of the B-adic cover of each range (the root as the known n: c = 1)."""
        spec = self.spec
        b, h = spec.branching, spec.levels
        offsets = np.cumsum([0] + [spec.level_width(lv) for lv in range(1, h + 1)])
        weights = np.zeros((self._node_count(), len(queries)))
        const = np.zeros(len(queries))
        for column, (lo, hi) in enumerate(queries):
            if lo == 0 and hi == spec.domain_size - 1:
                const[column] = 1.0
                continue
            stack = [(1, node) for node in range(b)]
            while stack:  # nodes [a·span, (a + 1)·span) inside the range are taken, straddling ones split
                level, node = stack.pop()
                span = b ** (h - level)
                first, last = node * span, (node + 1) * span - 1
                if last < lo or first > hi:
                    continue
                if lo <= first and last <= hi:
                    weights[offsets[level - 1] + node, column] = 1.0
                else:
                    stack.extend((level + 1, node * b + child) for child in range(b))
        return weights, const

    def _variance(self, weights: np.ndarray, leaves: np.ndarray) -> np.ndarray:
        spec = self.spec
        p, q, h = float(spec.p), float(spec.q), spec.levels
        v1 = h * p * (1 - p) / (p - q) ** 2
        v0 = h * q * (1 - q) / (p - q) ** 2
        members = hierarchy_membership(spec.domain_size, spec.branching)
        return linear_variance(
            weights, n=self.n, flat=v0, node_extra=v1 + h - v0, members=members, leaves=leaves
        )


class HaarAccumulator(RangeAccumulator):
    """``range-haar``: reported bits per (level, Hadamard index, bit)."""

    spec: RangeHaar
    _state_fields = ("sign_counts",)

    def __init__(self, spec: RangeHaar):
        self.spec = spec
        self.sign_counts = np.zeros((spec.levels, spec.half_leaves, 2), dtype=np.int64)

    @property
    def n(self) -> int:
        return int(self.sign_counts.sum())

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        self._count(
            np.array([int(checked.field("level"))]),
            np.array([int(checked.field("index"))]),
            np.array([int(checked.field("bit"))]),
        )

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        spec = self.spec
        level = check_int_column(batch.column("level"), "level", spec.levels)
        index = check_int_column(batch.column("index"), "index", spec.half_leaves)
        bit = check_int_column(batch.column("bit"), "bit", 2)
        self._count(level, index, bit)

    def _count(self, level: np.ndarray, index: np.ndarray, bit: np.ndarray) -> None:
        if np.any(index >= np.left_shift(1, level.astype(np.int64))):
            raise ReportError("range-haar: a report's index must be below 2^level")
        counts = np.zeros_like(self.sign_counts)
        np.add.at(counts, (level, index, bit), 1)
        self.sign_counts += counts

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"sign_counts"}`` (:meth:`from_counts`)."""
        return cls.from_counts(spec, state_value(state, "sign_counts"))

    @classmethod
    def from_counts(cls, spec: RangeHaar, sign_counts: Any) -> Self:
        """Rebuild from reports per (level, index, bit) (validated)."""
        acc = cls(spec)
        counts = np.asarray(sign_counts, dtype=np.int64)
        if counts.shape != acc.sign_counts.shape or counts.min() < 0:
            raise InputError("range-haar counts have the wrong shape or a negative count")
        acc.sign_counts = counts
        return acc

    def merge(self, other: Self) -> Self:
        self._check_mergeable(other)
        out = type(self)(self.spec)
        out.sign_counts = self.sign_counts + other.sign_counts
        return out

    def coefficients(self) -> np.ndarray:
        """ĉ per coefficient: h/(2p − 1)·Σ_j H[j, a](#1 − #0) at (l, j), unbiased for #left − #right."""
        spec = self.spec
        h, p = spec.levels, float(spec.p)
        parts = []
        for level in range(h):
            width = 1 << level
            signed = (self.sign_counts[level, :width, 1] - self.sign_counts[level, :width, 0]).astype(float)
            j = np.arange(width)
            hadamard = 1 - 2 * (np.bitwise_count((j[:, None] & j[None, :]).astype(np.uint64)) & 1).astype(
                float
            )
            parts.append(h / (2 * p - 1) * (hadamard.T @ signed))
        return np.concatenate(parts)

    def _leaf_map(self, inference: str) -> tuple[np.ndarray, np.ndarray]:
        spec = self.spec
        return haar_synthesis(spec.domain_size, spec.leaves), np.full(spec.domain_size, 1.0 / spec.leaves)

    def _variance(self, weights: np.ndarray, leaves: np.ndarray) -> np.ndarray:
        spec = self.spec
        flat = spec.levels / (2 * float(spec.p) - 1) ** 2
        members = haar_signs(spec.domain_size, spec.leaves)
        return linear_variance(weights, n=self.n, flat=flat, node_extra=0.0, members=members, leaves=leaves)
