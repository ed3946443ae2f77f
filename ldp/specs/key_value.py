"""Key-value data: PCKV (UE and GRR forms) and the PrivKVM baseline (docs/key-value.md).

A user holds a set of (key, value) pairs, keys from a domain of d keys, each
key at most once, values in [−1, 1]. Every mechanism here reports one
(key, value) pair, so it estimates, per key k, the frequency f_k (share of
users holding k) and the mean m_k of k's values among its holders.

PCKV [1]_ pads the set to ℓ pairs with dummy keys d+1, …, d+ℓ (value 0),
samples one pair uniformly from the padded set of η = max(|S|, ℓ) pairs,
discretizes its value to v* = ±1 (P[v* = 1] = (1 + v)/2) and perturbs the
(key, v*) pair jointly over the d' = d + ℓ keys:

- *UE* (``pckv-ue``): a vector y ∈ {−1, 0, 1}^{d'}; y_k = v* w.p. a·p, −v*
  w.p. a(1 − p), 0 w.p. 1 − a; every other y_i = ±1 w.p. b/2 each, 0 w.p.
  1 − b. The paper's allocation: a = 1/2, p = e^ε/(e^ε + 1) (ε₂ = ε),
  b = 1/(e^{ε₁} + 1) with ε₁ = ln((e^ε + 1)/2), i.e. b = 2/(e^ε + 3).
- *GRR* (``pckv-grr``): an output (key, sign); with probability a the key is
  kept and the sign is v* kept w.p. p; otherwise the key is uniform over the
  other d' − 1 keys and the sign uniform. The paper's allocation (it uses
  the sampling's amplification): with L = ℓ(e^ε − 1),
  a = (L + 2)/(L + 2d'), p = (L + 1)/(L + 2), b = (1 − a)/(d' − 1).

PrivKVM [2]_ (``privkvm``), single-round form (PrivKV; no iterations, no
virtual iterations): the user draws one key j uniformly from the d keys; if
it holds j, it reports a key bit 1 w.p. p₁ with its discretized value
flipped w.p. 1 − p₂, else (bit 0) the value 0; if it does not hold j, it
reports bit 1 w.p. 1 − p₁ with a fake value drawn from mean 0 (±1 each 1/2)
and flipped w.p. 1 − p₂; p₁ = p₂ = e^{ε/2}/(e^{ε/2} + 1) (ε₁ = ε₂ = ε/2).

Privacy (derivations in docs/key-value.md#privacy): a report's distribution
under a set S is the average over the η padded pairs of the single-pair
distributions, and the discretization mixes v* = ±1, so the worst ratio is
taken over single pairs and v* = ±1, with the padding's amplification for
GRR. Each spec computes it exactly from its Fraction probabilities.

References
----------
.. [1] X. Gu, M. Li, Y. Cheng, L. Xiong, Y. Cao. "PCKV: Locally differentially
   private correlated key-value data collection with optimized utility".
   USENIX Security 2020.
.. [2] Q. Ye, H. Hu, X. Meng, H. Zheng. "PrivKV: Key-value data collection
   with local differential privacy". IEEE S&P 2019.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from ldp.domain import DomainIndex, DomainValue, normalize_domain
from ldp.errors import InputError, SpecError
from ldp.exact import exp_lower_bound, floor_fraction
from ldp.report_schema import BitVector, BoundedInt, ReportSchema
from ldp.specs.base import ExactPrivacySpec, MechanismView
from ldp.specs.limits import RR64_MAX_EPSILON
from ldp.specs.pairs import PrivacyPiece
from ldp.specs.validation import ProbabilityInput, check_epsilon, check_int, check_probability

__all__ = ["PCKV", "PCKVGRR", "PCKVUE", "KeyValueSpec", "PrivKVM", "dominating_pieces", "parse_pairs"]

#: Largest number of keys (the UE report holds two bits per padded key).
MAX_KEYS = 1 << 16


def _pairs_of(value: Any) -> list[tuple[Any, Any]]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise InputError(
                'a key-value input must be a JSON object such as {"a": 0.5} or a list of [key, value] pairs'
            ) from None
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise InputError(f"a key-value pair must be [key, value], got {item!r}")
            out.append((item[0], item[1]))
        return out
    raise InputError(
        f"a key-value input must be a JSON object or a list of [key, value] pairs, got {type(value).__name__}"
    )


def parse_pairs(index: DomainIndex, value: Any) -> tuple[tuple[int, float], ...]:
    """A user's pairs as (key index, value) with every key in the domain, once, and every value in [−1, 1].

    ``value`` is a mapping key → value, a sequence of (key, value) pairs, or
    the JSON text of either (a CSV cell). An empty set is allowed (the user
    reports a dummy key).
    """
    seen: set[int] = set()
    out = []
    for key, number in _pairs_of(value):
        k = index.index(key)
        if k in seen:
            raise InputError(f"key {key!r} appears twice in one user's pairs")
        seen.add(k)
        if isinstance(number, (bool, np.bool_)):
            raise InputError(
                f"the value of key {key!r} must be a number, got the boolean {number!r} "
                f"(a boolean is not read as {int(number)})"
            )
        if not isinstance(number, (int, float)):
            try:
                number = float(number)
            except (TypeError, ValueError):
                raise InputError(f"the value of key {key!r} must be a number, got {number!r}") from None
        v = float(number)
        if not (math.isfinite(v) and -1.0 <= v <= 1.0):
            raise InputError(f"the value of key {key!r} must be in [-1, 1], got {number!r}")
        out.append((k, v))
    return tuple(out)


@dataclasses.dataclass(frozen=True, init=False)
class KeyValueSpec(ExactPrivacySpec):
    """Common part of the key-value specs: the key domain, ε and the padding length ℓ.

    Inputs are a user's set of (key, value) pairs (:func:`parse_pairs`).
    """

    report_kind: ClassVar[str] = "key-value"
    #: The accountant's pieces are binary randomized response at the exact ratio: a sound bound.
    exact_privacy_curve: ClassVar[bool] = False

    domain: tuple[DomainValue, ...]
    epsilon: float
    ell: int

    def _init_common(self, domain: Iterable[DomainValue], epsilon: float, ell: int) -> None:
        keys = normalize_domain(domain)
        if not 2 <= len(keys) <= MAX_KEYS:
            raise SpecError(f"{self.mechanism} needs between 2 and {MAX_KEYS} keys, got {len(keys)}")
        object.__setattr__(self, "domain", keys)
        object.__setattr__(self, "epsilon", check_epsilon(epsilon))
        object.__setattr__(self, "ell", check_int(ell, "ell", minimum=1, maximum=MAX_KEYS))
        self._check_epsilon_limit()

    @property
    def domain_size(self) -> int:
        """Number of keys d."""
        return len(self.domain)

    @property
    def padded_size(self) -> int:
        """d' = d + ℓ: the keys and the ℓ dummy keys."""
        return len(self.domain) + self.ell

    @cached_property
    def domain_index(self) -> DomainIndex:
        """Key → index lookup."""
        return DomainIndex(self.domain)

    def pairs_of(self, value: Any) -> tuple[tuple[int, float], ...]:
        """A user's input as (key index, value) pairs (:func:`parse_pairs`)."""
        return parse_pairs(self.domain_index, value)

    def example_inputs(self, n: int) -> list[dict[Any, float]]:
        """``n`` valid inputs with unequal key frequencies and means (tests, documentation)."""
        keys = self.domain
        out: list[dict[Any, float]] = []
        for i in range(n):
            held = {keys[0]: 0.5} if i % 2 == 0 else {}
            if i % 3 == 0 and len(held) < self.ell:  # never more than ℓ pairs: the estimates' premise
                held[keys[1]] = -0.25 + (i % 5) / 10
            out.append(held)
        return out

    def value_counts(self, values: Iterable[Any]) -> dict[Any, int]:
        """How many of ``values`` (inputs) hold each key: what the table's ``estimate`` column estimates."""
        counts = dict.fromkeys(self.domain, 0)
        for value in values:
            for k, _ in self.pairs_of(value):
                counts[self.domain[k]] += 1
        return counts

    def privacy_summary(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "epsilon_achieved": self.epsilon_achieved}


