"""Hadamard response (HR): a frequency oracle with ⌈log2 K⌉-bit reports (docs/mechanisms.md#hr).

The report is one output y in [0, K), K = B·b. With probability p it is a
uniform member of the input's set C_x (b/2 positions), otherwise a uniform
member of the other K − b/2 outputs. The exact ratio of output
probabilities is p(2B − 1)/(1 − p), which the spec calibrates (p rounded
down on the 2^-64 grid, as GRR's keep probability) to at most e^ε.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ldp.domain import DomainValue
from ldp.errors import SpecError
from ldp.exact import exp_lower_bound
from ldp.hadamard_math import block_count, block_size, hr_variance, row_positions, symbol_layout
from ldp.report_schema import BoundedInt, ReportSchema
from ldp.specs.frequency import FrequencySpec, calibrate_keep_probability
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_int, check_probability

__all__ = ["HR"]


@dataclasses.dataclass(frozen=True, init=False)
class HR(FrequencySpec):
    """Hadamard response, for any ε (docs/mechanisms.md#hr).

    B blocks (a power of two at most the paper's 2^⌊log2 min(e^ε, 2d)⌋; by
    default the one with the smallest mean variance over uniform data,
    :func:`ldp.hadamard_math.block_count`) of b = 2^⌈log2(d/B + 1)⌉ outputs.
    Value x (domain index) uses row (x mod (b − 1)) + 1 of the Sylvester
    Hadamard matrix H_b in block ⌊x/(b − 1)⌋; C_x is that row's b/2 "+1"
    positions. P[y ∈ C_x] = p, uniform inside and outside. B = 1 is the
    high-privacy HR (p* = e^ε/(e^ε + 1) on C_x, 1/2 for other values).

    The report is one integer in [0, K): ⌈log2 K⌉ bits. The aggregator
    decodes every value from the output histogram by a fast Walsh–Hadamard
    transform, in O(n + K log K).

    The support statistic of value x is *signed*: S_x = #(reports in C_x)
    − #(reports in x's block outside C_x). E[S_x]/n = p*·f_x + q*·(1 − f_x)
    with ``p_star`` = (e − 1)/(2B − 1 + e) and ``q_star`` = 0 (e the exact
    ratio), so the generic estimator (S_x/n − q*)/(p* − q*) is HR's
    unbiased estimate; its variance is HR's own (:meth:`variance`).

    Parameters
    ----------
    domain : sequence of str or int
        The d ≥ 2 possible values.
    epsilon : float
        Privacy claim; the probabilities are calibrated to it.
    blocks : int, optional
        B, a power of two ≥ 1; derived from ``epsilon`` and d when omitted.
    p : Fraction or str, optional
        P[y ∈ C_x]; derived from ``epsilon`` when omitted.

    References
    ----------
    .. [1] J. Acharya, Z. Sun, H. Zhang. "Hadamard Response: Estimating
       Distributions Privately, Efficiently, and with Little Communication".
       AISTATS 2019.

    Examples
    --------
    >>> from ldp import HR
    >>> spec = HR(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> spec.mechanism, spec.report_bits, round(spec.variance_star, 3)
    ('hr', 3, 4.683)
    """

    mechanism: ClassVar[str] = "hr"
    report_size_rank: ClassVar[int] = 2
    report_kind: ClassVar[str] = "output"
    #: Reports carry one output y in [0, K) as their ``value``.
    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (BoundedInt("value", bound="outputs", message="output {raw!r} is out of range [0, {bound})"),)
    )

    blocks: int
    p: Fraction

    def __init__(
        self,
        domain: Iterable[DomainValue],
        epsilon: float,
        blocks: int | None = None,
        p: ProbabilityInput | None = None,
    ) -> None:
        super().__init__(domain, epsilon)
        d = self.domain_size
        if blocks is None:
            count = block_count(exp_lower_bound(self.epsilon), d)
        else:
            count = check_int(blocks, "blocks", minimum=1, maximum=1 << 22)
            if count & (count - 1):
                raise SpecError(f"hr: blocks must be a power of two, got {count}")
            if count > 2 * d:
                raise SpecError(f"hr: blocks must be at most 2d = {2 * d}, got {count}")
        object.__setattr__(self, "blocks", count)
        if p is None:
            keep = calibrate_keep_probability(self.epsilon, 2 * count, self.mechanism)
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep * 2 * count <= 1:
                raise SpecError(f"hr: p must exceed 1/(2B) = 1/{2 * count}, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()

    # -- layout ------------------------------------------------------------
    @property
    def block_size(self) -> int:
        """b, the outputs per block (a power of two); each block holds b − 1 values."""
        return block_size(self.domain_size, self.blocks)

    @property
    def outputs(self) -> int:
        """K = B·b, the number of possible reports."""
        return self.blocks * self.block_size

    def layout(self, indices: Any) -> tuple[np.ndarray, np.ndarray]:
        """(block, Hadamard row) of each domain index."""
        return symbol_layout(indices, self.block_size)

    def output_set(self, index: int) -> np.ndarray:
        """C_x of domain index ``index``: the b/2 outputs its reports favour (sorted)."""
        blk, row = self.layout([index])
        half = self.block_size // 2
        positions = row_positions(row, np.arange(half), plus=True) + blk * self.block_size
        return np.sort(positions)

    # -- probabilities -----------------------------------------------------
    @property
    def ratio(self) -> Fraction:
        """e, the exact ratio p(2B − 1)/(1 − p) of an output's probability on C_x to off it."""
        return self.p * (2 * self.blocks - 1) / (1 - self.p)

    @property
    def in_probability(self) -> Fraction:
        """P[y] for each y in C_x: 2p/b."""
        return 2 * self.p / self.block_size

    @property
    def out_probability(self) -> Fraction:
        """P[y] for each y outside C_x: (1 − p)/(K − b/2)."""
        return (1 - self.p) / (self.outputs - self.block_size // 2)

    @property
    def privacy_ratio(self) -> Fraction:
        return self.in_probability / self.out_probability

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """The worst pair: values in two blocks (C_x, C_x′ disjoint) when a second block holds values, else one block.

        Outputs where the two distributions differ: y in C_x only, in C_x′ only;
        the rest has equal probability under both.
        """
        hi, lo, half = self.in_probability, self.out_probability, self.block_size // 2
        width = half if self.domain_size > self.block_size - 1 else half // 2
        mine, theirs = width * hi, width * lo
        rest = 1 - mine - theirs
        return (piece([mine, theirs, rest], [theirs, mine, rest]),)

    # -- accuracy -----------------------------------------------------------
    @property
    def exact_p_star(self) -> Fraction:
        """E[S_x/n | every user holds x] = (e − 1)/(2B − 1 + e) (S_x signed, see the class docstring)."""
        e = self.ratio
        return (e - 1) / (2 * self.blocks - 1 + e)

    @property
    def exact_q_star(self) -> Fraction:
        """E[S_x/n | no user holds x] = 0: other values put equal mass on C_x and the rest of x's block."""
        return Fraction(0)

    def variance(self, frequency: Any = 0.0, n: int = 1, block_frequency: Any = None) -> Any:
        """Exact fixed-data Var[f̂_x] for ``n`` users (docs/mechanisms.md#hr-variance).

        It depends on g, the fraction of users whose value is in x's block:
        n·Var = c(2 + g(e − 1))/(e − 1)² − f, c = 2B − 1 + e. ``block_frequency``
        gives g; when omitted, an array ``frequency`` of one frequency per
        domain value is read as the whole distribution (g from its block
        sums), and otherwise g = 1, the worst case (exact when B = 1, where
        every value shares the one block).
        """
        if block_frequency is None:
            f = np.asarray(frequency, dtype=float)
            if self.blocks > 1 and f.shape == (self.domain_size,):
                blk, _ = self.layout(np.arange(self.domain_size))
                block_frequency = np.bincount(blk, weights=f, minlength=self.blocks)[blk]
            else:
                block_frequency = np.ones_like(f)
        return hr_variance(frequency, block_frequency, n, self.ratio, self.blocks)

    @property
    def variance_star(self) -> float:
        """n·Var at f → 0 for the worst block mass g = 1: (2B − 1 + e)(e + 1)/(e − 1)².

        With B > 1 and x's block holding few users the variance is lower, down
        to 2(2B − 1 + e)/(e − 1)² (:meth:`variance` with ``block_frequency``);
        the worst case keeps ``auto`` from choosing HR on a figure the data
        may not give.
        """
        return float(self.variance(0.0, 1))
