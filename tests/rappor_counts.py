"""Exact draws of RAPPOR's aggregated counts for the decode tests (shared by test_rappor_decode and test_rappor_screen)."""

from __future__ import annotations

import numpy as np

from ldp.aggregator.bloom_design import design_matrix


def draw_counts(spec, values, partition, rng):
    """(cohort_counts, bit_counts) for ``partition[s]`` clients holding ``values[s]`` (exact)."""
    m, k = spec.num_cohorts, spec.num_bits
    alloc = rng.multinomial(np.asarray(partition), np.full(m, 1.0 / m))
    cohort_counts = alloc.sum(axis=0)
    x = design_matrix(spec, values)
    ones = np.asarray(x.multiply(np.repeat(alloc.T, k, axis=0)).sum(axis=1)).ravel().astype(np.int64)
    p_star, q_star = float(spec.prob_one_given_zero), float(spec.prob_one_given_one)
    bits = rng.binomial(ones, q_star) + rng.binomial(np.repeat(cohort_counts, k) - ones, p_star)
    return cohort_counts, bits.reshape(m, k)