def dominating_pieces(ratio: Fraction) -> tuple[PrivacyPiece, ...]:
    """Binary randomized response of ratio R: its trade-off curve dominates every mechanism whose ratio is ≤ R.

    A sound bound for the accountant (``exact_privacy_curve = False``): the
    key-value reports are averages over the padded pairs, whose exact worst
    pair of sets is not one product of pieces.
    """
    from ldp.specs.pairs import piece

    hi, lo = ratio / (1 + ratio), 1 / (1 + ratio)
    return (piece([hi, lo], [lo, hi]),)


@dataclasses.dataclass(frozen=True, init=False)
class PCKV(KeyValueSpec):
    """Common part of PCKV's two forms: padding-and-sampling, then a perturbation with a, b and p.

    a is the probability of keeping the sampled key, b of reporting another
    key, p of keeping the value's sign; subclasses set :meth:`_calibrate`
    (their defaults from ε) and the perturbation's ratio.

    Parameters
    ----------
    domain : sequence of str or int
        The d ≥ 2 keys.
    epsilon : float
        Privacy claim of one report (for the user's whole set of pairs).
    ell : int, default 1
        Padding length ℓ; unbiased when no user holds more than ℓ pairs.
    a, b, p : Fraction or str, optional
        The perturbation's probabilities, all or none; derived from ``epsilon``
        when omitted (PCKV-GRR: b must be (1 − a)/(d + ℓ − 1)).

    Examples
    --------
    >>> from ldp.specs.key_value import PCKV, PCKVGRR, PCKVUE
    >>> issubclass(PCKVUE, PCKV) and issubclass(PCKVGRR, PCKV)
    True
    """

    max_epsilon: ClassVar[float] = RR64_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its small probabilities, about 1/(e^epsilon + 1), are multiples of 2^-64 and could not match e^epsilon "
        "to 1e-9 above it"
    )

    a: Fraction
    b: Fraction
    p: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        ell: int = 1,
        a: ProbabilityInput | None = None,
        b: ProbabilityInput | None = None,
        p: ProbabilityInput | None = None,
    ) -> None:
        self._init_common(domain, epsilon, ell)
        given = [x is not None for x in (a, b, p)]
        if any(given) and not all(given):
            raise SpecError(f"{self.mechanism}: give all of a, b and p, or none (derived from epsilon)")
        if a is None:
            a_, b_, p_ = self._calibrate(exp_lower_bound(self.epsilon))
        else:
            a_ = check_probability(a, "a", low_open=True, high_open=True)
            b_ = check_probability(b, "b", low_open=True, high_open=True)
            p_ = check_probability(p, "p", high_open=True)
        if not (a_ > b_ and p_ > Fraction(1, 2)):
            raise SpecError(f"{self.mechanism}: needs a > b and p > 1/2 (got a={a_}, b={b_}, p={p_})")
        object.__setattr__(self, "a", a_)
        object.__setattr__(self, "b", b_)
        object.__setattr__(self, "p", p_)
        self._check_claim()

    def _calibrate(self, e: Fraction) -> tuple[Fraction, Fraction, Fraction]:
        raise NotImplementedError

    @property
    def key_signal(self) -> Fraction:
        """c = a(2p − 1): E[reported sign on key k] per unit of the sampled value."""
        return self.a * (2 * self.p - 1)


