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

import weakref
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ldp.client.encoders import stateless_factory
from ldp.client.report_bits import KnuthYao, coin_ratio, draw
from ldp.errors import InputError, SpecError
from ldp.numeric_math import band_inverse_cdf
from ldp.report import Report
from ldp.specs.numeric import Hybrid, NumericSpec, _Gridded, _TwoPoint, check_numeric_value

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ROUND_BITS",
    "NumericEncoder",
    "encode_numeric_batch",
    "numeric_encoder",
    "random_round",
    "side_numerators",
]

#: A rounding coin's probability is ⌊frac·2^ROUND_BITS⌋ / 2^ROUND_BITS (the single and the batch encoders alike).
ROUND_BITS = 53
_ROUND_SCALE = float(1 << ROUND_BITS)


def random_round(pos: float) -> int:
    """Unbiased random rounding of pos ≥ 0 to an integer: up with probability ⌊frac(pos)·2^53⌋ / 2^53 (CSPRNG coin)."""
    i = int(pos)
    frac = pos - i
    if frac and coin_ratio(int(frac * _ROUND_SCALE), 1 << ROUND_BITS):
        i += 1
    return i


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
            # the coins' probabilities as coin_ratio's two integers: coin(p)'s walk, no Fraction read a report
            p = Fraction(spec.p)
            self._p = (p.numerator, p.denominator)
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
            duchi = spec.duchi
            alpha, duchi_p = Fraction(spec.alpha), Fraction(duchi.p)
            self._alpha = (alpha.numerator, alpha.denominator)
            self._duchi_p = (duchi_p.numerator, duchi_p.denominator)
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

    def sample_native(self, value: Any) -> float:
        """The report value (native output) for ``value``."""
        u = self._unit(value)
        if self._two_point:
            side = random_round(u)  # 0 → t = −1, 1 → t = +1
            keep = coin_ratio(*self._p)
            return self._out[side if keep else 1 - side]
        i = random_round(u * self._K)
        if self._hybrid and not coin_ratio(*self._alpha):  # Duchi part, input t_i
            side = 1 if coin_ratio(i, self._K) else 0
            keep = coin_ratio(*self._duchi_p)
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
        return Report.of_encoder(self._fingerprint, value=self.sample_native(value))


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
    from ldp.client.bits import BitSource, coins, sampler_for, uniforms
    from ldp.client.inversion import invert

    t = spec.to_native(values)
    u = (t + 1.0) / 2.0
    n = u.size
    sampler = sampler_for(rng, n)  # bits in a large secure batch, else the source's words
    if isinstance(spec, _TwoPoint):  # the side: 1 w.p. u (u ∈ [0, 1]: u = 1 is 2^53/2^53)
        side = side_numerators(u)
        return ReportBatch(spec=spec.fingerprint, values=_two_point_batch(spec, side, ROUND_BITS, sampler))
    table = _gridded(spec).table
    K = table.K
    i = _round_batch(sampler, u * K)
    np.minimum(i, K, out=i)
    if table.kind == "shift":
        if isinstance(sampler, BitSource):  # the noise cell by lazy inversion: about its entropy + 3 bits
            z = invert(sampler, _noise_bounds(table), np.zeros(n, dtype=np.int64), 4)
        else:
            z = np.searchsorted(table.cumulative, uniforms(sampler, table.total, n), side="right")
        j = i + z - table.M + (table.M - K)
        np.clip(j, 0, table.outputs.size - 1, out=j)
        out = table.outputs[j]
    elif isinstance(spec, Hybrid):  # PM with probability α, else the Duchi part: each row draws only its part
        use_pm = coins(sampler, spec.alpha, n)
        pm, rest = np.flatnonzero(use_pm), np.flatnonzero(~use_pm)
        out = np.empty(n, dtype=np.float64)
        out[pm] = table.outputs[_band_cells(sampler, table, i[pm])]
        if K & (K - 1) == 0:  # the Duchi part's input t_i: side 1 w.p. i/K, dyadic
            side, exponent = i[rest].astype(np.uint64), K.bit_length() - 1
        else:
            side, exponent = (uniforms(sampler, K, rest.size) < i[rest]).astype(np.uint64), 0
        out[rest] = _two_point_batch(spec.duchi, side, exponent, sampler)
    else:
        out = table.outputs[_band_cells(sampler, table, i)]
    return ReportBatch(spec=spec.fingerprint, values=np.ascontiguousarray(out, dtype=np.float64))


