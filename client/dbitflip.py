"""dBitFlip encoders: a memoizing client, and the vectorized batch (docs/longitudinal/dbitflip.md).

A client holds a 32-byte secret (:class:`~ldp.client.state.ClientState`,
RAPPOR's state file). Everything permanent is a keyed PRF of it
(:class:`~ldp.client.sampling.PRFStream`, SHAKE-256), so nothing is stored
per value and nothing changes across restarts:

1. The d sampled buckets: Floyd's algorithm over [0, b) with uniform draws
   ``randbelow_from`` the stream (label ``ldp-dbitflip-buckets-v1``, secret,
   spec fingerprint): for j = b − d, …, b − 1 draw t in [0, j] and add t, or
   j when t is already taken [1]_; the buckets are then sorted.
2. The memo key of a value: the d-bit pattern of which sampled buckets hold
   it (packed, :func:`~ldp.client.sampling.lanes_to_packed`): all zero or one
   bit set, min(d + 1, b) keys in all.
3. The memoized bits of a key: the exact lane sampler fed by the stream
   (label ``ldp-dbitflip-memo-v1``, secret, fingerprint, memo key): bit i is
   1 with p where the pattern is set, with q = 1 − p elsewhere.

Each report sends the memoized bits, each flipped with probability γ by
fresh coins of the OS CSPRNG (output perturbation; none when γ = 0), after
the b bits marking the sampled buckets (one vector of b + d bits). The
order of the reads is the cross-language contract (the TypeScript client
reads the same bytes).

The batch encoder treats every row as its own user (one report each), as
the other mechanisms' batches do: its sampled buckets and sent bits have
exactly the single client's distribution, drawn from a random source.

References
----------
.. [1] J. Bentley, R. Floyd. "Programming pearls: a sample of brilliance".
   Communications of the ACM 30(9), 1987.
.. [2] B. Ding, J. Kulkarni, S. Yekhanin. "Collecting telemetry data
   privately". NeurIPS 2017.
"""

from __future__ import annotations

import os
from fractions import Fraction
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import bernoulli_words, packbits_lane, value_indices, words_to_packed
from ldp.client.bits import BitSource, coins, sampler_for
from ldp.client.encoders import Encoder
from ldp.client.randomness import RandomSource, as_source
from ldp.client.report_bits import sample_lanes as fresh_lanes
from ldp.client.sampling import (
    PRFStream,
    expansion,
    lanes_to_packed,
    randbelow_from,
    sample_expanded,
)
from ldp.client.state import ClientState
from ldp.client.subset import SubsetShape, uniform_subsets
from ldp.errors import ParameterError
from ldp.report import Report
from ldp.specs.dbitflip import DBitFlip

__all__ = ["DBitFlipEncoder", "dbitflip_batch", "dbitflip_encoder", "sampled_buckets"]

BUCKETS_LABEL = b"ldp-dbitflip-buckets-v1"
MEMO_LABEL = b"ldp-dbitflip-memo-v1"


def sampled_buckets(spec: DBitFlip, secret: bytes) -> tuple[int, ...]:
    """The d buckets a client samples, ascending: Floyd's algorithm on its keyed PRF stream."""
    stream = PRFStream(BUCKETS_LABEL, secret, spec.fingerprint.encode("ascii"))
    b, d = spec.domain_size, spec.d
    chosen: set[int] = set()
    for j in range(b - d, b):
        t = randbelow_from(stream, j + 1)
        chosen.add(j if t in chosen else t)
    return tuple(sorted(chosen))


class DBitFlipEncoder:
    """dBitFlip client: permanent sampled buckets and memoized bits (keyed PRF), fresh flips γ.

    Parameters
    ----------
    spec : DBitFlip
    state : ClientState
        The client's secret; persist it (``ClientState.open``) so the sampled
        buckets and the memoized bits stay the same across restarts.

    Examples
    --------
    >>> from ldp.client import ClientState
    >>> from ldp.client.dbitflip import DBitFlipEncoder
    >>> from ldp.specs.dbitflip import DBitFlip
    >>> spec = DBitFlip(domain=("a", "b", "c", "d"), epsilon=1.0, d=2)
    >>> encoder = DBitFlipEncoder(spec, ClientState.new(spec))
    >>> encoder.encode("a") == encoder.encode("a")  # γ = 0: the memoized report, every time
    True
    >>> len(encoder.buckets), encoder.memo_key("a") in {encoder.memo_key(v) for v in spec.domain}
    (2, True)
    """

    def __init__(self, spec: DBitFlip, state: ClientState):
        if state.spec != spec.fingerprint:
            raise ParameterError(f"client state is for spec {state.spec}, not {spec.fingerprint}")
        self.spec = spec
        self.state = state
        self._fingerprint = spec.fingerprint.encode("ascii")
        self.buckets = sampled_buckets(spec, state.secret)
        self._position = {bucket: i for i, bucket in enumerate(self.buckets)}
        self._width = spec.d
        self._full = (1 << spec.d) - 1
        self._sampled = sum(1 << bucket for bucket in self.buckets)  # report bits 0..b-1
        self._one = expansion(spec.p)  # exact binary expansions, computed once
        self._zero = expansion(spec.q)

    def pattern(self, value: Any) -> int:
        """The d-bit pattern (as lanes) of which sampled buckets hold ``value``: 0 or one bit."""
        position = self._position.get(self.spec.index_of(value))
        return 0 if position is None else 1 << position

    def memo_key(self, value: Any) -> bytes:
        """The memo key of ``value``: its pattern, packed (min(d + 1, b) keys; the ledger's stream name)."""
        return lanes_to_packed(self.pattern(value), self._width)

    def permanent_bits(self, value: Any) -> int:
        """The memoized bits of ``value``'s memo key, as lanes (bit i: the i-th sampled bucket)."""
        pattern = self.pattern(value)
        key = lanes_to_packed(pattern, self._width)
        stream = PRFStream(MEMO_LABEL, self.state.secret, self._fingerprint, key)
        return sample_expanded(
            self._width, ((pattern, *self._one), (self._full ^ pattern, *self._zero)), stream
        )

    def encode(self, value: Any) -> Report:
        sent = self.permanent_bits(value)
        if self.spec.gamma:  # output perturbation: each bit flipped with probability γ, from the CSPRNG
            sent ^= fresh_lanes(self._width, ((self._full, self.spec.gamma),))
        b = self.spec.domain_size
        return Report.of_encoder(
            self.spec.fingerprint, bits=lanes_to_packed(self._sampled | sent << b, b + self._width)
        )


