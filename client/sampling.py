"""Exact sampling from a byte source (the CSPRNG, or a keyed PRF stream).

Every probability the client samples is an exact rational. A single coin
with probability a/b is ``randbelow(b) < a``. For a vector of independent
coins (unary encodings, RAPPOR) the lanes are sampled together, bit-sliced
in one Python integer: lane i compares a uniform real U_i (read one binary
digit per round from the byte source) against its threshold t_i (read from
t_i's binary expansion); the first differing digit decides U_i < t_i.
The comparison is exact, P[U_i < t_i] = t_i, and ends after ~log2(lanes)+2
rounds on average.

References
----------
.. [1] D. E. Knuth, A. C. Yao. "The complexity of nonuniform random number
   generation". Algorithms and Complexity, 1976 (digit-by-digit comparison).
.. [2] I. Mironov. "On significance of the least significant bits for
   differential privacy". ACM CCS 2012 (why floating-point sampling is not used).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "REVERSE_BITS",
    "ByteSource",
    "PRFStream",
    "binary_digits",
    "expansion",
    "lanes_to_packed",
    "randbelow_from",
    "sample_expanded",
    "sample_lanes",
    "urandom_source",
]

#: Byte translation table reversing the bit order within each byte.
REVERSE_BITS = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))

ByteSource = Callable[[int], bytes]


def urandom_source(n: int) -> bytes:
    """The operating system's CSPRNG."""
    return os.urandom(n)


class PRFStream:
    """Deterministic pseudorandom bytes: SHAKE-256 of a length-prefixed key and message.

    Used for RAPPOR's permanent randomized response, which must be the same
    every time a client reports the same value (a keyed PRF of the client
    secret, the spec fingerprint and the value). SHAKE-256 is an extendable
    output function; with a secret 32-byte key prefix it is a PRF.

    References
    ----------
    .. [1] NIST FIPS 202, SHA-3 Standard: Permutation-Based Hash and
       Extendable-Output Functions (2015).
    """

    def __init__(self, *parts: bytes):
        material = b"".join(len(part).to_bytes(4, "big") + part for part in parts)
        self._xof = hashlib.shake_256(material)
        self._buffer = b""
        self._pos = 0

    def __call__(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._buffer):
            self._buffer = self._xof.digest(max(2 * len(self._buffer), end, 256))
        out = self._buffer[self._pos : end]
        self._pos = end
        return out


@lru_cache(maxsize=64)
def binary_digits(probability: Fraction, count: int = 64) -> tuple[tuple[int, ...], Fraction]:
    """First ``count`` binary digits of ``probability`` in [0, 1], and the remainder.

    Returns ``(digits, rest)`` where probability = 0.d1d2...d_count (binary) +
    rest·2^-count and ``rest`` is in [0, 1).
    """
    num, den = probability.numerator, probability.denominator
    if not 0 <= num <= den:
        raise ValueError(f"probability must be in [0, 1], got {probability}")
    if num == den:  # 1 = 0.111... in binary
        return (1,) * count, Fraction(1)
    digits = []
    for _ in range(count):
        num *= 2
        digit = 1 if num >= den else 0
        num -= digit * den
        digits.append(digit)
    return tuple(digits), Fraction(num, den)


def expansion(probability: Fraction | str | int) -> tuple[tuple[int, ...], Fraction]:
    """(first 64 binary digits, remainder) of ``probability``: compute once, pass to :func:`sample_expanded`."""
    return binary_digits(Fraction(probability))


def sample_lanes(width: int, groups: Sequence[tuple[int, Fraction]], source: ByteSource) -> int:
    """Sample ``width`` independent coins, lane i with its group's probability.

    Parameters
    ----------
    width : int
        Number of lanes (bits of the returned integer).
    groups : sequence of (lane_mask, probability)
        Lane masks partition [0, width); every lane in a mask gets that probability.
    source : callable
        ``source(n)`` returns n random bytes.

    Returns
    -------
    int
        Bit i is 1 with the probability of lane i's group, independently.
    """
    return sample_expanded(width, [(mask, *binary_digits(Fraction(prob))) for mask, prob in groups], source)


def sample_expanded(
    width: int, groups: Sequence[tuple[int, tuple[int, ...], Fraction]], source: ByteSource
) -> int:
    """:func:`sample_lanes` with each probability given as its :func:`expansion` ``(mask, digits, rest)``.

    The same exact sampler; encoders expand their fixed probabilities once
    instead of on every report.
    """
    full = (1 << width) - 1
    nbytes = (width + 7) // 8
    undecided = full
    result = 0
    expansions = [group for group in groups if group[0]]
    round_index = 0
    # Draw planes in blocks to amortize the cost of the byte source.
    block = 12
    buffer = b""
    offset = 0
    while undecided:
        if round_index < 64:
            threshold = 0
            for mask, digits, _ in expansions:
                if digits[round_index]:
                    threshold |= mask
        else:  # rare: past 64 digits, continue each expansion exactly
            threshold = 0
            updated = []
            for mask, digits, rest in expansions:
                digit = 1 if rest >= Fraction(1, 2) else 0
                rest = rest * 2 - digit
                if digit:
                    threshold |= mask
                updated.append((mask, digits, rest))
            expansions = updated
        if offset == len(buffer):
            buffer = source(nbytes * block)
            offset = 0
        plane = int.from_bytes(buffer[offset : offset + nbytes], "little") & full
        offset += nbytes
        # U's digit 0 where the threshold's is 1: U < t, the coin is 1.
        result |= undecided & threshold & ~plane
        undecided &= ~(plane ^ threshold)
        round_index += 1
    return result


def randbelow_from(source: ByteSource, n: int) -> int:
    """A uniform integer in [0, n) read from ``source`` exactly as ``secrets.randbelow`` reads the CSPRNG.

    Each try reads ⌈k/8⌉ bytes (k = the bit length of n), keeps their top k
    bits (big-endian) and accepts them when below n; so a keyed PRF stream
    gives the same draws in every client (the TypeScript ``UniformBelow``).
    """
    if n <= 0:
        raise ValueError(f"randbelow needs n > 0, got {n}")
    k = n.bit_length()
    nbytes = (k + 7) // 8
    while True:
        r = int.from_bytes(source(nbytes), "big") >> (8 * nbytes - k)
        if r < n:
            return r


def lanes_to_packed(lanes: int, width: int) -> bytes:
    """Pack lane i (bit i of the integer) as numpy.packbits does (bit 7 − i%8 of byte i//8)."""
    return lanes.to_bytes((width + 7) // 8, "little").translate(REVERSE_BITS)
