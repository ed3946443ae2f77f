"""Columnar batches of reports, the unit of vectorized encoding and aggregation.

A :class:`ReportBatch` holds n reports of one spec as NumPy columns:

=================  ============================================================
``values``         int64 domain *indices* (BinaryRR, GRR), int64 buckets
                   (OLH, BLH), or float64 numbers (numeric mechanisms)
``seeds``          uint64 hash seeds (OLH, BLH)
``bits``           uint8 array of shape (n, num_bytes), packed as numpy.packbits
``cohorts``        int64 cohort numbers (RAPPOR)
``groups``         object array of group keys (``str``, or ``None`` for a
                   report without one); optional for every mechanism
=================  ============================================================

Columns a mechanism does not use are ``None``; ``groups`` is ``None`` when no
report of the batch carries a group key. Group keys are sent in the clear
(they are not privatized), see :mod:`ldp.report`. A batch is validated against
its spec by whoever builds it (the vectorized client, or the aggregator's
readers), so accumulators can trust it.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator

import numpy as np

from ldp.report import Report

__all__ = ["ReportBatch"]


@dataclasses.dataclass(frozen=True)
class ReportBatch:
    """n validated reports of the spec with fingerprint ``spec``."""

    spec: str
    values: np.ndarray | None = None
    seeds: np.ndarray | None = None
    bits: np.ndarray | None = None
    cohorts: np.ndarray | None = None
    groups: np.ndarray | None = None

    def __len__(self) -> int:
        for column in (self.values, self.bits, self.seeds, self.cohorts):
            if column is not None:
                return int(column.shape[0])
        return 0

    def reports(self, spec) -> Iterator[Report]:
        """Yield the batch as :class:`Report` records (domain values restored)."""
        domain = getattr(spec, "domain", None)
        kind = getattr(spec, "report_kind", "")
        for i in range(len(self)):
            fields: dict = {}
            if self.values is not None:
                raw = self.values[i].item()
                fields["value"] = domain[raw] if kind == "value" and domain is not None else raw
            if self.seeds is not None:
                fields["seed"] = int(self.seeds[i])
            if self.bits is not None:
                fields["bits"] = self.bits[i].tobytes()
            if self.cohorts is not None:
                fields["cohort"] = int(self.cohorts[i])
            if self.groups is not None and self.groups[i] is not None:
                fields["group"] = str(self.groups[i])
            yield Report(spec=self.spec, **fields)

    def to_json_lines(self, spec) -> Iterator[str]:
        """The batch as JSON Lines text (one report per string, no newline)."""
        for report in self.reports(spec):
            yield report.to_json()

    def bits_base64(self) -> list[str]:
        """Base64 text of each row's packed bits (for JSON/CSV writers)."""
        if self.bits is None:
            raise ValueError("batch has no bits column")
        return [base64.b64encode(row.tobytes()).decode("ascii") for row in self.bits]
