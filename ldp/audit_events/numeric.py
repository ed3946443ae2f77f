"""Audit events of numeric reports: the output lies above a threshold taken from the selection half."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, above, first_reports, thresholds
from ldp.report_check import CheckedReport


class NumericEvents(AuditFamily):
    """The range's two ends; "output > t" (its complement is the reverse direction of the same test)."""

    name = "numeric"

    def pairs(self, spec: Any) -> list[tuple[Any, Any]]:
        return [(float(spec.low), float(spec.high))]

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        return {"value": np.array([r.value for r in first_reports(samples)], dtype=float)}

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        return [Event(f"output > {t:.6g}", above(t)) for t in thresholds(selection)]
