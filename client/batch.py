"""Vectorized encoding for simulations and servers: NOT for devices.

:func:`encode_batch` randomizes many users' values at once with NumPy and a
caller-supplied, seeded :class:`numpy.random.Generator`. NumPy's generators
are not cryptographically secure: anyone who learns the seed or enough output
can reconstruct every coin, so this path is for simulations, tests and
benchmarks (where reproducibility is the point), never for encoding real
users' data on a device. Real clients use :func:`ldp.client.make_encoder`.

Probabilities are applied with 48 binary digits (bias ≤ 2^-48 per coin).
Each value is a different user: RAPPOR users get a uniform cohort and one
report each, so the permanent and instantaneous randomized responses
collapse into one independent coin per bit with P[S=1 | B] from
docs/mechanisms.md#rappor-prr-irr (the same distribution as the two stages in sequence).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.sampling import binary_digits
from ldp.errors import ParameterError
from ldp.hashing import LH_PRIME, LH_SEED_SPACE, bloom_positions
from ldp.plugins import implementation, implements
from ldp.specs import GRR, LocalHashing, Rappor, UnaryEncoding
from ldp.specs.rappor import parse_boolean

__all__ = ["bernoulli_words", "encode_batch", "words_to_packed"]

_DIGITS = 48
# After 10 rounds a 64-lane word still has an undecided lane with probability
# 1 - (1 - 2^-10)^64 ≈ 6 %; those finish in a gathered tail.
_DENSE_ROUNDS = 10
_BLOCK_WORDS = 1 << 15  # 256 KiB per working array: the dense rounds stay in cache
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(
            "encode_batch needs an explicit numpy.random.Generator (seeded for reproducibility); "
            f"got {type(rng).__name__}. It is a simulation path, not for devices."
        )
    return rng


def bernoulli_words(
    rng: np.random.Generator, ones: np.ndarray, p_one: Fraction, p_zero: Fraction
) -> np.ndarray:
    """Independent coins, bit-sliced in uint64 words.

    Lane (word w, bit b) is 1 with probability ``p_one`` where bit b of
    ``ones[w]`` is set and ``p_zero`` where it is not. Each lane compares a
    uniform real, one random bit per round, against its threshold's binary
    digits (exact up to 2^-48). The first rounds run on every word, one
    cache-sized block at a time; the few words with lanes still undecided
    after them finish together.
    """
    flat = np.ascontiguousarray(ones, dtype=np.uint64).ravel()
    digits_one = binary_digits(Fraction(p_one), _DIGITS)[0]
    digits_zero = binary_digits(Fraction(p_zero), _DIGITS)[0]
    dense = list(zip(digits_one[:_DENSE_ROUNDS], digits_zero[:_DENSE_ROUNDS]))
    result = np.zeros_like(flat)
    block = max(1, min(_BLOCK_WORDS, flat.size))  # an empty batch has no blocks
    undecided, not_masks, scratch = (np.empty(block, dtype=np.uint64) for _ in range(3))
    left_positions, left_lanes = [], []
    for start in range(0, flat.size, block):
        masks = flat[start : start + block]
        size = masks.size
        open_lanes, inverse, spare, out = (
            undecided[:size],
            not_masks[:size],
            scratch[:size],
            result[start : start + size],
        )
        open_lanes.fill(_ALL)
        np.invert(masks, out=inverse)
        for d1, d0 in dense:
            threshold = _threshold(masks, inverse, d1, d0)
            plane = rng.integers(0, _ALL, size=size, dtype=np.uint64, endpoint=True)
            np.invert(plane, out=plane)  # a lane's bit is 1 where its uniform's digit is 0
            np.bitwise_and(open_lanes, threshold, out=spare)
            spare &= plane
            out |= spare  # decided 1: digit 0 under a threshold digit 1
            plane ^= threshold
            open_lanes &= plane  # still open where the digits agree
        still_open = np.flatnonzero(open_lanes)
        left_positions.append(start + still_open)
        left_lanes.append(open_lanes[still_open])
    active = np.concatenate(left_positions) if left_positions else np.zeros(0, dtype=np.intp)
    open_lanes = np.concatenate(left_lanes) if left_lanes else np.zeros(0, dtype=np.uint64)
    masks = flat[active]
    inverse = ~masks
    for d1, d0 in zip(digits_one[_DENSE_ROUNDS:], digits_zero[_DENSE_ROUNDS:]):
        if active.size == 0:
            break
        threshold = _threshold(masks, inverse, d1, d0)
        plane = rng.integers(0, _ALL, size=active.size, dtype=np.uint64, endpoint=True)
        result[active] |= open_lanes & threshold & ~plane
        open_lanes &= ~(plane ^ threshold)
        keep = open_lanes != 0
        active, open_lanes, masks, inverse = active[keep], open_lanes[keep], masks[keep], inverse[keep]
    return result.reshape(np.shape(ones))


def _threshold(masks: np.ndarray, not_masks: np.ndarray, d1: int, d0: int):
    """Per-lane threshold digit: d1 on lanes in ``masks``, d0 elsewhere."""
    if d1 and d0:
        return _ALL
    if d1:
        return masks
    if d0:
        return not_masks
    return np.uint64(0)


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


def packbits_lane(position):
    """Bit of word ``position // 64`` that holds vector bit ``position``.

    Byte ``(position % 64) // 8`` of a little-endian word, most significant
    bit first as in :func:`numpy.packbits`: bit ``(position % 64) ^ 7``.
    """
    return (position % 64) ^ 7


def _factorize(values: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Integer codes of ``values`` (by first appearance) and the distinct values.

    Values are told apart by type too: ``True``, ``1`` and ``1.0`` are equal dict keys in Python but
    not the same value to encode (a boolean is refused in a domain, ``1.0`` hashes as ``"1.0"`` in a
    Bloom filter), so each keeps its own code and is looked up as itself, as the single encoder does.
    """
    if (isinstance(values, np.ndarray) and values.dtype != object) or len(set(map(type, values))) <= 1:
        mapping: dict[Any, int] = {}  # one type: equal keys are the same value (the fast path)
        codes = np.fromiter(
            (mapping.setdefault(v, len(mapping)) for v in values), dtype=np.int64, count=len(values)
        )
        return codes, list(mapping)
    typed: dict[tuple[type, Any], int] = {}
    codes = np.fromiter(
        (typed.setdefault((type(v), v), len(typed)) for v in values), dtype=np.int64, count=len(values)
    )
    return codes, [v for _, v in typed]


