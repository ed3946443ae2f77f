"""Client encoders of the numeric mechanisms (CSPRNG, exact grid sampling).

Values outside the spec's ``[low, high]`` are **clipped** to the nearest end
before randomization (so a clipped value is reported as ``low`` or
``high``); NaN, infinities and non-numbers raise
:class:`~ldp.errors.InputError` (a :class:`~ldp.errors.ParameterError`).

Every coin comes from the operating system's CSPRNG, read bit by bit by
Knuth–Yao walks (:mod:`ldp.client.report_bits`):

1. the position u·grid of the value on the input grid is rounded to one of
   its two neighbours by an unbiased coin (probability ⌊f·2^53⌋/2^53 for the
   fractional part f; an error of at most 2^-53 in that coin affects
   accuracy, never privacy, because every grid input is private);
2. the output is drawn from the spec's integer weight table (one walk over
   the row's cells, grouped by weight), or, for the two-point mechanisms,
   one exact coin of probability p.

No floating-point Laplace or uniform-interval sampling is done: the set of
possible reports is the spec's fixed finite ``support`` whatever the input.
:func:`encode_numeric_batch` is the vectorized path with the same tables and
coins, from the OS CSPRNG (:class:`~ldp.client.randomness.SystemRandomSource`)
or from a seeded NumPy generator (*insecure*: simulations).

References
----------
.. [1] I. Mironov. "On significance of the least significant bits for
   differential privacy". ACM CCS 2012.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ldp.client.encoders import stateless_factory
from ldp.client.report_bits import KnuthYao, coin, coin_ratio, draw
from ldp.errors import InputError, SpecError
from ldp.numeric_math import band_inverse_cdf
from ldp.report import Report
from ldp.specs.numeric import Hybrid, NumericSpec, _Gridded, _TwoPoint, check_numeric_value

if TYPE_CHECKING:
    import numpy as np

__all__ = ["NumericEncoder", "encode_numeric_batch", "numeric_encoder"]

_ROUND_BITS = 53
_ROUND_SCALE = float(1 << _ROUND_BITS)
_INF = float("inf")


def _gridded(spec: NumericSpec) -> _Gridded:
    """``spec`` as a gridded spec: every numeric spec that is not two-point samples from a table."""
    if not isinstance(spec, _Gridded):
        raise SpecError(f"{spec.mechanism} is neither a two-point nor a gridded numeric spec")
    return spec


class NumericEncoder:
    """Randomize one number with a numeric spec (Duchi, SR, PM, HM, Laplace, Gaussian).

    Parameters
    ----------
    spec : NumericSpec
        Values outside ``[spec.low, spec.high]`` are clipped to the range.
    """

    def __init__(self, spec: NumericSpec):
        if not isinstance(spec, NumericSpec):
            raise SpecError(f"NumericEncoder needs a numeric spec, got {type(spec).__name__}")
        self.spec = spec
        self._fingerprint = spec.fingerprint
        self._low = spec.low
        self._span = spec.high - spec.low
        self._two_point = isinstance(spec, _TwoPoint)
        if isinstance(spec, _TwoPoint):
            p = spec.p
            self._p = p
            out = spec.support.tolist()
            self._out = (out[0], out[1])  # (−C′, +C′) or (0, 1)
            return
        table = _gridded(spec).table
        self._K = table.K
        self._total = table.total
        self._outputs = table.outputs.tolist()
        self._shift = table.kind == "shift"
        if self._shift:
            zcum = table.cumulative.tolist()
            self._cells = KnuthYao.from_weights(
                [high - low for low, high in zip([0, *zcum[:-1]], zcum)], self._total
            )
            self._M = table.M
            self._B = table.M - table.K
            self._last = len(self._outputs) - 1
        else:
            self._band = table.row_band
            self._rows: dict[int, KnuthYao] = {}
        self._hybrid = isinstance(spec, Hybrid)
        if isinstance(spec, Hybrid):
            self._alpha = spec.alpha
            duchi = spec.duchi
            self._duchi_p = duchi.p
            self._d_out = tuple(duchi.support.tolist())

    def _unit(self, value: Any) -> float:
        if value.__class__ is float:
            x = value
            if x != x or x in (_INF, -_INF):
                raise InputError(f"numeric value must be finite, got {value!r}")
        else:
            x = check_numeric_value(value)
        u = (x - self._low) / self._span
        return 0.0 if u < 0.0 else 1.0 if u > 1.0 else u

    @staticmethod
    def _round(pos: float) -> int:
        """Unbiased random rounding of pos ≥ 0 to an integer (CSPRNG coin)."""
        i = int(pos)
        frac = pos - i
        if frac and coin_ratio(int(frac * _ROUND_SCALE), 1 << _ROUND_BITS):
            i += 1
        return i

    def sample_native(self, value: Any) -> float:
        """The report value (native output) for ``value``."""
        u = self._unit(value)
        if self._two_point:
            side = self._round(u)  # 0 → t = −1, 1 → t = +1
            keep = coin(self._p)
            return self._out[side if keep else 1 - side]
        i = self._round(u * self._K)
        if self._hybrid and not coin(self._alpha):  # Duchi part, input t_i
            side = 1 if coin_ratio(i, self._K) else 0
            keep = coin(self._duchi_p)
            return self._d_out[side if keep else 1 - side]
        if self._shift:
            cell, _ = draw(self._cells)
            j = i + cell - self._M + self._B
            j = 0 if j < 0 else self._last if j > self._last else j
            return self._outputs[j]
        row = self._rows.get(i)
        if row is None:
            row = self._rows[i] = self._band_row(i)
        group, member = draw(row)
        return self._outputs[
            member if group == 0 else i + member if group == 1 else i + self._band[2] + member
        ]

    def _band_row(self, i: int) -> KnuthYao:
        """Row i of a band table as a walk: cells [0, i) of weight b, [i, i + m) of a, [i + m, K + m) of b."""
        a, b, m = self._band
        total = self._total
        return KnuthYao([(i, Fraction(b, total)), (m, Fraction(a, total)), (self._K - i, Fraction(b, total))])

    def encode(self, value: Any) -> Report:
        """Randomize ``value`` (clipped to [low, high]) into a report."""
        return Report(spec=self._fingerprint, value=self.sample_native(value))


#: The encoder factory of the numeric mechanisms (declared in :mod:`ldp.registry`).
numeric_encoder = stateless_factory(NumericEncoder)


def encode_numeric_batch(
    spec: NumericSpec, values: Sequence[Any] | np.ndarray, rng, *, cohorts=None, indices: bool = False
):
    """Vectorized numeric encoding: the tables of :class:`NumericEncoder`, coins from ``rng``.

    ``rng`` is a :class:`~ldp.client.randomness.RandomSource`
    (:class:`~ldp.client.randomness.SystemRandomSource` for real users) or a
    seeded NumPy generator (INSECURE: simulations only). The coins are those
    of the single encoder, exact on the integer tables: the input rounding
    compares a 53-bit uniform integer with the fractional part scaled by
    2^53, the output is an exact uniform integer below the table's total
    (rejection sampling) through the inverse CDF, and the two-point and
    hybrid coins are exact rational coins. ``cohorts`` and ``indices``
    belong to the batch-encoder interface (:mod:`ldp.plugins`) and do not
    apply to numbers.

    Returns
    -------
    ReportBatch
        ``values`` holds the native report values (float64).
    """
    import numpy as np

    from ldp.batch import ReportBatch
    from ldp.client.randomness import as_source, bernoulli

    source = as_source(rng)
    t = spec.to_native(values)
    u = (t + 1.0) / 2.0
    n = u.size
    if isinstance(spec, _TwoPoint):
        out = _two_point_batch(spec, _round_batch(source, u), source)
        return ReportBatch(spec=spec.fingerprint, values=out)
    table = _gridded(spec).table
    K = table.K
    i = _round_batch(source, u * K)
    np.minimum(i, K, out=i)
    r = source.integers(table.total, n)
    if table.kind == "shift":
        z = np.searchsorted(table.cumulative, r, side="right")
        j = i + z - table.M + (table.M - K)
        np.clip(j, 0, table.outputs.size - 1, out=j)
        out = table.outputs[j]
    else:
        a, b, m = table.row_band
        out = table.outputs[band_inverse_cdf(i, r, a, b, m)]
        if isinstance(spec, Hybrid):
            use_pm = bernoulli(source, spec.alpha, n)
            side = source.integers(K, n) < i  # the Duchi part's input t_i: side 1 w.p. i/K
            duchi = _two_point_batch(spec.duchi, side.astype(np.int64), source)
            out = np.where(use_pm, out, duchi)
    return ReportBatch(spec=spec.fingerprint, values=np.ascontiguousarray(out, dtype=np.float64))


def _round_batch(source, pos):
    """Unbiased random rounding of each pos ≥ 0 to an integer, as :meth:`NumericEncoder._round` (53-bit coin)."""
    import numpy as np

    i = np.floor(pos).astype(np.int64)
    threshold = ((pos - i) * _ROUND_SCALE).astype(np.uint64)  # int(frac · 2^53), as the single encoder
    i += (source.words(i.size) >> np.uint64(64 - _ROUND_BITS)) < threshold
    return i


def _two_point_batch(spec, side, source):
    """Two-point outputs: keep ``side`` (0 → low, 1 → high) with the spec's exact p, else flip it."""
    import numpy as np

    from ldp.client.randomness import bernoulli

    keep = bernoulli(source, spec.p, side.size)
    high = (side == 1) == keep
    low_v, high_v = spec.support
    return np.where(high, high_v, low_v)
