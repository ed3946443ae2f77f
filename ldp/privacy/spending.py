"""What a client's reports spend: budgets, streams, and the committed and spent totals (docs/accounting.md#budgets).

Pure accounting, no files: :mod:`ldp.privacy.budget` keeps the persistent,
concurrent ledger and decides with the functions here.

Every report a client sends spends privacy. A ledger records what was
spent, per *stream*, and refuses (with :class:`~ldp.errors.BudgetExceededError`,
recording nothing) any report that would take the *committed* total over the
budget:

- a mechanism with fresh randomness per report (GRR, OUE, OLH, ...) is one
  stream per spec; each report costs the spec's ε;
- each memo key of a memoized spec (RAPPOR's value, an L- chain's value, a
  LOLOHA hash bucket, ...) is its own stream: every report of the key is
  post-processing of its permanent response, so r reports cost at most ε∞;
  one report costs ε₁; r reports cost r·ε₁ only for a spec that states
  ``memo_linear`` with a proof (RAPPOR: per Bloom bit the log likelihood
  ratio of r reports is odd and concave in the IRR log ratio on [0, ∞),
  hence subadditive), since in general the reports of one key are dependent
  and their fresh rounds do not compose (docs/accounting.md#memoized-streams).
  The stream is named by a keyed hash (HMAC-SHA256 with a ledger-own random
  key) of the spec fingerprint and the memo key, so the ledger never holds a
  value. The key is stored in the ledger file itself: whoever can read the
  file (mode 0600, like the client state, whose secret already determines
  every permanent response) can test candidate values against it; nobody
  else can.

**Refusals never depend on the values.** A refused report emits nothing, and
the collector sees that. If the decision used the per-value costs above, a
client repeating one value could keep reporting while a client whose value
changed would be refused: the refusal itself would say "the value changed".
So :func:`spent_epsilon` is the accounting of what was actually sent
(it depends on the values), while the budget is enforced on
:func:`committed_epsilon`: the largest ``spent`` any sequence of values
could have produced with the same number of reports under each spec. For a
memoized spec it is the worst spread of its R reports over its memo keys
(:func:`worst_case_memoized_cost`): R·ε₁ with an unbounded domain (Bloom
RAPPOR) and a linear spec, at most d·ε∞ with d keys however many reports:
under this accounting a boolean RAPPOR client can report forever within
2·ε∞ (docs/accounting.md#lifetime).

What the per-value accounting measures (docs/accounting.md#memoized-streams): the ε∞ of a memoized
value protects *which* value a client holds against any number of its
reports. It does not hide *that* a client's value changed: reports of two
values come from two different permanent responses, and the collector can
tell them apart (strongly for Bloom filters with many bits). That is inherent
to memoization; the ledger does not add to it (its refusals carry no
information about the values) and does not claim to bound it.

Streams are combined by the budget's composition rule: ``"basic"`` (sum of
ε, δ = 0), ``"optimal"`` (the exact composition of pure ε_i-DP pieces at the
budget's δ, each as randomized response; never above the sum) or
``"exact"`` (each fresh report by its spec's own exact curve, recorded as
privacy-loss atoms in its stream; also a μ-GDP budget; never above
``"optimal"``; docs/accounting.md#exact-budgets). In ``committed`` each
memoized spec is one pure piece (its worst case above), which bounds the
composition of its per-key pieces for every value sequence.

This module imports no SciPy (the client may use it); only the ``"optimal"``
and ``"exact"`` rules load :mod:`ldp.privacy.composition` when a total is
evaluated.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014, §3
   (longitudinal privacy of memoized responses).
.. [2] C. Dwork, A. Roth. Found. Trends TCS 9, 2014, Theorem 3.16 (basic
   composition).
.. [3] P. Kairouz, S. Oh, P. Viswanath. IEEE Trans. IT 63(6), 2017
   (optimal composition).
.. [4] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy". JRSS-B
   84(1), 2022, Theorem 3.2 (composition of trade-off functions).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any

from ldp.errors import AccountingError, ParameterError

__all__ = [
    "COMPOSITION_RULES",
    "Budget",
    "Stream",
    "committed_epsilon",
    "first_report_epsilon",
    "fits_budget",
    "memo_is_linear",
    "memo_key_cost",
    "report_loss",
    "spent_epsilon",
    "stream_parameters",
    "worst_case_memoized_cost",
]

COMPOSITION_RULES = ("basic", "optimal", "exact")
_SLACK = 1e-12  # relative tolerance so that e.g. 10 x 0.1 fits a budget of 1


@dataclasses.dataclass(frozen=True)
class Budget:
    """A client's total privacy budget: ε (at a δ) or a Gaussian-DP μ.

    Parameters
    ----------
    epsilon : float
        Total ε the client may spend (> 0). Give it or ``mu``, not both.
    delta : float
        δ at which the total ε is measured (``"optimal"`` rule); 0 for pure ε.
    composition : {"basic", "optimal", "exact"}
        How reports combine (docs/accounting.md#budgets): ``"basic"`` (the
        default for an ε budget), the sum of ε; ``"optimal"``, the optimal
        composition of pure ε_i-DP reports at ``delta`` (each report treated
        as ε_i-randomized response, the worst case of ε_i-DP: Kairouz–Oh–
        Viswanath); ``"exact"``, the exact composition of the privacy curves
        of the reports sent (each fresh-randomness report by its own spec's
        exact curve, each memoized piece as randomized response at its pure
        ε), never above ``"optimal"``. At delta = 0 all three are the sum.
    mu : float, optional
        A μ-GDP budget instead of ε: the composed curve of everything sent must
        stay on or above G_μ (always the ``"exact"`` rule).

    Examples
    --------
    >>> Budget(3.0).limit, Budget(mu=1.0).composition, Budget(mu=1.0).measure
    (3.0, 'exact', 'mu')
    """

    epsilon: float | None = None
    delta: float = 0.0
    composition: str | None = None
    mu: float | None = None

    def __post_init__(self) -> None:
        if (self.epsilon is None) == (self.mu is None):
            raise AccountingError("a budget is an epsilon or a GDP mu: give exactly one of them")
        name, limit = ("epsilon", self.epsilon) if self.mu is None else ("mu", self.mu)
        try:
            value, dl = float(limit), float(self.delta)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise AccountingError(
                f"budget {name} and delta must be numbers, got {limit!r}, {self.delta!r}"
            ) from None
        if not math.isfinite(value) or value <= 0:
            raise AccountingError(f"budget {name} must be a finite number > 0, got {limit!r}")
        if not 0 <= dl < 1:
            raise AccountingError(f"budget delta must be in [0, 1), got {self.delta!r}")
        rule = ("exact" if self.mu is not None else "basic") if self.composition is None else self.composition
        rule = str(rule).lower()
        if rule not in COMPOSITION_RULES:
            raise AccountingError(
                f"budget composition must be one of {COMPOSITION_RULES}, got {self.composition!r}"
            )
        if self.mu is not None and (rule != "exact" or dl != 0):
            raise AccountingError(
                "a GDP mu budget composes the exact curves (composition 'exact') and has no delta"
            )
        object.__setattr__(self, name, value)
        object.__setattr__(self, "delta", dl)
        object.__setattr__(self, "composition", rule)

    @property
    def measure(self) -> str:
        """What the budget limits: ``"epsilon"`` or ``"mu"`` (GDP)."""
        return "epsilon" if self.mu is None else "mu"

    @property
    def limit(self) -> float:
        """The budget's ε, or its μ for a GDP budget."""
        return float(self.epsilon if self.mu is None else self.mu)  # type: ignore[arg-type]

    @property
    def composes_curves(self) -> bool:
        """True when reports compose by their exact curves (``"exact"`` at δ > 0, or a μ budget)."""
        return self.composition == "exact" and (self.delta > 0 or self.mu is not None)

    def to_dict(self) -> dict[str, Any]:
        if self.mu is not None:
            return {"composition": self.composition, "mu": self.mu}
        return {"epsilon": self.epsilon, "delta": self.delta, "composition": self.composition}


