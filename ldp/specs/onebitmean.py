"""1BitMean for counters reported every day: plain, or memoized with α-point rounding and output perturbation.

Ding, Kulkarni and Yekhanin's 1BitMean sends one bit b with
P[b = 1] = 1/(e^ε+1) + (x/m)(e^ε−1)/(e^ε+1) for a counter x ∈ [0, m]
(here x ∈ [low, high], u = (x − low)/(high − low)); the unbiased estimate of
x is m(b(e^ε+1) − 1)/(e^ε − 1). Two modes (docs/longitudinal/onebitmean.md):

``rounding="none"`` (default)
    Plain 1BitMean: a fresh bit from the CSPRNG on every report, ε per
    report, no memo, no client state. (One report is distributed exactly as
    :class:`ldp.StochasticRounding`'s.)
``rounding="alpha"``
    The paper's memoization. [low, high] is cut into ``grid`` = s steps of
    Δ = (high − low)/s; each client fixes α once (from its secret); a value
    in [L, L + Δ) is reported as the grid point L + Δ when x + α ≥ L + Δ,
    else as L; the 1BitMean bit of each grid point is memoized (a keyed PRF
    of the client's secret, the spec and the point), and every report is
    that bit flipped with probability γ by a fresh coin (output
    perturbation). Reports of an unchanged rounded value reuse one bit, so
    the lifetime loss grows with the distinct grid points a client visits
    (at most s + 1), not with the number of reports. α-point rounding is
    claimed by US patent 10,776,242: this mode is off unless asked for.

α is discrete: α = jΔ/2^32 with j uniform on {0, …, 2^32 − 1}
(:data:`ALPHA_BITS`), so the rounding probabilities are exact rationals and
E_α[rounded] is x on the 2^-32 sub-grid of every step (within Δ·2^-32
below it elsewhere): :func:`alpha_point`.

Privacy (both certified against the exact fractions, rounded toward more
privacy): the memoized bit is binary randomized response with keep
probability p, so any number of reports of one grid point are
ε∞-LDP with e^ε∞ = p/(1 − p); one report keeps with k = γ + (1 − 2γ)p, so
it is ε₁-LDP with e^ε₁ = k/(1 − k) (the spec's ``epsilon``). γ is derived
from (ε₁, ε∞) exactly: γ = (p − k)/(2p − 1).

References
----------
.. [1] B. Ding, J. Kulkarni, S. Yekhanin. "Collecting telemetry data
   privately". NeurIPS 2017 (1BitMean §2.1, α-point rounding and
   memoization §3, output perturbation §4).
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014
   (memoization by a permanent response).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ldp.errors import AccountingError, SpecError
from ldp.exact import epsilon_bound_of_ratio
from ldp.specs.frequency import calibrate_keep_probability
from ldp.specs.limits import RR64_MAX_EPSILON, SMALLEST_NORMAL, check_epsilon_limit
from ldp.specs.numeric import MAX_GRID, NumericSpec
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_epsilon, check_int, check_probability

__all__ = [
    "ALPHA_BITS",
    "DEFAULT_ALPHA_GRID",
    "ONEBITMEAN_ROUNDINGS",
    "OneBitMean",
    "alpha_point",
    "alpha_points",
]

#: The modes: a fresh bit per report, or memoized bits of α-point-rounded grid points.
ONEBITMEAN_ROUNDINGS = ("none", "alpha")
#: α = jΔ/2^ALPHA_BITS with j uniform on [0, 2^ALPHA_BITS): the resolution of the α grid.
ALPHA_BITS = 32
_ALPHA_SPAN = 1 << ALPHA_BITS
#: Grid steps s of ``rounding="alpha"`` when none is given (17 memo keys).
DEFAULT_ALPHA_GRID = 16


def alpha_point(u: float, grid: int, alpha: int) -> int:
    """The grid point (0..grid) a client with α index ``alpha`` reports for the position u ∈ [0, 1].

    With pos = u·s (s = ``grid``), cell L = ⌊pos⌋ (L = s − 1 at u = 1) and
    frac = pos − L, the value is rounded up iff frac + α/2^32 ≥ 1, i.e. iff
    ⌊frac·2^32⌋ + α ≥ 2^32 (frac·2^32 is exact in binary floating point, so
    the Python and TypeScript clients agree bit for bit). Over α uniform on
    [0, 2^32) the chance of rounding up is ⌊frac·2^32⌋/2^32: exactly frac
    when frac is a multiple of 2^-32, at most 2^-32 below it otherwise.

    Examples
    --------
    >>> from ldp.specs.onebitmean import alpha_point
    >>> alpha_point(0.0, 4, 123), alpha_point(1.0, 4, 0), alpha_point(0.5, 4, 7)
    (0, 4, 2)
    >>> alpha_point(0.3, 4, 0), alpha_point(0.3, 4, 2**32 - 1)  # 1.2 steps: down for small α, up for large
    (1, 2)
    """
    pos = u * grid
    cell = min(int(pos), grid - 1)
    fine = int((pos - cell) * _ALPHA_SPAN)
    return cell + (1 if fine + alpha >= _ALPHA_SPAN else 0)


def alpha_points(u: np.ndarray, grid: int, alpha: np.ndarray) -> np.ndarray:
    """Vectorized :func:`alpha_point` (int64 grid points)."""
    pos = np.asarray(u, dtype=np.float64) * grid
    cell = np.minimum(np.floor(pos), grid - 1)
    fine = np.floor((pos - cell) * float(_ALPHA_SPAN)).astype(np.int64)
    up = fine + np.asarray(alpha, dtype=np.int64) >= _ALPHA_SPAN
    return cell.astype(np.int64) + up


@dataclasses.dataclass(frozen=True, init=False)
class OneBitMean(NumericSpec):
    """1BitMean (Ding, Kulkarni, Yekhanin): plain, or memoized with α-point rounding (docs/longitudinal/onebitmean.md).

    Parameters
    ----------
    epsilon : float
        ε₁, the privacy of one report (the claim checked against the exact
        probabilities). Plain mode: each report's ε.
    low, high : float
        Value range (the paper's [0, m]); values outside are clipped.
    rounding : {"none", "alpha"}
        ``"none"``: plain 1BitMean, a fresh bit per report (default).
        ``"alpha"``: α-point rounding to ``grid`` steps and one memoized
        bit per grid point (the method of US patent 10,776,242: opt in).
    grid : int, optional
        ``rounding="alpha"``: the steps s of the rounding grid (s + 1 memo
        keys; default 16, at most 1,024). Not used (must be omitted) without it.
    epsilon_inf : float, optional
        ``rounding="alpha"``: ε∞ of the memoized bit, at least ``epsilon``
        (default ``epsilon``: no output perturbation, γ = 0). A larger ε∞
        sets the output perturbation γ so that one report is exactly
        ε₁-LDP. Not stored: the spec stores ``p`` and ``gamma``.
    p : Fraction, optional
        The bit's keep probability P[b = 1 | x = high] (plain: per report;
        alpha: of the memoized bit); calibrated when omitted.
    gamma : Fraction, optional
        The output perturbation probability (alpha only); derived when omitted.

    References
    ----------
    .. [1] B. Ding, J. Kulkarni, S. Yekhanin. "Collecting telemetry data
       privately". NeurIPS 2017.

    Examples
    --------
    >>> from ldp.specs.onebitmean import OneBitMean
    >>> plain = OneBitMean(epsilon=1.0, low=0, high=3600)
    >>> plain.memoized, plain.epsilon_inf
    (False, inf)
    >>> daily = OneBitMean(epsilon=0.5, low=0, high=3600, rounding="alpha", epsilon_inf=2.0)
    >>> daily.memoized, daily.memo_domain_size, round(daily.epsilon_inf, 6), round(float(daily.gamma), 4)
    (True, 17, 2.0, 0.3392)
    """

    mechanism: ClassVar[str] = "onebitmean"
    theory_name: ClassVar[str] = "stochastic-rounding"  # one report: 1BitMean at ε₁ (the composite's keep k)
    json_nullable: ClassVar[frozenset[str]] = frozenset({"grid"})
    #: One report and r reports of one grid point have exact output distributions (:meth:`privacy_pieces`).
    exact_privacy_curve: ClassVar[bool] = True
    #: r reports of one grid point are (r·ε₁)-DP: they are its memoized bit (P[1] = p or 1 − p at the range's
    #: ends, between them elsewhere) seen through r independent γ flips, RAPPOR's per-bit structure, whose
    #: log likelihood ratio ln((pR + 1 − p)/((1 − p)R + p)) is odd in ln R and concave beyond 0, hence
    #: subadditive (docs/accounting.md#memoized-streams; checked by ``privacy_pieces`` in the tests).
    memo_linear: ClassVar[bool] = True
    max_epsilon: ClassVar[float] = RR64_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its smaller probability, about 1/(e^epsilon + 1), is a multiple of 2^-64 and could not match e^epsilon "
        "to 1e-9 above it"
    )

    epsilon: float
    low: float
    high: float
    rounding: str
    grid: int
    p: Fraction
    gamma: Fraction

    def __init__(
        self,
        epsilon: float,
        low: float = 0.0,
        high: float = 1.0,
        rounding: str = "none",
        grid: int | None = None,
        epsilon_inf: float | None = None,
        p: ProbabilityInput | None = None,
        gamma: ProbabilityInput | None = None,
    ) -> None:
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        self._init_range()
        mode = str(rounding).strip().lower()
        if mode not in ONEBITMEAN_ROUNDINGS:
            raise SpecError(f"onebitmean: rounding must be one of {ONEBITMEAN_ROUNDINGS}, got {rounding!r}")
        object.__setattr__(self, "rounding", mode)
        self._check_epsilon_limit()
        if mode == "none":
            for name, given in (("grid", grid), ("epsilon_inf", epsilon_inf)):
                if given is not None:
                    raise SpecError(
                        f"onebitmean: {name} applies with rounding='alpha' only (plain 1BitMean sends a fresh "
                        "bit per report)"
                    )
            if gamma is not None and check_probability(gamma, "gamma") != 0:
                raise SpecError(
                    "onebitmean: gamma (output perturbation of a memoized bit) applies with rounding='alpha' "
                    "only; without it each bit is fresh and epsilon alone sets its privacy"
                )
            object.__setattr__(self, "grid", None)
        else:
            steps = (
                DEFAULT_ALPHA_GRID if grid is None else check_int(grid, "grid", minimum=1, maximum=MAX_GRID)
            )
            object.__setattr__(self, "grid", steps)
        self._check_steps()
        keep, flip = self._probabilities(epsilon_inf, p, gamma)
        object.__setattr__(self, "p", keep)
        object.__setattr__(self, "gamma", flip)
        self._check_claim()
        self._check_value_scale()

    # -- construction ---------------------------------------------------------
    def _probabilities(
        self, epsilon_inf: float | None, p: ProbabilityInput | None, gamma: ProbabilityInput | None
    ) -> tuple[Fraction, Fraction]:
        """(p, γ): read and checked, or calibrated toward more privacy from ε∞ and ε₁."""
        if p is not None:
            if epsilon_inf is not None:
                raise SpecError("onebitmean: give epsilon_inf or p, not both (p sets epsilon_inf)")
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, 2):
                raise SpecError(f"onebitmean: p must exceed 1/2, got {keep}")
        else:
            memo = self.epsilon if epsilon_inf is None else check_epsilon(epsilon_inf, "epsilon_inf")
            if memo < self.epsilon:
                raise SpecError(
                    f"onebitmean: epsilon_inf ({memo!r}) must be at least epsilon ({self.epsilon!r}): one report "
                    "cannot reveal more than the memoized bit it is drawn from"
                )
            check_epsilon_limit(
                memo, self.max_epsilon, self.mechanism, self.max_epsilon_reason, name="epsilon_inf"
            )
            keep = calibrate_keep_probability(memo, 2, self.mechanism)
        if gamma is not None:
            flip = check_probability(gamma, "gamma")
            if flip >= Fraction(1, 2):
                raise SpecError(f"onebitmean: gamma must be below 1/2, got {flip}")
        elif self.rounding == "none" or (epsilon_inf is None and p is None):
            flip = Fraction(0)
        else:  # one report keeps with the calibrated k of ε₁: γ + (1 − 2γ)p = k, exactly
            k = calibrate_keep_probability(self.epsilon, 2, self.mechanism)
            flip = max(Fraction(0), (keep - k) / (2 * keep - 1))
        return keep, flip

    def _check_steps(self) -> None:
        """The width high − low and the step (high − low)/grid must be finite, positive normal doubles."""
        width = self.high - self.low
        if not math.isfinite(width):
            raise SpecError(
                f"onebitmean: the range [{self.low!r}, {self.high!r}] is too wide: high - low overflows a double"
            )
        if width / (self.grid or 1) < SMALLEST_NORMAL:
            raise SpecError(
                f"onebitmean: the range [{self.low!r}, {self.high!r}] is too narrow for grid={self.grid}: its step "
                f"is below the smallest normal double {SMALLEST_NORMAL!r}"
            )

    @classmethod
    def with_gamma(
        cls,
        epsilon_inf: float,
        gamma: ProbabilityInput,
        low: float = 0.0,
        high: float = 1.0,
        grid: int | None = None,
    ) -> OneBitMean:
        """The paper's parametrization: memoized bits at ε∞ and output perturbation γ (ε₁ follows, rounded up).

        Examples
        --------
        >>> from ldp.specs.onebitmean import OneBitMean
        >>> spec = OneBitMean.with_gamma(2.0, "1/10", low=0, high=100)
        >>> spec.rounding, str(spec.gamma), round(spec.epsilon, 4)
        ('alpha', '1/10', 1.4155)
        """
        keep = calibrate_keep_probability(check_epsilon(epsilon_inf, "epsilon_inf"), 2, cls.mechanism)
        flip = check_probability(gamma, "gamma")
        if flip >= Fraction(1, 2):
            raise SpecError(f"onebitmean: gamma must be below 1/2, got {flip}")
        k = flip + (1 - 2 * flip) * keep
        epsilon = epsilon_bound_of_ratio(k / (1 - k))
        return cls(epsilon, low, high, rounding="alpha", grid=grid, p=keep, gamma=flip)

    @classmethod
    def grid_applies(cls, options: Mapping[str, Any]) -> bool:
        """Only α-point rounding has a grid (``rounding="alpha"``)."""
        return str(options.get("rounding", "none")).strip().lower() == "alpha"

    # -- probabilities ----------------------------------------------------------
    @property
    def keep(self) -> Fraction:
        """k = γ + (1 − 2γ)p: P[report 1 | x = high] (= p in plain mode)."""
        return self.gamma + (1 - 2 * self.gamma) * self.p

    def memo_probability(self, point: int) -> Fraction:
        """P[memoized bit = 1] of grid point ``point`` (0..grid): the 1BitMean bit of low + point·Δ."""
        steps = self.grid or 1
        return 1 - self.p + Fraction(point, steps) * (2 * self.p - 1)

    # -- memoization (the ledger's view) ----------------------------------------------
    @property
    def memoized(self) -> bool:  # type: ignore[override]  # per spec: memoized only with α-point rounding
        """True with ``rounding="alpha"``: every report of a grid point post-processes its memoized bit."""
        return self.rounding == "alpha"

    @property
    def memo_domain_size(self) -> int | None:
        """How many memo keys exist: the s + 1 grid points (None in plain mode: nothing is memoized)."""
        return None if self.grid is None else self.grid + 1

    def memo_key(self, value: Any) -> bytes:
        """Not on the spec: a value's grid point depends on the client's α (``encoder.memo_key(value)``)."""
        raise AccountingError(
            "onebitmean: the memo key of a value (its alpha-rounded grid point) depends on the client's alpha; "
            "take it from the client encoder (encoder.memo_key(value))"
            if self.memoized
            else "onebitmean without rounding='alpha' memoizes nothing (each report costs epsilon)"
        )

    @property
    def epsilon_one(self) -> float:
        """ε₁: one report (the spec's ``epsilon``; certified by the exact keep k)."""
        return self.epsilon

    @property
    def epsilon_inf(self) -> float:
        """ε∞ = ln(p/(1 − p)), rounded up: any number of reports of one grid point (inf in plain mode)."""
        if not self.memoized:
            return math.inf
        return epsilon_bound_of_ratio(self.p / (1 - self.p))

    def privacy_summary(self) -> dict[str, float]:
        out = super().privacy_summary()
        if self.memoized:
            out |= {"epsilon_one": self.epsilon_one, "epsilon_inf": self.epsilon_inf}
        return out

    # -- privacy -------------------------------------------------------------------
    @property
    def privacy_ratio(self) -> Fraction:
        """One report: k/(1 − k) (the inputs low and high; every other input mixes them)."""
        k = self.keep
        return k / (1 - k)

    @property
    def permanent_ratio(self) -> Fraction | None:
        """The memoized bit: p/(1 − p) (None in plain mode)."""
        return self.p / (1 - self.p) if self.memoized else None

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """One report of the inputs low and high: binary RR with keep k."""
        k = self.keep
        return (piece([1 - k, k], [k, 1 - k]),)

    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """Plain: ``reports`` independent reports. Alpha: ``reports`` reports of one grid point (inf: its bit).

        The r reports of one point are its memoized bit B (P[B = 1] = p
        under x = high, 1 − p under x = low) seen through r independent
        flips of probability γ: the count c of ones has
        P(c) = p·Bin(c; r, 1 − γ) + (1 − p)·Bin(c; r, γ) under high.
        """
        if not self.memoized:
            return super().privacy_pieces(reports)
        keep = self.p
        if math.isinf(reports):
            return (piece([1 - keep, keep], [keep, 1 - keep]),)
        r = int(reports)
        if r == 1:
            return self.report_pieces()
        if self.gamma == 0:  # every report is the memoized bit itself
            return (piece([1 - keep, keep], [keep, 1 - keep]),)
        c = np.arange(r + 1)
        log_choose = np.array([math.lgamma(r + 1) - math.lgamma(i + 1) - math.lgamma(r - i + 1) for i in c])
        g = float(self.gamma)
        kept = log_choose + c * math.log1p(-g) + (r - c) * math.log(g)  # memo bit 1: each report 1 w.p. 1 − γ
        flipped = log_choose + c * math.log(g) + (r - c) * math.log1p(-g)  # memo bit 0
        high, low = math.log(float(keep)), math.log(float(1 - keep))
        return (
            PrivacyPiece(np.logaddexp(high + kept, low + flipped), np.logaddexp(low + kept, high + flipped)),
        )

    # -- reports -----------------------------------------------------------------------
    @property
    def c(self) -> float:
        """C′ = 1/(2k − 1): the report's unbiased native estimate is C′(2b − 1)."""
        return float(1 / (2 * self.keep - 1))

    @property
    def support(self) -> np.ndarray:
        return np.array([0.0, 1.0])

    @property
    def estimator_affine(self) -> tuple[float, float]:
        return -self.c, 2.0 * self.c

    def support_index(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._affine_index(values, self.support)

    def grid_moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Var[t̂ | t] = C′² − t² (one report; over α, its bit is exactly Bernoulli((1 − k) + u(2k − 1)))."""
        c = self.c
        t = np.array([-1.0, 1.0])
        return t, t.copy(), np.full(2, c * c) - 1.0
