"""Bloom-filter RAPPOR decoding, steps 2-4: the weighted regression, the LASSO screen and the refit.

``y_ij = t_ij / N_j`` (a proportion, as google/rappor) is modelled as
``y = β₀ + X·β + noise`` with ``β ≥ 0`` the candidates' proportions and
``β₀ ≥ 0`` a background term for the values outside the list, rows weighted
by the inverse bit variances. When candidates outnumber 0.8 × the
informative bits, a non-negative weighted LASSO with the universal penalty
``λ_s = √(2 ln M)·‖x_s‖_W`` selects the columns; the selected columns and the
background are then refit by non-negative weighted least squares, once more
with the variances recomputed from the fitted values
(docs/mechanisms.md#rappor-decoding).

References
----------
.. [1] google/rappor, analysis/R/decode.R (FitLasso, Decode).
.. [2] D. L. Donoho, I. M. Johnstone. "Ideal spatial adaptation by wavelet
   shrinkage". Biometrika 81(3), 1994 (universal threshold).
.. [3] R. Tibshirani. "Regression shrinkage and selection via the lasso".
   JRSS B 58(1), 1996.
.. [4] P. McCullagh, J. A. Nelder. *Generalized Linear Models*, 2nd ed., 1989
   (quasi-likelihood weights).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse

from ldp.aggregator.nonneg_solvers import nnls_weighted, nonneg_lasso
from ldp.aggregator.rappor_counts import RapporShape

__all__ = [
    "SCREEN_RATIO",
    "Refit",
    "Regression",
    "background_design",
    "refit",
    "regression",
    "screen_columns",
]

#: google/rappor screens with the LASSO when M > 0.8 × (informative bits).
SCREEN_RATIO = 0.8


@dataclasses.dataclass(frozen=True)
class Regression:
    """The weighted regression rows: one per bit of every cohort with reports.

    Attributes
    ----------
    live : numpy.ndarray
        (m·k,) bool, the rows ``j·k + i`` of cohorts with reports.
    n_rows : numpy.ndarray
        N_j of each live row, float64.
    y : numpy.ndarray
        ``t_ij / N_j`` of each live row.
    w : numpy.ndarray
        Plug-in weights ``1 / Var(y)`` (floored to stay finite).
    """

    live: np.ndarray
    n_rows: np.ndarray
    y: np.ndarray
    w: np.ndarray

    @property
    def num_rows(self) -> int:
        """Number of live rows (the informative bits)."""
        return int(self.live.sum())


@dataclasses.dataclass(frozen=True)
class Refit:
    """The non-negative refit on the selected columns.

    Attributes
    ----------
    columns : numpy.ndarray
        Columns of the background design refit: 0 (the background) then the
        selected candidates' ``s + 1``.
    design : scipy.sparse.csc_matrix
        Those columns of the background design.
    beta : numpy.ndarray
        Non-negative coefficients of ``columns``.
    fitted : numpy.ndarray
        Fitted proportions of the live rows.
    w : numpy.ndarray
        Quasi-likelihood weights from the first refit's fitted values.
    """

    columns: np.ndarray
    design: scipy.sparse.csc_matrix
    beta: np.ndarray
    fitted: np.ndarray
    w: np.ndarray

    def coefficients(self, num_columns: int) -> np.ndarray:
        """β of all ``num_columns`` columns of the background design (0 where not refit)."""
        beta = np.zeros(num_columns)
        beta[self.columns] = self.beta
        return beta


def regression(shape: RapporShape, n_cohort: np.ndarray, t: np.ndarray, var: np.ndarray) -> Regression:
    """The live rows, proportions and plug-in weights of the unbiased counts ``t`` and variances ``var``."""
    k = shape.num_bits
    p0 = shape.p_star
    gap = shape.gap
    live = np.repeat(n_cohort > 0, k)  # informative rows: cohorts with reports
    n_rows = np.repeat(n_cohort, k)[live].astype(np.float64)
    y = (t.ravel() / np.where(np.repeat(n_cohort, k) > 0, np.repeat(n_cohort, k), 1))[live]
    # Var(y) = Var(t)/N_j²; floor at the null variance's scale to keep weights finite
    var_y = var.ravel()[live] / n_rows**2
    floor = 1e-12 * p0 * (1 - p0) / (gap**2 * n_rows)
    w = 1.0 / np.maximum(var_y, floor)
    return Regression(live=live, n_rows=n_rows, y=y, w=w)


def background_design(design: scipy.sparse.csc_matrix, live: np.ndarray) -> scipy.sparse.csc_matrix:
    """The live rows of ``design`` after a column of ones (column 0: the background β₀)."""
    x = design.tocsr()[live].tocsc()
    background = scipy.sparse.csc_matrix(np.ones((int(live.sum()), 1)))
    return scipy.sparse.hstack([background, x], format="csc")


def screen_columns(xa: scipy.sparse.csc_matrix, rows: Regression) -> np.ndarray:
    """Candidate columns (≥ 1) of ``xa`` the non-negative LASSO keeps, penalty ``√(2 ln M)·‖x_s‖_W``.

    The background (column 0) is not penalized.
    """
    num_candidates = xa.shape[1] - 1
    w = rows.w
    norms = np.sqrt(np.asarray(xa.multiply(xa).T @ w).ravel())
    penalty = math.sqrt(2.0 * math.log(max(num_candidates, 2))) * norms
    penalty[0] = 0.0
    beta_lasso = nonneg_lasso(xa, w, rows.y, penalty)
    return np.flatnonzero(beta_lasso[1:] > 0) + 1


def refit(xa: scipy.sparse.csc_matrix, selected: np.ndarray, rows: Regression, shape: RapporShape) -> Refit:
    """NNLS on the background and ``selected``, then once more with variances from the fitted values."""
    columns = np.concatenate([[0], selected])
    xs = xa[:, columns]
    p0, gap = shape.p_star, shape.gap
    beta_s = nnls_weighted(xs, rows.w, rows.y)
    fitted = xs @ beta_s
    r = p0 + gap * np.clip(fitted, 0.0, 1.0)
    w = rows.n_rows * gap**2 / (r * (1.0 - r))
    beta_s = nnls_weighted(xs, w, rows.y)
    fitted = xs @ beta_s
    return Refit(columns=columns, design=xs, beta=beta_s, fitted=fitted, w=w)
