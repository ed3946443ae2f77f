"""Pure math of numeric mean estimation (docs/mechanisms.md#numeric,
docs/mechanisms.md#lower-bounds, docs/mechanisms.md#exact-sampling).

Two kinds of functions live here:

* closed forms on the native scale x ∈ [−1, 1]: the conditional and
  worst-case variances of Laplace, Duchi, PM and HM, HM's switch ε*, the
  classic and analytic Gaussian calibrations, and the lower bound (docs/mechanisms.md#lower-bounds);
* builders of the *exact grid tables* the client samples from. Every
  continuous mechanism is run on a grid: the input t ∈ [−1, 1] is rounded
  (randomly and unbiasedly) to one of ``K + 1`` grid inputs, and the output
  is drawn from a finite table of integer weights. Privacy is then a
  property of the integer table, computed exactly
  (:func:`table_privacy_ratio`), not of floating-point sampling.

A table is either ``rows`` (one integer weight row per grid input, all rows
with the same total) or ``shift`` (one integer weight vector of a noise Z on
[−M, M], whose two end entries hold the tails; output j = clamp(i + Z,
−B, K + B) with M = K + B, i.e. the exact clamped discrete noise).

References
----------
.. [1] I. Mironov. "On significance of the least significant bits for
   differential privacy". ACM CCS 2012.
.. [2] A. Ghosh, T. Roughgarden, M. Sundararajan. "Universally
   utility-maximizing privacy mechanisms". STOC 2009 (discrete Laplace).
.. [3] C. Canonne, G. Kamath, T. Steinke. "The discrete Gaussian for
   differential privacy". NeurIPS 2020.
.. [4] N. Wang et al. "Collecting and analyzing multidimensional data with
   local differential privacy". ICDE 2019 (PM, HM).
.. [5] J. Duchi, M. Jordan, M. Wainwright. "Minimax optimal procedures for
   locally private estimation". JASA 2018.
.. [6] B. Balle, Y.-X. Wang. "Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising".
   ICML 2018.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ldp.errors import ParameterError
from ldp.exact import exp_lower_bound
from ldp.fixed_exp import decimal_context, fixed_point, gaussian_sequence, geometric_sequence, round_scaled

__all__ = [
    "HM_EPSILON_STAR",
    "MAX_TABLE_ENTRIES",
    "NUMERIC_THEORY",
    "GridTable",
    "analytic_gaussian_sigma",
    "band_inverse_cdf",
    "classic_gaussian_sigma",
    "duchi_c",
    "duchi_variance",
    "fixed_data_mean_lower_bound",
    "gaussian_delta",
    "gaussian_epsilon_range",
    "gaussian_half_width",
    "gaussian_table",
    "gaussian_table_entries",
    "hm_alpha",
    "hm_variance",
    "laplace_epsilon_range",
    "laplace_half_width",
    "laplace_table",
    "laplace_table_entries",
    "laplace_variance",
    "mean_lower_bound",
    "pm_table",
    "pm_variance",
    "table_gaussian_delta",
    "table_privacy_ratio",
    "two_point_table",
    "worst_case_variance",
]

#: HM switch ε* = ln((−5 + 2∛(6353−405√241) + 2∛(6353+405√241))/27) ≈ 0.60935.
HM_EPSILON_STAR = math.log(
    (-5 + 2 * math.cbrt(6353 - 405 * math.sqrt(241)) + 2 * math.cbrt(6353 + 405 * math.sqrt(241))) / 27
)

# -- closed forms on [-1, 1] -------------------------------------------------


def duchi_c(epsilon: float) -> float:
    """C = (e^ε+1)/(e^ε−1) = coth(ε/2), Duchi's output magnitude."""
    return 1.0 / math.tanh(epsilon / 2.0)


def laplace_variance(epsilon: float, t: float = 0.0) -> float:
    """Var of t + Lap(2/ε): 8/ε² (any t)."""
    return 8.0 / epsilon**2


def duchi_variance(epsilon: float, t: float = 0.0) -> float:
    """Duchi's Var[y|t] = C² − t²."""
    return duchi_c(epsilon) ** 2 - t * t


