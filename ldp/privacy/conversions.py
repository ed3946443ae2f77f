"""Conversions between μ-GDP, (ε, δ)-DP and trade-off functions (docs/accounting.md#conversions).

- μ-GDP ⇔ (ε, δ_μ(ε))-DP for all ε ≥ 0 (:func:`gdp_delta`, :func:`gdp_epsilon`,
  and back: :func:`gdp_mu`, the largest μ whose δ_μ(ε) stays within δ);
- ε-DP ⇒ μ_ε-GDP with μ_ε = 2Φ⁻¹(e^ε/(1+e^ε)) (:func:`dp_to_gdp_mu`; sound and
  tight, binding at the kink α = 1/(1+e^ε));
- f-DP ⇒ (ε, 1 + f*(−e^ε))-DP (:func:`tradeoff_delta`, :func:`tradeoff_epsilon`).

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy". JRSS-B
   84(1), 2022, Proposition 2.12 and Corollary 2.13.
.. [2] B. Balle, Y.-X. Wang. "Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising".
   ICML 2018 (the same δ(ε) curve, for the Gaussian mechanism).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtri_exp

from ldp.errors import AccountingError
from ldp.privacy._numeric import check_delta_value, check_epsilon_value
from ldp.privacy.tradeoff import GaussianTradeoff, TradeoffFunction, gaussian_delta

__all__ = [
    "dp_to_gdp_mu",
    "gaussian_sigma",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "tradeoff_delta",
    "tradeoff_epsilon",
    "tradeoff_gdp_mu",
]


def gdp_delta(mu: float, epsilon):
    """δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) of μ-GDP (scalar or array ε)."""
    mu = check_epsilon_value(mu, "mu")
    out = gaussian_delta(mu, np.asarray(epsilon, dtype=float))
    return float(out) if np.ndim(epsilon) == 0 else out


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε ≥ 0 with δ_μ(ε) ≤ δ (μ-GDP ⇒ (ε, δ)-DP)."""
    return GaussianTradeoff(mu).epsilon(delta)


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest μ with δ_μ(ε) ≤ δ: every μ-GDP mechanism with this μ is (ε, δ)-DP."""
    eps = check_epsilon_value(epsilon)
    delta = check_delta_value(delta, allow_zero=False)

    def gap(mu: float) -> float:
        return float(gaussian_delta(mu, np.asarray(eps))) - delta

    # δ_μ(ε) rises to 1 as μ grows, so a bracket exists for every finite ε (μ about √(2ε) at most);
    # a fixed cap here answered "mu <= inf" for ε ≥ ~5e11, claiming every mechanism qualifies
    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
        if not math.isfinite(hi):  # pragma: no cover - unreachable for a finite ε
            raise AccountingError(f"no largest mu found for epsilon = {eps!r}, delta = {delta!r}")
    return float(brentq(gap, 0.0, hi, xtol=1e-13, rtol=1e-13))


def dp_to_gdp_mu(epsilon: float) -> float:
    """μ_ε = 2Φ⁻¹(e^ε/(1+e^ε)): the smallest μ with G_μ ≤ f_{ε,0} (log space, any ε)."""
    eps = check_epsilon_value(epsilon)
    # Φ⁻¹(e^ε/(1+e^ε)) = −Φ⁻¹(1/(1+e^ε)), and log 1/(1+e^ε) = −log(1+e^ε)
    return max(0.0, float(-2.0 * ndtri_exp(-np.logaddexp(0.0, eps))))  # never "-0" at ε ≈ 0


def tradeoff_delta(curve: TradeoffFunction, epsilon):
    """δ(ε) = 1 + f*(−e^ε) of a trade-off function."""
    return curve.delta(epsilon)


def tradeoff_epsilon(curve: TradeoffFunction, delta: float) -> float:
    """Smallest ε ≥ 0 with 1 + f*(−e^ε) ≤ δ."""
    return curve.epsilon(delta)


def tradeoff_gdp_mu(curve: TradeoffFunction) -> float:
    """Smallest μ such that the curve is μ-GDP (G_μ ≤ f)."""
    return curve.gdp_mu()


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest σ for which the Gaussian mechanism N(0, σ²) is (ε, δ)-DP (analytic calibration).

    The mechanism is (Δ/σ)-GDP, so σ = Δ / :func:`gdp_mu`(ε, δ).

    References
    ----------
    .. [1] B. Balle, Y.-X. Wang. ICML 2018, Theorem 8 (analytic Gaussian mechanism).
    """
    sens = check_epsilon_value(sensitivity, "sensitivity", allow_zero=False)
    return sens / gdp_mu(epsilon, delta)