def _band_cells(sampler, table, i):
    """The output cell of PM band row ``i[k]`` for each k (exact): weight b on [0, i), a on [i, i + m), b after.

    From a :class:`~ldp.client.bits.BitSource`: the band or not by one exact
    coin of probability m·a/total (lazy inversion, about 2 bits), then a
    uniform cell of the band (i + a uniform below m) or of the K cells
    outside it (a uniform c below K: cell c left of the band, c + m right of
    it): about the row's entropy + 3 bits, where a uniform below the total
    read log2(total) (40 bits at ε = 1). From a random source: one uniform
    below the total, through the inverse CDF.
    """
    import numpy as np

    from ldp.client.bits import BitSource, uniforms
    from ldp.client.inversion import coin_bounds, invert

    a, b, m = table.row_band
    K, n = table.K, i.size
    if not isinstance(sampler, BitSource) or K * b + m * a != table.total:
        return band_inverse_cdf(i, uniforms(sampler, table.total, n), a, b, m)
    in_band = invert(sampler, coin_bounds(Fraction(m * a, table.total)), np.zeros(n, dtype=np.int64), 2) == 0
    cells = np.empty(n, dtype=np.int64)
    inside, outside = np.flatnonzero(in_band), np.flatnonzero(~in_band)
    cells[inside] = i[inside] + uniforms(sampler, m, inside.size)
    c = uniforms(sampler, K, outside.size)
    cells[outside] = np.where(c < i[outside], c, c + m)
    return cells


def _noise_bounds(table):
    """A shift table's noise cells as one exact distribution (:func:`~ldp.client.inversion.cumulative_bounds`)."""
    from ldp.client.inversion import cumulative_bounds

    cached = _NOISE_BOUNDS.get(table)
    if cached is None:
        cached = _NOISE_BOUNDS[table] = cumulative_bounds(table.cumulative.tolist())
    return cached


#: The noise bounds of each shift table, built on the first secure batch that draws from it.
_NOISE_BOUNDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def side_numerators(u):
    """P[side 1]·2^53 of each u in [0, 1] (uint64): u's unbiased rounding to 0 or 1, as the single encoder draws it.

    ⌊u⌋·2^53 + ⌊frac(u)·2^53⌋: u = 1 gives 2^53, a certain side 1.
    """
    import numpy as np

    whole = np.floor(u)
    return (whole.astype(np.uint64) << np.uint64(ROUND_BITS)) + ((u - whole) * _ROUND_SCALE).astype(np.uint64)


def _round_batch(sampler, pos):
    """Unbiased random rounding of each pos ≥ 0 to an integer, as :func:`random_round` (53-bit coin)."""
    import numpy as np

    from ldp.client.bits import dyadic_coins

    i = np.floor(pos).astype(np.int64)
    threshold = ((pos - i) * _ROUND_SCALE).astype(np.uint64)  # int(frac · 2^53), as the single encoder
    i += dyadic_coins(sampler, threshold, ROUND_BITS)
    return i


def _two_point_batch(spec, side, exponent, sampler):
    """Two-point outputs: the side (1 → high w.p. ``side``/2^exponent) kept with the spec's exact p, else flipped.

    The side and keep coins are drawn as one where the sampler reads bits
    (:func:`~ldp.client.bits.agreeing_coins`: high w.p. f·p + (1 − f)(1 − p)).
    """
    import numpy as np

    from ldp.client.bits import agreeing_coins

    high = agreeing_coins(sampler, side, exponent, spec.p)
    low_v, high_v = spec.support
    return np.where(high, high_v, low_v)
