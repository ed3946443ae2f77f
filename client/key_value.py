"""Key-value encoders: PCKV-UE, PCKV-GRR and PrivKVM's single round (docs/key-value.md).

Input: one user's set of (key, value) pairs, a mapping key → value in
[−1, 1], a list of [key, value] pairs, or the JSON text of either (a CSV
cell); see :func:`ldp.specs.key_value.parse_pairs`.

Every coin is exact: the spec's probabilities are Fractions, drawn on the
CSPRNG's bits by Knuth–Yao walks (one report, :mod:`ldp.client.report_bits`)
or with the random source's exact samplers (a batch: bits in a large secure
one, :func:`~ldp.client.bits.sampler_for`). The value's
discretization P[v* = 1] = (1 + v)/2 is exact for the double v (a dyadic
rational): P[v* = 1] is ⌊(1 + v)·2^63⌋/2^64, i.e. (1 + v)/2 rounded down
to the 2^-64 grid; the privacy ratio does not depend on it (it holds for
v* = ±1 whatever the discretization).

Order of the draws of one report (the order another implementation must
follow): PCKV: the sampled pair (``uniform(η)``), the discretization coin,
the key coin (a), the sign coin (p, only when the key is kept); then UE:
the other keys' nonzero coins (b) as lanes (``sample_lanes``), then for
each nonzero key in increasing order its sign (``uniform(2)``: 1 is +);
GRR, key not kept: the other key (``uniform(d′ − 1)``) and the sign
(``uniform(2)``). PrivKVM: the key (``uniform(d)``), the discretization,
the presence coin, the sign coin.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import one_hot_bits
from ldp.client.bits import coins, dyadic_coins, sampler_for, uniforms
from ldp.client.encoders import stateless_factory
from ldp.client.randomness import as_source, bernoulli
from ldp.client.report_bits import coin, sample_lanes, uniform
from ldp.client.sampling import lanes_to_packed
from ldp.report import Report
from ldp.specs.key_value import PCKVGRR, PCKVUE, KeyValueSpec, PrivKVM

__all__ = [
    "PCKVGRREncoder",
    "PCKVUEEncoder",
    "PrivKVMEncoder",
    "pckv_grr_batch",
    "pckv_grr_encoder",
    "pckv_ue_batch",
    "pckv_ue_encoder",
    "privkvm_batch",
    "privkvm_encoder",
    "sample_pairs",
]

_TWO64 = 1 << 64


def discretize_threshold(value: float) -> int:
    """⌊(1 + v)·2^63⌋: v* = 1 when a uniform 64-bit word is below it."""
    return int((1 + Fraction(value)) * (1 << 63))


def _sample_one(spec: KeyValueSpec, value: Any) -> tuple[int, int]:
    """Padding-and-sampling of one user: (padded key index, v* ∈ {−1, 1})."""
    pairs = spec.pairs_of(value)
    eta = max(len(pairs), spec.ell)
    i = uniform(eta)
    key, v = pairs[i] if i < len(pairs) else (spec.domain_size + i - len(pairs), 0.0)
    sign = 1 if coin(Fraction(discretize_threshold(v), _TWO64)) else -1
    return key, sign


class PCKVUEEncoder:
    """PCKV-UE; see :class:`ldp.specs.key_value.PCKVUE`."""

    def __init__(self, spec: PCKVUE):
        self.spec = spec

    def encode(self, value: Any) -> Report:
        spec = self.spec
        key, sign = _sample_one(spec, value)
        plus = minus = 0
        if coin(spec.a):
            sign = sign if coin(spec.p) else -sign
            if sign > 0:
                plus |= 1 << key
            else:
                minus |= 1 << key
        width = spec.padded_size
        nonzero = sample_lanes(width, (((1 << width) - 1 ^ 1 << key, spec.b),))
        while nonzero:
            lane = nonzero & -nonzero
            if uniform(2):
                plus |= lane
            else:
                minus |= lane
            nonzero ^= lane
        return Report.of_encoder(
            spec.fingerprint,
            extra=(("plus", lanes_to_packed(plus, width)), ("minus", lanes_to_packed(minus, width))),
        )


class PCKVGRREncoder:
    """PCKV-GRR; see :class:`ldp.specs.key_value.PCKVGRR`."""

    def __init__(self, spec: PCKVGRR):
        self.spec = spec

    def encode(self, value: Any) -> Report:
        spec = self.spec
        key, sign = _sample_one(spec, value)
        if coin(spec.a):
            sign = sign if coin(spec.p) else -sign
        else:
            other = uniform(spec.padded_size - 1)
            key = other + (other >= key)
            sign = 1 if uniform(2) else -1
        return Report.of_encoder(spec.fingerprint, extra=(("key", key), ("sign", int(sign > 0))))


class PrivKVMEncoder:
    """PrivKVM's single round; see :class:`ldp.specs.key_value.PrivKVM`."""

    def __init__(self, spec: PrivKVM):
        self.spec = spec

    def encode(self, value: Any) -> Report:
        spec = self.spec
        held = dict(spec.pairs_of(value))
        j = uniform(spec.domain_size)
        v = held.get(j, 0.0)  # a non-holder's fake value: mean 0 (one round)
        sign = 1 if coin(Fraction(discretize_threshold(v), _TWO64)) else -1
        present = coin(spec.p1) if j in held else not coin(spec.p1)
        sign = sign if coin(spec.p2) else -sign
        response = 1 + sign if present else 1  # 0: −1, 1: absent, 2: +1
        return Report.of_encoder(spec.fingerprint, extra=(("key", j), ("response", response)))