def dbitflip_encoder(spec: DBitFlip, state: ClientState | str | os.PathLike[str] | None = None) -> Encoder:
    """dBitFlip's encoder: the client's persistent state (opened or created at a path), or a fresh one in memory."""
    if state is None:
        state = ClientState.new(spec)
    elif not isinstance(state, ClientState):
        state = ClientState.open(state, spec)
    return DBitFlipEncoder(spec, state)


def _held_ranks(subsets: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows whose packed bucket subset holds x, x's position among those rows' sampled buckets)."""
    rows = np.arange(x.size)
    byte, within = x >> 3, (x & 7).astype(np.uint8)
    held = np.flatnonzero((subsets[rows, byte] >> (7 - within)) & 1)
    mine, byte, within = subsets[held], byte[held], within[held]
    before = np.cumsum(np.bitwise_count(mine), axis=1, dtype=np.int64)[np.arange(held.size), byte]
    # the buckets counted in x's own byte: those above x's bit (numpy.packbits order: the first is the top bit)
    after_x = np.bitwise_count(mine[np.arange(held.size), byte] & ((np.uint8(1) << (7 - within)) - 1))
    return held, before - after_x.astype(np.int64) - 1


def _with_sent_bits(
    spec: DBitFlip,
    source: RandomSource,
    sampler: RandomSource | BitSource,
    subsets: np.ndarray,
    x: np.ndarray,
) -> np.ndarray:
    """Rows of packed reports: the sampled buckets ``subsets`` (packed), then the d sent coins of the values ``x``."""
    b, d, m = spec.domain_size, spec.d, x.size
    held, rank = _held_ranks(subsets, x)
    if isinstance(sampler, BitSource):
        marked = np.zeros((m, d), dtype=bool)  # the coin of probability p′: x's rank among the buckets
        marked[held, rank] = True
        sent = np.empty((m, d), dtype=bool)
        sent[marked] = coins(sampler, spec.sent_one, held.size)
        sent[~marked] = coins(sampler, spec.sent_zero, sent.size - held.size)
    else:
        ones = np.zeros((m, (d + 63) // 64), dtype=np.uint64)
        ones[held, rank // 64] = np.left_shift(np.uint64(1), packbits_lane(rank).astype(np.uint64))
        lanes = bernoulli_words(source, ones, spec.sent_one, spec.sent_zero)
        sent = np.unpackbits(words_to_packed(lanes, d), axis=1, count=d).view(bool)
    if b % 8 == 0:  # the buckets fill whole bytes: the sent bits follow them
        return np.concatenate([subsets, np.packbits(sent, axis=1)], axis=1)
    return np.packbits(np.concatenate([np.unpackbits(subsets, axis=1, count=b), sent], axis=1), axis=1)


def dbitflip_batch(spec: DBitFlip, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """dBitFlip for many one-report users, vectorized and exact (each row a fresh client).

    A row's sent bit for a sampled bucket is 1 with p′ = γ + (1 − 2γ)p when
    the bucket holds its value and q′ = 1 − p′ otherwise: the memoized bit
    followed by the flip, as one coin.

    The sampled buckets are a uniform d-subset of [0, b): subset selection's
    sampler with ω = d and the row's bucket held with probability d/b
    (:class:`~ldp.client.subset.SubsetShape`). A large secure batch
    (:func:`~ldp.client.bits.sampler_for`) draws them and the coins on bits,
    near the entropy a report needs (log2 C(b, d) + d·h(q′) bits); otherwise
    whole words draw them (Floyd's algorithm and the bit-sliced lanes).
    """
    source = as_source(rng)
    idx = value_indices(spec, values, indices)
    b, d = spec.domain_size, spec.d
    m = idx.size
    sampler = sampler_for(source, m)
    subsets = uniform_subsets(
        sampler, idx, SubsetShape(b, d, Fraction(d, b))
    )  # packed as the reports' first b bits
    packed = np.empty((m, (b + d + 7) // 8), dtype=np.uint8)
    block = max(1, (1 << 20) // (b + d))  # rows per block: 1 Mi booleans of buckets and sent bits
    for start in range(0, m, block):
        rows = slice(start, min(start + block, m))
        packed[rows] = _with_sent_bits(spec, source, sampler, subsets[rows], idx[rows])
    return ReportBatch(spec=spec.fingerprint, bits=packed)
