"""Hash functions shared by client and aggregator.

Local hashing (OLH/BLH)
    The Carter–Wegman family h_{a,b}(x) = ((a·x + b) mod P) with the Mersenne
    prime P = 2^31 − 1, a ∈ [1, P), b ∈ [0, P), followed by the range map
    u ↦ ⌊u·g/P⌋ onto [g]. A report's seed s ∈ [0, (P−1)·P) encodes
    a = s // P + 1 and b = s mod P. For x ≠ x' the pair (h(x), h(x')) is
    uniform over ordered pairs of distinct residues, so the bucket collision
    probability is the same known rational number for every pair
    (:func:`lh_collision_probability`, within 1e-9 of 1/g); the estimator uses
    it exactly, so decoding is unbiased. All products stay below 2^62, so the
    aggregator evaluates the family in ``uint64`` NumPy arithmetic.

Bloom filters (RAPPOR)
    ``mmh3``: one 128-bit MurmurHash3 of the value with the cohort as seed,
    positions by double hashing (h1 + i·h2) mod k. ``md5``: Google's RAPPOR,
    MD5(cohort as 4 big-endian bytes ‖ value), position i = digest[i] mod k.

References
----------
.. [1] J. L. Carter, M. N. Wegman. "Universal classes of hash functions".
   JCSS 18(2), 1979.
.. [2] A. Kirsch, M. Mitzenmacher. "Less hashing, same performance: building a
   better Bloom filter". ESA 2006.
.. [3] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014;
   google/rappor client/python/rappor.py (get_bloom_bits).
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from functools import lru_cache

import mmh3

__all__ = [
    "LH_PRIME",
    "LH_SEED_SPACE",
    "bloom_positions",
    "lh_bucket",
    "lh_coefficients",
    "lh_collision_probability",
    "value_bytes",
]

LH_PRIME = (1 << 31) - 1
LH_SEED_SPACE = (LH_PRIME - 1) * LH_PRIME


def lh_coefficients(seed: int) -> tuple[int, int]:
    """(a, b) of the hash function named by ``seed``."""
    a, b = divmod(seed, LH_PRIME)
    return a + 1, b


def lh_bucket(seed: int, index: int, g: int) -> int:
    """Bucket in [0, g) of domain index ``index`` under hash ``seed``."""
    a, b = divmod(seed, LH_PRIME)
    return (((a + 1) * index + b) % LH_PRIME) * g // LH_PRIME


@lru_cache(maxsize=256)
def lh_collision_probability(g: int) -> Fraction:
    """P[H(x) = H(x')] for x ≠ x' over the family, exactly.

    Bucket y holds s or s+1 residues (s = P // g; r = P − g·s buckets hold
    s+1); a random ordered pair of distinct residues lands in one bucket with
    probability Σ_y s_y(s_y − 1) / (P(P − 1)).
    """
    s, r = divmod(LH_PRIME, g)
    same = r * (s + 1) * s + (g - r) * s * (s - 1)
    return Fraction(same, LH_PRIME * (LH_PRIME - 1))


def value_bytes(value: object) -> bytes:
    """Bytes hashed for a value: UTF-8 of its text form (integers as decimal)."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def bloom_positions(value: object, cohort: int, num_hashes: int, num_bits: int, hash_name: str) -> list[int]:
    """Bloom filter bit positions of ``value`` in ``cohort`` (possibly repeated)."""
    data = value_bytes(value)
    if hash_name == "md5":
        digest = hashlib.md5(cohort.to_bytes(4, "big") + data).digest()
        return [digest[i] % num_bits for i in range(num_hashes)]
    h = mmh3.hash128(data, seed=cohort, signed=False)
    h1 = h & 0xFFFFFFFFFFFFFFFF
    h2 = h >> 64
    return [(h1 + i * h2) % num_bits for i in range(num_hashes)]
