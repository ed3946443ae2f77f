"""Aggregate multi-attribute records (docs/multi-attribute.md): every attribute's estimate with SE and CI.

``smp`` and ``spl`` feed each attribute's reports to that attribute's own
registered accumulator (:func:`~ldp.aggregator.accumulators.make_aggregator`)
and rescale its counts from the n_j users who reported it to all n users:
n·f̂_j, whose standard error adds to the mechanism's variance the sampling
variance of the n_j users' share (:func:`_to_all_records`). A numeric
attribute's mean and its standard error are those of the n_j reporters:
SE² = s²/n_j (s² the reports' empirical variance), whose expectation exceeds
the fixed-data variance v̄/n_j + (1 − n_j/n)S²/n_j, sampling variance
included, by exactly S²/n: conservative (docs/multi-attribute.md#estimators).
Sums are rescaled. Estimates are unbiased given n_j ≥ 1. The RS+FD methods
count, per attribute and value, the reports that support it (``rsfd-grr``: the
reported value; over SUE/OUE: the reports with its bit set) and apply the
pure-oracle estimate with the support probabilities of
:func:`~ldp.specs.multiattr.rsfd_support_probabilities` (the paper's
unbiased estimators) and its exact fixed-data variance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import (
    Accumulator,
    FrequencyAccumulator,
    check_int_column,
    check_packed_bits,
    make_aggregator,
    require_field,
    state_value,
)
from ldp.aggregator.bitcounts import unpacked_bit_counts
from ldp.aggregator.estimates import CONSISTENT_COLUMN, normal_quantile, oracle_estimates
from ldp.aggregator.report_columns import batch_from_checked
from ldp.batch import ReportBatch
from ldp.client.multiattr import RecordBatch
from ldp.errors import EstimateError, InputError
from ldp.report import Report
from ldp.report_check import check_report
from ldp.report_schema import report_schema_of
from ldp.specs.multiattr import SAMPLED_FIELD, MultiAttribute, rsfd_support_probabilities

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MultiAttributeAccumulator"]


class MultiAttributeAccumulator(Accumulator):
    """Integer counts of a :class:`~ldp.specs.multiattr.MultiAttribute` collection, per attribute.

    The accumulator ``multi-attribute`` declares: it takes record reports
    (:meth:`add`, :meth:`add_batch` of a :class:`~ldp.batch.ReportBatch`)
    and the :class:`~ldp.client.multiattr.RecordBatch` of
    :func:`~ldp.client.multiattr.encode_records`. :meth:`estimate` is one
    table of every attribute's rows, :meth:`estimates` one table per attribute.

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
    >>> sorted(acc.estimates(0.95)), acc.n, acc.estimate()["attribute"].unique().tolist()
    (['ms', 'os'], 500, ['os', 'ms'])
    """

    def __init__(self, spec: MultiAttribute) -> None:
        self.spec = spec
        self._n = 0
        self._parts: list[Accumulator] = []
        self._counts: list[np.ndarray] = []
        if spec.rsfd:
            self._counts = [np.zeros(a.domain_size, dtype=np.int64) for a in spec.attributes]  # type: ignore[attr-defined]
        else:
            self._parts = [make_aggregator(a) for a in spec.attributes]

    @classmethod
    def from_parts(cls, spec: MultiAttribute, parts: Sequence[Any], n: int) -> Self:
        """An accumulator of ``n`` records from its per-attribute state (simulation).

        ``parts``: per attribute, its accumulator (``smp``, ``spl``) or its
        count per domain value (RS+FD).
        """
        if len(parts) != spec.dimension:
            raise InputError(f"{len(parts)} attribute parts, the spec has {spec.dimension} attributes")
        out = cls(spec)
        if spec.rsfd:
            out._counts = [np.asarray(c, dtype=np.int64).copy() for c in parts]
            if any(c.shape != mine.shape for c, mine in zip(out._counts, cls(spec)._counts, strict=True)):
                raise InputError(f"{spec.method} parts must hold one count per value of each attribute")
        else:
            out._parts = list(parts)
        out._n = int(n)
        return out

    def state(self) -> dict[str, Any]:
        """``{"n", "parts"}``: the records, and per attribute its count per value (RS+FD) or its
        accumulator's state."""
        parts = self._counts if self.spec.rsfd else [part.state() for part in self._parts]
        return {"n": self.n, "parts": list(parts)}

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"n", "parts"}`` (:meth:`from_parts`; each attribute's accumulator from its own state)."""
        parts, n = state_value(state, "parts"), state_value(state, "n")
        if not isinstance(parts, list) or len(parts) != spec.dimension:
            raise InputError(f"the saved state must hold {spec.dimension} attribute parts")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}")
        if not spec.rsfd:
            parts = [
                type(make_aggregator(attribute)).from_state(attribute, part)
                for attribute, part in zip(spec.attributes, parts, strict=True)
            ]
        return cls.from_parts(spec, parts, n)

    @classmethod
    def for_spec(cls, spec: MultiAttribute, threads: int | None = 1) -> Self:
        """The accumulator of ``spec`` (``threads`` is accepted for the registry's call form)."""
        return cls(spec)

    @property
    def n(self) -> int:
        """Records added."""
        return self._n

    def add(self, report: Report) -> None:
        """Count one record report (checked against the spec)."""
        self.add_batch(batch_from_checked(self.spec, [check_report(self.spec, report)]))

    def add_batch(self, batch: ReportBatch | RecordBatch) -> None:
        """Add a batch of record reports, or a :class:`~ldp.client.multiattr.RecordBatch` of this spec."""
        if isinstance(batch, RecordBatch):
            self._add_records(batch)
            return
        self._check_batch(batch)
        n = len(batch)
        if self.spec.method == "rsfd-grr":
            for j, counts in enumerate(self._counts):
                name = self.spec.field_name(j, "value")
                column = check_int_column(batch.column(name), name, counts.size)
                counts += np.bincount(column, minlength=counts.size)
            self._n += n
            return
        if self.spec.rsfd:
            for j, counts in enumerate(self._counts):
                name = self.spec.field_name(j, "bits")
                counts += unpacked_bit_counts(check_packed_bits(batch.column(name), counts.size), counts.size)
            self._n += n
            return
        if self.spec.method == "smp":
            packed = check_packed_bits(batch.column(SAMPLED_FIELD), self.spec.dimension)
            member = np.unpackbits(packed, axis=1)[:, : self.spec.dimension].astype(bool)
        else:
            member = np.ones((n, self.spec.dimension), dtype=bool)
        for j, (attribute, part) in enumerate(zip(self.spec.attributes, self._parts, strict=True)):
            rows = np.flatnonzero(member[:, j])
            columns = {}
            for inner in report_schema_of(attribute).names:
                name = self.spec.field_name(j, inner)
                columns[inner] = require_field(batch.column(name), name)[rows]
            part.add_batch(ReportBatch.from_columns(attribute.fingerprint, columns))
        self._n += n

    def _add_records(self, batch: RecordBatch) -> None:
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
        elif self.spec.rsfd:
            if len(batch.reports) != self.spec.dimension or any(len(r) != batch.n for r in batch.reports):
                raise InputError(
                    f"a {self.spec.method} record batch needs every attribute's bits for every user"
                )
            for counts, reports in zip(self._counts, batch.reports, strict=True):
                bits = check_packed_bits(reports.column("bits"), counts.size)
                counts += unpacked_bit_counts(bits, counts.size)
        else:
            if len(batch.reports) != self.spec.dimension:
                raise InputError(
                    f"record batch has {len(batch.reports)} attributes, the spec {self.spec.dimension}"
                )
            for part, reports in zip(self._parts, batch.reports, strict=True):
                part.add_batch(reports)
        self._n += batch.n

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the records of both (same spec); neither is changed."""
        self._check_mergeable(other)
        out = type(self)(self.spec)
        out._counts = [mine + theirs for mine, theirs in zip(self._counts, other._counts, strict=True)]
        out._parts = [mine.merge(theirs) for mine, theirs in zip(self._parts, other._parts, strict=True)]
        out._n = self._n + other._n
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return (
            other.spec.fingerprint == self.spec.fingerprint
            and other._n == self._n
            and all(np.array_equal(a, b) for a, b in zip(self._counts, other._counts, strict=True))
            and all(a == b for a, b in zip(self._parts, other._parts, strict=True))
        )

    __hash__ = None  # mutable counts

    def reporters(self) -> dict[str, int]:
        """n_j: the users whose report carries each attribute truthfully or by sampling (RS+FD: all n)."""
        if self.spec.rsfd:
            return dict.fromkeys(self.spec.names, self._n)
        return {name: part.n for name, part in zip(self.spec.names, self._parts, strict=True)}

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> pd.DataFrame:
        """Every attribute's estimates in one table, the attributes in spec order.

        Columns ``attribute``, ``statistic`` (``count`` for a categorical
        attribute's rows, one per value; ``mean`` for a numeric attribute's
        one row), ``value`` (None on a mean row), ``estimate``,
        ``std_error``, ``ci_low``, ``ci_high`` and ``reports`` (n_j), then
        the columns some attributes have (``proportion``, the consistent
        view's ``consistent``; empty elsewhere). ``consistency``
        applies to the frequency attributes only.
        """
        import pandas as pd

        frames = []
        for name, table in self.estimates(confidence, consistency=consistency, **options).items():
            attribute = self.spec.attribute(name)
            if "mean" in table.columns:
                row = {
                    "attribute": name,
                    "statistic": "mean",
                    "value": None,
                    "estimate": table["mean"].to_numpy(float),
                    "std_error": table["std_error"].to_numpy(float),
                    "ci_low": table["ci_low"].to_numpy(float),
                    "ci_high": table["ci_high"].to_numpy(float),
                    "reports": table["reports"].to_numpy() if "reports" in table else self._n,
                }
                frames.append(pd.DataFrame(row))
                continue
            frame = table.copy()
            frame.insert(0, "statistic", "count")
            frame.insert(0, "attribute", name)
            frame["value"] = frame["value"].astype(object)
            if "reports" not in frame.columns:
                frame["reports"] = self._n
            del attribute
            frames.append(frame)
        out = pd.concat(frames, ignore_index=True, sort=False)
        lead = ["attribute", "statistic", "value", "estimate", "std_error", "ci_low", "ci_high", "reports"]
        return out[lead + [c for c in out.columns if c not in lead]]

    def estimates(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> dict[str, pd.DataFrame]:
        """Every attribute's estimate table (its own accumulator's columns), counts scaled to all n records."""
        if self._n == 0:
            raise EstimateError("cannot estimate from zero records")
        out: dict[str, pd.DataFrame] = {}
        if self.spec.rsfd:
            d = self.spec.dimension
            for name, attr, counts in zip(self.spec.names, self.spec.attributes, self._counts, strict=True):
                size = attr.domain_size
                p_star, q_star = rsfd_support_probabilities(
                    attr.p_star, attr.q_star, d, size, self.spec.method
                )
                out[name] = oracle_estimates(
                    attr.domain,
                    counts,
                    self._n,
                    p_star,
                    q_star,
                    confidence=confidence,
                    consistency=consistency,
                    **options,
                )
            return out
        for name, part in zip(self.spec.names, self._parts, strict=True):
            if part.n == 0:
                raise EstimateError(f"attribute {name!r}: no user sampled it yet")
            if isinstance(part, FrequencyAccumulator):
                table = part.estimate(confidence, consistency=consistency, **options)
                _to_all_records(table, part.n, self._n, confidence)
            else:
                table = part.estimate(confidence, **options)
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
    if CONSISTENT_COLUMN in table.columns:  # the consistent view sums to n_j: rescaled, it sums to n
        table[CONSISTENT_COLUMN] = table[CONSISTENT_COLUMN] * (n / reporters)
