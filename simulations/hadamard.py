"""Fast simulation of Hadamard response: the output histogram drawn from its exact distribution.

Each report is, equivalently, "with probability w = K·q_out a uniform output
over all K, otherwise a uniform member of C_x" (q_out the probability of
one output outside C_x; the uniform draw lands in C_x with the missing
in-set mass, so every output keeps its exact probability). Per value x,
U_x ~ Bin(n_x, w) users are uniform: their ΣU_x outputs are one multinomial
over K. The other m_x = n_x − U_x users spread uniformly over the b/2
members of C_x: one multinomial per value when m_x ≥ b/2, else m_x uniform
draws. The cost is O(K + Σ_x min(m_x, b/2)) ≤ O(K + n), and the histogram
(hence every estimate, jointly) has the exact distribution of n reports
(docs/mechanisms.md#hr).
"""

from __future__ import annotations

import numpy as np

from ldp.hadamard_math import row_positions, signed_counts
from ldp.specs import HR

__all__ = ["hr_histogram", "hr_support_counts"]

_CHUNK_CELLS = 1 << 22  # multinomial rows drawn at once: at most this many cells


def hr_histogram(spec: HR, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Output counts (length K) of ``counts[x]`` users holding each domain index x."""
    counts = np.asarray(counts, dtype=np.int64)
    K, b = spec.outputs, spec.block_size
    half = b // 2
    uniform = float(spec.out_probability * K)  # = 1 − (in-set mass above the uniform level) ≤ 1
    spread = rng.binomial(counts, uniform)
    hist = rng.multinomial(int(spread.sum()), np.full(K, 1.0 / K)).astype(np.int64)
    focused = counts - spread
    blk, row = spec.layout(np.arange(spec.domain_size))
    few = np.flatnonzero((focused > 0) & (focused < half))
    if few.size:  # one uniform member per user
        who = np.repeat(few, focused[few])
        members = rng.integers(0, half, who.size)
        hist += np.bincount(row_positions(row[who], members, plus=True) + blk[who] * b, minlength=K)
    many = np.flatnonzero(focused >= half)
    rows_per_chunk = max(1, _CHUNK_CELLS // half)
    cells = np.full(half, 1.0 / half)
    j = np.arange(half)
    for start in range(0, many.size, rows_per_chunk):
        part = many[start : start + rows_per_chunk]
        drawn = rng.multinomial(focused[part], cells)  # (len(part), b/2)
        positions = row_positions(row[part, None], j[None, :], plus=True) + (blk[part] * b)[:, None]
        hist += np.bincount(positions.ravel(), weights=drawn.ravel(), minlength=K).astype(np.int64)
    return hist


def hr_support_counts(spec: HR, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Signed support counts S_x (:class:`ldp.specs.HR`) of an exactly drawn output histogram."""
    hist = hr_histogram(spec, counts, rng)
    return signed_counts(hist, spec.blocks, spec.block_size, spec.domain_size)[0]
