"""LOLOHA: longitudinal local hashing with a memoized response per hash bucket (docs/longitudinal/loloha.md).

Each user hashes its value to one of g buckets with a hash function of the
local-hashing family (:mod:`ldp.hashing`) that it draws once, from a public
pool of ``pool_size`` functions. Per bucket it memoizes a first randomized
response over the g buckets at ε∞ (round 1, keep p₁), and every report is a
fresh second randomized response of that memo (round 2, keep p₂). A report
carries the user's pool index and the reported bucket; it supports every v
whose bucket under the user's function is the reported one.

Privacy (all three checked or derived exactly from the Fraction probabilities):

- one report: ε₁ = ln(A/B) with A = p₁p₂ + (1 − p₁)q₂ and B = q₁p₂ + (1 − q₁)q₂
  (the spec's ``epsilon``);
- any number of reports of one bucket: ε∞ = ln(p₁/q₁) (``epsilon_inf``);
- a lifetime of any values: at most g distinct memos exist, so g·ε∞.

p₂ is calibrated so that the chain over the buckets is exactly randomized
response over g at ε₁ (rounded toward more privacy), which makes the
variance OLH's at ε₁ for the same g; the default g minimizes it
(:func:`ldp.specs.frequency.optimal_hash_range` at ε₁), and g = 2 is
BiLOLOHA.

References
----------
.. [1] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs. "Frequency
   estimation of evolving data under local differential privacy". EDBT 2023.
.. [2] T. Wang, J. Blocki, N. Li, S. Jha. "Locally differentially private
   protocols for frequency estimation". USENIX Security 2017.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from ldp.chain_math import memo_epsilon_bound, rr_memo_log_ratio, smallest_linear_epsilon
from ldp.domain import DomainValue
from ldp.errors import EstimateError, SpecError
from ldp.exact import epsilon_bound_of_ratio, epsilon_of_ratio, exp_lower_bound, floor_fraction, ratio_within
from ldp.frequency_math import unbiased_frequency
from ldp.hashing import LH_SEED_SPACE, lh_bucket, lh_collision_probability
from ldp.loloha_math import (
    chain_supports,
    permanent_ratio,
    pool_collision_counts,
    pool_frequencies,
    round_two_keep,
    single_report_ratio,
)
from ldp.report_schema import BoundedInt, ReportSchema
from ldp.specs.frequency import FrequencySpec, calibrate_keep_probability, optimal_hash_range
from ldp.specs.limits import CLAIM_TOLERANCE, MAX_TABLE_COUNTERS, RR64_MAX_EPSILON, check_epsilon_limit
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_epsilon, check_int, check_probability

__all__ = [
    "DEFAULT_POOL_SIZE",
    "EPSILON_INF_FACTOR",
    "LOLOHA",
    "MAX_POOL_SIZE",
    "POOL_EXACT_LIMIT",
    "default_pool_size",
    "hash_pool",
]

#: Default number of public hash functions users draw theirs from (docs/longitudinal/loloha.md#pool).
DEFAULT_POOL_SIZE = 1 << 16
#: Largest pool: the aggregator keeps one int64 count per (pool function, bucket).
MAX_POOL_SIZE = 1 << 20
#: Largest S·d² for which the estimate conditions on the spec's own pool (:attr:`LOLOHA.pool_exact`); the
#: pool's collision table costs O(S·d²·log g/128) word operations once per spec and process.
POOL_EXACT_LIMIT = 1 << 32
#: Default ε∞ = EPSILON_INF_FACTOR × ε₁ (ε₁/ε∞ = 1/2, the middle of the paper's range).
EPSILON_INF_FACTOR = 2.0

_POOL_LABEL = b"ldp-loloha-pool-v1"
_MAX_CONDITION = 1e8  # K_S's condition number above which the pool does not separate the values
_SEED_BITS = (LH_SEED_SPACE - 1).bit_length()  # 62: one pool draw reads 8 bytes, keeps the top 62 bits


def default_pool_size(g: int) -> int:
    """min(2^16, ⌊2^24/g⌋): the default pool, so that the aggregator's table of counts stays ≤ 2^24."""
    return min(DEFAULT_POOL_SIZE, MAX_TABLE_COUNTERS // g)


def hash_pool(fingerprint: str, size: int) -> np.ndarray:
    """The public pool: ``size`` hash seeds of the local-hashing family, derived from the spec fingerprint.

    Seed j is the j-th accepted draw of uniform rejection sampling below
    |family| = (P − 1)·P from SHAKE-256 of the length-prefixed parts
    (b"ldp-loloha-pool-v1", fingerprint): each draw is the top 62 bits of 8
    bytes read big-endian, accepted when below |family| (rejected with
    probability < 2⁻²⁹), as ``secrets.randbelow`` reads bytes. So anyone
    holding the spec derives the same pool, and each seed is uniform over
    the family.

    Returns
    -------
    numpy.ndarray of uint64, shape (size,)
    """
    key = fingerprint.encode("ascii")
    material = b"".join(len(part).to_bytes(4, "big") + part for part in (_POOL_LABEL, key))
    xof = hashlib.shake_256(material)
    words = size + 16
    while True:
        raw = np.frombuffer(xof.digest(8 * words), dtype=">u8").astype(np.uint64) >> np.uint64(
            64 - _SEED_BITS
        )
        accepted = raw[raw < np.uint64(LH_SEED_SPACE)]
        if accepted.size >= size:
            out = np.ascontiguousarray(accepted[:size])
            out.setflags(write=False)
            return out
        words *= 2


@dataclasses.dataclass(frozen=True, init=False)
class LOLOHA(FrequencySpec):
    """Longitudinal local hashing: a memoized response per hash bucket, fresh noise per report.

    Parameters
    ----------
    domain : sequence of str or int
        The d ≥ 2 possible values.
    epsilon : float
        ε₁, the privacy of one report; the round-2 probability is calibrated to it.
    epsilon_inf : float, optional
        ε∞ > ε₁, the privacy of any number of reports of one hash bucket;
        default 2·ε₁ (:data:`EPSILON_INF_FACTOR`).
    g : int, optional
        Number of hash buckets, at least 2. Default: the integer minimizing
        Var*, which is OLH's at ε₁ (about e^ε₁ + 1); g = 2 is BiLOLOHA. The
        lifetime bound is g·ε∞.
    pool_size : int, optional
        S, the number of public hash functions users draw theirs from
        (:func:`hash_pool`); default min(2^16, ⌊2^24/g⌋). Decoding hashes
        every value once per pool function; a larger pool makes the pool's
        error smaller (docs/longitudinal/loloha.md#pool).
    p1, p2 : Fraction or str, optional
        Keep probabilities of round 1 and round 2 over the g buckets;
        calibrated from ``epsilon_inf`` and ``epsilon`` when omitted, else
        checked against both claims.

    References
    ----------
    .. [1] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs. EDBT 2023.

    Examples
    --------
    >>> from ldp.specs.loloha import LOLOHA
    >>> spec = LOLOHA(domain=range(10), epsilon=1.0)
    >>> spec.g, spec.epsilon_inf, spec.memo_domain_size, spec.epsilon_lifetime
    (4, 2.0, 4, 8.0)
    >>> round(spec.variance_star, 3)  # OLH's at ε₁ = 1
    3.692
    """

    mechanism: ClassVar[str] = "loloha"
    #: A spec file may leave ``pool_size`` out (or null): it follows from g (:func:`default_pool_size`).
    json_nullable: ClassVar[frozenset[str]] = frozenset({"pool_size"})
    report_kind: ClassVar[str] = "hashed"
    #: Reports carry the user's index in the public pool of hash functions and the reported bucket.
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (
            BoundedInt("seed", bound="pool_size", message="pool index {raw!r} is out of range [0, {bound})"),
            BoundedInt(
                "value", bound="g", message="bucket {raw!r} is out of range [0, {bound})", lenient=True
            ),
        )
    )
    memoized: ClassVar[bool] = True
    #: r reports of one bucket cost at most min(r·ε′, ε∞) with ε′ = :attr:`memo_report_epsilon` (by its definition).
    memo_linear: ClassVar[bool] = True
    #: The largest ε∞/ε₁ for which :attr:`memo_report_epsilon` checks every r exactly (as L-GRR's).
    memo_search_limit: ClassVar[int] = 400
    exact_privacy_curve: ClassVar[bool] = False
    max_epsilon: ClassVar[float] = RR64_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its smallest probabilities, about 1/(e^epsilon + g - 1), are multiples of 2^-64 and could not match "
        "e^epsilon to 1e-9 above it"
    )

    g: int
    pool_size: int
    p1: Fraction
    p2: Fraction
    #: A field here (the base class's property is shadowed by this class attribute; every instance sets it).
    epsilon_inf: float = math.inf

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        epsilon_inf: float | None = None,
        g: int | None = None,
        pool_size: int | None = None,
        p1: ProbabilityInput | None = None,
        p2: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        one = self.epsilon
        inf = check_epsilon(EPSILON_INF_FACTOR * one if epsilon_inf is None else epsilon_inf, "epsilon_inf")
        check_epsilon_limit(
            inf, RR64_MAX_EPSILON, self.mechanism, self.max_epsilon_reason, name="epsilon_inf"
        )
        if not one < inf:
            raise SpecError(
                f"loloha needs epsilon (one report) < epsilon_inf (the memoized round), got {one!r} and {inf!r}"
            )
        object.__setattr__(self, "epsilon_inf", inf)
        buckets = check_int(
            optimal_hash_range(one) if g is None else g, "g", minimum=2, maximum=MAX_TABLE_COUNTERS
        )
        object.__setattr__(self, "g", buckets)
        size = default_pool_size(buckets) if pool_size is None else pool_size
        size = check_int(size, "pool_size", minimum=1, maximum=MAX_POOL_SIZE)
        if size * buckets > MAX_TABLE_COUNTERS:
            raise SpecError(
                f"loloha: pool_size x g = {size:,} x {buckets:,} is above the limit of {MAX_TABLE_COUNTERS:,} "
                "(the aggregator keeps one int64 count per pool function and bucket)"
            )
        object.__setattr__(self, "pool_size", size)
        if (p1 is None) != (p2 is None):
            raise SpecError("loloha: give both p1 and p2, or neither (calibrated from the epsilons)")
        if p1 is None:
            keep1 = calibrate_keep_probability(inf, buckets, self.mechanism)
            composite = calibrate_keep_probability(one, buckets, self.mechanism)
            keep2 = floor_fraction(round_two_keep(keep1, composite, buckets))
        else:
            keep1 = check_probability(p1, "p1", high_open=True)
            keep2 = check_probability(p2, "p2")
        for name, keep in (("p1", keep1), ("p2", keep2)):
            if keep <= Fraction(1, buckets):
                raise SpecError(f"loloha: {name} must exceed 1/g = 1/{buckets}, got {keep}")
        object.__setattr__(self, "p1", keep1)
        object.__setattr__(self, "p2", keep2)
        self._check_claim()
        self._check_permanent_claim()

    def _check_permanent_claim(self) -> None:
        """ε∞ against p₁/q₁ both ways, as :meth:`_check_claim` checks ε against A/B."""
        ratio = self.permanent_ratio
        if not ratio_within(ratio, self.epsilon_inf):
            raise SpecError(
                f"loloha claims epsilon_inf={self.epsilon_inf!r} but its exact probabilities give "
                f"epsilon_inf={epsilon_of_ratio(ratio):.17g}; the claim must be at least what the probabilities give"
            )
        if exp_lower_bound(self.epsilon_inf) > ratio * (1 + Fraction(CLAIM_TOLERANCE)):
            raise SpecError(
                f"loloha states epsilon_inf={self.epsilon_inf!r} but its exact probabilities give "
                f"epsilon_inf={epsilon_of_ratio(ratio):.17g}; the stated epsilon_inf must match them"
            )

    # -- probabilities -----------------------------------------------------
    @property
    def q1(self) -> Fraction:
        """Round 1: probability of memoizing one particular other bucket."""
        return (1 - self.p1) / (self.g - 1)

    @property
    def q2(self) -> Fraction:
        """Round 2: probability of reporting one particular other bucket than the memo."""
        return (1 - self.p2) / (self.g - 1)

    @property
    def chain(self) -> tuple[Fraction, Fraction]:
        """(A, B): P[reported bucket = the value's bucket], P[= one particular other bucket]."""
        return chain_supports(self.p1, self.p2, self.g)

    @property
    def collision_probability(self) -> Fraction:
        """c = P[H(x) = H(x′)] for x ≠ x′ over a function drawn from the family."""
        return lh_collision_probability(self.g)

    @property
    def exact_p_star(self) -> Fraction:
        """p* = A."""
        return self.chain[0]

    @property
    def exact_q_star(self) -> Fraction:
        """q* = c·A + (1 − c)·B."""
        a, b = self.chain
        c = self.collision_probability
        return c * a + (1 - c) * b

    # -- privacy -------------------------------------------------------------
    @property
    def privacy_ratio(self) -> Fraction:
        """One report: A/B (two values in different buckets of the user's function; else 1)."""
        return single_report_ratio(self.p1, self.p2, self.g)

    @property
    def single_report_ratio(self) -> Fraction:
        return self.privacy_ratio

    @property
    def permanent_ratio(self) -> Fraction:
        """Any number of reports of one bucket: p₁/q₁ (they are post-processing of its memo)."""
        return permanent_ratio(self.p1, self.g)

    @property
    def epsilon_one(self) -> float:
        """ε₁, the privacy of one report (the spec's ``epsilon``)."""
        return self.epsilon

    @property
    def epsilon_lifetime(self) -> float:
        """g·ε∞: any reports of any values (at most g memos exist), rounded up to a double."""
        exact = self.g * Fraction(self.epsilon_inf)
        out = float(exact)
        return math.nextafter(out, math.inf) if out < exact else out

    def memo_epsilon(self, reports: int) -> float:
        """The exact pure ε of ``reports`` reports of one bucket's memo, never above ε∞.

        Given its pool function (public, drawn independently of the value),
        a client's reports of x and of x′ are identically distributed when the
        function puts them in one bucket, and otherwise are r reports of
        L-GRR over the g buckets with inputs H(x) ≠ H(x′): the worst ratio is
        L-GRR's (:func:`ldp.chain_math.rr_memo_log_ratio` with k = g), exact
        for a function separating the two values. Rounded up as the chains'
        (:func:`ldp.chain_math.memo_epsilon_bound`).
        """
        r = int(reports)
        if r < 1:
            raise SpecError(f"reports must be at least 1, got {reports!r}")
        if r == 1:
            return self.epsilon
        return memo_epsilon_bound(
            rr_memo_log_ratio(self.p1, self.q1, self.p2, self.q2, self.g, r), self.epsilon_inf
        )

    @cached_property
    def memo_report_epsilon(self) -> float:
        """The per-report ε the ledger charges a bucket: the smallest ε′ ≥ ε₁ with ε(r reports) ≤ min(r·ε′, ε∞)
        for every r (:func:`ldp.chain_math.smallest_linear_epsilon`, as L-GRR's over the g buckets)."""
        return smallest_linear_epsilon(
            self.memo_epsilon,
            self.epsilon,
            self.epsilon_inf,
            self.fresh_round_epsilon,
            self.memo_search_limit,
        )

    def fresh_round_epsilon(self) -> float:
        """ln(p₂/q₂): any two memos give one report probabilities within that ratio."""
        return epsilon_bound_of_ratio(self.p2 / self.q2)

    @property
    def memo_domain_size(self) -> int:
        """How many distinct memo keys a client can use: g (one per bucket)."""
        return self.g

    def privacy_summary(self) -> dict[str, float]:
        return {
            "epsilon": self.epsilon,
            "epsilon_achieved": self.epsilon_achieved,
            "epsilon_one": self.epsilon_one,
            "epsilon_inf": self.epsilon_inf,
            "epsilon_inf_achieved": epsilon_bound_of_ratio(self.permanent_ratio),
            "epsilon_lifetime": self.epsilon_lifetime,
        }

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """One report of two values the user's function separates: randomized response over g with keep A.

        The pool index carries nothing about the value; a function that
        collides the two values makes the report uninformative, so treating
        them as always separated is a sound bound (exact for the worst pool
        function).
        """
        a, b = self.chain
        rest = [(self.g - 2) * b] if self.g > 2 else []
        return (piece([a, b, *rest], [b, a, *rest]),)

    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """One report: :meth:`report_pieces`. More (or ``math.inf``): the round-1 memo of one bucket.

        r ≥ 2 reports of one value are post-processing of its bucket's memo,
        so the memo's pair of distributions bounds them (the bound, not the
        exact curve: ``exact_privacy_curve`` is False).
        """
        if reports == 1:
            return self.report_pieces()
        p1, q1, g = self.p1, self.q1, self.g
        rest = [(g - 2) * q1] if g > 2 else []
        return (piece([p1, q1, *rest], [q1, p1, *rest]),)

    # -- hashing ---------------------------------------------------------------
    @cached_property
    def pool(self) -> np.ndarray:
        """The public hash seeds (:func:`hash_pool` of the fingerprint), read-only uint64."""
        return hash_pool(self.fingerprint, self.pool_size)

    # -- estimation --------------------------------------------------------------
    @property
    def pool_exact(self) -> bool:
        """True when the estimate inverts the pool's own collision fractions (S·d² ≤ :data:`POOL_EXACT_LIMIT`).

        Otherwise the estimate is the family's, (C/n − q*)/(p* − q*), whose
        error from the finite pool is documented (docs/longitudinal/loloha.md#pool).
        """
        return self.pool_size * self.domain_size**2 <= POOL_EXACT_LIMIT

    @cached_property
    def pool_collisions(self) -> np.ndarray:
        """N_S(v, x): how many of the pool's functions put v and x in one bucket (read-only int64, (d, d)).

        :func:`ldp.loloha_math.pool_collision_counts`; computed once per spec.
        """
        out = pool_collision_counts(self.pool, self.g, self.domain_size)
        out.setflags(write=False)
        return out

    @cached_property
    def _pool_inverse(self) -> np.ndarray:
        """M⁻¹ with M = K_S − c·J = (1 − c)·I + Δ (K_S = N_S/S; Δ the pool's deviations from c off the
        diagonal): symmetric, and close to (1 − c)·I when the pool separates the values."""
        c = float(self.collision_probability)
        matrix = self.pool_collisions / float(self.pool_size) - c
        if np.linalg.cond(matrix) > _MAX_CONDITION:
            raise EstimateError(
                f"loloha: the pool's {self.pool_size:,} functions cannot tell the {self.domain_size:,} values "
                "apart (their collision matrix is singular); use a spec with a larger pool_size"
            )
        inverse = np.linalg.inv(matrix)
        inverse = (inverse + inverse.T) / 2
        inverse.setflags(write=False)
        return inverse

    def unbiased_frequencies(self, support_counts: Any, n: Any) -> np.ndarray:
        """f̂ from support counts C_v (shape (..., d)) of n reports, unbiased for the spec's own pool.

        With :attr:`pool_exact`, M⁻¹((C/n − B)/(A − B) − c), M = N_S/S − c·J
        (:func:`ldp.loloha_math.pool_frequencies`): a user holding x supports
        v with probability B + (A − B)·N_S(v, x)/S, so this is exactly
        unbiased given the pool (and the family's estimate when the pool's
        collision fractions are all c). Otherwise the family's (C/n − q*)/(p* − q*),
        unbiased over the draw of the pool only.
        """
        if not self.pool_exact:
            counts = np.asarray(support_counts, dtype=float)
            reports = np.asarray(n, dtype=float)
            return np.asarray(
                unbiased_frequency(
                    counts, reports[..., None] if reports.ndim else reports, self.p_star, self.q_star
                )
            )
        a, b = self.chain
        c = float(self.collision_probability)
        return pool_frequencies(support_counts, n, float(a), float(b), c, self._pool_inverse)

    def bucket(self, value: Any, seed_index: int) -> int:
        """The bucket of ``value`` under pool function ``seed_index``."""
        return lh_bucket(int(self.pool[seed_index]), self.index_of(value), self.g)
