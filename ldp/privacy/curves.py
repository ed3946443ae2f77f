"""Trade-off functions: the base class and exact piecewise-linear curves.

:class:`TradeoffFunction` is what every curve provides (evaluation on α, the
(ε, δ(ε)) family through the convex conjugate, GDP μ, composition, plots);
:class:`PiecewiseLinearTradeoff` is the exact curve of a pair of discrete
distributions. Both are re-exported by :mod:`ldp.privacy.tradeoff`, which
documents them. This module imports neither :mod:`ldp.privacy.loss` nor
:mod:`ldp.privacy.tradeoff`: the privacy-loss pairs build their curves with
it, and :mod:`ldp.privacy.tradeoff` builds on both.

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy".
   JRSS-B 84(1), 2022 (arXiv:1905.02383), Definitions 2.1, 2.4, 2.5,
   Proposition 2.12 (primal–dual), Corollary 2.13 (GDP → (ε, δ)).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtri_exp

from ldp.errors import AccountingError
from ldp.privacy._numeric import at_or_above_root, check_delta_value, log1mexp

__all__ = ["PiecewiseLinearTradeoff", "TradeoffFunction"]

_EDGE = 1e-9


def _alpha_array(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise AccountingError("alpha (type I error) must lie in [0, 1]")
    return a


def _scalar_or_array(value: np.ndarray, like) -> float | np.ndarray:
    return float(value) if np.ndim(like) == 0 else value


class _ExactPair(Protocol):
    """What a curve keeps of the exact pair it came from (:class:`ldp.privacy.loss.PrivacyLoss`)."""

    @property
    def tail(self) -> float: ...

    @property
    def pure_epsilon(self) -> float: ...

    def gdp_mu(self) -> float: ...

    def compose(self, other: Any) -> _ExactPair: ...

    def tradeoff(self) -> PiecewiseLinearTradeoff: ...


class TradeoffFunction:
    """Base class: a trade-off function f: [0, 1] → [0, 1]."""

    label: str = "f"

    def __call__(self, alpha):
        """β = f(α), elementwise."""
        raise NotImplementedError

    def delta(self, epsilon):
        """δ(ε) = 1 + f*(−e^ε): f-DP implies (ε, δ(ε))-DP for every ε."""
        raise NotImplementedError

    def _epsilon_upper(self) -> float:
        return 50.0

    def _delta_at_infinity(self) -> float:
        """lim δ(ε) as ε → ∞, i.e. 1 − f(0)."""
        return float(1.0 - self(0.0))

    def epsilon(self, delta: float) -> float:
        """Smallest ε ≥ 0 with δ(ε) ≤ ``delta``; ``inf`` when none exists.

        At δ = 0 this is :meth:`pure_epsilon`, computed exactly (never a search bound).
        """
        delta = check_delta_value(delta)
        if delta == 0:
            return self.pure_epsilon()
        self._check_resolution(delta)
        if self._delta_at_infinity() > delta:
            return math.inf
        if self.delta(0.0) <= delta:
            return 0.0
        hi = self._epsilon_upper()
        if not math.isfinite(hi):  # e.g. μ beyond the double range: no finite bracket
            return math.inf
        while self.delta(hi) > delta:
            hi *= 2
            if not math.isfinite(hi):  # ε beyond the double range (e.g. μ ~ 1e160), never a search cap
                return math.inf
        root = float(brentq(lambda e: self.delta(e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12, maxiter=500))
        return at_or_above_root(lambda e: self.delta(e) - delta, root, hi)

    def pure_epsilon(self) -> float:
        """Smallest ε with δ(ε) = 0 (f ≥ f_{ε,0}: pure ε-DP); ``inf`` when the curve is not pure DP for any ε."""
        raise NotImplementedError

    def _check_resolution(self, delta: float) -> None:
        """Refuse a δ below what the curve resolves (a pair kept in windows); nothing for exact curves."""

    def gdp_mu(self) -> float:
        """Smallest μ with G_μ ≤ f (f is μ-GDP); ``inf`` when no μ works."""
        raise NotImplementedError

    def compose(self, other: TradeoffFunction) -> TradeoffFunction:
        """f ⊗ g, where a closed form or an exact privacy-loss form exists."""
        raise AccountingError(
            f"composition of {type(self).__name__} and {type(other).__name__} is not available"
        )

    def plot(self, ax=None, **kwargs):
        """Draw the curve on a matplotlib axes (imports matplotlib lazily)."""
        from ldp.privacy.plotting import plot_tradeoffs

        return plot_tradeoffs({kwargs.pop("label", self.label): self}, ax=ax, **kwargs)


class PiecewiseLinearTradeoff(TradeoffFunction):
    """A convex piecewise-linear trade-off curve given by its vertices.

    The exact curve of any pair of discrete distributions has this form
    (Neyman–Pearson): see :meth:`ldp.privacy.loss.PrivacyLoss.tradeoff`.
    Vertex coordinates are kept as logarithms too (α, β and 1 − β), so δ(ε)
    and μ are accurate in the far tails.

    Parameters
    ----------
    log_alpha, log_beta, log_power : array_like
        ln α_j, ln β_j and ln(1 − β_j) of the vertices, α ascending, from
        α = 0 to β = 0.
    privacy_loss : PrivacyLoss, optional
        The exact pair the curve came from (enables exact composition).
    label : str

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022, §2.
    """

    def __init__(
        self, log_alpha, log_beta, log_power, *, privacy_loss: _ExactPair | None = None, label: str = "exact"
    ):
        self.log_alpha = np.asarray(log_alpha, dtype=float)
        self.log_beta = np.asarray(log_beta, dtype=float)
        self.log_power = np.asarray(log_power, dtype=float)
        if any(
            np.any(np.isnan(a)) or np.any(a == np.inf)
            for a in (self.log_alpha, self.log_beta, self.log_power)
        ):
            # a NaN vertex would fold into δ = 0 or μ = inf downstream: refuse it here, whatever produced it
            raise AccountingError(
                f"trade-off curve {label!r}: a vertex is not a finite probability (numerical failure)"
            )
        self.alpha = np.minimum(np.exp(self.log_alpha), 1.0)
        self.beta = np.minimum(np.exp(self.log_beta), 1.0)
        if self.alpha.size < 2 or np.any(np.diff(self.alpha) < -1e-12) or np.any(np.diff(self.beta) > 1e-12):
            raise AccountingError("trade-off vertices must have alpha non-decreasing and beta non-increasing")
        if self.alpha[-1] < 1.0 - 1e-9:
            # extend along β = 0 to α = 1
            self.log_alpha = np.r_[self.log_alpha, 0.0]
            self.log_beta = np.r_[self.log_beta, -np.inf]
            self.log_power = np.r_[self.log_power, 0.0]
            self.alpha = np.r_[self.alpha, 1.0]
            self.beta = np.r_[self.beta, 0.0]
        self.privacy_loss = privacy_loss
        self.label = label

    # -- constructors ----------------------------------------------------
    @classmethod
    def from_vertices(cls, alpha, beta, *, label: str = "piecewise") -> PiecewiseLinearTradeoff:
        """From linear vertex coordinates (α ascending, β descending)."""
        a = np.asarray(alpha, dtype=float)
        b = np.asarray(beta, dtype=float)
        if a.shape != b.shape or a.ndim != 1:
            raise AccountingError("alpha and beta must be 1-D arrays of the same length")
        if np.any((a < 0) | (a > 1) | (b < 0) | (b > 1)):
            raise AccountingError("trade-off vertices must lie in [0, 1]^2")
        if a[0] != 0:
            a, b = np.r_[0.0, a], np.r_[b[0], b]
        with np.errstate(divide="ignore"):
            return cls(np.log(a), np.log(b), np.log1p(-b), label=label)

    @classmethod
    def from_masses(
        cls, log_p, log_q, *, privacy_loss: _ExactPair | None = None, label: str = "exact"
    ) -> PiecewiseLinearTradeoff:
        """T(P, Q) from atoms sorted by likelihood ratio Q/P descending (loss ascending)."""
        log_p = np.asarray(log_p, dtype=float)
        log_q = np.asarray(log_q, dtype=float)
        # normalize so the cumulative sums end exactly at 1 (rounding drifts over many atoms)
        cum_p = np.logaddexp.accumulate(log_p)
        cum_q = np.logaddexp.accumulate(log_q)
        tail_q = np.logaddexp.accumulate(log_q[::-1])[::-1]
        log_alpha = np.r_[-np.inf, cum_p - cum_p[-1]]
        log_power = np.r_[-np.inf, cum_q - cum_q[-1]]
        log_beta = np.r_[tail_q - tail_q[0], -np.inf]
        return cls(
            np.minimum(log_alpha, 0.0),
            np.minimum(log_beta, 0.0),
            np.minimum(log_power, 0.0),
            privacy_loss=privacy_loss,
            label=label,
        )

    @classmethod
    def from_tangent_lines(cls, epsilons, deltas, *, label: str = "envelope") -> PiecewiseLinearTradeoff:
        """The largest curve below every line β = 1 − δ_j − e^{ε_j} α (and ≥ 0).

        If each δ_j is (an upper bound of) the curve's δ(ε_j), the result is a
        valid trade-off function lying below the true curve and touching it at
        each ε_j.
        """
        eps = np.asarray(epsilons, dtype=float)
        dl = np.asarray(deltas, dtype=float)
        order = np.argsort(-eps)  # steepest first: these dominate at small α
        slopes = np.r_[-np.exp(eps[order]), 0.0]
        icepts = np.r_[1.0 - dl[order], 0.0]
        hull: list[int] = []
        for j in range(slopes.size):
            if hull and slopes[hull[-1]] == slopes[j]:
                if icepts[hull[-1]] >= icepts[j]:
                    continue
                hull.pop()
            while len(hull) >= 2:
                i1, i2 = hull[-2], hull[-1]
                # i2 never attains the max if the i1–j crossing is left of the i1–i2 crossing
                left = (icepts[j] - icepts[i1]) * (slopes[i2] - slopes[i1])
                right = (icepts[i2] - icepts[i1]) * (slopes[j] - slopes[i1])
                if left >= right:
                    hull.pop()
                else:
                    break
            hull.append(j)
        m = slopes[hull]
        b = icepts[hull]
        xs = (b[:-1] - b[1:]) / (m[1:] - m[:-1])
        xs = np.clip(np.r_[0.0, xs, 1.0], 0.0, 1.0)
        xs = np.unique(xs)
        ys = np.clip(np.max(b[:, None] + m[:, None] * xs[None, :], axis=0), 0.0, 1.0)
        ys = np.minimum(ys, 1.0 - xs)
        ys = np.minimum.accumulate(ys)
        return cls.from_vertices(xs, ys, label=label)

    # -- evaluation ------------------------------------------------------
    def __call__(self, alpha):
        a = _alpha_array(alpha)
        return _scalar_or_array(np.interp(a, self.alpha, self.beta), alpha)

    def delta(self, epsilon):
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        la, lp = self.log_alpha, self.log_power
        with np.errstate(invalid="ignore", divide="ignore"):
            x = eps[:, None] + la[None, :] - lp[None, :]
            x = np.where(np.isnan(x), np.inf, x)
            terms = np.where(x < 0, lp[None, :] + log1mexp(np.minimum(x, 0.0)), -np.inf)
        out = np.exp(np.max(terms, axis=1))
        return float(out[0]) if np.ndim(epsilon) == 0 else out

    def _check_resolution(self, delta: float) -> None:
        if self.privacy_loss is not None and self.privacy_loss.tail > 0:
            from ldp.privacy.loss import check_delta_resolution

            check_delta_resolution(delta, self.privacy_loss.tail)

    def _epsilon_upper(self) -> float:
        mask = np.isfinite(self.log_alpha) & np.isfinite(self.log_power)
        if not np.any(mask):
            return 1.0
        return max(1.0, float(np.max(self.log_power[mask] - self.log_alpha[mask])) + 1.0)

    def _delta_at_infinity(self) -> float:
        zero = self.log_alpha == -np.inf
        return float(np.max(np.exp(self.log_power[zero]))) if np.any(zero) else 0.0

    def pure_epsilon(self) -> float:
        """max over vertices of ln((1 − β_j)/α_j), the steepest chord from (0, 1): δ(ε) = 0 exactly from there on.

        ``inf`` when the curve leaves (0, 1) with a jump (δ(ε) ≥ 1 − f(0) > 0 for every ε).
        For a pair kept in windows (mass left out), the pair's largest loss.
        """
        if self.privacy_loss is not None and self.privacy_loss.tail > 0:
            return self.privacy_loss.pure_epsilon
        if self._delta_at_infinity() > 0:
            return math.inf
        live = np.isfinite(self.log_alpha) & np.isfinite(self.log_power)
        if not np.any(live):
            return 0.0
        la, lp = self.log_alpha[live], self.log_power[live]
        eps = max(0.0, float(np.max(lp - la)))
        while np.any(eps + la - lp < 0):  # rounding: step to where delta() itself gives exactly 0
            eps = math.nextafter(eps, math.inf)
        return eps

    def gdp_mu(self) -> float:
        """max over vertices of Φ⁻¹(1 − α_j) − Φ⁻¹(β_j): G_μ is convex, so vertices suffice.

        For a pair kept in windows the extreme vertices are not held: its
        sound μ from composition (:meth:`ldp.privacy.loss.PrivacyLoss.gdp_mu`).
        """
        if self.privacy_loss is not None and self.privacy_loss.tail > 0:
            return self.privacy_loss.gdp_mu()
        a, b = self.alpha, self.beta
        trivial = ((a <= _EDGE) & (b >= 1 - _EDGE)) | ((a >= 1 - _EDGE) & (b <= _EDGE))
        la, lb = self.log_alpha[~trivial], self.log_beta[~trivial]
        if la.size == 0:
            return 0.0
        with np.errstate(invalid="ignore"):
            mus = -ndtri_exp(la) - ndtri_exp(lb)
        mus = np.where(np.isnan(mus), np.inf, mus)
        return float(max(0.0, np.max(mus)))

    def compose(self, other: TradeoffFunction) -> TradeoffFunction:
        """Exact f ⊗ g when both curves came from exact privacy-loss pairs."""
        if (
            isinstance(other, PiecewiseLinearTradeoff)
            and self.privacy_loss is not None
            and other.privacy_loss is not None
        ):
            return self.privacy_loss.compose(other.privacy_loss).tradeoff()
        return super().compose(other)

    def __repr__(self) -> str:
        return f"PiecewiseLinearTradeoff(vertices={self.alpha.size}, label={self.label!r})"
