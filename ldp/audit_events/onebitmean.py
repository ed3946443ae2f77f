"""Audit events of 1BitMean: one report (claim ε₁) and, memoized, r reports of one client (claim min(ε∞, r·ε₁)).

The inputs are the range's ends, low and high: their grid points are 0 and
s for every α, so a client's r reports of one of them are its memoized bit
seen through r flips of probability γ. The feature is the count of ones over
a sample's reports (the bit itself for one report); the events are
"count > t". The r-report samples are also tested against the memoized model
(:mod:`ldp.audit_memo`: the bit is a permanent response with f = 2(1 − p)
and the flips an instantaneous one with P[1 | 0] = γ, P[1 | 1] = 1 − γ): a
client that re-draws its memoized bit is rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Claim, Event, Features, above, thresholds
from ldp.audit_memo import MemoModel
from ldp.errors import SpecError
from ldp.report_check import CheckedReport


def _ones(samples: Sequence[Sequence[CheckedReport]]) -> np.ndarray:
    """The ones among each sample's reports."""
    return np.array([sum(int(r.value) for r in reports) for reports in samples], dtype=np.int64)


class OneBitMeanEvents(AuditFamily):
    """The ends of the range; "ones > t" over one report or over a memoized client's r reports."""

    name = "1BitMean"

    def pairs(self, spec: Any) -> list[tuple[Any, Any]]:
        return [(float(spec.low), float(spec.high))]

    def claims(self, spec: Any, memo_reports: int, memoized: bool) -> list[Claim]:
        claims = super().claims(spec, memo_reports, memoized)
        if spec.memoized and memoized and memo_reports > 1:
            epsilon = min(spec.epsilon_inf, memo_reports * spec.epsilon_one)
            claims.append(Claim(f"{memo_reports} memoized reports", epsilon, 0.0, memo_reports))
        return claims

    def memo_model(self, spec: Any, claim: Claim) -> MemoModel | None:
        if claim.reports < 2 or not spec.memoized:
            return None
        return MemoModel(2 * (1 - spec.p), spec.gamma, 1 - spec.gamma, claim.reports)

    def memo_histograms(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any
    ) -> np.ndarray:
        if value not in (spec.low, spec.high):
            raise SpecError(f"onebitmean: the memoization test audits the range's ends, not {value!r}")
        reports = len(samples[0]) if samples else 0
        out = np.zeros((2, reports + 1), dtype=np.int64)
        out[int(value == spec.high)] = np.bincount(_ones(samples), minlength=reports + 1)
        return out

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        return {"value": _ones(samples).astype(float)}

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        return [Event(f"ones > {t:g}", above(t)) for t in thresholds(selection)]