@dataclasses.dataclass(frozen=True)
class Stream:
    """What one stream has spent.

    Attributes
    ----------
    spec : str
        Fingerprint of the spec.
    epsilon : float
        ε of one report (ε₁ for a memoized spec).
    epsilon_cap : float or None
        Memoized: ε∞, the most any number of reports of one memo key can cost
        (None: unbounded).
    reports : int
        Reports charged so far.
    memoized : bool
        One memo key of a memoized spec (False: fresh randomness per report).
    values : int or None
        Memoized: how many distinct memo keys the spec has (None: unbounded).
    linear : bool
        Memoized: r reports of one memo key are proved (r·ε)-DP
        (:attr:`ldp.specs.base.Spec.memo_linear`, ε the per-report charge
        ``epsilon``), so they cost min(r·ε, ε∞); otherwise ε₁ for one report
        and ε∞ from the second.
    epsilon_first : float or None
        Memoized: ε₁, the cost of a key's first report, when it is below the
        per-report charge ``epsilon`` (a chain whose ε′ = ``memo_report_epsilon``
        exceeds ε₁); None: ``epsilon``.
    loss : tuple of two tuples of float, or None
        Fresh randomness: the privacy-loss atoms of one report's worst pair
        of inputs, (log P-masses, log Q-masses), from the spec's exact curve
        (:func:`ldp.privacy.mechanisms.mechanism_loss`). Recorded by a
        ledger whose budget composes curves (``"optimal"`` rule); None: the
        report is composed as ε-randomized response, the worst case of any
        ε-DP report.
    """

    spec: str
    epsilon: float
    epsilon_cap: float | None
    reports: int
    memoized: bool = False
    values: int | None = None
    linear: bool = True
    loss: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    epsilon_first: float | None = None

    def charges(self) -> list[float]:
        """The pure ε-DP pieces this stream amounts to (for composition).

        Fresh randomness: one piece ε per report. A memoized key: one piece,
        :func:`memo_key_cost` of its reports.
        """
        if not self.memoized:
            return [self.epsilon] * self.reports
        if self.reports == 0:
            return []
        return [
            memo_key_cost(
                self.reports, self.epsilon, self.epsilon_cap, linear=self.linear, first=self.epsilon_first
            )
        ]

    def cost(self) -> float:
        """Basic-composition cost: r·ε, or :func:`memo_key_cost` for a memoized key."""
        return math.fsum(self.charges())


