"""Columnar batches of reports, the unit of vectorized encoding and aggregation.

A :class:`ReportBatch` holds n reports of one spec as NumPy columns, one per
payload field of the spec's report schema (:mod:`ldp.report_schema`), keyed
by field name. The four built-in fields have attributes of their own:

=================  ============================================================
``values``         field ``value``: int64 domain *indices* (BinaryRR, GRR),
                   int64 buckets (OLH, BLH), or float64 numbers (numeric
                   mechanisms)
``seeds``          field ``seed``: uint64 hash seeds (OLH, BLH)
``bits``           field ``bits``: uint8 array of shape (n, num_bytes), packed
                   as numpy.packbits
``cohorts``        field ``cohort``: int64 cohort numbers (RAPPOR)
``groups``         object array of group keys (``str``, or ``None`` for a
                   report without one); optional for every mechanism
=================  ============================================================

Any other field a schema declares (``"index"``, ``"row"``, ...) is a column
of :attr:`ReportBatch.extra`; :meth:`ReportBatch.column` reads any field by
name, and :meth:`ReportBatch.from_columns` builds a batch from columns by name.

Columns a mechanism does not use are ``None``; ``groups`` is ``None`` when no
report of the batch carries a group key. Group keys are sent in the clear
(they are not privatized), see :mod:`ldp.report`. A batch is validated against
its spec by whoever builds it (the vectorized client, or the aggregator's
readers), so accumulators can trust it.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ldp.report import Report
from ldp.report_schema import report_schema_of

__all__ = ["ReportBatch"]

#: Built-in payload field name → ReportBatch attribute.
_ATTRIBUTES = {"value": "values", "seed": "seeds", "bits": "bits", "cohort": "cohorts"}


@dataclasses.dataclass(frozen=True)
class ReportBatch:
    """n validated reports of the spec with fingerprint ``spec``.

    ``extra`` maps the names of payload fields other than value, seed, bits
    and cohort to their columns.
    """

    spec: str
    values: np.ndarray | None = None
    seeds: np.ndarray | None = None
    bits: np.ndarray | None = None
    cohorts: np.ndarray | None = None
    groups: np.ndarray | None = None
    extra: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def from_columns(
        cls, spec: str, columns: Mapping[str, np.ndarray], groups: np.ndarray | None = None
    ) -> ReportBatch:
        """A batch of the payload ``columns`` keyed by field name."""
        builtin = {_ATTRIBUTES[name]: col for name, col in columns.items() if name in _ATTRIBUTES}
        extra = {name: col for name, col in columns.items() if name not in _ATTRIBUTES}
        return cls(spec=spec, groups=groups, extra=extra, **builtin)

    def column(self, name: str) -> np.ndarray | None:
        """The column of payload field ``name`` (None when the batch has none)."""
        attribute = _ATTRIBUTES.get(name)
        if attribute is not None:
            column: np.ndarray | None = getattr(self, attribute)
            return column
        return self.extra.get(name)

    def columns(self) -> dict[str, np.ndarray]:
        """Every payload column the batch has, by field name."""
        out = {
            name: getattr(self, attr) for name, attr in _ATTRIBUTES.items() if getattr(self, attr) is not None
        }
        out.update(self.extra)
        return out

    def __len__(self) -> int:
        for column in (self.values, self.bits, self.seeds, self.cohorts, *self.extra.values()):
            if column is not None:
                return int(column.shape[0])
        return 0

    def reports(self, spec: Any) -> Iterator[Report]:
        """Yield the batch as :class:`Report` records (domain values restored)."""
        schema = report_schema_of(spec)
        columns = [(field, self.column(field.name)) for field in schema.fields]
        have = self.columns()
        carried = [schema.presence(field, have) if field.presence_flag() else None for field, _ in columns]
        for i in range(len(self)):
            fields: dict[str, Any] = {}
            extra: list[tuple[str, Any]] = []
            for (field, column), mask in zip(columns, carried, strict=True):
                if column is None or (mask is not None and not mask[i]):
                    continue
                value = field.to_report(spec, column[i])
                if field.name in _ATTRIBUTES:
                    fields[field.name] = value
                else:
                    extra.append((field.name, value))
            if self.groups is not None and self.groups[i] is not None:
                fields["group"] = str(self.groups[i])
            yield Report(spec=self.spec, extra=tuple(extra), **fields)

    def to_json_lines(self, spec: Any) -> Iterator[str]:
        """The batch as JSON Lines text (one report per string, no newline)."""
        for report in self.reports(spec):
            yield report.to_json()

    def bits_base64(self) -> list[str]:
        """Base64 text of each row's packed bits (for JSON/CSV writers)."""
        if self.bits is None:
            raise ValueError("batch has no bits column")
        return [base64.b64encode(row.tobytes()).decode("ascii") for row in self.bits]
