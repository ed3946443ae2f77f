"""Trade-off functions (f-DP): f_{ε,δ}, G_μ and exact piecewise-linear curves.

A trade-off function f(α) is the smallest type II error β of any test of
P against Q whose type I error is at most α (Dong, Roth, Su). It is convex,
continuous, non-increasing and ≤ 1 − α. A mechanism is f-DP when the curve of
every pair of inputs lies on or above f; a higher curve means more privacy.

Every curve here can be evaluated on arrays of α, converted to the (ε, δ(ε))
family through its convex conjugate, δ(ε) = 1 + f*(−e^ε) = sup_α 1 − f(α) − e^ε α,
summarized by the smallest GDP μ with G_μ ≤ f, and plotted
(:func:`ldp.privacy.plotting.plot_tradeoffs`).

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy".
   JRSS-B 84(1), 2022 (arXiv:1905.02383), Definitions 2.1, 2.4, 2.5,
   Proposition 2.12 (primal–dual), Corollary 2.13 (GDP → (ε, δ)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from ldp.privacy._numeric import check_delta_value, check_epsilon_value
from ldp.privacy.curves import PiecewiseLinearTradeoff, TradeoffFunction, _alpha_array, _scalar_or_array
from ldp.privacy.loss import PrivacyLoss

__all__ = [
    "GaussianTradeoff",
    "PiecewiseLinearTradeoff",
    "TradeoffFunction",
    "dp_tradeoff",
    "identity_tradeoff",
]


class GaussianTradeoff(TradeoffFunction):
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ): the curve of N(0,1) vs N(μ,1).

    Parameters
    ----------
    mu : float
        μ ≥ 0.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022, Definition 2.7 and
       Corollary 2.13.
    """

    def __init__(self, mu: float):
        self.mu = check_epsilon_value(mu, "mu")
        self.label = f"G_mu (mu={self.mu:.4g})"

    def __call__(self, alpha):
        a = _alpha_array(alpha)
        with np.errstate(over="ignore", invalid="ignore"):
            out = ndtr(-ndtri(a) - self.mu)
        return _scalar_or_array(out, alpha)

    def delta(self, epsilon):
        eps = np.asarray(epsilon, dtype=float)
        out = gaussian_delta(self.mu, eps)
        return _scalar_or_array(out, epsilon)

    def _epsilon_upper(self) -> float:
        return max(1.0, self.mu * (self.mu + 40.0))

    def _delta_at_infinity(self) -> float:
        return 0.0

    def pure_epsilon(self) -> float:
        """``inf`` for μ > 0: δ_μ(ε) > 0 at every finite ε (a Gaussian curve is never pure DP); 0 for μ = 0."""
        return 0.0 if self.mu == 0 else math.inf

    def gdp_mu(self) -> float:
        return self.mu

    def compose(self, other: TradeoffFunction) -> TradeoffFunction:
        """G_μ ⊗ G_ν = G_{√(μ² + ν²)}."""
        if isinstance(other, GaussianTradeoff):
            return GaussianTradeoff(math.hypot(self.mu, other.mu))
        return super().compose(other)

    def __repr__(self) -> str:
        return f"GaussianTradeoff(mu={self.mu!r})"


def gaussian_delta(mu: float, epsilon):
    """δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), in log space (any ε, μ ≥ 0)."""
    eps = np.asarray(epsilon, dtype=float)
    if mu == 0:
        return np.where(eps >= 0, 0.0, -np.expm1(np.minimum(eps, 0.0)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_a = log_ndtr(-eps / mu + mu / 2)
        log_b = eps + log_ndtr(-eps / mu - mu / 2)
        out = np.exp(log_a) * -np.expm1(np.minimum(log_b - log_a, 0.0))
    # Φ(−ε/μ + μ/2) underflows to 0 for huge ε/μ: then δ(ε) = 0 (not 0·NaN)
    return np.where(np.isneginf(log_a), 0.0, np.maximum(out, 0.0))


def dp_tradeoff(epsilon: float, delta: float = 0.0) -> PiecewiseLinearTradeoff:
    """f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}.

    (ε, δ)-DP is equivalent to f_{ε,δ}-DP; f_{ε,0} is the curve of ε-randomized
    response.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022, Proposition 2.5.
    .. [2] P. Kairouz, S. Oh, P. Viswanath. "The composition theorem for
       differential privacy". ICML 2015.
    """
    eps = check_epsilon_value(epsilon)
    dl = check_delta_value(delta)
    log_keep = math.log1p(-dl)
    log_kink = log_keep - float(np.logaddexp(0.0, eps))  # (1 − δ)/(1 + e^ε)
    # 1 − β at the kink: 1 − (1−δ)/(1+e^ε) = (δ + e^ε)/(1 + e^ε)
    log_power_kink = float(np.logaddexp(math.log(dl) if dl > 0 else -np.inf, eps) - np.logaddexp(0.0, eps))
    log_alpha = [-np.inf, log_kink, log_keep, 0.0]
    log_beta = [log_keep, log_kink, -np.inf, -np.inf]
    log_power = [math.log(dl) if dl > 0 else -np.inf, log_power_kink, 0.0, 0.0]
    out = PiecewiseLinearTradeoff(log_alpha, log_beta, log_power, label=f"f_(eps={eps:.4g}, delta={dl:.3g})")
    if dl == 0:
        out.privacy_loss = PrivacyLoss.randomized_response(eps)
    return out


def identity_tradeoff() -> PiecewiseLinearTradeoff:
    """Id(α) = 1 − α: perfect privacy."""
    return PiecewiseLinearTradeoff([-np.inf, 0.0], [0.0, -np.inf], [-np.inf, 0.0], label="Id")
