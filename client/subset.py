"""Subset selection encoders: one value on the device, and the vectorized batch (docs/mechanisms.md#ss).

A report is a set of ω domain values, sent as a d-bit vector. The client
draws one exact coin for "the subset holds the true value x" (probability p,
the spec's exact fraction), then the k = ω − 1 (or ω) other members
uniformly without replacement from the d − 1 values other than x, by
Floyd's algorithm: for j = N − k, …, N − 1 (N = d − 1) draw t uniform in
[0, j] and add t, or j when t is already in the set. Every k-subset of
[0, N) comes out with probability 1/C(N, k) [1]_. Other value o stands for
domain index o + (o ≥ x).

The single encoder draws every coin with ``secrets.randbelow`` in that
order (the order another implementation must follow to reproduce the
cross-language vectors); the batch encoder runs the same algorithm on many
users at once with a random source's exact samplers.

References
----------
.. [1] J. Bentley, R. Floyd. "Programming pearls: a sample of brilliance".
   Communications of the ACM 30(9), 1987.
.. [2] M. Ye, A. Barg. IEEE Trans. Inf. Theory 64(8), 2018.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import value_indices
from ldp.client.encoders import stateless_factory
from ldp.client.randomness import as_source, bernoulli
from ldp.client.sampling import lanes_to_packed
from ldp.report import Report
from ldp.specs.subset import SubsetSelection

__all__ = ["SubsetEncoder", "subset_batch", "subset_encoder"]

#: Bytes of packed subsets the batch encoder builds per chunk of users (rows × ⌈d/8⌉): 8 MiB.
_BLOCK_BYTES = 1 << 23


def floyd_sample(population: int, size: int) -> set[int]:
    """A uniform ``size``-subset of [0, population) from ``secrets.randbelow`` (Floyd's algorithm)."""
    chosen: set[int] = set()
    for j in range(population - size, population):
        t = secrets.randbelow(j + 1)
        chosen.add(j if t in chosen else t)
    return chosen


class SubsetEncoder:
    """Subset selection; see :class:`ldp.SubsetSelection`.

    One ``randbelow(p.den) < p.num`` coin decides whether the subset holds
    the true value, then Floyd's algorithm draws the others.
    """

    def __init__(self, spec: SubsetSelection):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._d = spec.domain_size
        self._omega = spec.omega
        self._num, self._den = spec.p.numerator, spec.p.denominator

    def encode(self, value: Any) -> Report:
        x = self.spec.index_of(value)
        holds = secrets.randbelow(self._den) < self._num
        others = floyd_sample(self._d - 1, self._omega - holds)
        lanes = 1 << x if holds else 0
        for o in others:
            lanes |= 1 << (o + (o >= x))
        return Report(spec=self._fingerprint, bits=lanes_to_packed(lanes, self._d))


#: Subset selection's encoder factory (declared in :mod:`ldp.registry`).
subset_encoder = stateless_factory(SubsetEncoder)


#: The mask of vector bit i within its byte, by i mod 8 (numpy.packbits order: most significant bit first).
_BIT = np.array([0x80 >> k for k in range(8)], dtype=np.uint8)


def _subset_rows(source: Any, x: np.ndarray, spec: SubsetSelection, packed: np.ndarray) -> None:
    """Write the subsets of the users with domain indices ``x`` into ``packed`` (len(x), ⌈d/8⌉), zeroed here.

    The subsets are built in their packed form: a step tests and sets one bit
    per user (one byte of its own row, so the indices of a step never repeat).
    """
    d, omega = spec.domain_size, spec.omega
    m = x.size
    population = d - 1
    packed.fill(0)
    flat = packed.reshape(-1)
    base = np.arange(m, dtype=np.int64) * packed.shape[1]

    def mark(rows: np.ndarray, positions: np.ndarray) -> None:
        where = rows + (positions >> 3)
        flat[where] |= _BIT[positions & 7]

    holds = bernoulli(source, spec.p, m)
    # users whose subset does not hold x draw omega others: Floyd's first step (the set is still empty)
    first = np.flatnonzero(~holds)
    if first.size:
        t = source.integers(population - omega + 1, first.size).astype(np.int64, copy=False)
        mark(base[first], t + (t >= x[first]))
    for j in range(population - omega + 1, population):  # the steps every user takes
        t = source.integers(j + 1, m).astype(np.int64, copy=False)
        pos = t + (t >= x)
        taken = (flat[base + (pos >> 3)] & _BIT[pos & 7]) != 0
        pos[taken] = j + (j >= x[taken])
        mark(base, pos)
    mark(base[holds], x[holds])


def subset_batch(spec: SubsetSelection, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """Subset selection for many users: the single encoder's algorithm, vectorized over users, exact."""
    source = as_source(rng)
    idx = value_indices(spec, values, indices)
    width = (spec.domain_size + 7) // 8
    rows = max(1, _BLOCK_BYTES // width)
    packed = np.empty((idx.size, width), dtype=np.uint8)
    for start in range(0, idx.size, rows):
        block = idx[start : start + rows]
        _subset_rows(source, block, spec, packed[start : start + block.size])
    return ReportBatch(spec=spec.fingerprint, bits=packed)
