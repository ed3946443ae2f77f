"""Exact non-negative weighted least squares and non-negative LASSO (RAPPOR decoding, steps 3-4).

The non-negative LASSO on a bound-constrained quadratic is solved by a
working-set method. Each outer step takes the gradient of all M columns with
one sparse product, adds the columns that violate the KKT conditions, and
solves the small subproblem *exactly* with :func:`scipy.optimize.nnls` on the
Cholesky factor of its Gram matrix (``½βᵀGβ − (c − λ)ᵀβ`` equals
``½‖Lᵀβ − L⁻¹(c − λ)‖²`` up to a constant). It terminates when no column
violates KKT, so the result is exact and deterministic
(docs/mechanisms.md#rappor-decoding).

References
----------
.. [1] R. Tibshirani. "Regression shrinkage and selection via the lasso".
   JRSS B 58(1), 1996.
.. [2] C. L. Lawson, R. J. Hanson. *Solving Least Squares Problems*, 1974
   (NNLS).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse

from ldp.errors import ParameterError

__all__ = [
    "nnls_weighted",
    "nonneg_lasso",
    "scale_rows",
    "solve_nonneg_quadratic",
    "weighted_gram",
    "weighted_sq_norms",
]


def scale_rows(x: scipy.sparse.csc_matrix, w: np.ndarray) -> scipy.sparse.csc_matrix:
    """``diag(w)·X`` for a CSC matrix, sharing its index arrays (no conversion, no broadcasting copy)."""
    x = scipy.sparse.csc_matrix(x)
    return scipy.sparse.csc_matrix((x.data * w[x.indices], x.indices, x.indptr), shape=x.shape)


def weighted_sq_norms(x: scipy.sparse.csc_matrix, w: np.ndarray) -> np.ndarray:
    """``‖x_s‖²_W = Σ_r w_r·x_rs²`` of every column of a CSC matrix."""
    x = scipy.sparse.csc_matrix(x)
    if not np.all(x.data == 1.0):  # a design matrix is 0/1: x² = x
        x = scipy.sparse.csc_matrix((x.data * x.data, x.indices, x.indptr), shape=x.shape)
    return np.asarray(x.T @ w).ravel()


def weighted_gram(x: scipy.sparse.csc_matrix, w: np.ndarray) -> np.ndarray:
    """``XᵀWX`` as a dense array (for the few columns of a refit)."""
    if x.shape[1] == 0:
        return np.zeros((0, 0))
    return np.asarray((x.T @ scale_rows(x, w)).toarray())


def solve_nonneg_quadratic(gram: np.ndarray, linear: np.ndarray) -> np.ndarray:
    """argmin over β ≥ 0 of ½βᵀGβ − linearᵀβ, exactly (NNLS on the Cholesky factor).

    Raises
    ------
    ParameterError
        ``gram`` stays numerically singular after a diagonal jitter up to its
        mean diagonal.
    """
    p = gram.shape[0]
    if p == 0:
        return np.zeros(0)
    scale = float(np.mean(np.diag(gram))) or 1.0
    jitter = 1e-12 * scale
    while True:
        try:
            lower = scipy.linalg.cholesky(gram + jitter * np.eye(p), lower=True)
            break
        except np.linalg.LinAlgError:
            jitter *= 100.0
            if jitter > scale:
                raise ParameterError("RAPPOR design is numerically singular; check the candidates") from None
    rhs = scipy.linalg.solve_triangular(lower, linear, lower=True)
    beta, _ = scipy.optimize.nnls(lower.T, rhs, maxiter=50 * p + 100)
    return beta


def nonneg_lasso(
    x: scipy.sparse.csc_matrix,
    w: np.ndarray,
    y: np.ndarray,
    penalty: np.ndarray,
    *,
    max_rounds: int = 200,
    norms: np.ndarray | None = None,
) -> np.ndarray:
    """Working-set solver of min ½‖y − Xβ‖²_W + penaltyᵀβ over β ≥ 0 (exact KKT at exit).

    ``norms``: the columns' ``‖x_s‖_W`` if the caller has them.
    """
    num_cols = x.shape[1]
    wy = w * y
    xt_wy = np.asarray(x.T @ wy).ravel()
    if norms is None:
        norms = np.sqrt(weighted_sq_norms(x, w))  # ‖x_s‖_W
    beta = np.zeros(num_cols)
    working = np.zeros(0, dtype=np.int64)
    for _ in range(max_rounds):
        fitted = x[:, working] @ beta[working] if working.size else np.zeros_like(y)
        gradient = xt_wy - np.asarray(x.T @ (w * fitted)).ravel() - penalty  # −∂/∂β
        tolerance = 1e-9 * (norms * np.sqrt(np.sum(w * y * y)) + 1.0)
        violating = np.flatnonzero((gradient > tolerance) & (beta == 0.0))
        violating = np.setdiff1d(violating, working[beta[working] > 0], assume_unique=True)
        if violating.size == 0:
            break
        # add the strongest violators (scaled), at most doubling the working set
        limit = max(16, working.size)
        strength = gradient[violating] / np.where(norms[violating] > 0, norms[violating], 1.0)
        order = np.lexsort((violating, -strength))[:limit]
        keep = working[beta[working] > 0]
        working = np.union1d(keep, violating[order])
        xw = x[:, working]
        gram = weighted_gram(xw, w) if scipy.sparse.issparse(xw) else xw.T @ (w[:, None] * xw)
        beta[:] = 0.0
        beta[working] = solve_nonneg_quadratic(gram, xt_wy[working] - penalty[working])
    else:  # pragma: no cover - the working set grows every round, so this needs > max_rounds rounds
        raise ParameterError("RAPPOR LASSO did not converge")
    return beta


def nnls_weighted(x: scipy.sparse.csc_matrix, w: np.ndarray, y: np.ndarray) -> np.ndarray:
    """argmin over β ≥ 0 of ‖y − Xβ‖²_W (exact)."""
    gram = weighted_gram(x, w)
    linear = np.asarray(x.T @ (w * y)).ravel()
    return solve_nonneg_quadratic(gram, linear)
