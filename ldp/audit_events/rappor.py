"""Audit events of RAPPOR: one report (claim ε₁) and r memoized reports of one client (claim min(ε∞, r·ε₁))."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import (
    AuditFamily,
    Claim,
    Event,
    Features,
    above,
    bit_matrix,
    first_reports,
    mask,
    thresholds,
)
from ldp.audit_memo import MemoModel
from ldp.report_check import CheckedReport
from ldp.specs import Rappor


def _ones(spec: Rappor, samples: Sequence[Sequence[CheckedReport]]) -> np.ndarray:
    """Samples × num_bits: the ones of each bit among a sample's r reports."""
    width = spec.num_bits
    counts = np.zeros((len(samples), width), dtype=np.int64)
    for j in range(len(samples[0]) if samples else 0):
        counts += bit_matrix([s[j] for s in samples], width)
    return counts


class RapporEvents(AuditFamily):
    """The Bloom bits only x0 sets are set (and only x1's unset), or a score of ones on them exceeds a threshold.

    Over r memoized reports the ones are counted over the reports and a bit
    of the permanent response is read by a vote.
    """

    name = "RAPPOR"

    def pairs(self, spec: Any) -> list[tuple[Any, Any]]:
        if spec.encoding == "boolean":
            return [(True, False)]
        if spec.encoding == "bloom":
            return [("v0", "v1")]
        return super().pairs(spec)

    def claims(self, spec: Any, memo_reports: int, memoized: bool) -> list[Claim]:
        claims = super().claims(spec, memo_reports, memoized)
        if memoized and memo_reports > 1:
            epsilon = min(spec.epsilon_inf, memo_reports * spec.epsilon_one)
            claims.append(Claim(f"{memo_reports} memoized reports", epsilon, 0.0, memo_reports))
        return claims

    def memo_model(self, spec: Any, claim: Claim) -> MemoModel | None:
        """r ≥ 2 memoized reports are tested against the memoized model, unless f = 0 (no PRR to memoize)."""
        if claim.reports < 2 or spec.f == 0:
            return None
        return MemoModel(spec.f, spec.p, spec.q, claim.reports)

    def memo_histograms(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any
    ) -> np.ndarray:
        counts = _ones(spec, samples)
        cohorts = [r.cohort for r in first_reports(samples)]
        true_bits = {c: mask(set(spec.bit_positions(value, c)), spec.num_bits) for c in set(cohorts)}
        truth = np.array([true_bits[c] for c in cohorts]).reshape(counts.shape)
        reports = len(samples[0]) if samples else 0
        return np.stack([np.bincount(counts[truth == b], minlength=reports + 1) for b in (False, True)])

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        first = first_reports(samples)
        width = spec.num_bits
        reports = len(samples[0])
        counts = _ones(spec, samples)
        # the chance that one report counts on a bit when its permanent bit is set, and when it is not
        on, off = float(spec.q), float(spec.p)
        if spec.q < spec.p:  # a set permanent bit then gives fewer ones: count the zeros
            counts, on, off = reports - counts, 1 - on, 1 - off
        # one report: the bits; r reports: the permanent bit read by a vote (the midpoint of r·on and r·off)
        bits = counts > reports * (on + off) / 2 if reports > 1 else counts > 0
        cohorts = np.array([r.cohort for r in first], dtype=np.int64)
        masks = {}
        for cohort in np.unique(cohorts).tolist():
            b0 = set(spec.bit_positions(pair[0], cohort))
            b1 = set(spec.bit_positions(pair[1], cohort))
            masks[cohort] = (mask(b0 - b1, width), mask(b1 - b0, width))
        d0 = np.array([masks[c][0] for c in cohorts.tolist()]).reshape(len(first), width)
        d1 = np.array([masks[c][1] for c in cohorts.tolist()]).reshape(len(first), width)
        # the evidence for x0: ones on the bits only x0 sets minus ones on those only x1 sets
        score = (counts * d0).sum(axis=1) - (counts * d1).sum(axis=1)
        return {"bits": bits, "d0": d0, "d1": d1, "value": score.astype(float)}

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair

        def all_set(f: Features, key: str) -> np.ndarray:
            return np.all(f["bits"] | ~f[key], axis=1)

        def none_set(f: Features, key: str) -> np.ndarray:
            return ~np.any(f["bits"] & f[key], axis=1)

        scores = [
            Event(f"(ones on {x0!r}-only bits) - (ones on {x1!r}-only bits) > {t:g}", above(t))
            for t in thresholds(selection)
        ]
        return [
            *scores,
            Event(f"bits only {x0!r} sets all set", lambda f: all_set(f, "d0")),
            Event(f"bits only {x1!r} sets all set", lambda f: all_set(f, "d1")),
            Event(
                f"bits only {x0!r} sets all set, only {x1!r}'s all unset",
                lambda f: all_set(f, "d0") & none_set(f, "d1"),
            ),
            Event(
                f"bits only {x1!r} sets all set, only {x0!r}'s all unset",
                lambda f: all_set(f, "d1") & none_set(f, "d0"),
            ),
        ]
