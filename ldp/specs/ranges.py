"""Range and quantile queries over an ordered domain: a hierarchy of OUE levels, and Haar with Hadamard RR.

Both mechanisms take an *ordered* domain (the order given is the order of
the ranges) and let each user report one sampled level, so one report costs
ε and every level sees about n/h users (docs/range-queries.md).

``range-hierarchy`` (Hay, Rastogi, Miklau, Suciu, PVLDB 2010; Cormode,
Kulkarni, Srivastava, VLDB 2019)
    A B-ary tree over the D values (padded to B^h leaves). A user samples a
    level l ∈ {1..h} uniformly and reports OUE (p = 1/2, q = 1/(e^ε + 1),
    calibrated by :class:`ldp.OUE`) of their node at level l, in a vector of
    B^h bits whose bits at and beyond B^l are 0. Level and padding are
    independent of the value, and two values differ in two bits of level l,
    so the exact ratio is OUE's p(1 − q)/((1 − p)q).
``range-haar`` (Cormode, Kulkarni, Srivastava, VLDB 2019, "HaarHRR")
    The Haar coefficients of the one-hot vector over 2^h leaves: at level
    l ∈ {0..h−1} the user's node a holds +1 (left half) or −1 (right half).
    A user samples l uniformly and an index j ∈ [0, 2^l) uniformly and
    reports (l, j, b), b the sign H[j, a]·s kept with probability
    p ≈ e^ε/(e^ε + 1) (binary RR, calibrated as :class:`ldp.BinaryRR`):
    exact ratio p/(1 − p).

The mechanism names say what the reports are for (a range query) and which
method answers it; both are one registry entry each because their reports
differ in form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import ClassVar

from ldp.domain import DomainValue
from ldp.errors import SpecError
from ldp.report_schema import BitVector, BoundedInt, ReportSchema
from ldp.specs.base import MechanismView
from ldp.specs.frequency import OUE, DomainSpec, calibrate_keep_probability
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_int, check_probability

__all__ = ["MAX_RANGE_LEAVES", "RANGE_MECHANISMS", "RangeHaar", "RangeHierarchy", "RangeSpec"]

#: Largest padded leaf count: the aggregator keeps dense D × D and nodes × D float64 matrices (about 0.5 GB at 4,096).
MAX_RANGE_LEAVES = 1 << 12
#: Default branching of the hierarchy (Cormode et al. find B ≈ 4 to 5 best for OUE/OLH levels).
DEFAULT_BRANCHING = 4


@dataclasses.dataclass(frozen=True, init=False)
class RangeSpec(DomainSpec):
    """Common part of the range mechanisms: an ordered domain of D ≥ 2 values and ε.

    The order given is the order of the ranges; the domain and ε are checked
    as every frequency oracle's (:class:`~ldp.specs.frequency.DomainSpec`).
    """

    #: Its estimates answer ranges and quantiles (``ldp aggregate --range``, ``--quantiles``).
    answers_ranges: ClassVar[bool] = True

    def _check_leaves(self) -> None:
        if self.leaves > MAX_RANGE_LEAVES:
            raise SpecError(
                f"{self.mechanism}: {self.leaves:,} padded leaves exceed {MAX_RANGE_LEAVES:,} (the aggregator keeps "
                "dense leaf-by-leaf matrices for exact variances)"
            )

    @property
    def levels(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def leaves(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclasses.dataclass(frozen=True, init=False)
class RangeHierarchy(RangeSpec):
    """Hierarchical histogram with OUE at one sampled level per user (docs/range-queries.md#hierarchy).

    Parameters
    ----------
    domain : sequence of str or int
        The D ≥ 2 values, in their order.
    epsilon : float
        Privacy of one report.
    branching : int
        B ≥ 2 (default 4).
    p, q : Fraction, optional
        OUE's bit probabilities; calibrated by :class:`ldp.OUE` when omitted.

    References
    ----------
    .. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the accuracy of
       differentially private histograms through consistency". PVLDB 2010.
    .. [2] G. Cormode, T. Kulkarni, D. Srivastava. "Answering range queries
       under local differential privacy". PVLDB 12(10), 2019.

    Examples
    --------
    >>> from ldp.specs.ranges import RangeHierarchy
    >>> spec = RangeHierarchy(domain=range(16), epsilon=1.0)
    >>> spec.levels, spec.leaves, spec.level_width(1)
    (2, 16, 4)
    """

    mechanism: ClassVar[str] = "range-hierarchy"
    report_kind: ClassVar[str] = "range-bits"
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (BoundedInt("level", bound="levels"), BitVector("bits", length="leaves"))
    )

    branching: int
    p: Fraction
    q: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        branching: int = DEFAULT_BRANCHING,
        p: ProbabilityInput | None = None,
        q: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        object.__setattr__(self, "branching", check_int(branching, "branching", minimum=2, maximum=1 << 10))
        self._check_leaves()
        if p is None and q is None:
            oue = OUE(domain=(0, 1), epsilon=self.epsilon)  # OUE's exact calibration, reused
            one, zero = oue.p, oue.q
        elif p is None or q is None:
            raise SpecError("range-hierarchy: give both p and q, or neither (calibrated from epsilon)")
        else:
            one = check_probability(p, "p", low_open=True, high_open=True)
            zero = check_probability(q, "q", low_open=True, high_open=True)
            if one <= zero:
                raise SpecError(f"range-hierarchy: p must exceed q, got p={one}, q={zero}")
        object.__setattr__(self, "p", one)
        object.__setattr__(self, "q", zero)
        self._check_claim()

    @property
    def levels(self) -> int:
        """h: the levels 1..h a user samples from (B^h ≥ D leaves)."""
        width, depth = self.branching, 1
        while width < self.domain_size:
            width *= self.branching
            depth += 1
        return depth

    @property
    def leaves(self) -> int:
        """B^h, the padded leaf count (the width of every report's bit vector)."""
        return int(self.branching**self.levels)

    def level_width(self, level: int) -> int:
        """B^l nodes at level l (1..h)."""
        return int(self.branching**level)

    @property
    def variance_star(self) -> float:
        """n·Var of one value's raw frequency at small frequency: h·q(1 − q)/(p − q)² (its leaf node)."""
        p, q = float(self.p), float(self.q)
        return self.levels * q * (1 - q) / (p - q) ** 2

    @property
    def privacy_ratio(self) -> Fraction:
        """OUE's p(1 − q)/((1 − p)q): the sampled level and the zero padding do not depend on the value."""
        return self.p * (1 - self.q) / ((1 - self.p) * self.q)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """Two values in different level-1 nodes differ in two bits at every level: OUE's pair, per level alike."""
        set_bit = piece([1 - self.p, self.p], [1 - self.q, self.q])
        return (set_bit, set_bit.swapped())


@dataclasses.dataclass(frozen=True, init=False)
class RangeHaar(RangeSpec):
    """Haar wavelet coefficients with Hadamard randomized response (docs/range-queries.md#haar).

    Parameters
    ----------
    domain : sequence of str or int
        The D ≥ 2 values, in their order (padded to 2^h leaves).
    epsilon : float
        Privacy of one report.
    p : Fraction, optional
        Keep probability of the sign; calibrated to ε when omitted.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni, D. Srivastava. "Answering range queries
       under local differential privacy". PVLDB 12(10), 2019.

    Examples
    --------
    >>> from ldp.specs.ranges import RangeHaar
    >>> spec = RangeHaar(domain=range(5), epsilon=1.0)
    >>> spec.levels, spec.leaves, spec.coefficients
    (3, 8, 7)
    """

    mechanism: ClassVar[str] = "range-haar"
    report_kind: ClassVar[str] = "range-sign"
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (
            BoundedInt("level", bound="levels"),
            BoundedInt("index", bound="half_leaves"),
            BoundedInt("bit", bound=2),
        )
    )

    p: Fraction

    def __init__(
        self, domain: Iterable[DomainValue], epsilon: float, p: ProbabilityInput | None = None
    ) -> None:
        super().__init__(domain, epsilon)
        self._check_leaves()
        if p is None:
            keep = calibrate_keep_probability(self.epsilon, 2, self.mechanism)
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, 2):
                raise SpecError(f"range-haar: p must exceed 1/2, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()

    @property
    def levels(self) -> int:
        """h = ⌈log2 D⌉: coefficient levels 0..h−1."""
        return max((self.domain_size - 1).bit_length(), 1)

    @property
    def leaves(self) -> int:
        """2^h, the padded leaf count."""
        return 1 << self.levels

    @property
    def half_leaves(self) -> int:
        """2^(h−1): the most coefficients of one level (the bound of a report's index)."""
        return self.leaves // 2

    @property
    def coefficients(self) -> int:
        """2^h − 1 detail coefficients (the total n is known)."""
        return self.leaves - 1

    @property
    def variance_star(self) -> float:
        """n·Var of one value's frequency at small frequency: h/(2p − 1)²·Σ_l 4^-(h − l) (its synthesis weights)."""
        h = self.levels
        return h / (2 * float(self.p) - 1) ** 2 * sum(4.0 ** -(h - level) for level in range(h))

    @property
    def privacy_ratio(self) -> Fraction:
        """p/(1 − p): level and index are uniform whatever the value; only the sign bit depends on it."""
        return self.p / (1 - self.p)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """The worst pair (values in different halves of the root): its two output distributions, exactly.

        At level 0 their signs differ for every index; at each level below, the
        two nodes differ, and orthogonal Hadamard columns give opposite signs
        for half the indices. So with w = (1 + (h − 1)/2)/h the outputs are
        "x's sign" (w·p vs w(1 − p)), "x′'s sign" (the reverse) and the rest
        (1 − w under both). Any other pair differs on fewer outputs.
        """
        h = self.levels
        w = (1 + Fraction(h - 1, 2)) / h
        p = self.p
        rest = [1 - w] if w < 1 else []
        return (piece([w * p, w * (1 - p), *rest], [w * (1 - p), w * p, *rest]),)


#: The registered range mechanisms (a live view of the registry), by name.
RANGE_MECHANISMS: Mapping[str, type[RangeSpec]] = MechanismView(RangeSpec)
