"""Vectorized encoding of many users at once, from the OS CSPRNG or a seeded generator.

:func:`encode_batch` randomizes many users' values at once with NumPy. Every
coin comes from a :class:`~ldp.client.randomness.RandomSource`:

- :class:`~ldp.client.randomness.SystemRandomSource` (the OS CSPRNG, large
  ``os.urandom`` blocks): the secure path, for a server or a data team
  encoding real users' values (``ldp encode`` uses it);
- a seeded :class:`numpy.random.Generator`: reproducible and NOT
  cryptographically secure (anyone who learns the seed or enough output can
  reconstruct every coin), for simulations, tests and benchmarks only.

The same sampling code serves both. Probabilities are sampled exactly:
bit vectors by bit-sliced digit comparison (:func:`bernoulli_words`, which
reads further digits for the lanes still undecided after 48 rounds), or from
the CSPRNG by block inversion near their entropy where that is no slower
(:func:`one_hot_bits`, :func:`marked_bits`: :mod:`ldp.client.onehot`); the
coins and uniform integers of randomized response and local hashing from the
source's bits (:mod:`ldp.client.bits`: coins eight at a time by a Knuth–Yao
tree, uniform integers by rejection on about log2 of their bound bits).

Each value is a different user: RAPPOR users get a uniform cohort and one
report each, so the permanent and instantaneous randomized responses
collapse into one independent coin per bit with P[S=1 | B] from
docs/mechanisms.md#rappor-prr-irr (the same distribution as the two stages in
sequence). Persistent RAPPOR clients (whose PRR must repeat) take
:func:`rappor_irr_batch` on their keyed-PRF PRR words instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from fractions import Fraction
from itertools import islice
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.bits import BitSource, coins, sampler_for, uniforms
from ldp.client.marked_correction import corrected_coins
from ldp.client.onehot import one_hot_coins, serves_marked_batch, serves_secure_batch
from ldp.client.randomness import RandomSource, SystemRandomSource, as_source
from ldp.client.sampling import binary_digits, lanes_to_packed
from ldp.errors import InputError, ParameterError, SpecError
from ldp.hashing import LH_SEED_SPACE, bloom_positions_batch, lh_buckets
from ldp.plugins import implementation
from ldp.specs import GRR, LocalHashing, Rappor, UnaryEncoding
from ldp.specs.rappor import parse_boolean

__all__ = [
    "bernoulli_words",
    "encode_batch",
    "factorize_values",
    "grr_batch",
    "lane_digits",
    "lanes_to_words",
    "local_hashing_batch",
    "marked_bits",
    "one_hot_bits",
    "randomized_response_batch",
    "rappor_batch",
    "rappor_irr_batch",
    "secure_encode_batch",
    "unary_batch",
    "value_indices",
    "words_to_packed",
]

_DIGITS = 48
# After 10 rounds a 64-lane word still has an undecided lane with probability
# 1 - (1 - 2^-10)^64 ≈ 6 %; those finish in a gathered tail.
_DENSE_ROUNDS = 10
_SECURE_DENSE_ROUNDS = 6  # 1 - (1 - 2^-6)^64 ≈ 63 % of words gathered, but CSPRNG words are dear
_BLOCK_WORDS = 1 << 15  # 256 KiB per working array: the dense rounds stay in cache
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_ZERO = np.uint64(0)


def _digits(probability: Fraction) -> Iterator[int]:
    """Every binary digit of ``probability`` in order (the first 48 from the cached expansion)."""
    head, rest = binary_digits(Fraction(probability), _DIGITS)
    yield from head
    if rest == 1:  # probability 1 = 0.111...
        while True:
            yield 1
    while True:
        rest *= 2
        digit = 1 if rest >= 1 else 0
        rest -= digit
        yield digit


def _dyadic_length(probability: Fraction) -> int | None:
    """Number of binary digits of ``probability`` < 1 when its expansion is finite (denominator 2^k), else None."""
    p = Fraction(probability)
    den = p.denominator
    if p >= 1 or den & (den - 1):
        return None
    return den.bit_length() - 1


def lane_digits(p_one: Fraction, p_zero: Fraction) -> float:
    """About the uniform digits per coin :func:`bernoulli_words` reads from a CSPRNG for these probabilities.

    Dyadic probabilities of at most k binary digits stop after round k (k
    digits); others take the 6 dense rounds and the undecided lanes' further
    rounds, about 7.5 words per output word.
    """
    lengths = [_dyadic_length(p_one), _dyadic_length(p_zero)]
    if None in lengths:
        return 7.5
    return min(7.5, float(max(1, *(length for length in lengths if length is not None))))


def bernoulli_words(
    source: Any, ones: np.ndarray, p_one: Fraction, p_zero: Fraction, *, dense_rounds: int | None = None
) -> np.ndarray:
    """Independent coins, bit-sliced in uint64 words (exact).

    Lane (word w, bit b) is 1 with probability ``p_one`` where bit b of
    ``ones[w]`` is set and ``p_zero`` where it is not. Each lane compares a
    uniform real, one random bit per round, against its threshold's binary
    digits. The batch is sampled one cache-sized block at a time: the first
    rounds run on every word of the block, then its words with lanes still
    undecided finish together, reading as many further digits as they need (a lane is still
    undecided after k rounds with probability 2^-k), so every coin has
    exactly its probability. When both probabilities are dyadic (k binary
    digits at most, e.g. RAPPOR's 5/8 and 3/8 for f = 1/2, p = 1/4,
    q = 3/4), the sampling stops after round k: every later threshold digit
    is 0, so a lane still undecided is 0 (U ≥ t), exactly.

    Parameters
    ----------
    source : RandomSource or numpy.random.Generator
        Where the random words come from.
    dense_rounds : int, optional
        Rounds run on every word before the undecided ones are gathered: 10
        for a seeded generator (cheap words), 6 for the CSPRNG, whose words
        cost more than the gathering (about 7.5 words drawn per output word
        instead of 10.1). It changes which words are drawn, never the
        probabilities.
    """
    source = as_source(source)
    if dense_rounds is None:
        dense_rounds = _SECURE_DENSE_ROUNDS if source.secure else _DENSE_ROUNDS
    flat = np.ascontiguousarray(ones, dtype=np.uint64).ravel()
    digits_one, digits_zero = _digits(p_one), _digits(p_zero)  # the dense rounds' digits
    lengths = (_dyadic_length(p_one), _dyadic_length(p_zero))
    rounds = None if None in lengths else max(length for length in lengths if length is not None)
    if rounds is not None:
        dense_rounds = min(dense_rounds, rounds)
    dense = [(next(digits_one), next(digits_zero)) for _ in range(dense_rounds)]
    finished = rounds is not None and rounds <= dense_rounds
    result = np.zeros_like(flat)
    block = max(1, min(_BLOCK_WORDS, flat.size))  # an empty batch has no blocks
    undecided, not_masks, scratch, not_plane = (np.empty(block, dtype=np.uint64) for _ in range(4))
    for start in range(0, flat.size, block):
        masks = flat[start : start + block]
        size = masks.size
        open_lanes, inverse, spare, agree, out = (
            undecided[:size],
            not_masks[:size],
            scratch[:size],
            not_plane[:size],
            result[start : start + size],
        )
        open_lanes.fill(_ALL)
        np.invert(masks, out=inverse)
        for d1, d0 in dense:
            threshold = _threshold(masks, inverse, d1, d0)
            np.invert(source.words(size), out=agree)  # a lane's bit is 1 where its uniform's digit is 0
            if d1 or d0:
                np.bitwise_and(open_lanes, threshold, out=spare)
                spare &= agree
                out |= spare  # decided 1: digit 0 under a threshold digit 1
            agree ^= threshold
            open_lanes &= agree  # still open where the digits agree
        if not finished:  # else every later threshold digit is 0: the lanes still open are 0
            _finish_block(source, out, masks, open_lanes, p_one, p_zero, dense_rounds, rounds)
    return result.reshape(np.shape(ones))


def _finish_block(
    source: RandomSource,
    out: np.ndarray,
    masks: np.ndarray,
    open_lanes: np.ndarray,
    p_one: Fraction,
    p_zero: Fraction,
    done: int,
    rounds: int | None,
) -> None:
    """Decide the lanes of one block still open after ``done`` rounds, writing into ``out``.

    Only the words with an open lane take part, and they leave as soon as
    their last lane is decided; ``rounds`` (a dyadic pair's digit count)
    ends the sampling early, the lanes still open then being 0. Kept per
    block, so the working memory stays a few blocks whatever the batch size.
    """
    digits_one, digits_zero = islice(_digits(p_one), done, None), islice(_digits(p_zero), done, None)
    active = np.flatnonzero(open_lanes)
    lanes = open_lanes[active]
    masks = masks[active]
    inverse = ~masks
    round_index = done
    while active.size and round_index != rounds:
        round_index += 1
        threshold = _threshold(masks, inverse, next(digits_one), next(digits_zero))
        plane = source.words(active.size)
        out[active] |= lanes & threshold & ~plane
        lanes &= ~(plane ^ threshold)
        keep = lanes != 0
        active, lanes, masks, inverse = active[keep], lanes[keep], masks[keep], inverse[keep]


def _threshold(masks: np.ndarray, not_masks: np.ndarray, d1: int, d0: int):
    """Per-lane threshold digit: d1 on lanes in ``masks``, d0 elsewhere."""
    if d1 and d0:
        return _ALL
    if d1:
        return masks
    if d0:
        return not_masks
    return _ZERO


def words_to_packed(words: np.ndarray, num_bits: int) -> np.ndarray:
    """(n, W) uint64 lanes in packbits lane order → (n, ⌈k/8⌉) uint8 in numpy.packbits order.

    Vector bit i lives in lane :func:`packbits_lane` (i), so the words'
    little-endian bytes already are the packed bytes: no bit shuffling.
    """
    rows, width = words.shape
    as_bytes = np.ascontiguousarray(words.astype("<u8", copy=False)).view(np.uint8).reshape(rows, 8 * width)
    packed = as_bytes[:, : (num_bits + 7) // 8]
    spare = -num_bits % 8
    if spare:  # lanes past num_bits were sampled too; the padding of the last byte must be zero
        packed = packed.copy()
        packed[:, -1] &= np.uint8((0xFF << spare) & 0xFF)
    return packed


def lanes_to_words(lanes: int, num_bits: int) -> np.ndarray:
    """A vector as a Python integer (bit i = vector bit i) → its ⌈k/64⌉ uint64 words in packbits lane order."""
    width = (num_bits + 63) // 64
    packed = lanes_to_packed(lanes, num_bits).ljust(8 * width, b"\0")
    return np.frombuffer(packed, dtype="<u8").astype(np.uint64)


def packbits_lane(position):
    """Bit of word ``position // 64`` that holds vector bit ``position``.

    Byte ``(position % 64) // 8`` of a little-endian word, most significant
    bit first as in :func:`numpy.packbits`: bit ``(position % 64) ^ 7``.
    """
    return (position % 64) ^ 7


def factorize_values(values: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Integer codes of ``values`` (by first appearance) and the distinct values.

    Values are told apart by type too: ``True``, ``1`` and ``1.0`` are equal dict keys in Python but
    not the same value to encode (a boolean is refused in a domain, ``1.0`` hashes as ``"1.0"`` in a
    Bloom filter), so each keeps its own code and is looked up as itself, as the single encoder does.
    """
    keys: Sequence[Any] | np.ndarray = values
    if not ((isinstance(values, np.ndarray) and values.dtype != object) or len(set(map(type, values))) <= 1):
        keys = list(zip(map(type, values), values))  # several types: each value keyed as itself
    mapping: dict[Any, int] = dict.fromkeys(keys, 0)  # distinct keys in order of first appearance (C loops)
    for code, key in enumerate(mapping):
        mapping[key] = code
    codes = np.fromiter(map(mapping.__getitem__, keys), dtype=np.int64, count=len(keys))
    uniques = list(mapping) if keys is values else [value for _, value in mapping]
    return codes, uniques


def value_indices(spec: Any, values: Sequence[Any] | np.ndarray, indices: bool) -> np.ndarray:
    """The domain indices of ``values`` under ``spec`` (int64), for a batch encoder.

    Parameters
    ----------
    spec : Spec
        A spec with ``domain_size`` and ``index_of`` (every domain spec).
    values : sequence or ndarray
        Domain values, or indices into the domain when ``indices`` is true.
    indices : bool
        True when ``values`` already are domain indices (checked to be in range).

    Raises
    ------
    InputError
        A value outside the domain, or an index out of range.
    """
    if indices:
        idx = np.asarray(values, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= spec.domain_size):
            raise InputError(f"domain indices must be in [0, {spec.domain_size})")
        return idx
    codes, uniques = factorize_values(values)
    mapped = np.array([spec.index_of(u) for u in uniques], dtype=np.int64)
    return mapped[codes]


#: Keep probability from which randomized response draws the other value only for the reports not kept
#: (below it, gathering those reports costs more time than drawing for every report).
_SELECT_OTHERS = Fraction(1, 2)


def randomized_response_batch(
    source: RandomSource | BitSource, idx: np.ndarray, size: int, keep: Fraction, other: Fraction
) -> np.ndarray:
    """Randomized response over [0, size): keep ``idx`` w.p. ``keep``, else a uniform other value.

    Exact, from :func:`~ldp.client.bits.sampler_for`'s choice: a CSPRNG's
    bits for a large batch (:mod:`ldp.client.bits`: the keep coins eight at
    a time by a Knuth–Yao tree, the other value by rejection on about
    log2(size − 1) bits), else the source's words; the other value is drawn only for the reports not kept when they are at most half
    (keep ≥ 1/2), else for every report; each other value then has probability
    (1 − keep)/(size − 1), which must equal ``other``.
    """
    if keep + (size - 1) * other != 1:
        raise SpecError(f"randomized response probabilities do not sum to 1: p={keep}, q={other}")
    sampler = sampler_for(source, idx.size)
    kept = coins(sampler, keep, idx.size)
    if size == 1:
        return np.zeros(idx.size, dtype=np.int64)
    if keep < _SELECT_OTHERS:
        out = uniforms(sampler, size - 1, idx.size)
        out += out >= idx
        np.copyto(out, idx, where=kept)
        return out
    out = np.array(idx, dtype=np.int64)
    moved = np.flatnonzero(~kept)
    others = uniforms(sampler, size - 1, moved.size)
    others += others >= out[moved]
    out[moved] = others
    return out


def _one_hot_words(idx: np.ndarray, width: int) -> np.ndarray:
    words = np.zeros((idx.size, (width + 63) // 64), dtype=np.uint64)
    rows = np.arange(idx.size)
    words[rows, idx // 64] = np.left_shift(np.uint64(1), packbits_lane(idx).astype(np.uint64))
    return words


def one_hot_bits(
    source: RandomSource,
    idx: np.ndarray,
    width: int,
    p: Fraction,
    q: Fraction,
    *,
    widths: np.ndarray | None = None,
) -> np.ndarray:
    """Packed one-hot coins: bit ``idx[i]`` of row i is 1 w.p. ``p``, every other bit w.p. ``q`` (exact).

    From a CSPRNG source (``source.secure``) the coins are drawn by
    :func:`ldp.client.onehot.one_hot_coins`, which reads about 1.3× their
    entropy, where its compiled kernel serves the batch
    (:func:`ldp.client.onehot.serves_secure_batch`); otherwise, and from a
    seeded generator (cheap words), by the bit-sliced :func:`bernoulli_words`.
    Both are exact.

    Parameters
    ----------
    widths : (n,) int array, optional
        Coins of each report when fewer than ``width``; its later bits are 0.

    Returns
    -------
    numpy.ndarray
        (n, ⌈width/8⌉) uint8 in :func:`numpy.packbits` order.
    """
    p, q = Fraction(p), Fraction(q)
    idx = np.asarray(idx, dtype=np.int64).ravel()
    if source.secure and 0 < p < 1 and 0 < q < 1 and serves_secure_batch(idx.size):
        return one_hot_coins(source, idx, width, p, q, widths=widths)
    packed = words_to_packed(bernoulli_words(source, _one_hot_words(idx, width), p, q), width)
    if widths is not None:  # the coins past each report's width are 0
        distinct, inverse = np.unique(np.asarray(widths, dtype=np.int64), return_inverse=True)
        masks = np.packbits(np.arange(width) < distinct[:, None], axis=1)
        packed &= masks[inverse.ravel()]
    return packed


def marked_bits(
    source: RandomSource, marks: np.ndarray, num_bits: int, p_one: Fraction, p_zero: Fraction
) -> np.ndarray:
    """Packed coins: vector bit i of row r is 1 w.p. ``p_one`` where it is set in ``marks[r]``, else ``p_zero`` (exact).

    RAPPOR's coins (``marks``: the Bloom bits B, or the PRR bits B′, as
    (n, ⌈k/64⌉) words in :func:`packbits_lane` order). From a CSPRNG source
    they are drawn by :func:`ldp.client.marked_correction.corrected_coins`
    (every bit a q-coin by block inversion, :mod:`ldp.client.plain_streams`,
    the marked bits then flipped or combined with one further coin each:
    about 1.3× their entropy) where it is no slower than the bit-sliced
    :func:`bernoulli_words` (:func:`ldp.client.onehot.serves_marked_batch`:
    the compiled kernel serves the batch and the lanes would read at least 2
    digits per coin);
    otherwise, and from a seeded generator, by the lanes. Both are exact.

    Returns
    -------
    numpy.ndarray
        (n, ⌈num_bits/8⌉) uint8 in :func:`numpy.packbits` order.
    """
    p_one, p_zero = Fraction(p_one), Fraction(p_zero)
    if (
        source.secure
        and 0 < p_one < 1
        and 0 < p_zero < 1
        and serves_marked_batch(marks.shape[0], lane_digits(p_one, p_zero), num_bits)
    ):
        return corrected_coins(source, words_to_packed(marks, num_bits), num_bits, p_one, p_zero)
    return words_to_packed(bernoulli_words(source, marks, p_one, p_zero), num_bits)


def _distinct(keys: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct keys, index of each key among them) for int keys in [0, bound).

    A counting pass (O(n + bound)) when ``bound`` is small against the
    number of keys, else :func:`numpy.unique` (a sort).
    """
    if bound <= max(1 << 16, 4 * keys.size):
        present = np.flatnonzero(np.bincount(keys, minlength=bound))
        lookup = np.empty(bound, dtype=np.int64)
        lookup[present] = np.arange(present.size)
        return present, lookup[keys]
    present, inverse = np.unique(keys, return_inverse=True)
    return present, inverse.ravel()


class _BloomCache:
    """Bloom words of every value seen so far in every cohort, for one spec (bounded).

    The words live in a table indexed by (value row, cohort), so a batch
    gathers its rows' words with one NumPy indexing. A value is hashed in all
    its cohorts at once (:func:`ldp.hashing.bloom_positions_batch`, MD5 or
    MurmurHash3 of the cohort and the value's bytes) the first time it is
    seen, never again per row or per chunk. The only Python loop per batch is
    over its distinct values (their table rows). The table holds at most
    ``max_bytes``; past that it starts over, and a batch with more distinct
    values than fit is hashed pair by pair without the cache.
    """

    def __init__(self, spec: Rappor, max_bytes: int = 32 << 20):
        self.spec = spec
        self.width = (spec.num_bits + 63) // 64
        self.capacity = max(1, max_bytes // (8 * self.width * spec.num_cohorts))  # values
        self.lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.rows: dict[tuple[type, Any], int] = {}
        self.table = np.zeros((0, self.spec.num_cohorts, self.width), dtype=np.uint64)

    def words(self, values: Sequence[Any] | np.ndarray, cohorts: np.ndarray) -> np.ndarray:
        """(n, W) Bloom words of each value in its cohort."""
        codes, uniques = factorize_values(values)
        if len(uniques) > self.capacity:
            return _pair_words(self.spec, codes, uniques, cohorts)
        with self.lock:
            if len(self.rows) + len(uniques) > self.capacity:
                self._reset()
            rows = self.rows
            hashed = len(rows)
            value_rows = np.fromiter(
                (rows.setdefault((type(u), u), len(rows)) for u in uniques),
                dtype=np.int64,
                count=len(uniques),
            )
            if len(rows) > hashed:
                fresh = [u for u, r in zip(uniques, value_rows.tolist()) if r >= hashed]
                try:
                    self._hash(hashed, fresh)
                except BaseException:
                    self._reset()  # rows without words must not stay listed
                    raise
            return self.table[value_rows[codes], cohorts]

    def _hash(self, first_row: int, values: list[Any]) -> None:
        """Hash new values (table rows ``first_row`` on) in every cohort into the table."""
        spec = self.spec
        size = first_row + len(values)
        if size > self.table.shape[0]:
            table = np.zeros(
                (min(self.capacity, max(size, 2 * self.table.shape[0])), *self.table.shape[1:]), np.uint64
            )
            table[: self.table.shape[0]] = self.table
            self.table = table
        if any(v is None for v in values):
            raise InputError("rappor value must not be None")
        m, h = spec.num_cohorts, spec.num_hashes
        positions = bloom_positions_batch(values, range(m), h, spec.num_bits, spec.hash)  # (values, m, h)
        value_rows = np.repeat(np.arange(first_row, size), m * h)
        cohorts = np.tile(np.repeat(np.arange(m), h), len(values))
        _set_bits(self.table, (value_rows, cohorts), positions.reshape(-1, 1))


def _set_bits(table: np.ndarray, index: tuple[np.ndarray, ...], positions: np.ndarray) -> None:
    """OR vector bits ``positions`` (one row of positions per entry) into the words of ``table[index]``."""
    flat = positions.ravel()
    lanes = np.left_shift(np.uint64(1), packbits_lane(flat).astype(np.uint64))
    np.bitwise_or.at(table, (*index, flat // 64), lanes)


def _pair_words(spec: Rappor, codes: np.ndarray, uniques: list[Any], cohorts: np.ndarray) -> np.ndarray:
    """(n, W) Bloom words without the cache: each distinct (value, cohort) pair of the batch hashed once."""
    width = (spec.num_bits + 63) // 64
    m = spec.num_cohorts
    present, inverse = _distinct(codes * m + cohorts, len(uniques) * m)
    positions = np.array(
        [spec.bit_positions(uniques[v], c) for v, c in zip((present // m).tolist(), (present % m).tolist())],
        dtype=np.int64,
    ).reshape(present.size, spec.num_hashes)
    table = np.zeros((present.size, width), dtype=np.uint64)
    _set_bits(table, (np.repeat(np.arange(present.size), spec.num_hashes),), positions)
    return table[inverse]


_BLOOM_CACHES: dict[str, _BloomCache] = {}
_BLOOM_CACHES_LOCK = threading.Lock()
_BLOOM_CACHE_SPECS = 8


def _bloom_cache(spec: Rappor) -> _BloomCache:
    with _BLOOM_CACHES_LOCK:
        cache = _BLOOM_CACHES.get(spec.fingerprint)
        if cache is None:
            if len(_BLOOM_CACHES) >= _BLOOM_CACHE_SPECS:
                _BLOOM_CACHES.pop(next(iter(_BLOOM_CACHES)))
            cache = _BLOOM_CACHES[spec.fingerprint] = _BloomCache(spec)
        return cache


def _rappor_bloom_words(spec: Rappor, values: Sequence[Any] | np.ndarray, cohorts: np.ndarray) -> np.ndarray:
    """(n, W) uint64 words of each value's true bits B in its cohort (packbits lane order)."""
    if spec.encoding == "basic":
        codes, uniques = factorize_values(values)
        mapped = np.array([spec.bit_positions(u, 0)[0] for u in uniques], dtype=np.int64)  # the one-hot bit
        return _one_hot_words(mapped[codes], spec.num_bits)
    if spec.encoding == "boolean":
        codes, uniques = factorize_values(values)
        one = 1 << packbits_lane(0)
        mapped = np.array([one if parse_boolean(u) else 0 for u in uniques], dtype=np.uint64)
        return mapped[codes].reshape(-1, 1)
    return _bloom_cache(spec).words(values, np.asarray(cohorts, dtype=np.int64))


def encode_batch(
    spec,
    values: Sequence[Any] | np.ndarray,
    rng: np.random.Generator | RandomSource,
    *,
    indices: bool = False,
    cohorts: np.ndarray | None = None,
) -> ReportBatch:
    """Encode ``values`` (one per user, each a fresh client) with the coins of ``rng``.

    Parameters
    ----------
    spec : Spec
        A frequency spec, :class:`ldp.Rappor` or a numeric spec.
    values : sequence
        Domain values (or domain indices with ``indices=True``; not for Bloom RAPPOR).
    rng : RandomSource or numpy.random.Generator
        :class:`~ldp.client.randomness.SystemRandomSource` for real users
        (the OS CSPRNG; see :func:`secure_encode_batch`), or an explicit
        seeded generator, NOT cryptographically secure (simulations, tests).
    cohorts : array, optional
        RAPPOR cohorts; drawn uniformly from ``rng`` when omitted.

    Returns
    -------
    ReportBatch

    Raises
    ------
    ParameterError
        For a value the spec refuses (outside the domain; for a numeric spec
        anything but a finite number: text, booleans, None, NaN), naming the
        value and its position (``values[3]``); nothing is encoded.

    Examples
    --------
    >>> import numpy as np
    >>> import ldp
    >>> from ldp.client import encode_batch
    >>> spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> batch = encode_batch(spec, ["a", "b", "c", "a"], np.random.default_rng(7))  # insecure-ok: seeded, simulations only
    >>> len(batch), batch.spec == spec.fingerprint
    (4, True)
    >>> encode_batch(spec, ["a", None], np.random.default_rng(7))  # insecure-ok: seeded, simulations only
    Traceback (most recent call last):
    ...
    ldp.errors.InputError: values[1]: value None is not in the domain (3 values: 'a', 'b', 'c')
    """
    source = as_source(rng)
    try:
        return implementation(spec, "batch_encoder")(spec, values, source, cohorts=cohorts, indices=indices)
    except ParameterError as error:
        if indices:
            raise
        raise _naming_the_position(spec, values, error) from None


def _naming_the_position(spec: Any, values: Sequence[Any] | np.ndarray, error: ParameterError) -> Exception:
    """``error`` naming the position of the first value the single-report encoder refuses (same class, same words).

    The batch checks distinct values together, so its error cannot say
    where the value was; this looks for it, one value at a time, only once a
    batch has failed. An error that no single value causes is returned as is.
    """
    from ldp.client.encoders import make_encoder

    check = _value_check(spec) or make_encoder(spec).encode
    for position, value in enumerate(values):
        try:
            check(value)
        except ParameterError as exc:
            return type(exc)(f"values[{position}]: {exc}")
    return error


def _value_check(spec: Any) -> Any:
    """The cheap check of one value a spec's encoder makes (no coins), or None when only encoding checks it."""
    from ldp.specs.numeric import NumericSpec, check_numeric_value

    if isinstance(spec, NumericSpec):
        return check_numeric_value
    index_of = getattr(spec, "index_of", None)
    return index_of if callable(index_of) else None


def secure_encode_batch(
    spec,
    values: Sequence[Any] | np.ndarray,
    *,
    indices: bool = False,
    cohorts: np.ndarray | None = None,
    source: RandomSource | None = None,
) -> ReportBatch:
    """:func:`encode_batch` with every coin from the OS CSPRNG (a new :class:`SystemRandomSource` by default).

    Each value is a fresh client (RAPPOR: a uniform CSPRNG cohort, PRR and
    IRR collapsed into one coin per bit). For persistent RAPPOR clients use
    :func:`rappor_irr_batch` on their keyed-PRF PRR.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.OUE(domain=("a", "b", "c"), epsilon=1.0)
    >>> batch = secure_encode_batch(spec, ["a", "b", "b"])  # every coin from the OS CSPRNG
    >>> len(batch), batch.bits.shape
    (3, (3, 1))
    """
    if source is None:
        source = SystemRandomSource()
    elif not source.secure:
        raise ParameterError("secure_encode_batch needs a CSPRNG source (source.secure is False)")
    return encode_batch(spec, values, source, indices=indices, cohorts=cohorts)


def rappor_irr_batch(
    spec: Rappor, prr_words: np.ndarray, cohorts: np.ndarray, source: RandomSource
) -> ReportBatch:
    """Reports of persistent RAPPOR clients: the IRR of each row's permanent bits B′.

    Parameters
    ----------
    prr_words : (n, ⌈k/64⌉) uint64
        Each row's PRR (from the client's keyed PRF,
        :meth:`ldp.client.RapporEncoder.permanent_bits`, as :func:`lanes_to_words`).
    cohorts : (n,) int
        Each row's client cohort.
    source : RandomSource
        The IRR coins: P[S=1 | B′=1] = q, P[S=1 | B′=0] = p, exact (:func:`marked_bits`).
    """
    words = np.asarray(prr_words, dtype=np.uint64)
    return ReportBatch(
        spec=spec.fingerprint,
        cohorts=np.asarray(cohorts, dtype=np.int64),
        bits=marked_bits(as_source(source), words, spec.num_bits, spec.q, spec.p),
    )


def rappor_batch(spec: Rappor, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    source = as_source(rng)
    n = len(values)
    if cohorts is None:
        cohorts = source.integers(spec.num_cohorts, n)
    cohorts = np.asarray(cohorts, dtype=np.int64)
    if indices and spec.domain is not None:  # basic RAPPOR, the one encoding with a domain
        values = [spec.domain[i] for i in values]
    true_words = _rappor_bloom_words(spec, values, cohorts)
    bits = marked_bits(source, true_words, spec.num_bits, spec.prob_one_given_one, spec.prob_one_given_zero)
    return ReportBatch(spec=spec.fingerprint, cohorts=cohorts, bits=bits)


def grr_batch(spec: GRR, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    idx = value_indices(spec, values, indices)
    return ReportBatch(
        spec=spec.fingerprint,
        values=randomized_response_batch(as_source(rng), idx, spec.domain_size, spec.p, spec.q),
    )


def unary_batch(spec: UnaryEncoding, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    idx = value_indices(spec, values, indices)
    bits = one_hot_bits(as_source(rng), idx, spec.domain_size, spec.p, spec.q)
    return ReportBatch(spec=spec.fingerprint, bits=bits)


def local_hashing_batch(spec: LocalHashing, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    idx = value_indices(spec, values, indices)
    sampler = sampler_for(rng, idx.size)
    seeds = uniforms(sampler, LH_SEED_SPACE, idx.size).astype(np.uint64)
    buckets = lh_buckets(seeds, idx, spec.g)
    reported = randomized_response_batch(sampler, buckets.astype(np.int64), spec.g, spec.p, spec.q)
    return ReportBatch(spec=spec.fingerprint, seeds=seeds, values=reported)
