"""What a client's reports spend: budgets, streams, and the committed and spent totals (docs/accounting.md#budgets).

Pure accounting, no files: :mod:`ldp.privacy.budget` keeps the persistent,
concurrent ledger and decides with the functions here.

Every report a client sends spends privacy. A ledger records what was
spent, per *stream*, and refuses (with :class:`~ldp.errors.BudgetExceededError`,
recording nothing) any report that would take the *committed* total over the
budget:

- a mechanism with fresh randomness per report (GRR, OUE, OLH, ...) is one
  stream per spec; each report costs the spec's ε;
- a RAPPOR value is its own stream (its permanent randomized response is
  memoized): r reports of it cost min(r·ε₁, ε∞) as one pure piece (every
  report of the value is post-processing of its PRR, ε∞-DP; and r reports of
  one memoized value are r·ε₁-DP, because per Bloom bit the log likelihood
  ratio of r reports, ln g(R) with g(R) = ((1−f/2)R + f/2)/((f/2)R + 1 − f/2)
  and R the IRR ratio of the r reports, is concave in ln R on [0, ∞) and
  zero at 0, hence subadditive). The stream is named by a keyed hash
  (HMAC-SHA256 with a ledger-own random key) of the spec fingerprint and the
  value, so the ledger never holds a value. The key is stored in the ledger
  file itself: whoever can read the file (mode 0600, like the client state,
  whose secret already determines every PRR) can test candidate values
  against it; nobody else can.

**Refusals never depend on the values.** A refused report emits nothing, and
the collector sees that. If the decision used the per-value costs above, a
client repeating one value could keep reporting while a client whose value
changed would be refused: the refusal itself would say "the value changed".
So :func:`spent_epsilon` is the accounting of what was actually sent
(it depends on the values), while the budget is enforced on
:func:`committed_epsilon`: the largest ``spent`` any sequence of values
could have produced with the same number of reports under each spec. For a
RAPPOR spec with an unbounded domain (Bloom filter) that is R·ε₁ for R
reports (every report a new value); with a finite domain of d values
(basic, boolean) it is the even spread over the d values,
Σ_v min(r_v·ε₁, ε∞) with r_v ∈ {⌊R/d⌋, ⌈R/d⌉}, at most d·ε∞ however many
reports: under this accounting a boolean RAPPOR client can report forever
within 2·ε∞.

What the per-value accounting measures (docs/accounting.md#memoized-streams): the ε∞ of a memoized
value protects *which* value a client holds against any number of its
reports. It does not hide *that* a client's value changed: reports of two
values come from two different permanent responses, and the collector can
tell them apart (strongly for Bloom filters with many bits). That is inherent
to memoization; the ledger does not add to it (its refusals carry no
information about the values) and does not claim to bound it.

Streams are combined by the budget's composition rule: ``"basic"`` (sum of
ε, δ = 0) or ``"optimal"`` (the exact composition of pure ε_i-DP pieces at
the budget's δ, via the privacy-loss distribution; never above the sum). In
``committed`` each RAPPOR spec is one pure piece (its worst case above), which
bounds the composition of its per-value pieces for every value sequence.

This module imports no SciPy (the client may use it); only the ``"optimal"``
rule loads :mod:`ldp.privacy.composition` when a total is evaluated.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014, §3
   (longitudinal privacy of memoized responses).
.. [2] C. Dwork, A. Roth. Found. Trends TCS 9, 2014, Theorem 3.16 (basic
   composition).
.. [3] P. Kairouz, S. Oh, P. Viswanath. IEEE Trans. IT 63(6), 2017
   (optimal composition).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ldp.errors import AccountingError

__all__ = [
    "COMPOSITION_RULES",
    "Budget",
    "Stream",
    "committed_epsilon",
    "fits_budget",
    "spent_epsilon",
    "stream_parameters",
    "worst_case_memoized_cost",
]

COMPOSITION_RULES = ("basic", "optimal")
_SLACK = 1e-12  # relative tolerance so that e.g. 10 x 0.1 fits a budget of 1


@dataclasses.dataclass(frozen=True)
class Budget:
    """A client's total privacy budget.

    Parameters
    ----------
    epsilon : float
        Total ε the client may spend (> 0).
    delta : float
        δ at which the total ε is measured (``"optimal"`` rule); 0 for pure ε.
    composition : {"basic", "optimal"}
        How streams combine: the sum of ε, or the exact optimal composition
        of pure ε_i-DP streams at ``delta`` (tighter when delta > 0).
    """

    epsilon: float
    delta: float = 0.0
    composition: str = "basic"

    def __post_init__(self) -> None:
        try:
            eps, dl = float(self.epsilon), float(self.delta)
        except (TypeError, ValueError):
            raise AccountingError(
                f"budget epsilon and delta must be numbers, got {self.epsilon!r}, {self.delta!r}"
            ) from None
        if not math.isfinite(eps) or eps <= 0:
            raise AccountingError(f"budget epsilon must be a finite number > 0, got {self.epsilon!r}")
        if not 0 <= dl < 1:
            raise AccountingError(f"budget delta must be in [0, 1), got {self.delta!r}")
        rule = str(self.composition).lower()
        if rule not in COMPOSITION_RULES:
            raise AccountingError(
                f"budget composition must be one of {COMPOSITION_RULES}, got {self.composition!r}"
            )
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dl)
        object.__setattr__(self, "composition", rule)

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "composition": self.composition}


@dataclasses.dataclass(frozen=True)
class Stream:
    """What one stream has spent.

    Attributes
    ----------
    spec : str
        Fingerprint of the spec.
    epsilon : float
        ε of one report (ε₁ for RAPPOR).
    epsilon_cap : float or None
        RAPPOR: ε∞, the most any number of reports of the value can cost.
    reports : int
        Reports charged so far.
    """

    spec: str
    epsilon: float
    epsilon_cap: float | None
    reports: int
    memoized: bool = False
    values: int | None = None

    def charges(self) -> list[float]:
        """The pure ε-DP pieces this stream amounts to (for composition).

        Fresh randomness: one piece ε per report. A memoized value: one piece
        min(r·ε₁, ε∞) (see the module docstring for why r·ε₁ holds).
        """
        if not self.memoized:
            return [self.epsilon] * self.reports
        if self.reports == 0:
            return []
        total = self.reports * self.epsilon
        return [total if self.epsilon_cap is None else min(total, self.epsilon_cap)]

    def cost(self) -> float:
        """Basic-composition cost: r·ε, or min(r·ε₁, ε∞) for a memoized value."""
        return math.fsum(self.charges())


def worst_case_memoized_cost(reports: int, epsilon: float, cap: float | None, values: int | None) -> float:
    """The largest Σ_v min(r_v·ε₁, ε∞) over ways of spreading ``reports`` over at most ``values`` values.

    Each term is concave in r_v, so the even spread is the largest; with an
    unbounded domain (``values`` None), or no cap, it is ``reports``·ε₁.
    """
    if cap is None or values is None or reports <= values:
        return reports * epsilon
    per_value, extra = divmod(reports, values)
    return extra * min((per_value + 1) * epsilon, cap) + (values - extra) * min(per_value * epsilon, cap)


def stream_parameters(spec) -> tuple[float, float | None, bool, int | None]:
    """(ε per report, ε cap, memoized?, number of distinct values or None when unbounded) of a spec."""
    if spec.memoized:  # RAPPOR: ε₁ per report, at most ε∞ per value, over the values the memo can hold
        cap = spec.epsilon_inf
        # a spec whose r reports of one memo may cost more than r·ε₁ (the longitudinal chains) states the
        # per-report ε that makes min(r·ε, ε∞) sound (docs/longitudinal/chains.md#many-reports)
        per_report = getattr(spec, "memo_report_epsilon", spec.epsilon_one)
        return float(per_report), (None if math.isinf(cap) else float(cap)), True, spec.memo_domain_size
    epsilon = getattr(spec, "epsilon", None)
    if epsilon is None:
        raise AccountingError(f"cannot account for {type(spec).__name__}: it has no epsilon")
    if getattr(spec, "delta", None) is not None:  # (ε, δ) mechanisms (Gaussian): not a pure-ε stream
        raise AccountingError(
            f"cannot account for {spec.mechanism}: the ledger composes pure epsilon-DP reports, "
            f"this spec is (epsilon, delta)-DP (delta={spec.delta!r})"
        )
    return float(epsilon), None, False, None


def _compose(pieces: list[float], budget: Budget) -> float:
    basic = math.fsum(pieces)
    if budget.composition == "basic" or budget.delta == 0 or not pieces:
        return basic
    from ldp.privacy.composition import heterogeneous_epsilon

    return min(basic, heterogeneous_epsilon(pieces, budget.delta))


def spent_epsilon(streams: Mapping[str, Stream], budget: Budget) -> float:
    """Total ε of what was sent, given the values, under ``budget``'s composition rule (never used to refuse)."""
    return _compose([eps for s in streams.values() for eps in s.charges()], budget)


def committed_epsilon(streams: Mapping[str, Stream], budget: Budget) -> float:
    """The largest :func:`spent_epsilon` any values could have given, with the same number of reports per spec.

    Depends only on how many reports were sent under each spec (which the
    collector sees anyway), so a refusal based on it reveals nothing about
    the values.
    """
    pieces: list[float] = []
    memoized: dict[str, list[Stream]] = {}
    for stream in streams.values():
        if stream.memoized:
            memoized.setdefault(stream.spec, []).append(stream)
        else:
            pieces.extend(stream.charges())
    for group in memoized.values():
        first = group[0]
        reports = sum(s.reports for s in group)
        pieces.append(worst_case_memoized_cost(reports, first.epsilon, first.epsilon_cap, first.values))
    return _compose(pieces, budget)


def fits_budget(committed: float, budget: Budget) -> bool:
    """True when a committed total is within ``budget`` (with a 1e-12 relative slack for float sums)."""
    return committed <= budget.epsilon * (1 + _SLACK)
