"""Apple's Count-Mean Sketch (CMS) and Hadamard Count-Mean Sketch (HCMS) (docs/mechanisms.md#cms).

Both sketch a value with k public hash functions h_j: value → [m]
(:meth:`SketchSpec.positions`: MurmurHash3 x64-128 of the value's bytes with
seed ``salt + j``, the low 64 bits mod m). A client picks one row j
uniformly and reports

CMS
    (j, m bits): the one-hot vector of h_j(x), each bit kept with
    probability p ≈ e^{ε/2}/(1 + e^{ε/2}) and flipped otherwise (q = 1 − p);
HCMS
    (j, l, one bit): l uniform in [m], the bit of b·H_m[l, h_j(x)] with
    b = +1 with probability p ≈ e^ε/(1 + e^ε), H_m the Sylvester Hadamard
    matrix (m a power of 2).

A report *supports* a value x when its bit agrees with x's own position
(CMS: bit h_j(x) is 1; HCMS: the bit equals H_m[l, h_j(x)]). Over a hash
family drawn at random once, P[support | x] = p* = p and P[support | x′ ≠ x]
= q*, with q* = q + (p − q)/m (CMS) and p/m + (1 − 1/m)/2 (HCMS), so the
pure-oracle estimator (C_x/n − q*)/(p* − q*) is Apple's estimator
(m/(m−1))((1/k)Σ_j M[j, h_j(x)] − n/m) exactly. Its variance has a term
from the shared hash functions that depends on the data (Σ n_{x′}²):
:meth:`SketchSpec.count_variance`.

References
----------
.. [1] Apple Differential Privacy Team. "Learning with Privacy at Scale".
   Apple Machine Learning Journal 1(8), 2017.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import mmh3
import numpy as np

from ldp.domain import DomainValue
from ldp.errors import SpecError
from ldp.hashing import murmur3_x64_128_batch, value_bytes
from ldp.report_schema import BitVector, BoundedInt, ReportSchema
from ldp.specs.frequency import SUE, FrequencySpec, calibrate_keep_probability
from ldp.specs.limits import MAX_TABLE_COUNTERS, SUE_MAX_EPSILON
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_int, check_probability

__all__ = ["CMS", "DEFAULT_SKETCH_K", "DEFAULT_SKETCH_M", "HCMS", "SketchSpec"]

#: Default number of hash functions (sketch rows), see docs/mechanisms.md#cms.
DEFAULT_SKETCH_K = 1024
#: Default sketch width (a power of 2, as HCMS needs).
DEFAULT_SKETCH_M = 1024
#: Largest k·d: the decoder evaluates every hash function on every domain value.
MAX_SKETCH_HASHES = 1 << 26
#: Largest domain (the estimates' values) of a sketch spec: k·d ≤ MAX_SKETCH_HASHES at the default k.
MAX_SKETCH_DOMAIN = MAX_SKETCH_HASHES // DEFAULT_SKETCH_K
_SEED_SPACE = 1 << 32


@dataclasses.dataclass(frozen=True, init=False)
class SketchSpec(FrequencySpec):
    """Common part of CMS and HCMS: k hash functions onto [m], one row per report.

    Parameters
    ----------
    domain : sequence of str or int
        The values the estimates are given for (the sketch itself needs no domain).
    epsilon : float
        Privacy claim; the probability is calibrated to it.
    k : int
        Number of hash functions (rows), default 1024.
    m : int
        Sketch width, default 1024 (HCMS: a power of 2).
    salt : int
        Offset of the hash seeds: row j hashes with MurmurHash3 seed ``salt + j``.
    p : Fraction or str, optional
        Keep probability; derived from ``epsilon`` when omitted.
    """

    report_kind: ClassVar[str] = "sketch"
    candidates_mode: ClassVar[str | None] = "estimate"
    max_domain_size: ClassVar[int] = MAX_SKETCH_DOMAIN
    max_domain_reason: ClassVar[str] = (
        "the decoder hashes every domain value in each of the k rows, k·d at most 2^26"
    )

    k: int
    m: int
    salt: int
    p: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        k: int = DEFAULT_SKETCH_K,
        m: int = DEFAULT_SKETCH_M,
        salt: int = 0,
        p: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        rows = check_int(k, "k", minimum=1, maximum=1 << 16)
        width = check_int(m, "m", minimum=2, maximum=1 << 20)
        if rows * width > MAX_TABLE_COUNTERS:
            raise SpecError(
                f"{self.mechanism}: a sketch of k={rows} x m={width} is above the limit of "
                f"{MAX_TABLE_COUNTERS:,} counters (the aggregator keeps int64 counts per cell)"
            )
        if rows * self.domain_size > MAX_SKETCH_HASHES:
            raise SpecError(
                f"{self.mechanism}: k={rows} hash functions over a domain of {self.domain_size:,} values is above "
                f"the limit of {MAX_SKETCH_HASHES:,} hash evaluations (the decoder hashes every value in every row)"
            )
        offset = check_int(salt, "salt", minimum=0, maximum=_SEED_SPACE - rows)
        object.__setattr__(self, "k", rows)
        object.__setattr__(self, "m", width)
        object.__setattr__(self, "salt", offset)
        self._check_width()
        if p is None:
            keep = self._calibrate(self.epsilon)
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, 2):
                raise SpecError(f"{self.mechanism}: p must exceed 1/2, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()

    def _check_width(self) -> None:
        """Mechanism-specific condition on m (hook)."""

    def _calibrate(self, epsilon: float) -> Fraction:
        raise NotImplementedError

    @property
    def q(self) -> Fraction:
        """Probability of the other bit value: 1 − p."""
        return 1 - self.p

    @property
    def c(self) -> Fraction:
        """c_ε = 1/(p − q), the debiasing factor of one report."""
        return 1 / (self.p - self.q)

    # -- hashing ---------------------------------------------------------
    def position(self, value: Any, row: int) -> int:
        """h_row(value) in [0, m)."""
        seed = self.salt + int(row)
        return (mmh3.hash128(value_bytes(value), seed=seed, signed=False) & 0xFFFFFFFFFFFFFFFF) % self.m

    def positions(self, values: Iterable[Any], rows: Iterable[int] | None = None) -> np.ndarray:
        """h_j(v) of every value in every row (all k rows by default), int64 of shape (len(values), len(rows))."""
        data = [value_bytes(v) for v in values]
        seeds = [self.salt + int(j) for j in (range(self.k) if rows is None else rows)]
        if not data or not seeds:
            return np.zeros((len(data), len(seeds)), dtype=np.int64)
        low, _ = murmur3_x64_128_batch(data, seeds)
        return (low % np.uint64(self.m)).astype(np.int64)

    @cached_property
    def domain_positions(self) -> np.ndarray:
        """h_j(v) for every domain value v and row j, int64 (d, k), read-only (computed once)."""
        out = np.empty((self.domain_size, self.k), dtype=np.int64)
        step = max(1, (1 << 20) // self.k)
        for start in range(0, self.domain_size, step):
            out[start : start + step] = self.positions(self.domain[start : start + step])
        out.setflags(write=False)
        return out

    # -- accuracy --------------------------------------------------------
    @property
    def exact_p_star(self) -> Fraction:
        return self.p

    def count_variance(self, true_count: Any, n: int, others_squared: Any) -> Any:
        """Var of the count estimate of x over the coins and a hash family drawn at random once.

        Parameters
        ----------
        true_count : array_like
            n_x, the users holding x.
        n : int
            Number of reports.
        others_squared : array_like
            Σ_{x′≠x} n_{x′}², the collision term of the shared hash functions.
        """
        raise NotImplementedError

    def variance(self, frequency: Any = 0.0, n: int = 1) -> Any:
        """Var[f̂_v] on the frequency scale (docs/mechanisms.md#cms).

        ``frequency`` of the whole domain (an array of length d) gives each
        value's exact variance, the shared-hash term Σ_{x′≠x} n_{x′}² from the
        other values; any other shape leaves that term out (a population
        spread over many values, where it vanishes).
        """
        f = np.asarray(frequency, dtype=float)
        counts = n * f
        if f.shape == (self.domain_size,):
            others = float(np.sum(counts**2)) - counts**2
        else:
            others = np.zeros_like(counts)
        return self.count_variance(counts, n, others) / float(n) ** 2

    @property
    def variance_star(self) -> float:
        """n·Var at f → 0 with no heavy value (the shared-hash term Σ n_{x′}² left out)."""
        return float(self.count_variance(0.0, 1, 0.0))

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True, init=False)
class CMS(SketchSpec):
    """Apple's Count-Mean Sketch: row j and m bits, each flipped with probability 1/(1 + e^{ε/2}).

    The probability p is SUE's (calibrated so that (p/(1 − p))² ≤ e^ε
    exactly): two values differ in two bits of the vector of row j.
    See docs/mechanisms.md#cms.

    References
    ----------
    .. [1] Apple Differential Privacy Team. "Learning with Privacy at Scale".
       Apple Machine Learning Journal 1(8), 2017.

    Examples
    --------
    >>> from ldp import CMS
    >>> spec = CMS(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('cms', 1034, 3.926)
    """

    mechanism: ClassVar[str] = "cms"
    report_size_rank: ClassVar[int] = 7
    max_epsilon: ClassVar[float] = SUE_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = SUE.max_epsilon_reason
    #: Reports carry the row j and the m perturbed bits of the sketch row.
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (
            BoundedInt("row", bound="k", message="row {raw!r} is out of range [0, {bound})"),
            BitVector("bits", length="m"),
        )
    )

    def _calibrate(self, epsilon: float) -> Fraction:
        return SUE(domain=(0, 1), epsilon=epsilon).p

    @property
    def privacy_ratio(self) -> Fraction:
        return (self.p / self.q) ** 2

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """Given the row, x and x′ (no collision) differ in two bits: T(Bern(p), Bern(q)) ⊗ T(Bern(q), Bern(p))."""
        set_bit = piece([self.q, self.p], [self.p, self.q])
        return (set_bit, set_bit.swapped())

    @property
    def exact_q_star(self) -> Fraction:
        return self.q + (self.p - self.q) / self.m

    def count_variance(self, true_count: Any, n: int, others_squared: Any) -> Any:
        """(m/(m−1))²·n·c²pq + [(1 − 1/k)(n − n_x) + Σ_{x′≠x} n_{x′}²/k]/(m − 1)."""
        k, m = self.k, self.m
        noise = float(self.c**2 * self.p * self.q)
        nx = np.asarray(true_count, dtype=float)
        others = np.asarray(others_squared, dtype=float)
        return (m / (m - 1)) ** 2 * n * noise + ((1 - 1 / k) * (n - nx) + others / k) / (m - 1)


@dataclasses.dataclass(frozen=True, init=False)
class HCMS(SketchSpec):
    """Apple's Hadamard Count-Mean Sketch: row j, column l and one bit of b·H_m[l, h_j(x)].

    b = −1 with probability 1/(1 + e^ε); m must be a power of 2.
    See docs/mechanisms.md#cms.

    References
    ----------
    .. [1] Apple Differential Privacy Team. "Learning with Privacy at Scale".
       Apple Machine Learning Journal 1(8), 2017.

    Examples
    --------
    >>> from ldp import HCMS
    >>> spec = HCMS(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('hcms', 21, 4.692)
    """

    mechanism: ClassVar[str] = "hcms"
    report_size_rank: ClassVar[int] = 3  # 1 + log2(k·m) bits: after OLH's seed and bucket by registration
    #: Reports carry the row j, the Hadamard column l and the one reported bit (1 for +1).
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (
            BoundedInt("row", bound="k", message="row {raw!r} is out of range [0, {bound})"),
            BoundedInt("column", bound="m", message="column {raw!r} is out of range [0, {bound})"),
            BoundedInt("bit", bound=2, message="bit {raw!r} must be 0 or 1"),
        )
    )

    def _check_width(self) -> None:
        if self.m & (self.m - 1):
            raise SpecError(f"hcms needs m a power of 2 (the Hadamard matrix H_m), got m={self.m}")

    def _calibrate(self, epsilon: float) -> Fraction:
        return calibrate_keep_probability(epsilon, 2, self.mechanism)

    @property
    def privacy_ratio(self) -> Fraction:
        return self.p / self.q

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """Given the row, x and x′ (no collision) give opposite signs on half the columns: RR there, nothing elsewhere."""
        half = Fraction(1, 2)
        return (piece([half * self.p, half * self.q, half], [half * self.q, half * self.p, half]),)

    @property
    def exact_q_star(self) -> Fraction:
        return self.p / self.m + (1 - Fraction(1, self.m)) / 2

    def count_variance(self, true_count: Any, n: int, others_squared: Any) -> Any:
        """(m/(m−1))²·[n c² − n_x − (n − n_x)((1−1/m)/(km) + 1/m²) + (1−1/m)/(km)·Σ_{x′≠x} n_{x′}²]."""
        k, m = self.k, self.m
        c2 = float(self.c**2)
        nx = np.asarray(true_count, dtype=float)
        others = np.asarray(others_squared, dtype=float)
        shared = (1 - 1 / m) / (k * m)
        return (m / (m - 1)) ** 2 * (n * c2 - nx - (n - nx) * (shared + 1 / m**2) + shared * others)