def memo_key_cost(
    reports: int, epsilon: float, cap: float | None, *, linear: bool = True, first: float | None = None
) -> float:
    """Pure ε of ``reports`` reports of one memo key (docs/accounting.md#memoized-streams).

    One report costs ε₁ = ``first`` (default ``epsilon``): it is one report
    of the spec. From the second on, ``linear`` (r reports proved
    (r·ε′)-DP for the mechanism, ε′ = ``epsilon`` ≥ ε₁): min(r·ε′, ε∞);
    otherwise the bound that holds for every memoized mechanism, ε∞
    (post-processing of the permanent response).

    Examples
    --------
    >>> memo_key_cost(3, 0.5, 2.0), memo_key_cost(3, 0.5, 2.0, linear=False)
    (1.5, 2.0)
    >>> memo_key_cost(9, 0.5, 2.0), memo_key_cost(1, 0.5, 2.0, linear=False)
    (2.0, 0.5)
    >>> memo_key_cost(1, 0.32, 1.0, first=0.25), memo_key_cost(2, 0.32, 1.0, first=0.25)
    (0.25, 0.64)
    """
    if reports <= 0:
        return 0.0
    if reports == 1:
        return epsilon if first is None else min(first, epsilon)
    cap_or_inf = math.inf if cap is None else cap
    if linear:
        return min(reports * epsilon, cap_or_inf)
    return cap_or_inf