def _indices(spec, values: Sequence[Any] | np.ndarray, indices: bool) -> np.ndarray:
    if indices:
        idx = np.asarray(values, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= spec.domain_size):
            raise ParameterError(f"domain indices must be in [0, {spec.domain_size})")
        return idx
    codes, uniques = _factorize(values)
    mapped = np.array([spec.index_of(u) for u in uniques], dtype=np.int64)
    return mapped[codes]


def _rr(rng: np.random.Generator, idx: np.ndarray, size: int, keep: Fraction) -> np.ndarray:
    kept = rng.random(idx.size) < float(keep)
    other = rng.integers(0, size - 1, idx.size)
    other += other >= idx
    return np.where(kept, idx, other)


def _one_hot_words(idx: np.ndarray, width: int) -> np.ndarray:
    words = np.zeros((idx.size, (width + 63) // 64), dtype=np.uint64)
    rows = np.arange(idx.size)
    words[rows, idx // 64] = np.left_shift(np.uint64(1), packbits_lane(idx).astype(np.uint64))
    return words


def _rappor_bloom_words(spec: Rappor, values: Sequence[Any] | np.ndarray, cohorts: np.ndarray) -> np.ndarray:
    width = (spec.num_bits + 63) // 64
    if spec.encoding == "basic":
        codes, uniques = _factorize(values)
        mapped = np.array([spec.bit_positions(u, 0)[0] for u in uniques], dtype=np.int64)  # the one-hot bit
        return _one_hot_words(mapped[codes], spec.num_bits)
    if spec.encoding == "boolean":
        one = 1 << packbits_lane(0)
        return np.array([[one if parse_boolean(v) else 0] for v in values], dtype=np.uint64).reshape(-1, 1)
    codes, uniques = _factorize(values)
    keys = codes * spec.num_cohorts + cohorts
    present, pair_index = np.unique(keys, return_inverse=True)
    table = np.zeros((present.size, width), dtype=np.uint64)
    for j, key in enumerate(present.tolist()):
        value, cohort = uniques[key // spec.num_cohorts], key % spec.num_cohorts
        for position in bloom_positions(value, cohort, spec.num_hashes, spec.num_bits, spec.hash):
            table[j, position // 64] |= np.uint64(1) << np.uint64(packbits_lane(position))
    return table[pair_index.ravel()]


def encode_batch(
    spec,
    values: Sequence[Any] | np.ndarray,
    rng: np.random.Generator,
    *,
    indices: bool = False,
    cohorts: np.ndarray | None = None,
) -> ReportBatch:
    """Encode ``values`` (one per user) with a seeded NumPy generator (insecure, simulation only).

    Parameters
    ----------
    spec : Spec
        A frequency spec or :class:`ldp.Rappor`.
    values : sequence
        Domain values (or domain indices with ``indices=True``; not for Bloom RAPPOR).
    rng : numpy.random.Generator
        Explicit generator; NOT cryptographically secure.
    cohorts : array, optional
        RAPPOR cohorts; drawn uniformly when omitted.

    Returns
    -------
    ReportBatch
    """
    rng = _check_rng(rng)
    return implementation(spec, "batch_encoder")(spec, values, rng, cohorts=cohorts, indices=indices)


@implements(Rappor, "batch_encoder")
def _rappor_batch(spec: Rappor, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    n = len(values)
    if cohorts is None:
        cohorts = rng.integers(0, spec.num_cohorts, n)
    cohorts = np.asarray(cohorts, dtype=np.int64)
    if indices and spec.domain is not None:  # basic RAPPOR, the one encoding with a domain
        values = [spec.domain[i] for i in values]
    true_words = _rappor_bloom_words(spec, values, cohorts)
    lanes = bernoulli_words(rng, true_words, spec.prob_one_given_one, spec.prob_one_given_zero)
    return ReportBatch(spec=spec.fingerprint, cohorts=cohorts, bits=words_to_packed(lanes, spec.num_bits))


@implements(GRR, "batch_encoder")
def _grr_batch(spec: GRR, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    idx = _indices(spec, values, indices)
    return ReportBatch(spec=spec.fingerprint, values=_rr(rng, idx, spec.domain_size, spec.p))


@implements(UnaryEncoding, "batch_encoder")
def _unary_batch(spec: UnaryEncoding, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    idx = _indices(spec, values, indices)
    lanes = bernoulli_words(rng, _one_hot_words(idx, spec.domain_size), spec.p, spec.q)
    return ReportBatch(spec=spec.fingerprint, bits=words_to_packed(lanes, spec.domain_size))


@implements(LocalHashing, "batch_encoder")
def _local_hashing_batch(spec: LocalHashing, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    idx = _indices(spec, values, indices)
    seeds = rng.integers(0, LH_SEED_SPACE, idx.size, dtype=np.int64).astype(np.uint64)
    prime = np.uint64(LH_PRIME)
    a = seeds // prime + np.uint64(1)
    b = seeds % prime
    buckets = ((a * idx.astype(np.uint64) + b) % prime) * np.uint64(spec.g) // prime
    reported = _rr(rng, buckets.astype(np.int64), spec.g, spec.p)
    return ReportBatch(spec=spec.fingerprint, seeds=seeds, values=reported)
