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
FORMULAS.md §2 (the same distribution as the two stages in sequence).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from ldp.batch import ReportBatch
from ldp.errors import ParameterError
from ldp.hashing import LH_PRIME, LH_SEED_SPACE, bloom_positions
from ldp.specs import GRR, LocalHashing, Rappor, UnaryEncoding
from ldp.specs.numeric import NumericSpec
from ldp.specs.rappor import parse_boolean
from ldp.client.sampling import REVERSE_BITS, binary_digits

__all__ = ["encode_batch", "bernoulli_words", "words_to_packed"]

_DIGITS = 48
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_REVERSE = np.frombuffer(REVERSE_BITS, dtype=np.uint8)


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ParameterError(
            "encode_batch needs an explicit numpy.random.Generator (seeded for reproducibility); "
            f"got {type(rng).__name__}. It is a simulation path, not for devices."
        )
    return rng


def bernoulli_words(rng: np.random.Generator, ones: np.ndarray, p_one: Fraction, p_zero: Fraction) -> np.ndarray:
    """Independent coins, bit-sliced in uint64 words.

    Lane (word w, bit b) is 1 with probability ``p_one`` where bit b of
    ``ones[w]`` is set and ``p_zero`` where it is not. Each lane compares a
    uniform real, one random bit per round, against its threshold's binary
    digits (exact up to 2^-48). Rounds run on whole arrays while most words
    are undecided, then only on the words with undecided lanes.
    """
    flat = np.ascontiguousarray(ones, dtype=np.uint64).ravel()
    digits_one = binary_digits(Fraction(p_one), _DIGITS)[0]
    digits_zero = binary_digits(Fraction(p_zero), _DIGITS)[0]
    not_flat = ~flat
    result = np.zeros_like(flat)
    undecided = np.full(flat.size, _ALL, dtype=np.uint64)
    scratch = np.empty_like(flat)
    dense_rounds = 8  # P[a 64-lane word is still undecided] stays high for ~log2(64) rounds
    for d1, d0 in zip(digits_one[:dense_rounds], digits_zero[:dense_rounds]):
        threshold = _threshold(flat, not_flat, d1, d0)
        plane = rng.integers(0, _ALL, size=flat.size, dtype=np.uint64, endpoint=True)
        np.bitwise_and(undecided, threshold, out=scratch)
        scratch &= ~plane
        result |= scratch
        plane ^= threshold
        undecided &= ~plane
    active = np.flatnonzero(undecided)
    undecided = undecided[active]
    masks, not_masks = flat[active], not_flat[active]
    for d1, d0 in zip(digits_one[dense_rounds:], digits_zero[dense_rounds:]):
        if active.size == 0:
            break
        threshold = _threshold(masks, not_masks, d1, d0)
        plane = rng.integers(0, _ALL, size=active.size, dtype=np.uint64, endpoint=True)
        result[active] |= undecided & threshold & ~plane
        undecided &= ~(plane ^ threshold)
        keep = undecided != 0
        active, undecided, masks, not_masks = active[keep], undecided[keep], masks[keep], not_masks[keep]
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
    """(n, W) uint64 lanes (bit i of word i//64 is vector bit i) → (n, ⌈k/8⌉) uint8 in numpy.packbits order."""
    as_bytes = np.ascontiguousarray(words.astype("<u8")).view(np.uint8).reshape(words.shape[0], -1)
    packed = _REVERSE[as_bytes[:, : (num_bits + 7) // 8]]
    spare = -num_bits % 8
    if spare:  # lanes past num_bits were sampled too; the padding of the last byte must be zero
        packed[:, -1] &= np.uint8((0xFF << spare) & 0xFF)
    return packed


def _factorize(values: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Integer codes of ``values`` (by first appearance) and the distinct values."""
    mapping: dict[Any, int] = {}
    codes = np.fromiter((mapping.setdefault(v, len(mapping)) for v in values), dtype=np.int64, count=len(values))
    return codes, list(mapping)


def _indices(spec, values: Sequence[Any], indices: bool) -> np.ndarray:
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
    words[rows, idx // 64] = np.left_shift(np.uint64(1), (idx % 64).astype(np.uint64))
    return words


def _rappor_bloom_words(spec: Rappor, values: Sequence[Any], cohorts: np.ndarray) -> np.ndarray:
    width = (spec.num_bits + 63) // 64
    if spec.encoding == "basic":
        codes, uniques = _factorize(values)
        mapped = np.array([spec.domain_index.index(u) for u in uniques], dtype=np.int64)
        return _one_hot_words(mapped[codes], spec.num_bits)
    if spec.encoding == "boolean":
        return np.array([[1 if parse_boolean(v) else 0] for v in values], dtype=np.uint64).reshape(-1, 1)
    codes, uniques = _factorize(values)
    keys = codes * spec.num_cohorts + cohorts
    present, pair_index = np.unique(keys, return_inverse=True)
    table = np.zeros((present.size, width), dtype=np.uint64)
    for j, key in enumerate(present.tolist()):
        value, cohort = uniques[key // spec.num_cohorts], key % spec.num_cohorts
        for position in bloom_positions(value, cohort, spec.num_hashes, spec.num_bits, spec.hash):
            table[j, position // 64] |= np.uint64(1) << np.uint64(position % 64)
    return table[pair_index.ravel()]


def encode_batch(
    spec,
    values: Sequence[Any],
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
    if isinstance(spec, NumericSpec):
        from ldp.client.numeric import encode_numeric_batch

        return encode_numeric_batch(spec, values, rng)
    if isinstance(spec, Rappor):
        n = len(values)
        if cohorts is None:
            cohorts = rng.integers(0, spec.num_cohorts, n)
        cohorts = np.asarray(cohorts, dtype=np.int64)
        if indices and spec.encoding == "basic":
            values = [spec.domain[i] for i in values]
        true_words = _rappor_bloom_words(spec, values, cohorts)
        lanes = bernoulli_words(rng, true_words, spec.prob_one_given_one, spec.prob_one_given_zero)
        return ReportBatch(spec=spec.fingerprint, cohorts=cohorts, bits=words_to_packed(lanes, spec.num_bits))
    idx = _indices(spec, values, indices)
    if isinstance(spec, GRR):
        return ReportBatch(spec=spec.fingerprint, values=_rr(rng, idx, spec.domain_size, spec.p))
    if isinstance(spec, UnaryEncoding):
        lanes = bernoulli_words(rng, _one_hot_words(idx, spec.domain_size), spec.p, spec.q)
        return ReportBatch(spec=spec.fingerprint, bits=words_to_packed(lanes, spec.domain_size))
    if isinstance(spec, LocalHashing):
        seeds = rng.integers(0, LH_SEED_SPACE, idx.size, dtype=np.int64).astype(np.uint64)
        prime = np.uint64(LH_PRIME)
        a = seeds // prime + np.uint64(1)
        b = seeds % prime
        buckets = ((a * idx.astype(np.uint64) + b) % prime) * np.uint64(spec.g) // prime
        reported = _rr(rng, buckets.astype(np.int64), spec.g, spec.p)
        return ReportBatch(spec=spec.fingerprint, seeds=seeds, values=reported)
    raise ParameterError(f"no batch encoder for {type(spec).__name__}")
