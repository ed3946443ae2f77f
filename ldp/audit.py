"""Empirical lower bounds on a client's ε: audit an encoder against its spec's claim.

An ε-LDP encoder must satisfy P[E | x0] ≤ e^ε · P[E | x1] (+ δ for an (ε, δ)
claim) for every pair of inputs and every set E of outputs. The audit runs
the encoder many times on a pair of inputs, chooses a distinguishing event E
on one half of the reports (the *selection* half) and, on the other half
(the *bound* half), turns the counts into a one-sided lower bound

    ε ≥ ln( (CP_low(P[E | x0]) − δ) / CP_high(P[E | x1]) )

with Clopper–Pearson intervals. Every interval is at level α / (2m), where
α = 1 − confidence and m is the number of (claim, pair, direction) tests
made on the bound half (Bonferroni), so for an encoder that keeps its claim
the probability that *any* reported lower bound exceeds the claim is at most
α: the false-alarm probability of a "VIOLATION" verdict. Choosing the events
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
  r reports and a bit of the permanent response is read by a vote;
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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

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
#: Numeric mechanisms: at most this many thresholds are tried on the selection half.
NUMERIC_THRESHOLDS = 64

Features = Mapping[str, np.ndarray]


@dataclasses.dataclass(frozen=True)
class Claim:
    """One privacy claim to audit.

    Parameters
    ----------
    label : str
        What is audited (``"one report"``, ``"8 memoized reports"``).
    epsilon : float
        The claimed ε.
    delta : float
        The claimed δ (0 for pure ε-LDP).
    reports : int
        Reports of one client per sample: 1, or r for a memoized audit.
    """

    label: str
    epsilon: float
    delta: float = 0.0
    reports: int = 1


@dataclasses.dataclass(frozen=True)
class Event:
    """A set of outputs, as a vectorized test over a sample's :func:`features`."""

    name: str
    test: Callable[[Features], np.ndarray]


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

    @property
    def tests(self) -> int:
        """m, the number of tests the Bonferroni correction divides α by."""
        return len(self.rows)

    @property
    def violation(self) -> bool:
        """True when some lower bound exceeds its claim (false alarm probability ≤ 1 − confidence)."""
        return any(row.violation for row in self.rows)

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


# -- what is audited ----------------------------------------------------------------------------------


def audit_claims(spec: Any, memo_reports: int = DEFAULT_MEMO_REPORTS, memoized: bool = True) -> list[Claim]:
    """The claims audited for ``spec``: one report, and for RAPPOR also ``memo_reports`` memoized reports."""
    from ldp.specs import Rappor

    delta = float(getattr(spec, "delta", 0.0) or 0.0)
    claims = [Claim("one report", float(spec.epsilon), delta)]
    if isinstance(spec, Rappor) and memoized and memo_reports > 1:
        epsilon = min(spec.epsilon_inf, memo_reports * spec.epsilon_one)
        claims.append(Claim(f"{memo_reports} memoized reports", epsilon, 0.0, memo_reports))
    return claims


def audit_pairs(spec: Any) -> list[tuple[Any, Any]]:
    """Neighbouring inputs to audit: the first two domain values (and the last against the first), or the range's ends."""
    from ldp.specs import NumericSpec, PrefixHashing, Rappor

    if isinstance(spec, NumericSpec):
        return [(float(spec.low), float(spec.high))]
    if isinstance(spec, Rappor):
        if spec.encoding == "boolean":
            return [(True, False)]
        if spec.encoding == "bloom":
            return [("v0", "v1")]
    if isinstance(spec, PrefixHashing):  # PEM, TreeHist: the first bit differs (0x61, 0xC3 0xA9)
        return [("a", "\u00e9")]
    domain = getattr(spec, "domain", None)
    if not domain or len(domain) < 2:
        raise ParameterError(f"{spec.mechanism} spec has no two inputs to audit")
    pairs = [(domain[0], domain[1])]
    if len(domain) > 2:
        pairs.append((domain[-1], domain[0]))
    return pairs


# -- features and events ---------------------------------------------------------------------------


