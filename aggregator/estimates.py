"""Estimate tables: unbiased counts with standard errors and confidence intervals.

Pure functions from sufficient statistics to :class:`pandas.DataFrame`.

Variance convention
-------------------
Frequency-oracle tables use the **fixed-data** variance of docs/mechanisms.md#variance
(Wang et al.'s convention: the users' values are fixed, all randomness is the
mechanism's), exact for n independent reports:

    Var[f̂_v] = [f_v p*(1−p*) + (1−f_v) q*(1−q*)] / (n (p*−q*)²),

evaluated at the plug-in frequency f̂_v clipped to [0, 1]; the count's
standard error is n·√Var. To describe a population the users were sampled
from (Warner's i.i.d. convention) add f_v(1−f_v)/n; these tables do not.

RAPPOR per-bit estimates (:func:`rappor_bit_estimates`) follow docs/mechanisms.md#rappor-decoding
and google/rappor instead: Var(t_ij) = N_j r(1−r)/(q*−p*)², the binomial
variance at the plug-in rate r. It equals the fixed-data variance plus
N_j a(1−a) (a = T_ij/N_j), the i.i.d. term, which fits cohort bit counts
whose users are a random split of the population.

Confidence intervals are normal: estimate ± z·std_error with
z = Φ⁻¹(1/2 + confidence/2).

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. "Locally Differentially Private
   Protocols for Frequency Estimation". USENIX Security 2017.
.. [2] S. L. Warner. "Randomized response". JASA 60(309), 1965.
.. [3] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014;
   google/rappor analysis/R/decode.R.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ldp.aggregator.consistency import apply_consistency
from ldp.aggregator.table import ColumnTable
from ldp.errors import EstimateError, InputError, ParameterError, SpecError
from ldp.frequency_math import frequency_variance, unbiased_frequency

if TYPE_CHECKING:
    import pandas as pd

_Table = TypeVar("_Table", "pd.DataFrame", ColumnTable)

__all__ = [
    "CONSISTENT_COLUMN",
    "FREQUENCY_COLUMNS",
    "BitEstimates",
    "add_consistent_view",
    "estimate_columns",
    "estimate_table",
    "normal_quantile",
    "oracle_columns",
    "oracle_estimates",
    "rappor_bit_estimates",
]

#: Columns every frequency estimate table has, in order.
FREQUENCY_COLUMNS = ("value", "estimate", "std_error", "ci_low", "ci_high", "proportion")
#: The column of the consistent view (counts: non-negative, summing to n), after ``value``.
CONSISTENT_COLUMN = "consistent"


def normal_quantile(confidence: float) -> float:
    """z with P[|Z| ≤ z] = ``confidence`` for a standard normal Z."""
    try:
        level = float(confidence)
    except (TypeError, ValueError):
        raise ParameterError(f"confidence must be a number in (0, 1), got {confidence!r}") from None
    if not 0.0 < level < 1.0:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)  # not scipy.stats: its import alone takes ~1 s


def estimate_table(
    values: Sequence, estimate, std_error, n: int, *, confidence: float = 0.95
) -> pd.DataFrame:
    """Table of count estimates with normal confidence intervals (:func:`estimate_columns` as a DataFrame)."""
    return estimate_columns(values, estimate, std_error, n, confidence=confidence).to_frame()


def estimate_columns(
    values: Sequence, estimate, std_error, n: int, *, confidence: float = 0.95
) -> ColumnTable:
    """Table of count estimates with normal confidence intervals, built without pandas.

    Parameters
    ----------
    values : sequence
        Domain values, one row each.
    estimate, std_error : array_like
        Estimated counts (number of users) and their standard errors.
    n : int
        Number of reports; ``proportion`` = estimate / n.
    confidence : float
        Two-sided level of ``ci_low``/``ci_high``.
    """
    est = np.asarray(estimate, dtype=float)
    se = np.asarray(std_error, dtype=float)
    z = normal_quantile(confidence)
    return ColumnTable(
        {
            "value": list(values),
            "estimate": est,
            "std_error": se,
            "ci_low": est - z * se,
            "ci_high": est + z * se,
            "proportion": est / n if n else np.full(est.shape, np.nan),
        }
    )


def add_consistent_view(
    table: _Table, f_hat, n: int, method: str, null_std_errors=None, alpha: float = 0.05
) -> _Table:
    """Add the consistent view of ``f_hat`` as the column ``consistent`` (after ``value``), in place.

    The unbiased columns (``estimate``, ``std_error``, ``ci_low``, ``ci_high``,
    ``proportion``) are left as they are: a table carries both views. The
    column holds n·g(f̂) for the post-processing g named ``method``
    (:mod:`ldp.aggregator.consistency`); ``table.attrs["consistency"]`` names
    it. ``none`` adds nothing.

    Parameters
    ----------
    table : pandas.DataFrame or ColumnTable
        An estimate table whose rows are the values of ``f_hat``.
    f_hat : array_like, shape (d,)
        Unbiased frequency estimates (proportions).
    n : int
        Number of reports.
    method : str
        Consistency method, e.g. ``"norm-sub"``.
    null_std_errors, alpha
        The ``base-cut`` threshold's inputs (standard errors at f = 0, level).
    """
    key = str(method).strip().lower()
    if key == "none":
        return table
    adjusted = apply_consistency(key, f_hat, null_std_errors, alpha)
    table.insert(1, CONSISTENT_COLUMN, n * adjusted)
    table.attrs["consistency"] = key.replace("_", "-")
    return table


def oracle_estimates(
    values: Sequence,
    support_counts,
    n: int,
    p_star,
    q_star,
    *,
    confidence: float = 0.95,
    consistency: str = "none",
    alpha: float = 0.05,
    frequency=None,
) -> pd.DataFrame:
    """Unbiased frequency-oracle estimates with fixed-data standard errors (docs/mechanisms.md#variance).

    :func:`oracle_columns` as a :class:`pandas.DataFrame`; see there.
    """
    return oracle_columns(
        values,
        support_counts,
        n,
        p_star,
        q_star,
        confidence=confidence,
        consistency=consistency,
        alpha=alpha,
        frequency=frequency,
    ).to_frame()


def oracle_columns(
    values: Sequence,
    support_counts,
    n: int,
    p_star,
    q_star,
    *,
    confidence: float = 0.95,
    consistency: str = "none",
    alpha: float = 0.05,
    frequency=None,
) -> ColumnTable:
    """Unbiased frequency-oracle estimates with fixed-data standard errors, built without pandas.

    f̂_v = (C_v/n − q*)/(p* − q*); the count estimate is n·f̂_v and its
    standard error n·√Var[f̂_v] at f = clip(f̂_v, 0, 1).

    Parameters
    ----------
    values : sequence
        Domain values, in the order of ``support_counts``.
    support_counts : array_like of int
        C_v, reports supporting each value.
    n : int
        Number of reports (> 0).
    p_star, q_star : float or array_like
        Support probabilities (per value when arrays).
    confidence : float
        Level of the intervals, default 0.95.
    consistency : str
        Post-processing (:mod:`ldp.aggregator.consistency`), default
        ``"none"``. Any other method adds the column ``consistent`` (after
        ``value``): the biased, consistent counts (non-negative, summing to n
        for ``norm-sub`` and ``norm-mul``); ``estimate``, ``std_error``, the
        interval and ``proportion`` remain the unbiased estimator's (see
        :func:`add_consistent_view`).
    alpha : float
        Level of the ``base-cut`` threshold.
    frequency : array_like, optional
        The unbiased f̂ when the oracle's estimator is not
        (C_v/n − q*)/(p* − q*) (LOLOHA's, conditioned on its pool:
        :meth:`ldp.specs.loloha.LOLOHA.unbiased_frequencies`); the standard
        errors stay those of p* and q*.

    Returns
    -------
    ColumnTable
        Columns ``value, estimate, std_error, ci_low, ci_high, proportion``
        (and ``consistent`` after ``value`` unless ``consistency`` is ``none``).
    """
    counts = np.asarray(support_counts)
    if n <= 0:
        raise EstimateError("cannot estimate from zero reports")
    if counts.shape != (len(values),):
        raise InputError(f"support_counts has shape {counts.shape}, expected ({len(values)},)")
    f_hat = (
        unbiased_frequency(counts, n, p_star, q_star) if frequency is None else np.asarray(frequency, float)
    )
    variance = frequency_variance(np.clip(f_hat, 0.0, 1.0), n, p_star, q_star)
    table = estimate_columns(values, n * f_hat, n * np.sqrt(variance), n, confidence=confidence)
    if str(consistency).strip().lower() != "none":
        null_se = np.sqrt(np.broadcast_to(frequency_variance(0.0, n, p_star, q_star), f_hat.shape))
        add_consistent_view(table, f_hat, n, consistency, null_se, alpha)
    return table


@dataclasses.dataclass(frozen=True)
class BitEstimates:
    """Per-cohort, per-bit unbiased counts of true Bloom bits (docs/mechanisms.md#rappor-decoding).

    Attributes
    ----------
    estimate : ndarray, shape (m, k)
        t_ij, unbiased for T_ij (cohort-j reports whose true bit i is 1).
    variance : ndarray, shape (m, k)
        Var(t_ij) = N_j r(1−r)/(q*−p*)² at the clamped plug-in rate.
    cohort_counts : ndarray, shape (m,)
        N_j.

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.aggregator import BitEstimates
    >>> bits = BitEstimates(np.array([[3.0], [1.0]]), np.array([[0.5], [0.5]]), np.array([4]))
    >>> bits.estimate.shape, bits.cohort_counts.tolist()
    ((2, 1), [4])
    """

    estimate: np.ndarray
    variance: np.ndarray
    cohort_counts: np.ndarray

    @property
    def std_error(self) -> np.ndarray:
        return np.sqrt(self.variance)

    def to_frame(self, confidence: float = 0.95) -> pd.DataFrame:
        """Long table: ``cohort, bit, reports, estimate, std_error, ci_low, ci_high, proportion``."""
        return self.to_columns(confidence).to_frame()

    def to_columns(self, confidence: float = 0.95) -> ColumnTable:
        """:meth:`to_frame`'s table, built without pandas."""
        m, k = self.estimate.shape
        z = normal_quantile(confidence)
        est = self.estimate.ravel()
        se = self.std_error.ravel()
        reports = np.repeat(self.cohort_counts, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            proportion = np.where(reports > 0, est / np.maximum(reports, 1), np.nan)
        return ColumnTable(
            {
                "cohort": np.repeat(np.arange(m), k),
                "bit": np.tile(np.arange(k), m),
                "reports": reports,
                "estimate": est,
                "std_error": se,
                "ci_low": est - z * se,
                "ci_high": est + z * se,
                "proportion": proportion,
            }
        )


def rappor_bit_estimates(
    cohort_counts, bit_counts, prob_one_given_one: float, prob_one_given_zero: float
) -> BitEstimates:
    """t_ij = (c_ij − p*N_j)/(q* − p*) and Var(t_ij) = N_j r(1−r)/(q*−p*)² (docs/mechanisms.md#rappor-decoding).

    Here q* = P[S=1 | B=1] (``prob_one_given_one``) and p* = P[S=1 | B=0]
    (``prob_one_given_zero``); r = p* + (q*−p*)·clip(t_ij, 0, N_j)/N_j, as
    google/rappor plugs in the clamped estimate. Cohorts with no reports get
    t = 0 and variance 0.
    """
    big_n = np.asarray(cohort_counts, dtype=float)
    c = np.asarray(bit_counts, dtype=float)
    if c.ndim != 2 or big_n.shape != (c.shape[0],):
        raise InputError(f"bit_counts must be (m, k) and cohort_counts (m,), got {c.shape} and {big_n.shape}")
    one, zero = float(prob_one_given_one), float(prob_one_given_zero)
    gap = one - zero
    if gap <= 0:
        raise SpecError("P[S=1 | B=1] must exceed P[S=1 | B=0]")
    n_col = big_n[:, None]
    t = (c - zero * n_col) / gap
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n_col > 0, np.clip(t, 0.0, n_col) / np.maximum(n_col, 1.0), 0.0)
    r = zero + gap * share
    variance = n_col * r * (1.0 - r) / gap**2
    return BitEstimates(
        estimate=t, variance=variance, cohort_counts=np.asarray(cohort_counts, dtype=np.int64)
    )
