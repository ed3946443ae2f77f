"""Audit events of the longitudinal chains: one report (claim ε₁) and r reports of one client (their exact ε, ≤ ε∞).

One report is tested with the events of its one-shot counterpart (the output
value for L-GRR, the bits for the unary chains). Over r reports of one value
the memo is read back from the reports: the most frequent reported value
(L-GRR), or each bit by a vote (ones above the midpoint of r·p₂ and r·q₂),
and the same events are tried on it. The r reports are also tested against
the memoized model (:mod:`ldp.audit_memo`, :meth:`~ldp.audit_memo.MemoModel.chain`):
a client that re-draws its memo for every report is rejected. For L-GRR the
test counts, per client, the reports equal to its true value (one cell per
client: the counts of several values of one client are not independent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import MIN_MEMO_REPORTS, AuditFamily, Claim, Event, Features, bit_matrix, two_bits
from ldp.audit_memo import MemoModel
from ldp.report_check import CheckedReport

__all__ = ["ChainBitEvents", "ChainValueEvents"]


class _ChainEvents(AuditFamily):
    def claims(self, spec: Any, memo_reports: int, memoized: bool) -> list[Claim]:
        """One report at ε₁; with ``memo_reports`` > 1, also r = max(``memo_reports``, 50) reports of one client
        at their exact ε (≤ ε∞).

        That is ``spec.memo_epsilon(r)``, not min(ε∞, r·ε₁), which r reports
        sharing a memo may exceed (docs/longitudinal/chains.md#many-reports).
        """
        claims = super().claims(spec, memo_reports, memoized)
        if memoized and memo_reports > 1:
            reports = max(memo_reports, MIN_MEMO_REPORTS)
            epsilon = spec.memo_epsilon(reports)
            claims.append(Claim(f"{reports} memoized reports", epsilon, 0.0, reports))
        return claims

    def memo_model(self, spec: Any, claim: Claim) -> MemoModel | None:
        """r ≥ 2 reports are tested against the memoized model of the chain."""
        if claim.reports < 2:
            return None
        return MemoModel.chain(spec.p1, spec.q1, spec.p2, spec.q2, claim.reports)


def _value_counts(spec: Any, samples: Sequence[Sequence[CheckedReport]]) -> np.ndarray:
    """Samples × k: how often each domain index was reported among a sample's reports."""
    counts = np.zeros((len(samples), spec.domain_size), dtype=np.int64)
    for j in range(len(samples[0]) if samples else 0):
        column = np.array([s[j].value for s in samples], dtype=np.int64)
        counts[np.arange(len(samples)), column] += 1
    return counts


class ChainValueEvents(_ChainEvents):
    """L-GRR: the output (one report) or the most frequent output (r reports, the memo read back) is x0 or x1."""

    name = "longitudinal value reports"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        counts = _value_counts(spec, samples)
        return {
            "value": np.argmax(counts, axis=1)
        }  # one report: its value; r reports: the mode (ties: lowest)

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        i0, i1 = spec.index_of(x0), spec.index_of(x1)
        return [
            Event(f"most frequent output = {x0!r}", lambda f: f["value"] == i0),
            Event(f"most frequent output = {x1!r}", lambda f: f["value"] == i1),
        ]

    def memo_histograms(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any
    ) -> np.ndarray:
        """Row 1: clients by how many of their r reports equal their value (row 0, other values' cells: none)."""
        reports = len(samples[0]) if samples else 0
        own = _value_counts(spec, samples)[:, spec.index_of(value)]
        return np.stack([np.zeros(reports + 1, dtype=np.int64), np.bincount(own, minlength=reports + 1)])


def _ones(spec: Any, samples: Sequence[Sequence[CheckedReport]]) -> np.ndarray:
    """Samples × d: the ones of each bit among a sample's r reports."""
    counts = np.zeros((len(samples), spec.domain_size), dtype=np.int64)
    for j in range(len(samples[0]) if samples else 0):
        counts += bit_matrix([s[j] for s in samples], spec.domain_size)
    return counts


class ChainBitEvents(_ChainEvents):
    """L-OSUE, L-OUE, L-SUE: bits of x0 and x1 (one report), or of the memo read back by a vote (r reports)."""

    name = "longitudinal bit vectors"

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        reports = len(samples[0]) if samples else 0
        counts = _ones(spec, samples)
        if reports <= 1:
            return {"bits": counts > 0}
        return {"bits": counts > reports * float(spec.p2 + spec.q2) / 2}

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

    def memo_histograms(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any
    ) -> np.ndarray:
        counts = _ones(spec, samples)
        truth = np.zeros(counts.shape, dtype=bool)
        truth[:, spec.index_of(value)] = True
        reports = len(samples[0]) if samples else 0
        return np.stack([np.bincount(counts[truth == b], minlength=reports + 1) for b in (False, True)])
