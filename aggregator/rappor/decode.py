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
3. **Selection** (only when candidates outnumber the refit limit, 400
   (``DENSE_LIMIT``) or 0.8 × the informative bits if fewer, google/rappor's
   rule; forced with ``screen=True``): non-negative weighted
   LASSO with the penalty ``λ_s = √(2 ln M)·‖x_s‖_W`` (the universal threshold
   of Donoho & Johnstone: a candidate no one reported has a score
   ``x_sᵀW·noise`` of standard deviation ``‖x_s‖_W``, and the maximum of M
   such scores stays below ``√(2 ln M)`` standard deviations with probability
   → 1, so pure-noise columns are not selected). No tuning, no randomness.
   Then every other candidate whose score z of joining the LASSO model
   exceeds ``z_{1−α'} − 1`` joins, strongest first, up to the limit (α' =
   α/M for Bonferroni, α for BH and ``"none"``: the largest level at which
   the correction can detect a candidate), so the refit holds every
   candidate that could be detected while its dense algebra stays bounded
   (:func:`ldp.aggregator.rappor.bloom.extension_threshold`).
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

Modules
-------
This module holds the entry points (:func:`decode`, :func:`decode_result`)
and re-exports the names below from the modules that do each step:

- :mod:`ldp.aggregator.rappor.counts` — count checks and unbiased bit counts
  (:func:`check_counts`, :func:`unbiased_bit_counts`);
- :mod:`ldp.aggregator.bloom_design` — the candidates' design matrix
  (:func:`design_matrix`);
- :mod:`ldp.aggregator.rappor.fit` — regression rows, LASSO screen, refit;
- :mod:`ldp.aggregator.nonneg_solvers` — exact NNLS and non-negative LASSO;
- :mod:`ldp.aggregator.rappor.significance` — Wald and score tests;
- :mod:`ldp.aggregator.multiple_testing` — :func:`adjust_p_values`,
  :data:`CORRECTIONS`;
- :mod:`ldp.aggregator.rappor.result` — :class:`RapporDecodeResult`, the
  table (:data:`DECODE_COLUMNS`);
- :mod:`ldp.aggregator.rappor.bloom` and :mod:`ldp.aggregator.rappor.direct`
  — the Bloom-filter and the basic/boolean decodes;
- :mod:`ldp.aggregator.rappor.detection` — :func:`detection_frequency`.

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

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ldp.aggregator.bloom_design import design_matrix
from ldp.aggregator.candidates import unique_candidates
from ldp.aggregator.multiple_testing import CORRECTIONS, DEFAULT_CORRECTION, adjust_p_values
from ldp.aggregator.rappor.bloom import BloomProblem, decode_bloom
from ldp.aggregator.rappor.counts import RapporShape, check_counts, unbiased_bit_counts
from ldp.aggregator.rappor.detection import detection_frequency
from ldp.aggregator.rappor.direct import decode_direct
from ldp.aggregator.rappor.fit import SCREEN_RATIO as SCREEN_RATIO  # re-exported: it was defined here
from ldp.aggregator.rappor.result import DECODE_COLUMNS, DecodeOptions, RapporDecodeResult
from ldp.errors import ParameterError
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


def decode(
    spec: Rappor,
    cohort_counts: Any,
    bit_counts: Any,
    candidates: Sequence[Any] | None = None,
    *,
    alpha: float = 0.05,
    correction: str = DEFAULT_CORRECTION,
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
        Force (True) or skip (False) the selection; default: only when M
        exceeds the refit limit, 400 or 0.8 × the informative bits if fewer
        (Bloom-filter RAPPOR only). ``screen=False`` with many candidates
        fits them all densely (time cubic in M).

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
    correction: str = DEFAULT_CORRECTION,
    confidence: float = 0.95,
    screen: bool | None = None,
) -> RapporDecodeResult:
    """Like :func:`decode`, returning the full :class:`RapporDecodeResult`."""
    options = DecodeOptions.checked(alpha, correction, confidence)
    n_cohort, _ = check_counts(spec, cohort_counts, bit_counts)
    t, var = unbiased_bit_counts(spec, cohort_counts, bit_counts)
    if spec.encoding != "bloom":
        return decode_direct(spec, n_cohort, t, candidates, options)
    if candidates is None:
        raise ParameterError("Bloom-filter RAPPOR needs a list of candidate values to decode")
    values = unique_candidates(candidates)
    x = design_matrix(spec, values)
    problem = BloomProblem(RapporShape.of(spec), n_cohort, t, var, values, x, options, screen)
    return decode_bloom(problem)