def pm_variance(epsilon: float, t: float = 0.0) -> float:
    """PM's Var[y|t] = t²/(e^{ε/2}−1) + (e^{ε/2}+3)/(3(e^{ε/2}−1)²)."""
    h = math.exp(epsilon / 2.0)
    return t * t / (h - 1) + (h + 3) / (3 * (h - 1) ** 2)


def hm_alpha(epsilon: float) -> float:
    """Probability HM uses PM: 1 − e^{−ε/2} above ε*, else 0."""
    return 1.0 - math.exp(-epsilon / 2.0) if epsilon > HM_EPSILON_STAR else 0.0


def hm_variance(epsilon: float, t: float = 0.0) -> float:
    """HM's Var[y|t] = α·Var_PM + (1−α)·Var_Duchi (the mixture of two unbiased outputs)."""
    a = hm_alpha(epsilon)
    return a * pm_variance(epsilon, t) + (1 - a) * duchi_variance(epsilon, t)


def _worst(name: str, epsilon: float) -> float:
    if name == "laplace":
        return laplace_variance(epsilon)
    if name in ("duchi", "stochastic-rounding"):
        return duchi_variance(epsilon, 0.0)
    if name == "piecewise":
        return pm_variance(epsilon, 1.0)
    if name == "hybrid":
        return max(hm_variance(epsilon, 0.0), hm_variance(epsilon, 1.0))
    raise ParameterError(f"no worst-case variance for mechanism {name!r}")


def worst_case_variance(mechanism: str, epsilon: float) -> float:
    """max over t ∈ [−1, 1] of Var[y|t] (docs/mechanisms.md#hybrid, the table), native scale."""
    return _worst(mechanism, epsilon)


#: Pure-ε numeric mechanisms compared by ``auto`` (cheapest report first on ties).
NUMERIC_THEORY = ("duchi", "piecewise", "hybrid", "laplace")


def mean_lower_bound(epsilon: float, n: int, mu: float = 0.0) -> float:
    """docs/mechanisms.md#lower-bounds: any unbiased ε-LDP mean estimator has Var ≥ (coth²(ε/2) − μ²)/n (native scale)."""
    return (duchi_c(epsilon) ** 2 - mu * mu) / n


def fixed_data_mean_lower_bound(epsilon: float, t: np.ndarray) -> float:
    """The lower bound (docs/mechanisms.md#lower-bounds) on the fixed-data scale: (coth²(ε/2) − mean t²)/n for the users' native values ``t``.

    The i.i.d. line (coth²(ε/2) − μ²)/n includes the sampling variance of the
    users' own mean, Var(t)/n = (mean t² − μ²)/n; an MSE measured against
    the users' realized mean (as the simulations do) does not, so the
    comparable line subtracts it. Duchi and stochastic rounding attain it on
    every population; no ε-LDP mechanism does better on populations
    supported on ±1.
    """
    t = np.asarray(t, dtype=np.float64)
    return (duchi_c(epsilon) ** 2 - float(np.mean(t * t))) / t.size


