"""Numeric (mean estimation) specs: Laplace, Duchi, Piecewise, Hybrid, StochasticRounding, Gaussian.

Every numeric spec declares the value range ``[low, high]`` of the users'
numbers. The client clips a value outside the range to the nearest end and
maps it to the native range t ∈ [−1, 1] (t = 2(x − low)/(high − low) − 1);
a NaN or non-number is an error. Reports carry the mechanism's *native*
output (on the [−1, 1] scale; the bit b for stochastic rounding), and the
aggregator maps the mean back to ``[low, high]`` units.

Privacy is exact (docs/mechanisms.md#exact-sampling). The two-point mechanisms (Duchi,
stochastic rounding) use one exact rational coin. The continuous ones are
run on a grid of ``grid + 1`` inputs (``grid`` is the resolution declared in
the spec): the input is rounded to a neighbouring grid point by an unbiased
coin, and the output is drawn from a finite table of integer weights
(:mod:`ldp.numeric_math`): a discrete Laplace or discrete Gaussian clamped to
a finite range, or a grid version of PM (and HM, a coin between grid PM and
Duchi). The ε the integer table achieves (``epsilon_achieved``, or for the
Gaussian ``delta_achieved`` at ``epsilon``) is computed from the table and
never exceeds the claim.

References
----------
.. [1] I. Mironov. "On significance of the least significant bits for
   differential privacy". ACM CCS 2012.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ldp import numeric_math as nm
from ldp.errors import InputError, SpecError
from ldp.exact import floor_fraction, ratio_within
from ldp.report_schema import Number, ReportSchema
from ldp.shorten import VALUE_ECHO_LIMIT, shown
from ldp.specs.base import ExactPrivacySpec, MechanismView
from ldp.specs.frequency import calibrate_keep_probability
from ldp.specs.limits import (
    MAX_NUMERIC_OUTPUTS,
    PM_MAX_EPSILON,
    REPORT_HEADROOM,
    REPRESENTABLE_MAX_EPSILON,
    RR64_MAX_EPSILON,
    SMALLEST_NORMAL,
    round_down,
    round_up,
)
from ldp.specs.pairs import PrivacyPiece, piece
from ldp.specs.validation import ProbabilityInput, check_epsilon, check_int, check_probability

__all__ = [
    "NUMERIC_MECHANISMS",
    "Duchi",
    "Gaussian",
    "Hybrid",
    "Laplace",
    "NumericSpec",
    "Piecewise",
    "StochasticRounding",
    "best_numeric_mechanism",
    "check_numeric_value",
    "numeric_spec",
    "numeric_variance_table",
    "parse_numeric_text",
]

#: Largest input grid (tables are (grid+1) × ~2·grid integers for PM/HM).
MAX_GRID = 1024
DEFAULT_GRID = 256


def _check_bound(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{name} must be a finite number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise SpecError(f"{name} must be a finite number, got {value!r}")
    return out


def check_numeric_value(value: Any) -> float:
    """A user's number as a finite float.

    NaN, infinities, booleans and what is not a number raise
    :class:`InputError`: text too (``'12'``), which a caller that reads
    values from a file parses first (:func:`parse_numeric_text`).

    Examples
    --------
    >>> check_numeric_value(12)
    12.0
    >>> check_numeric_value("12")
    Traceback (most recent call last):
    ...
    ldp.errors.InputError: numeric value must be a number, got the str '12' (parse text first, e.g. float(text))
    """
    if isinstance(value, (str, bytes, bytearray)):
        raise InputError(
            f"numeric value must be a number, got the {type(value).__name__} {shown(value, VALUE_ECHO_LIMIT)} "
            "(parse text first, e.g. float(text))"
        )
    if isinstance(value, (bool, np.bool_)):
        raise InputError(f"numeric value must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(
            f"numeric value must be a finite number, got {shown(value, VALUE_ECHO_LIMIT)}"
        ) from None
    if not math.isfinite(out):
        raise InputError(f"numeric value must be finite, got {value!r}")
    return out


def _check_numbers(given: np.ndarray, values: Any) -> None:
    """Refuse text and booleans among batch ``values`` (``given`` is their array), as :func:`check_numeric_value` does.

    An array of text, booleans or objects is looked at item by item, in the
    values as given (numpy turns the numbers of a list that holds text into
    text too), and so is a list numpy turned into numbers: it turns ``True``
    among floats into 1.0 and ``None`` into NaN, which would hide them.
    """
    converted = not isinstance(values, np.ndarray) and given.ndim == 1 and given.dtype.kind in "iuf"
    if converted and not ({bool, np.bool_, type(None)} & set(map(type, values))):
        return
    if given.dtype.kind in "USbO" or converted:
        items = given.ravel() if isinstance(values, np.ndarray) or given.ndim != 1 else values
        for value in items:
            if value is None or isinstance(value, (str, bytes, bytearray, bool, np.bool_)):
                check_numeric_value(value.item() if isinstance(value, np.generic) else value)


def parse_numeric_text(value: Any) -> float:
    """A number read from a values file: text (``'12'``, ``' 1e3 '``) is parsed, the rest is :func:`check_numeric_value`.

    Raises
    ------
    InputError
        Text that is not a number, or a value :func:`check_numeric_value` refuses.
    """
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InputError(
                f"numeric value must be a number, got {shown(value, VALUE_ECHO_LIMIT)}"
            ) from None
    return check_numeric_value(value)


@dataclasses.dataclass(frozen=True)
class NumericSpec(ExactPrivacySpec):
    """Common interface of the numeric mechanisms (do not instantiate directly).

    Native scale: t ∈ [−1, 1]; reports carry native outputs y and
    :meth:`native_estimate` maps them to unbiased estimates of t.

    Examples
    --------
    >>> import ldp
    >>> spec = ldp.Duchi(epsilon=1.0, low=0, high=10)
    >>> isinstance(spec, ldp.NumericSpec), spec.to_native([0, 5, 10, 20]).tolist()  # clipped to [low, high]
    (True, [-1.0, 0.0, 1.0, 1.0])
    """

    report_kind: ClassVar[str] = "numeric"
    #: Reports carry one output of the mechanism (a finite number in its support).
    report_schema: ClassVar[ReportSchema] = ReportSchema((Number("value"),))
    #: Name of the closed-form worst-case variance in :func:`ldp.numeric_math.worst_case_variance`.
    theory_name: ClassVar[str] = ""

    if TYPE_CHECKING:  # fields of every numeric spec, declared by each (their order and defaults differ)

        @property
        def low(self) -> float:
            """Lower end of the value range."""

        @property
        def high(self) -> float:
            """Upper end of the value range."""

    def _init_range(self) -> None:
        low = _check_bound(self.low, "low")
        high = _check_bound(self.high, "high")
        if not low < high:
            raise SpecError(f"{self.mechanism}: need low < high, got low={low!r}, high={high!r}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    # -- limits (ldp.specs.limits) -----------------------------------------------
    def _check_resolution(self) -> None:
        """The width high − low and the resolution width/grid must be finite, positive normal doubles."""
        low, high = self.low, self.high
        width = high - low
        if not math.isfinite(width):
            raise SpecError(
                f"{self.mechanism}: the range [{low!r}, {high!r}] is too wide: high - low overflows a double"
            )
        grid = getattr(self, "grid", 1)
        resolution = width / grid
        if resolution < SMALLEST_NORMAL:
            raise SpecError(
                f"{self.mechanism}: the range [{low!r}, {high!r}] is too narrow: its resolution (high - low)/{grid} = "
                f"{resolution!r} is below the smallest normal double {SMALLEST_NORMAL!r}"
            )

    @classmethod
    def grid_applies(cls, options: Mapping[str, Any]) -> bool:
        """Whether a spec built with ``options`` has an input grid (``grid``): by default, whether it has the field."""
        return "grid" in {field.name for field in dataclasses.fields(cls)}

    def _epsilon_floor(self) -> float:
        """Smallest ε whose noise table fits :data:`MAX_NUMERIC_OUTPUTS` (0: no table grows as ε shrinks)."""
        return 0.0

    def _check_table_size(self) -> None:
        """Refuse an ε so small that the noise table would exceed :data:`MAX_NUMERIC_OUTPUTS` (before building it)."""
        floor, epsilon = self._epsilon_floor(), self.epsilon
        if epsilon < floor:
            _, where = self._epsilon_limit()
            raise SpecError(
                f"{self.mechanism}: epsilon={epsilon:.10g}{where} needs a noise table longer than the limit of "
                f"{MAX_NUMERIC_OUTPUTS:,} entries; the smallest epsilon there is {floor:g} (or use a coarser grid)"
            )

    def _check_value_scale(self) -> None:
        """Every value-unit quantity of up to 2^63 reports must be finite (sums and variances of sums).

        One report's unbiased estimate in value units is center + t̂·(high − low)/2 with |t̂| at most the
        largest native estimate over the support.
        """
        low, high, epsilon = self.low, self.high, self.epsilon
        spread = float(np.max(np.abs(self.native_estimate(self.support)))) * self.half_width
        extent = abs(low / 2 + high / 2) + spread
        limit = math.sqrt(sys.float_info.max / REPORT_HEADROOM)  # spread² · 2^63 stays finite
        if not (spread <= limit and extent <= sys.float_info.max / REPORT_HEADROOM):
            raise SpecError(
                f"{self.mechanism}: the range [{low!r}, {high!r}] is too wide at epsilon={epsilon:g}: one "
                f"report's unbiased estimate reaches {extent:.3g} in value units, and its deviation {spread:.3g} "
                f"must stay below {limit:.3g} so that sums and variances over up to 2^63 reports stay finite"
            )

    #: Grid tables: the curve used is f_{ε,0} at the ε the table achieves, a sound bound, not the exact curve.
    exact_privacy_curve: ClassVar[bool] = False

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """Binary RR at the table's exact worst-case ratio e^ε: the f_{ε,0} curve, which bounds every pair's."""
        ratio = self.privacy_ratio
        keep = ratio / (1 + ratio)
        return (piece([1 - keep, keep], [keep, 1 - keep]),)

    # -- value mapping -----------------------------------------------------
    def unit_position(self, value: Any) -> float:
        """u = (x − low)/(high − low) clipped to [0, 1] (t = 2u − 1)."""
        x = check_numeric_value(value)
        u = (x - self.low) / (self.high - self.low)
        return 0.0 if u < 0.0 else 1.0 if u > 1.0 else u

    def to_native(self, values: Any) -> np.ndarray:
        """Vectorized x ↦ t ∈ [−1, 1] (clipped); NaN raises :class:`~ldp.errors.InputError`."""
        given = np.asarray(values)
        _check_numbers(given, values)
        x = given.astype(np.float64, copy=False)
        if not np.all(np.isfinite(x)):
            raise InputError("numeric values must be finite numbers (got NaN or infinity)")
        u = np.clip((x - self.low) / (self.high - self.low), 0.0, 1.0)
        return 2.0 * u - 1.0

    @property
    def half_width(self) -> float:
        """(high − low)/2: one native unit in value units."""
        return (self.high - self.low) / 2.0

    def to_user(self, native_mean: Any) -> Any:
        """Native t ↦ low + (t + 1)(high − low)/2."""
        return self.low + (np.asarray(native_mean) + 1.0) * self.half_width

    # -- reports -------------------------------------------------------------
    @property
    def estimator_affine(self) -> tuple[float, float]:
        """(a0, a1): the per-report unbiased native estimate is a0 + a1·y."""
        return 0.0, 1.0

    def native_estimate(self, reported: Any) -> np.ndarray:
        a0, a1 = self.estimator_affine
        return a0 + a1 * np.asarray(reported, dtype=np.float64)

    @property
    def support(self) -> np.ndarray:
        """Sorted array of every report value the mechanism can output."""
        raise NotImplementedError

    def in_support(self, values: Any) -> np.ndarray:
        """Vectorized membership of report values in :attr:`support` (exact float equality)."""
        return self.support_index(values)[1]

    def support_index(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        """(index into :attr:`support`, ok) of report values; ok is False off the support."""
        v = np.asarray(values, dtype=np.float64)
        s = self.support
        idx = np.clip(np.searchsorted(s, v), 0, s.size - 1)
        return idx, s[idx] == v

    @staticmethod
    def _affine_index(values: Any, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Index into the sorted outputs ``s`` when s_j ≈ s_0 + step·j: O(1) per value."""
        v = np.asarray(values, dtype=np.float64)
        first, step = s[0], (s[-1] - s[0]) / (s.size - 1)
        with np.errstate(invalid="ignore", over="ignore"):
            j = np.rint((v - first) / step)
        # clipped while still floating point: a huge finite value must not overflow the cast
        j = np.clip(np.where(np.isfinite(j), j, -1.0), 0, s.size - 1).astype(np.int64)
        ok = s[j] == v
        return j, ok

    # -- privacy -----------------------------------------------------------------
    # -- accuracy ------------------------------------------------------------------
    def grid_moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(t_i, E[t̂|t_i], Var[t̂|t_i]) on the input grid (native scale, exact from the tables)."""
        raise NotImplementedError

    def native_variance(self, t: Any) -> np.ndarray:
        """Exact Var[t̂ | t] of one report (native scale), randomized input rounding included."""
        grid_t, means, variances = self.grid_moments()
        K = grid_t.size - 1
        t = np.clip(np.asarray(t, dtype=np.float64), -1.0, 1.0)
        pos = (t + 1.0) * K / 2.0
        i0 = (
            np.minimum(np.floor(pos).astype(np.int64), K - 1) if K > 0 else np.zeros_like(pos, dtype=np.int64)
        )
        lam = pos - i0
        second = (1 - lam) * (variances[i0] + means[i0] ** 2) + lam * (variances[i0 + 1] + means[i0 + 1] ** 2)
        mean = (1 - lam) * means[i0] + lam * means[i0 + 1]
        return second - mean**2

    def variance(self, value: Any, n: int = 1) -> np.ndarray:
        """Var of the mean estimate (value units) when ``n`` users all hold ``value``."""
        t = self.to_native(value)
        return self.native_variance(t) * self.half_width**2 / n

    @property
    def worst_case_variance(self) -> float:
        """Exact max over inputs of one report's variance, native scale (grid included)."""
        t = np.linspace(-1, 1, 2 * (self.grid_moments()[0].size - 1) + 1)
        return float(np.max(self.native_variance(t)))

    @property
    def theory_worst_case_variance(self) -> float:
        """The closed-form worst-case variance of the continuous mechanism (docs/mechanisms.md#numeric), native scale."""
        return nm.worst_case_variance(self.theory_name, self.epsilon)

    @property
    def max_bias(self) -> float:
        """max_i |E[t̂|t_i] − t_i| on the grid (0 up to rounding except for the clamped noises)."""
        grid_t, means, _ = self.grid_moments()
        return float(np.max(np.abs(means - grid_t)))