pckv_ue_encoder = stateless_factory(PCKVUEEncoder)
pckv_grr_encoder = stateless_factory(PCKVGRREncoder)
privkvm_encoder = stateless_factory(PrivKVMEncoder)


# -- batches ------------------------------------------------------------------------------------


def _parsed(spec: KeyValueSpec, values: Sequence[Any]) -> list[tuple[tuple[int, float], ...]]:
    return [spec.pairs_of(value) for value in values]


def _signs(sampler: Any, values: np.ndarray) -> np.ndarray:
    """v* = ±1 with P[1] = ⌊(1 + v)·2^63⌋/2^64 for each value (one uniform word each, or 2 bits on average).

    From a :class:`~ldp.client.bits.BitSource` each coin compares bits of a
    uniform word with its threshold lazily
    (:func:`~ldp.client.bits.dyadic_coins`); from a random source it
    is a whole word.
    """
    v = np.asarray(values, dtype=np.float64)
    top = v >= 1.0  # threshold 2^64: always 1
    # ⌊(1 + v)·2^63⌋ = 2^63 + ⌊v·2^63⌋ exactly: v·2^63 is a power-of-two scaling, np.floor is exact,
    # and ⌊v·2^63⌋ ∈ [−2^63, 2^63) for v < 1 fits int64; the sum is taken modulo 2^64 in uint64.
    scaled = np.floor(np.where(top, 0.0, v) * 2.0**63).astype(np.int64)
    limit = scaled.view(np.uint64) + np.uint64(1 << 63)
    below = dyadic_coins(sampler, limit, 64)
    return np.where(top | below, 1, -1).astype(np.int64)


def sample_pairs(spec: KeyValueSpec, values: Sequence[Any], rng: Any) -> tuple[np.ndarray, np.ndarray]:
    """Padding-and-sampling of every user: (padded key index, v* ∈ {−1, 1}) arrays.

    A large secure batch draws the index and v* on bits (:func:`~ldp.client.bits.sampler_for`).
    """
    parsed = _parsed(spec, values)
    n = len(parsed)
    sampler = sampler_for(rng, n)
    sizes = np.array([len(p) for p in parsed], dtype=np.int64)
    eta = np.maximum(sizes, spec.ell)
    index = np.empty(n, dtype=np.int64)
    for bound in np.unique(eta).tolist():
        rows = np.flatnonzero(eta == bound)
        index[rows] = uniforms(sampler, int(bound), rows.size)
    keys = np.empty(n, dtype=np.int64)
    chosen = np.zeros(n, dtype=float)
    for u, pairs in enumerate(parsed):
        i = int(index[u])
        if i < len(pairs):
            keys[u], chosen[u] = pairs[i]
        else:
            keys[u] = spec.domain_size + i - len(pairs)
    return keys, _signs(sampler, chosen)


def _packed(mask: np.ndarray) -> np.ndarray:
    return np.packbits(mask, axis=1)


