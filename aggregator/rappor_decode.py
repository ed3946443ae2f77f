"""RAPPOR decoding: per-bit unbiased counts, then candidate frequencies with error bars.

Pipeline (docs/mechanisms.md#rappor-decoding)
---------------------------------------------
1. **Bit counts.** For cohort j and bit i, ``t_ij = (c_ij − p*·N_j)/(q* − p*)``
   is unbiased for the number of cohort-j reports whose true Bloom bit is 1,
   with ``Var(t_ij) = N_j·r(1−r)/(q*−p*)²`` (:func:`unbiased_bit_counts`).
2. **Model.** ``y_ij = t_ij / N_j`` (a proportion, as google/rappor) is
   modelled as ``y = β₀ + X·β + noise``, with ``X`` the sparse 0/1 design
   matrix (:func:`design_matrix`, row ``j·k + i``, column = candidate) and
   ``β ≥ 0`` the candidates' proportions. ``β₀ ≥ 0`` is a *background* term:
   a value that is not among the candidates sets its Bloom bits at hash
   positions that look uniformly random across cohorts, so it adds on average
   the same amount to every bit. ``β₀`` absorbs that mass instead of letting
   it leak into candidates that share bits with it, and it estimates the mass
   of the values no candidate explains (:attr:`RapporDecodeResult.unexplained_mass`).
   Rows are weighted by the inverse bit variances.
3. **Selection** (only when candidates outnumber 0.8 × the informative bits,
   google/rappor's rule; forced with ``screen=True``): non-negative weighted
   LASSO with the penalty ``λ_s = √(2 ln M)·‖x_s‖_W`` (the universal threshold
   of Donoho & Johnstone: a candidate no one reported has a score
   ``x_sᵀW·noise`` of standard deviation ``‖x_s‖_W``, and the maximum of M
   such scores stays below ``√(2 ln M)`` standard deviations with probability
   → 1, so pure-noise columns are not selected). No tuning, no randomness.
4. **Refit.** Non-negative weighted least squares on the selected columns and
   the background (exact, via :func:`scipy.optimize.nnls`), repeated once
   with the bit variances recomputed from the fitted values (quasi-likelihood
   weights instead of the noisier plug-in). On the positive set the NNLS
   solution is the WLS solution on that set (the reported estimates).
5. **Tests.** One-sided ``H₀: β_s = 0`` against ``β_s > 0`` by the Wald z of
   the *unconstrained* WLS fit on the same columns and weights: every
   candidate is tested with all the other refit candidates and the
   background fitted, with covariance ``φ·(XᵀWX)⁻¹`` and
   ``φ = max(1, χ²/dof)`` the residual dispersion of that fit (it inflates
   standard errors when the candidates do not explain the counts, e.g. when
   true values are missing from the list). This z is N(0, 1) for a
   never-reported candidate whatever the other frequencies are, so the test
   holds its level; the earlier Wald test on the NNLS positive set was
   conservative (bogus-candidate rejection rate 2-4% at α = 5%) and lost
   power (benchmarks/rappor_regtest.py, Zipf 1.5: 18.9 → 22.1 true values
   detected at α = 5% uncorrected, 200 repeats). Candidates the LASSO did not
   select get the score test of adding them to that model. A candidate whose
   non-negative estimate is 0 is never detected and keeps the (≥ ½) score
   p-value of adding it to the NNLS fit. ``detected`` = significant after
   Bonferroni (``α/M``, default) or Benjamini–Hochberg over all M
   candidates, or at level α each (``"none"``), and a positive estimate.
   If the refit design is singular, the Wald tests fall back to the NNLS
   positive set (pseudo-inverse).

Power limit. With marginal bit counts the test above is the efficient one
(Gauss-Markov; the one-sided z-test is uniformly most powerful among tests
invariant to the other frequencies), so a candidate of proportion π is
detected with probability about ``Φ(π/SE − z_{1−α'})``, SE from
``(XᵀWX)⁻¹`` at the true frequencies. On Google's regression setup (k=8,
h=2, m=128, N=10⁶) SE ≈ 0.0036, i.e. a value needs ≈ 0.6% of the reports
for even odds at α' = 5% and ≈ 1.2% under Bonferroni over 110 candidates.

Why our own solver: the non-negative LASSO on a bound-constrained quadratic is
solved by a working-set method. Each outer step takes the gradient of all M
columns with one sparse product, adds the columns that violate the KKT
conditions, and solves the small subproblem *exactly* with
:func:`scipy.optimize.nnls` on the Cholesky factor of its Gram matrix
(``½βᵀGβ − (c − λ)ᵀβ`` equals ``½‖Lᵀβ − L⁻¹(c − λ)‖²`` up to a constant). It
terminates when no column violates KKT, so the result is exact and
deterministic; scikit-learn is not a dependency, and a generic
coordinate-descent loop in Python would be slower and only approximately
converged.

Estimates are on the count scale (number of reports, ``N·β``). The bit
variance ``N_j·r(1−r)/(q*−p*)²`` is that of a cohort whose N_j reports each
have a true 1 with probability ``π = T_ij/N_j`` (docs/mechanisms.md#variance, i.i.d.
convention), so standard errors cover both the randomized response and the
random assignment of clients to cohorts (the model compares every cohort
with the population proportions β).

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response". ACM CCS 2014.
.. [2] google/rappor, analysis/R/decode.R (EstimateBloomCounts, FitLasso,
   Decode).
.. [3] D. L. Donoho, I. M. Johnstone. "Ideal spatial adaptation by wavelet
   shrinkage". Biometrika 81(3), 1994 (universal threshold).
.. [4] R. Tibshirani. "Regression shrinkage and selection via the lasso".
   JRSS B 58(1), 1996.
.. [5] C. L. Lawson, R. J. Hanson. *Solving Least Squares Problems*, 1974
   (NNLS).
.. [6] Y. Benjamini, Y. Hochberg. "Controlling the false discovery rate".
   JRSS B 57(1), 1995.
.. [7] P. McCullagh, J. A. Nelder. *Generalized Linear Models*, 2nd ed., 1989
   (quasi-likelihood weights, dispersion).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.optimize
import scipy.sparse
import scipy.stats

from ldp.errors import ParameterError
from ldp.frequency_math import frequency_variance
from ldp.specs.rappor import Rappor

__all__ = [
    "CORRECTIONS",
    "DECODE_COLUMNS",
    "RapporDecodeResult",
    "adjust_p_values",
    "check_counts",
    "decode",
    "decode_result",
    "design_matrix",
    "detection_frequency",
    "unbiased_bit_counts",
]

#: Multiple-testing corrections accepted by :func:`decode`.
CORRECTIONS = ("bonferroni", "bh", "none")
#: Columns of the decoded table, in order.
DECODE_COLUMNS = ("value", "estimate", "std_error", "ci_low", "ci_high", "proportion", "p_value", "detected")
#: google/rappor screens with the LASSO when M > 0.8 × (informative bits).
SCREEN_RATIO = 0.8


@dataclasses.dataclass(frozen=True)
class RapporDecodeResult:
    """Everything a decode produces.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per candidate (columns :data:`DECODE_COLUMNS`).
    num_reports : int
        N, the total number of reports.
    allocated_mass : float
        Sum of the proportions of the detected candidates (google/rappor's
        "allocated mass").
    explained_mass : float
        Sum of the proportions of all candidates (detected or not).
    unexplained_mass, unexplained_mass_se : float
        Estimated proportion of reports whose value is not among the
        candidates (from the background term; NaN when not modelled) and its
        standard error.
    residual : numpy.ndarray
        (m, k) unexplained residual ``t_ij − fitted_ij`` on the count scale
        (0 for cohorts without reports).
    residual_chi2, residual_dof : float, int
        Weighted residual sum of squares of the unconstrained WLS fit used
        for the tests, and its degrees of freedom; about ``dof`` when the
        model explains the counts.
    dispersion : float
        ``max(1, χ²/dof)``, the factor applied to variances.
    screened : bool
        Whether the LASSO selection ran.
    num_selected : int
        Columns kept for the refit.
    alpha : float
        Family-wise (Bonferroni) or false-discovery (BH) level.
    correction : str
    """

    table: pd.DataFrame
    num_reports: int
    allocated_mass: float
    explained_mass: float
    unexplained_mass: float
    unexplained_mass_se: float
    residual: np.ndarray
    residual_chi2: float
    residual_dof: int
    dispersion: float
    screened: bool
    num_selected: int
    alpha: float
    correction: str

    def summary(self) -> dict[str, Any]:
        """Scalar summary (also stored in ``table.attrs``)."""
        return {
            "num_reports": self.num_reports,
            "num_candidates": len(self.table),
            "num_detected": int(self.table["detected"].sum()),
            "allocated_mass": self.allocated_mass,
            "explained_mass": self.explained_mass,
            "unexplained_mass": self.unexplained_mass,
            "unexplained_mass_se": self.unexplained_mass_se,
            "residual_chi2": self.residual_chi2,
            "residual_dof": self.residual_dof,
            "dispersion": self.dispersion,
            "screened": self.screened,
            "num_selected": self.num_selected,
            "alpha": self.alpha,
            "correction": self.correction,
        }


# ---------------------------------------------------------------------------
# Step 1: unbiased per-bit counts


def check_counts(spec: Rappor, cohort_counts: Any, bit_counts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate and return ``(cohort_counts (m,), bit_counts (m, k))`` as int64.

    Raises
    ------
    ParameterError
        Wrong shape, negative counts, or a bit count above its cohort's count.
    """
    if not isinstance(spec, Rappor):
        raise ParameterError(f"RAPPOR decoding needs a Rappor spec, got {type(spec).__name__}")
    m, k = spec.num_cohorts, spec.num_bits
    cohorts = np.asarray(cohort_counts)
    bits = np.asarray(bit_counts)
    if cohorts.shape != (m,):
        raise ParameterError(f"cohort_counts must have shape ({m},) (num_cohorts), got {cohorts.shape}")
    if bits.shape != (m, k):
        raise ParameterError(
            f"bit_counts must have shape ({m}, {k}) (num_cohorts, num_bits), got {bits.shape}"
        )
    for name, array in (("cohort_counts", cohorts), ("bit_counts", bits)):
        if array.size and not np.all(np.isfinite(array)):
            raise ParameterError(f"{name} must be finite counts")
        if array.size and not np.array_equal(array, np.round(array)):
            raise ParameterError(f"{name} must be whole numbers")
        if array.size and array.min() < 0:
            raise ParameterError(f"{name} must be non-negative, got minimum {array.min()}")
    cohorts = cohorts.astype(np.int64)
    bits = bits.astype(np.int64)
    over = bits > cohorts[:, None]
    if over.any():
        j, i = map(int, np.argwhere(over)[0])
        raise ParameterError(
            f"bit_counts[{j}, {i}] = {bits[j, i]} exceeds the {cohorts[j]} reports of cohort {j}"
        )
    return cohorts, bits


