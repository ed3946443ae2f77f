"""Longitudinal chains L-GRR, L-OSUE, L-OUE, L-SUE: a memoized round and a fresh round (docs/longitudinal/chains.md).

Each spec reports a categorical value through two randomizers in sequence
(:mod:`ldp.chain_math`): round 1 at ε∞ is drawn once per value and memoized
(from a keyed PRF of the client's secret, as RAPPOR's PRR), round 2 is drawn
fresh for every report and calibrated so that ONE report is exactly ε₁-LDP:

========  ===========================  ==============================
chain     round 1 (memoized, ε∞)        round 2 (fresh)
========  ===========================  ==============================
l-grr     GRR: p₁ = e^ε∞/(e^ε∞+k−1)     GRR: p₂, q₂ = (1−p₂)/(k−1)
l-osue    OUE: p₁ = ½, q₁ = 1/(e^ε∞+1)   SUE: p₂, q₂ = 1 − p₂
l-oue     OUE                           OUE: p₂ = ½, q₂
l-sue     SUE: p₁ = e^{ε∞/2}/(e^{ε∞/2}+1) SUE (basic RAPPOR)
========  ===========================  ==============================

``epsilon`` is ε₁, the ε of one report (what ε means for every other spec,
and what the ledger charges per report); ``epsilon_inf`` is ε∞, the ε of any
number of reports of one value (the memo's), default
:data:`DEFAULT_EPSILON_INF_RATIO` · ε₁; ε₁ < ε∞ is required. Both claims are
checked exactly against the Fraction probabilities, which are calibrated on
the 2⁻⁶⁴ grid toward more privacy (:func:`ldp.chain_math.grid_probability`).

References
----------
.. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. "Improving the
   utility of locally differentially private protocols for longitudinal and
   multidimensional frequency estimates". Digital Communications and
   Networks, 2022 (arXiv:2111.04636).
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014 (L-SUE
   is basic RAPPOR).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, ClassVar

from ldp.chain_math import (
    chain_support,
    grid_probability,
    memo_epsilon_bound,
    rr_chain_ratio,
    rr_memo_log_ratio,
    rr_ratio,
    smallest_linear_epsilon,
    ue_chain_ratio,
    ue_ratio,
)
from ldp.domain import DomainValue
from ldp.errors import SpecError
from ldp.exact import ceil_fraction, epsilon_bound_of_ratio, exp_lower_bound, ratio_within
from ldp.report_schema import BitVector, DomainElement, ReportSchema
from ldp.specs.frequency import FrequencySpec, calibrate_keep_probability
from ldp.specs.limits import (
    CLAIM_TOLERANCE,
    MAX_UNARY_DOMAIN_SIZE,
    RR64_MAX_EPSILON,
    SUE_MAX_EPSILON,
    check_epsilon_limit,
)
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_epsilon, check_probability

__all__ = [
    "DEFAULT_EPSILON_INF_RATIO",
    "LGRR",
    "LOSUE",
    "LOUE",
    "LSUE",
    "LongitudinalChain",
    "UnaryChain",
]

#: ε∞ = this · ε₁ when a spec gives no ``epsilon_inf``.
DEFAULT_EPSILON_INF_RATIO = 2

_HALF = Fraction(1, 2)
_ONE = Fraction(1)


@dataclasses.dataclass(frozen=True, init=False)
class LongitudinalChain(FrequencySpec):
    """Common part of the two-round chains: a memoized round at ε∞, a fresh round, one report ε₁-LDP.

    Subclasses set the round kinds, :meth:`_calibrate` and :meth:`_structure`.
    One report supports v with p* = A = p₁p₂ + (1 − p₁)q₂ when x = v and
    q* = B = q₁p₂ + (1 − q₁)q₂ otherwise (:func:`ldp.chain_math.chain_support`),
    so the estimate, its fixed-data variance, SE and CI are those of every
    pure frequency oracle with these p*, q*.

    Parameters
    ----------
    domain : sequence of str or int
        The k ≥ 2 values.
    epsilon : float
        ε₁, the ε of one report.
    epsilon_inf : float, optional
        ε∞ > ε₁, the ε of any number of reports of one value; default 2ε₁.
    p1, q1, p2, q2 : Fraction or str, optional
        The rounds' probabilities (a spec file's); calibrated when omitted.
    """

    memoized: ClassVar[bool] = True
    #: r reports of one memo cost at most min(r·ε′, ε∞) with ε′ = :attr:`memo_report_epsilon` (by its definition).
    memo_linear: ClassVar[bool] = True
    #: Largest ε∞ (the memoized round's calibration on the 2⁻⁶⁴ grid).
    max_epsilon_inf: ClassVar[float] = RR64_MAX_EPSILON
    #: ε∞ = this × ε when ``epsilon_inf`` is not given.
    default_epsilon_inf_ratio: ClassVar[float] = DEFAULT_EPSILON_INF_RATIO
    #: The randomizers of the two rounds (for messages and docs).
    rounds: ClassVar[tuple[str, str]] = ("", "")

    p1: Fraction
    q1: Fraction
    p2: Fraction
    q2: Fraction
    epsilon_inf: float = dataclasses.field(default=math.inf)  # shadows Spec.epsilon_inf (a property)

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        epsilon_inf: float | None = None,
        p1: ProbabilityInput | None = None,
        q1: ProbabilityInput | None = None,
        p2: ProbabilityInput | None = None,
        q2: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        if epsilon_inf is None:
            eps_inf = DEFAULT_EPSILON_INF_RATIO * self.epsilon
        else:
            eps_inf = check_epsilon(epsilon_inf, "epsilon_inf")
        check_epsilon_limit(
            eps_inf,
            self.max_epsilon_inf,
            self.mechanism,
            "the memoized round's smallest probability is a multiple of 2^-64",
            name="epsilon_inf",
        )
        if not eps_inf > self.epsilon:
            raise SpecError(
                f"{self.mechanism} needs epsilon_inf > epsilon (the memoized round must be the weaker one), "
                f"got epsilon_inf={eps_inf!r}, epsilon={self.epsilon!r}"
            )
        object.__setattr__(self, "epsilon_inf", eps_inf)
        given = [p1, q1, p2, q2]
        if all(x is None for x in given):
            probabilities = self._calibrate(self.epsilon, eps_inf)
        elif any(x is None for x in given):
            raise SpecError(
                f"{self.mechanism}: give all of p1, q1, p2, q2, or none (calibrated from epsilon)"
            )
        else:
            a, b, c, d = (
                check_probability(x, name, low_open=True, high_open=True)
                for x, name in zip(given, ("p1", "q1", "p2", "q2"))
            )
            probabilities = (a, b, c, d)
            problem = self._structure(*probabilities)
            if problem:
                raise SpecError(f"{self.mechanism}: {problem}")
        for name, value in zip(("p1", "q1", "p2", "q2"), probabilities):
            object.__setattr__(self, name, value)
        self._check_claim()

    # -- subclass hooks ----------------------------------------------------
    def _calibrate(self, epsilon: float, epsilon_inf: float) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        raise NotImplementedError

    def _structure(self, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> str:
        """Why stored probabilities are not of this chain's form ("" when they are)."""
        raise NotImplementedError

    def _too_small(self, what: str) -> SpecError:
        return SpecError(
            f"{self.mechanism}: {what} cannot be calibrated with 64-bit probabilities "
            f"(epsilon={self.epsilon!r}, epsilon_inf={self.epsilon_inf!r}); raise epsilon or the gap to epsilon_inf"
        )

    # -- privacy -------------------------------------------------------------
    @property
    def epsilon_one(self) -> float:
        """ε₁, the ε of one report: the spec's ``epsilon`` (the claim checked against :attr:`privacy_ratio`)."""
        return self.epsilon

    @property
    def privacy_ratio(self) -> Fraction:
        """The worst-case ratio of ONE report (round 2 after round 1), exactly: at most e^ε₁."""
        raise NotImplementedError

    @property
    def permanent_ratio(self) -> Fraction:
        """The worst-case ratio of the memoized round: at most e^ε∞, which bounds any number of reports."""
        raise NotImplementedError

    def memo_log_ratio(self, reports: int) -> float:
        """ln of the worst-case ratio of ``reports`` reports of one memoized value (floating point)."""
        raise NotImplementedError

    #: The largest ε∞/ε₁ for which :attr:`memo_report_epsilon` checks every r exactly; above it, a cruder bound.
    memo_search_limit: ClassVar[int] = 400

    def memo_epsilon(self, reports: int) -> float:
        """The exact pure ε of ``reports`` reports of one memoized value, never above ε∞.

        Not min(r·ε₁, ε∞) in general: r reports of one memo can reveal more
        than r independent reports would (docs/longitudinal/chains.md#many-reports).
        Computed in floating point, then raised by a relative 1e-9 (and by
        1e-12) so that rounding never makes it smaller than the true value.
        """
        r = int(reports)
        if r < 1:
            raise SpecError(f"reports must be at least 1, got {reports!r}")
        if r == 1:
            return self.epsilon
        return memo_epsilon_bound(self.memo_log_ratio(r), self.epsilon_inf)

    @functools.cached_property
    def memo_report_epsilon(self) -> float:
        """The per-report ε the ledger charges a memoized value: the smallest ε′ ≥ ε₁ with
        ε(r reports) ≤ min(r·ε′, ε∞) for every r (docs/longitudinal/chains.md#many-reports).

        Checked exactly (:meth:`memo_epsilon`) for every r < ε∞/ε₁ when that
        is at most :attr:`memo_search_limit`; above it the bound of the fresh
        round alone (:meth:`fresh_round_epsilon`, each report at most that much
        whatever the memo) is charged when larger.
        """
        return smallest_linear_epsilon(
            self.memo_epsilon,
            self.epsilon,
            self.epsilon_inf,
            self.fresh_round_epsilon,
            self.memo_search_limit,
        )

    def fresh_round_epsilon(self) -> float:
        """An ε that every report satisfies whatever the memo: a bound of the fresh round alone."""
        raise NotImplementedError

    @property
    def epsilon_inf_achieved(self) -> float:
        """ln of :attr:`permanent_ratio`, rounded up (≤ ``epsilon_inf``)."""
        return epsilon_bound_of_ratio(self.permanent_ratio)

    def privacy_summary(self) -> dict[str, float]:
        return {
            "epsilon": self.epsilon,
            "epsilon_achieved": self.epsilon_achieved,
            "epsilon_one": self.epsilon_one,
            "epsilon_inf": self.epsilon_inf,
        }

    def _check_claim(self) -> None:
        """Both claims, exactly: one report within ε₁ (``epsilon``) and the memo within ε∞ (``epsilon_inf``).

        Each is refused when the probabilities give more than it, or (stored
        probabilities) clearly less (:meth:`ExactPrivacySpec._check_claim`).
        """
        super()._check_claim()
        ratio, claim = self.permanent_ratio, self.epsilon_inf
        if not ratio_within(ratio, claim):
            raise SpecError(
                f"{self.mechanism} claims epsilon_inf={claim!r} but its memoized round gives "
                f"epsilon_inf={epsilon_bound_of_ratio(ratio):.17g}; the claim must be at least what the "
                "probabilities give"
            )
        if exp_lower_bound(claim) > ratio * (1 + Fraction(CLAIM_TOLERANCE)):
            raise SpecError(
                f"{self.mechanism} states epsilon_inf={claim!r} but its memoized round gives "
                f"epsilon_inf={epsilon_bound_of_ratio(ratio):.17g}; the stated epsilon_inf must match them (e^epsilon_inf "
                f"within a relative {CLAIM_TOLERANCE:g}): rebuild the spec from epsilon and epsilon_inf"
            )

    @property
    def memo_domain_size(self) -> int:
        """How many distinct memo keys exist: one per domain value (k), so the lifetime ε is at most k·ε∞."""
        return self.domain_size

    def memo_key(self, value: Any) -> bytes:
        """The identity of ``value`` for memoization (its PRF input and ledger stream): its domain index.

        Two spellings of one value (``3`` and ``"3"``) have one key, as basic RAPPOR's.

        Raises
        ------
        InputError
            If ``value`` is not in the domain.
        """
        return str(self.index_of(value)).encode()

    # -- accuracy --------------------------------------------------------------
    @property
    def support(self) -> tuple[Fraction, Fraction]:
        """(A, B) of :func:`ldp.chain_math.chain_support`."""
        return chain_support(self.p1, self.q1, self.p2, self.q2)

    @property
    def exact_p_star(self) -> Fraction:
        return self.support[0]

    @property
    def exact_q_star(self) -> Fraction:
        return self.support[1]