@dataclasses.dataclass(frozen=True, init=False)
class PCKVUE(PCKV):
    """PCKV-UE: padding-and-sampling, then a ternary unary vector over the d + ℓ keys.

    a = 1/2, p = e^ε/(e^ε + 1), b = 2/(e^ε + 3) by default (the paper's
    optimized allocation ε₂ = ε, ε₁ = ln((e^ε + 1)/2)); docs/key-value.md.

    Its parameters are those of :class:`PCKV`.

    Examples
    --------
    >>> from ldp.specs.key_value import PCKVUE
    >>> spec = PCKVUE(domain=("a", "b", "c"), epsilon=1.0, ell=2)
    >>> spec.padded_size, spec.a, round(float(spec.b), 4)
    (5, Fraction(1, 2), 0.3498)
    """

    mechanism: ClassVar[str] = "pckv-ue"
    #: The vector as two bit vectors over the d + ℓ keys: where y = +1, and where y = −1.
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (BitVector("plus", length="padded_size"), BitVector("minus", length="padded_size"))
    )

    def _calibrate(self, e: Fraction) -> tuple[Fraction, Fraction, Fraction]:
        """p, b rounded down on the 2^-64 grid: the ratio max(2ap/b, ·)/min(2a(1−p)/b, ·) then stays ≤ e^ε."""
        p = floor_fraction(e / (e + 1))
        # with a = 1/2 the worst ratio is max(p/b, 1/(2(1−b))) / min((1−p)/b, 1/(2(1−b))); b from p exactly
        # (b = 2(1 − p)/(1 + 2(1 − p))... solving (1 − p)/b = 1/(2(1 − b)) gives b = 2(1 − p)/(3 − 2p))
        b = 2 * (1 - p) / (3 - 2 * p)
        return Fraction(1, 2), b, p

    @property
    def privacy_ratio(self) -> Fraction:
        """max(2ap/b, (1−a)/(1−b)) / min(2a(1−p)/b, (1−a)/(1−b)): one coordinate of each of two keys."""
        a, b, p = self.a, self.b, self.p
        zero = (1 - a) / (1 - b)
        return max(2 * a * p / b, zero) / min(2 * a * (1 - p) / b, zero)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        return dominating_pieces(self.privacy_ratio)


