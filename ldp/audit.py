"""Empirical lower bounds on a client's ε: audit an encoder against its spec's claim.

An ε-LDP encoder must satisfy P[E | x0] ≤ e^ε · P[E | x1] (+ δ for an (ε, δ)
claim) for every pair of inputs and every set E of outputs. The audit runs
the encoder many times on a pair of inputs, chooses a distinguishing event E
on one half of the reports (the *selection* half) and, on the other half
(the *bound* half), turns the counts into a one-sided lower bound

    ε ≥ ln( (CP_low(P[E | x0]) − δ) / CP_high(P[E | x1]) )

with Clopper–Pearson intervals. Every interval is at level α / (2m), where
α = 1 − confidence and m is the number of tests: the (claim, pair, direction)
tests made on the bound half, plus one memoization test per memoized RAPPOR
claim (:mod:`ldp.audit_memo`, at level α / m: do one client's r reports share
one permanent randomized response?). By the union bound (Bonferroni), for an
encoder that keeps its claim the probability that *any* reported lower bound
exceeds the claim or the memoization test rejects is at most α: the
false-alarm probability of a "VIOLATION" verdict. Choosing the events
on separate samples keeps the bound honest (the selection sees none of the
counts it is judged on).

This is the approach of LDP-Auditor [1]_, with the events suited to each
mechanism family (:func:`event_family`):

- value reports (GRR, binary RR): the output equals x0 (or x1), or not;
- unary encodings (SUE, OUE) and subset selection (SS): a bit set, and the
  conjunctions of x0's and x1's bits (``bit x0 = 1 and bit x1 = 0`` attains
  e^ε exactly);
- Hadamard response (HR): the output lies in C_x0 (or C_x1), or in C_x0
  but not C_x1 (which attains e^ε exactly);
- local hashing (OLH, BLH): the reported bucket equals H_seed(x0), also
  restricted to the seeds where H_seed(x0) ≠ H_seed(x1); PEM and TreeHist
  the same on the keys of x0's and x1's prefixes in the report's round;
- sketches (CMS, HCMS): the report agrees with x0's entry of its row
  (CMS: bit h_j(x0) set; HCMS: the bit equals H_m[l, h_j(x0)]), also
  restricted to x1's entry disagreeing (attains e^ε exactly);
- RAPPOR: the Bloom bits only x0 sets are set (and only x1's unset), or
  the ones on the bits only x0 sets minus those on the bits only x1 sets
  exceed a threshold, for one report (claim ε₁) and for r memoized reports
  of one client (claim min(ε∞, r·ε₁)), where the ones are counted over the
  r reports and a bit of the permanent response is read by a vote; the r
  reports are also tested against the memoized model (a client that
  re-draws its permanent response is rejected, :mod:`ldp.audit_memo`);
- dBitFlip: x0's (or x1's) bucket sampled with bit 1, both sampled with
  opposite bits, or a score of ones above a threshold, for one report
  (claim ε₁) and for r ≥ 50 memoized reports of one client (claim
  min(ε∞, r·ε₁)), with the memoization test (:mod:`ldp.audit_events.dbitflip`);
- numeric mechanisms: the output lies above (or below) a threshold taken
  from the selection half's quantiles.

A lower bound at or below the claim is *consistent*: it cannot prove the
claim holds, only that the audit found no evidence against it.

References
----------
.. [1] H. H. Arcolezi, S. Gambs. "Revealing the true cost of locally
   differentially private protocols: an auditing perspective". PETS 2024.
.. [2] C. J. Clopper, E. S. Pearson. "The use of confidence or fiducial
   limits illustrated in the case of the binomial". Biometrika 26(4), 1934.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Claim, Event, Features, complement
from ldp.audit_memo import MemoTest, memoization_test
from ldp.errors import ParameterError
from ldp.report_check import CheckedReport

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MEMO_REPORTS",
    "AuditResult",
    "AuditRow",
    "Claim",
    "Event",
    "audit_claims",
    "audit_pairs",
    "clopper_pearson",
    "epsilon_lower_bound",
    "event_family",
    "features",
    "run_audit",
]

#: Default confidence: a correct encoder is flagged with probability at most 1 − 0.95.
DEFAULT_CONFIDENCE = 0.95
#: Default number of memoized reports per RAPPOR client in the ε∞ audit.
DEFAULT_MEMO_REPORTS = 8


@dataclasses.dataclass(frozen=True)
class AuditRow:
    """The bound of one (claim, pair, direction) test: the event favours ``x0`` over ``x1``."""

    claim: Claim
    x0: Any
    x1: Any
    event: str
    hits0: int
    hits1: int
    samples: int
    lower_bound: float

    @property
    def ratio(self) -> float:
        """Lower bound / claimed ε (0 for a claim of 0 with a non-positive bound)."""
        if self.claim.epsilon == 0:
            return math.inf if self.lower_bound > 0 else 0.0
        return max(self.lower_bound, 0.0) / self.claim.epsilon

    @property
    def violation(self) -> bool:
        """True when the lower bound exceeds the claim."""
        return self.lower_bound > self.claim.epsilon


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Every test of an audit, in order: claim, pair, direction (x0 against x1, then back)."""

    mechanism: str
    fingerprint: str
    confidence: float
    samples: int
    rows: tuple[AuditRow, ...]
    memo: tuple[tuple[Claim, MemoTest], ...] = ()

    @property
    def tests(self) -> int:
        """m, the number of tests the Bonferroni correction divides α by (the ε bounds and memoization tests)."""
        return len(self.rows) + len(self.memo)

    @property
    def memo_rejected(self) -> bool:
        """True when a memoization test rejects the memoized model (:mod:`ldp.audit_memo`)."""
        return any(test.rejected for _, test in self.memo)

    @property
    def violation(self) -> bool:
        """True when some lower bound exceeds its claim or memoization is rejected (false alarm ≤ 1 − confidence)."""
        return any(row.violation for row in self.rows) or self.memo_rejected

    @property
    def worst(self) -> AuditRow:
        """The test whose lower bound is the largest fraction of its claim (then the largest bound)."""
        return max(self.rows, key=lambda r: (r.ratio, r.lower_bound))