def _bit_matrix(reports: Sequence[CheckedReport], width: int) -> np.ndarray:
    bits = [r.bits or b"" for r in reports]
    packed = np.frombuffer(b"".join(bits), dtype=np.uint8).reshape(len(bits), -1)
    return np.unpackbits(packed, axis=1)[:, :width].astype(bool)


def features(
    spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]
) -> dict[str, np.ndarray]:
    """Arrays the events test: one row per sample (a sample is the reports of one client).

    ``value`` (GRR: domain index; numeric: the number; RAPPOR: the counts
    over the r reports on the bits only x0 sets minus those on the bits only
    x1 sets), ``bits`` (unary, RAPPOR: n × width booleans; memoized RAPPOR:
    the vote over the reports), ``h0``/``h1`` (local hashing: the buckets of
    x0 and x1 under each report's seed), ``d0``/``d1`` (RAPPOR: masks of the
    Bloom bits only x0, only x1, sets in the sample's cohort).
    """
    from ldp.hashing import lh_bucket
    from ldp.specs import (
        GRR,
        HR,
        LocalHashing,
        NumericSpec,
        PrefixHashing,
        Rappor,
        SubsetSelection,
        UnaryEncoding,
    )
    from ldp.specs.sketch import SketchSpec

    first = [reports[0] for reports in samples]
    if isinstance(spec, HR):
        return {"value": np.array([r.value for r in first], dtype=np.int64)}
    if isinstance(spec, GRR | NumericSpec):
        dtype = float if isinstance(spec, NumericSpec) else np.int64
        return {"value": np.array([r.value for r in first], dtype=dtype)}
    if isinstance(spec, UnaryEncoding | SubsetSelection):
        return {"bits": _bit_matrix(first, spec.domain_size)}
    if isinstance(spec, LocalHashing):
        i0, i1 = spec.index_of(pair[0]), spec.index_of(pair[1])
        seeds = [int(r.seed or 0) for r in first]
        return {
            "value": np.array([r.value for r in first], dtype=np.int64),
            "h0": np.array([lh_bucket(s, i0, spec.g) for s in seeds], dtype=np.int64),
            "h1": np.array([lh_bucket(s, i1, spec.g) for s in seeds], dtype=np.int64),
        }
    if isinstance(spec, PrefixHashing):  # the buckets of x0's and x1's prefixes in each report's round
        from ldp.specs.heavy_hitters import prefix_key

        encoded = [spec.value_bits(x) for x in pair]
        lengths = [spec.prefix_length(int(r.field("round"))) for r in first]
        seeds = [int(r.seed or 0) for r in first]
        h = [
            [
                lh_bucket(s, prefix_key(b >> (spec.num_bits - n), n), spec.g)
                for s, n in zip(seeds, lengths, strict=True)
            ]
            for b in encoded
        ]
        return {
            "value": np.array([r.value for r in first], dtype=np.int64),
            "h0": np.array(h[0], dtype=np.int64),
            "h1": np.array(h[1], dtype=np.int64),
        }
    if isinstance(spec, Rappor):
        width = spec.num_bits
        reports = len(samples[0])
        counts = np.zeros((len(samples), width), dtype=np.int64)  # ones of each bit among the r reports
        for j in range(reports):
            counts += _bit_matrix([s[j] for s in samples], width)
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
            masks[cohort] = (_mask(b0 - b1, width), _mask(b1 - b0, width))
        d0 = np.array([masks[c][0] for c in cohorts.tolist()]).reshape(len(first), width)
        d1 = np.array([masks[c][1] for c in cohorts.tolist()]).reshape(len(first), width)
        # the evidence for x0: ones on the bits only x0 sets minus ones on those only x1 sets
        score = (counts * d0).sum(axis=1) - (counts * d1).sum(axis=1)
        return {"bits": bits, "d0": d0, "d1": d1, "value": score.astype(float)}
    if isinstance(spec, SketchSpec):
        return _sketch_features(spec, first, pair)
    raise ParameterError(f"the audit has no events for mechanism {spec.mechanism!r}")