def _rates(spec: Rappor) -> tuple[float, float]:
    """(p*, q*) = (P[S=1 | B=0], P[S=1 | B=1]) as floats."""
    return float(spec.prob_one_given_zero), float(spec.prob_one_given_one)


def unbiased_bit_counts(spec: Rappor, cohort_counts: Any, bit_counts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-cohort, per-bit unbiased counts ``t_ij`` and their plug-in variances.

    ``t_ij = (c_ij − p*·N_j)/(q* − p*)`` and
    ``Var = N_j·r(1−r)/(q*−p*)²`` with ``r = p* + (q*−p*)·clip(t_ij/N_j, 0, 1)``
    (docs/mechanisms.md#rappor-decoding; the clamp is google/rappor's). This variance is that of
    N_j reports each carrying a true 1 with probability T_ij/N_j (i.i.d.
    convention); given T_ij it exceeds the fixed-data variance
    ``T q*(1−q*) + (N−T) p*(1−p*)`` by ``N_j π(1−π)(q*−p*)²``.

    Returns
    -------
    t, var : numpy.ndarray
        Both of shape (m, k), float64; 0 in cohorts without reports.

    References
    ----------
    .. [1] Erlingsson, Pihur, Korolova, ACM CCS 2014; google/rappor
       analysis/R/decode.R (EstimateBloomCounts).
    """
    n, c = check_counts(spec, cohort_counts, bit_counts)
    p0, p1 = _rates(spec)
    gap = p1 - p0
    n_col = n[:, None].astype(np.float64)
    t = (c - p0 * n_col) / gap
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n_col > 0, t / np.where(n_col > 0, n_col, 1.0), 0.0)
    r = p0 + gap * np.clip(share, 0.0, 1.0)
    var = n_col * r * (1.0 - r) / gap**2
    return t, var


# ---------------------------------------------------------------------------
# Step 2: design matrix


def _unique_candidates(candidates: Sequence[Any]) -> list[Any]:
    if isinstance(candidates, (str, bytes)):
        raise ParameterError("candidates must be a sequence of values, not a single string")
    out: list[Any] = []
    seen: set = set()
    for value in candidates:
        key = str(value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def design_matrix(spec: Rappor, candidates: Sequence[Any]) -> scipy.sparse.csc_matrix:
    """The (m·k, M) 0/1 matrix: row ``j·k + i`` is 1 where candidate s sets bit i in cohort j.

    Uses :meth:`ldp.Rappor.bit_positions`; two hashes landing on one bit give
    a single 1.
    """
    m, k = spec.num_cohorts, spec.num_bits
    rows: list[int] = []
    cols: list[int] = []
    for s, value in enumerate(candidates):
        for j in range(m):
            base = j * k
            for pos in set(spec.bit_positions(value, j)):
                rows.append(base + pos)
                cols.append(s)
    data = np.ones(len(rows), dtype=np.float64)
    x = scipy.sparse.csc_matrix(
        (data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(m * k, len(candidates)),
    )
    x.sum_duplicates()
    x.data[:] = 1.0
    return x


# ---------------------------------------------------------------------------
# Step 3-4: non-negative (LASSO) weighted least squares


def _solve_nonneg_quadratic(gram: np.ndarray, linear: np.ndarray) -> np.ndarray:
    """argmin over β ≥ 0 of ½βᵀGβ − linearᵀβ, exactly (NNLS on the Cholesky factor)."""
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


def _nonneg_lasso(
    x: scipy.sparse.csc_matrix, w: np.ndarray, y: np.ndarray, penalty: np.ndarray, *, max_rounds: int = 200
) -> np.ndarray:
    """Working-set solver of min ½‖y − Xβ‖²_W + penaltyᵀβ over β ≥ 0 (exact KKT at exit)."""
    num_cols = x.shape[1]
    wy = w * y
    xt_wy = np.asarray(x.T @ wy).ravel()
    norms = np.sqrt(np.asarray(x.multiply(x).T @ w).ravel())  # ‖x_s‖_W
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
        gram = (
            (xw.T @ xw.multiply(w[:, None])).toarray()
            if scipy.sparse.issparse(xw)
            else xw.T @ (w[:, None] * xw)
        )
        beta[:] = 0.0
        beta[working] = _solve_nonneg_quadratic(gram, xt_wy[working] - penalty[working])
    else:  # pragma: no cover - the working set grows every round, so this needs > max_rounds rounds
        raise ParameterError("RAPPOR LASSO did not converge")
    return beta


def _nnls_weighted(x: scipy.sparse.csc_matrix, w: np.ndarray, y: np.ndarray) -> np.ndarray:
    """argmin over β ≥ 0 of ‖y − Xβ‖²_W (exact)."""
    gram = (x.T @ x.multiply(w[:, None])).toarray()
    linear = np.asarray(x.T @ (w * y)).ravel()
    return _solve_nonneg_quadratic(gram, linear)


def adjust_p_values(p_values: np.ndarray, correction: str) -> np.ndarray:
    """Bonferroni (``min(1, M·p)``) or Benjamini–Hochberg adjusted p-values.

    References
    ----------
    .. [1] Y. Benjamini, Y. Hochberg. JRSS B 57(1), 1995.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if correction == "bonferroni":
        return np.minimum(1.0, p * p.size)
    if correction == "bh":
        return scipy.stats.false_discovery_control(p, method="bh") if p.size else p
    if correction == "none":
        return p
    raise ParameterError(f"correction must be one of {CORRECTIONS}, got {correction!r}")


def _check_options(alpha: float, correction: str, confidence: float) -> str:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ParameterError(f"alpha must be in (0, 1), got {alpha!r}")
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    name = str(correction).lower().replace("-", "").replace("_", "")
    name = {"benjaminihochberg": "bh", "fdr": "bh"}.get(name, name)
    if name not in CORRECTIONS:
        raise ParameterError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    return name


# ---------------------------------------------------------------------------
# Public entry points


def decode(
    spec: Rappor,
    cohort_counts: Any,
    bit_counts: Any,
    candidates: Sequence[Any] | None = None,
    *,
    alpha: float = 0.05,
    correction: str = "bonferroni",
    confidence: float = 0.95,
    screen: bool | None = None,
) -> pd.DataFrame:
    """Estimate how many reports carry each candidate value, with error bars and detection.

    Parameters
    ----------
    spec : Rappor
    cohort_counts : array of shape (m,)
        Reports per cohort.
    bit_counts : array of shape (m, k)
        Reported ones per cohort and bit.
    candidates : sequence
        Candidate values (required for Bloom-filter RAPPOR; for basic RAPPOR
        defaults to the domain; ignored for boolean RAPPOR). Duplicates (by
        text) are dropped, first occurrence kept.
    alpha : float
        Family-wise error rate (Bonferroni) or false discovery rate (BH).
    correction : {"bonferroni", "bh", "none"}
        ``"none"`` tests each candidate at level α with no multiplicity
        control (google/rappor's practice); it does not bound false positives
        over the candidate list.
    confidence : float
        Level of the ``ci_low``/``ci_high`` intervals.
    screen : bool, optional
        Force (True) or skip (False) the LASSO selection; default: only when
        M > 0.8 × the informative bits (Bloom-filter RAPPOR only).

    Returns
    -------
    pandas.DataFrame
        Columns ``value, estimate, std_error, ci_low, ci_high, proportion,
        p_value, detected`` (estimate = number of reports); ``attrs`` holds
        :meth:`RapporDecodeResult.summary` (allocated and unexplained mass,
        residual χ², ...). Use :func:`decode_result` for the residual array.

    References
    ----------
    .. [1] Erlingsson, Pihur, Korolova, ACM CCS 2014.
    .. [2] google/rappor analysis/R/decode.R.
    """
    return decode_result(
        spec,
        cohort_counts,
        bit_counts,
        candidates,
        alpha=alpha,
        correction=correction,
        confidence=confidence,
        screen=screen,
    ).table


def decode_result(
    spec: Rappor,
    cohort_counts: Any,
    bit_counts: Any,
    candidates: Sequence[Any] | None = None,
    *,
    alpha: float = 0.05,
    correction: str = "bonferroni",
    confidence: float = 0.95,
    screen: bool | None = None,
) -> RapporDecodeResult:
    """Like :func:`decode`, returning the full :class:`RapporDecodeResult`."""
    correction = _check_options(alpha, correction, confidence)
    n_cohort, _ = check_counts(spec, cohort_counts, bit_counts)
    t, var = unbiased_bit_counts(spec, cohort_counts, bit_counts)
    if spec.encoding != "bloom":
        return _decode_direct(spec, n_cohort, t, candidates, alpha, correction, confidence)
    if candidates is None:
        raise ParameterError("Bloom-filter RAPPOR needs a list of candidate values to decode")
    values = _unique_candidates(candidates)
    x = design_matrix(spec, values)
    return _decode_bloom(spec, n_cohort, t, var, values, x, alpha, correction, confidence, screen)


def _table(values, estimate, se, p_values, correction, alpha, confidence, total) -> pd.DataFrame:
    adjusted = adjust_p_values(p_values, correction)
    detected = (adjusted < alpha) & (estimate > 0)
    z = scipy.stats.norm.ppf(0.5 + confidence / 2)
    table = pd.DataFrame(
        {
            "value": list(values),
            "estimate": estimate,
            "std_error": se,
            "ci_low": estimate - z * se,
            "ci_high": estimate + z * se,
            "proportion": estimate / total if total > 0 else np.full(len(values), np.nan),
            "p_value": p_values,
            "detected": detected,
        },
        columns=list(DECODE_COLUMNS),
    )
    return table


def _finish(table: pd.DataFrame, **fields) -> RapporDecodeResult:
    detected = table["detected"].to_numpy()
    result = RapporDecodeResult(
        table=table,
        allocated_mass=float(table["proportion"].to_numpy()[detected].sum()),
        explained_mass=float(table["proportion"].sum()),
        **fields,
    )
    table.attrs.update(result.summary())
    return result


def _decode_direct(spec, n_cohort, t, candidates, alpha, correction, confidence) -> RapporDecodeResult:
    """Basic and boolean RAPPOR: each value owns one bit, so its count is Σ_j t_jv (unbiased).

    The bit means the same value in every cohort, so the decode is the
    frequency oracle of the pooled counts, with its fixed-data standard
    error (docs/mechanisms.md#variance, at the clipped plug-in frequency) exactly as
    :meth:`ldp.aggregator.RapporAccumulator.estimate` and the other oracles
    report it: the two paths give the same table. (The per-cohort i.i.d.
    variance of the Bloom decode would add n·f(1−f) for the random cohort
    split, which does not move a pooled count.) Boolean values come in the
    order (False, True), as there.
    """
    total = int(n_cohort.sum())
    estimate_bits = t.sum(axis=0)
    p_star, q_star = _rates(spec)
    if spec.encoding == "boolean":
        values = [False, True]
        estimate = np.array([total - estimate_bits[0], estimate_bits[0]])
    else:
        values = list(spec.domain) if candidates is None else _unique_candidates(candidates)
        index = [spec.domain_index.index(v) for v in values]
        estimate = estimate_bits[index]
    if total > 0:  # support probabilities (q*, p*) of the bit: P[S=1 | B=1], P[S=1 | B=0]
        bit_frequency = np.clip(estimate_bits / total, 0.0, 1.0)
        bit_se = total * np.sqrt(frequency_variance(bit_frequency, total, q_star, p_star))
    else:
        bit_se = np.zeros_like(estimate_bits)
    se = np.array([bit_se[0], bit_se[0]]) if spec.encoding == "boolean" else bit_se[index]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, estimate / np.where(se > 0, se, 1.0), 0.0)
    p_values = scipy.stats.norm.sf(z)
    table = _table(values, estimate, se, p_values, correction, alpha, confidence, total)
    residual = np.zeros_like(t)
    return _finish(
        table,
        num_reports=total,
        unexplained_mass=math.nan,
        unexplained_mass_se=math.nan,
        residual=residual,
        residual_chi2=0.0,
        residual_dof=0,
        dispersion=1.0,
        screened=False,
        num_selected=len(values),
        alpha=alpha,
        correction=correction,
    )


def _expected_distinct_bits(spec: Rappor) -> float:
    """E[number of distinct Bloom bits a value sets] = k(1 − (1 − 1/k)^h) for random hashing."""
    k, h = spec.num_bits, spec.num_hashes
    return k * (1.0 - (1.0 - 1.0 / k) ** h)


def detection_frequency(
    spec: Rappor,
    num_reports: int,
    num_candidates: int,
    *,
    alpha: float = 0.05,
    power: float = 0.5,
    correction: str = "bonferroni",
) -> float:
    """Proportion at which a candidate is detected with probability ``power`` (approximate).

    The standard error of a candidate's proportion is approximated by that of
    a candidate whose d = k(1 − (1 − 1/k)^h) distinct bits per cohort are
    measured against the background over m·k bits,
    ``SE ≈ √(p*(1−p*)/(N·d·(1 − d/k))) / (q* − p*)``, inflated by
    ``1/√(1 − M/(m·k))`` for the other candidates sharing the bits (random
    designs). A candidate is detected when its z exceeds ``z_{1−α/M}``
    (Bonferroni, and at worst BH; ``z_{1−α}`` with ``correction="none"``), so with probability
    ``power`` when its proportion is ``(z_{1−α/M} + z_power)·SE``. With
    ``power = 0.5`` this is google/rappor's "detection frequency" adapted to
    the Bloom filter.

    The approximation errs on the optimistic side when the population
    carries much signal: it uses the null bit variance p*(1−p*), while the
    decode's standard errors use the observed rates (measured on a Zipf
    population: 1–3 % larger at ε = 2, 9–28 % at ε = 6). Read it as the
    smallest proportion one can hope to detect, not a guarantee.

    References
    ----------
    .. [1] google/rappor analysis/R/decode.R (ComputePrivacyGuarantees).
    """
    spec = _bloom_spec_for_detection(spec)
    if num_reports <= 0 or num_candidates <= 0:
        raise ParameterError("detection_frequency needs num_reports > 0 and num_candidates > 0")
    name = _check_options(alpha, correction, 0.5)
    if not 0 < power < 1:
        raise ParameterError(f"power must be in (0, 1), got {power!r}")
    p0, p1 = _rates(spec)
    k, m = spec.num_bits, spec.num_cohorts
    d = _expected_distinct_bits(spec)
    rows = m * k
    if num_candidates >= rows:
        return math.inf
    se = math.sqrt(p0 * (1 - p0) / (num_reports * d * (1 - d / k))) / (p1 - p0)
    se /= math.sqrt(1 - num_candidates / rows)
    level = alpha if name == "none" else alpha / num_candidates  # BH: bounded by Bonferroni's level
    return float((scipy.stats.norm.isf(level) + scipy.stats.norm.ppf(power)) * se)


def _bloom_spec_for_detection(spec: Any) -> Rappor:
    if not isinstance(spec, Rappor) or spec.encoding != "bloom":
        raise ParameterError("detection_frequency applies to Bloom-filter RAPPOR specs")
    return spec


def _decode_bloom(
    spec, n_cohort, t, var, values, x_all, alpha, correction, confidence, screen
) -> RapporDecodeResult:
    m, k = spec.num_cohorts, spec.num_bits
    total = int(n_cohort.sum())
    num_candidates = len(values)
    p0, p1 = _rates(spec)
    gap = p1 - p0

    live = np.repeat(n_cohort > 0, k)  # informative rows: cohorts with reports
    num_rows = int(live.sum())
    n_rows = np.repeat(n_cohort, k)[live].astype(np.float64)
    y = (t.ravel() / np.where(np.repeat(n_cohort, k) > 0, np.repeat(n_cohort, k), 1))[live]
    # Var(y) = Var(t)/N_j²; floor at the null variance's scale to keep weights finite
    var_y = var.ravel()[live] / n_rows**2
    floor = 1e-12 * p0 * (1 - p0) / (gap**2 * n_rows)
    w = 1.0 / np.maximum(var_y, floor)

    if num_rows == 0 or num_candidates == 0:
        return _empty_bloom(values, total, t, alpha, correction, confidence)

    x = x_all.tocsr()[live].tocsc()
    background = scipy.sparse.csc_matrix(np.ones((num_rows, 1)))
    xa = scipy.sparse.hstack([background, x], format="csc")  # column 0: background β₀

    screened = bool(screen) if screen is not None else num_candidates > SCREEN_RATIO * num_rows
    if screened:
        norms = np.sqrt(np.asarray(xa.multiply(xa).T @ w).ravel())
        penalty = math.sqrt(2.0 * math.log(max(num_candidates, 2))) * norms
        penalty[0] = 0.0
        beta_lasso = _nonneg_lasso(xa, w, y, penalty)
        selected = np.flatnonzero(beta_lasso[1:] > 0) + 1
    else:
        selected = np.arange(1, num_candidates + 1)
    columns = np.concatenate([[0], selected])
    xs = xa[:, columns]

    # Refit (NNLS), then once more with variances from the fitted values.
    beta_s = _nnls_weighted(xs, w, y)
    fitted = xs @ beta_s
    r = p0 + gap * np.clip(fitted, 0.0, 1.0)
    w = n_rows * gap**2 / (r * (1.0 - r))
    beta_s = _nnls_weighted(xs, w, y)
    fitted = xs @ beta_s

    # Tests: Wald z of every refit column in the *unconstrained* WLS model on
    # the same columns and weights (each candidate tested with all the others
    # and the background fitted). Its null distribution does not depend on
    # which estimates the non-negativity constraints set to 0, so it holds
    # the nominal level; the positive-set Wald test of the NNLS fit was
    # conservative (too few detections) when neighbouring columns sat at 0.
    beta = np.zeros(num_candidates + 1)
    beta[columns] = beta_s
    se = np.zeros(num_candidates + 1)
    z = np.zeros(num_candidates + 1)
    test = _wls_tests(xs, w, y)
    if test is None:  # singular or too many columns: Wald tests on the NNLS positive set
        test = _wls_tests(xs[:, np.flatnonzero(beta_s > 0)], w, y, subset=np.flatnonzero(beta_s > 0))
    test_cols, cov_unit, resid_ls, chi2, dof = test
    dispersion = max(1.0, chi2 / dof)
    tested = columns[test_cols]
    beta_ls = cov_unit @ np.asarray(xs[:, test_cols].T @ (w * y)).ravel() if test_cols.size else np.zeros(0)
    se[tested] = np.sqrt(dispersion * np.maximum(np.diag(cov_unit), 0.0))
    z[tested] = np.where(se[tested] > 0, beta_ls / np.where(se[tested] > 0, se[tested], 1.0), 0.0)
    on = tested

    # Score tests for every other candidate (not selected by the LASSO, or not
    # identifiable): would adding it to the testing model help?
    off = np.setdiff1d(np.arange(1, num_candidates + 1), on, assume_unique=True)
    if off.size:
        xt = xs[:, test_cols]
        xo = xa[:, off]
        cross = (xt.T @ xo.multiply(w[:, None])).toarray() if test_cols.size else np.zeros((0, off.size))
        self_info = np.asarray(xo.multiply(xo).T @ w).ravel()
        info = self_info - np.einsum("ij,ij->j", cross, cov_unit @ cross) if test_cols.size else self_info
        info = np.maximum(info, 1e-300)
        score = np.asarray(xo.T @ (w * resid_ls)).ravel()
        se[off] = np.sqrt(dispersion / info)
        z[off] = score / np.sqrt(dispersion * info)

    # A candidate the non-negative fit sets to 0 is not detected; its p-value
    # is that of the score test of adding it to the NNLS fit, which is ≥ ½ at
    # the constrained optimum (KKT). Raising p-values never adds detections
    # under Bonferroni or BH, so this keeps both valid.
    zero = np.flatnonzero(beta[1:] <= 0) + 1
    if zero.size:
        positive = np.flatnonzero(beta_s > 0)
        xp = xs[:, positive]
        gram = (xp.T @ xp.multiply(w[:, None])).toarray()
        cov_pos = scipy.linalg.pinvh(gram) if positive.size else np.zeros((0, 0))
        xo = xa[:, zero]
        cross = (xp.T @ xo.multiply(w[:, None])).toarray() if positive.size else np.zeros((0, zero.size))
        self_info = np.asarray(xo.multiply(xo).T @ w).ravel()
        info = self_info - np.einsum("ij,ij->j", cross, cov_pos @ cross) if positive.size else self_info
        info = np.maximum(info, 1e-300)
        score = np.asarray(xo.T @ (w * (y - fitted))).ravel()
        z[zero] = np.minimum(z[zero], score / np.sqrt(dispersion * info))
    p_values = scipy.stats.norm.sf(z[1:])
    resid = y - fitted

    estimate = total * beta[1:]
    table = _table(values, estimate, total * se[1:], p_values, correction, alpha, confidence, total)

    share = _expected_distinct_bits(spec) / k
    residual = np.zeros(m * k)
    residual[live] = resid * n_rows
    return _finish(
        table,
        num_reports=total,
        unexplained_mass=float(beta[0] / share),
        unexplained_mass_se=float(se[0] / share) if beta[0] > 0 else math.nan,
        residual=residual.reshape(m, k),
        residual_chi2=chi2,
        residual_dof=int(dof),
        dispersion=float(dispersion),
        screened=screened,
        num_selected=int(selected.size),
        alpha=alpha,
        correction=correction,
    )


def _wls_tests(xs, w: np.ndarray, y: np.ndarray, subset: np.ndarray | None = None):
    """Unconstrained WLS on the columns of ``xs``: (columns, (XᵀWX)⁻¹, residual, χ², dof).

    ``None`` when the Gram matrix is not positive definite or the columns
    leave no residual degrees of freedom (then the caller tests on the
    NNLS positive set, given as ``subset``, with a pseudo-inverse).
    """
    rows, cols = xs.shape
    gram = (xs.T @ xs.multiply(w[:, None])).toarray() if cols else np.zeros((0, 0))
    if subset is None:
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
        test_cols = np.arange(cols)
    else:
        cov = scipy.linalg.pinvh(gram) if cols else np.zeros((0, 0))
        test_cols = np.asarray(subset, dtype=np.int64)
    beta = cov @ np.asarray(xs.T @ (w * y)).ravel() if cols else np.zeros(0)
    resid = y - (xs @ beta if cols else 0.0)
    chi2 = float(np.sum(w * resid**2))
    dof = max(rows - cols, 1)
    return test_cols, cov, resid, chi2, dof


def _empty_bloom(values, total, t, alpha, correction, confidence) -> RapporDecodeResult:
    size = len(values)
    table = _table(
        values, np.zeros(size), np.full(size, np.nan), np.ones(size), correction, alpha, confidence, total
    )
    return _finish(
        table,
        num_reports=total,
        unexplained_mass=math.nan,
        unexplained_mass_se=math.nan,
        residual=np.zeros_like(t),
        residual_chi2=0.0,
        residual_dof=0,
        dispersion=1.0,
        screened=False,
        num_selected=0,
        alpha=alpha,
        correction=correction,
    )
