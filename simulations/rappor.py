"""RAPPOR in simulations: collect counts (fast or faithful) and decode against candidates.

Decoding is the aggregator's :func:`ldp.aggregator.rappor.decode.decode`
(candidate regression, significance at the Bonferroni level), so the
simulation measures what a deployment would get.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014.
.. [2] google/rappor, analysis/R/decode.R.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.errors import ParameterError
from ldp.simulations import fast

__all__ = ["decode_candidates", "rappor_collect", "rappor_estimates"]


def rappor_collect(
    spec: Any,
    values: Sequence[Any],
    true_counts: Any,
    rng: np.random.Generator,
    mode: str = "fast",
    client_sample: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(cohort_counts, bit_counts) after one report from each user."""
    if mode == "fast":
        return fast.rappor_counts(spec, values, true_counts, rng)
    from ldp.simulations.faithful import collect

    accumulator = collect(spec, values, true_counts, rng, client_sample=client_sample)
    return np.asarray(accumulator.cohort_counts), np.asarray(accumulator.bit_counts)


def decode_candidates(
    spec: Any, cohort_counts: np.ndarray, bit_counts: np.ndarray, candidates: Sequence[Any]
) -> tuple[np.ndarray, np.ndarray]:
    """Estimated proportion and detection flag of every candidate, in candidate order.

    Candidates the decoder does not report (or does not detect) get their
    decoded estimate with ``detected = False``; absent rows count as 0.
    """
    from ldp.aggregator.rappor.decode import decode

    frame = decode(spec, cohort_counts, bit_counts, list(candidates))
    n = float(np.sum(cohort_counts))
    if "proportion" in frame.columns:
        proportions = frame["proportion"].to_numpy(dtype=float)
    else:
        proportions = frame["estimate"].to_numpy(dtype=float) / n
    keys = [str(v) for v in frame["value"]]
    estimate_of = dict(zip(keys, proportions))
    detected_of = dict(zip(keys, frame["detected"].to_numpy(dtype=bool)))
    estimate = np.array([estimate_of.get(str(c), 0.0) for c in candidates], dtype=float)
    detected = np.array([bool(detected_of.get(str(c), False)) for c in candidates], dtype=bool)
    estimate[~np.isfinite(estimate)] = 0.0
    return estimate, detected


def rappor_estimates(
    spec: Any,
    domain: Sequence[Any],
    true_counts: Any,
    rng: np.random.Generator,
    mode: str = "fast",
    client_sample: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Collect from every user and decode with the domain as the candidate list."""
    if len(domain) < 2:
        raise ParameterError("rappor simulation needs at least 2 domain values")
    cohort_counts, bit_counts = rappor_collect(spec, domain, true_counts, rng, mode, client_sample)
    return decode_candidates(spec, cohort_counts, bit_counts, domain)