def clopper_pearson(hits: np.ndarray | int, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds (lower, upper) of a binomial proportion, each at level ``alpha``.

    P[p < lower] ≤ alpha and P[p > upper] ≤ alpha for ``hits`` ~ Bin(n, p).
    """
    from scipy.special import (
        betaincinv,
    )  # the beta quantile (scipy.stats.beta.ppf), without scipy.stats' import time

    k = np.asarray(hits, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, betaincinv(np.maximum(k, 1), n - k + 1, alpha), 0.0)
        high = np.where(k < n, betaincinv(k + 1, np.maximum(n - k, 1), 1 - alpha), 1.0)
    return np.nan_to_num(low, nan=0.0), np.nan_to_num(high, nan=1.0)


def epsilon_lower_bound(
    hits0: np.ndarray | int, hits1: np.ndarray | int, n: int, alpha: float, delta: float = 0.0
) -> np.ndarray:
    """ln((CP_low(P[E|x0]) − δ) / CP_high(P[E|x1])): a lower bound on ε holding with probability ≥ 1 − 2·alpha.

    −inf where the lower end of P[E|x0] does not exceed δ.
    """
    low0, _ = clopper_pearson(hits0, n, alpha)
    _, high1 = clopper_pearson(hits1, n, alpha)
    margin = low0 - delta
    with np.errstate(divide="ignore"):
        return np.where(margin > 0, np.log(np.maximum(margin, 1e-300)) - np.log(high1), -np.inf)


# -- what is audited: each mechanism family's events (its declared audit_events, ldp.registry) --------


def _family(spec: Any) -> AuditFamily:
    """The audit events the spec's mechanism declares (:mod:`ldp.registry`, :mod:`ldp.audit_events`)."""
    from ldp.plugins import implementation

    return implementation(spec, "audit_events")()


def audit_claims(spec: Any, memo_reports: int = DEFAULT_MEMO_REPORTS, memoized: bool = True) -> list[Claim]:
    """The claims audited for ``spec``: one report, and for RAPPOR also ``memo_reports`` memoized reports."""
    return _family(spec).claims(spec, memo_reports, memoized)


def audit_pairs(spec: Any) -> list[tuple[Any, Any]]:
    """Neighbouring inputs to audit: the first two domain values (and the last against the first), or the range's ends."""
    return _family(spec).pairs(spec)


def features(
    spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]
) -> dict[str, np.ndarray]:
    """Arrays the events test: one row per sample (a sample is the reports of one client).

    ``value`` (GRR: domain index; numeric: the number; RAPPOR: the counts
    over the r reports on the bits only x0 sets minus those on the bits only
    x1 sets), ``bits`` (unary, RAPPOR: n × width booleans; memoized RAPPOR:
    the vote over the reports), ``h0``/``h1`` (local hashing: the buckets of
    x0 and x1 under each report's seed), ``d0``/``d1`` (RAPPOR: masks of the
    Bloom bits only x0, only x1, sets in the sample's cohort); each family
    documents its own (:mod:`ldp.audit_events`).
    """
    return _family(spec).features(spec, samples, pair)


