"""Pure math of LOLOHA, longitudinal local hashing (docs/longitudinal/loloha.md).

A user hashes its value x to one of g buckets with its own hash function H
(drawn once), memoizes a first randomized response over the g buckets per
bucket (round 1, GRR at ε∞: keep p₁, each other bucket q₁), and sends a
fresh second randomized response of that memo on every report (round 2, GRR
over g: keep p₂, each other bucket q₂). The chain over the buckets is

    A = P[y = H(x)]    = p₁p₂ + (1 − p₁)q₂,
    B = P[y = b′]      = q₁p₂ + (1 − q₁)q₂      (each bucket b′ ≠ H(x)),

with A + (g − 1)B = 1 and A − B = (p₁ − q₁)(p₂ − q₂): the composite is
randomized response over g with keep A. A report ⟨H, y⟩ supports v when
H(v) = y, so with c = P[H(v) = H(x)] for v ≠ x (the hash family's exact
collision probability),

    p* = A,    q* = c·A + (1 − c)·B,

and the estimate and its variance are those of a pure frequency oracle with
these two numbers (:mod:`ldp.frequency_math`). Every function here is pure
and exact on :class:`~fractions.Fraction` inputs.

References
----------
.. [1] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs. "Frequency
   estimation of evolving data under local differential privacy". EDBT 2023.
.. [2] T. Wang, J. Blocki, N. Li, S. Jha. "Locally differentially private
   protocols for frequency estimation". USENIX Security 2017 (local hashing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ldp.hashing import LH_PRIME

__all__ = [
    "chain_supports",
    "paper_optimal_g",
    "paper_round_two_keep",
    "permanent_ratio",
    "pool_collision_counts",
    "pool_error_sd",
    "pool_frequencies",
    "round_two_keep",
    "single_report_ratio",
    "support_probabilities",
    "variance_star",
]


def chain_supports(p1: Fraction, p2: Fraction, g: int) -> tuple[Fraction, Fraction]:
    """(A, B): P[y = H(x)] and P[y = b′] for one other bucket b′ of the two-round chain over g buckets.

    Parameters
    ----------
    p1, p2 : Fraction
        Keep probabilities of round 1 (memoized) and round 2 (fresh); each
        other bucket has q_i = (1 − p_i)/(g − 1).
    g : int
        Number of buckets (at least 2).
    """
    q1 = (1 - p1) / (g - 1)
    q2 = (1 - p2) / (g - 1)
    return p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2


def round_two_keep(p1: Fraction, composite_keep: Fraction, g: int) -> Fraction:
    """The round-2 keep probability p₂ whose chain has keep A = ``composite_keep``, exactly.

    A = q₂ + p₁(p₂ − q₂) with q₂ = (1 − p₂)/(g − 1) is affine in p₂ with slope
    (gp₁ − 1)/(g − 1) > 0 (p₁ > 1/g), so

        p₂ = (A(g − 1) + p₁ − 1)/(gp₁ − 1),

    which is at most 1 exactly when A ≤ p₁. Rounding p₂ down lowers A, hence
    the chain's ratio A/B = A(g − 1)/(1 − A): the safe direction.
    """
    return (composite_keep * (g - 1) + p1 - 1) / (g * p1 - 1)


def single_report_ratio(p1: Fraction, p2: Fraction, g: int) -> Fraction:
    """Worst-case ratio of one report: A/B (inputs in different buckets; in one bucket the ratio is 1)."""
    a, b = chain_supports(p1, p2, g)
    return a / b


def permanent_ratio(p1: Fraction, g: int) -> Fraction:
    """Worst-case ratio of the memoized round-1 response of one bucket: p₁/q₁."""
    return p1 * (g - 1) / (1 - p1)


def support_probabilities(
    p1: Fraction, p2: Fraction, g: int, collision: Fraction
) -> tuple[Fraction, Fraction]:
    """(p*, q*) = (A, c·A + (1 − c)·B): a report supports the user's value, and another value.

    ``collision`` is c = P[H(v) = H(x)] for v ≠ x over the user's hash function.
    """
    a, b = chain_supports(p1, p2, g)
    return a, collision * a + (1 - collision) * b


def variance_star(p_star: Fraction, q_star: Fraction) -> Fraction:
    """Var* = n·Var[f̂_v] at f_v → 0: q*(1 − q*)/(p* − q*)², exactly."""
    return q_star * (1 - q_star) / (p_star - q_star) ** 2


def paper_round_two_keep(epsilon_inf: float, epsilon_one: float, g: int) -> float:
    """The paper's p₂: the solution of (p₁p₂ + q₁q₂)/(p₁q₂ + q₁p₂) = e^ε₁ (for comparison only).

    That equation is the chain's ratio A/B only for g = 2; for g > 2 the
    chain's true single-report ratio is smaller than e^ε₁ (more privacy and
    more variance than stated). This module's :func:`round_two_keep`
    calibrates A/B itself.
    """
    a, b = math.exp(epsilon_inf), math.exp(epsilon_one)
    p1 = a / (a + g - 1)
    q1 = (1 - p1) / (g - 1)
    return (q1 - b * p1) / (-p1 * b + g * q1 * b - q1 * b - p1 * (g - 1) + q1)


def paper_optimal_g(epsilon_inf: float, epsilon_one: float) -> float:
    """OLOLOHA's real-valued hash range from the paper (before rounding to an integer ≥ 2).

    With a = e^ε∞ and b = e^ε₁:

        g = (√(a⁴ − 14a² − 12a²b² + 12ab + 12a³b + 1) − a² + 6a − 6b + 1)/(6(a − b)),

    the minimizer over real g of Var* under the paper's round-2 calibration
    (:func:`paper_round_two_keep`, with q* = 1/g); ``tests/mechanisms/test_loloha.py``
    checks that against a direct minimization.
    """
    a, b = math.exp(epsilon_inf), math.exp(epsilon_one)
    root = math.sqrt(a**4 - 14 * a**2 - 12 * a**2 * b**2 + 12 * a * b + 12 * a**3 * b + 1)
    return (root - a**2 + 6 * a - 6 * b + 1) / (6 * (a - b))


def pool_error_sd(frequencies: Sequence[float], g: int, pool_size: int, value: int) -> float:
    """Standard deviation, over the draw of a public pool of hash functions, of f̂_value's pool error.

    With users drawing their hash function from a fixed pool of S functions
    (each drawn uniformly from the family), the expected support of ``value``
    by a user holding x ≠ value is B + c_S(x)(A − B), where c_S(x) is the
    fraction of the pool's functions colliding the two; the estimator uses
    the family's c. Its error for the fixed pool is
    Σ_{x ≠ v} f_x (c_S(x) − c)/(1 − c), of mean 0 over the pool's draw and,
    treating the pairs' collision counts as independent Bin(S, c)/S (c ≈ 1/g),
    standard deviation √(Σ_{x ≠ v} f_x² · c/((1 − c)S)).
    """
    c = 1.0 / g
    rest = sum(f * f for i, f in enumerate(frequencies) if i != value)
    return math.sqrt(rest * c / ((1 - c) * pool_size))


#: Values hashed per block when counting the pool's collisions (a block is block × S residues of 8 bytes).
_BLOCK_RESIDUES = 1 << 22


def pool_collision_counts(seeds: np.ndarray, g: int, d: int) -> np.ndarray:
    """N_S(v, x) = #{j : H_j(v) = H_j(x)} over the pool's S functions, for v, x in [0, d) (N_S(v, v) = S).

    H_j(x) = ⌊((a_j·x + b_j) mod P)·g/P⌋ with a_j = σ_j div P + 1, b_j = σ_j mod P
    (:func:`ldp.hashing.lh_bucket`), computed exactly in uint64. Each value's
    buckets are stored as bit planes (bit k of H_j(v) for every j, packed 64
    functions a word), so a pair's count is S minus the popcount of the OR
    over planes of the XORed words: O(S·d·⌈log₂ g⌉/64) word operations per
    value, O(S·d²·⌈log₂ g⌉/128) in all (the matrix is symmetric).

    Returns
    -------
    numpy.ndarray of int64, shape (d, d)
    """
    prime = np.uint64(LH_PRIME)
    pool = np.asarray(seeds, dtype=np.uint64)
    size = pool.size
    a = pool // prime + np.uint64(1)
    b = pool % prime
    planes = max(1, (g - 1).bit_length())
    words = (size + 63) // 64
    bits = np.zeros((planes, d, words * 8), dtype=np.uint8)
    block = max(1, _BLOCK_RESIDUES // max(size, 1))
    for start in range(0, d, block):
        values = np.arange(start, min(start + block, d), dtype=np.uint64)
        buckets = (a[None, :] * values[:, None] + b[None, :]) % prime * np.uint64(g) // prime  # (block, S)
        for k in range(planes):
            plane = ((buckets >> np.uint64(k)) & np.uint64(1)).astype(np.uint8)
            bits[k, start : start + values.size, : (size + 7) // 8] = np.packbits(plane, axis=1)
    packed = bits.view(np.uint64)  # (planes, d, words); padding bits are 0 for every value, so they agree
    out = np.empty((d, d), dtype=np.int64)
    for v in range(d):
        differ = packed[0, v:] ^ packed[0, v]
        for k in range(1, planes):
            differ |= packed[k, v:] ^ packed[k, v]
        row = size - np.bitwise_count(differ).sum(axis=1, dtype=np.int64)
        out[v, v:] = row
        out[v:, v] = row
    return out


def pool_frequencies(
    support_counts, n, a: float, b: float, collision: float, inverse: np.ndarray
) -> np.ndarray:
    """f̂ = M⁻¹((C/n − B)/(A − B) − c), M = K_S − c·J: the estimate unbiased for the spec's own pool.

    A user holding x supports v with probability B + (A − B)·K_S[v, x],
    K_S[v, x] = N_S(v, x)/S the fraction of the pool's functions colliding v
    and x (K_S[v, v] = 1); users draw their function uniformly from the pool.
    As the frequencies sum to 1, E[C_v]/n = B + (A − B)(c + (M f)_v) with
    M = K_S − c·J = (1 − c)·I + Δ, Δ the pool's deviations from the family's
    collision probability c off the diagonal. The estimate inverts that
    exactly; with Δ = 0 it is the family's (C_v/n − q*)/(p* − q*)
    (docs/longitudinal/loloha.md#pool).

    Parameters
    ----------
    support_counts : array_like, shape (..., d)
        C_v (leading axes: independent aggregates).
    n : int or array_like
        Reports (broadcast against the leading axes).
    a, b : float
        A and B of :func:`chain_supports`.
    collision : float
        c, the family's collision probability.
    inverse : numpy.ndarray, shape (d, d)
        M⁻¹ (symmetric).
    """
    counts = np.asarray(support_counts, dtype=float)
    reports = np.asarray(n, dtype=float)
    if reports.ndim:
        reports = reports[..., None]
    u = (counts / reports - b) / (a - b) - collision
    return u @ inverse
