"""Hadamard response client: one report y in [0, K) per value (docs/mechanisms.md#hr).

The single encoder takes one Knuth–Yao walk on the CSPRNG's bits
(:mod:`ldp.client.report_bits`) over two groups: the b/2 members of C_x,
each with probability in, and the K − b/2 members of its complement, each
with out; so every output has exactly its probability. The complement's u-th member is, for
u < b/2, the u-th "−1" position of x's row in its block, and otherwise
output u − b/2 of the other blocks (skipping x's block).

The batch encoder samples the same distribution with the exact samplers of
:mod:`ldp.client.randomness`: a coin with probability p for "in C_x", then a
uniform index in C_x or in its complement.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import value_indices
from ldp.client.bits import BitSource, coins, sampler_for, uniforms
from ldp.client.encoders import stateless_factory
from ldp.client.randomness import RandomSource
from ldp.client.report_bits import KnuthYao, draw
from ldp.hadamard_math import symbol_layout
from ldp.report import Report
from ldp.specs import HR

__all__ = ["HadamardEncoder", "hadamard_batch", "hadamard_encoder", "hadamard_outputs"]


@lru_cache(maxsize=16)
def _layout_tables(domain_size: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """Per domain index x: its Hadamard row r and its block's first output, as small unsigned words."""
    blk, row = symbol_layout(np.arange(domain_size), block)
    starts = blk * block
    width = np.uint32 if int(starts.max(initial=0)) + block <= 1 << 32 else np.uint64
    return row.astype(width), starts.astype(width)


def hadamard_outputs(spec: HR, indices: Any, inside: Any, members: Any) -> np.ndarray:
    """Outputs for domain ``indices``: the ``members``-th element of C_x where ``inside``, else of its complement.

    ``members`` is in [0, b/2) where ``inside`` and in [0, K − b/2) elsewhere.
    The complement's u-th member is, for u < b/2, the u-th −1 position of x's
    row in its block (:func:`~ldp.hadamard_math.row_positions`, computed here
    from per-value tables in 32-bit words), else output u − b/2 of the other
    blocks (x's block skipped).
    """
    b = spec.block_size
    half = b // 2
    x = np.asarray(indices, dtype=np.int64)
    row_of, start_of = _layout_tables(spec.domain_size, b)
    rows = row_of[x]
    lows = rows & (0 - rows)  # r's lowest set bit
    highs = 0 - lows  # the bits from it up
    u = np.asarray(members).astype(rows.dtype, copy=False)
    inside = np.asarray(inside, dtype=bool)
    j = u & rows.dtype.type(half - 1)  # u mod b/2: its own block's members
    base = j & highs
    base += j  # j with a 0 inserted at r's lowest set bit
    parity = np.bitwise_count(rows & base)
    parity ^= ~inside  # the bit that gives an even (+1) or odd (−1) popcount
    parity &= 1
    base |= lows * parity
    if spec.outputs == b:  # one block: every member is in x's block, which starts at 0
        return base.astype(np.int64)
    starts = start_of[x]
    within = np.add(base, starts, dtype=np.int64)
    other = u.astype(np.int64) - half
    other += b * (other >= starts)  # an output of the other blocks, x's block skipped
    return np.where(inside | (u < half), within, other)


class HadamardEncoder:
    """Hadamard response (:class:`ldp.specs.HR`): one CSPRNG draw per report, exact probabilities."""

    def __init__(self, spec: HR):
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._block = spec.block_size
        self._half = spec.block_size // 2
        self._table = KnuthYao(
            [(self._half, spec.in_probability), (spec.outputs - self._half, spec.out_probability)]
        )

    def encode(self, value: Any) -> Report:
        index = self.spec.index_of(value)
        b, half = self._block, self._half
        block, row = divmod(index, b - 1)
        row += 1
        group, member = draw(self._table)
        inside = group == 0
        if inside or member < half:
            low = row & -row
            base = ((member & ~(low - 1)) << 1) | (member & (low - 1))
            parity = ((row & base).bit_count() & 1) ^ (not inside)  # even popcount on C_x, odd off it
            output = block * b + (base | (low if parity else 0))
        else:
            other = member - half
            output = other + b if other >= block * b else other
        return Report.of_encoder(self._fingerprint, value=output)


#: HR's encoder factory (declared in :mod:`ldp.registry`).
hadamard_encoder = stateless_factory(HadamardEncoder)


#: Users whose outputs are computed per chunk: every temporary array stays small (≤ 64 KiB), so the
#: allocator reuses its memory instead of mapping fresh pages for each one.
_CHUNK = 8192


def hadamard_batch(spec: HR, values, rng: RandomSource, *, cohorts=None, indices=False) -> ReportBatch:
    """Vectorized HR: P[y ∈ C_x] = p, then a uniform member (:func:`~ldp.client.bits.sampler_for`'s samplers).

    With one block (K = b) C_x and its complement both have b/2 members, so
    one uniform index in [0, b/2) serves every user whichever side its coin
    chose. The coins and members of the whole batch are drawn at once (the
    bit samplers' cost is per call); the outputs are computed in chunks of
    ``_CHUNK`` users.
    """
    idx = value_indices(spec, values, indices)
    inside, members = _hadamard_draws(spec, sampler_for(rng, idx.size), idx.size)
    out = np.empty(idx.size, dtype=np.int64)
    for start in range(0, idx.size, _CHUNK):
        stop = min(start + _CHUNK, idx.size)
        out[start:stop] = hadamard_outputs(spec, idx[start:stop], inside[start:stop], members[start:stop])
    return ReportBatch(spec=spec.fingerprint, values=out)


def _hadamard_draws(spec: HR, sampler: RandomSource | BitSource, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` users' coins (y ∈ C_x) and members (an index into C_x or into its complement)."""
    inside = coins(sampler, spec.p, n)
    half = spec.block_size // 2
    if spec.outputs - half == half:
        return inside, uniforms(sampler, half, n)
    members = np.empty(n, dtype=np.int64)
    where_in = np.flatnonzero(inside)
    where_out = np.flatnonzero(~inside)
    members[where_in] = uniforms(sampler, half, where_in.size)
    members[where_out] = uniforms(sampler, spec.outputs - half, where_out.size)
    return inside, members