def _sketch_features(
    spec: Any, first: Sequence[CheckedReport], pair: tuple[Any, Any]
) -> dict[str, np.ndarray]:
    """CMS, HCMS: whether the report agrees with x0's (``s0``) and x1's (``s1``) sketch entry in its row.

    CMS: the bit at h_j(x); HCMS: the bit against H_m[l, h_j(x)]. ``differ``: the two entries differ
    (x0 and x1 do not collide in the row; HCMS: and their Hadamard signs differ in the column).
    """
    table = spec.positions(list(pair))  # (2, k)
    rows = np.array([r.field("row") for r in first], dtype=np.int64)
    a0, a1 = table[0, rows], table[1, rows]
    if spec.mechanism == "cms":
        bits = _bit_matrix(first, spec.m)
        index = np.arange(len(first))
        return {"s0": bits[index, a0], "s1": bits[index, a1], "differ": a0 != a1}
    columns = np.array([r.field("column") for r in first], dtype=np.int64)
    bit = np.array([r.field("bit") for r in first], dtype=np.int64)
    sign0 = np.array([1 - bin(c & a).count("1") % 2 for c, a in zip(columns.tolist(), a0.tolist())])
    sign1 = np.array([1 - bin(c & a).count("1") % 2 for c, a in zip(columns.tolist(), a1.tolist())])
    return {"s0": bit == sign0, "s1": bit == sign1, "differ": sign0 != sign1}


def _mask(positions: set[int], width: int) -> np.ndarray:
    mask = np.zeros(width, dtype=bool)
    mask[list(positions)] = True
    return mask


def _thresholds(selection: Sequence[Features]) -> list[float]:
    """Thresholds of ``value`` to try: its distinct values on the selection half, or NUMERIC_THRESHOLDS quantiles."""
    pooled = np.concatenate([f["value"] for f in selection]) if selection else np.array([])
    levels = np.unique(pooled)
    if len(levels) > NUMERIC_THRESHOLDS:
        levels = np.unique(np.quantile(pooled, np.linspace(0, 1, NUMERIC_THRESHOLDS + 2)[1:-1]))
    return levels.tolist()


def _above(t: float) -> Callable[[Features], np.ndarray]:
    def test(f: Features) -> np.ndarray:
        return f["value"] > t

    return test


def _two_bits(i: int, a: int, j: int, b: int) -> Callable[[Features], np.ndarray]:
    def test(f: Features) -> np.ndarray:
        return (f["bits"][:, i] == a) & (f["bits"][:, j] == b)

    return test


def _complement(test: Callable[[Features], np.ndarray]) -> Callable[[Features], np.ndarray]:
    def complement(f: Features) -> np.ndarray:
        return ~test(f)

    return complement


