"""LOLOHA encoders: one persistent client, and the vectorized batch (docs/longitudinal/loloha.md).

A client is its state's 32-byte secret (:class:`~ldp.client.state.ClientState`):

1. its pool index j = randbelow(S) read from the PRF stream
   SHAKE-256(b"ldp-loloha-seed-v1", secret, fingerprint), so the same state
   gives the same hash function after any restart, and its hash seed is the
   spec's public pool entry j (:func:`ldp.specs.loloha.hash_pool`);
2. the value's bucket b = H_j(x) (the local-hashing family of :mod:`ldp.hashing`);
3. the bucket's memo (round 1, randomized response over g at ε∞: keep p₁)
   from the PRF stream SHAKE-256(b"ldp-loloha-memo-v1", secret, fingerprint,
   memo key), the memo key being the bucket in decimal ASCII: one draw of
   randbelow(den₁) split as :func:`~ldp.client.encoders.randomized_response_index`
   splits it. No table grows: the memo is recomputed, identical, every time;
4. every report's round 2 (randomized response of the memo over g: keep p₂)
   from the OS CSPRNG (``secrets``).

Every randbelow, from a PRF stream or from ``secrets``, reads ⌈k/8⌉ bytes
big-endian and keeps the top k bits (k the bit length of the bound),
rejecting values at or above the bound, so another implementation reading
the same streams reproduces the reports (tests/vectors).

References
----------
.. [1] H. H. Arcolezi, C. Pinzón, C. Palamidessi, S. Gambs. EDBT 2023.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import randomized_response_batch, value_indices
from ldp.client.bits import sampler_for, uniforms
from ldp.client.encoders import randomized_response_index, rr_thresholds
from ldp.client.randomness import RandomSource, as_source
from ldp.client.sampling import ByteSource, PRFStream
from ldp.client.state import ClientState
from ldp.errors import ParameterError
from ldp.hashing import lh_bucket, lh_buckets
from ldp.report import Report
from ldp.specs.loloha import LOLOHA

__all__ = [
    "LolohaEncoder",
    "loloha_batch",
    "loloha_encoder",
    "loloha_round_two_batch",
    "prf_below",
]

_SEED_LABEL = b"ldp-loloha-seed-v1"
_MEMO_LABEL = b"ldp-loloha-memo-v1"


def prf_below(source: ByteSource, bound: int) -> int:
    """Uniform integer in [0, bound) from a byte source, as ``secrets.randbelow`` reads the OS: by rejection."""
    bits = bound.bit_length()
    nbytes = (bits + 7) // 8
    while True:
        r = int.from_bytes(source(nbytes), "big") >> (8 * nbytes - bits)
        if r < bound:
            return r


class LolohaEncoder:
    """A LOLOHA client: its pool function and per-bucket memos from its secret, fresh round 2 per report.

    Parameters
    ----------
    spec : LOLOHA
    state : ClientState
        The client's secret; persist it (``ClientState.open``) so the hash
        function and the memos stay the same across restarts.

    Examples
    --------
    >>> from ldp.client.loloha import LolohaEncoder
    >>> from ldp.client.state import ClientState
    >>> from ldp.specs.loloha import LOLOHA
    >>> spec = LOLOHA(domain=("a", "b", "c"), epsilon=1.0)
    >>> encoder = LolohaEncoder(spec, ClientState.new(spec))
    >>> encoder.permanent_bucket("a") == encoder.permanent_bucket("a")  # the memo
    True
    >>> report = encoder.encode("a")
    >>> report.seed == encoder.seed_index and 0 <= report.value < spec.g
    True
    """

    def __init__(self, spec: LOLOHA, state: ClientState):
        if state.spec != spec.fingerprint:
            raise ParameterError(f"client state is for spec {state.spec}, not {spec.fingerprint}")
        self.spec = spec
        self.state = state
        self._fingerprint = spec.fingerprint.encode("ascii")
        self._g = spec.g
        self.seed_index = prf_below(PRFStream(_SEED_LABEL, state.secret, self._fingerprint), spec.pool_size)
        self.hash_seed = int(spec.pool[self.seed_index])
        self._round_one = rr_thresholds(spec.p1, spec.q1)
        self._round_two = rr_thresholds(spec.p2, spec.q2)

    def bucket(self, value: Any) -> int:
        """The bucket of ``value`` under the client's hash function."""
        return lh_bucket(self.hash_seed, self.spec.index_of(value), self._g)

    def memo_key(self, value: Any) -> bytes:
        """The memo (and ledger stream) key of ``value``: its bucket, in decimal ASCII."""
        return str(self.bucket(value)).encode("ascii")

    def permanent_bucket(self, value: Any) -> int:
        """Round 1: the memoized randomized response of ``value``'s bucket (from the PRF, never re-drawn)."""
        bucket = self.bucket(value)
        stream = PRFStream(_MEMO_LABEL, self.state.secret, self._fingerprint, str(bucket).encode("ascii"))
        den, keep, other = self._round_one
        r = prf_below(stream, den)
        if r < keep:
            return bucket
        o = (r - keep) // other
        return o + (o >= bucket)

    def encode(self, value: Any) -> Report:
        reported = randomized_response_index(self.permanent_bucket(value), *self._round_two)
        return Report.of_encoder(self.spec.fingerprint, seed=self.seed_index, value=reported)


def loloha_encoder(spec: LOLOHA, state: ClientState | str | os.PathLike[str] | None = None) -> LolohaEncoder:
    """LOLOHA's encoder: the client's persistent state (opened or created at a path), or a fresh one in memory."""
    if state is None:
        state = ClientState.new(spec)
    elif not isinstance(state, ClientState):
        state = ClientState.open(state, spec)
    return LolohaEncoder(spec, state)


def loloha_batch(spec: LOLOHA, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """One report of each of many new users: pool index, bucket, round 1 and round 2, vectorized and exact.

    Each value is a different user reporting once, so its memo is drawn
    here from ``rng`` (the same distribution as a new client's PRF memo).
    Persistent clients report through :class:`LolohaEncoder`, or
    :func:`loloha_round_two_batch` on their memos.
    """
    source = as_source(rng)
    idx = value_indices(spec, values, indices)
    seeds = uniforms(sampler_for(source, idx.size), spec.pool_size, idx.size).astype(np.int64, copy=False)
    buckets = lh_buckets(spec.pool[seeds], idx, spec.g).astype(np.int64)
    memo = randomized_response_batch(source, buckets, spec.g, spec.p1, spec.q1)
    return loloha_round_two_batch(spec, seeds, memo, source)


def loloha_round_two_batch(
    spec: LOLOHA, seeds: np.ndarray, permanent: np.ndarray, rng: RandomSource | np.random.Generator
) -> ReportBatch:
    """Reports of clients whose pool indices and memoized buckets are known: round 2 only.

    Parameters
    ----------
    seeds : (n,) int
        Each client's pool index.
    permanent : (n,) int
        Each client's memo of the bucket it reports (:meth:`LolohaEncoder.permanent_bucket`).
    rng : RandomSource or numpy.random.Generator
        The round-2 coins (the OS CSPRNG for real clients).
    """
    memo = np.asarray(permanent, dtype=np.int64)
    reported = randomized_response_batch(as_source(rng), memo, spec.g, spec.p2, spec.q2)
    return ReportBatch(spec=spec.fingerprint, seeds=np.asarray(seeds, dtype=np.int64), values=reported)