# -- two-point ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True, init=False)
class _TwoPoint(NumericSpec):
    max_epsilon: ClassVar[float] = RR64_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its smaller probability, about 1/(e^epsilon + 1), is a multiple of 2^-64 and could not match e^epsilon "
        "to 1e-9 above it"
    )

    epsilon: float
    low: float
    high: float
    p: Fraction

    def __init__(
        self, epsilon: float, low: float = -1.0, high: float = 1.0, p: ProbabilityInput | None = None
    ) -> None:
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        self._init_range()
        self._check_resolution()
        self._check_epsilon_limit()
        if p is None:
            keep = calibrate_keep_probability(self.epsilon, 2, self.mechanism)
        else:
            keep = check_probability(p, "p", high_open=True)
            if keep <= Fraction(1, 2):
                raise SpecError(f"{self.mechanism}: p must exceed 1/2, got {keep}")
        object.__setattr__(self, "p", keep)
        self._check_claim()
        self._check_value_scale()

    exact_privacy_curve: ClassVar[bool] = True

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """The inputs ±1 give binary RR with the exact p; every other input is a garbling of those two."""
        keep = self.p
        return (piece([1 - keep, keep], [keep, 1 - keep]),)

    @property
    def privacy_ratio(self) -> Fraction:
        return self.p / (1 - self.p)

    @property
    def c(self) -> float:
        """C′ = 1/(2p − 1) (= coth(ε/2) up to the rational calibration)."""
        return float(1 / (2 * self.p - 1))

    def support_index(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._affine_index(values, self.support)

    def grid_moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c = self.c
        t = np.array([-1.0, 1.0])
        return t, t.copy(), np.full(2, c * c) - 1.0


@dataclasses.dataclass(frozen=True, init=False)
class Duchi(_TwoPoint):
    """Duchi et al.'s one-dimensional mechanism: output ±C with P[+C] = ½ + t(e^ε−1)/(2(e^ε+1)).

    The client rounds t to ±1 with an exact unbiased coin and applies binary
    randomized response with the exact rational p = P[+C | t = 1] (≤ e^ε/(e^ε+1),
    calibrated toward more privacy); the output ±C′ with C′ = 1/(2p − 1) is
    unbiased. Var[y|t] = C′² − t², worst case C′² at t = 0.

    Parameters
    ----------
    epsilon : float
    low, high : float
        Value range (values outside are clipped by the client).
    p : Fraction, optional
        P[+C | t = 1]; calibrated from ``epsilon`` when omitted.

    References
    ----------
    .. [1] J. Duchi, M. Jordan, M. Wainwright. "Minimax optimal procedures
       for locally private estimation". JASA 113(521), 2018.

    Examples
    --------
    >>> from ldp import Duchi
    >>> spec = Duchi(epsilon=1.0, low=0, high=10)
    >>> spec.mechanism, spec.low, spec.high
    ('duchi', 0.0, 10.0)
    """

    mechanism: ClassVar[str] = "duchi"
    theory_name: ClassVar[str] = "duchi"

    def __init__(
        self, epsilon: float, low: float = -1.0, high: float = 1.0, p: ProbabilityInput | None = None
    ) -> None:
        super().__init__(epsilon, low, high, p)

    @property
    def support(self) -> np.ndarray:
        return np.array([-self.c, self.c])


@dataclasses.dataclass(frozen=True, init=False)
class StochasticRounding(_TwoPoint):
    """1BitMean (stochastic rounding): send the bit b with P[b=1] = 1/(e^ε+1) + u(e^ε−1)/(e^ε+1).

    u = (x − low)/(high − low). Reports carry the bit (0 or 1); the unbiased
    estimate of t is C′(2b − 1). It is Duchi's mechanism with a one-bit
    report (docs/mechanisms.md#stochastic-rounding).

    References
    ----------
    .. [1] B. Ding, J. Kulkarni, S. Yekhanin. "Collecting telemetry data
       privately". NeurIPS 2017.

    Examples
    --------
    >>> from ldp import StochasticRounding
    >>> spec = StochasticRounding(epsilon=1.0, low=0, high=10)
    >>> spec.mechanism, spec.low, spec.high
    ('stochastic-rounding', 0.0, 10.0)
    """

    mechanism: ClassVar[str] = "stochastic-rounding"
    theory_name: ClassVar[str] = "stochastic-rounding"

    def __init__(
        self, epsilon: float, low: float = 0.0, high: float = 1.0, p: ProbabilityInput | None = None
    ) -> None:
        super().__init__(epsilon, low, high, p)

    @property
    def support(self) -> np.ndarray:
        return np.array([0.0, 1.0])

    @property
    def estimator_affine(self) -> tuple[float, float]:
        return -self.c, 2.0 * self.c


# -- grid mechanisms ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Gridded(NumericSpec):
    """Mechanisms sampled from an exact integer table over an input grid (validated, then ε checked).

    The table is derived from ε and the grid (the JSON stores no probabilities), so ε is checked to be
    honoured by the table, not matched to it: :attr:`epsilon_achieved` is what the table gives.
    """

    max_epsilon: ClassVar[float] = PM_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "the band weight e^epsilon * 2^30 and the row totals must stay below 2^62"
    )
    claim_matches_probabilities: ClassVar[bool] = False

    if TYPE_CHECKING:  # a field of every gridded spec, declared by each after its range

        @property
        def grid(self) -> int:
            """Number of input grid steps."""

    def _init_grid(self) -> None:
        object.__setattr__(self, "grid", check_int(self.grid, "grid", minimum=1, maximum=MAX_GRID))

    def __post_init__(self) -> None:
        self._init_range()
        self._init_grid()
        self._check_resolution()
        self._check_epsilon_limit()
        self._check_table_size()
        self._check_claim()
        self._check_value_scale()

    @property
    def table(self) -> nm.GridTable:
        raise NotImplementedError

    @property
    def support(self) -> np.ndarray:
        return self.table.outputs

    def support_index(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        return self._affine_index(values, self.table.outputs)

    def grid_moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        means, variances = self.table.moments()
        K = self.table.K
        return -1.0 + 2.0 * np.arange(K + 1) / K, means, variances

    @cached_property
    def _ratio(self) -> Fraction:
        return nm.table_privacy_ratio(self.table)

    @property
    def privacy_ratio(self) -> Fraction:
        return self._ratio


@dataclasses.dataclass(frozen=True)
class Piecewise(_Gridded):
    """Piecewise Mechanism (PM) on a grid.

    Output cells j = 0..grid+m−1; grid input i gives weight a to the band
    [i, i+m) and b elsewhere, a/b ≤ e^ε exactly, m = round(grid·e^{−ε/2})
    (PM's band/(band travel) ratio). The output value of cell j is affine in
    j and makes the report exactly unbiased. As grid → ∞ this is PM with
    Var[y|t] = t²/(e^{ε/2}−1) + (e^{ε/2}+3)/(3(e^{ε/2}−1)²).

    Parameters
    ----------
    epsilon : float
    low, high : float
    grid : int
        Number of input grid steps (resolution: (high − low)/grid).

    References
    ----------
    .. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin,
       G. Yu. "Collecting and analyzing multidimensional data with local
       differential privacy". ICDE 2019.

    Examples
    --------
    >>> from ldp import Piecewise
    >>> spec = Piecewise(epsilon=1.0, low=0, high=10)
    >>> spec.mechanism, spec.low, spec.high
    ('piecewise', 0.0, 10.0)
    """

    mechanism: ClassVar[str] = "piecewise"
    theory_name: ClassVar[str] = "piecewise"

    epsilon: float
    low: float = -1.0
    high: float = 1.0
    grid: int = DEFAULT_GRID

    @cached_property
    def _built(self) -> tuple[nm.GridTable, Fraction]:
        return nm.pm_table(self.epsilon, self.grid)

    @property
    def table(self) -> nm.GridTable:
        return self._built[0]


@dataclasses.dataclass(frozen=True)
class Hybrid(_Gridded):
    """Hybrid Mechanism (HM): grid PM with probability α, Duchi otherwise.

    α = 1 − e^{−ε/2} (a 32-bit rational) for ε > ε* ≈ 0.60935, else 0.
    Both parts are exactly unbiased and ε-LDP, so the mixture is. Reports
    are PM cell values or ±C′.

    Parameters
    ----------
    epsilon : float
    low, high : float
    grid : int

    References
    ----------
    .. [1] N. Wang et al. ICDE 2019 (as :class:`Piecewise`).

    Examples
    --------
    >>> from ldp import Hybrid
    >>> spec = Hybrid(epsilon=1.0, low=0, high=10)
    >>> spec.mechanism, spec.low, spec.high
    ('hybrid', 0.0, 10.0)
    """

    mechanism: ClassVar[str] = "hybrid"
    theory_name: ClassVar[str] = "hybrid"

    epsilon: float
    low: float = -1.0
    high: float = 1.0
    grid: int = DEFAULT_GRID

    @cached_property
    def alpha(self) -> Fraction:
        """Exact probability of using PM."""
        a = nm.hm_alpha(self.epsilon)
        return floor_fraction(a, 1 << 32) if a > 0 else Fraction(0)

    @cached_property
    def duchi(self) -> Duchi:
        return Duchi(epsilon=self.epsilon)

    @cached_property
    def _pm(self) -> tuple[nm.GridTable, Fraction]:
        return nm.pm_table(self.epsilon, self.grid)

    @property
    def table(self) -> nm.GridTable:
        """The PM part's table."""
        return self._pm[0]

    @cached_property
    def support(self) -> np.ndarray:
        c = self.duchi.c
        if self.alpha == 0:
            return np.array([-c, c])
        return np.unique(np.concatenate([self.table.outputs, [-c, c]]))

    @property
    def privacy_ratio(self) -> Fraction:
        if self.alpha == 0:
            return self.duchi.privacy_ratio
        return max(self._ratio, self.duchi.privacy_ratio)

    def support_index(self, values: Any) -> tuple[np.ndarray, np.ndarray]:
        if self.alpha == 0:
            return NumericSpec.support_index(self, values)
        v = np.asarray(values, dtype=np.float64)
        pm_j, pm_ok = _Gridded.support_index(self, v)
        pm_map, minus, plus = self._index_maps
        idx = pm_map[pm_j]
        if pm_ok.all():
            return idx, pm_ok
        c = self.duchi.c
        idx = np.where(pm_ok, idx, np.where(v == c, plus, minus))
        return idx, pm_ok | (v == c) | (v == -c)

    @cached_property
    def _index_maps(self) -> tuple[np.ndarray, int, int]:
        s = self.support
        c = self.duchi.c
        return np.searchsorted(s, self.table.outputs), int(np.searchsorted(s, -c)), int(np.searchsorted(s, c))

    def grid_moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t, pm_means, pm_vars = super().grid_moments()
        a = float(self.alpha)
        c = self.duchi.c
        second = a * (pm_vars + pm_means**2) + (1 - a) * c * c
        means = a * pm_means + (1 - a) * t
        return t, means, second - means**2


@dataclasses.dataclass(frozen=True)
class Laplace(_Gridded):
    """Laplace mechanism as a clamped discrete Laplace on a grid.

    Output j = clamp(i + Z, −B, grid + B), P[Z = z] ∝ e^{−ε|z|/grid} (the
    grid's sensitivity is ``grid`` steps), sampled from an exact integer
    table; reports carry the native value −1 + 2j/grid. Var ≈ 8/ε² (t +
    Lap(2/ε)). The clamp range is as wide as the 62-bit table allows; the
    clamping bias is computed exactly (:attr:`max_bias`, native scale): below
    4e-7 for ε ≤ 8 and grid ≤ 1024, but it grows like e^ε·2^-31 (2.6e-4 at
    ε = 16, grid 1024), where PM/HM are far more accurate anyway.

    Parameters
    ----------
    epsilon : float
    low, high : float
    grid : int

    References
    ----------
    .. [1] C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating noise to
       sensitivity in private data analysis". TCC 2006.
    .. [2] A. Ghosh, T. Roughgarden, M. Sundararajan. STOC 2009.
    .. [3] I. Mironov. ACM CCS 2012.

    Examples
    --------
    >>> from ldp import Laplace
    >>> spec = Laplace(epsilon=1.0, low=0, high=10)
    >>> spec.mechanism, spec.low, spec.high
    ('laplace', 0.0, 10.0)
    """

    mechanism: ClassVar[str] = "laplace"
    theory_name: ClassVar[str] = "laplace"
    #: On every grid (grid 1 is the tightest); a spec's own limit follows its grid (:meth:`_epsilon_limit`).
    max_epsilon: ClassVar[float] = round_down(nm.laplace_epsilon_range(1)[1])
    max_epsilon_reason: ClassVar[str] = (
        "its 62-bit noise table must reach across the range with weights >= 2^24"
    )

    epsilon: float
    low: float = -1.0
    high: float = 1.0
    grid: int = DEFAULT_GRID

    def _epsilon_limit(self) -> tuple[float, str]:
        return round_down(nm.laplace_epsilon_range(self.grid)[1]), f" on grid={self.grid}"

    def _epsilon_floor(self) -> float:
        return round_up(nm.laplace_epsilon_range(self.grid)[0])

    @cached_property
    def _built(self) -> tuple[nm.GridTable, Fraction]:
        slack = nm.LAPLACE_SLACK
        for _ in range(40):
            nominal = self.epsilon - slack
            if nominal <= 0:
                break
            table = nm.laplace_table(nominal, self.grid)
            ratio = nm.table_privacy_ratio(table)
            if ratio_within(ratio, self.epsilon):
                return table, ratio
            slack *= 2
        raise SpecError(f"laplace: cannot reach epsilon={self.epsilon!r} with grid={self.grid}")

    @property
    def table(self) -> nm.GridTable:
        return self._built[0]

    @property
    def _ratio(self) -> Fraction:
        return self._built[1]


@dataclasses.dataclass(frozen=True)
class Gaussian(_Gridded):
    """Gaussian mechanism for (ε, δ)-LDP as a clamped discrete Gaussian on a grid.

    σ (native scale, ℓ₂ sensitivity Δ = 2) is the analytic calibration of
    Balle & Wang (equivalently μ-GDP with μ = Δ/σ), never the classic
    formula; the grid noise has σ·grid/2 steps. ``delta_achieved`` is the
    exact δ(ε) of the integer table (worst input pair); σ is raised until it
    is ≤ ``delta``.

    Parameters
    ----------
    epsilon, delta : float
    low, high : float
    grid : int

    References
    ----------
    .. [1] B. Balle, Y.-X. Wang. ICML 2018.
    .. [2] J. Dong, A. Roth, W. Su. "Gaussian differential privacy". JRSS-B 2022.
    .. [3] C. Canonne, G. Kamath, T. Steinke. "The discrete Gaussian for
       differential privacy". NeurIPS 2020.

    Examples
    --------
    >>> from ldp import Gaussian
    >>> spec = Gaussian(epsilon=1.0, low=0, high=10, delta=1e-5)
    >>> spec.mechanism, spec.low, spec.high
    ('gaussian', 0.0, 10.0)
    """

    mechanism: ClassVar[str] = "gaussian"
    #: Where e^ε is a finite double; a spec's own limit follows its delta and grid (:meth:`_epsilon_limit`).
    max_epsilon: ClassVar[float] = REPRESENTABLE_MAX_EPSILON
    max_epsilon_reason: ClassVar[str] = (
        "its 62-bit discrete Gaussian table must reach across the range with weights >= 2^24"
    )

    epsilon: float
    delta: float
    low: float = -1.0
    high: float = 1.0
    grid: int = DEFAULT_GRID

    def __post_init__(self) -> None:
        self._init_range()
        self._init_grid()
        self._check_resolution()
        d = _check_bound(self.delta, "delta")
        if not 0 < d < 1:
            raise SpecError(f"gaussian: delta must be in (0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", d)
        self._check_epsilon_limit()
        self._check_table_size()
        _ = self._built
        self._check_value_scale()

    def _epsilon_limit(self) -> tuple[float, str]:
        # searched within (0, max_epsilon], where e^ε is finite for the calibration itself
        largest = nm.gaussian_epsilon_range(self.delta, self.grid)[1]
        return round_down(largest), f" at delta={self.delta:.10g} on grid={self.grid}"

    def _epsilon_floor(self) -> float:
        return round_up(nm.gaussian_epsilon_range(self.delta, self.grid)[0])

    @cached_property
    def _built(self) -> tuple[nm.GridTable, float, float]:
        sigma = nm.analytic_gaussian_sigma(self.epsilon, self.delta, 2.0)
        for _ in range(200):
            table = nm.gaussian_table(sigma * self.grid / 2.0, self.grid)
            achieved = nm.table_gaussian_delta(table, self.epsilon)
            if achieved <= self.delta:
                return table, sigma, achieved
            sigma *= 1.0005
        raise SpecError(
            f"gaussian: cannot reach delta={self.delta!r} on grid={self.grid}"
        )  # pragma: no cover

    @property
    def table(self) -> nm.GridTable:
        return self._built[0]

    @property
    def sigma(self) -> float:
        """Noise standard deviation on the native scale."""
        return self._built[1]

    @property
    def gdp_mu(self) -> float:
        """μ = Δ/σ with Δ = 2 (the mechanism is μ-GDP before discretization)."""
        return 2.0 / self.sigma

    @property
    def delta_achieved(self) -> float:
        """Exact δ(ε) of the integer grid table (≤ ``delta``)."""
        return self._built[2]

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """None: the grid Gaussian is (ε, δ)-LDP, with no pure-ε or exact curve here."""
        raise SpecError(
            f"gaussian is (epsilon, delta)-LDP on a grid, with no exact curve here; the continuous mechanism is "
            f"mu-GDP with mu = {self.gdp_mu:.6g} (compose that with `ldp privacy convert --mu`)"
        )

    @property
    def privacy_ratio(self) -> Fraction:  # pure ε is not the Gaussian's guarantee
        return nm.table_privacy_ratio(self.table)

    @property
    def theory_worst_case_variance(self) -> float:
        return self.sigma**2

    def privacy_summary(self) -> dict[str, float]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "delta_achieved": self.delta_achieved,
            "gdp_mu": self.gdp_mu,
        }


