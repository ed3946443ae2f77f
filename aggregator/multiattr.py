"""Aggregate multi-attribute records (docs/multi-attribute.md): every attribute's estimate with SE and CI.

``smp`` and ``spl`` feed each attribute's reports to that attribute's own
registered accumulator (:func:`~ldp.aggregator.accumulators.make_aggregator`)
and rescale its counts from the n_j users who reported it to all n users:
n·f̂_j, whose standard error adds to the mechanism's variance the sampling
variance of the n_j users' share (:func:`_to_all_records`). A numeric
attribute's mean and its standard error are those of the n_j reporters
(the sampling variance of their mean, at most ((high − low)/2)²(n − n_j)/(n_j·n),
is not included); sums are rescaled. Estimates are unbiased given n_j ≥ 1. ``rsfd-grr`` counts the
reported values of each attribute and applies the pure-oracle estimate with
the support probabilities of :func:`~ldp.specs.multiattr.rsfd_support_probabilities`
(the paper's unbiased estimator) and its fixed-data variance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.estimates import normal_quantile, oracle_estimates
from ldp.client.multiattr import RecordBatch
from ldp.errors import EstimateError, InputError
from ldp.specs.multiattr import MultiAttribute, rsfd_support_probabilities

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MultiAttributeAccumulator"]


class MultiAttributeAccumulator:
    """Integer counts of a :class:`~ldp.specs.multiattr.MultiAttribute` collection, per attribute.

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.specs.multiattr import MultiAttribute
    >>> from ldp.client.multiattr import encode_records
    >>> from ldp.aggregator.multiattr import MultiAttributeAccumulator
    >>> spec = MultiAttribute([{"name": "os", "mechanism": "grr", "domain": ["l", "m", "w"]},
    ...                        {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100}], epsilon=1.0)
    >>> acc = MultiAttributeAccumulator(spec)
    >>> acc.add_batch(encode_records(spec, {"os": ["l"] * 500, "ms": [10.0] * 500},
    ...                              np.random.default_rng(2)))  # insecure-ok: seeded, doctest only
    >>> sorted(acc.estimate(0.95)), acc.n
    (['ms', 'os'], 500)
    """

    def __init__(self, spec: MultiAttribute) -> None:
        self.spec = spec
        self._n = 0
        self._parts: list[Accumulator] = []
        self._counts: list[np.ndarray] = []
        if spec.method == "rsfd-grr":
            self._counts = [np.zeros(a.domain_size, dtype=np.int64) for a in spec.attributes]  # type: ignore[attr-defined]
        else:
            self._parts = [make_aggregator(a) for a in spec.attributes]

    @classmethod
    def for_spec(cls, spec: MultiAttribute, threads: int | None = 1) -> Self:
        """The accumulator of ``spec`` (``threads`` is accepted for the registry's call form)."""
        return cls(spec)

    @property
    def n(self) -> int:
        """Records added."""
        return self._n

    def add_batch(self, batch: RecordBatch) -> None:
        """Add a :class:`~ldp.client.multiattr.RecordBatch` of this spec."""
        if batch.spec != self.spec.fingerprint:
            raise InputError(
                f"record batch is of spec {batch.spec}, this accumulator of spec {self.spec.fingerprint}"
            )
        if self.spec.method == "rsfd-grr":
            if batch.indices is None or batch.indices.shape != (batch.n, self.spec.dimension):
                raise InputError("an rsfd-grr record batch needs an (n, d) matrix of reported indices")
            for j, counts in enumerate(self._counts):
                column = batch.indices[:, j]
                if column.size and (column.min() < 0 or column.max() >= counts.size):
                    raise InputError(
                        f"attribute {self.spec.names[j]!r}: reported index outside [0, {counts.size})"
                    )
                counts += np.bincount(column, minlength=counts.size)
        else:
            if len(batch.reports) != self.spec.dimension:
                raise InputError(
                    f"record batch has {len(batch.reports)} attributes, the spec {self.spec.dimension}"
                )
            for part, reports in zip(self._parts, batch.reports, strict=True):
                part.add_batch(reports)
        self._n += batch.n

    def merge(self, other: MultiAttributeAccumulator) -> MultiAttributeAccumulator:
        """Add the counts of ``other`` (same spec) to these; returns self."""
        if other.spec.fingerprint != self.spec.fingerprint:
            raise InputError("cannot merge accumulators of different specs")
        for mine, theirs in zip(self._counts, other._counts, strict=True):
            mine += theirs
        for part, other_part in zip(self._parts, other._parts, strict=True):
            part.merge(other_part)
        self._n += other._n
        return self

    def reporters(self) -> dict[str, int]:
        """n_j: the users whose report carries each attribute truthfully or by sampling (rsfd-grr: all n)."""
        if self.spec.method == "rsfd-grr":
            return dict.fromkeys(self.spec.names, self._n)
        return {name: part.n for name, part in zip(self.spec.names, self._parts, strict=True)}

    def estimate(self, confidence: float = 0.95, **options: Any) -> dict[str, pd.DataFrame]:
        """Every attribute's estimate table (its own accumulator's columns), counts scaled to all n records."""
        if self._n == 0:
            raise EstimateError("cannot estimate from zero records")
        out: dict[str, pd.DataFrame] = {}
        if self.spec.method == "rsfd-grr":
            d = self.spec.dimension
            for name, attr, counts in zip(self.spec.names, self.spec.attributes, self._counts, strict=True):
                size = attr.domain_size  # type: ignore[attr-defined]
                p_star, q_star = rsfd_support_probabilities(attr.p_star, attr.q_star, d, size)  # type: ignore[attr-defined]
                out[name] = oracle_estimates(
                    attr.domain,  # type: ignore[attr-defined]
                    counts,
                    self._n,
                    p_star,
                    q_star,
                    confidence=confidence,
                    **options,
                )
            return out
        for name, part in zip(self.spec.names, self._parts, strict=True):
            if part.n == 0:
                raise EstimateError(f"attribute {name!r}: no user sampled it yet")
            table = part.estimate(confidence, **options)
            if "proportion" in table.columns:
                _to_all_records(table, part.n, self._n, confidence)
            else:
                for column in (c for c in table.columns if c.startswith("sum")):
                    table[column] = table[column] * (self._n / part.n)
            table.insert(len(table.columns), "reports", part.n)
            out[name] = table
        return out


def _to_all_records(table: pd.DataFrame, reporters: int, n: int, confidence: float) -> None:
    """Rescale a frequency table from the n_j reporters to all n records, adding the sampling variance.

    f̂_j estimates the share among the n_j users who sampled attribute j, a
    uniform sample without replacement of the n: its fixed-data variance
    gains f(1 − f)(n − n_j)/(n_j(n − 1)) (zero under ``spl``), taken at the
    clipped estimate; the count is n·f̂_j, with standard error n·SE(f̂_j).
    """
    f = np.clip(table["proportion"].to_numpy(dtype=float), 0.0, 1.0)
    noise = (table["std_error"].to_numpy(dtype=float) / reporters) ** 2
    sampling = f * (1 - f) * (n - reporters) / (reporters * max(n - 1, 1))
    se = n * np.sqrt(noise + sampling)
    estimate = n * table["proportion"].to_numpy(dtype=float)
    z = normal_quantile(confidence)
    columns = {
        "estimate": estimate,
        "std_error": se,
        "ci_low": estimate - z * se,
        "ci_high": estimate + z * se,
    }
    for column, values in columns.items():
        table[column] = values
    if "unbiased_estimate" in table.columns:  # a consistent view: the unbiased column is a count too
        table["unbiased_estimate"] = table["unbiased_estimate"] * (n / reporters)
