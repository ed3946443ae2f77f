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
    :func:`bloom_positions_batch` gives the same positions for a list of
    values and cohorts at once: MurmurHash3 x64-128 evaluated in ``uint64``
    NumPy arithmetic over all (value, cohort) pairs (bit-identical to
    ``mmh3``; about 10x faster than one ``mmh3`` call per pair), MD5 one
    call per pair of CPython's built-in MD5 (:func:`md5_constructor`), with
    the cohort prefixes encoded once and the digests gathered a chunk at a time.

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
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

import mmh3
import numpy as np

__all__ = [
    "LH_PRIME",
    "LH_SEED_SPACE",
    "bloom_positions",
    "bloom_positions_batch",
    "lh_bucket",
    "lh_buckets",
    "lh_coefficients",
    "lh_collision_probability",
    "md5_constructor",
    "murmur3_x64_128_batch",
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


def lh_buckets(seeds: np.ndarray, keys: np.ndarray, g: int) -> np.ndarray:
    """:func:`lh_bucket` vectorized: the uint64 buckets of ``keys`` under ``seeds`` (NumPy broadcasting).

    Exact in uint64: a < P, keys < P and b < P keep a·key + b below 2^62.
    """
    prime = np.uint64(LH_PRIME)
    seeds = np.asarray(seeds).astype(np.uint64, copy=False)
    a = seeds // prime + np.uint64(1)
    b = seeds % prime
    return (a * np.asarray(keys).astype(np.uint64, copy=False) + b) % prime * np.uint64(g) // prime


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


def md5_constructor():
    """The fastest MD5 constructor at hand for short messages: CPython's built-in one, else :func:`hashlib.md5`.

    ``hashlib.md5`` goes through OpenSSL, whose per-object set-up costs more than
    hashing a Bloom key of a few dozen bytes; the built-in module (absent
    from builds configured without it) gives the same digests about 1.5x faster.

    Examples
    --------
    >>> md5 = md5_constructor()
    >>> md5(b"abc").hexdigest()
    '900150983cd24fb0d6963f7d28e17f72'
    """
    try:
        from _md5 import md5  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - a build without the built-in hashes
        return hashlib.md5
    return md5


def value_bytes(value: object) -> bytes:
    """Bytes hashed for a value: UTF-8 of its text form (integers as decimal)."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def bloom_positions(value: object, cohort: int, num_hashes: int, num_bits: int, hash_name: str) -> list[int]:
    """Bloom filter bit positions of ``value`` in ``cohort`` (possibly repeated)."""
    data = value_bytes(value)
    if hash_name == "md5":
        digest = _MD5(cohort.to_bytes(4, "big") + data).digest()
        return [digest[i] % num_bits for i in range(num_hashes)]
    h = mmh3.hash128(data, seed=cohort, signed=False)
    h1 = h & 0xFFFFFFFFFFFFFFFF
    h2 = h >> 64
    return [(h1 + i * h2) % num_bits for i in range(num_hashes)]


def bloom_positions_batch(
    values: Sequence[object], cohorts: Sequence[int], num_hashes: int, num_bits: int, hash_name: str
) -> np.ndarray:
    """Bloom bit positions of every value in every cohort at once.

    Returns
    -------
    numpy.ndarray of int64, shape (len(values), len(cohorts), num_hashes)
        ``out[s, j]`` equals ``bloom_positions(values[s], cohorts[j], ...)``.
    """
    data = [value_bytes(value) for value in values]
    seeds = [int(c) for c in cohorts]
    out = np.empty((len(data), len(seeds), num_hashes), dtype=np.int64)
    if hash_name == "md5":
        _md5_positions(data, seeds, num_bits, out)
        return out
    steps = np.arange(num_hashes, dtype=np.int64)
    chunk = max(1, _CHUNK_PAIRS // max(len(seeds), 1))
    for start in range(0, len(data), chunk):
        h1, h2 = murmur3_x64_128_batch(data[start : start + chunk], seeds)
        k = np.uint64(num_bits)
        # (h1 + i·h2) mod k with exact (unbounded) integers, as bloom_positions
        r1, r2 = (h1 % k).astype(np.int64), (h2 % k).astype(np.int64)
        out[start : start + chunk] = (r1[..., None] + steps * r2[..., None]) % num_bits
    return out


#: (value, cohort) pairs hashed per vectorized step: the state stays in cache.
_CHUNK_PAIRS = 1 << 16

_MD5 = md5_constructor()


def _md5_positions(data: Sequence[bytes], seeds: Sequence[int], num_bits: int, out: np.ndarray) -> None:
    """Fill ``out`` (values, cohorts, h) with Google's MD5 positions: digest[i] mod k of MD5(cohort ‖ value).

    One MD5 call per pair and nothing else per pair in Python: the 4-byte
    cohort prefixes are encoded once, and the digests of a chunk of values
    are joined and reduced in NumPy (memory stays bounded by the chunk).
    """
    md5 = _MD5
    prefixes = [c.to_bytes(4, "big") for c in seeds]
    h = out.shape[2]
    chunk = max(1, _CHUNK_PAIRS // max(len(seeds), 1))
    for start in range(0, len(data), chunk):
        part = data[start : start + chunk]
        digests = b"".join([md5(prefix + d).digest() for d in part for prefix in prefixes])
        raw = np.frombuffer(digests, dtype=np.uint8).reshape(len(part), len(seeds), 16)
        np.remainder(raw[:, :, :h], np.int64(num_bits), out=out[start : start + len(part)])


_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _fmix(x: np.ndarray) -> np.ndarray:
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


def _words(data: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, little-endian 64-bit words of the zero-padded values, one row per value)."""
    lengths = np.fromiter((len(d) for d in data), dtype=np.int64, count=len(data))
    width = (int(lengths.max() // 16) + 1) * 16 if len(data) else 16
    padded = np.array(data, dtype=f"S{width}") if len(data) else np.zeros(0, dtype=f"S{width}")
    return lengths, padded.view("<u8").reshape(len(data), width // 8).astype(np.uint64)


def murmur3_x64_128_batch(data: Sequence[bytes], seeds: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """MurmurHash3 x64-128 of every byte string under every 32-bit seed, vectorized.

    Returns
    -------
    h1, h2 : numpy.ndarray of uint64, shape (len(data), len(seeds))
        The low and high 64-bit halves, as ``mmh3.hash128(d, seed, signed=False)``
        ``= h2·2⁶⁴ + h1``.

    Notes
    -----
    Values are zero-padded to whole 16-byte blocks: the tail step of the
    algorithm mixes a zero word into the state as a no-op, so the padding
    changes nothing; full blocks are mixed only into the rows that have them.
    """
    lengths, words = _words(data)
    full = lengths // 16
    seed = np.asarray(seeds, dtype=np.uint64)
    h1 = np.repeat(seed[None, :], len(data), axis=0)
    h2 = h1.copy()
    with np.errstate(over="ignore"):
        for b in range(int(full.max()) if len(data) else 0):
            rows = np.flatnonzero(full > b)
            k1 = (_rotl(words[rows, 2 * b] * _C1, 31) * _C2)[:, None]
            k2 = (_rotl(words[rows, 2 * b + 1] * _C2, 33) * _C1)[:, None]
            a1 = _rotl(h1[rows] ^ k1, 27) + h2[rows]
            a1 = a1 * np.uint64(5) + np.uint64(0x52DCE729)
            a2 = _rotl(h2[rows] ^ k2, 31) + a1
            h1[rows] = a1
            h2[rows] = a2 * np.uint64(5) + np.uint64(0x38495AB5)
        index = np.arange(len(data))
        h2 ^= (_rotl(words[index, 2 * full + 1] * _C2, 33) * _C1)[:, None]
        h1 ^= (_rotl(words[index, 2 * full] * _C1, 31) * _C2)[:, None]
        size = lengths.astype(np.uint64)[:, None]
        h1 ^= size
        h2 ^= size
        h1 += h2
        h2 += h1
        h1 = _fmix(h1)
        h2 = _fmix(h2)
        h1 += h2
        h2 += h1
    return h1, h2
