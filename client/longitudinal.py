"""Clients of the longitudinal chains L-GRR, L-OSUE, L-OUE, L-SUE (docs/longitudinal/chains.md).

Round 1 (the memo) is derived, never stored: its coins are the bytes of a
keyed PRF of (client secret, spec fingerprint, the value's memo key),
``PRFStream(b"ldp-<mechanism>-memo-v1", secret, fingerprint, memo_key)``,
fed to the same exact samplers as fresh coins. So a value's memo is the same
in every report and after every restart, the client state is RAPPOR's
(:class:`~ldp.client.state.ClientState`: a 32-byte secret in a file created
exclusively, mode 0600, never re-drawn), and nothing grows with the number of
values. Round 2 draws every coin from the OS CSPRNG.

The batch encoder treats every value as a new client reporting once, so the
two rounds collapse into one exact draw with the composite probabilities
(A, B) of :func:`ldp.chain_math.chain_support`: randomized response with keep
A (L-GRR), or each bit 1 with A where the value's bit is set and B elsewhere
(the unary chains), the same distribution as the two rounds in sequence.

References
----------
.. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. "Improving the
   utility of locally differentially private protocols for longitudinal and
   multidimensional frequency estimates". Digital Communications and
   Networks, 2022 (arXiv:2111.04636).
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014 (the
   keyed memo, the fresh second round).
"""

from __future__ import annotations

import os
from typing import Any

from ldp.batch import ReportBatch
from ldp.client.batch import one_hot_bits, randomized_response_batch, value_indices
from ldp.client.encoders import Encoder, randomized_response_index, rr_thresholds
from ldp.client.randomness import as_source
from ldp.client.report_bits import LaneSampler
from ldp.client.sampling import (
    ByteSource,
    PRFStream,
    expansion,
    lanes_to_packed,
    sample_expanded,
)
from ldp.client.state import ClientState
from ldp.errors import ParameterError
from ldp.report import Report
from ldp.specs.longitudinal import LGRR, LongitudinalChain, UnaryChain

__all__ = [
    "ChainGRREncoder",
    "ChainUnaryEncoder",
    "chain_batch",
    "longitudinal_encoder",
    "memo_label",
    "randbelow_from",
]


def memo_label(mechanism: str) -> bytes:
    """The PRF label of a chain's memo: ``b"ldp-<mechanism>-memo-v1"``."""
    return f"ldp-{mechanism}-memo-v1".encode("ascii")


def randbelow_from(source: ByteSource, n: int) -> int:
    """A uniform integer in [0, n) from ``source``, by rejection, consuming bytes as ``secrets.randbelow``.

    Each try reads ⌈k/8⌉ bytes (k = n.bit_length()), keeps their top k bits
    big-endian and accepts them when below n: the byte use of Python's
    ``SystemRandom`` and of the TypeScript client's ``UniformBelow``, so a PRF
    stream gives the same integer in both.
    """
    if n <= 0:
        raise ParameterError(f"randbelow needs n > 0, got {n}")
    k = n.bit_length()
    nbytes = (k + 7) // 8
    shift = 8 * nbytes - k
    while True:
        r = int.from_bytes(source(nbytes), "big") >> shift
        if r < n:
            return r


def _open_state(spec: LongitudinalChain, state: ClientState | str | os.PathLike[str] | None) -> ClientState:
    if state is None:
        return ClientState.new(spec)
    if isinstance(state, ClientState):
        if state.spec != spec.fingerprint:
            raise ParameterError(f"client state is for spec {state.spec}, not {spec.fingerprint}")
        return state
    return ClientState.open(state, spec)


class _ChainEncoder:
    """What both chain encoders share: the spec, the client state and the memo's PRF stream."""

    def __init__(self, spec: LongitudinalChain, state: ClientState):
        if state.spec != spec.fingerprint:
            raise ParameterError(f"client state is for spec {state.spec}, not {spec.fingerprint}")
        self.spec = spec
        self.state = state
        self._label = memo_label(spec.mechanism)
        self._fingerprint = spec.fingerprint.encode("ascii")

    def memo_key(self, value: Any) -> bytes:
        """The value's memo key (:meth:`ldp.specs.longitudinal.LongitudinalChain.memo_key`)."""
        return self.spec.memo_key(value)

    def memo_stream(self, value: Any) -> PRFStream:
        """The keyed PRF stream whose bytes draw ``value``'s memo."""
        return PRFStream(self._label, self.state.secret, self._fingerprint, self.spec.memo_key(value))


