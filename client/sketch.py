"""Client encoders of Apple's sketches, CMS and HCMS (docs/mechanisms.md#cms).

One report per value, every coin from the CSPRNG (single encoders) or the
batch's random source, every probability exact: the row j (and HCMS's
column l) by rejection sampling, CMS's m bits as runs (one report) or by
:func:`~ldp.client.batch.one_hot_bits` (batches), HCMS's sign by one exact
coin. A large secure batch draws its rows, columns and HCMS's keeps on bits
(:func:`~ldp.client.bits.sampler_for`): about log2 k + log2 m + 2 bits an
HCMS report.

The client hashes the value itself (MurmurHash3, :meth:`ldp.specs.sketch.SketchSpec.position`):
any value can be encoded, the domain only lists the values the aggregator
estimates.

References
----------
.. [1] Apple Differential Privacy Team. "Learning with Privacy at Scale".
   Apple Machine Learning Journal 1(8), 2017.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import factorize_values, one_hot_bits
from ldp.client.bits import coins, sampler_for, uniforms
from ldp.client.encoders import stateless_factory
from ldp.client.randomness import as_source
from ldp.client.report_bits import LaneSampler, coin, uniform
from ldp.client.sampling import lanes_to_packed
from ldp.errors import InputError
from ldp.report import Report
from ldp.specs.sketch import CMS, HCMS, SketchSpec

__all__ = [
    "CMSEncoder",
    "HCMSEncoder",
    "cms_batch",
    "cms_encoder",
    "hadamard_sign_bits",
    "hcms_batch",
    "hcms_encoder",
]


def _check_value(value: Any) -> Any:
    if value is None:
        raise InputError("a sketch value must not be None")
    return value


def hadamard_sign_bits(columns: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """1 where H_m[l, a] = +1, that is popcount(l & a) is even; 0 where it is −1 (uint8, elementwise)."""
    both = np.bitwise_and(np.asarray(columns, dtype=np.uint64), np.asarray(positions, dtype=np.uint64))
    parity = np.zeros(both.shape, dtype=np.uint64)
    while np.any(both):
        parity ^= both & np.uint64(1)
        both = both >> np.uint64(1)
    return (parity == 0).astype(np.uint8)


class CMSEncoder:
    """Count-Mean Sketch client: a uniform row j, the one-hot vector of h_j(x) with every bit randomized; see :class:`ldp.CMS`."""

    def __init__(self, spec: CMS):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._width = spec.m
        self._full = (1 << spec.m) - 1
        self._lanes = LaneSampler((spec.p, spec.q))

    def encode(self, value: Any) -> Report:
        row = uniform(self.spec.k)
        one_hot = 1 << self.spec.position(_check_value(value), row)
        lanes = self._lanes.sample(self._width, (one_hot, self._full ^ one_hot))
        return Report.of_encoder(
            self._fingerprint, bits=lanes_to_packed(lanes, self._width), extra=(("row", row),)
        )


#: CMS's encoder factory (declared in :mod:`ldp.registry`).
cms_encoder = stateless_factory(CMSEncoder)


class HCMSEncoder:
    """Hadamard Count-Mean Sketch client: row j, column l, the bit of b·H_m[l, h_j(x)]; see :class:`ldp.HCMS`."""

    def __init__(self, spec: HCMS):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._p = spec.p

    def encode(self, value: Any) -> Report:
        spec = self.spec
        row = uniform(spec.k)
        column = uniform(spec.m)
        sign = bin(column & spec.position(_check_value(value), row)).count("1") % 2 == 0
        keep = coin(self._p)
        bit = int(sign == keep)
        return Report.of_encoder(self._fingerprint, extra=(("row", row), ("column", column), ("bit", bit)))


#: HCMS's encoder factory (declared in :mod:`ldp.registry`).
hcms_encoder = stateless_factory(HCMSEncoder)


def _batch_positions(
    spec: SketchSpec, values: Sequence[Any] | np.ndarray, rows: np.ndarray, indices: bool
) -> np.ndarray:
    """h_{rows[i]}(values[i]) for every report: domain indices from the cached table, other values hashed per row."""
    if indices:
        idx = np.asarray(values, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= spec.domain_size):
            raise InputError(f"domain indices must be in [0, {spec.domain_size})")
        return spec.domain_positions[idx, rows]
    codes, uniques = factorize_values(values)
    for value in uniques:
        _check_value(value)
    out = np.empty(codes.size, dtype=np.int64)
    if len(uniques) * spec.k <= 4 * max(codes.size, spec.k):  # few distinct values: hash each in every row
        table = spec.positions(uniques)
        out[:] = table[codes, rows]
        return out
    order = np.argsort(rows, kind="stable")  # many distinct values: hash each report's value in its row only
    bounds = np.searchsorted(rows[order], np.arange(spec.k + 1))
    for j in range(spec.k):
        members = order[bounds[j] : bounds[j + 1]]
        if members.size:
            present, inverse = np.unique(codes[members], return_inverse=True)
            column = spec.positions([uniques[c] for c in present.tolist()], [j])[:, 0]
            out[members] = column[inverse]
    return out


def cms_batch(spec: CMS, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    source = as_source(rng)
    rows = uniforms(sampler_for(source, len(values)), spec.k, len(values)).astype(np.int64, copy=False)
    positions = _batch_positions(spec, values, rows, indices)
    bits = one_hot_bits(source, positions, spec.m, spec.p, spec.q)
    return ReportBatch.from_columns(spec.fingerprint, {"row": rows, "bits": bits})


def hcms_batch(spec: HCMS, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    n = len(values)
    sampler = sampler_for(rng, n)
    rows = uniforms(sampler, spec.k, n).astype(np.int64, copy=False)
    columns = uniforms(sampler, spec.m, n).astype(np.int64, copy=False)
    positions = _batch_positions(spec, values, rows, indices)
    signs = hadamard_sign_bits(columns, positions)
    keep = coins(sampler, spec.p, n).astype(np.uint8)
    bits = (1 - (signs ^ keep)).astype(np.int64)
    return ReportBatch.from_columns(spec.fingerprint, {"row": rows, "column": columns, "bit": bits})