@dataclasses.dataclass(frozen=True, init=False)
class PCKVGRR(PCKV):
    """PCKV-GRR: padding-and-sampling, then one (key, sign) by correlated randomized response.

    With L = ℓ(e^ε − 1): a = (L + 2)/(L + 2d'), p = (L + 1)/(L + 2),
    b = (1 − a)/(d' − 1) by default (the paper's allocation, which uses the
    padding's amplification: the ratio of one pair is L + 1, of a set e^ε).

    Its parameters are those of :class:`PCKV` (b must be (1 − a)/(d + ℓ − 1)).

    Examples
    --------
    >>> from ldp.specs.key_value import PCKVGRR
    >>> spec = PCKVGRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> spec.padded_size, round(float(spec.a), 4), round(float(spec.p), 4)
    (4, 0.3826, 0.7311)
    """

    mechanism: ClassVar[str] = "pckv-grr"
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (BoundedInt("key", bound="padded_size"), BoundedInt("sign", bound=2))
    )

    def _calibrate(self, e: Fraction) -> tuple[Fraction, Fraction, Fraction]:
        """a and p rounded down (less signal, more privacy): the set-level ratio stays ≤ e^ε."""
        d1 = self.padded_size
        big = self.ell * (e - 1)
        a = floor_fraction((big + 2) / (big + 2 * d1))
        p = floor_fraction((big + 1) / (big + 2))
        return a, (1 - a) / (d1 - 1), p

    def _check_claim(self) -> None:
        if self.b != (1 - self.a) / (self.padded_size - 1):
            raise SpecError(
                f"{self.mechanism}: b must be (1 - a)/(d + ell - 1) = {(1 - self.a) / (self.padded_size - 1)}"
            )
        super()._check_claim()

    @property
    def privacy_ratio(self) -> Fraction:
        """((ℓ − 1)q + max(ap, q)) / ((ℓ − 1)q + min(a(1 − p), q)), q = b/2 (docs/key-value.md#privacy).

        An output (k, s) has probability q + (g − q)/η under a set whose
        padded pairs hold key k with probability g of s (g ∈ [a(1 − p), ap]),
        and q under a set without k; η ≥ ℓ, so the extremes are at η = ℓ.
        """
        a, p, q, ell = self.a, self.p, self.b / 2, self.ell
        return ((ell - 1) * q + max(a * p, q)) / ((ell - 1) * q + min(a * (1 - p), q))

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        return dominating_pieces(self.privacy_ratio)


