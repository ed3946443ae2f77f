"""Pure math of Hadamard response (docs/mechanisms.md#hr): layout, output sets, transform, estimator.

The K = B·b outputs are B blocks of b positions (b a power of two). Domain
index x sits in block ⌊x/(b−1)⌋ at row (x mod (b−1)) + 1 of the Sylvester
Hadamard matrix H_b, whose entry (r, c) is (−1)^popcount(r & c). The output
set C_x is the b/2 positions c of x's block with H_b[r, c] = +1.

For a row r ≥ 1 the +1 positions are the c with parity(r & c) = 0, a
hyperplane of GF(2)^log2(b); :func:`row_positions` maps an index j in
[0, b/2) to the j-th of them (or of the −1 positions) by inserting, at the
lowest set bit t of r, the bit that fixes the parity. The map is a
bijection, so a uniform j gives a uniform member of the set.

Decoding needs, per symbol, the signed count S_x = #(outputs in C_x) −
#(outputs in x's block outside C_x): row r of the block's Walsh–Hadamard
transform. :func:`fwht` computes every row of every block at once in
O(K log b).

References
----------
.. [1] J. Acharya, Z. Sun, H. Zhang. "Hadamard Response: Estimating
   Distributions Privately, Efficiently, and with Little Communication".
   AISTATS 2019.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ldp.errors import ParameterError

__all__ = [
    "block_count",
    "block_size",
    "fwht",
    "hr_estimates",
    "hr_variance",
    "row_positions",
    "signed_counts",
    "symbol_layout",
]


def block_count(e_bound: Fraction, domain_size: int) -> int:
    """The default B: the power of two ≤ min(e^ε, 2d) with the smallest mean variance over uniform data.

    The paper's B = 2^⌊log2 min(e^ε, 2d)⌋ is order-optimal; among the powers
    of two up to it this takes the one minimizing the mean over the d values
    of n·Var[f̂_x] at uniform data, c·(2 + ḡ(e − 1))/(e − 1)² with
    c = 2B − 1 + e and ḡ = Σ_j (m_j/d)² (m_j values in block j), the exact
    average of g over x (docs/mechanisms.md#hr-variance). Ties go to the
    smaller B. Exact rational arithmetic, so the choice is the same on every
    machine.
    """
    e = Fraction(e_bound)
    limit = min(e, Fraction(2 * domain_size))
    best, best_cost, blocks = 1, None, 1
    while blocks <= limit:
        width = block_size(domain_size, blocks) - 1  # values per full block
        full, rest = divmod(domain_size, width)
        mass = Fraction(full * width * width + rest * rest, domain_size * domain_size)  # ḡ
        cost = (2 * blocks - 1 + e) * (2 + mass * (e - 1))
        if best_cost is None or cost < best_cost:
            best, best_cost = blocks, cost
        blocks *= 2
    return best


def block_size(domain_size: int, blocks: int) -> int:
    """b = 2^⌈log2(d/B + 1)⌉: the smallest power of two with B·(b − 1) ≥ d."""
    need = -(-domain_size // blocks) + 1  # ⌈d/B⌉ + 1
    return 1 << (need - 1).bit_length()


def symbol_layout(indices: Any, block: int) -> tuple[np.ndarray, np.ndarray]:
    """(block, row) of each domain index: ⌊x/(b−1)⌋ and (x mod (b−1)) + 1."""
    x = np.asarray(indices, dtype=np.int64)
    return x // (block - 1), x % (block - 1) + 1


def row_positions(rows: Any, j: Any, *, plus: Any) -> np.ndarray:
    """The ``j``-th position (j in [0, b/2)) of row ``rows`` of H_b with entry +1 (``plus``) or −1.

    Positions are within the block, in [0, b). Vectorized over ``rows``,
    ``j`` and ``plus`` (a bool, or a boolean array choosing the sign per element).
    """
    r = np.asarray(rows, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    low = r & -r  # lowest set bit of r (r ≥ 1)
    mask = low - 1
    base = ((j & ~mask) << 1) | (j & mask)  # j with a 0 inserted at bit t
    parity = np.bitwise_count(r & base).astype(np.int64) & 1
    parity ^= ~np.asarray(plus, dtype=bool)  # the bit at t that gives an even (+1) or odd (−1) popcount
    return base | (parity * low)


def fwht(values: Any, axis: int = -1) -> np.ndarray:
    """Unnormalized fast Walsh–Hadamard transform along ``axis`` (length a power of two), in Sylvester order.

    out[..., r, ...] = Σ_c (−1)^popcount(r & c) values[..., c, ...], in
    O(b log b) per transform (one vectorized butterfly per bit of b).
    """
    a = np.moveaxis(np.array(values, copy=True), axis, -1)
    size = a.shape[-1]
    if size & (size - 1) or size == 0:
        raise ParameterError(
            f"the Walsh-Hadamard transform needs a power-of-two length, got {size} (not a power-of-2)"
        )
    lead = a.shape[:-1]
    h = 1
    while h < size:
        view = a.reshape(*lead, size // (2 * h), 2, h)
        top = view[..., 0, :].copy()
        view[..., 0, :] += view[..., 1, :]
        view[..., 1, :] = top - view[..., 1, :]
        h *= 2
    return np.moveaxis(a, -1, axis)


def signed_counts(histogram: Any, blocks: int, block: int, domain_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(S_x for every domain index, reports in each symbol's block) from the output histogram.

    S_x = #(outputs in C_x) − #(outputs in x's block outside C_x) = row r of
    the Walsh–Hadamard transform of x's block; row 0 is the block's total.
    """
    hist = np.asarray(histogram, dtype=np.int64).reshape(blocks, block)
    transformed = fwht(hist, axis=1)
    blk, row = symbol_layout(np.arange(domain_size), block)
    return transformed[blk, row], transformed[blk, 0]


def hr_estimates(
    signed: Any, block_reports: Any, n: int, ratio: Fraction | float, blocks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased frequencies f̂_x and their plug-in fixed-data variances.

    With e the exact probability ratio and c = 2B − 1 + e, the per-report
    statistic of x is L = (c/(e−1))·h(y), h(y) = ±1 on x's block by the sign of
    H_b[r, ·] and 0 elsewhere, so f̂_x = (c/(e−1))·S_x/n, and
    n·Var = (c/(e−1))²·P[y in x's block] − f_x (fixed data), estimated by
    the observed block fraction and f̂_x clipped to [0, 1].

    Returns
    -------
    (f_hat, variance) : tuple of numpy.ndarray
    """
    e = float(ratio)
    scale = (2 * blocks - 1 + e) / (e - 1)
    f_hat = scale * np.asarray(signed, dtype=float) / n
    second = scale**2 * np.asarray(block_reports, dtype=float) / n
    variance = np.maximum(second - np.clip(f_hat, 0.0, 1.0), 0.0) / n
    return f_hat, variance


def hr_variance(frequency: Any, block_frequency: Any, n: Any, ratio: Fraction | float, blocks: int) -> Any:
    """Exact fixed-data Var[f̂_x] for n reports: [c(2 + g(e−1))/(e−1)² − f]/n.

    ``frequency`` is f_x, ``block_frequency`` g the fraction of users whose
    value lies in x's block (g ≥ f; g = 1 when B = 1); c = 2B − 1 + e.
    """
    e = float(ratio)
    c = 2 * blocks - 1 + e
    f = np.asarray(frequency, dtype=float)
    g = np.asarray(block_frequency, dtype=float)
    out = (c * (2 + g * (e - 1)) / (e - 1) ** 2 - f) / np.asarray(n, dtype=float)
    return out if out.ndim else float(out)
