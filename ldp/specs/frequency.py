"""Frequency-oracle specs: BinaryRR, GRR, SUE, OUE, OLH, BLH (docs/mechanisms.md#frequency-oracles).

Each spec holds its categorical ``domain``, the ε it claims, and its exact
rational perturbation probabilities. Built from ``epsilon`` alone, the
probabilities are calibrated with 64-bit rational precision rounding toward
more privacy, so the ε they achieve (``epsilon_achieved``) is at most the
claim and within ~1e-15 of it. Given explicitly (from a JSON file, say), the
probabilities are checked against the claim: a spec whose probabilities give
more than its ε is rejected, and so is one whose stated ε exceeds what they
give (e^ε by more than a relative 1e-9). ε and the domain size are bounded
per mechanism (:mod:`ldp.specs.limits`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

from ldp.domain import DomainIndex, DomainValue, normalize_domain
from ldp.errors import SpecError
from ldp.exact import ceil_fraction, exp_lower_bound, floor_fraction
from ldp.frequency_math import frequency_variance, variance_star
from ldp.hashing import LH_PRIME, LH_SEED_SPACE, lh_collision_probability
from ldp.report_schema import BitVector, BoundedInt, DomainElement, ReportSchema
from ldp.specs.base import ExactPrivacySpec
from ldp.specs.limits import (
    MAX_DOMAIN_SIZE,
    MAX_UNARY_DOMAIN_SIZE,
    OLH_MAX_EPSILON,
    RR64_MAX_EPSILON,
    SUE_MAX_EPSILON,
    check_domain_length,
    check_size_limit,
)
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_epsilon, check_int, check_probability

__all__ = [
    "BLH",
    "GRR",
    "OLH",
    "OUE",
    "SUE",
    "BinaryRR",
    "DomainSpec",
    "FrequencySpec",
    "HashedRandomizedResponse",
    "LocalHashing",
    "UnaryEncoding",
    "calibrate_keep_probability",
]


@dataclasses.dataclass(frozen=True, init=False)
class DomainSpec(ExactPrivacySpec):
    """A finite domain of d ≥ 2 values and an ε: what the frequency oracles and the range mechanisms share.

    Subclasses call this constructor first, which validates and stores
    ``domain`` (its size before copying it, against ``max_domain_size``) and
    ``epsilon`` (its limit, ``max_epsilon``, before any calibration), then
    set their probabilities.

    Examples
    --------
    >>> import ldp
    >>> from ldp.specs.frequency import DomainSpec
    >>> spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> isinstance(spec, DomainSpec), spec.domain_size, spec.index_of("b")
    (True, 3, 1)
    """

    #: Largest domain (ldp.specs.limits) and why.
    max_domain_size: ClassVar[int] = MAX_DOMAIN_SIZE
    max_domain_reason: ClassVar[str] = (
        "the aggregator keeps one int64 count per value and the spec a value index"
    )
    max_epsilon: ClassVar[float] = RR64_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its smallest probability, about 1/(e^epsilon + 1), is a multiple of 2^-64 and could not match e^epsilon "
        "to 1e-9 above it"
    )

    domain: tuple[DomainValue, ...]
    epsilon: float

    def __init__(self, domain: Iterable[DomainValue], epsilon: float) -> None:
        """Validate the domain (its size before copying it) and ε (its limit before any calibration)."""
        limit, why = self.max_domain_size, self.max_domain_reason
        check_domain_length(domain, limit, self.mechanism, why)
        values = normalize_domain(domain)
        check_size_limit(len(values), limit, self.mechanism, f"a domain of {len(values):,} values", why)
        if len(values) < 2:
            raise SpecError(f"{self.mechanism} needs a domain of at least 2 values, got {len(values)}")
        object.__setattr__(self, "domain", values)
        object.__setattr__(self, "epsilon", check_epsilon(epsilon))
        self._check_epsilon_limit()

    @property
    def domain_size(self) -> int:
        """Number of values d in the domain."""
        return len(self.domain)

    @cached_property
    def domain_index(self) -> DomainIndex:
        """Value → index lookup (accepts the string form of integer values)."""
        return DomainIndex(self.domain)

    def index_of(self, value: Any) -> int:
        """Index of ``value`` in the domain (its rank, in an ordered one); InputError when absent."""
        return self.domain_index.index(value)


@dataclasses.dataclass(frozen=True, init=False)
class FrequencySpec(DomainSpec):
    """Common interface of the pure frequency oracles.

    Subclasses define ``exact_p_star``/``exact_q_star`` (support
    probabilities) and ``privacy_ratio`` (the worst-case probability ratio
    over pairs of inputs and any output, computed from the probabilities).
    Their constructors call this one first (:class:`DomainSpec`'s), which
    validates and stores ``domain`` and ``epsilon``, then set their
    probabilities.

    Examples
    --------
    >>> import ldp
    >>> spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> isinstance(spec, ldp.FrequencySpec), spec.index_of("b")
    (True, 1)
    """

    report_kind: ClassVar[str] = ""
    #: Order in the list of frequency oracles, smaller reports first; ``auto`` breaks ties to the lower rank.
    report_size_rank: ClassVar[int] = 100

    # -- privacy ---------------------------------------------------------
    # -- accuracy --------------------------------------------------------
    @property
    def exact_p_star(self) -> Fraction:
        """P[report supports v | value = v]."""
        raise NotImplementedError

    @property
    def exact_q_star(self) -> Fraction:
        """P[report supports v | value ≠ v]."""
        raise NotImplementedError

    @property
    def p_star(self) -> float:
        return float(self.exact_p_star)

    @property
    def q_star(self) -> float:
        return float(self.exact_q_star)

    def variance(self, frequency: Any = 0.0, n: int = 1) -> Any:
        """Var[f̂_v] on the frequency scale for ``n`` users (fixed-data, docs/mechanisms.md#variance)."""
        return frequency_variance(frequency, n, self.p_star, self.q_star)

    @property
    def variance_star(self) -> float:
        """Var* = n·Var at f → 0."""
        return variance_star(self.p_star, self.q_star)


def calibrate_keep_probability(epsilon: float, outputs: int, mechanism: str) -> Fraction:
    """Keep probability of randomized response over ``outputs`` values.

    p = ⌊2^64·e^ε/(e^ε + outputs − 1)⌋/2^64 (rounded down: more privacy) and
    q = (1 − p)/(outputs − 1), so p/q ≤ e^ε exactly. Rounding p (not q) keeps
    the ratio within ~(e^ε + outputs)²/(e^ε·outputs)·2^-64 of e^ε for any
    number of outputs (rounding q on the 2^-64 grid moved p by outputs·2^-64).
    """
    bound = exp_lower_bound(epsilon)
    p = floor_fraction(bound / (bound + outputs - 1))
    if p * outputs <= 1:  # p <= q
        raise SpecError(
            f"{mechanism}: epsilon={epsilon!r} is too small to represent with 64-bit probabilities"
        )
    return p


@dataclasses.dataclass(frozen=True, init=False)
class GRR(FrequencySpec):
    """Generalized (k-ary) randomized response, a.k.a. direct encoding.

    The user reports their value with probability p = e^ε/(e^ε + d − 1) and
    each other value with probability q = (1 − p)/(d − 1).

    Parameters
    ----------
    domain : sequence of str or int
        The d ≥ 2 possible values.
    epsilon : float
        Privacy claim; the probabilities are calibrated to it.
    p : Fraction or str, optional
        Keep probability; derived from ``epsilon`` when omitted.

    References
    ----------
    .. [1] P. Kairouz, K. Bonawitz, D. Ramage. "Discrete distribution
       estimation under local privacy". ICML 2016.
    .. [2] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.1.

    Examples
    --------
    >>> from ldp import GRR
    >>> spec = GRR(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('grr', 2, 1.598)
    """

    mechanism: ClassVar[str] = "grr"
    report_size_rank: ClassVar[int] = 1
    report_kind: ClassVar[str] = "value"
    #: Reports carry the reported domain value.
    report_schema: ClassVar[ReportSchema] = ReportSchema((DomainElement("value"),))

    p: Fraction

    def __init__(
        self, domain: Iterable[DomainValue], epsilon: float, p: ProbabilityInput | None = None
    ) -> None:
        super().__init__(domain, epsilon)
        if p is None:
            keep = calibrate_keep_probability(self.epsilon, self.domain_size, self.mechanism)
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, self.domain_size):
                raise SpecError(f"{self.mechanism}: p must exceed 1/d = 1/{self.domain_size}, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()

    @property
    def q(self) -> Fraction:
        """Probability of reporting one particular other value."""
        return (1 - self.p) / (self.domain_size - 1)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """Inputs x, x′: outputs x′ (q vs p), x (p vs q), and the d − 2 others ((d − 2)q under both)."""
        p, q, d = self.p, self.q, self.domain_size
        rest = [(d - 2) * q] if d > 2 else []
        return (piece([p, q, *rest], [q, p, *rest]),)

    @property
    def privacy_ratio(self) -> Fraction:
        return self.p / self.q

    def shuffle_clones(self) -> tuple[float, float, float]:
        """Every report holds q of each value (a clone with probability 2q); user 1's differs with probability p + q.

        ε₀ is the certified claim (≥ the achieved ε); 2q is rounded down and
        p + q up, both toward a larger δ (docs/accounting.md#shuffle).
        """
        clone = math.nextafter(float(min(Fraction(1), 2 * self.q)), 0.0)
        informative = min(1.0, math.nextafter(float(self.p + self.q), 2.0))
        return float(self.epsilon), clone, informative

    @property
    def exact_p_star(self) -> Fraction:
        return self.p

    @property
    def exact_q_star(self) -> Fraction:
        return self.q


@dataclasses.dataclass(frozen=True, init=False)
class BinaryRR(GRR):
    """Warner's binary randomized response: GRR over a two-value domain.

    Reports the true value with probability p = e^ε/(e^ε + 1).

    References
    ----------
    .. [1] S. L. Warner. "Randomized response: a survey technique for
       eliminating evasive answer bias". JASA 60(309), 1965.

    Examples
    --------
    >>> from ldp import BinaryRR
    >>> spec = BinaryRR(domain=("no", "yes"), epsilon=1.0)
    >>> spec.mechanism, spec.domain_size
    ('binary-rr', 2)
    """

    mechanism: ClassVar[str] = "binary-rr"
    report_size_rank: ClassVar[int] = 0

    def __init__(
        self, domain: Iterable[DomainValue] = (0, 1), epsilon: float = 1.0, p: ProbabilityInput | None = None
    ) -> None:
        domain = tuple(domain)
        if len(domain) != 2:
            raise SpecError(f"binary-rr needs a domain of exactly 2 values, got {len(domain)}")
        super().__init__(domain, epsilon, p)


@dataclasses.dataclass(frozen=True, init=False)
class UnaryEncoding(FrequencySpec):
    """Unary encoding base: one-hot vector, each bit kept/flipped independently.

    P[bit = 1 | true bit 1] = p, P[bit = 1 | true bit 0] = q. Two inputs differ
    in two bits, so the worst-case ratio is p(1 − q)/((1 − p)q).
    """

    report_kind: ClassVar[str] = "bits"
    #: Reports carry the d perturbed bits.
    report_schema: ClassVar[ReportSchema] = ReportSchema((BitVector("bits", length="domain_size"),))
    max_domain_size: ClassVar[int] = MAX_UNARY_DOMAIN_SIZE
    max_domain_reason: ClassVar[str] = (
        "a report holds one bit per value and the aggregator counts bytes in 32 int64 counters per value"
    )

    p: Fraction
    q: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        p: ProbabilityInput | None = None,
        q: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        if p is None and q is None:
            one, zero = self._calibrate(self.epsilon)
        elif p is None or q is None:
            raise SpecError(f"{self.mechanism}: give both p and q, or neither (calibrated from epsilon)")
        else:
            one = check_probability(p, "p", low_open=True, high_open=True)
            zero = check_probability(q, "q", low_open=True, high_open=True)
            if one <= zero:
                raise SpecError(f"{self.mechanism}: p must exceed q, got p={one}, q={zero}")
        object.__setattr__(self, "p", one)
        object.__setattr__(self, "q", zero)
        self._check_claim()

    def _calibrate(self, epsilon: float) -> tuple[Fraction, Fraction]:
        raise NotImplementedError

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """The two bits x and x′ differ in: T(Bern(p), Bern(q)) ⊗ T(Bern(q), Bern(p))."""
        set_bit = piece([1 - self.p, self.p], [1 - self.q, self.q])
        return (set_bit, set_bit.swapped())

    @property
    def privacy_ratio(self) -> Fraction:
        return self.p * (1 - self.q) / ((1 - self.p) * self.q)

    @property
    def exact_p_star(self) -> Fraction:
        return self.p

    @property
    def exact_q_star(self) -> Fraction:
        return self.q

    @property
    def num_bytes(self) -> int:
        """Length of a packed report."""
        return (self.domain_size + 7) // 8


@dataclasses.dataclass(frozen=True, init=False)
class SUE(UnaryEncoding):
    """Symmetric unary encoding (basic one-time RAPPOR): p = e^{ε/2}/(e^{ε/2}+1), q = 1 − p.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.2.
    .. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014.

    Examples
    --------
    >>> from ldp import SUE
    >>> spec = SUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('sue', 4, 3.918)
    """

    mechanism: ClassVar[str] = "sue"
    report_size_rank: ClassVar[int] = 5
    max_epsilon: ClassVar[float] = SUE_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "1 - p, about 1/(e^(epsilon/2) + 1), is a multiple of 2^-64 and could not match e^epsilon to 1e-9 above it"
    )

    def _calibrate(self, epsilon: float) -> tuple[Fraction, Fraction]:
        bound = exp_lower_bound(epsilon)
        half = math.sqrt(float(bound)) * (1 - 2.0**-50)
        p = floor_fraction(Fraction(half) / (Fraction(half) + 1))
        step = Fraction(1, 1 << 64)
        while (p / (1 - p)) ** 2 > bound:  # float sqrt was a hair too high
            p -= step
        if p <= Fraction(1, 2):
            raise SpecError(f"sue: epsilon={epsilon!r} is too small to represent with 64-bit probabilities")
        return p, 1 - p


@dataclasses.dataclass(frozen=True, init=False)
class OUE(UnaryEncoding):
    """Optimized unary encoding: p = 1/2, q = 1/(e^ε + 1).

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.3.

    Examples
    --------
    >>> from ldp import OUE
    >>> spec = OUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('oue', 4, 3.683)
    """

    mechanism: ClassVar[str] = "oue"
    report_size_rank: ClassVar[int] = 4

    def _calibrate(self, epsilon: float) -> tuple[Fraction, Fraction]:
        q = ceil_fraction(1 / (exp_lower_bound(epsilon) + 1))
        if q >= Fraction(1, 2):
            raise SpecError(f"oue: epsilon={epsilon!r} is too small to represent with 64-bit probabilities")
        return Fraction(1, 2), q


def optimal_hash_range(epsilon: float) -> int:
    """Integer g ≥ 2 minimizing OLH's Var* (the real optimum is e^ε + 1)."""
    e = math.exp(epsilon)
    candidates = {max(2, math.floor(e) + 1), max(2, math.ceil(e) + 1)}

    def var(g: int) -> float:
        return (e + g - 1) ** 2 / ((g - 1) * (e - 1) ** 2)

    return min(sorted(candidates), key=var)


#: A local-hashing report's hash seed (drawn by the client from the hash family) and its reported bucket.
LH_SEED_FIELD = BoundedInt(
    "seed",
    bound=LH_SEED_SPACE,
    message="seed {raw!r} is outside the hash family (must be < {bound})",
    dtype="uint64",
)
LH_BUCKET_FIELD = BoundedInt(
    "value", bound="g", message="bucket {raw!r} is out of range [0, {bound})", lenient=True
)


class HashedRandomizedResponse(ExactPrivacySpec):
    """GRR over g buckets of a key hashed by a seed the client draws: the probabilities of local hashing.

    Shared by :class:`LocalHashing` (the key is the value) and the prefix
    oracles of :mod:`ldp.specs.heavy_hitters` (the key is a prefix's). The
    subclass holds ``g`` and ``p`` as dataclass fields and sets them with
    :meth:`_set_hash_range`. With the hash family of :mod:`ldp.hashing`,
    p* = p and q* = c·p + (1 − c)(1 − p)/(g − 1), c the exact collision
    probability.
    """

    g: int
    p: Fraction

    def _set_hash_range(self, g: int, p: ProbabilityInput | None) -> None:
        """The hash range and exact keep probability (calibrated from ε when omitted), then the claim check."""
        buckets = check_int(g, "g", minimum=2, maximum=LH_PRIME - 1)
        object.__setattr__(self, "g", buckets)
        if p is None:
            keep = calibrate_keep_probability(self.epsilon, buckets, self.mechanism)
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, buckets):
                raise SpecError(f"{self.mechanism}: p must exceed 1/g = 1/{buckets}, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()

    @property
    def q(self) -> Fraction:
        """Probability of reporting one particular other bucket."""
        return (1 - self.p) / (self.g - 1)

    @property
    def collision_probability(self) -> Fraction:
        """P[H_seed(x) = H_seed(x′)] for distinct keys x ≠ x′."""
        return lh_collision_probability(self.g)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """With probability c the hash merges x and x′ (the report says nothing); otherwise GRR over g."""
        c, p, q, g = self.collision_probability, self.p, self.q, self.g
        rest = (1 - c) * (g - 2) * q + c
        return (piece([(1 - c) * p, (1 - c) * q, rest], [(1 - c) * q, (1 - c) * p, rest]),)

    @property
    def privacy_ratio(self) -> Fraction:
        return self.p / self.q

    @property
    def exact_p_star(self) -> Fraction:
        """P[report supports its own key]."""
        return self.p

    @property
    def exact_q_star(self) -> Fraction:
        """P[report supports another key]."""
        c = self.collision_probability
        return c * self.p + (1 - c) * self.q

    @property
    def p_star(self) -> float:
        return float(self.exact_p_star)

    @property
    def q_star(self) -> float:
        return float(self.exact_q_star)


@dataclasses.dataclass(frozen=True, init=False)
class LocalHashing(HashedRandomizedResponse, FrequencySpec):
    """Local hashing base: hash the value to [g], then GRR over [g].

    The report is (seed, y); it supports every v with H_seed(v) = y. With the
    hash family of :mod:`ldp.hashing`, p* = p and
    q* = c·p + (1 − c)(1 − p)/(g − 1), c the exact collision probability.
    """

    report_kind: ClassVar[str] = "hashed"
    #: Reports carry the hash function's seed and the reported bucket in [0, g).
    report_schema: ClassVar[ReportSchema] = ReportSchema((LH_SEED_FIELD, LH_BUCKET_FIELD))

    g: int
    p: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        g: int | None = None,
        p: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        self._set_hash_range(self._default_g() if g is None else g, p)

    def _default_g(self) -> int:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True, init=False)
