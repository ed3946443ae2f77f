"""Audit events of multi-attribute records: each attribute's own events, where its report carries it.

A record report carries attribute j's fields (``a{j}_{field}``) in the
reports that sample it (``smp``: bit j of ``sampled``) or in every report
(``spl`` and every RS+FD method). The audited pair of records differs in every
attribute (each attribute's own first pair, from its family), the worst case
of a record-level claim. The events are those of each attribute's family
(:mod:`ldp.registry`), computed on the attribute's part of the reports and
intersected with "the report carries attribute j": sets of whole record
outputs, so the claim's bound applies to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, first_reports
from ldp.errors import SpecError
from ldp.plugins import implementation
from ldp.report import BUILTIN_PAYLOAD
from ldp.report_check import CheckedReport
from ldp.report_schema import report_schema_of

__all__ = ["RecordEvents"]


def audit_family(spec: Any) -> AuditFamily:
    """The audit family of an attribute's mechanism (its declaration's ``audit_events``)."""
    family: AuditFamily = implementation(spec, "audit_events")()
    return family


def _view(features: Features, j: int) -> dict[str, np.ndarray]:
    """Attribute j's features, under the names its own family gave them."""
    prefix = f"{j}:"
    return {key[len(prefix) :]: value for key, value in features.items() if key.startswith(prefix)}


def _part_reports(
    spec: Any, reports: Sequence[CheckedReport], j: int
) -> tuple[list[CheckedReport], np.ndarray]:
    """Attribute j's own checked reports (the field's filler where a report does not carry it), and which carry it."""
    attribute = spec.attributes[j]
    fields = report_schema_of(attribute).fields
    carried = np.ones(len(reports), dtype=bool)
    out = []
    for i, report in enumerate(reports):
        builtin: dict[str, Any] = {}
        extra: list[tuple[str, Any]] = []
        for field in fields:
            value = report.field(spec.field_name(j, field.name))
            if value is None:
                carried[i] = False
                value = field.filler(attribute)
            if field.name in BUILTIN_PAYLOAD:
                builtin[field.name] = value
            else:
                extra.append((field.name, value))
        out.append(CheckedReport(**builtin, extra=tuple(extra)))
    return out, carried


class RecordEvents(AuditFamily):
    """Multi-attribute records: attribute j's events of its own family, in the reports that carry j."""

    name = "multi-attribute records"

    def pairs(self, spec: Any) -> list[tuple[Any, Any]]:
        """One pair of records that differ in every attribute (each attribute's own first pair)."""
        firsts = []
        for attribute in spec.attributes:
            found = audit_family(attribute).pairs(attribute)
            if not found:
                raise SpecError(
                    f"multi-attribute: attribute {attribute.mechanism} has no two inputs to audit"
                )
            firsts.append(found[0])
        return [(tuple(p[0] for p in firsts), tuple(p[1] for p in firsts))]

    def features(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]
    ) -> dict[str, np.ndarray]:
        reports = first_reports(samples)
        out: dict[str, np.ndarray] = {}
        for j, attribute in enumerate(spec.attributes):
            parts, carried = _part_reports(spec, reports, j)
            inner = audit_family(attribute).features(
                attribute, [[r] for r in parts], (pair[0][j], pair[1][j])
            )
            out |= {f"{j}:{key}": value for key, value in inner.items()}
            out[f"{j}:#carried"] = carried
        return out

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        out = []
        every = []
        for j, (name, attribute) in enumerate(zip(spec.names, spec.attributes, strict=True)):
            views = [_view(f, j) for f in selection]
            inner = audit_family(attribute).events(attribute, (pair[0][j], pair[1][j]), views)
            out += [Event(f"{name} reported and {event.name}", _carried_and(j, event)) for event in inner]
            every.append(inner)
        if spec.method != "smp" and all(every):
            # every attribute in every report (spl, RS+FD): the outputs where each attribute's i-th event
            # holds; the record's ratio is largest there (rsfd-grr: y = x0 in every attribute, the first
            # events; over UE with -z: bit x0 set and bit x1 clear in every attribute, a later one). The
            # i-th events pair up when every attribute has the same family; otherwise only the first.
            same = len({a.mechanism for a in spec.attributes}) == 1
            for i in range(min(len(e) for e in every) if same else 1):
                chosen = [events[i] for events in every]
                out.append(Event("every attribute: " + "; ".join(e.name for e in chosen), _all_of(chosen)))
        return out


def _carried_and(j: int, event: Event):
    def test(features: Features) -> np.ndarray:
        view = _view(features, j)
        return np.asarray(view["#carried"], dtype=bool) & np.asarray(event.test(view), dtype=bool)

    return test


def _all_of(events: Sequence[Event]):
    def test(features: Features) -> np.ndarray:
        out = np.ones(len(next(iter(features.values()))), dtype=bool)
        for j, event in enumerate(events):
            out &= np.asarray(event.test(_view(features, j)), dtype=bool)
        return out

    return test