def pckv_ue_batch(spec: PCKVUE, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """PCKV-UE for many users (exact coins from the random source)."""
    source = as_source(rng)
    keys, signs = sample_pairs(spec, values, source)
    return ue_from_sampled(spec, keys, signs, source)


def ue_from_sampled(spec: PCKVUE, keys: np.ndarray, signs: np.ndarray, rng: Any) -> ReportBatch:
    """PCKV-UE reports of users whose sampled (padded key, v*) are given (simulation)."""
    source = as_source(rng)
    n, width = keys.size, spec.padded_size
    if source.secure and 0 < spec.a < 1 and 0 < spec.b < 1:
        return _ue_sparse(spec, keys, signs, source)
    nonzero = bernoulli(source, spec.b, n * width).reshape(n, width)
    positive = bernoulli(source, Fraction(1, 2), n * width).reshape(n, width)
    keep = bernoulli(source, spec.a, n)
    flip = ~bernoulli(source, spec.p, n)
    rows = np.arange(n)
    nonzero[rows, keys] = keep
    positive[rows, keys] = np.where(flip, -signs, signs) > 0
    plus, minus = nonzero & positive, nonzero & ~positive
    return ReportBatch.from_columns(spec.fingerprint, {"plus": _packed(plus), "minus": _packed(minus)})


def _ue_sparse(spec: PCKVUE, keys: np.ndarray, signs: np.ndarray, source: Any) -> ReportBatch:
    """:func:`ue_from_sampled` from a CSPRNG: near the entropy (the same distribution, fewer bytes).

    The nonzero lanes are one-hot coins (the key's w.p. a, each other w.p.
    b) by :func:`ldp.client.batch.one_hot_bits`; a fair sign bit is drawn
    for each nonzero lane only (one uniform digit each, as the single
    encoder draws ``randbelow(2)`` only when nonzero); the key's sign is
    v* flipped with probability 1 − p.
    """
    n, width = keys.size, spec.padded_size
    nonzero = np.unpackbits(one_hot_bits(source, keys, width, spec.a, spec.b), axis=1, count=width).astype(
        bool
    )
    total = int(np.count_nonzero(nonzero))
    digits = np.unpackbits(np.asarray(source.words(-(-total // 64)), dtype=np.uint64).view(np.uint8))
    positive = np.zeros((n, width), dtype=bool)
    positive[nonzero] = digits[:total].astype(bool)
    flip = ~bernoulli(source, spec.p, n)
    rows = np.arange(n)
    positive[rows, keys] = np.where(flip, -signs, signs) > 0
    plus, minus = nonzero & positive, nonzero & ~positive
    return ReportBatch.from_columns(spec.fingerprint, {"plus": _packed(plus), "minus": _packed(minus)})


def pckv_grr_batch(spec: PCKVGRR, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """PCKV-GRR for many users (exact coins from the random source)."""
    source = as_source(rng)
    keys, signs = sample_pairs(spec, values, source)
    return grr_from_sampled(spec, keys, signs, source)


def grr_from_sampled(spec: PCKVGRR, keys: np.ndarray, signs: np.ndarray, rng: Any) -> ReportBatch:
    """PCKV-GRR reports of users whose sampled (padded key, v*) are given (simulation)."""
    n = keys.size
    sampler = sampler_for(rng, n)
    keep = coins(sampler, spec.a, n)
    flip = ~coins(sampler, spec.p, n)
    other = uniforms(sampler, spec.padded_size - 1, n)
    random_sign = coins(sampler, Fraction(1, 2), n)
    key = np.where(keep, keys, other + (other >= keys))
    sign = np.where(keep, np.where(flip, -signs, signs) > 0, random_sign)
    return ReportBatch.from_columns(
        spec.fingerprint, {"key": key.astype(np.int64), "sign": sign.astype(np.int64)}
    )


def privkvm_batch(spec: PrivKVM, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """PrivKVM's single round for many users (exact coins from the random source; bits in a large secure batch)."""
    parsed = _parsed(spec, values)
    n = len(parsed)
    sampler = sampler_for(rng, n)
    j = uniforms(sampler, spec.domain_size, n)
    held = np.zeros(n, dtype=bool)
    chosen = np.zeros(n, dtype=float)
    for u, pairs in enumerate(parsed):
        for k, v in pairs:
            if k == j[u]:
                held[u], chosen[u] = True, v
    signs = _signs(sampler, chosen)
    coin1 = coins(sampler, spec.p1, n)
    keep2 = coins(sampler, spec.p2, n)
    present = np.where(held, coin1, ~coin1)
    signs = np.where(keep2, signs, -signs)
    response = np.where(present, 1 + signs, 1)
    return ReportBatch.from_columns(
        spec.fingerprint, {"key": j.astype(np.int64), "response": response.astype(np.int64)}
    )
