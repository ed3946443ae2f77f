"""Audit events of the range mechanisms: one report, at the pair's distinguishing outputs.

``range-hierarchy``: at the report's level the two inputs' nodes differ (or
the event is empty); the event "x's node bit set and x′'s clear" has
probability P_diff·p(1 − q) under x and P_diff·q(1 − p) under x′, ratio
exactly e^ε (P_diff the chance of a level where the nodes differ).

``range-haar``: the event "the reported sign is x's transformed sign
H[j, a]·s and x′'s is the opposite" has probability P_diff·p under x and
P_diff·(1 − p) under x′, ratio p/(1 − p).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, bit_matrix, first_reports
from ldp.report_check import CheckedReport


class HierarchyEvents(AuditFamily):
    """x's node bit set and x′'s clear at the report's level (and the reverse)."""

    name = "range hierarchy reports"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        reports = first_reports(samples)
        level = np.array([int(r.field("level")) for r in reports], dtype=np.int64) + 1
        bits = bit_matrix(reports, spec.leaves)
        rows = np.arange(len(reports))
        shift = np.power(spec.branching, spec.levels - level)
        node = [spec.index_of(value) // shift for value in pair]
        return {
            "differ": (node[0] != node[1]).astype(float),
            "first": bits[rows, node[0]].astype(float),
            "second": bits[rows, node[1]].astype(float),
        }

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        def first_only(f: Features) -> np.ndarray:
            return (f["differ"] > 0) & (f["first"] > 0) & (f["second"] == 0)

        def second_only(f: Features) -> np.ndarray:
            return (f["differ"] > 0) & (f["second"] > 0) & (f["first"] == 0)

        return [
            Event(f"bit of {pair[0]!r}'s node set, {pair[1]!r}'s clear", first_only),
            Event(f"bit of {pair[1]!r}'s node set, {pair[0]!r}'s clear", second_only),
        ]


class HaarEvents(AuditFamily):
    """The reported sign is x's transformed Haar sign where x′'s is the opposite (and the reverse)."""

    name = "range haar reports"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        from ldp.client.ranges import haar_sign

        reports = first_reports(samples)
        level = np.array([int(r.field("level")) for r in reports], dtype=np.int64)
        j = np.array([int(r.field("index")) for r in reports], dtype=np.int64)
        bit = np.array([int(r.field("bit")) for r in reports], dtype=np.int64)
        signs = [haar_sign(spec.index_of(value), spec.leaves, level, j) for value in pair]
        return {
            "differ": (signs[0] != signs[1]).astype(float),
            "first": ((2 * bit - 1) == signs[0]).astype(float),
        }

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        def first(f: Features) -> np.ndarray:
            return (f["differ"] > 0) & (f["first"] > 0)

        def second(f: Features) -> np.ndarray:
            return (f["differ"] > 0) & (f["first"] == 0)

        return [
            Event(f"sign of {pair[0]!r} where {pair[1]!r}'s differs", first),
            Event(f"sign of {pair[1]!r} where {pair[0]!r}'s differs", second),
        ]
