"""LOLOHA's simulator: the aggregator's support counts for one report per user, from the exact joint law.

Given n_v users per value, each user draws its pool index uniformly, hashes
its value with that pool function and reports the chain's randomized
response over the g buckets (keep A, each other bucket B: for a user
reporting once, the memoized round 1 and the fresh round 2 compose to
exactly this). The reports are counted per (pool function, bucket) and
decoded as the aggregator decodes them (:func:`ldp.aggregator.loloha.cell_support_counts`),
so the support counts have their exact joint distribution for the spec's
public pool, the pool's error included. Cost O(n + S·d), no report objects.
"""

from __future__ import annotations

import numpy as np

from ldp.aggregator.loloha import cell_support_counts, pool_support_counts
from ldp.client.batch import randomized_response_batch
from ldp.client.randomness import as_source
from ldp.hashing import lh_buckets
from ldp.specs.loloha import LOLOHA

__all__ = ["loloha_support_counts"]


def loloha_support_counts(spec: LOLOHA, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """C_v of every value after one report of each of Σ counts users (seeded, simulation only)."""
    source = as_source(rng)
    idx = np.repeat(np.arange(spec.domain_size, dtype=np.int64), np.asarray(counts, dtype=np.int64))
    seeds = source.integers(spec.pool_size, idx.size).astype(np.int64, copy=False)
    buckets = lh_buckets(spec.pool[seeds], idx, spec.g).astype(np.int64)
    keep, other = spec.chain
    reported = randomized_response_batch(source, buckets, spec.g, keep, other)
    if idx.size <= spec.pool_size * spec.g:  # each report its own cell, as the aggregator decodes few reports
        return cell_support_counts(seeds, reported, None, spec.pool, spec.g, spec.domain_size)
    table = np.bincount(seeds * spec.g + reported, minlength=spec.pool_size * spec.g)
    return pool_support_counts(table.reshape(spec.pool_size, spec.g), spec.pool, spec.domain_size)
