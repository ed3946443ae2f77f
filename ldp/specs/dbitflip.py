"""dBitFlip: histograms of counters over b buckets, d memoized bits per user (docs/longitudinal/dbitflip.md).

Each user samples d distinct buckets j₁ < … < j_d of the b buckets
uniformly, once (from its permanent secret, so the sample survives
restarts), and for each sampled bucket j sends one bit: 1 with probability
p when its value lies in bucket j, with probability q = 1 − p otherwise.
Two values change at most m = min(d, 2) of the sampled bits (the ones of
their two buckets), so one report is ε-LDP when (p/q)^m ≤ e^ε: the paper's
p = e^{ε/2}/(e^{ε/2} + 1) for d ≥ 2, and p = e^ε/(e^ε + 1) for d = 1 (one
bit cannot differ twice).

Permanent memoization: the d bits are a keyed-PRF function of the client's
secret and of the *memo key*, the d-bit pattern of which sampled buckets
hold the value (all zero, or one bit set): at most min(d + 1, b) patterns,
so a client's reports of any values over any time are
min(d + 1, b)·ε∞-DP, with ε∞ = m·ln(p/q). The optional output perturbation
flips each memoized bit with probability γ afresh in every report (from the
OS CSPRNG): the sent bit is 1 with p′ = γ + (1 − 2γ)p or q′ = 1 − p′, one
report is ε₁-DP with e^{ε₁} = (p′/q′)^m < e^{ε∞}, and ``epsilon`` is ε₁.

The estimator of the paper,

    ĥ(v) = (b/(n d)) · Σ_{users who sampled v} (s_v − q′)/(p′ − q′),

is unbiased, and with n users of whom n·f_v hold v its variance is exactly

    n·Var = (b/d)·[(1 − f_v) q′(1 − q′) + f_v (p′(1 − q′)² + (1 − p′) q′²)]/(p′ − q′)² − f_v,

which for p′ + q′ = 1 is (b/d)·p′q′/(p′ − q′)² + f_v (b/d − 1); with d = b
it is SUE's. A report is one bit vector of b + d bits (``bits``): the first
b mark the sampled buckets (exactly d set), the last d are the sent bits, in
the order of the sampled buckets.

References
----------
.. [1] B. Ding, J. Kulkarni, S. Yekhanin. "Collecting telemetry data
   privately". NeurIPS 2017.
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014
   (permanent memoization).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ldp.domain import DomainValue
from ldp.errors import AccountingError, ReportError, SpecError
from ldp.exact import epsilon_bound_of_ratio, exp_lower_bound, floor_fraction
from ldp.report_schema import BitVector, ReportSchema
from ldp.specs.frequency import FrequencySpec
from ldp.specs.limits import MAX_UNARY_DOMAIN_SIZE, RR64_MAX_EPSILON
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_int, check_probability

__all__ = ["DBitFlip", "DBitFlipBits", "dbitflip_variance", "sampled_weights"]

_STEP = Fraction(1, 1 << 64)


def dbitflip_variance(frequency: Any, n: int, buckets: int, d: int, p: float, q: float) -> Any:
    """Var[ĥ(v)] of dBitFlip's estimator on the frequency scale (fixed data), elementwise in ``frequency``.

    n·Var = (b/d)·[(1 − f) q(1 − q) + f (p(1 − q)² + (1 − p) q²)]/(p − q)² − f, with p and q the
    probabilities that a sampled bit is sent as 1 when the value is in its bucket, and when it is not.
    """
    f = np.asarray(frequency, dtype=float)
    scale = buckets / d
    holder = p * (1 - q) ** 2 + (1 - p) * q**2
    other = q * (1 - q)
    return (scale * ((1 - f) * other + f * holder) / (p - q) ** 2 - f) / n


def sampled_weights(packed: np.ndarray, buckets: int) -> np.ndarray:
    """How many of the first ``buckets`` bits are set in each row of a (n, bytes) uint8 array (int64)."""
    rows = np.ascontiguousarray(packed, dtype=np.uint8)
    whole, spare = divmod(buckets, 8)
    weights = np.bitwise_count(rows[:, :whole]).sum(axis=1, dtype=np.int64)
    if spare:
        weights += np.bitwise_count(rows[:, whole] & np.uint8((0xFF << (8 - spare)) & 0xFF)).astype(np.int64)
    return weights


@dataclasses.dataclass(frozen=True)
class DBitFlipBits(BitVector):
    """dBitFlip's b + d report bits: the sampled buckets (the first b, exactly d set), then the d sent bits.

    A vector whose first b bits do not hold exactly d ones is refused (one
    report) or marked not ok (a column, whose rows are then re-checked and
    rejected one by one).
    """

    def check(self, spec: Any, raw: Any) -> bytes:
        bits = super().check(spec, raw)
        b = spec.domain_size
        ones = (int.from_bytes(bits, "big") >> (8 * len(bits) - b)).bit_count()
        if ones != spec.d:
            raise ReportError(
                f"'{self.name}' samples {ones} buckets (of its first {b} bits), expected exactly d = {spec.d}"
            )
        return bits

    def rows_ok(self, spec: Any, packed: np.ndarray) -> np.ndarray:
        return sampled_weights(packed, spec.domain_size) == spec.d


@dataclasses.dataclass(frozen=True, init=False)
class DBitFlip(FrequencySpec):
    """dBitFlip with permanent memoization (and optional output perturbation γ).

    Parameters
    ----------
    domain : sequence of str or int
        The b ≥ 2 buckets (their labels). Numeric counters are bucketized by
        the caller (docs/longitudinal/dbitflip.md#buckets).
    epsilon : float
        ε₁, the claim of one report; the probabilities are calibrated to it.
    d : int
        Buckets each user samples, in [1, b]; default 1 (the smallest
        lifetime bound, 2·ε∞). d = b and γ = 0 is SUE with memoization.
    gamma : Fraction, str or float
        Output perturbation: each memoized bit is flipped with probability γ
        in [0, 1/2) afresh in every report; default 0 (reports of one memo
        key are then identical). Decimals are read exactly.
    p : Fraction or str, optional
        P[memoized bit = 1 | value in its bucket], in (1/2, 1); derived from
        ``epsilon``, ``d`` and ``gamma`` when omitted.

    References
    ----------
    .. [1] B. Ding, J. Kulkarni, S. Yekhanin. NeurIPS 2017.

    Examples
    --------
    >>> from ldp.specs.dbitflip import DBitFlip
    >>> spec = DBitFlip(domain=("0-9", "10-99", "100+"), epsilon=1.0, d=2)
    >>> spec.mechanism, spec.memo_domain_size, spec.epsilon_inf <= spec.epsilon_one  # γ = 0: ε∞ is ε₁'s ratio
    ('dbitflip', 3, True)
    """

    mechanism: ClassVar[str] = "dbitflip"
    report_size_rank: ClassVar[int] = 8  # b + d bits
    report_kind: ClassVar[str] = "bits"
    #: Reports carry b + d bits: the sampled buckets (exactly d of the first b set), then the d sent bits.
    report_schema: ClassVar[ReportSchema] = ReportSchema((DBitFlipBits("bits", length="report_width"),))
    memoized: ClassVar[bool] = True
    #: r reports of one memo key are (r·ε₁)-DP: per sampled bit a memoized bit and r symmetric flips,
    #: RAPPOR's structure (a permanent bit and its instantaneous responses), whose log-likelihood ratio
    #: is subadditive in r (docs/longitudinal/dbitflip.md#privacy); the two bits add.
    memo_linear: ClassVar[bool] = True
    #: The pieces bound the curve by the worst sampled buckets (both values' buckets sampled).
    exact_privacy_curve: ClassVar[bool] = False
    max_domain_size: ClassVar[int] = MAX_UNARY_DOMAIN_SIZE
    max_domain_reason: ClassVar[str] = "a report holds one bit per bucket (the sampled ones)"
    max_epsilon: ClassVar[float] = RR64_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "with d = 1, 1 - p is about 1/(e^epsilon + 1), a multiple of 2^-64 that could not match e^epsilon "
        "to 1e-9 above it"
    )

    d: int
    gamma: Fraction
    p: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        d: int = 1,
        gamma: ProbabilityInput = 0,
        p: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        object.__setattr__(self, "d", check_int(d, "d", minimum=1, maximum=self.domain_size))
        flip = check_probability(gamma, "gamma")
        if flip >= Fraction(1, 2):
            raise SpecError(f"dbitflip: gamma must be in [0, 1/2), got {flip}")
        object.__setattr__(self, "gamma", flip)
        if p is None:
            keep = self._calibrate()
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, 2):
                raise SpecError(f"dbitflip: p must exceed 1/2, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()

    def _calibrate(self) -> Fraction:
        """The largest p on the 2^-64 grid with (p′/q′)^m ≤ e^ε, p′ = γ + (1 − 2γ)p (rounded toward privacy)."""
        bound = exp_lower_bound(self.epsilon)
        m, gamma = self.differing_bits, self.gamma
        # p′ with p′/(1 − p′) at most (a hair below, for m = 2) the certified e^{ε/m}: SUE's and GRR's targets
        per_bit = bound if m == 1 else Fraction(math.sqrt(float(bound)) * (1 - 2.0**-50))
        sent = per_bit / (per_bit + 1)
        if sent >= 1 - gamma:
            top = m * math.log((1 - gamma) / gamma)
            raise SpecError(
                f"dbitflip: gamma={float(gamma):g} caps one report's epsilon below {top:.6g} "
                f"(a memoized bit would have to be certain); lower gamma or epsilon={self.epsilon!r}"
            )
        keep = floor_fraction((sent - gamma) / (1 - 2 * gamma))
        while keep > Fraction(1, 2) and self._single_ratio(keep) > bound:  # the float e^{ε/m} was a hair high
            keep -= _STEP
        if keep <= Fraction(1, 2):
            raise SpecError(
                f"dbitflip: epsilon={self.epsilon!r} is too small to represent with 64-bit probabilities"
            )
        return keep

    # -- probabilities ---------------------------------------------------
    @property
    def q(self) -> Fraction:
        """P[memoized bit = 1 | value not in its bucket] = 1 − p."""
        return 1 - self.p

    @property
    def sent_one(self) -> Fraction:
        """p′ = γ + (1 − 2γ)p: P[sent bit = 1 | value in its bucket]."""
        return self.gamma + (1 - 2 * self.gamma) * self.p

    @property
    def sent_zero(self) -> Fraction:
        """q′ = γ + (1 − 2γ)q = 1 − p′: P[sent bit = 1 | value not in its bucket]."""
        return self.gamma + (1 - 2 * self.gamma) * self.q

    @property
    def report_width(self) -> int:
        """b + d: the bits of a report (the sampled buckets, then the sent bits)."""
        return self.domain_size + self.d

    @property
    def differing_bits(self) -> int:
        """m = min(d, 2): how many sent bits two values can change."""
        return min(self.d, 2)

    # -- privacy ---------------------------------------------------------
    def _single_ratio(self, keep: Fraction) -> Fraction:
        sent = self.gamma + (1 - 2 * self.gamma) * keep
        return (sent / (1 - sent)) ** self.differing_bits

    @property
    def privacy_ratio(self) -> Fraction:
        """(p′/q′)^m: one report, the worst sampled buckets (both values' buckets sampled when d ≥ 2)."""
        return self._single_ratio(self.p)

    @property
    def permanent_ratio(self) -> Fraction:
        """(p/q)^m: the memoized bits, hence any number of reports of one memo key."""
        return (self.p / self.q) ** self.differing_bits

    @property
    def epsilon_one(self) -> float:
        """ε₁, the claim of one report (the spec's ``epsilon``)."""
        return float(self.epsilon)

    @property
    def epsilon_inf(self) -> float:
        """ε∞ = m·ln(p/q), rounded up (certified): any number of reports of one memo key (≤ ε₁ when γ = 0)."""
        return epsilon_bound_of_ratio(self.permanent_ratio)

    @property
    def memo_domain_size(self) -> int:
        """How many memo keys a client can use: the d + 1 patterns (none or one sampled bucket holds
        the value), or b when d = b (some sampled bucket always holds it)."""
        return min(self.d + 1, self.domain_size)

    @property
    def lifetime_epsilon(self) -> float:
        """min(d + 1, b)·ε∞: a client's bound over any values and any number of reports."""
        return self.memo_domain_size * self.epsilon_inf

    def privacy_summary(self) -> dict[str, float]:
        return {
            "epsilon": self.epsilon,
            "epsilon_achieved": self.epsilon_achieved,
            "epsilon_one": self.epsilon_one,
            "epsilon_inf": self.epsilon_inf,
            "lifetime_epsilon": self.lifetime_epsilon,
        }

    def bit_pair(self, reports: float = 1) -> PrivacyPiece:
        """One sampled bit whose bucket holds x and not x′, over ``reports`` reports of one memo key.

        The memoized bit is 1 with p (x) or q (x′); each report sends it
        flipped with probability γ, so the count of ones over r reports is
        p·Bin(r, 1 − γ) + q·Bin(r, γ) under x (p and q swapped under x′);
        with γ = 0 the reports repeat the memoized bit; r = ``math.inf`` is
        the memoized bit itself.
        """
        p, q, gamma = self.p, self.q, self.gamma
        if math.isinf(reports) or gamma == 0:
            return piece([q, p], [p, q])
        r = int(reports)
        if r == 1:
            return piece([1 - self.sent_one, self.sent_one], [1 - self.sent_zero, self.sent_zero])
        from ldp.privacy._numeric import binom_logpmf, log_fraction

        kept = binom_logpmf(r, log_fraction(1 - gamma), log_fraction(gamma))  # memoized bit 1
        flipped = binom_logpmf(r, log_fraction(gamma), log_fraction(1 - gamma))  # memoized bit 0
        lp, lq = log_fraction(p), log_fraction(q)
        return PrivacyPiece(np.logaddexp(lp + kept, lq + flipped), np.logaddexp(lq + kept, lp + flipped))

    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """``reports`` reports of one memo key (``math.inf``: the memoized bits), worst sampled buckets.

        d = 1: the one sampled bit; d ≥ 2: the bit of x's bucket and the bit
        of x′'s, both sampled (the sampled set is independent of the value,
        so conditioning on the worst one bounds the curve: not exact).
        """
        if not (math.isinf(reports) or reports >= 1):
            raise AccountingError(f"reports must be >= 1 (or inf), got {reports!r}")
        bit = self.bit_pair(reports)
        return (bit,) if self.differing_bits == 1 else (bit, bit.swapped())

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """One report (see :meth:`privacy_pieces`)."""
        return self.privacy_pieces(1)

    # -- accuracy --------------------------------------------------------
    @property
    def exact_p_star(self) -> Fraction:
        """P[the report samples v and sends 1 | value v] = (d/b)·p′."""
        return Fraction(self.d, self.domain_size) * self.sent_one

    @property
    def exact_q_star(self) -> Fraction:
        """P[the report samples v and sends 1 | value ≠ v] = (d/b)·q′."""
        return Fraction(self.d, self.domain_size) * self.sent_zero

    def variance(self, frequency: Any = 0.0, n: int = 1) -> Any:
        """Var[ĥ(v)] of the paper's estimator (fixed data), not the pure oracle's (docs/longitudinal/dbitflip.md)."""
        return dbitflip_variance(
            frequency, n, self.domain_size, self.d, float(self.sent_one), float(self.sent_zero)
        )

    @property
    def variance_star(self) -> float:
        """n·Var at f → 0: (b/d)·q′(1 − q′)/(p′ − q′)²."""
        return float(self.variance(0.0, 1))
