"""Significance of the RAPPOR decode's candidates: Wald tests of the refit, score tests of the others.

One-sided ``H₀: β_s = 0`` against ``β_s > 0`` by the Wald z of the
*unconstrained* weighted least-squares fit on the refit columns, with
covariance ``φ·(XᵀWX)⁻¹`` and ``φ = max(1, χ²/dof)`` the residual dispersion;
a column outside that model gets the score test of adding it
(docs/mechanisms.md#rappor-decoding).

References
----------
.. [1] P. McCullagh, J. A. Nelder. *Generalized Linear Models*, 2nd ed., 1989
   (quasi-likelihood weights, dispersion).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg
import scipy.sparse

from ldp.aggregator.nonneg_solvers import weighted_gram, weighted_sq_norms
from ldp.aggregator.rappor.fit import Refit, cross_products, gram_inverse, score_information

__all__ = [
    "CandidateTests",
    "WlsTest",
    "candidate_tests",
    "positive_set_tests",
    "score_information",
    "wald_statistics",
    "wls_tests",
]


@dataclasses.dataclass(frozen=True)
class WlsTest:
    """An unconstrained WLS fit to test columns of a design.

    Attributes
    ----------
    columns : numpy.ndarray
        Indices (into the fitted design) of the tested columns.
    cov_unit : numpy.ndarray
        ``(XᵀWX)⁻¹`` of those columns (a pseudo-inverse on the fallback path).
    residual : numpy.ndarray
        ``y − Xβ̂``.
    chi2 : float
        ``Σ w·residual²``.
    dof : int
        Residual degrees of freedom (at least 1).
    """

    columns: np.ndarray
    cov_unit: np.ndarray
    residual: np.ndarray
    chi2: float
    dof: int

    @property
    def dispersion(self) -> float:
        """``φ = max(1, χ²/dof)``, the factor applied to the variances."""
        return max(1.0, self.chi2 / self.dof)


def wls_tests(xs: scipy.sparse.csc_matrix, w: np.ndarray, y: np.ndarray) -> WlsTest | None:
    """Unconstrained WLS on all the columns of ``xs``, for Wald tests.

    ``None`` when the Gram matrix is not positive definite or the columns
    leave no residual degrees of freedom (then the caller tests on the
    NNLS positive set with :func:`positive_set_tests`).
    """
    rows, cols = xs.shape
    gram = _gram(xs, w)
    if cols >= rows:
        return None
    try:
        lower = scipy.linalg.cholesky(gram, lower=True)
    except np.linalg.LinAlgError:
        return None
    # reject numerically singular designs (condition number above ~1e12)
    diag = np.diag(lower)
    if cols and diag.min() <= 1e-6 * diag.max():
        return None
    cov = scipy.linalg.cho_solve((lower, True), np.eye(cols))
    return _wls_fit(xs, w, y, cov, np.arange(cols))


def positive_set_tests(
    xp: scipy.sparse.csc_matrix, w: np.ndarray, y: np.ndarray, subset: np.ndarray
) -> WlsTest:
    """Unconstrained WLS on ``xp``, the NNLS positive set (columns ``subset`` of the refit), by pseudo-inverse."""
    cols = xp.shape[1]
    gram = _gram(xp, w)
    cov = scipy.linalg.pinvh(gram) if cols else np.zeros((0, 0))
    return _wls_fit(xp, w, y, cov, np.asarray(subset, dtype=np.int64))


def _gram(x: scipy.sparse.csc_matrix, w: np.ndarray) -> np.ndarray:
    """``XᵀWX`` as a dense array."""
    return weighted_gram(x, w)


def _wls_fit(
    xs: scipy.sparse.csc_matrix, w: np.ndarray, y: np.ndarray, cov: np.ndarray, test_cols: np.ndarray
) -> WlsTest:
    """The WLS fit of ``xs`` given ``cov = (XᵀWX)⁻¹``: residual, χ² and dof."""
    rows, cols = xs.shape
    beta = cov @ np.asarray(xs.T @ (w * y)).ravel() if cols else np.zeros(0)
    resid = y - (xs @ beta if cols else 0.0)
    chi2 = float(np.sum(w * resid**2))
    dof = max(rows - cols, 1)
    return WlsTest(test_cols, cov, resid, chi2, dof)


def wald_statistics(
    xs: scipy.sparse.csc_matrix, w: np.ndarray, y: np.ndarray, test: WlsTest
) -> tuple[np.ndarray, np.ndarray]:
    """Standard errors and Wald z of the tested columns (``test.columns`` of ``xs``), dispersion applied."""
    columns = test.columns
    beta_ls = test.cov_unit @ np.asarray(xs[:, columns].T @ (w * y)).ravel() if columns.size else np.zeros(0)
    se = np.sqrt(test.dispersion * np.maximum(np.diag(test.cov_unit), 0.0))
    z = np.where(se > 0, beta_ls / np.where(se > 0, se, 1.0), 0.0)
    return se, z


@dataclasses.dataclass(frozen=True)
class CandidateTests:
    """Standard errors and one-sided z of every column of the background design.

    Attributes
    ----------
    se, z : numpy.ndarray
        Index 0: the background β₀; index s + 1: candidate s. Proportion
        scale, dispersion applied.
    test : WlsTest
        The unconstrained fit of the Wald tests (its χ², dof and dispersion
        are reported).
    """

    se: np.ndarray
    z: np.ndarray
    test: WlsTest


def candidate_tests(xa: scipy.sparse.csc_matrix, fit: Refit, y: np.ndarray) -> CandidateTests:
    """Test ``H₀: β_s = 0`` against ``β_s > 0`` for the background and every candidate of ``xa``.

    Refit columns get the Wald z of the *unconstrained* WLS model on the same
    columns and weights (each candidate tested with all the others and the
    background fitted). Its null distribution does not depend on which
    estimates the non-negativity constraints set to 0, so it holds the
    nominal level; the positive-set Wald test of the NNLS fit was
    conservative (too few detections) when neighbouring columns sat at 0. If
    that design is singular, the Wald tests fall back to the NNLS positive
    set (pseudo-inverse). Every other candidate (not selected by the LASSO,
    or not identifiable) gets the score test of adding it to the testing
    model. A candidate whose non-negative estimate is 0 keeps at most the z
    of the score test of adding it to the NNLS fit (≤ 0 at the constrained
    optimum, KKT): raising p-values never adds detections under Bonferroni
    or BH, so this keeps both valid.
    """
    num_columns = xa.shape[1]
    xs, w = fit.design, fit.w
    se = np.zeros(num_columns)
    z = np.zeros(num_columns)
    test = wls_tests(xs, w, y)
    if test is None:  # singular or too many columns: Wald tests on the NNLS positive set
        positive = np.flatnonzero(fit.beta > 0)
        test = positive_set_tests(xs[:, positive], w, y, positive)
    tested = fit.columns[test.columns]
    se[tested], z[tested] = wald_statistics(xs, w, y, test)

    off = np.setdiff1d(np.arange(1, num_columns), tested, assume_unique=True)
    zero = np.flatnonzero(fit.coefficients(num_columns)[1:] <= 0) + 1
    needed = np.union1d(off, zero)
    if needed.size:  # one sparse product for both score tests (same weights, nested models)
        # most columns are needed: the product over all of xa costs no more than slicing it
        cross = cross_products(xs, xa, w)
        self_info = weighted_sq_norms(xa, w)
    if off.size:
        info = score_information(cross[test.columns][:, off], self_info[off], test.cov_unit)
        score = np.asarray(xa.T @ (w * test.residual)).ravel()[off]
        se[off] = np.sqrt(test.dispersion / info)
        z[off] = score / np.sqrt(test.dispersion * info)
    if zero.size:
        positive = np.flatnonzero(fit.beta > 0)
        cov_pos = gram_inverse(weighted_gram(xs[:, positive], w))
        info = score_information(cross[positive][:, zero], self_info[zero], cov_pos)
        score = np.asarray(xa.T @ (w * (y - fit.fitted))).ravel()[zero]
        # z of the score test of adding the column to the NNLS fit (its positive set)
        z[zero] = np.minimum(z[zero], score / np.sqrt(test.dispersion * info))
    return CandidateTests(se=se, z=z, test=test)
