"""Fast simulation of the range mechanisms: the aggregated counts drawn from their exact distribution.

``range-hierarchy``: each leaf's users split over the h levels
multinomially; at level l, node a's set bits are Bin(m_a, p) + Bin(n_l − m_a, q)
(m_a the level's users in a), independently over nodes (OUE's coins are
independent). ``range-haar``: at level l the users of each (node, sign)
spread over the 2^l Hadamard indices multinomially; at index j their
transformed sign is H[j, a]·s, kept with probability p. Both return the
accumulator holding the simulated counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.aggregator.ranges import HaarAccumulator, HierarchyAccumulator
from ldp.errors import ParameterError
from ldp.specs.ranges import RangeHaar, RangeHierarchy

__all__ = ["haar_simulated", "hierarchy_simulated"]


def _counts(spec: Any, true_counts: Any) -> np.ndarray:
    counts = np.asarray(true_counts, dtype=np.int64)
    if counts.shape != (spec.domain_size,) or (counts.size and counts.min() < 0):
        raise ParameterError(
            f"true_counts must be {spec.domain_size} non-negative counts, got shape {counts.shape}"
        )
    return counts


def hierarchy_simulated(
    spec: RangeHierarchy, true_counts: Any, rng: np.random.Generator
) -> HierarchyAccumulator:
    """The accumulator of n = Σ true_counts simulated ``range-hierarchy`` reports (leaf counts in domain order)."""
    counts = _counts(spec, true_counts)
    h, b = spec.levels, spec.branching
    split = rng.multinomial(counts, np.full(h, 1.0 / h))  # D × h: each leaf's users per level
    level_reports = split.sum(axis=0)
    bits = np.zeros((h, spec.leaves), dtype=np.int64)
    p, q = float(spec.p), float(spec.q)
    leaves = np.arange(spec.domain_size)
    for level in range(1, h + 1):
        width = spec.level_width(level)
        inside = np.bincount(leaves // b ** (h - level), weights=split[:, level - 1], minlength=width).astype(
            np.int64
        )
        bits[level - 1, :width] = rng.binomial(inside, p) + rng.binomial(level_reports[level - 1] - inside, q)
    return HierarchyAccumulator.from_counts(spec, level_reports, bits)


def haar_simulated(spec: RangeHaar, true_counts: Any, rng: np.random.Generator) -> HaarAccumulator:
    """The accumulator of n = Σ true_counts simulated ``range-haar`` reports (leaf counts in domain order)."""
    counts = _counts(spec, true_counts)
    h, leaves = spec.levels, spec.leaves
    split = rng.multinomial(counts, np.full(h, 1.0 / h))
    out = np.zeros((h, spec.half_leaves, 2), dtype=np.int64)
    p = float(spec.p)
    v = np.arange(spec.domain_size)
    for level in range(h):
        width, span = 1 << level, leaves >> level
        group = 2 * (v // span) + ((v % span) >= span // 2)  # (node, right half)
        users = np.bincount(group, weights=split[:, level], minlength=2 * width).astype(np.int64)
        spread = rng.multinomial(users, np.full(width, 1.0 / width))  # groups × j
        node = np.arange(2 * width) // 2
        sign = 1 - 2 * (np.arange(2 * width) % 2)
        j = np.arange(width)
        parity = np.bitwise_count((node[:, None] & j[None, :]).astype(np.uint64)) & 1
        plus = (sign[:, None] * (1 - 2 * parity.astype(np.int64))) > 0  # H[j, a]·s = +1
        kept = rng.binomial(spread, p)
        ones = np.where(plus, kept, spread - kept).sum(axis=0)
        out[level, :width, 1] = ones
        out[level, :width, 0] = spread.sum(axis=0) - ones
    return HaarAccumulator.from_counts(spec, out)