class OLH(LocalHashing):
    """Optimized local hashing: g = e^ε + 1 (the best integer), Var* = 4e^ε/(e^ε − 1)².

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.4.

    Examples
    --------
    >>> from ldp import OLH
    >>> spec = OLH(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('olh', 64, 3.692)
    """

    mechanism: ClassVar[str] = "olh"
    report_size_rank: ClassVar[int] = 3
    max_epsilon: ClassVar[float] = OLH_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its hash range g = e^epsilon + 1 must stay below the hash prime 2^31 - 1"
    )

    def _default_g(self) -> int:
        return optimal_hash_range(self.epsilon)


@dataclasses.dataclass(frozen=True, init=False)
class BLH(LocalHashing):
    """Binary local hashing: g = 2.

    References
    ----------
    .. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §4.4.
    .. [2] R. Bassily, A. Smith. "Local, private, efficient protocols for
       succinct histograms". STOC 2015.

    Examples
    --------
    >>> from ldp import BLH
    >>> spec = BLH(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('blh', 63, 4.683)
    """

    mechanism: ClassVar[str] = "blh"
    report_size_rank: ClassVar[int] = 2

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        g: int | None = 2,
        p: ProbabilityInput | None = None,
    ) -> None:
        if g is not None and g != 2:
            raise SpecError(f"blh has g = 2 by definition, got g={g!r}; use olh for other g")
        super().__init__(domain, epsilon, g, p)

    def _default_g(self) -> int:
        return 2
