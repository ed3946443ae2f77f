"""The interface of a mechanism family's audit events, and the event helpers the families share.

A family tells :mod:`ldp.audit` which neighbouring inputs to audit, which
claims to test, what to compute from a sample of reports (its *features*)
and which sets of outputs (*events*) to try. A mechanism names its family
as ``audit_events`` in its declaration (:mod:`ldp.registry`), so a new
mechanism adds its family (here or in its own package) and nothing in
:mod:`ldp.audit`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ldp.audit_memo import MemoModel
from ldp.errors import SpecError
from ldp.report_check import CheckedReport

__all__ = [
    "MIN_MEMO_REPORTS",
    "NUMERIC_THRESHOLDS",
    "AuditFamily",
    "Claim",
    "Event",
    "Features",
    "above",
    "bit_matrix",
    "complement",
    "first_reports",
    "mask",
    "thresholds",
    "two_bits",
]

#: Score-based events: at most this many thresholds are tried on the selection half.
NUMERIC_THRESHOLDS = 64
#: The longitudinal mechanisms' memoized claim is audited over at least this many reports of one client
#: (``ldp audit --memo-reports`` may ask for more; docs/audit.md#events).
MIN_MEMO_REPORTS = 50

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
    then : tuple
        Values the same client reports next, after its ``reports`` reports of
        the sample's value (a longitudinal claim over several values); empty
        for claims about one value.
    """

    label: str
    epsilon: float
    delta: float = 0.0
    reports: int = 1
    then: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class Event:
    """A set of outputs, as a vectorized test over a sample's features."""

    name: str
    test: Callable[[Features], np.ndarray]


class AuditFamily:
    """The audit events of one mechanism family (a stateless object; subclasses override the hooks)."""

    #: The family's name in messages.
    name: ClassVar[str] = ""

    def pairs(self, spec: Any) -> list[tuple[Any, Any]]:
        """Neighbouring inputs: the first two domain values, and the last against the first."""
        domain = getattr(spec, "domain", None)
        if not domain or len(domain) < 2:
            raise SpecError(f"{spec.mechanism} spec has no two inputs to audit")
        pairs = [(domain[0], domain[1])]
        if len(domain) > 2:
            pairs.append((domain[-1], domain[0]))
        return pairs

    def claims(self, spec: Any, memo_reports: int, memoized: bool) -> list[Claim]:
        """The claims to test: one report at the spec's ε (and δ)."""
        delta = float(getattr(spec, "delta", 0.0) or 0.0)
        return [Claim("one report", float(spec.epsilon), delta)]

    def features(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]
    ) -> dict[str, np.ndarray]:
        """Arrays the events test, one row per sample (a sample is the reports of one client)."""
        raise NotImplementedError

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        """Candidate events for ``pair``, each tried in both directions; ``selection``: the selection half's features."""
        raise NotImplementedError

    def memo_model(self, spec: Any, claim: Claim) -> MemoModel | None:
        """The memoized model a claim's samples are tested against (:mod:`ldp.audit_memo`), or None: no test."""
        return None

    def memo_histograms(
        self, spec: Any, samples: Sequence[Sequence[CheckedReport]], value: Any
    ) -> np.ndarray:
        """Shape (2, r + 1): the (client, bit) cells of true bit b whose ones over the r reports number c."""
        raise NotImplementedError


def first_reports(samples: Sequence[Sequence[CheckedReport]]) -> list[CheckedReport]:
    """The first report of each sample."""
    return [reports[0] for reports in samples]


def bit_matrix(reports: Sequence[CheckedReport], width: int) -> np.ndarray:
    """The reports' bit vectors as an n × width boolean array."""
    bits = [r.bits or b"" for r in reports]
    packed = np.frombuffer(b"".join(bits), dtype=np.uint8).reshape(len(bits), -1)
    return np.unpackbits(packed, axis=1)[:, :width].astype(bool)


def mask(positions: set[int], width: int) -> np.ndarray:
    """A boolean vector of ``width`` with ``positions`` set."""
    out = np.zeros(width, dtype=bool)
    out[list(positions)] = True
    return out


def thresholds(selection: Sequence[Features]) -> list[float]:
    """Thresholds of ``value`` to try: its distinct values on the selection half, or NUMERIC_THRESHOLDS quantiles."""
    pooled = np.concatenate([f["value"] for f in selection]) if selection else np.array([])
    levels = np.unique(pooled)
    if len(levels) > NUMERIC_THRESHOLDS:
        levels = np.unique(np.quantile(pooled, np.linspace(0, 1, NUMERIC_THRESHOLDS + 2)[1:-1]))
    return levels.tolist()


def above(t: float) -> Callable[[Features], np.ndarray]:
    """The event ``value > t``."""

    def test(f: Features) -> np.ndarray:
        return f["value"] > t

    return test


def two_bits(i: int, a: int, j: int, b: int) -> Callable[[Features], np.ndarray]:
    """The event ``bit i = a and bit j = b``."""

    def test(f: Features) -> np.ndarray:
        return (f["bits"][:, i] == a) & (f["bits"][:, j] == b)

    return test


def complement(test: Callable[[Features], np.ndarray]) -> Callable[[Features], np.ndarray]:
    """The complement of an event (the audit tries every event's complement too)."""

    def negated(f: Features) -> np.ndarray:
        return ~test(f)

    return negated
