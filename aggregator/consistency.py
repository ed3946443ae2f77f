"""Consistency post-processing of frequency estimates (docs/mechanisms.md#consistency).

The unbiased estimates f̂ of a frequency oracle can be negative and need not
sum to 1. These pure functions map f̂ (proportions, one per domain value) to
estimates that respect the constraints of a distribution.

**Trade-off.** Every method except ``none`` makes the estimates *biased*
(typically pulling small frequencies up from below zero and large ones
down) in exchange for lower total error (MSE) on most populations. Standard
errors and confidence intervals computed for the unbiased estimator no longer
describe the post-processed values; that is why post-processing is off by
default.

=============  ===============================================================
``none``       f̂ unchanged (unbiased)
``clip``       Base-Pos, then cap at 1: clip(f̂, 0, 1)
``base-cut``   zero every f̂_v below T = σ_v·Φ⁻¹(1 − α/d); keep the rest
``norm-mul``   clip negatives to 0, then scale so the sum is 1
``norm-sub``   max(f̂_v + δ, 0) with δ chosen so the sum is 1: the Euclidean
               projection of f̂ onto the probability simplex
=============  ===============================================================

References
----------
.. [1] T. Wang, M. Lopuhaä-Zwakenberg, Z. Li, B. Škorić, N. Li. "Locally
   Differentially Private Frequency Estimation with Consistency". NDSS 2020.
.. [2] W. Wang, M. Á. Carreira-Perpiñán. "Projection onto the probability
   simplex: an efficient algorithm with a simple proof, and an application".
   arXiv:1309.1541, 2013.
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from ldp.errors import InputError, ParameterError

__all__ = [
    "CONSISTENCY_METHODS",
    "apply_consistency",
    "base_cut",
    "base_cut_threshold",
    "clip",
    "no_consistency",
    "norm_mul",
    "norm_sub",
    "norm_sub_shift",
]


def _as_vector(frequencies) -> np.ndarray:
    f = np.asarray(frequencies, dtype=float)
    if f.ndim != 1 or f.size == 0:
        raise InputError(f"frequencies must be a non-empty 1-D array, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise InputError("frequencies must be finite")
    return f


def no_consistency(frequencies) -> np.ndarray:
    """The unbiased estimates, unchanged (a copy)."""
    return _as_vector(frequencies).copy()


def clip(frequencies) -> np.ndarray:
    """Base-Pos capped at 1: each estimate clipped to [0, 1] (biased)."""
    return np.clip(_as_vector(frequencies), 0.0, 1.0)


def base_cut_threshold(std_errors, alpha: float = 0.05) -> np.ndarray:
    """Base-Cut threshold T_v = σ_v·Φ⁻¹(1 − α/d) (Bonferroni over the d values).

    Parameters
    ----------
    std_errors : array_like
        σ_v, the standard error of each f̂_v under the null f_v = 0 (or a
        scalar shared by all values).
    alpha : float
        Family-wise false-positive rate, default 0.05.
    """
    if not 0 < alpha < 1:
        raise ParameterError(f"alpha must be in (0, 1), got {alpha!r}")
    sigma = np.asarray(std_errors, dtype=float)
    d = sigma.size
    # the upper alpha/d quantile, as -inv_cdf (exact for tiny alpha); not scipy.stats, whose import takes ~1 s
    return sigma * -NormalDist().inv_cdf(alpha / d)


def base_cut(frequencies, std_errors, alpha: float = 0.05) -> np.ndarray:
    """Base-Cut: zero every estimate below its significance threshold, keep the rest (biased).

    Parameters
    ----------
    frequencies : array_like, shape (d,)
        Unbiased estimates f̂.
    std_errors : float or array_like, shape (d,)
        Standard error of f̂_v under f_v = 0 (docs/mechanisms.md#variance: √(Var*/n)).
    alpha : float
        Family-wise level of the threshold, Φ⁻¹(1 − α/d).
    """
    f = _as_vector(frequencies)
    sigma = np.broadcast_to(np.asarray(std_errors, dtype=float), f.shape)
    threshold = base_cut_threshold(sigma, alpha)
    return np.where(f >= threshold, f, 0.0)


def norm_mul(frequencies) -> np.ndarray:
    """Norm-Mul: clip negatives to 0, then rescale to sum 1 (uniform if nothing is positive)."""
    f = np.maximum(_as_vector(frequencies), 0.0)
    total = f.sum()
    if total <= 0:
        return np.full(f.shape, 1.0 / f.size)
    return f / total


def norm_sub_shift(frequencies) -> float:
    """Norm-Sub's common shift δ: Σ_v max(f̂_v + δ, 0) = 1 (:func:`norm_sub`).

    By the sort-based algorithm: with u = f̂ sorted in decreasing order and ρ
    the largest j such that u_j + (1 − Σ_{i≤j} u_i)/j > 0,
    δ = (1 − Σ_{i≤ρ} u_i)/ρ.
    """
    f = _as_vector(frequencies)
    u = np.sort(f)[::-1]
    cumulative = np.cumsum(u)
    j = np.arange(1, f.size + 1)
    positive = u + (1.0 - cumulative) / j > 0
    rho = int(np.flatnonzero(positive)[-1]) + 1  # j = 1 always qualifies
    return float((1.0 - cumulative[rho - 1]) / rho)


def norm_sub(frequencies) -> np.ndarray:
    """Norm-Sub: the Euclidean projection of f̂ onto the probability simplex.

    max(f̂_v + δ, 0) with δ = :func:`norm_sub_shift` (f̂), so that the sum is 1.
    The result is argmin ‖x − f̂‖₂ over {x ≥ 0, Σx = 1}.
    """
    f = _as_vector(frequencies)
    return np.maximum(f + norm_sub_shift(f), 0.0)


#: Method name → function of (frequencies, null standard errors, alpha).
CONSISTENCY_METHODS: dict[str, Callable[..., np.ndarray]] = {
    "none": lambda f, sigma, alpha: no_consistency(f),
    "clip": lambda f, sigma, alpha: clip(f),
    "base-cut": base_cut,
    "norm-mul": lambda f, sigma, alpha: norm_mul(f),
    "norm-sub": lambda f, sigma, alpha: norm_sub(f),
}


def apply_consistency(method: str, frequencies, null_std_errors=None, alpha: float = 0.05) -> np.ndarray:
    """Apply the consistency method named ``method`` (see the module table).

    Parameters
    ----------
    method : {"none", "clip", "base-cut", "norm-mul", "norm-sub"}
    frequencies : array_like, shape (d,)
        Unbiased estimates (proportions).
    null_std_errors : float or array_like, optional
        Needed by ``base-cut``: standard error of f̂_v when f_v = 0.
    alpha : float
        Level of ``base-cut``.

    Examples
    --------
    >>> from ldp.aggregator import apply_consistency
    >>> apply_consistency("norm-sub", [0.5, 0.6, -0.1]).round(12).tolist()  # non-negative, summing to 1
    [0.45, 0.55, 0.0]
    """
    key = str(method).strip().lower().replace("_", "-")
    if key not in CONSISTENCY_METHODS:
        raise ParameterError(
            f"unknown consistency method {method!r}; choose one of {', '.join(CONSISTENCY_METHODS)}"
        )
    if key == "base-cut" and null_std_errors is None:
        raise ParameterError("consistency 'base-cut' needs the null standard errors of the estimates")
    return CONSISTENCY_METHODS[key](frequencies, null_std_errors, alpha)
