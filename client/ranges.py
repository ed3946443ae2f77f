"""Clients of the range mechanisms: one sampled level per report, exact coins (docs/range-queries.md).

``range-hierarchy``: level l uniform on 1..h, then OUE of the user's level-l
node over B^l bits (the exact bit sampler of :mod:`ldp.client.sampling`;
batches by :func:`ldp.client.batch.one_hot_bits`), in a report of B^h bits
whose bits from B^l on are 0. The report's ``level`` field is l − 1.

``range-haar``: level l uniform on 0..h−1, index j uniform on [0, 2^l), and
the sign H[j, a]·s of the user's level-l coefficient kept with probability
p (binary randomized response); ``bit`` = 1 for +1.

Every coin comes from the CSPRNG (one report) or the given random source
(batches: a large secure batch draws its levels, indices and keeps on bits,
:func:`~ldp.client.bits.sampler_for`); the level and index are uniform and
independent of the value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import one_hot_bits, value_indices
from ldp.client.bits import coins, sampler_for, uniforms
from ldp.client.encoders import stateless_factory
from ldp.client.randomness import RandomSource, as_source
from ldp.client.report_bits import LaneSampler, coin, uniform
from ldp.client.sampling import lanes_to_packed
from ldp.report import Report
from ldp.specs.ranges import RangeHaar, RangeHierarchy

__all__ = [
    "HaarEncoder",
    "HierarchyEncoder",
    "haar_batch",
    "haar_encoder",
    "haar_sign",
    "hierarchy_batch",
    "hierarchy_encoder",
]


def haar_sign(index: Any, leaves: int, level: Any, j: Any) -> Any:
    """H[j, a]·s: the Hadamard-transformed sign of leaf ``index``'s level-``level`` Haar coefficient (±1).

    a = index // m, s = +1 on the left half of node a (m = leaves/2^level);
    H[j, a] = (−1)^popcount(j & a) (Sylvester).
    """
    idx = np.asarray(index, dtype=np.int64)
    span = np.right_shift(leaves, np.asarray(level, dtype=np.int64))
    node = idx // span
    sign = np.where((idx % span) < span // 2, 1, -1)
    parity = np.bitwise_count((np.asarray(j, dtype=np.int64) & node).astype(np.uint64)) & 1
    return sign * (1 - 2 * parity.astype(np.int64))


class HierarchyEncoder:
    """``range-hierarchy``: a uniform level, then OUE of the value's node at that level."""

    def __init__(self, spec: RangeHierarchy):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._lanes = LaneSampler((spec.p, spec.q))

    def encode(self, value: Any) -> Report:
        spec = self.spec
        index = spec.index_of(value)
        level = 1 + uniform(spec.levels)
        width = spec.level_width(level)
        node = index // spec.branching ** (spec.levels - level)
        one_hot = 1 << node
        full = (1 << width) - 1
        lanes = self._lanes.sample(width, (one_hot, full ^ one_hot))
        return Report.of_encoder(
            self._fingerprint, bits=lanes_to_packed(lanes, spec.leaves), extra=(("level", level - 1),)
        )


#: The encoder factory of ``range-hierarchy``.
hierarchy_encoder = stateless_factory(HierarchyEncoder)


def hierarchy_batch(spec: RangeHierarchy, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """Vectorized ``range-hierarchy``: uniform levels, then exact OUE coins, masked to each level's width."""
    source = as_source(rng)
    idx = value_indices(spec, values, indices)
    h, leaves = spec.levels, spec.leaves
    level = uniforms(sampler_for(source, idx.size), h, idx.size).astype(np.int64, copy=False) + 1
    node = idx // np.power(spec.branching, h - level)
    widths = np.array([spec.level_width(lv) for lv in range(1, h + 1)], dtype=np.int64)[level - 1]
    bits = one_hot_bits(source, node, leaves, spec.p, spec.q, widths=widths)
    return ReportBatch.from_columns(spec.fingerprint, {"level": level - 1, "bits": bits})


class HaarEncoder:
    """``range-haar``: a uniform level and Hadamard index, then binary RR of the transformed sign."""

    def __init__(self, spec: RangeHaar):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._p = spec.p

    def encode(self, value: Any) -> Report:
        spec = self.spec
        index = spec.index_of(value)
        level = uniform(spec.levels)
        j = uniform(1 << level)
        sign = int(haar_sign(index, spec.leaves, level, j))
        kept = coin(self._p)
        bit = int((sign > 0) == kept)
        return Report.of_encoder(self._fingerprint, extra=(("level", level), ("index", j), ("bit", bit)))


#: The encoder factory of ``range-haar``.
haar_encoder = stateless_factory(HaarEncoder)


def haar_batch(spec: RangeHaar, values, rng: RandomSource, *, cohorts=None, indices=False) -> ReportBatch:
    """Vectorized ``range-haar``: uniform level and index, exact Bernoulli(p) keeps."""
    idx = value_indices(spec, values, indices)
    sampler = sampler_for(rng, idx.size)
    level = uniforms(sampler, spec.levels, idx.size).astype(np.int64, copy=False)
    j = np.zeros(idx.size, dtype=np.int64)
    for lv in range(1, spec.levels):
        at = np.flatnonzero(level == lv)
        j[at] = uniforms(sampler, 1 << lv, at.size)
    sign = haar_sign(idx, spec.leaves, level, j)
    kept = coins(sampler, spec.p, idx.size)
    bit = ((sign > 0) == kept).astype(np.int64)
    return ReportBatch.from_columns(spec.fingerprint, {"level": level, "index": j, "bit": bit})
