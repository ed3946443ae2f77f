"""Bloom-filter RAPPOR decoding: the pipeline from unbiased bit counts to the result table.

Regression rows and background design; when candidates outnumber the refit
limit (:func:`ldp.aggregator.rappor.fit.refit_limit`: 400, or 0.8 × the
informative bits if fewer) or as forced, the LASSO screen extended by score
tests up to that limit; non-negative refit
(:mod:`ldp.aggregator.rappor.fit`), Wald and score tests
(:mod:`ldp.aggregator.rappor.significance`), then the table on the count
scale (:mod:`ldp.aggregator.rappor.result`); docs/mechanisms.md#rappor-decoding.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response". ACM CCS 2014.
.. [2] google/rappor, analysis/R/decode.R (Decode).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import scipy.sparse
import scipy.stats

from ldp.aggregator.rappor.counts import RapporShape
from ldp.aggregator.rappor.fit import (
    EXTEND_MARGIN,
    background_design,
    extend_selection,
    refit,
    refit_limit,
    regression,
    screen_columns,
)
from ldp.aggregator.rappor.result import DecodeOptions, FitSummary, RapporDecodeResult, decode_table, finish
from ldp.aggregator.rappor.significance import candidate_tests

__all__ = ["BloomProblem", "decode_bloom", "extension_threshold"]


@dataclasses.dataclass(frozen=True)
class BloomProblem:
    """The inputs of a Bloom-filter decode.

    Attributes
    ----------
    shape : RapporShape
        The spec's sizes and rates.
    cohort_counts : numpy.ndarray
        (m,) reports per cohort, int64.
    t, var : numpy.ndarray
        (m, k) unbiased bit counts and their variances
        (:func:`ldp.aggregator.rappor.counts.unbiased_bit_counts`).
    values : list
        The candidates, without duplicates.
    design : scipy.sparse.csc_matrix
        Their (m·k, M) design matrix (:func:`ldp.aggregator.bloom_design.design_matrix`).
    options : DecodeOptions
    screen : bool or None
        Force (True) or skip (False) the screen; None: screen when the
        candidates outnumber :func:`ldp.aggregator.rappor.fit.refit_limit`.
    """

    shape: RapporShape
    cohort_counts: np.ndarray
    t: np.ndarray
    var: np.ndarray
    values: list[Any]
    design: scipy.sparse.csc_matrix
    options: DecodeOptions
    screen: bool | None

    @property
    def total(self) -> int:
        """N, the number of reports."""
        return int(self.cohort_counts.sum())

    @property
    def num_candidates(self) -> int:
        """M."""
        return len(self.values)


def decode_bloom(problem: BloomProblem) -> RapporDecodeResult:
    """Regress the bit proportions on the candidates' bits, test every candidate, and tabulate.

    No reports or no candidates give a table of zero estimates with NaN
    standard errors and p-values 1.
    """
    shape = problem.shape
    m, k = shape.num_cohorts, shape.num_bits
    total = problem.total
    num_candidates = problem.num_candidates
    rows = regression(shape, problem.cohort_counts, problem.t, problem.var)
    if rows.num_rows == 0 or num_candidates == 0:
        return _empty(problem)

    xa = background_design(problem.design, rows.live)
    screened = bool(problem.screen)
    limit = refit_limit(rows)
    if problem.screen is None:
        screened = num_candidates > limit
    if screened:
        selected = screen_columns(xa, rows)
        threshold = extension_threshold(problem.options, num_candidates)
        selected = extend_selection(xa, selected, rows, limit, threshold)
    else:
        selected = np.arange(1, num_candidates + 1)
    fit = refit(xa, selected, rows, shape)
    tests = candidate_tests(xa, fit, rows.y)

    beta = fit.coefficients(num_candidates + 1)
    se, z = tests.se, tests.z
    p_values = scipy.stats.norm.sf(z[1:])
    estimate = total * beta[1:]
    table = decode_table(problem.values, estimate, total * se[1:], p_values, problem.options, total)

    share = shape.expected_distinct_bits / k
    residual = np.zeros(m * k)
    residual[rows.live] = (rows.y - fit.fitted) * rows.n_rows
    summary = FitSummary(
        num_reports=total,
        unexplained_mass=float(beta[0] / share),
        unexplained_mass_se=float(se[0] / share) if beta[0] > 0 else math.nan,
        residual=residual.reshape(m, k),
        residual_chi2=tests.test.chi2,
        residual_dof=int(tests.test.dof),
        dispersion=float(tests.test.dispersion),
        screened=screened,
        num_selected=int(selected.size),
    )
    return finish(table, problem.options, summary)


def extension_threshold(options: DecodeOptions, num_candidates: int) -> float:
    """Score z above which a screened candidate joins the refit: ``z_{1−α'} − 1``.

    ``α'`` is the largest per-candidate level at which the correction can
    detect a candidate: α/M for Bonferroni, α for Benjamini–Hochberg (its
    largest step-up threshold) and for ``"none"``. A candidate left out of
    the refit has estimate 0 and is never detected, so the refit keeps every
    candidate that could be, with a margin of one standard deviation
    (:data:`ldp.aggregator.rappor.fit.EXTEND_MARGIN`) for the change of its
    z between the screened model and the refit.
    """
    level = options.alpha / num_candidates if options.correction == "bonferroni" else options.alpha
    return float(scipy.stats.norm.isf(level)) - EXTEND_MARGIN


def _empty(problem: BloomProblem) -> RapporDecodeResult:
    """The result without reports or without candidates: zero estimates, NaN errors, p-values 1."""
    size = problem.num_candidates
    table = decode_table(
        problem.values, np.zeros(size), np.full(size, np.nan), np.ones(size), problem.options, problem.total
    )
    summary = FitSummary(num_reports=problem.total, residual=np.zeros_like(problem.t), num_selected=0)
    return finish(table, problem.options, summary)
