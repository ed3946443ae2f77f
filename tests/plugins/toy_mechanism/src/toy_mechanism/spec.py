"""The spec: parameters, exact probabilities, privacy claim and report form of toy-rr."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from fractions import Fraction
from typing import ClassVar

from ldp.domain import DomainValue
from ldp.errors import ParameterError
from ldp.report_schema import BoundedInt, ReportSchema
from ldp.specs.frequency import FrequencySpec, calibrate_keep_probability
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_probability


@dataclasses.dataclass(frozen=True, init=False)
class ToyRR(FrequencySpec):
    """k-ary randomized response reporting the index of the output value.

    Keep the value's index with probability p = e^ε/(e^ε + d − 1), else
    report each other index with q = (1 − p)/(d − 1), exactly as GRR; the
    report carries ``index`` (an integer in [0, d)) instead of the value.
    """

    mechanism: ClassVar[str] = "toy-rr"
    report_kind: ClassVar[str] = "index"
    report_schema: ClassVar[ReportSchema] = ReportSchema((BoundedInt("index", bound="domain_size"),))

    p: Fraction

    def __init__(
        self, domain: Iterable[DomainValue], epsilon: float, p: ProbabilityInput | None = None
    ) -> None:
        super().__init__(domain, epsilon)  # validates the domain and ε, and ε's limit
        if p is None:  # calibrated to ε on the 2^-64 grid, rounded toward privacy
            keep = calibrate_keep_probability(self.epsilon, self.domain_size, self.mechanism)
        else:  # read from a spec file: checked against the claim below
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, self.domain_size):
                raise ParameterError(
                    f"{self.mechanism}: p must exceed 1/d = 1/{self.domain_size}, got {keep}"
                )
        object.__setattr__(self, "p", keep)
        self._check_claim()  # the exact ratio p/q honours the claim (and matches it, for a stored p)

    @property
    def q(self) -> Fraction:
        """Probability of reporting one particular other index."""
        return (1 - self.p) / (self.domain_size - 1)

    @property
    def privacy_ratio(self) -> Fraction:
        return self.p / self.q

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """Inputs x, x′: output x′ (q vs p), x (p vs q), and the d − 2 others ((d − 2)q under both)."""
        p, q, d = self.p, self.q, self.domain_size
        rest = [(d - 2) * q] if d > 2 else []
        return (piece([p, q, *rest], [q, p, *rest]),)

    @property
    def exact_p_star(self) -> Fraction:
        return self.p

    @property
    def exact_q_star(self) -> Fraction:
        return self.q