# -- selection --------------------------------------------------------------------

#: Numeric mechanisms by CLI name, in registration order: a live view of the spec registry.
NUMERIC_MECHANISMS: Mapping[str, type[NumericSpec]] = MechanismView(NumericSpec)


def numeric_variance_table(epsilon: float) -> dict[str, float]:
    """Worst-case variances (native scale, docs/mechanisms.md#hybrid) of the pure-ε mechanisms that support ``epsilon``.

    A mechanism is left out above its :attr:`~ExactPrivacySpec.max_epsilon` (laplace: the limit
    that holds on every grid); :class:`SpecError` names the limits when none is left.
    """
    epsilon = check_epsilon(epsilon)
    names = [name for name in nm.NUMERIC_THEORY if epsilon <= NUMERIC_MECHANISMS[name].max_epsilon]
    if not names:
        limits = ", ".join(f"{name} {NUMERIC_MECHANISMS[name].max_epsilon:g}" for name in nm.NUMERIC_THEORY)
        raise SpecError(
            f"auto: no numeric mechanism supports epsilon={epsilon:.10g} (largest epsilons: {limits})"
        )
    return {name: nm.worst_case_variance(name, epsilon) for name in names}


def best_numeric_mechanism(epsilon: float) -> str:
    """The pure-ε mechanism with the smallest worst-case variance (ties: cheaper report first).

    Examples
    --------
    >>> from ldp import best_numeric_mechanism
    >>> best_numeric_mechanism(0.5), best_numeric_mechanism(2.0)
    ('duchi', 'hybrid')
    """
    table = numeric_variance_table(epsilon)
    best = min(table.values())
    for name in table:
        if table[name] <= best * (1 + 1e-12):
            return name
    raise AssertionError("unreachable")  # pragma: no cover


