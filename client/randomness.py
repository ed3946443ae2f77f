"""Random sources for the vectorized encoders: the OS CSPRNG, or a seeded NumPy generator.

The batch samplers (:mod:`ldp.client.batch`, the numeric batch encoder) draw
every coin through a :class:`RandomSource`, so one sampling code serves two
sources:

- :class:`SystemRandomSource` — the operating system's CSPRNG: large
  ``os.urandom`` blocks read as uint64 words (:func:`numpy.frombuffer`). This
  is the secure path (``ldp encode`` without ``--seed``).
- :class:`GeneratorSource` — a caller's seeded :class:`numpy.random.Generator`:
  reproducible and NOT cryptographically secure (simulations, tests, ``--seed``).

On top of the source's uniform words, :func:`uniform_below` draws exact
uniform integers below a bound (rejection sampling, no modulo bias) and
:func:`bernoulli` draws exact coins of any rational probability (a uniform
real compared with the probability 64 binary digits at a time; ties, which
have probability 2^-64 per round, go on to the next 64 digits).
"""

from __future__ import annotations

import os
import sys
import threading
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ldp.errors import ParameterError

__all__ = [
    "CountingSource",
    "GeneratorSource",
    "RandomSource",
    "SystemRandomSource",
    "as_source",
    "bernoulli",
    "uniform_below",
    "uniform_below_each",
]

_TWO64 = 1 << 64
_TWO16 = 1 << 16


