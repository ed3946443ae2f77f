"""Audit events of dBitFlip: one report (claim ε₁) and r ≥ 50 memoized reports of one client (claim min(ε∞, r·ε₁)).

A sample is the reports of one client. Its features: whether x0's and x1's
buckets are among its sampled buckets (``s0``, ``s1``), the bit sent for
each (over r reports, the memoized bit read by a vote: more than r/2 ones,
as each report sends it unflipped with probability 1 − γ > 1/2), and the
score ``value`` = (ones sent for x0's bucket) − (ones sent for x1's). The
event "x0's bucket sampled with bit 1, x1's sampled with bit 0" attains the
exact ratio (p′/q′)² when d ≥ 2, "x0's bucket sampled with bit 1" attains
p′/q′ when d = 1.

The r reports of a client are also tested against the memoized model
(:mod:`ldp.audit_memo`): per sampled bucket the memoized bit is 1 with p or
q = 1 − p (RAPPOR's permanent bit with f = 2q) and each report sends it
flipped with probability γ (RAPPOR's IRR with p = γ, q = 1 − γ); a client
that re-draws its memoized bits is rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import MIN_MEMO_REPORTS, AuditFamily, Claim, Event, Features, above, thresholds
from ldp.audit_memo import MemoModel
from ldp.report_check import CheckedReport

__all__ = ["DBitFlipEvents"]


def _unpack(data: bytes, width: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(data, dtype=np.uint8))[:width].astype(bool)


def _client_counts(spec: Any, reports: Sequence[CheckedReport]) -> tuple[np.ndarray, np.ndarray]:
    """(sampled buckets, ones sent for each over the client's reports), the buckets those of its first report."""
    b, d = spec.domain_size, spec.d
    buckets = np.flatnonzero(_unpack(reports[0].bits or b"", b))
    ones = np.zeros(d, dtype=np.int64)
    for report in reports:
        ones += _unpack(report.bits or b"", b + d)[b:]
    return buckets, ones


class DBitFlipEvents(AuditFamily):
    """x0's (or x1's) bucket sampled with bit 1, both with opposite bits, or a score of ones above a threshold."""

    name = "dBitFlip"

    def claims(self, spec: Any, memo_reports: int, memoized: bool) -> list[Claim]:
        claims = super().claims(spec, memo_reports, memoized)
        if memoized:
            reports = max(memo_reports, MIN_MEMO_REPORTS)
            epsilon = min(spec.epsilon_inf, reports * spec.epsilon_one)
            claims.append(Claim(f"{reports} memoized reports", epsilon, 0.0, reports))
        return claims

    def memo_model(self, spec: Any, claim: Claim) -> MemoModel | None:
        if claim.reports < 2:
            return None
        return MemoModel(2 * spec.q, spec.gamma, 1 - spec.gamma, claim.reports)

    def memo_histograms(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any
    ) -> np.ndarray:
        target = spec.index_of(value)
        reports = len(samples[0]) if samples else 0
        out = np.zeros((2, reports + 1), dtype=np.int64)
        for sample in samples:
            buckets, ones = _client_counts(spec, sample)
            truth = buckets == target
            np.add.at(out, (truth.astype(np.int64), ones), 1)
        return out

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        i0, i1 = spec.index_of(pair[0]), spec.index_of(pair[1])
        reports = len(samples[0]) if samples else 1
        n = len(samples)
        sampled = np.zeros((n, 2), dtype=bool)
        counts = np.zeros((n, 2), dtype=np.int64)
        for row, sample in enumerate(samples):
            buckets, ones = _client_counts(spec, sample)
            for col, target in enumerate((i0, i1)):
                where = np.flatnonzero(buckets == target)
                if where.size:
                    sampled[row, col] = True
                    counts[row, col] = ones[where[0]]
        voted = counts * 2 > reports  # one report: the bit itself
        score = counts[:, 0] - counts[:, 1]
        return {
            "s0": sampled[:, 0],
            "s1": sampled[:, 1],
            "v0": voted[:, 0] & sampled[:, 0],
            "v1": voted[:, 1] & sampled[:, 1],
            "value": score.astype(float),
        }

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        scores = [
            Event(f"(ones for {x0!r}) - (ones for {x1!r}) > {t:g}", above(t)) for t in thresholds(selection)
        ]
        return [
            *scores,
            Event(f"{x0!r}'s bucket sampled, bit 1", lambda f: f["v0"]),
            Event(f"{x1!r}'s bucket sampled, bit 1", lambda f: f["v1"]),
            Event(f"{x0!r}'s bucket sampled, bit 0", lambda f: f["s0"] & ~f["v0"]),
            Event(f"{x1!r}'s bucket sampled, bit 0", lambda f: f["s1"] & ~f["v1"]),
            Event(
                f"both sampled, {x0!r}'s bit 1 and {x1!r}'s bit 0",
                lambda f: f["s0"] & f["s1"] & f["v0"] & ~f["v1"],
            ),
            Event(
                f"both sampled, {x1!r}'s bit 1 and {x0!r}'s bit 0",
                lambda f: f["s0"] & f["s1"] & f["v1"] & ~f["v0"],
            ),
        ]
