"""Audit events of LOLOHA: one report (claim ε₁), r ≥ 50 reports of one value by one client (claim ε∞),
and a lifetime: one report of the value, then reports of other values over the g buckets (claim g·ε∞).

A sample is the reports of one client, all with its pool index j. Its
features are, for the pair (x0, x1), the buckets h0 = H_j(x0), h1 = H_j(x1)
and the number of its reports naming each; the events are the single
report's bucket events of local hashing (one report) and, over r reports,
the memo read by a vote (the most reported bucket is h0, and h0 ≠ h1) or a
score c0 − c1 above a threshold. The r reports are also tested against the
memoized model (:mod:`ldp.audit_memo`): the number c of a client's reports
naming its value's bucket follows p₁·Bin(r, p₂) + (1 − p₁)·Bin(r, q₂) when
the memo is kept and Bin(r, A) when it is re-drawn per report, RAPPOR's
test with (f, p, q) = (2(1 − p₁), q₂, p₂); it needs p₁ ≥ ½.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import (
    MIN_MEMO_REPORTS,
    AuditFamily,
    Claim,
    Event,
    Features,
    above,
    first_reports,
    thresholds,
)
from ldp.audit_memo import MemoModel
from ldp.hashing import lh_bucket
from ldp.report_check import CheckedReport

__all__ = ["LIFETIME_VALUES", "LolohaEvents"]

#: Values a client reports after the sample's value in the lifetime (g·ε∞) audit: this many, or 4g, at most the domain.
LIFETIME_VALUES = 16


def _buckets(spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any) -> np.ndarray:
    """H_j(value) under each sample's pool function j."""
    index = spec.index_of(value)
    return np.array(
        [lh_bucket(int(spec.pool[int(r.seed or 0)]), index, spec.g) for r in first_reports(samples)],
        dtype=np.int64,
    )


def _reported(samples: Sequence[Sequence[CheckedReport]]) -> np.ndarray:
    """Samples × r: the reported buckets."""
    return np.array([[int(r.value) for r in reports] for reports in samples], dtype=np.int64)


class LolohaEvents(AuditFamily):
    """Bucket events of one report; a vote and a score over r memoized reports of one client."""

    name = "LOLOHA"

    def claims(self, spec: Any, memo_reports: int, memoized: bool) -> list[Claim]:
        claims = super().claims(spec, memo_reports, memoized)
        if memoized and memo_reports > 1:
            # their exact ε (≤ ε∞): L-GRR's over the g buckets (docs/longitudinal/loloha.md#privacy)
            r = max(memo_reports, MIN_MEMO_REPORTS)
            claims.append(Claim(f"{r} memoized reports", spec.memo_epsilon(r), 0.0, r))
            # a lifetime: the value, then values enough to visit every bucket of most clients' functions
            then = tuple(spec.domain[: max(LIFETIME_VALUES, 4 * spec.g)])
            claims.append(
                Claim(
                    f"one report, then {len(then)} values over the g buckets",
                    spec.epsilon_lifetime,
                    0.0,
                    1,
                    then,
                )
            )
        return claims

    def memo_model(self, spec: Any, claim: Claim) -> MemoModel | None:
        """r ≥ 2 reports of one value are tested against the memoized model when p₁ ≥ ½ (f = 2(1 − p₁) ≤ 1)."""
        if claim.reports < 2 or claim.then or 2 * spec.p1 < 1:
            return None
        return MemoModel(2 * (1 - spec.p1), spec.q2, spec.p2, claim.reports)

    def memo_histograms(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any
    ) -> np.ndarray:
        """Row 1: clients by the number of their reports naming their value's bucket (row 0 unused)."""
        reports = len(samples[0]) if samples else 0
        hits = (_reported(samples) == _buckets(spec, samples, value)[:, None]).sum(axis=1)
        out = np.zeros((2, reports + 1), dtype=np.int64)
        out[1] = np.bincount(hits, minlength=reports + 1)
        return out

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        reported = _reported(samples)
        h0, h1 = _buckets(spec, samples, pair[0]), _buckets(spec, samples, pair[1])
        c0 = (reported == h0[:, None]).sum(axis=1)
        c1 = (reported == h1[:, None]).sum(axis=1)
        separated = h0 != h1
        return {
            "h0": h0,
            "h1": h1,
            "c0": c0,
            "c1": c1,
            "vote0": separated & (c0 > c1),
            "vote1": separated & (c1 > c0),
            "first0": separated
            & (reported[:, 0] == h0),  # the sample value's first report (a lifetime claim's)
            "first1": separated & (reported[:, 0] == h1),
            "value": np.where(separated, c0 - c1, 0).astype(float),
        }

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        scores = [
            Event(f"reports naming H({x0!r}) - naming H({x1!r}) > {t:g}", above(t))
            for t in thresholds(selection)
        ]
        return [
            *scores,
            Event(f"a report names H({x0!r})", lambda f: f["c0"] > 0),
            Event(f"a report names H({x1!r})", lambda f: f["c1"] > 0),
            Event(f"H({x0!r}) != H({x1!r}) and the vote names H({x0!r})", lambda f: f["vote0"]),
            Event(f"H({x0!r}) != H({x1!r}) and the vote names H({x1!r})", lambda f: f["vote1"]),
            Event(f"H({x0!r}) != H({x1!r}) and the first report names H({x0!r})", lambda f: f["first0"]),
            Event(f"H({x0!r}) != H({x1!r}) and the first report names H({x1!r})", lambda f: f["first1"]),
        ]
