"""The 1BitMean client: a fresh bit per report, or memoized bits of α-point-rounded grid points (CSPRNG, exact coins).

Plain (``rounding="none"``): the position u = (x − low)/(high − low) is
rounded to 0 or 1 by an unbiased coin (probability ⌊f·2^53⌋/2^53 for the
fractional part f, as the two-point numeric encoders do) and that side is kept with the spec's exact
p (an exact coin of p), else flipped: P[b = 1] = (1 − p) + u(2p − 1).

Alpha (``rounding="alpha"``), every piece derived from the client's secret
(:class:`~ldp.client.state.ClientState`, kept like RAPPOR's) by a keyed PRF
(:class:`~ldp.client.sampling.PRFStream`, SHAKE-256), so nothing but the
secret is stored and nothing is ever re-drawn:

- α: the first 4 bytes (big-endian) of
  PRF(``ldp-1bitmean-alpha-v1``, secret, fingerprint), an index on [0, 2^32);
- the grid point of a value: :func:`ldp.specs.onebitmean.alpha_point`;
- the memoized bit of grid point g: one exact coin of probability
  (1 − p) + (g/s)(2p − 1) read from PRF(``ldp-1bitmean-memo-v1``, secret,
  fingerprint, ASCII decimal g) (:func:`~ldp.client.sampling.sample_lanes`);
- the report: that bit, flipped by an exact coin of γ (a fresh
  CSPRNG coin; none is drawn when γ = 0).

:func:`onebitmean_batch` encodes many values, each a fresh client (its own
α and memo bits, drawn from the batch's random source), with the same
marginal distribution: the vectorized path for one-shot users and
simulations.

References
----------
.. [1] B. Ding, J. Kulkarni, S. Yekhanin. "Collecting telemetry data
   privately". NeurIPS 2017.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ldp.client.numeric import ROUND_BITS, random_round, side_numerators
from ldp.client.report_bits import coin
from ldp.client.sampling import PRFStream, sample_lanes
from ldp.client.state import ClientState
from ldp.errors import InputError, ParameterError, SpecError
from ldp.report import Report
from ldp.specs.numeric import check_numeric_value
from ldp.specs.onebitmean import ALPHA_BITS, OneBitMean, alpha_point, alpha_points

if TYPE_CHECKING:
    import numpy as np

    from ldp.batch import ReportBatch

__all__ = ["ALPHA_LABEL", "MEMO_LABEL", "OneBitMeanEncoder", "onebitmean_batch", "onebitmean_encoder"]

#: PRF label of a client's α.
ALPHA_LABEL = b"ldp-1bitmean-alpha-v1"
#: PRF label of the memoized bit of a grid point.
MEMO_LABEL = b"ldp-1bitmean-memo-v1"

_INF = float("inf")


class OneBitMeanEncoder:
    """Randomize one number with :class:`~ldp.specs.onebitmean.OneBitMean` (plain, or memoized per grid point).

    Parameters
    ----------
    spec : OneBitMean
    state : ClientState, optional
        ``rounding="alpha"``: the client's secret (persist it with
        ``ClientState.open`` so α and the memoized bits stay the same);
        a fresh one in memory when omitted (a one-shot client). Not used
        in plain mode.

    Examples
    --------
    >>> from ldp.client.onebitmean import OneBitMeanEncoder
    >>> from ldp.client.state import ClientState
    >>> from ldp.specs.onebitmean import OneBitMean
    >>> spec = OneBitMean(epsilon=1.0, low=0, high=100, rounding="alpha")
    >>> encoder = OneBitMeanEncoder(spec, ClientState.new(spec))
    >>> encoder.encode(42.0).value == encoder.encode(42.0).value  # γ = 0: the memoized bit, every day
    True
    >>> encoder.memo_key(42.0) in (b"6", b"7")  # 42 is 6.72 steps of 100/16: rounded by the client's α
    True
    """

    def __init__(self, spec: OneBitMean, state: ClientState | None = None):
        if not isinstance(spec, OneBitMean):
            raise SpecError(f"OneBitMeanEncoder needs a onebitmean spec, got {type(spec).__name__}")
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._low = spec.low
        self._span = spec.high - spec.low
        self._p = spec.p
        self._memoized = spec.memoized
        self.state: ClientState | None = None
        if not self._memoized:
            return
        if state is None:
            state = ClientState.new(spec)
        if state.spec != spec.fingerprint:
            raise ParameterError(f"client state is for spec {state.spec}, not {spec.fingerprint}")
        self.state = state
        self._key = spec.fingerprint.encode("ascii")
        self._grid = int(spec.grid)
        self._alpha = int.from_bytes(PRFStream(ALPHA_LABEL, state.secret, self._key)(ALPHA_BITS // 8), "big")
        self._flip = spec.gamma
        self._bits: dict[int, int] = {}

    def _unit(self, value: Any) -> float:
        if value.__class__ is float:
            x = value
            if x != x or x in (_INF, -_INF):
                raise InputError(f"numeric value must be finite, got {value!r}")
        else:
            x = check_numeric_value(value)
        u = (x - self._low) / self._span
        return 0.0 if u < 0.0 else 1.0 if u > 1.0 else u

    def grid_point(self, value: Any) -> int:
        """The α-rounded grid point (0..s) of ``value`` for this client (``rounding="alpha"``)."""
        if not self._memoized:
            raise SpecError("onebitmean without rounding='alpha' has no grid points")
        return alpha_point(self._unit(value), self._grid, self._alpha)

    def memo_key(self, value: Any) -> bytes:
        """The memo key of ``value``: its grid point in ASCII decimal (what the ledger names a stream by)."""
        return str(self.grid_point(value)).encode("ascii")

    def memo_bit(self, point: int) -> int:
        """The memoized bit of grid point ``point``: a keyed PRF of (secret, spec, point), never re-drawn."""
        bit = self._bits.get(point)
        if bit is None:
            assert self.state is not None
            stream = PRFStream(MEMO_LABEL, self.state.secret, self._key, str(point).encode("ascii"))
            bit = self._bits[point] = sample_lanes(1, [(1, self.spec.memo_probability(point))], stream)
        return bit

    def sample_bit(self, value: Any) -> int:
        """The reported bit for ``value``."""
        u = self._unit(value)
        if not self._memoized:
            side = random_round(u)
            return side if coin(self._p) else 1 - side
        bit = self.memo_bit(alpha_point(u, self._grid, self._alpha))
        flip = self._flip
        if flip and coin(flip):
            bit ^= 1
        return bit

    def encode(self, value: Any) -> Report:
        """Randomize ``value`` (clipped to [low, high]) into a report (its value is the bit, 0.0 or 1.0)."""
        return Report.of_encoder(self._fingerprint, value=float(self.sample_bit(value)))


def onebitmean_encoder(
    spec: OneBitMean, state: ClientState | str | os.PathLike[str] | None = None
) -> OneBitMeanEncoder:
    """The encoder factory: with ``rounding="alpha"`` the client's state (opened or created at a path) or a fresh one."""
    if spec.memoized and state is not None and not isinstance(state, ClientState):
        state = ClientState.open(state, spec)
    return OneBitMeanEncoder(spec, state if isinstance(state, ClientState) else None)


