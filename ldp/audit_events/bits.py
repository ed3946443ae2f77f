"""Audit events of bit-vector reports over the domain: SUE, OUE and subset selection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ldp.audit_events.base import AuditFamily, Event, Features, bit_matrix, first_reports, two_bits
from ldp.report_check import CheckedReport


class DomainBitEvents(AuditFamily):
    """A bit set, and the conjunctions of x0's and x1's bits (``bit x0 = 1 and bit x1 = 0`` attains e^ε)."""

    name = "domain bit vectors"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        return {"bits": bit_matrix(first_reports(samples), spec.domain_size)}

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        i0, i1 = spec.index_of(x0), spec.index_of(x1)
        events = [
            Event(f"bit {x0!r} set", lambda f: f["bits"][:, i0]),
            Event(f"bit {x1!r} set", lambda f: f["bits"][:, i1]),
        ]
        for a in (0, 1):
            for b in (0, 1):
                events.append(Event(f"bit {x0!r} = {a} and bit {x1!r} = {b}", two_bits(i0, a, i1, b)))
        return events
