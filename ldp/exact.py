"""Exact rational arithmetic for perturbation probabilities.

The client samples every probability exactly, so each spec holds its
probabilities as :class:`fractions.Fraction`. Calibration from ε rounds
*toward more privacy*: the realized probability ratio never exceeds e^ε,
and the ε the spec reports is the one its rational probabilities achieve.

``math.exp`` is accurate to within one unit in the last place, so
``Fraction(math.exp(eps)) * (1 - 2**-50)`` is a certified lower bound of the
real e^ε; every privacy check in this package compares against that bound.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "DENOMINATOR",
    "ceil_fraction",
    "epsilon_bound_of_ratio",
    "epsilon_of_ratio",
    "exp_lower_bound",
    "floor_fraction",
    "fraction_from_json",
    "fraction_to_json",
    "ratio_within",
]

#: Denominator used when calibrating probabilities from ε (64 random bits per coin).
DENOMINATOR = 1 << 64

_SAFETY = Fraction(1) - Fraction(1, 1 << 50)


def exp_lower_bound(epsilon: float) -> Fraction:
    """Return a rational number certified to be ≤ e^epsilon (and within 2^-49 of it)."""
    return Fraction(math.exp(epsilon)) * _SAFETY


def ratio_within(ratio: Fraction, epsilon: float) -> bool:
    """True when a probability ratio is certified not to exceed e^epsilon."""
    return ratio <= exp_lower_bound(epsilon)


def epsilon_of_ratio(ratio: Fraction) -> float:
    """ln(ratio) as a float, for exact rational ratios of any size."""
    if ratio <= 0:
        raise ValueError("a probability ratio must be positive")
    try:
        return math.log(float(ratio))  # float(Fraction) is correctly rounded
    except OverflowError:  # beyond the float range: logs of the integers separately
        return math.log(ratio.numerator) - math.log(ratio.denominator)


def epsilon_bound_of_ratio(ratio: Fraction) -> float:
    """ln(ratio) rounded up: the smallest float ε that :func:`ratio_within` certifies for ``ratio``.

    This is the safe direction for a privacy claim derived from exact
    probabilities (ratio ≤ e^ε is certified, as for every spec's stated ε);
    the nearest double of ln(ratio), :func:`epsilon_of_ratio`, may lie up to
    one unit in the last place below it. Needs e^ε to be a finite double
    (ε < 709.78).
    """
    if ratio == 1:
        return 0.0
    eps = epsilon_of_ratio(ratio)
    while not ratio_within(ratio, eps):
        # a step of at least 2^-53: near ε = 0, smaller steps do not move math.exp(ε)
        eps = max(math.nextafter(eps, math.inf), eps + 2.0**-53)
    return eps


def floor_fraction(x: float | Fraction, denominator: int = DENOMINATOR) -> Fraction:
    """Largest multiple of 1/denominator that is ≤ x."""
    return Fraction(math.floor(Fraction(x) * denominator), denominator)


def ceil_fraction(x: float | Fraction, denominator: int = DENOMINATOR) -> Fraction:
    """Smallest multiple of 1/denominator that is ≥ x."""
    return Fraction(math.ceil(Fraction(x) * denominator), denominator)


def fraction_to_json(x: Fraction) -> str:
    """Exact text form of a probability, ``"a/b"`` (or ``"a"`` when b = 1)."""
    return str(Fraction(x))


def fraction_from_json(value: object, name: str) -> Fraction:
    """Read a probability written as ``"a/b"``, a decimal string or a number.

    Decimal strings are read exactly (``"0.39"`` is 39/100); floats are read as
    the decimal they print as, which is what a user typing ``0.39`` means.
    """
    from ldp.errors import ParameterError

    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParameterError(f"{name} must be a number or a fraction string like '1/4', got {value!r}")
    try:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError
            return Fraction(repr(value))
        return Fraction(value)
    except (ValueError, ZeroDivisionError):
        raise ParameterError(
            f"{name} must be a number or a fraction string like '1/4', got {value!r}"
        ) from None