@dataclasses.dataclass(frozen=True, init=False)
class PrivKVM(KeyValueSpec):
    """PrivKVM's single round (PrivKV): one uniformly drawn key, its presence bit and value by randomized response.

    p₁ = p₂ = e^{ε/2}/(e^{ε/2} + 1) (the paper's split ε₁ = ε₂ = ε/2, by
    sequential composition). The exact worst ratio of these probabilities is
    max(e^{ε/2}, 2p₁p₂/(1 − p₁)) = 2e^ε/(e^{ε/2} + 1) < e^ε: the paper's
    claim is not tight, and the spec states the claim and the exact ε
    (``epsilon_achieved``) both. Non-holders' fake values have mean 0 (a
    single round: no iterations, no virtual iterations), so the mean
    estimate is biased toward 0 (docs/key-value.md#estimators).

    Parameters
    ----------
    domain : sequence of str or int
        The d ≥ 2 keys.
    epsilon : float
        Privacy claim of one report.
    ell : int, default 1
        Unused by the perturbation (kept for a common input format); must be 1.
    p1, p2 : Fraction or str, optional
        Key and value keep probabilities; derived from ``epsilon`` when omitted.
    """

    mechanism: ClassVar[str] = "privkvm"
    claim_matches_probabilities: ClassVar[bool] = False
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (BoundedInt("key", bound="domain_size"), BoundedInt("response", bound=3))
    )

    p1: Fraction
    p2: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        ell: int = 1,
        p1: ProbabilityInput | None = None,
        p2: ProbabilityInput | None = None,
    ) -> None:
        self._init_common(domain, epsilon, ell)
        if self.ell != 1:
            raise SpecError("privkvm samples one key uniformly and pads nothing: ell must be 1")
        if (p1 is None) != (p2 is None):
            raise SpecError("privkvm: give both p1 and p2, or neither (derived from epsilon)")
        if p1 is None:
            half = exp_lower_bound(self.epsilon / 2)
            k1 = k2 = floor_fraction(half / (half + 1))
        else:
            k1 = check_probability(p1, "p1", high_open=True)
            k2 = check_probability(p2, "p2", high_open=True)
        if not (k1 > Fraction(1, 2) and k2 > Fraction(1, 2)):
            raise SpecError(f"privkvm: needs p1 > 1/2 and p2 > 1/2 (got {k1}, {k2})")
        object.__setattr__(self, "p1", k1)
        object.__setattr__(self, "p2", k2)
        self._check_claim()

    @property
    def privacy_ratio(self) -> Fraction:
        """The worst ratio over the three outputs of the drawn key: value ±1 and "absent" (response 1)."""
        p1, p2 = self.p1, self.p2
        signs = [p1 * p2, p1 * (1 - p2), (1 - p1) / 2]  # P[(j, +1)] under holder +1, holder −1, non-holder
        return max(max(signs) / min(signs), p1 / (1 - p1))

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        return dominating_pieces(self.privacy_ratio)


#: The registered key-value mechanisms (a live view of the registry): name -> spec class.
KEY_VALUE_MECHANISMS: MechanismView[KeyValueSpec] = MechanismView(KeyValueSpec)