def _grr_round(epsilon: float, k: int, mechanism: str) -> tuple[Fraction, Fraction]:
    p = calibrate_keep_probability(epsilon, k, mechanism)
    return p, (1 - p) / (k - 1)


def _oue_round(epsilon: float) -> tuple[Fraction, Fraction] | None:
    q = ceil_fraction(1 / (exp_lower_bound(epsilon) + 1))  # q up: ½(1 − q)/(½q) = (1 − q)/q down
    return None if q >= _HALF else (_HALF, q)


def _sue_round(epsilon: float) -> tuple[Fraction, Fraction] | None:
    p = grid_probability(lambda t: ue_ratio(t, 1 - t), exp_lower_bound(epsilon), _HALF, _ONE, increasing=True)
    return None if p is None or p == _HALF else (p, 1 - p)


@dataclasses.dataclass(frozen=True, init=False)
class LGRR(LongitudinalChain):
    """L-GRR: GRR(ε∞) memoized, then GRR with p₂ such that one report is exactly GRR(ε₁).

    One report is randomized response with keep A and others B, so A/B =
    e^ε₁ gives p₂ = (e^{ε∞+ε₁} + (k − 2)e^{ε₁} − k + 1)/((e^{ε∞} − 1)(e^{ε₁} + k − 1))
    (docs/longitudinal/chains.md#l-grr) and Var* = (e^ε₁ + k − 2)/(e^ε₁ − 1)²,
    GRR's at ε₁.

    Its parameters are those of :class:`LongitudinalChain`.

    References
    ----------
    .. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. Digital
       Communications and Networks, 2022 (arXiv:2111.04636), §4.

    Examples
    --------
    >>> from ldp.specs.longitudinal import LGRR
    >>> spec = LGRR(domain=("a", "b", "c", "d"), epsilon=1.0, epsilon_inf=2.0)
    >>> spec.mechanism, spec.memoized, round(spec.variance_star, 3)  # GRR(1)'s Var*
    ('l-grr', True, 1.598)
    """

    mechanism: ClassVar[str] = "l-grr"
    report_size_rank: ClassVar[int] = 50
    report_kind: ClassVar[str] = "value"
    #: Reports carry the reported domain value (round 2's output), as GRR's.
    report_schema: ClassVar[ReportSchema] = ReportSchema((DomainElement("value"),))
    rounds: ClassVar[tuple[str, str]] = ("grr", "grr")
    #: One report's curve and the memo's are exact; that of 2 ≤ r < ∞ reports is the memo's, a sound bound.
    exact_privacy_curve: ClassVar[bool] = False

    def _calibrate(self, epsilon: float, epsilon_inf: float) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        k = self.domain_size
        p1, q1 = _grr_round(epsilon_inf, k, self.mechanism)

        def ratio(p2: Fraction) -> Fraction:
            return rr_chain_ratio(p1, q1, p2, (1 - p2) / (k - 1))

        p2 = grid_probability(ratio, exp_lower_bound(epsilon), Fraction(1, k), _ONE, increasing=True)
        if p2 is None or p2 * k <= 1:
            raise self._too_small("the fresh round")
        return p1, q1, p2, (1 - p2) / (k - 1)

    def _structure(self, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> str:
        k = self.domain_size
        if q1 != (1 - p1) / (k - 1) or q2 != (1 - p2) / (k - 1):
            return "GRR rounds need q = (1 - p)/(k - 1) in both rounds"
        if p1 * k <= 1 or p2 * k <= 1:
            return f"GRR rounds need p > 1/k = 1/{k} in both rounds"
        return ""

    @property
    def privacy_ratio(self) -> Fraction:
        return rr_chain_ratio(self.p1, self.q1, self.p2, self.q2)

    @property
    def permanent_ratio(self) -> Fraction:
        return rr_ratio(self.p1, self.q1)

    def memo_log_ratio(self, reports: int) -> float:
        """max over outputs of ln P[y | x]/P[y | x′] for r reports sharing one memo
        (:func:`ldp.chain_math.rr_memo_log_ratio` over the k values)."""
        return rr_memo_log_ratio(self.p1, self.q1, self.p2, self.q2, self.domain_size, reports)

    def fresh_round_epsilon(self) -> float:
        """ln(p₂/q₂): any two memos give one report probabilities within that ratio."""
        return epsilon_bound_of_ratio(self.p2 / self.q2)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """One report is randomized response (A, B): outputs x, x′ and the k − 2 others."""
        return _rr_piece(*self.support, self.domain_size)

    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """One report: randomized response (A, B), exactly. Two or more (or ``math.inf``): the memo's GRR(ε∞).

        Any number of reports of one value is a post-processing of the
        memoized round, so its curve bounds theirs; for 2 ≤ r < ∞ reports it
        is a sound bound, not the exact curve (the r reports' joint law has
        no small exact form for k > 2).
        """
        if reports == 1:
            return self.report_pieces()
        return _rr_piece(self.p1, self.q1, self.domain_size)


def _rr_piece(keep: Fraction, other: Fraction, k: int) -> tuple[PrivacyPiece, ...]:
    rest = [(k - 2) * other] if k > 2 else []
    return (piece([keep, other, *rest], [other, keep, *rest]),)


@dataclasses.dataclass(frozen=True, init=False)
class UnaryChain(LongitudinalChain):
    """The chains of unary encodings: a one-hot vector, each bit memoized (p₁, q₁), then each bit fresh (p₂, q₂).

    Bits are independent given the value and two values differ in two bits,
    so one report's worst ratio is A(1 − B)/((1 − A)B) and the memo's
    p₁(1 − q₁)/((1 − p₁)q₁). ``r`` reports of one value: each differing bit's
    count of ones is p₁·Bin(r, p₂) + (1 − p₁)·Bin(r, q₂) under the value that
    sets it and q₁·Bin(r, p₂) + (1 − q₁)·Bin(r, q₂) under the other, which
    :meth:`privacy_pieces` gives exactly (as RAPPOR's).
    """

    report_size_rank: ClassVar[int] = 55
    report_kind: ClassVar[str] = "bits"
    #: Reports carry the d bits of round 2, as SUE's and OUE's.
    report_schema: ClassVar[ReportSchema] = ReportSchema((BitVector("bits", length="domain_size"),))
    max_domain_size: ClassVar[int] = MAX_UNARY_DOMAIN_SIZE
    max_domain_reason: ClassVar[str] = (
        "a report holds one bit per value and the aggregator counts bytes in 32 int64 counters per value"
    )

    @property
    def privacy_ratio(self) -> Fraction:
        return ue_chain_ratio(self.p1, self.q1, self.p2, self.q2)

    @property
    def permanent_ratio(self) -> Fraction:
        return ue_ratio(self.p1, self.q1)

    @property
    def num_bytes(self) -> int:
        """Length of a packed report."""
        return (self.domain_size + 7) // 8

    #: Each r is O(r): many more than for L-GRR are checked exactly.
    memo_search_limit: ClassVar[int] = 4000

    def memo_log_ratio(self, reports: int) -> float:
        """ln of the worst ratio of r reports: the worst count of ones on x's bit times that on x′'s.

        A bit's count c of ones has P ∝ π·p₂^c(1 − p₂)^{r−c} + (1 − π)·q₂^c(1 − q₂)^{r−c}
        with π = p₁ under the value that sets it and q₁ under the other; the
        two differing bits are independent, so the worst output takes the
        worst count on each.
        """
        import numpy as np

        r = int(reports)
        c = np.arange(r + 1)
        on = c * math.log(self.p2) + (r - c) * math.log(1 - self.p2)
        off = c * math.log(self.q2) + (r - c) * math.log(1 - self.q2)

        def law(pi: Fraction) -> np.ndarray:
            return np.logaddexp(math.log(pi) + on, math.log(1 - pi) + off)

        set_by_x, set_by_other = law(self.p1), law(self.q1)
        return float(np.max(set_by_x - set_by_other) + np.max(set_by_other - set_by_x))

    def fresh_round_epsilon(self) -> float:
        """2·ln max(p₂/q₂, (1 − q₂)/(1 − p₂)): only the two differing bits' laws depend on the value."""
        return 2 * epsilon_bound_of_ratio(max(self.p2 / self.q2, (1 - self.q2) / (1 - self.p2)))

    def bit_pair(self, reports: float = 1) -> PrivacyPiece:
        """One bit set by x and not by x′, over ``reports`` fresh rounds of one memoized bit (``math.inf``: the memo)."""
        p1, q1, p2, q2 = self.p1, self.q1, self.p2, self.q2
        if math.isinf(reports):
            return piece([1 - p1, p1], [1 - q1, q1])
        r = int(reports)
        if r == 1:
            a, b = self.support
            return piece([1 - a, a], [1 - b, b])
        import numpy as np

        from ldp.privacy._numeric import binom_logpmf, log_fraction

        if_one = binom_logpmf(r, log_fraction(p2), log_fraction(1 - p2))  # memo bit 1
        if_zero = binom_logpmf(r, log_fraction(q2), log_fraction(1 - q2))  # memo bit 0
        return PrivacyPiece(
            np.logaddexp(log_fraction(p1) + if_one, log_fraction(1 - p1) + if_zero),
            np.logaddexp(log_fraction(q1) + if_one, log_fraction(1 - q1) + if_zero),
        )

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        bit = self.bit_pair(1)
        return (bit, bit.swapped())

    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """``reports`` reports of one memoized value (``math.inf``: the memo): the two differing bits, exactly."""
        bit = self.bit_pair(reports)
        return (bit, bit.swapped())


@dataclasses.dataclass(frozen=True, init=False)
class LOSUE(UnaryChain):
    """L-OSUE: OUE(ε∞) memoized, then SUE with p₂ such that one report is exactly OUE(ε₁).

    p₂ = (e^{ε∞+ε₁} − 1)/((e^{ε∞} − 1)(e^{ε₁} + 1)), q₂ = 1 − p₂; A = ½ so
    Var* = 4e^ε₁/(e^ε₁ − 1)², OUE's at ε₁ (docs/longitudinal/chains.md#l-osue).

    Its parameters are those of :class:`LongitudinalChain`.

    References
    ----------
    .. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. Digital
       Communications and Networks, 2022 (arXiv:2111.04636), §4.

    Examples
    --------
    >>> from ldp.specs.longitudinal import LOSUE
    >>> spec = LOSUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.epsilon_inf, round(spec.variance_star, 3)  # OUE(1)'s Var*
    ('l-osue', 2.0, 3.683)
    """

    mechanism: ClassVar[str] = "l-osue"
    report_size_rank: ClassVar[int] = 54
    rounds: ClassVar[tuple[str, str]] = ("oue", "sue")

    def _calibrate(self, epsilon: float, epsilon_inf: float) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        first = _oue_round(epsilon_inf)
        if first is None:
            raise self._too_small("the memoized round")
        p1, q1 = first

        def ratio(p2: Fraction) -> Fraction:
            return ue_chain_ratio(p1, q1, p2, 1 - p2)

        p2 = grid_probability(ratio, exp_lower_bound(epsilon), _HALF, _ONE, increasing=True)
        if p2 is None or p2 == _HALF:
            raise self._too_small("the fresh round")
        return p1, q1, p2, 1 - p2

    def _structure(self, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> str:
        if p1 != _HALF or not q1 < _HALF:
            return "the OUE round needs p1 = 1/2 > q1"
        if p2 + q2 != 1 or not p2 > _HALF:
            return "the SUE round needs q2 = 1 - p2 and p2 > 1/2"
        return ""


@dataclasses.dataclass(frozen=True, init=False)
class LOUE(UnaryChain):
    """L-OUE: OUE(ε∞) memoized, then OUE (p₂ = ½) with q₂ such that one report is exactly ε₁-LDP.

    q₂ is the root in (0, ½) of 2(1 − q₁)(c − 1)t² + (1 − c(3 − 4q₁))t +
    1 − q₁(1 + 3c)/2 = 0, c = e^ε₁ (docs/longitudinal/chains.md#l-oue); it
    exists when e^ε₁ < (2e^ε∞ + 1)/3, which ε∞ = 2ε₁ always satisfies.

    Its parameters are those of :class:`LongitudinalChain`.

    References
    ----------
    .. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. Digital
       Communications and Networks, 2022 (arXiv:2111.04636), §4.

    Examples
    --------
    >>> from ldp.specs.longitudinal import LOUE
    >>> spec = LOUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.p2
    ('l-oue', Fraction(1, 2))
    """

    mechanism: ClassVar[str] = "l-oue"
    report_size_rank: ClassVar[int] = 56
    rounds: ClassVar[tuple[str, str]] = ("oue", "oue")

    def _calibrate(self, epsilon: float, epsilon_inf: float) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        first = _oue_round(epsilon_inf)
        if first is None:
            raise self._too_small("the memoized round")
        p1, q1 = first
        most = (2 - q1) / (3 * q1)  # the one-report ratio as q2 -> 0: ε₁ must stay below its log
        if not exp_lower_bound(epsilon) < most:
            raise SpecError(
                f"l-oue: epsilon={epsilon!r} is too large for epsilon_inf={epsilon_inf!r}: an OUE second round "
                f"reaches at most epsilon={math.log(float(most)):.6g} (e^epsilon < (2e^epsilon_inf + 1)/3)"
            )

        def ratio(q2: Fraction) -> Fraction:
            return ue_chain_ratio(p1, q1, _HALF, q2)

        q2 = grid_probability(ratio, exp_lower_bound(epsilon), Fraction(0), _HALF, increasing=False)
        if q2 is None or q2 == 0 or q2 == _HALF:
            raise self._too_small("the fresh round")
        return p1, q1, _HALF, q2

    def _structure(self, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> str:
        if p1 != _HALF or not q1 < _HALF:
            return "the first OUE round needs p1 = 1/2 > q1"
        if p2 != _HALF or not q2 < _HALF:
            return "the second OUE round needs p2 = 1/2 > q2"
        return ""


@dataclasses.dataclass(frozen=True, init=False)
class LSUE(UnaryChain):
    """L-SUE (basic RAPPOR): SUE(ε∞) memoized (the PRR), then SUE (the IRR) such that one report is SUE(ε₁).

    With u = e^{ε∞/2} and w = e^{ε₁/2}: p₁ = u/(u + 1) and
    p₂ = (uw − 1)/((u − 1)(w + 1)), q = 1 − p in both rounds
    (docs/longitudinal/chains.md#l-sue). It is :class:`ldp.Rappor` with
    ``encoding="basic"``, f = 2q₁, p = q₂, q = p₂.

    Its parameters are those of :class:`LongitudinalChain`.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014.
    .. [2] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. Digital
       Communications and Networks, 2022 (arXiv:2111.04636).

    Examples
    --------
    >>> from ldp.specs.longitudinal import LSUE
    >>> spec = LSUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, round(spec.variance_star, 3)  # SUE(1)'s Var*
    ('l-sue', 3.918)
    """

    mechanism: ClassVar[str] = "l-sue"
    report_size_rank: ClassVar[int] = 57
    max_epsilon: ClassVar[float] = SUE_MAX_EPSILON
    max_epsilon_inf: ClassVar[float] = SUE_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "1 - p, about 1/(e^(epsilon/2) + 1), is a multiple of 2^-64 and could not match e^epsilon to 1e-9 above it"
    )
    rounds: ClassVar[tuple[str, str]] = ("sue", "sue")

    def _calibrate(self, epsilon: float, epsilon_inf: float) -> tuple[Fraction, Fraction, Fraction, Fraction]:
        first = _sue_round(epsilon_inf)
        if first is None:
            raise self._too_small("the memoized round")
        p1, q1 = first

        def ratio(p2: Fraction) -> Fraction:
            return ue_chain_ratio(p1, q1, p2, 1 - p2)

        p2 = grid_probability(ratio, exp_lower_bound(epsilon), _HALF, _ONE, increasing=True)
        if p2 is None or p2 == _HALF:
            raise self._too_small("the fresh round")
        return p1, q1, p2, 1 - p2

    def _structure(self, p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> str:
        if p1 + q1 != 1 or not p1 > _HALF:
            return "the first SUE round needs q1 = 1 - p1 and p1 > 1/2"
        if p2 + q2 != 1 or not p2 > _HALF:
            return "the second SUE round needs q2 = 1 - p2 and p2 > 1/2"
        return ""

    def rappor_parameters(self) -> dict[str, Fraction]:
        """RAPPOR's f, p, q for the same chain: f = 2q₁ (PRR), p = q₂ and q = p₂ (IRR)."""
        return {"f": 2 * self.q1, "p": self.q2, "q": self.p2}