def worst_case_memoized_cost(
    reports: int,
    epsilon: float,
    cap: float | None,
    values: int | None,
    *,
    linear: bool = True,
    first: float | None = None,
) -> float:
    """The largest Σ_v c(r_v) over ways of spreading ``reports`` over at most ``values`` memo keys.

    c is :func:`memo_key_cost`: c(1) = ε₁ (``first``, default ``epsilon``)
    and, from r = 2, min(r·ε′, ε∞) (``linear``, ε′ = ``epsilon``) or ε∞.
    On r ≥ 1 c is concave: its increments are ε₁, then c(2) − ε₁ ≥ ε′
    (c(2) = min(2ε′, ε∞) and ε′ ≥ ε₁; or ε∞ − ε₁ ≥ 0 when capped), then at
    most ε′ (then 0). So for m keys each holding at least one report the
    even spread is the largest (docs/accounting.md#lifetime), and the worst
    case is the largest over m ≤ min(R, d) of that even spread, T(m):

    - while m ≤ R/2 every key holds ≥ 2 reports, where c is the restriction
      of φ(r) = min(r·ε′, ε∞), concave with φ(0) = 0 and so subadditive:
      splitting a key never lowers the sum, T grows with m, and
      m = min(d, ⌊R/2⌋) is the best of these;
    - for R/2 < m ≤ R the even spread holds 2m − R keys once and R − m twice,
      T(m) = (2m − R)·ε₁ + (R − m)·c(2), linear in m: an end is the best,
      m = ⌊R/2⌋ + 1 or m = min(d, R).

    With ε₁ = ε′ and ``linear`` c is concave from 0 and the answer is the
    even spread over min(d, R) keys (R·ε₁ with an unbounded domain).

    Examples
    --------
    >>> worst_case_memoized_cost(10, 1.0, 2.5, 3)  # spread 4, 3, 3: 2.5 each
    7.5
    >>> worst_case_memoized_cost(10, 1.0, 2.5, 3, linear=False)  # 2, 2, 2 (4 reports wasted)
    7.5
    >>> worst_case_memoized_cost(4, 1.0, 2.5, 3, linear=False)  # 2, 2, 0 (2, 1, 1 gives 4.5)
    5.0
    >>> worst_case_memoized_cost(4, 0.32, 1.0, 16, first=0.25)  # 2, 2: 0.64 each (1, 1, 1, 1 gives 1.0)
    1.28
    """
    if reports <= 0:
        return 0.0
    keys = reports if values is None else min(values, reports)
    one = epsilon if first is None else min(first, epsilon)

    def cost(r: int) -> float:
        return memo_key_cost(r, epsilon, cap, linear=linear, first=first)

    def even(m: int) -> float:  # the even spread of the reports over m keys, each holding at least one
        base, extra = divmod(reports, m)
        return (extra * cost(base + 1) if extra else 0.0) + (m - extra) * cost(base)

    if linear and one == epsilon and (cap is None or values is None):
        return reports * epsilon
    half = reports // 2
    candidates = {keys, min(keys, half), min(keys, half + 1)}
    return max(even(m) for m in candidates if m >= 1)


def stream_parameters(spec) -> tuple[float, float | None, bool, int | None]:
    """(ε per report, ε cap, memoized?, number of distinct memo keys or None when unbounded) of a spec.

    A memoized spec (``spec.memoized``) states ``epsilon_one`` (one report),
    ``epsilon_inf`` (any number of reports of one memo key) and
    ``memo_domain_size``; whether r reports of one key cost min(r·ε₁, ε∞) is
    :func:`memo_is_linear`.
    """
    if spec.memoized:  # ε₁ per report, at most ε∞ per memo key, over the keys the memo can hold
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