def event_family(spec: Any, pair: tuple[Any, Any], selection: Sequence[Features] = ()) -> list[Event]:
    """Candidate events for ``pair`` (each is tried in both directions: for x0 against x1 and back).

    ``selection`` holds the selection half's features (numeric mechanisms
    take their thresholds from them).
    """
    return _family(spec).events(spec, pair, selection)


# -- the audit ---------------------------------------------------------------------------------------

#: Draws the samples of one value: (value, claim, how many) -> that many samples (each the reports of one client).
Sampler = Callable[[Any, Claim, int], list[list[CheckedReport]]]


def run_audit(
    spec: Any,
    sampler: Sampler,
    samples: int,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    claims: Sequence[Claim] | None = None,
    pairs: Sequence[tuple[Any, Any]] | None = None,
) -> AuditResult:
    """Audit ``spec``'s claims with ``samples`` samples of each input (half to choose events, half to bound ε).

    Parameters
    ----------
    spec : Spec
    sampler : callable
        ``sampler(value, claim, n)``: n independent samples of ``value``,
        each the list of ``claim.reports`` checked reports of one client.
    samples : int
        Samples per input value and claim (at least 2).
    confidence : float
        1 − α: the probability that no lower bound of a correct encoder
        exceeds its claim is at least ``confidence``.
    claims, pairs : optional
        Default :func:`audit_claims` and :func:`audit_pairs`.

    Returns
    -------
    AuditResult
    """
    if not 0 < confidence < 1:
        raise ParameterError(f"--confidence must be in (0, 1), got {confidence!r}")
    if samples < 2:
        raise ParameterError(
            f"--samples must be at least 2 (one half chooses events, one bounds ε), got {samples!r}"
        )
    claims = audit_claims(spec) if claims is None else list(claims)
    pairs = audit_pairs(spec) if pairs is None else list(pairs)
    family = _family(spec)
    models = {claim: family.memo_model(spec, claim) for claim in claims}
    tests = 2 * len(claims) * len(pairs) + sum(model is not None for model in models.values())
    alpha = (1 - confidence) / (2 * tests)  # Bonferroni: 2 intervals per ε test, 2·alpha per memoization test
    half = samples // 2
    rows: list[AuditRow] = []
    memo: list[tuple[Claim, MemoTest]] = []
    for claim in claims:
        drawn: dict[Any, list[list[CheckedReport]]] = {}
        for value in dict.fromkeys(v for pair in pairs for v in pair):
            drawn[value] = sampler(value, claim, samples)
        model = models[claim]
        if model is not None:  # every client of every value, both halves: no event is chosen on them
            histograms = np.sum([family.memo_histograms(spec, drawn[v], v) for v in drawn], axis=0)
            memo.append((claim, memoization_test(histograms, model, 2 * alpha, samples * len(drawn))))
        for pair in pairs:
            select = [features(spec, drawn[v][:half], pair) for v in pair]
            bound = [features(spec, drawn[v][half : 2 * half], pair) for v in pair]
            events = event_family(spec, pair, select)
            for forward in (True, False):
                rows.append(_test(spec, claim, pair, events, select, bound, forward, half, alpha))
    return AuditResult(spec.mechanism, spec.fingerprint, confidence, samples, tuple(rows), tuple(memo))


def _test(
    spec: Any,
    claim: Claim,
    pair: tuple[Any, Any],
    events: list[Event],
    select: Sequence[Features],
    bound: Sequence[Features],
    forward: bool,
    n: int,
    alpha: float,
) -> AuditRow:
    """Choose the event with the best bound on the selection half; bound ε with it on the bound half.

    In the reverse direction an event's complement is also tried (for x1
    against x0), so half-lines cover both tails.
    """
    a, b = (0, 1) if forward else (1, 0)
    candidates = [(event.name, event.test) for event in events]  # on a tie the event beats a complement
    candidates += [(f"not ({event.name})", complement(event.test)) for event in events]
    hits = np.array([[int(np.count_nonzero(test(select[i]))) for i in (a, b)] for _, test in candidates])
    scores = epsilon_lower_bound(hits[:, 0], hits[:, 1], n, alpha, claim.delta)
    best = int(np.argmax(scores))
    name, test = candidates[best]
    h0, h1 = (int(np.count_nonzero(test(bound[i]))) for i in (a, b))
    lower = float(epsilon_lower_bound(h0, h1, n, alpha, claim.delta))
    return AuditRow(claim, pair[a], pair[b], name, h0, h1, n, lower)