def numeric_spec(
    mechanism: str, epsilon: float, low: float = -1.0, high: float = 1.0, **options: Any
) -> NumericSpec:
    """Build the numeric spec called ``mechanism`` (``"auto"`` picks the best by theory).

    Examples
    --------
    >>> from ldp import numeric_spec
    >>> numeric_spec("duchi", 1.0, low=0, high=10)
    Duchi(epsilon=1.0, low=0.0, high=10.0, ...)
    >>> numeric_spec("auto", 1.0, low=0, high=10).mechanism
    'hybrid'
    """
    name = mechanism.strip().lower().replace("_", "-")
    if name == "auto":
        name = best_numeric_mechanism(epsilon)
    try:
        cls = NUMERIC_MECHANISMS[name]
    except KeyError:
        known = ", ".join([*NUMERIC_MECHANISMS, "auto"])
        raise SpecError(f"unknown numeric mechanism {mechanism!r}; known: {known}") from None
    if not cls.grid_applies(options):  # a sweep's grid applies to the mechanisms that have one
        options.pop("grid", None)
    if cls is not Gaussian:
        options.pop("delta", None)
    elif options.get("delta") is None:
        raise SpecError("gaussian needs delta")
    build: Callable[..., NumericSpec] = cls  # every numeric spec takes epsilon, low and high by name
    return build(epsilon=epsilon, low=low, high=high, **options)
