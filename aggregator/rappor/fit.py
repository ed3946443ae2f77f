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
import scipy.linalg
import scipy.sparse

from ldp.aggregator.nonneg_solvers import (
    nnls_weighted,
    nonneg_lasso,
    scale_rows,
    weighted_gram,
    weighted_sq_norms,
)
from ldp.aggregator.rappor.counts import RapporShape

__all__ = [
    "DENSE_LIMIT",
    "EXTEND_MARGIN",
    "SCREEN_RATIO",
    "Refit",
    "Regression",
    "background_design",
    "cross_products",
    "extend_selection",
    "refit",
    "refit_limit",
    "regression",
    "score_information",
    "screen_columns",
]

#: google/rappor screens with the LASSO when M > 0.8 × (informative bits).
SCREEN_RATIO = 0.8

#: At most this many candidates enter the dense refit and its tests (whose
#: cost is cubic in their number); more candidates are screened.
DENSE_LIMIT = 400

#: The screen keeps candidates whose score z exceeds ``z_{1−α'} − EXTEND_MARGIN``
#: (α' the correction's largest per-candidate level).
EXTEND_MARGIN = 1.0


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
    x = scipy.sparse.csc_matrix(design)
    num_live = int(live.sum())
    indices, indptr = x.indices, x.indptr
    if num_live < live.size:  # drop the rows of cohorts without reports, renumbering the others
        new_row = np.cumsum(live) - 1
        keep = live[indices]
        indices = new_row[indices[keep]]
        column = np.repeat(np.arange(x.shape[1]), np.diff(indptr))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(column[keep], minlength=x.shape[1]))])
    index_type = np.int32 if num_live + indices.size < 2**31 else np.int64
    return scipy.sparse.csc_matrix(
        (
            np.ones(num_live + indices.size),
            np.concatenate([np.arange(num_live), indices]).astype(index_type),
            np.concatenate([[0], num_live + indptr]).astype(index_type),
        ),
        shape=(num_live, x.shape[1] + 1),
    )


def refit_limit(rows: Regression) -> int:
    """Most candidates the refit takes: :data:`DENSE_LIMIT`, or 0.8 × the informative bits if fewer."""
    return min(DENSE_LIMIT, int(SCREEN_RATIO * rows.num_rows))


def screen_columns(xa: scipy.sparse.csc_matrix, rows: Regression) -> np.ndarray:
    """Candidate columns (≥ 1) of ``xa`` the non-negative LASSO keeps, penalty ``√(2 ln M)·‖x_s‖_W``.

    The background (column 0) is not penalized.
    """
    num_candidates = xa.shape[1] - 1
    w = rows.w
    norms = np.sqrt(weighted_sq_norms(xa, w))
    penalty = math.sqrt(2.0 * math.log(max(num_candidates, 2))) * norms
    penalty[0] = 0.0
    beta_lasso = nonneg_lasso(xa, w, rows.y, penalty, norms=norms)
    return np.flatnonzero(beta_lasso[1:] > 0) + 1


def extend_selection(
    xa: scipy.sparse.csc_matrix, selected: np.ndarray, rows: Regression, limit: int, threshold: float
) -> np.ndarray:
    """``selected`` plus the candidates whose score z of joining it exceeds ``threshold``, at most ``limit`` in all.

    The score z of candidate s given the weighted least-squares model on the
    background and ``selected`` is ``x_sᵀW·residual / √information_s``
    (:func:`score_information`); the strongest are added first (ties by
    column). A candidate left out of the refit gets estimate 0 and is not
    detected; the decode's threshold
    (:func:`ldp.aggregator.rappor.bloom.extension_threshold`) keeps every
    candidate that could be detected, with one standard deviation to spare.
    ``selected`` is kept whole even when it alone exceeds ``limit``.
    """
    room = limit - selected.size
    if room <= 0:
        return selected
    columns = np.concatenate([[0], selected])
    xs = xa[:, columns]
    cov = gram_inverse(weighted_gram(xs, rows.w))
    beta = cov @ np.asarray(xs.T @ (rows.w * rows.y)).ravel()
    residual = rows.y - xs @ beta
    others = np.setdiff1d(np.arange(1, xa.shape[1]), selected, assume_unique=True)
    score = np.asarray(xa.T @ (rows.w * residual)).ravel()
    if threshold > 0:  # a candidate with z ≤ 0 cannot pass: skip its information
        others = others[score[others] > 0]
    cross = cross_products(xs, xa[:, others], rows.w)
    info = score_information(cross, weighted_sq_norms(xa[:, others], rows.w), cov)
    z = score[others] / np.sqrt(info)
    strong = np.flatnonzero(z > threshold)
    strong = strong[np.lexsort((others[strong], -z[strong]))][:room]
    return np.sort(np.concatenate([selected, others[strong]]))


def gram_inverse(gram: np.ndarray) -> np.ndarray:
    """``gram⁻¹`` by Cholesky, or the pseudo-inverse if ``gram`` is not positive definite."""
    if gram.shape[0] == 0:
        return np.zeros((0, 0))
    try:
        factor = scipy.linalg.cho_factor(gram, lower=True)
    except np.linalg.LinAlgError:
        return scipy.linalg.pinvh(gram)
    diag = np.diag(factor[0])
    if diag.min() <= 1e-6 * diag.max():
        return scipy.linalg.pinvh(gram)
    return scipy.linalg.cho_solve(factor, np.eye(gram.shape[0]))


def cross_products(x_model: scipy.sparse.csc_matrix, x: scipy.sparse.csc_matrix, w: np.ndarray) -> np.ndarray:
    """``x_modelᵀ W x`` as a dense (model columns, columns of ``x``) array, in one sparse product."""
    if x_model.shape[1] == 0:
        return np.zeros((0, x.shape[1]))
    weighted = scale_rows(x_model, w).tocsr()
    return np.asarray((x.T @ weighted).toarray()).T


def score_information(cross: np.ndarray, self_info: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Information of columns given a model: ``x_sᵀWx_s − (x_modelᵀWx_s)ᵀ cov (x_modelᵀWx_s)``.

    ``cross`` holds ``x_modelᵀWx_s`` (:func:`cross_products`) and
    ``self_info`` ``x_sᵀWx_s`` (:func:`ldp.aggregator.nonneg_solvers.weighted_sq_norms`)
    of the tested columns, ``cov`` the model's ``(XᵀWX)⁻¹``. Floored at
    1e-300; the score test of adding column s to the model is
    ``x_sᵀW·residual / √(φ·information_s)``.
    """
    if cross.shape[0] == 0:
        return np.maximum(self_info, 1e-300)
    info = self_info - np.einsum("ij,ij->j", cross, cov @ cross)
    return np.maximum(info, 1e-300)


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