class ChainGRREncoder(_ChainEncoder):
    """L-GRR: GRR(ε∞) memoized through the keyed PRF, then GRR (p₂) from the CSPRNG; see :class:`LGRR`.

    Parameters
    ----------
    spec : LGRR
    state : ClientState
        The client's secret; persist it (``ClientState.open``) so the memo
        survives restarts.

    Examples
    --------
    >>> from ldp.client.state import ClientState
    >>> from ldp.specs.longitudinal import LGRR
    >>> spec = LGRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> encoder = ChainGRREncoder(spec, ClientState.new(spec))
    >>> encoder.memo("a") == encoder.memo("a")  # the memoized first round
    True
    >>> encoder.encode("a").value in spec.domain
    True
    """

    def __init__(self, spec: LGRR, state: ClientState):
        super().__init__(spec, state)
        self._domain = spec.domain
        self._first = rr_thresholds(spec.p1, spec.q1)
        self._second = rr_thresholds(spec.p2, spec.q2)

    def memo(self, value: Any) -> int:
        """Round 1: the memoized domain index of ``value`` (randomized response at ε∞, from the PRF)."""
        index = self.spec.index_of(value)
        den, keep, other = self._first
        r = randbelow_from(self.memo_stream(value), den)
        if r < keep:
            return index
        out = (r - keep) // other
        return out + (out >= index)

    def encode(self, value: Any) -> Report:
        memo = self.memo(value)
        reported = randomized_response_index(memo, *self._second)
        return Report.of_encoder(self.spec.fingerprint, value=self._domain[reported])


class ChainUnaryEncoder(_ChainEncoder):
    """L-OSUE, L-OUE, L-SUE: each bit of the one-hot vector memoized (p₁, q₁), then each bit fresh (p₂, q₂).

    The memo's bits are drawn together by the exact lane sampler from the
    keyed PRF stream (as RAPPOR's PRR), the report's from the CSPRNG.

    Examples
    --------
    >>> from ldp.client.state import ClientState
    >>> from ldp.specs.longitudinal import LOSUE
    >>> spec = LOSUE(domain=("a", "b", "c"), epsilon=1.0)
    >>> encoder = ChainUnaryEncoder(spec, ClientState.new(spec))
    >>> encoder.memo("b") == encoder.memo("b")
    True
    >>> len(encoder.encode("b").bits)  # 3 bits in one byte
    1
    """

    def __init__(self, spec: UnaryChain, state: ClientState):
        super().__init__(spec, state)
        self._width = spec.domain_size
        self._full = (1 << self._width) - 1
        self._p1, self._q1 = expansion(spec.p1), expansion(spec.q1)
        self._round2 = LaneSampler((spec.p2, spec.q2))

    def memo(self, value: Any) -> int:
        """Round 1: the memoized bits of ``value`` as lanes (bit i = domain value i), from the PRF."""
        one_hot = 1 << self.spec.index_of(value)
        groups = ((one_hot, *self._p1), (self._full ^ one_hot, *self._q1))
        return sample_expanded(self._width, groups, self.memo_stream(value))

    def encode(self, value: Any) -> Report:
        memo = self.memo(value)
        lanes = self._round2.sample(self._width, (memo, self._full ^ memo))
        return Report.of_encoder(self.spec.fingerprint, bits=lanes_to_packed(lanes, self._width))


def longitudinal_encoder(
    spec: LongitudinalChain, state: ClientState | str | os.PathLike[str] | None = None
) -> Encoder:
    """A chain's encoder: the client's persistent state (opened or created at a path), or a fresh one in memory.

    A fresh state (``state=None``) is a one-shot client: its memo lives as
    long as the encoder. A client reporting over time keeps its state file.
    """
    opened = _open_state(spec, state)
    if isinstance(spec, LGRR):
        return ChainGRREncoder(spec, opened)
    if isinstance(spec, UnaryChain):
        return ChainUnaryEncoder(spec, opened)
    raise ParameterError(f"{spec.mechanism} is not a longitudinal chain")


def chain_batch(spec: LongitudinalChain, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """Reports of ``values``, one new client each, with the coins of ``rng`` (one exact draw per report).

    ``rng``: a :class:`~ldp.client.randomness.SystemRandomSource` (the OS
    CSPRNG) or a seeded generator (simulations only, not secure).
    """
    source = as_source(rng)
    idx = value_indices(spec, values, indices)
    a, b = spec.support
    k = spec.domain_size
    if isinstance(spec, LGRR):
        return ReportBatch(spec=spec.fingerprint, values=randomized_response_batch(source, idx, k, a, b))
    return ReportBatch(spec=spec.fingerprint, bits=one_hot_bits(source, idx, k, a, b))