# -- Gaussian calibration ------------------------------------------------------


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """δ of N(0, σ²) noise at ε (Balle–Wang exact condition = GDP with μ = Δ/σ)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return _phi(a - b) - math.exp(epsilon) * _phi(-a - b)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ with N(0, σ²) (ε, δ)-DP at ℓ₂ sensitivity Δ (Balle & Wang 2018), by bisection.

    References
    ----------
    .. [1] B. Balle, Y.-X. Wang. ICML 2018, Theorem 8.
    """
    if not (epsilon > 0 and 0 < delta < 1 and sensitivity > 0):
        raise ParameterError(
            f"need epsilon > 0, 0 < delta < 1, sensitivity > 0; got {epsilon}, {delta}, {sensitivity}"
        )
    lo, hi = 1e-6 * sensitivity, sensitivity
    while gaussian_delta(hi, epsilon, sensitivity) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if gaussian_delta(mid, epsilon, sensitivity) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return hi


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Dwork–Roth σ = Δ√(2 ln(1.25/δ))/ε; only valid for ε < 1 (raises otherwise)."""
    if not 0 < epsilon < 1:
        raise ParameterError(f"the classic Gaussian formula is valid only for 0 < epsilon < 1, got {epsilon}")
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


# -- grid tables -----------------------------------------------------------------

#: Weight totals stay below 2^62 (int64 in the vectorized paths).
_TOTAL_BITS = 62
#: Share of 2^62 the noise weights add up to (a margin for the rounding of the weights).
_SCALE_SHARE = Decimal("0.999")
#: 2π to 70 digits (the decimal module has no π).
_TWO_PI = Decimal("6.283185307179586476925286766559005768394338798750211641949889184615633")
#: Smallest weight kept in a noise table (relative rounding error ≤ 2^-25).
_MIN_WEIGHT = 1 << 24
#: Largest noise table (entries of its longest array: 32 MiB of int64 or float64).
MAX_TABLE_ENTRIES = 1 << 22
#: Laplace tables are built at ε minus at least this (the achieved ε must stay ≤ the claim).
LAPLACE_SLACK = 2e-7


@dataclasses.dataclass(frozen=True, eq=False)
class GridTable:
    """An exact finite mechanism on a grid of ``K + 1`` inputs t_i = −1 + 2i/K.

    Attributes
    ----------
    K : int
        Number of input grid steps.
    kind : str
        ``"rows"`` or ``"shift"`` (see module docstring).
    weights : numpy.ndarray
        int64; ``rows``: shape (K+1, L); ``shift``: shape (2M+1,), Z = −M..M.
    outputs : numpy.ndarray
        float64 native output value of each output index (length L).
    total : int
        Row total (every row sums to it).
    M : int
        ``shift`` only: half-width of the noise table.
    """

    K: int
    kind: str
    weights: np.ndarray
    outputs: np.ndarray
    total: int
    M: int = 0
    band: tuple[int, int, int] | None = None  # PM rows: (a, b, m), weight a on cells [i, i+m), b elsewhere

    @property
    def num_outputs(self) -> int:
        return int(self.outputs.size)

    @property
    def row_band(self) -> tuple[int, int, int]:
        """:attr:`band` of a banded ``rows`` table (PM's, the only kind the samplers draw rows from)."""
        if self.band is None:
            raise ValueError(f"this {self.kind} grid table has no band")
        return self.band

    def row(self, i: int) -> np.ndarray:
        """Integer weights of the outputs for grid input i (int64, length L)."""
        if self.kind == "rows":
            return self.weights[i]
        w, K = self.weights, self.K
        L = self.outputs.size  # outputs j' = 0..L-1 ↔ j = j' − B, B = M − K
        out = np.zeros(L, dtype=np.int64)
        # z = j − i, j = j' − (M − K) → index into w: z + M = j' + K − i
        start = K - i
        seg = w[start : start + L]
        out[: seg.size] = seg
        out[0] = w[: start + 1].sum()  # everything at or below the lower bin
        out[-1] = w[start + L - 1 :].sum()
        return out

    def dense(self) -> np.ndarray:
        """The full (K+1, L) integer table (small grids; for tests)."""
        if self.kind == "rows":
            return self.weights
        return np.stack([self.row(i) for i in range(self.K + 1)])

    @property
    def cumulative(self) -> np.ndarray:
        """Cumulative weights (rows: per row) for inverse-CDF sampling."""
        cached = self.__dict__.get("_cum")
        if cached is None:
            cached = np.cumsum(self.weights, axis=-1)
            object.__setattr__(self, "_cum", cached)
        return cached

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """(E[y|i], Var[y|i]) for every grid input i, native scale."""
        cached = self.__dict__.get("_moments")
        if cached is None:
            means = np.empty(self.K + 1)
            variances = np.empty(self.K + 1)
            y = self.outputs
            if self.kind == "shift":
                cached = self._shift_moments()
                object.__setattr__(self, "_moments", cached)
                return cached
            for i in range(self.K + 1):
                p = self.row(i).astype(np.float64) / self.total
                m = float(p @ y)
                means[i] = m
                variances[i] = float(p @ (y - m) ** 2)
            cached = (means, variances)
            object.__setattr__(self, "_moments", cached)
        return cached

    def _shift_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Moments of clamp(i + Z) for every i from prefix sums (O(M + K))."""
        w = self.weights.astype(np.float64) / self.total
        K, M = self.K, self.M
        L = self.outputs.size
        B = M - K
        z = np.arange(-M, M + 1, dtype=np.float64)
        c0 = np.concatenate([[0.0], np.cumsum(w)])
        c1 = np.concatenate([[0.0], np.cumsum(w * z)])
        c2 = np.concatenate([[0.0], np.cumsum(w * z * z)])
        means = np.empty(K + 1)
        variances = np.empty(K + 1)
        for i in range(K + 1):
            start = K - i  # w index of output j' = 0 (value j = −B)
            lo_mass = c0[start + 1]
            hi_mass = c0[-1] - c0[start + L - 1]
            a, b = start + 1, start + L - 1  # interior w indices [a, b)
            m0 = c0[b] - c0[a]
            # interior outputs j = i + z (grid units, relative to input i)
            e1 = (c1[b] - c1[a]) + lo_mass * (-B - i) + hi_mass * (K + B - i)
            e2 = (c2[b] - c2[a]) + lo_mass * (-B - i) ** 2 + hi_mass * (K + B - i) ** 2
            total = m0 + lo_mass + hi_mass
            mean_z = e1 / total
            means[i] = -1.0 + 2.0 * (i + mean_z) / K
            variances[i] = (e2 / total - mean_z**2) * (2.0 / K) ** 2
        return means, variances


def _check_entries(entries: float, what: str) -> None:
    """Refuse a noise table longer than :data:`MAX_TABLE_ENTRIES` before allocating it."""
    if entries > MAX_TABLE_ENTRIES:
        shown = "more than 2^63" if not entries < 2.0**63 else f"{int(entries):,}"
        raise ParameterError(
            f"{what} needs a noise table of {shown} entries, above the limit of {MAX_TABLE_ENTRIES:,}"
        )


def _check_total(total: int) -> None:
    if total >= 1 << 63:
        raise ParameterError("grid table total exceeds 2^63; use a coarser grid")  # pragma: no cover


def two_point_table(p: Fraction, C: float) -> GridTable:
    """Duchi's two-point table on inputs {−1, +1}: rows [[a, b], [b, a]], outputs (−C', +C').

    ``p`` = a/(a+b) is P[+C' | t = 1] (exact). C' = 1/(2p − 1) makes the output unbiased.
    """
    den = p.denominator
    a, b = p.numerator, den - p.numerator
    weights = np.array([[a, b], [b, a]], dtype=object)
    _check_total(den)
    return GridTable(1, "rows", weights.astype(np.int64), np.array([-C, C]), den)


def pm_table(epsilon: float, K: int) -> tuple[GridTable, Fraction]:
    """Grid Piecewise Mechanism: band of m cells with weight a, the rest b, a/b ≤ e^ε.

    Output cells j = 0..K+m−1; input i puts weight a on cells [i, i+m) and b
    elsewhere, so every row totals m·a + K·b and E[j|i] = A + B·i exactly.
    The output value y_j = −1 + (2/K)(j − A)/B is then exactly unbiased.
    m = round(K·e^{−ε/2}) mirrors PM's band (C − 1)/(C + 1) = e^{−ε/2}.
    Returns the table and the exact ratio a/b.
    """
    b = 1 << 30
    a = math.floor(exp_lower_bound(epsilon) * b)
    if a <= b:
        raise ParameterError(f"piecewise: epsilon={epsilon!r} is too small for the grid")
    m = max(1, round(K * math.exp(-epsilon / 2)))
    L = K + m
    weights = np.full((K + 1, L), b, dtype=np.int64)
    for i in range(K + 1):
        weights[i, i : i + m] = a
    total = m * a + K * b
    _check_total(total)
    A = Fraction(b * L * (L - 1), 2) + Fraction((a - b) * m * (m - 1), 2)
    A /= total
    B = Fraction((a - b) * m, total)
    outputs = np.array([float(-1 + Fraction(2, K) * (j - A) / B) for j in range(L)])
    return GridTable(K, "rows", weights, outputs, total, band=(a, b, m)), Fraction(a, b)


def _shift_table(K: int, half: np.ndarray, tail: int, M: int) -> GridTable:
    """Integer noise table from the weights of z = 0..M−1 and the tail weight of |z| ≥ M (one per side)."""
    side = np.concatenate([half[1:], np.array([tail], dtype=np.int64)])
    w = np.concatenate([side[::-1], half[:1], side]).astype(np.int64)
    total = int(w.sum())
    _check_total(total)
    B = M - K
    outputs = np.array([-1.0 + 2.0 * (j - B) / K for j in range(K + 2 * B + 1)])
    return GridTable(K, "shift", w, outputs, total, M)


def _laplace_scale(lam: float) -> float:
    """Weight of z = 0 in :func:`laplace_table` (total weight 0.999·2^62)."""
    alpha = math.exp(-lam)
    return float(1 << _TOTAL_BITS) * 0.999 * (1 - alpha) / (1 + alpha)


def laplace_half_width(epsilon: float, K: int) -> float:
    """M, the half-width in grid steps of :func:`laplace_table`'s noise: as wide as 62-bit weights ≥ 2^24 allow.

    ``inf`` where ε/K is so small that no such table exists (M decreases in ε
    wherever it is finite and at least 1).
    """
    lam = epsilon / K
    S = _laplace_scale(lam)
    if not _MIN_WEIGHT * math.e < S:  # ln(S/2^24) ≤ 1: M no longer decreases in ε; no table fits
        return math.inf
    return float(math.floor(math.log(S / _MIN_WEIGHT) / lam))


def laplace_table_entries(epsilon: float, K: int) -> float:
    """Length of the longest array of :func:`laplace_table` (the 2M + 1 noise weights)."""
    return 2 * laplace_half_width(epsilon, K) + 1


#: The ε range searched for the grid mechanisms' limits.
_EPSILON_SEARCH = (1e-12, 700.0)


def _switch_point(predicate, lo: float, hi: float) -> tuple[float, float]:
    """(a, b), adjacent doubles where a monotone predicate changes: predicate(a) == predicate(lo) != predicate(b)."""
    start = predicate(lo)
    for _ in range(200):  # geometric bisection: ~70 steps reach adjacent doubles over (1e-12, 700)
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        if predicate(mid) == start:
            lo = mid
        else:
            hi = mid
    return lo, hi


def _epsilon_range(fits, spans) -> tuple[float, float]:
    """(smallest ε with fits, largest ε with spans) over :data:`_EPSILON_SEARCH`.

    ``fits`` holds from a threshold on (the table shrinks as ε grows), ``spans`` up to one; the
    smallest is inf and the largest 0 when the predicate holds nowhere.
    """
    lo, hi = _EPSILON_SEARCH
    smallest = lo if fits(lo) else (math.inf if not fits(hi) else _switch_point(fits, lo, hi)[1])
    largest = hi if spans(hi) else (0.0 if not spans(lo) else _switch_point(spans, lo, hi)[0])
    return smallest, largest


@lru_cache(maxsize=64)
def laplace_epsilon_range(K: int) -> tuple[float, float]:
    """(smallest, largest) ε whose :func:`laplace_table` on grid K fits :data:`MAX_TABLE_ENTRIES` and spans the range.

    Below the first the noise table would be longer than the limit; above
    the second the 62-bit weights (≥ 2^24) cannot reach K + 1 grid steps, so
    the table could not hold the clamped noise of the extreme inputs. Both
    account for :data:`LAPLACE_SLACK`.
    """

    def spans(eps: float) -> bool:
        return laplace_half_width(eps - LAPLACE_SLACK, K) >= K + 1

    def fits(eps: float) -> bool:
        return laplace_table_entries(max(eps - LAPLACE_SLACK, eps / 2), K) <= MAX_TABLE_ENTRIES

    return _epsilon_range(fits, spans)


@lru_cache(maxsize=32)
def laplace_table(epsilon: float, K: int) -> GridTable:
    """Clamped discrete Laplace with P[Z=z] ∝ α^|z|, α = e^{−ε/K} (sensitivity K grid steps).

    Output j = clamp(i + Z, −B, K + B): clamping is post-processing, so the
    exact mechanism is ε-DP; the integer weights round it (the achieved ε is
    computed from them, :func:`table_privacy_ratio`). B is as large as the
    62-bit weights allow (the smallest weight is ≥ 2^24, so rounding moves
    the achieved ε by < 1e-7): the clamp bins of the extreme inputs hold a
    mass of about e^ε·2^-31, the source of a small bias (exactly computed by
    :meth:`GridTable.moments`).
    """
    half = laplace_half_width(epsilon, K)
    _check_entries(laplace_table_entries(epsilon, K), f"laplace at epsilon={epsilon!r} on grid={K}")
    if half < K + 1:
        raise ParameterError(f"laplace: grid {K} is too fine for epsilon={epsilon!r}")
    M = int(half)
    # weights from the parameters alone (ldp/fixed_exp.py): NumPy's exp differs between CPUs
    ctx = decimal_context()
    alpha_exact = ctx.exp(ctx.minus(ctx.divide(Decimal(epsilon), Decimal(K))))
    scale = ctx.divide(
        ctx.multiply(
            ctx.multiply(Decimal(1 << _TOTAL_BITS), _SCALE_SHARE), ctx.subtract(Decimal(1), alpha_exact)
        ),
        ctx.add(Decimal(1), alpha_exact),
    )
    weights = round_scaled(geometric_sequence(alpha_exact, M), scale)
    tail_mass = ctx.divide(ctx.power(alpha_exact, M), ctx.subtract(Decimal(1), alpha_exact))
    tail = int(round_scaled([fixed_point(tail_mass)], scale)[0])
    return _shift_table(K, weights, tail, M)


def _gaussian_scale(sigma_grid: float) -> float:
    """Weight of z = 0 in :func:`gaussian_table` (total weight about 0.999·2^62)."""
    return float(1 << _TOTAL_BITS) * 0.999 / (sigma_grid * math.sqrt(2 * math.pi) + 1)


def gaussian_half_width(sigma_grid: float) -> float:
    """Natural half-width M of :func:`gaussian_table`'s noise: the last z with weight S·exp(−z²/2σ²) ≥ 2^24."""
    S = _gaussian_scale(sigma_grid)
    if not S > _MIN_WEIGHT:
        return math.inf
    return float(math.floor(sigma_grid * math.sqrt(2 * math.log(S / _MIN_WEIGHT))))


def gaussian_table_entries(sigma_grid: float, K: int) -> float:
    """Length of the longest array :func:`gaussian_table` allocates (noise weights or the evaluated tail)."""
    M = max(gaussian_half_width(sigma_grid), K + 1)
    return max(2 * M + 1, M + 12 * sigma_grid + 2)


@lru_cache(maxsize=64)
def gaussian_epsilon_range(delta: float, K: int) -> tuple[float, float]:
    """(smallest, largest) ε for which the (ε, δ) discrete Gaussian table on grid K fits and spans the range.

    σ is the analytic calibration (:func:`analytic_gaussian_sigma`, ℓ₂
    sensitivity 2 on [−1, 1]), σK/2 grid steps. Below the first ε the table
    is longer than :data:`MAX_TABLE_ENTRIES`; above the second its 62-bit
    weights (≥ 2^24) end before K + 1 steps, so the noise of the extreme
    inputs could not be held (the table would be a truncated Gaussian, and
    soon one with impossible outputs).
    """

    def sigma_grid(eps: float) -> float:
        return analytic_gaussian_sigma(eps, delta, 2.0) * K / 2.0

    def spans(eps: float) -> bool:
        return gaussian_half_width(sigma_grid(eps)) >= K + 1

    def fits(eps: float) -> bool:
        return gaussian_table_entries(sigma_grid(eps), K) <= MAX_TABLE_ENTRIES

    return _epsilon_range(fits, spans)


@lru_cache(maxsize=32)
def gaussian_table(sigma_grid: float, K: int) -> GridTable:
    """Clamped discrete Gaussian, P[Z=z] ∝ exp(−z²/(2σ²)) on grid units, tails in the end bins."""
    _check_entries(
        gaussian_table_entries(sigma_grid, K), f"gaussian with sigma={sigma_grid / K * 2:.6g} on grid={K}"
    )
    # smallest kept weight S·exp(−M²/2σ²) ≥ 2^24
    M = max(int(gaussian_half_width(sigma_grid)), K + 1)
    # weights from the parameters alone (ldp/fixed_exp.py): NumPy's exp differs between CPUs
    ctx = decimal_context()
    sigma = Decimal(sigma_grid)
    scale = ctx.divide(
        ctx.multiply(Decimal(1 << _TOTAL_BITS), _SCALE_SHARE),
        ctx.add(ctx.multiply(sigma, ctx.sqrt(_TWO_PI)), Decimal(1)),
    )
    terms = gaussian_sequence(sigma, M + int(12 * sigma_grid) + 2)
    weights = round_scaled(terms[:M], scale)
    tail = int(round_scaled([sum(terms[M:])], scale)[0])
    return _shift_table(K, weights, tail, M)


def table_privacy_ratio(table: GridTable) -> Fraction:
    """max over grid inputs i, i′ and outputs j of P[j|i]/P[j|i′], exactly (a ratio of integers)."""
    if table.kind == "rows":
        w = table.weights
        hi, lo = w.max(axis=0), w.min(axis=0)
        if np.any(lo <= 0):
            raise ParameterError("grid table has an output impossible for some input: no finite epsilon")
        ratios = hi / lo
        cands = np.argsort(ratios)[-8:]
        return max(Fraction(int(hi[c]), int(lo[c])) for c in cands)
    w, K = table.weights, table.K
    if np.any(w <= 0):
        raise ParameterError("noise table has zero weights: no finite epsilon")
    inner = w[1:-1]
    c = inner.size // 2
    if inner.size > K + 1 and np.all(np.diff(inner[: c + 1]) >= 0) and np.all(np.diff(inner[c:]) <= 0):
        # unimodal (the usual case): a window's min is at one of its ends, its max at an end or the mode
        first, last = inner[: inner.size - K], inner[K:]
        starts = np.arange(first.size)
        hi = np.where((starts <= c) & (starts + K >= c), inner[c], np.maximum(first, last))
        lo = np.minimum(first, last)
    else:
        windows = np.lib.stride_tricks.sliding_window_view(inner, K + 1)
        hi, lo = windows.max(axis=1), windows.min(axis=1)
    ratios = hi / lo
    cands = np.argsort(ratios)[-8:]
    best = max(Fraction(int(hi[c]), int(lo[c])) for c in cands)
    # end bins: lower bin for input i holds w[0..K−i]; the ratio is extreme at i = 0 vs i = K
    low_bin = Fraction(int(w[: K + 1].sum()), int(w[0]))
    high_bin = Fraction(int(w[-(K + 1) :].sum()), int(w[-1]))
    return max(best, low_bin, high_bin)


def table_gaussian_delta(table: GridTable, epsilon: float) -> float:
    """δ(ε) of a shift table: max over input pairs of Σ_j (P[j|i] − e^ε P[j|i′])₊.

    For a symmetric log-concave shift family the extreme pair (0, K) is the
    worst; it is the one computed.
    """
    p = table.row(0).astype(np.float64) / table.total
    q = table.row(table.K).astype(np.float64) / table.total
    e = math.exp(epsilon)
    return float(max(np.clip(p - e * q, 0, None).sum(), np.clip(q - e * p, 0, None).sum()))


def band_inverse_cdf(i, r, a: int, b: int, m: int):
    """Output cell of a PM band row: the j with cum[j−1] ≤ r < cum[j] (works on ints and int64 arrays).

    Row i has weight b on cells [0, i), a on [i, i+m), b on [i+m, K+m).
    """
    left = i * b
    band = left + m * a
    if isinstance(r, int):
        if r < left:
            return r // b
        if r < band:
            return i + (r - left) // a
        return i + m + (r - band) // b
    if b & (b - 1) == 0:  # b = 2^s (as pm_table builds it): shifts instead of divisions
        shift = b.bit_length() - 1
        low_cells = np.where(r < left, r, r - (band - left) + m * b) >> shift  # cells outside the band
        in_band = (r >= left) & (r < band)
        if not in_band.any():
            return low_cells
        return np.where(in_band, i + (r - left) // a, low_cells)
    return np.where(r < left, r // b, np.where(r < band, i + (r - left) // a, i + m + (r - band) // b))
