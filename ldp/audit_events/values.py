"""Audit events of reports that are one output value: GRR and binary RR (a domain value), Hadamard response (an output index)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, first_reports
from ldp.report_check import CheckedReport


def _values(samples: Sequence[Sequence[CheckedReport]]) -> dict[str, np.ndarray]:
    return {"value": np.array([r.value for r in first_reports(samples)], dtype=np.int64)}


class ValueEvents(AuditFamily):
    """GRR, binary RR: the output equals x0 (or x1)."""

    name = "value reports"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        return _values(samples)

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        i0, i1 = spec.index_of(x0), spec.index_of(x1)
        return [
            Event(f"output = {x0!r}", lambda f: f["value"] == i0),
            Event(f"output = {x1!r}", lambda f: f["value"] == i1),
        ]


class HadamardEvents(AuditFamily):
    """Hadamard response: the output lies in C_x0 (and not in C_x1), or the reverse."""

    name = "Hadamard response"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        return _values(samples)

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        c0 = spec.output_set(spec.index_of(x0))
        c1 = spec.output_set(spec.index_of(x1))
        only0, only1 = np.setdiff1d(c0, c1), np.setdiff1d(c1, c0)
        return [
            Event(f"output in C_{x0!r}", lambda f: np.isin(f["value"], c0)),
            Event(f"output in C_{x1!r}", lambda f: np.isin(f["value"], c1)),
            Event(f"output in C_{x0!r} but not C_{x1!r}", lambda f: np.isin(f["value"], only0)),
            Event(f"output in C_{x1!r} but not C_{x0!r}", lambda f: np.isin(f["value"], only1)),
        ]
