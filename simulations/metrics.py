"""Accuracy metrics of frequency estimates, their theory, and the LDP reference bound.

All errors are on the frequency scale (fractions of n users), comparing the
estimates f̂_v with the realized true frequencies f_v = n_v/n of the users
who reported: the fixed-data convention of docs/mechanisms.md#variance, in which the
expected MSE over the domain is exactly the mean of ``spec.variance(f_v, n)``.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017 (variances).
.. [2] M. Ye, A. Barg. "Optimal schemes for discrete distribution estimation
   under locally differential privacy". IEEE Trans. IT 64(8), 2018.
.. [3] J. C. Duchi, M. I. Jordan, M. J. Wainwright. "Minimax optimal
   procedures for locally private estimation". JASA 113(521), 2018.
.. [4] google/rappor, tests/compare_dist.R (detected, false positives, false
   negatives, total variation, allocated mass).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldp.errors import InputError, ParameterError

__all__ = [
    "detection_metrics",
    "error_metrics",
    "lower_bound",
    "theory_mse",
    "top_k_metrics",
]


def _pair(estimate: Any, truth: Any) -> tuple[np.ndarray, np.ndarray]:
    est = np.asarray(estimate, dtype=float)
    tru = np.asarray(truth, dtype=float)
    if est.shape != tru.shape or est.ndim != 1:
        raise InputError(
            f"estimate and truth must be 1-D of the same length, got {est.shape} and {tru.shape}"
        )
    return est, tru


def error_metrics(estimate: Any, truth: Any) -> dict[str, float]:
    """MSE, MAE, max absolute error and total variation of frequency estimates.

    Parameters
    ----------
    estimate, truth : array_like
        f̂_v and f_v over the same values (frequencies, not counts).

    Returns
    -------
    dict
        ``mse`` = mean (f̂ − f)², ``mae`` = mean |f̂ − f|, ``max_error`` =
        max |f̂ − f|, ``tv`` = ½ Σ |f̂ − f| (raw, unprojected estimates).
    """
    est, tru = _pair(estimate, truth)
    err = est - tru
    abs_err = np.abs(err)
    return {
        "mse": float(np.mean(err * err)),
        "mae": float(np.mean(abs_err)),
        "max_error": float(abs_err.max()),
        "tv": float(0.5 * abs_err.sum()),
    }


def top_k_metrics(estimate: Any, truth: Any, k: int) -> dict[str, float]:
    """Top-k precision, recall and mean relative error of the top values.

    ``E`` is the k values with the largest estimates. ``precision`` is the
    share of E whose true frequency reaches the k-th largest true frequency
    (values tied with the k-th count as top); ``recall`` is the share of the
    true top k (ties broken by domain order) that E contains.
    ``top_relative_error`` is the mean of |f̂_v − f_v|/f_v over the true top
    k with f_v > 0 (NaN if none).
    """
    est, tru = _pair(estimate, truth)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"top_k must be an integer >= 1, got {k!r}")
    k = min(int(k), est.size)
    est_top = np.argsort(-est, kind="stable")[:k]
    true_order = np.argsort(-tru, kind="stable")
    true_top = true_order[:k]
    kth = tru[true_order[k - 1]]
    precision = float(np.mean(tru[est_top] >= kth))
    recall = float(np.isin(true_top, est_top).mean())
    top = true_top[tru[true_top] > 0]
    rel = float(np.mean(np.abs(est[top] - tru[top]) / tru[top])) if top.size else math.nan
    return {"top_k_precision": precision, "top_k_recall": recall, "top_relative_error": rel}


def theory_mse(spec: Any, truth: Any, n: int) -> float:
    """Expected MSE over the domain: mean over v of ``spec.variance(f_v, n)`` (fixed-data)."""
    frequencies = np.asarray(truth, dtype=float)
    return float(np.mean(spec.variance(frequencies, n)))


def _subset_selection_support(epsilon: float, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ω = 1..d−1 and SS's p*(ω), q*(ω) (subset selection, docs/mechanisms.md#lower-bounds)."""
    e = math.exp(epsilon)
    omega = np.arange(1, d, dtype=float)
    denom = omega * e + d - omega
    p_star = omega * e / denom
    q_star = (omega * (omega - 1) * e + omega * (d - omega)) / ((d - 1) * denom)
    return omega, p_star, q_star


def lower_bound(epsilon: float, domain_size: int, n: int) -> float:
    """Reference "physical limit" of the per-value MSE (docs/mechanisms.md#lower-bounds), fixed-data scale.

    docs/mechanisms.md#lower-bounds gives the plottable line
    R*(n, d, ε) = min_ω [ω − d q*² − 2q*(p*−q*) − (p*−q*)²/d] / (n (p*−q*)²),
    the total ℓ₂² risk of subset selection (order-optimal, and asymptotically
    exactly minimax after Ye & Barg) at the worst-case uniform distribution,
    in the i.i.d. framing. This function returns it per value and without
    the sampling term Σ f_v(1 − f_v)/n = (1 − 1/d)/n, so that it is on the
    same fixed-data scale as ``mse``:
    (R* − (1 − 1/d)/n)/d. It is a reference line (tag [D]), not a bound every
    population must respect.

    Parameters
    ----------
    epsilon : float
    domain_size : int
        d ≥ 2.
    n : int
        Number of users.
    """
    d = int(domain_size)
    if d < 2:
        raise ParameterError(f"domain_size must be >= 2, got {domain_size!r}")
    if n < 1:
        raise ParameterError(f"n must be >= 1, got {n!r}")
    omega, p_star, q_star = _subset_selection_support(float(epsilon), d)
    gap = p_star - q_star
    total = (omega - d * q_star**2 - 2 * q_star * gap - gap**2 / d) / (n * gap**2)
    return float((total.min() - (1 - 1 / d) / n) / d)


def detection_metrics(detected: Any, estimate: Any, truth: Any) -> dict[str, float]:
    """RAPPOR-style detection summary over the union of true values and candidates.

    Parameters
    ----------
    detected : array_like of bool
        Whether each value was reported as detected (False for values that
        were not candidates).
    estimate, truth : array_like
        Estimated and true frequencies (estimates of undetected values count
        as 0, as google/rappor reports only detected strings).

    Returns
    -------
    dict
        ``detected`` (number), ``false_positives`` (detected, true frequency
        0), ``false_negatives`` (true frequency > 0, not detected),
        ``allocated_mass`` (sum of the detected estimates) and ``detected_tv``
        (½ Σ |f̂·detected − f|).
    """
    det = np.asarray(detected, dtype=bool)
    est, tru = _pair(estimate, truth)
    if det.shape != est.shape:
        raise InputError("detected must have one flag per value")
    present = tru > 0
    kept = np.where(det, est, 0.0)
    return {
        "detected": int(det.sum()),
        "false_positives": int((det & ~present).sum()),
        "false_negatives": int((present & ~det).sum()),
        "allocated_mass": float(kept.sum()),
        "detected_tv": float(0.5 * np.abs(kept - tru).sum()),
    }
