"""Subset selection (SS): report a random ω-subset of the domain (docs/mechanisms.md#ss).

The user with value x reports a set S of ω domain values: with probability
p, S holds x and ω − 1 values drawn uniformly without replacement from the
other d − 1; otherwise S holds ω values drawn from the other d − 1. Every
subset holding x then has probability a = p/C(d−1, ω−1) and every other
subset b = (1 − p)/C(d−1, ω), and the worst-case ratio is

    a/b = p(d − ω)/((1 − p)ω),

which is e^ε for p = ωe^ε/(ωe^ε + d − ω). The spec holds p as an exact
fraction, calibrated from ε with 64-bit precision rounding down (more
privacy), as GRR's keep probability; with ω = 1 it is GRR.

The report is the set as a d-bit vector (the ``bits`` field of the unary
encodings), with exactly ω bits set; a vector of any other weight is not a
report of the spec and is rejected.

References
----------
.. [1] M. Ye, A. Barg. "Optimal schemes for discrete distribution estimation
   under locally differential privacy". IEEE Trans. Inf. Theory 64(8), 2018.
.. [2] S. Wang, L. Huang, P. Wang, Y. Nie, H. Xu, W. Yang, X.-Y. Li, C. Qiao.
   "Mutual information optimally local private discrete distribution
   estimation". arXiv:1607.08025, 2016.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ldp.domain import DomainValue
from ldp.errors import ReportError, SpecError
from ldp.exact import exp_lower_bound, floor_fraction
from ldp.report_schema import BitVector, ReportSchema
from ldp.specs.frequency import FrequencySpec
from ldp.specs.limits import MAX_UNARY_DOMAIN_SIZE
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_int, check_probability

__all__ = ["SubsetBits", "SubsetSelection", "bit_weights", "default_subset_size"]


def default_subset_size(epsilon: float, domain_size: int) -> int:
    """ω = max(1, round(d/(e^ε + 1))), at most d − 1: the subset size minimizing Var* (to rounding)."""
    ideal = domain_size / (math.exp(epsilon) + 1)
    return min(domain_size - 1, max(1, math.floor(ideal + 0.5)))


def bit_weights(packed: np.ndarray) -> np.ndarray:
    """Number of bits set in each row of a (n, bytes) uint8 array (int64), counted a word at a time when it can."""
    rows = np.ascontiguousarray(packed, dtype=np.uint8)
    if rows.ndim == 2 and rows.shape[1] % 8 == 0 and rows.shape[1]:
        rows = rows.view(np.uint64)
    return np.bitwise_count(rows).sum(axis=1, dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class SubsetBits(BitVector):
    """A d-bit vector with exactly ``weight`` bits set (the spec attribute it names).

    A :class:`~ldp.report_schema.BitVector` whose check also counts the set
    bits: a vector of another weight is refused (one report) or marked not ok
    (a column, whose rows are then re-checked and rejected one by one).
    """

    weight: str = "omega"

    def check(self, spec: Any, raw: Any) -> bytes:
        bits = super().check(spec, raw)
        expected = int(getattr(spec, self.weight))
        ones = int.from_bytes(bits, "big").bit_count()
        if ones != expected:
            raise ReportError(
                f"'{self.name}' has {ones} bits set, expected exactly {expected} ({self.weight})"
            )
        return bits

    def rows_ok(self, spec: Any, packed: np.ndarray) -> np.ndarray:
        return bit_weights(packed) == int(getattr(spec, self.weight))


@dataclasses.dataclass(frozen=True, init=False)
class SubsetSelection(FrequencySpec):
    """Subset selection: a random ω-subset that holds the true value with probability p.

    p = ωe^ε/(ωe^ε + d − ω) and ω = max(1, round(d/(e^ε + 1))) by default.
    A report supports every value in its subset: p* = p and
    q* = (ω − p)/(d − 1) (docs/mechanisms.md#ss).

    Parameters
    ----------
    domain : sequence of str or int
        The d ≥ 2 possible values.
    epsilon : float
        Privacy claim; p is calibrated to it.
    omega : int, optional
        Subset size in [1, d − 1]; derived from ``epsilon`` when omitted.
    p : Fraction or str, optional
        Probability that the subset holds the true value; derived from
        ``epsilon`` and ``omega`` when omitted, else it must exceed ω/d.

    References
    ----------
    .. [1] M. Ye, A. Barg. IEEE Trans. Inf. Theory 64(8), 2018.
    .. [2] S. Wang et al. arXiv:1607.08025, 2016.

    Examples
    --------
    >>> from ldp import SubsetSelection
    >>> spec = SubsetSelection(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('ss', 4, 1.598)
    """

    mechanism: ClassVar[str] = "ss"
    report_size_rank: ClassVar[int] = 5  # d bits, as SUE
    report_kind: ClassVar[str] = "bits"
    #: Reports carry the subset as d bits, exactly ω of them set.
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (SubsetBits("bits", length="domain_size", weight="omega"),)
    )
    max_domain_size: ClassVar[int] = MAX_UNARY_DOMAIN_SIZE
    max_domain_reason: ClassVar[str] = (
        "a report holds one bit per value and the aggregator counts bytes in 32 int64 counters per value"
    )

    omega: int
    p: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        omega: int | None = None,
        p: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        d = self.domain_size
        size = default_subset_size(self.epsilon, d) if omega is None else omega
        size = check_int(size, "omega", minimum=1, maximum=d - 1)
        object.__setattr__(self, "omega", size)
        if p is None:
            keep = self._calibrate(self.epsilon, size, d)
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(size, d):
                raise SpecError(f"ss: p must exceed omega/d = {size}/{d}, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()

    @staticmethod
    def _calibrate(epsilon: float, omega: int, d: int) -> Fraction:
        """p = ⌊2^64·ωe^ε/(ωe^ε + d − ω)⌋/2^64: the ratio p(d − ω)/((1 − p)ω) grows with p, so ≤ e^ε."""
        bound = exp_lower_bound(epsilon)
        keep = floor_fraction(omega * bound / (omega * bound + d - omega))
        if keep <= Fraction(omega, d):
            raise SpecError(f"ss: epsilon={epsilon!r} is too small to represent with 64-bit probabilities")
        return keep

    # -- privacy ---------------------------------------------------------
    @property
    def privacy_ratio(self) -> Fraction:
        """a/b = p(d − ω)/((1 − p)ω): a subset holding x against one that does not (the same size)."""
        return self.p * (self.domain_size - self.omega) / ((1 - self.p) * self.omega)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """Inputs x, x′: the subset holds x and not x′, x′ and not x, or both or neither.

        Within each class every subset has the same ratio of probabilities
        under x and x′ (e^ε, e^−ε, 1), so the three classes carry the whole
        privacy-loss distribution: under x they have probabilities
        p(d − ω)/(d − 1), (1 − p)ω/(d − 1) and the rest, and under x′ the
        first two swap. With ω = 1 this is GRR's piece.
        """
        d, w, p = self.domain_size, self.omega, self.p
        only_x = p * (d - w) / (d - 1)
        only_other = (1 - p) * w / (d - 1)
        rest = [1 - only_x - only_other] if d > 2 else []  # d = 2: ω = 1 and no subset holds both or neither
        return (piece([only_x, only_other, *rest], [only_other, only_x, *rest]),)

    # -- accuracy --------------------------------------------------------
    @property
    def exact_p_star(self) -> Fraction:
        return self.p

    @property
    def exact_q_star(self) -> Fraction:
        """p(ω − 1)/(d − 1) + (1 − p)ω/(d − 1) = (ω − p)/(d − 1)."""
        return (self.omega - self.p) / (self.domain_size - 1)

    @property
    def num_bytes(self) -> int:
        """Length of a packed report."""
        return (self.domain_size + 7) // 8
