"""Decoding basic and boolean RAPPOR: each value owns one bit, so no regression is needed.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response". ACM CCS 2014 (basic RAPPOR).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.stats

from ldp.aggregator.candidates import unique_candidates
from ldp.aggregator.rappor.result import DecodeOptions, FitSummary, RapporDecodeResult, decode_table, finish
from ldp.errors import ParameterError
from ldp.frequency_math import frequency_variance
from ldp.specs.rappor import Rappor

__all__ = ["decode_direct"]


def decode_direct(
    spec: Rappor,
    n_cohort: np.ndarray,
    t: np.ndarray,
    candidates: Sequence[Any] | None,
    options: DecodeOptions,
) -> RapporDecodeResult:
    """Basic and boolean RAPPOR: each value owns one bit, so its count is Σ_j t_jv (unbiased).

    The bit means the same value in every cohort, so the decode is the
    frequency oracle of the pooled counts, with its fixed-data standard
    error (docs/mechanisms.md#variance, at the clipped plug-in frequency) exactly as
    :meth:`ldp.aggregator.RapporAccumulator.estimate` and the other oracles
    report it: the two paths give the same table. (The per-cohort i.i.d.
    variance of the Bloom decode would add n·f(1−f) for the random cohort
    split, which does not move a pooled count.) Boolean values come in the
    order (False, True), as there.

    Parameters
    ----------
    spec : Rappor
        A basic or boolean RAPPOR spec.
    n_cohort : numpy.ndarray
        (m,) reports per cohort.
    t : numpy.ndarray
        (m, k) unbiased bit counts (:func:`ldp.aggregator.rappor.counts.unbiased_bit_counts`).
    candidates : sequence, optional
        Values to decode (basic RAPPOR; default: the domain).
    options : DecodeOptions
    """
    total = int(n_cohort.sum())
    estimate_bits = t.sum(axis=0)
    p_star, q_star = float(spec.prob_one_given_zero), float(spec.prob_one_given_one)
    values: list[Any]
    if spec.encoding == "boolean":
        values = [False, True]
        estimate = np.array([total - estimate_bits[0], estimate_bits[0]])
    else:
        domain, domain_index = spec.domain, spec.domain_index
        if domain is None or domain_index is None:  # ldp.Rappor sets both for basic RAPPOR
            raise ParameterError("basic rappor needs a domain")
        values = list(domain) if candidates is None else unique_candidates(candidates)
        index = [domain_index.index(v) for v in values]
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
    table = decode_table(values, estimate, se, p_values, options, total)
    return finish(
        table, options, FitSummary(num_reports=total, residual=np.zeros_like(t), num_selected=len(values))
    )
