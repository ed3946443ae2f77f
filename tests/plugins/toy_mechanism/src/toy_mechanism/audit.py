"""Audit events for ``ldp audit``: the reported index equals x0's (or x1's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, first_reports
from ldp.report_check import CheckedReport


class ToyEvents(AuditFamily):
    """The two events that tell a pair of inputs apart best: output index = index of x0, of x1."""

    name = "index reports"

    def features(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]
    ) -> Features:
        return {"index": np.array([r.field("index") for r in first_reports(samples)], dtype=np.int64)}

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        i0, i1 = spec.index_of(pair[0]), spec.index_of(pair[1])
        return [
            Event(f"index = {i0}", lambda f: f["index"] == i0),
            Event(f"index = {i1}", lambda f: f["index"] == i1),
        ]