def first_report_epsilon(spec) -> float | None:
    """ε₁ of a memoized ``spec`` when it is below its per-report charge (:func:`stream_parameters`), else None.

    A key's first report is one report of the spec, so it costs ε₁ whatever
    the charge ε′ ≥ ε₁ that makes min(r·ε′, ε∞) sound for r ≥ 2 reports
    (docs/accounting.md#memoized-streams).
    """
    if not spec.memoized:
        return None
    per_report, _cap, _memoized, _values = stream_parameters(spec)
    one = float(spec.epsilon_one)
    return one if one < per_report else None


def memo_is_linear(spec) -> bool:
    """True when the memoized ``spec`` states that r reports of one memo key are (r·ε′)-DP (``memo_linear``).

    ε′ is the per-report charge of :func:`stream_parameters`: the spec's
    ``memo_report_epsilon`` when it states one (the longitudinal chains, whose
    r reports of one memo can cost more than r·ε₁), else ε₁.

    Without that statement (proved for the mechanism in its docs), the ledger
    charges the bound that holds for every memoized mechanism: ε₁ for one
    report of a key, ε∞ from the second on (docs/accounting.md#memoized-streams).
    """
    return bool(getattr(spec, "memo_linear", False))


def report_loss(spec) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The privacy-loss atoms (log P, log Q) of one report of a fresh-randomness ``spec``, or None.

    From the spec's worst pair of inputs (:meth:`~ldp.specs.base.Spec.privacy_pieces`;
    exact, or for the grid numeric specs the sound f_{ε,0} at their
    achieved ε). None when the spec describes no pair: its reports are then
    composed as ε-randomized response, the worst case of ε-DP. Loads SciPy.
    """
    import numpy as np

    from ldp.privacy.loss import PrivacyLoss
    from ldp.privacy.mechanisms import mechanism_loss

    try:
        loss = mechanism_loss(spec, 1)
    except AccountingError:
        return None
    if not isinstance(loss, PrivacyLoss) or loss.tail != 0:  # pragma: no cover - one report is exact
        return None
    if not (np.all(np.isfinite(loss.log_p)) and np.all(np.isfinite(loss.log_q))):
        return None  # an output impossible under one input: not a pure-ε report, composed as RR at its ε
    return tuple(float(x) for x in loss.log_p), tuple(float(x) for x in loss.log_q)


@dataclasses.dataclass(frozen=True)
class _Curve:
    """``count`` fresh reports whose one-report atoms are ``loss`` (pure ε ``epsilon`` each)."""

    epsilon: float
    count: int
    loss: tuple[tuple[float, ...], tuple[float, ...]] | None


@functools.lru_cache(maxsize=256)
def _exact_total(pure: tuple[float, ...], curves: tuple[_Curve, ...], budget: Budget) -> float:
    """ε at the budget's δ (or the GDP μ) of the exact composition of ``curves`` and pure pieces.

    Pure pieces (and curves without atoms) are ε-randomized responses, the
    worst case of ε-DP pieces; fresh reports with atoms compose by their own
    curve. Falls back to the pure pieces' bounds when the product is too
    large to compute (still sound, looser).
    """
    from ldp.privacy.composition import heterogeneous_composition, heterogeneous_epsilon
    from ldp.privacy.conversions import dp_to_gdp_mu
    from ldp.privacy.loss import PrivacyLoss

    rr = list(pure)
    exact = []
    for curve in curves:
        if curve.loss is None:
            rr.extend([curve.epsilon] * curve.count)
        else:
            exact.append(curve)
    rr = [e for e in rr if e > 0]
    try:
        parts = [_self_composed(c.loss, c.count) for c in exact if c.loss is not None]
        if rr:
            parts.append(heterogeneous_composition(rr))
        total = PrivacyLoss.identity() if not parts else parts[0]
        for part in parts[1:]:
            total = total.compose(part)  # a ProductLoss refuses to compose further: fallback below
        return total.gdp_mu() if budget.mu is not None else total.epsilon(budget.delta)
    except ParameterError:  # too many atoms (or a δ below the windows' resolution): sound bounds instead
        if budget.mu is not None:
            mus = [_self_composed(c.loss, c.count).gdp_mu() for c in exact if c.loss is not None]
            mus.extend(dp_to_gdp_mu(e) for e in rr)
            return math.sqrt(math.fsum(m * m for m in mus))
        return heterogeneous_epsilon(rr + [c.epsilon for c in exact for _ in range(c.count)], budget.delta)


@functools.lru_cache(maxsize=64)
def _self_composed(loss: tuple[tuple[float, ...], tuple[float, ...]], count: int):
    """``count`` reports with one-report atoms ``loss``, composed (cached: a ledger asks again at each charge)."""
    import numpy as np

    from ldp.privacy.loss import PrivacyLoss

    return PrivacyLoss(np.array(loss[0]), np.array(loss[1])).self_compose(count)


def _sorted_curves(curves: list[_Curve]) -> tuple[_Curve, ...]:
    """``curves`` in a canonical order (a cache key: clients with the same history share one computation)."""
    return tuple(sorted(curves, key=lambda c: (c.epsilon, c.count, c.loss or ((), ()))))


def _compose(pure: list[float], curves: list[_Curve], budget: Budget) -> float:
    """The total of ``pure`` ε-DP pieces and ``curves`` under ``budget``: ε (or μ for a GDP budget)."""
    basic = math.fsum(pure) + math.fsum(c.epsilon * c.count for c in curves)
    if budget.mu is not None:
        return _exact_total(tuple(sorted(pure)), _sorted_curves(curves), budget) if (pure or curves) else 0.0
    if budget.composition == "basic" or budget.delta == 0 or not (pure or curves):
        return basic
    if budget.composes_curves:
        return min(basic, _exact_total(tuple(sorted(pure)), _sorted_curves(curves), budget))
    from ldp.privacy.composition import heterogeneous_epsilon

    return min(
        basic, heterogeneous_epsilon(pure + [c.epsilon for c in curves for _ in range(c.count)], budget.delta)
    )


def _fresh_curve(stream: Stream) -> _Curve:
    return _Curve(stream.epsilon, stream.reports, stream.loss)


def spent_epsilon(streams: Mapping[str, Stream], budget: Budget) -> float:
    """Total ε (μ for a GDP budget) of what was sent, given the values, under ``budget``'s rule (never used to refuse)."""
    pure = [eps for s in streams.values() if s.memoized for eps in s.charges()]
    curves = [_fresh_curve(s) for s in streams.values() if not s.memoized and s.reports]
    return _compose(pure, curves, budget)


