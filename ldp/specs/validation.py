"""Parameter checks shared by the spec classes (never ``assert``)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ldp.errors import ParameterError
from ldp.exact import fraction_from_json

__all__ = ["ProbabilityInput", "check_epsilon", "check_int", "check_probability"]

#: What a spec constructor accepts as an exact probability: a fraction, ``"a/b"`` or a decimal string
#: (read exactly), or a number (read as the decimal it prints as); see :func:`check_probability`.
ProbabilityInput = Fraction | str | float


def check_epsilon(value: object, name: str = "epsilon") -> float:
    """A finite ε > 0 as float (a boolean is refused: it is not read as 1 or 0)."""
    if isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be a number, got the boolean {value!r}")
    if not isinstance(value, (int, float)):
        try:
            value = float(value)  # type: ignore[arg-type]  # whatever float() takes (str, Decimal); else TypeError
        except (TypeError, ValueError):
            raise ParameterError(f"{name} must be a positive number, got {value!r}") from None
    eps = float(value)
    if not math.isfinite(eps) or eps <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}")
    return eps


def check_probability(
    value: object, name: str, *, low_open: bool = False, high_open: bool = False
) -> Fraction:
    """An exact probability in [0, 1] (bounds optionally excluded)."""
    prob = fraction_from_json(value, name)
    lo_ok = prob > 0 if low_open else prob >= 0
    hi_ok = prob < 1 if high_open else prob <= 1
    if not (lo_ok and hi_ok):
        lo = "(0" if low_open else "[0"
        hi = "1)" if high_open else "1]"
        shown = value if isinstance(value, str | int | float | Fraction) else repr(value)
        raise ParameterError(f"{name} must be in {lo}, {hi}, got {shown}")
    return prob


def check_int(value: object, name: str, *, minimum: int, maximum: int | None = None) -> int:
    """An integer within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ParameterError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ParameterError(f"{name} must be {bound}, got {value}")
    return value
