"""Platform-independent exponential sequences for the numeric noise tables.

NumPy's vectorized ``exp`` is dispatched at run time to CPU-specific code
(AVX-512, AVX2 or baseline), and those implementations differ in the last
bits of some results. Integer weights rounded from them then differ by one
here and there between machines: one spec (one fingerprint) would have
different sampling tables, table digests and achieved ε on different
machines, and a client could not check the tables it was served against
the ones it computed.

The functions here compute the same quantities from the parameters alone:
the constants with Python's :mod:`decimal` (``exp``, ``ln`` and ``sqrt`` are
correctly rounded there, in a private context, so the result does not depend
on the platform or on the caller's decimal context) and the sequences by
fixed-point integer recurrences. Each step truncates at 2^-128, far below the
rounding of the weights (at least 2^24), so the weights are the correctly
rounded ones in all but astronomically rare ties, and the same everywhere.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal

import numpy as np

__all__ = [
    "FRACTION_BITS",
    "decimal_context",
    "fixed_point",
    "gaussian_sequence",
    "geometric_sequence",
    "round_scaled",
]

#: Fraction bits of the fixed-point sequences.
FRACTION_BITS = 128
_ONE = 1 << FRACTION_BITS
#: Fraction bits of a scale factor in :func:`round_scaled`.
_SCALE_BITS = 64

_CONTEXT = Context(prec=60, rounding=ROUND_HALF_EVEN, Emin=-999_999, Emax=999_999)


def decimal_context() -> Context:
    """The private 60-digit decimal context of the table arithmetic (round half even)."""
    return _CONTEXT


def fixed_point(x: Decimal) -> int:
    """``floor(x · 2^FRACTION_BITS)`` for ``x ≥ 0``, as an integer."""
    scaled = _CONTEXT.multiply(x, Decimal(_ONE))
    return int(scaled.to_integral_value(rounding=ROUND_FLOOR))


def geometric_sequence(ratio: Decimal, count: int) -> list[int]:
    """``ratio^z`` for ``z = 0 … count − 1`` in fixed point (2^-FRACTION_BITS units), ``0 < ratio < 1``.

    Each term is the previous one times the fixed-point ratio, truncated: the
    error of term z is below ``(z + 1) · 2^-FRACTION_BITS``.
    """
    step = fixed_point(ratio)
    terms = [0] * count
    term = _ONE
    for z in range(count):
        terms[z] = term
        term = (term * step) >> FRACTION_BITS
    return terms


def gaussian_sequence(sigma: Decimal, count: int) -> list[int]:
    """``exp(−z² / (2σ²))`` for ``z = 0 … count − 1`` in fixed point (2^-FRACTION_BITS units).

    Uses ``f(z + 1) = f(z) · a · b^z`` with ``a = exp(−1/(2σ²))`` and
    ``b = exp(−1/σ²)``; each product is truncated, so term z is low by less
    than ``3 (z + 1) · 2^-FRACTION_BITS``.
    """
    ctx = _CONTEXT
    two_var = ctx.multiply(Decimal(2), ctx.multiply(sigma, sigma))
    a = fixed_point(ctx.exp(ctx.minus(ctx.divide(Decimal(1), two_var))))
    b = fixed_point(ctx.exp(ctx.minus(ctx.divide(Decimal(2), two_var))))
    terms = [0] * count
    term, ratio = _ONE, a
    for z in range(count):
        terms[z] = term
        term = (term * ratio) >> FRACTION_BITS
        ratio = (ratio * b) >> FRACTION_BITS
    return terms


def round_scaled(terms: list[int], scale: Decimal) -> np.ndarray:
    """``round(scale · t)`` (half up) of fixed-point terms ``t``, as int64 (each result must fit)."""
    factor = int(
        _CONTEXT.multiply(scale, Decimal(1 << _SCALE_BITS)).to_integral_value(rounding=ROUND_HALF_EVEN)
    )
    shift = FRACTION_BITS + _SCALE_BITS
    half = 1 << (shift - 1)
    return np.array([(factor * t + half) >> shift for t in terms], dtype=np.int64)