def committed_epsilon(streams: Mapping[str, Stream], budget: Budget) -> float:
    """The largest :func:`spent_epsilon` any values could have given, with the same number of reports per spec.

    Depends only on how many reports were sent under each spec (which the
    collector sees anyway), so a refusal based on it reveals nothing about
    the values. Each memoized spec is one pure piece: the worst case over
    spreads of its reports over its memo keys
    (:func:`worst_case_memoized_cost`), which as an ε-randomized response
    bounds the composition of its per-key pieces for every spread.
    """
    pure: list[float] = []
    curves: list[_Curve] = []
    memoized: dict[str, list[Stream]] = {}
    for stream in streams.values():
        if stream.memoized:
            memoized.setdefault(stream.spec, []).append(stream)
        elif stream.reports:
            curves.append(_fresh_curve(stream))
    for group in memoized.values():
        first = group[0]
        reports = sum(s.reports for s in group)
        pure.append(
            worst_case_memoized_cost(
                reports,
                first.epsilon,
                first.epsilon_cap,
                first.values,
                linear=all(s.linear for s in group),
                first=first.epsilon_first,
            )
        )
    return _compose(pure, curves, budget)


def fits_budget(committed: float, budget: Budget) -> bool:
    """True when a committed total is within ``budget`` (with a 1e-12 relative slack for float sums)."""
    return committed <= budget.limit * (1 + _SLACK)
