"""Audit events of count-mean sketch reports (CMS, HCMS): the report agrees with x0's sketch entry and not x1's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, bit_matrix, first_reports
from ldp.report_check import CheckedReport


class SketchEvents(AuditFamily):
    """Whether a report agrees with x0's (``s0``) and x1's (``s1``) sketch entry in its row.

    CMS: the bit at h_j(x); HCMS: the bit against H_m[l, h_j(x)]. ``differ``:
    the two entries differ (x0 and x1 do not collide in the row; HCMS: and
    their Hadamard signs differ in the column).
    """

    name = "count-mean sketch"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        first = first_reports(samples)
        table = spec.positions(list(pair))  # (2, k)
        rows = np.array([r.field("row") for r in first], dtype=np.int64)
        a0, a1 = table[0, rows], table[1, rows]
        if spec.mechanism == "cms":
            bits = bit_matrix(first, spec.m)
            index = np.arange(len(first))
            return {"s0": bits[index, a0], "s1": bits[index, a1], "differ": a0 != a1}
        columns = np.array([r.field("column") for r in first], dtype=np.int64)
        bit = np.array([r.field("bit") for r in first], dtype=np.int64)
        sign0 = np.array([1 - bin(c & a).count("1") % 2 for c, a in zip(columns.tolist(), a0.tolist())])
        sign1 = np.array([1 - bin(c & a).count("1") % 2 for c, a in zip(columns.tolist(), a1.tolist())])
        return {"s0": bit == sign0, "s1": bit == sign1, "differ": sign0 != sign1}

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        return [
            Event(f"agrees with {x0!r}'s sketch entry", lambda f: f["s0"]),
            Event(f"agrees with {x1!r}'s sketch entry", lambda f: f["s1"]),
            Event(f"agrees with {x0!r}'s entry, not {x1!r}'s", lambda f: f["s0"] & ~f["s1"] & f["differ"]),
            Event(f"agrees with {x1!r}'s entry, not {x0!r}'s", lambda f: f["s1"] & ~f["s0"] & f["differ"]),
        ]