@runtime_checkable
class RandomSource(Protocol):
    """Uniform random words and exact uniform integers for the batch samplers.

    Examples
    --------
    >>> from ldp.client import RandomSource, SystemRandomSource
    >>> isinstance(SystemRandomSource(), RandomSource)
    True
    """

    #: True when the words come from a CSPRNG (fit for real users' data).
    secure: bool

    def words(self, n: int) -> np.ndarray:
        """``n`` independent uniform uint64 words (the array may be read-only)."""

    def integers(self, bound: int, n: int) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, bound)`` (exact), int64 or uint64."""


class SystemRandomSource:
    """The operating system's CSPRNG (``os.urandom``), read in large blocks.

    Requests of fewer than ``block_bytes / 64`` words (an eighth of the
    block) are served from a pooled block (one system call per block), so a
    refill leaves at most an eighth of the block unread; larger ones read
    exactly what they need in one call. Every word is used once: the pool is taken under a
    lock (threads may share a source) and dropped in a forked child (which
    would otherwise reuse its parent's unread words).

    Parameters
    ----------
    block_bytes : int
        Size of the pooled block (default 64 KiB).

    Examples
    --------
    >>> from ldp.client import SystemRandomSource
    >>> draws = SystemRandomSource().integers(6, 1000)  # 1000 fair dice from the OS CSPRNG
    >>> draws.shape, bool(draws.min() >= 0 and draws.max() < 6)
    ((1000,), True)
    """

    secure = True

    def __init__(self, block_bytes: int = 1 << 16):
        if block_bytes < 8:
            raise ParameterError(f"block_bytes must be at least 8, got {block_bytes}")
        self._block_words = block_bytes // 8
        self._direct_words = max(1, self._block_words // 8)
        self._pool = np.zeros(0, dtype=np.uint64)
        self._pos = 0
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def words(self, n: int) -> np.ndarray:
        if n >= self._direct_words:
            return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
        with self._lock:
            if self._pos + n > self._pool.size or self._pid != os.getpid():
                self._pool = np.frombuffer(os.urandom(8 * self._block_words), dtype=np.uint64)
                self._pos = 0
                self._pid = os.getpid()
            out = self._pool[self._pos : self._pos + n]
            self._pos += n
        return out

    def integers(self, bound: int, n: int) -> np.ndarray:
        return uniform_below(self, bound, n)


class CountingSource:
    """A random source that counts the bytes it hands out: how much randomness an encoder reads.

    Every word comes from ``inner`` (by default the OS CSPRNG) and counts 8
    bytes; uniform integers are drawn from those words, so they count too.
    It is as secure as ``inner``.

    Parameters
    ----------
    inner : RandomSource, optional
        Where the words come from (default: a new :class:`SystemRandomSource`).

    Examples
    --------
    >>> from ldp.client import CountingSource
    >>> source = CountingSource()
    >>> _ = source.words(3)
    >>> source.bytes, source.secure
    (24, True)
    """

    def __init__(self, inner: RandomSource | None = None):
        self.inner: RandomSource = SystemRandomSource() if inner is None else inner
        self.secure = bool(self.inner.secure)
        self.bytes = 0

    def words(self, n: int) -> np.ndarray:
        self.bytes += 8 * n
        return self.inner.words(n)

    def integers(self, bound: int, n: int) -> np.ndarray:
        return uniform_below(self, bound, n)


class GeneratorSource:
    """A seeded :class:`numpy.random.Generator` as a random source: reproducible, NOT secure.

    ``words`` are the generator's 64-bit integers; ``integers`` are its
    bounded integers (NumPy samples them without modulo bias).

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.client import GeneratorSource
    >>> seeded = np.random.default_rng(1)  # insecure-ok: a seeded source for simulations, never for privacy
    >>> again = np.random.default_rng(1)  # insecure-ok: the same seed, to show the draws repeat
    >>> GeneratorSource(seeded).integers(10, 5).tolist() == GeneratorSource(again).integers(10, 5).tolist()
    True
    """

    secure = False

    def __init__(self, rng: np.random.Generator):
        if not isinstance(rng, np.random.Generator):
            raise ParameterError(f"GeneratorSource needs a numpy.random.Generator, got {type(rng).__name__}")
        self.rng = rng

    def words(self, n: int) -> np.ndarray:
        return self.rng.integers(0, _TWO64 - 1, size=n, dtype=np.uint64, endpoint=True)

    def integers(self, bound: int, n: int) -> np.ndarray:
        _check_bound(bound)
        dtype = np.int64 if bound <= 1 << 63 else np.uint64
        return self.rng.integers(0, bound, size=n, dtype=dtype)


def as_source(rng: Any) -> RandomSource:
    """``rng`` as a :class:`RandomSource`: a source as is, a NumPy generator wrapped.

    Raises
    ------
    ParameterError
        For anything else (``None``, :mod:`random`, a seed): the caller must
        choose between the CSPRNG (:class:`SystemRandomSource`) and an
        explicit, seeded generator.
    """
    if isinstance(rng, np.random.Generator):
        return GeneratorSource(rng)
    if isinstance(
        rng, (SystemRandomSource, GeneratorSource, CountingSource)
    ):  # the protocol check is slow: skip it for ours
        return rng
    if isinstance(rng, RandomSource):
        return rng
    raise ParameterError(
        "batch encoding needs a random source: ldp.client.SystemRandomSource() (the OS CSPRNG, for real "
        "users) or an explicit numpy.random.Generator (seeded, NOT secure: simulations and tests); "
        f"got {type(rng).__name__}"
    )


def _check_bound(bound: int) -> None:
    if not 1 <= bound <= _TWO64:
        raise ParameterError(f"uniform integers need a bound in [1, 2^64], got {bound}")


_UNITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _units(source: RandomSource, bits: int, n: int) -> np.ndarray:
    """``n`` uniform unsigned integers of ``bits`` bits (8, 16, 32 or 64): slices of uniform words."""
    per_word = 64 // bits
    return source.words(-(-n // per_word)).view(_UNITS[bits])[:n]


def uniform_below(source: RandomSource, bound: int, n: int) -> np.ndarray:
    """``n`` exact uniform integers in ``[0, bound)`` from ``source.words`` (rejection sampling).

    Each draw reads the smallest unit (8, 16, 32 or 64 bits of a word) that
    holds ``bound``. A power-of-two bound takes the unit's top bits.
    Otherwise a unit is accepted when it is below the largest multiple of
    ``bound`` it can hold and reduced modulo ``bound``; rejected units (fewer
    than half) are redrawn. Every accepted residue has the same number of
    preimages, so the result is exactly uniform.

    Returns
    -------
    numpy.ndarray
        int64 when ``bound`` ≤ 2^63, else uint64.
    """
    _check_bound(bound)
    dtype = np.int64 if bound <= 1 << 63 else np.uint64
    if bound == 1:
        return np.zeros(n, dtype=dtype)
    bits = next(b for b in _UNITS if bound <= 1 << b)
    unit = _UNITS[bits]
    if bound & (bound - 1) == 0:
        return (_units(source, bits, n) >> unit(bits - (bound.bit_length() - 1))).astype(dtype)
    space = 1 << bits
    limit = space - space % bound
    accept = limit / space  # > 1/2
    out = np.empty(n, dtype=dtype)
    filled = 0
    while filled < n:
        need = n - filled
        candidates = _units(source, bits, int(need / accept * 1.001) + 16)
        kept = candidates[candidates < unit(limit)][:need]
        out[filled : filled + kept.size] = kept % unit(bound)
        filled += kept.size
    return out


#: Lemire's product for each unit size: a unit times a bound ≤ 2^bits fits the twice-wider type.
_WIDER = {8: np.uint16, 16: np.uint32, 32: np.uint64}
#: Index of the high half of a twice-wider integer viewed as two units.
_HIGH = 1 if sys.byteorder == "little" else 0


def _unit_bits(bound: int) -> int:
    """The bits of the smallest unit holding ``bound`` (what :func:`uniform_below` reads), 0 for bound 1."""
    return 0 if bound == 1 else next(bits for bits in _UNITS if bound <= 1 << bits)


def _lemire_rows(source: RandomSource, bits: int, bounds: list[int], n: int) -> np.ndarray:
    """(len(bounds), n) uniform integers of one unit size: a view of the products' high halves."""
    wide = _WIDER[bits]
    unit = _UNITS[bits]
    row_bounds = np.array(bounds, dtype=wide)[:, None]
    floor = np.array([(1 << bits) % b for b in bounds], dtype=unit)[:, None]  # 2^L mod b: rejected below
    product = np.multiply(
        _units(source, bits, len(bounds) * n).reshape(len(bounds), n), row_bounds, dtype=wide
    )
    halves = product.view(unit).reshape(len(bounds), n, 2)
    rejected = np.flatnonzero(halves[:, :, 1 - _HIGH] < floor)
    while rejected.size:  # rare: redraw the rejected entries with their own bounds
        row = rejected // n
        again = _units(source, bits, rejected.size).astype(wide) * row_bounds[row, 0]
        ok = again.view(unit).reshape(-1, 2)[:, 1 - _HIGH] >= floor[row, 0]
        product.reshape(-1)[rejected[ok]] = again[ok]
        rejected = rejected[~ok]
    return halves[:, :, _HIGH]


def uniform_below_each(source: RandomSource, bounds: Any, n: int) -> np.ndarray:
    """For each bound b_r, ``n`` exact uniform integers in ``[0, b_r)``: a (len(bounds), n) array.

    Row r reads the unit (8, 16 or 32 bits of a word) that
    ``uniform_below(source, b_r, n)`` reads, so the bytes drawn per integer
    are the same, but all rows are drawn at once, by Lemire's multiply-shift
    rejection [1]_: a unit u of L bits gives v = ⌊u·b / 2^L⌋, accepted unless
    u·b mod 2^L < 2^L mod b. Each v in [0, b) then has exactly ⌊2^L/b⌋
    accepted preimages, so the result is exactly uniform; rejected entries
    (probability (2^L mod b)/2^L < 1/2) are redrawn. A bound of 1 reads
    nothing. Bounds above 2^32 are drawn by :func:`uniform_below`, row by row.

    Returns
    -------
    numpy.ndarray
        Unsigned integers of the widest unit the bounds need (uint64 above
        2^32); when every bound needs the same unit, a read-only-in-spirit
        strided view (copy it before writing).

    References
    ----------
    .. [1] D. Lemire. "Fast random integer generation in an interval".
       ACM Transactions on Modeling and Computer Simulation 29(1), 2019.
    """
    bound_list = [int(b) for b in np.asarray(bounds).reshape(-1).tolist()]
    for b in bound_list:
        _check_bound(b)
    groups: dict[int, list[int]] = {}
    for r, b in enumerate(bound_list):
        groups.setdefault(_unit_bits(b), []).append(r)
    widest = max(groups, default=8)
    if n and len(groups) == 1 and 0 < widest < 64:
        return _lemire_rows(source, widest, bound_list, n)
    out = np.zeros((len(bound_list), n), dtype=_UNITS[max(widest, 8)])
    for bits, rows in groups.items():
        if bits == 0 or n == 0:
            continue
        if bits == 64:
            for r in rows:
                out[r] = uniform_below(source, bound_list[r], n)
        else:
            out[rows] = _lemire_rows(source, bits, [bound_list[r] for r in rows], n)
    return out


def bernoulli(source: RandomSource, probability: Fraction, n: int) -> np.ndarray:
    """``n`` independent coins, each True with exactly ``probability`` (any rational in [0, 1]).

    A uniform real U = 0.w0 w1 w2 ... (w0 a uniform 16-bit quarter word,
    then uniform 64-bit words) is compared with the probability's binary
    expansion, 16 then 64 digits at a time: the first part of U that differs
    from the probability's digits decides U < p. Ties (probability 2^-16,
    then 2^-64 per coin and round) read the next word; a dyadic probability
    with denominator ≤ 2^16 is decided by the first quarter word.

    Returns
    -------
    numpy.ndarray
        Boolean array of length ``n``.
    """
    p = Fraction(probability)
    if not 0 <= p <= 1:
        raise ParameterError(f"probability must be in [0, 1], got {p}")
    if p == 0 or p == 1:
        return np.full(n, p == 1)
    digits = p * _TWO16
    chunk = digits.numerator // digits.denominator  # the first 16 binary digits of p, < 2^16
    rest = digits - chunk
    first = _units(source, 16, n)  # the first 16 digits of U
    result = first < np.uint16(chunk)
    if rest == 0:  # U ≥ p whenever the first digits tie: exact
        return result
    pending = np.flatnonzero(first == np.uint16(chunk))
    while pending.size:
        digits = rest * _TWO64
        chunk = digits.numerator // digits.denominator
        rest = digits - chunk
        word = source.words(pending.size)
        result[pending[word < np.uint64(chunk)]] = True
        pending = pending[word == np.uint64(chunk)] if rest else pending[:0]
    return result
