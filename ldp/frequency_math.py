"""Pure math of pure frequency oracles (docs/mechanisms.md#pure-frequency-oracle).

A pure frequency oracle is described by two probabilities: ``p_star``, the
chance that a report supports v when the user's value is v, and ``q_star``,
the chance when it is not. Everything else (estimator, variance, Var*)
follows from those two numbers.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. "Locally Differentially Private
   Protocols for Frequency Estimation". USENIX Security 2017.
"""

from __future__ import annotations

import numpy as np

__all__ = ["frequency_variance", "unbiased_frequency", "variance_star"]


def unbiased_frequency(support_counts, n, p_star: float, q_star: float):
    """f̂_v = (C_v/n − q*)/(p* − q*), elementwise.

    Parameters
    ----------
    support_counts : array_like
        C_v, the number of reports supporting each value.
    n : int
        Number of reports.
    p_star, q_star : float
        Support probabilities of the oracle (p* > q*).
    """
    counts = np.asarray(support_counts, dtype=float)
    return (counts / n - q_star) / (p_star - q_star)


def frequency_variance(frequency, n, p_star: float, q_star: float):
    """Fixed-data variance of f̂_v (docs/mechanisms.md#variance), elementwise.

    Var[f̂_v] = [f p*(1−p*) + (1−f) q*(1−q*)] / (n (p*−q*)²).
    Multiply by n² for the variance of the estimated count.
    """
    f = np.asarray(frequency, dtype=float)
    return (f * p_star * (1 - p_star) + (1 - f) * q_star * (1 - q_star)) / (n * (p_star - q_star) ** 2)


def variance_star(p_star: float, q_star: float) -> float:
    """Var* = n·Var at f → 0, that is q*(1−q*)/(p*−q*)²."""
    return q_star * (1 - q_star) / (p_star - q_star) ** 2