def event_family(spec: Any, pair: tuple[Any, Any], selection: Sequence[Features] = ()) -> list[Event]:
    """Candidate events for ``pair`` (each is tried in both directions: for x0 against x1 and back).

    ``selection`` holds the selection half's features (numeric mechanisms
    take their thresholds from them).
    """
    from ldp.specs import (
        GRR,
        HR,
        LocalHashing,
        NumericSpec,
        PrefixHashing,
        Rappor,
        SubsetSelection,
        UnaryEncoding,
    )
    from ldp.specs.sketch import SketchSpec

    x0, x1 = pair
    if isinstance(spec, NumericSpec):
        # "output ≤ t" is the complement: the reverse direction of the same test
        return [Event(f"output > {t:.6g}", _above(t)) for t in _thresholds(selection)]
    if isinstance(spec, GRR):
        i0, i1 = spec.index_of(x0), spec.index_of(x1)
        return [
            Event(f"output = {x0!r}", lambda f: f["value"] == i0),
            Event(f"output = {x1!r}", lambda f: f["value"] == i1),
        ]
    if isinstance(spec, HR):
        c0 = spec.output_set(spec.index_of(x0))
        c1 = spec.output_set(spec.index_of(x1))
        only0, only1 = np.setdiff1d(c0, c1), np.setdiff1d(c1, c0)
        return [
            Event(f"output in C_{x0!r}", lambda f: np.isin(f["value"], c0)),
            Event(f"output in C_{x1!r}", lambda f: np.isin(f["value"], c1)),
            Event(f"output in C_{x0!r} but not C_{x1!r}", lambda f: np.isin(f["value"], only0)),
            Event(f"output in C_{x1!r} but not C_{x0!r}", lambda f: np.isin(f["value"], only1)),
        ]
    if isinstance(spec, UnaryEncoding | SubsetSelection):  # SS: bit x0 = 1 and bit x1 = 0 attains e^ε too
        i0, i1 = spec.index_of(x0), spec.index_of(x1)
        events = [
            Event(f"bit {x0!r} set", lambda f: f["bits"][:, i0]),
            Event(f"bit {x1!r} set", lambda f: f["bits"][:, i1]),
        ]
        for a in (0, 1):
            for b in (0, 1):
                events.append(Event(f"bit {x0!r} = {a} and bit {x1!r} = {b}", _two_bits(i0, a, i1, b)))
        return events
    if isinstance(spec, LocalHashing | PrefixHashing):
        return [
            Event(f"bucket = H_seed({x0!r})", lambda f: f["value"] == f["h0"]),
            Event(f"bucket = H_seed({x1!r})", lambda f: f["value"] == f["h1"]),
            Event(
                f"bucket = H_seed({x0!r}) != H_seed({x1!r})",
                lambda f: (f["value"] == f["h0"]) & (f["h0"] != f["h1"]),
            ),
            Event(
                f"bucket = H_seed({x1!r}) != H_seed({x0!r})",
                lambda f: (f["value"] == f["h1"]) & (f["h0"] != f["h1"]),
            ),
        ]
    if isinstance(spec, Rappor):

        def all_set(f: Features, key: str) -> np.ndarray:
            return np.all(f["bits"] | ~f[key], axis=1)

        def none_set(f: Features, key: str) -> np.ndarray:
            return ~np.any(f["bits"] & f[key], axis=1)

        scores = [
            Event(f"(ones on {x0!r}-only bits) - (ones on {x1!r}-only bits) > {t:g}", _above(t))
            for t in _thresholds(selection)
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
    if isinstance(spec, SketchSpec):
        return [
            Event(f"agrees with {x0!r}'s sketch entry", lambda f: f["s0"]),
            Event(f"agrees with {x1!r}'s sketch entry", lambda f: f["s1"]),
            Event(f"agrees with {x0!r}'s entry, not {x1!r}'s", lambda f: f["s0"] & ~f["s1"] & f["differ"]),
            Event(f"agrees with {x1!r}'s entry, not {x0!r}'s", lambda f: f["s1"] & ~f["s0"] & f["differ"]),
        ]
    raise ParameterError(f"the audit has no events for mechanism {spec.mechanism!r}")


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
    tests = 2 * len(claims) * len(pairs)
    alpha = (1 - confidence) / (2 * tests)  # Bonferroni: 2 intervals per test
    half = samples // 2
    rows: list[AuditRow] = []
    for claim in claims:
        drawn: dict[Any, list[list[CheckedReport]]] = {}
        for value in dict.fromkeys(v for pair in pairs for v in pair):
            drawn[value] = sampler(value, claim, samples)
        for pair in pairs:
            select = [features(spec, drawn[v][:half], pair) for v in pair]
            bound = [features(spec, drawn[v][half : 2 * half], pair) for v in pair]
            events = event_family(spec, pair, select)
            for forward in (True, False):
                rows.append(_test(spec, claim, pair, events, select, bound, forward, half, alpha))
    return AuditResult(spec.mechanism, spec.fingerprint, confidence, samples, tuple(rows))


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
    candidates += [(f"not ({event.name})", _complement(event.test)) for event in events]
    hits = np.array([[int(np.count_nonzero(test(select[i]))) for i in (a, b)] for _, test in candidates])
    scores = epsilon_lower_bound(hits[:, 0], hits[:, 1], n, alpha, claim.delta)
    best = int(np.argmax(scores))
    name, test = candidates[best]
    h0, h1 = (int(np.count_nonzero(test(bound[i]))) for i in (a, b))
    lower = float(epsilon_lower_bound(h0, h1, n, alpha, claim.delta))
    return AuditRow(claim, pair[a], pair[b], name, h0, h1, n, lower)