def onebitmean_batch(
    spec: OneBitMean, values: Sequence[Any] | np.ndarray, rng, *, cohorts=None, indices: bool = False
) -> ReportBatch:
    """Vectorized encoding, each value a fresh client, every coin from ``rng`` (exact rational coins).

    Plain: the 53-bit rounding coin and the keep coin of :class:`OneBitMeanEncoder`.
    Alpha: per value a uniform α index on [0, 2^32), its grid point g, the
    memoized bit as side (a coin of g/s) kept with p, then the γ flip: the
    same distribution as a fresh :class:`OneBitMeanEncoder`. ``rng`` is a
    :class:`~ldp.client.randomness.RandomSource` (the OS CSPRNG for real
    users) or a seeded NumPy generator (INSECURE: simulations). ``cohorts``
    and ``indices`` do not apply to numbers.
    """
    import numpy as np

    from ldp.batch import ReportBatch
    from ldp.client.bits import agreeing_coins, coins, sampler_for, uniforms

    if not isinstance(spec, OneBitMean):
        raise SpecError(f"onebitmean_batch needs a onebitmean spec, got {type(spec).__name__}")
    spec.to_native(values)  # refuses what the single encoder refuses (text, booleans, NaN)
    x = np.asarray(values, dtype=np.float64)
    u = np.clip((x - spec.low) / (spec.high - spec.low), 0.0, 1.0)  # the single encoder's u, bit for bit
    n = u.size
    sampler = sampler_for(rng, n)  # bits in a large secure batch, else the source's words
    if spec.memoized:
        steps = int(spec.grid)
        point = alpha_points(u, steps, uniforms(sampler, 1 << ALPHA_BITS, n))
        side = uniforms(sampler, steps, n) < point
        bit = side == coins(sampler, Fraction(spec.p), n)
    else:  # the side (1 w.p. u: u = 1 is 2^53/2^53) kept with p, one coin on bits (agreeing_coins)
        bit = agreeing_coins(sampler, side_numerators(u), ROUND_BITS, Fraction(spec.p))
    if spec.gamma:
        bit ^= coins(sampler, Fraction(spec.gamma), n)
    return ReportBatch(spec=spec.fingerprint, values=bit.astype(np.float64))
