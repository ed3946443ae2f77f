"""The numeric noise tables depend on their parameters only, never on the CPU's vectorized exp.

A spec's fingerprint does not cover its tables, so two machines must build the
same table from the same spec: the cross-language vectors and the collector's
``/tables`` digests rely on it. NumPy's ``exp`` is dispatched to CPU-specific
code whose last bits differ (AVX-512 against AVX2 moved 4 to 26 weights of the
default Laplace and Gaussian tables by one), so the tables are built with
decimal constants and fixed-point integer recurrences (ldp/fixed_exp.py).
"""

from __future__ import annotations

import decimal
import itertools
from decimal import Decimal

import numpy as np
import pytest

from ldp import numeric_math as nm
from ldp.fixed_exp import FRACTION_BITS, gaussian_sequence, geometric_sequence, round_scaled

_REFERENCE = decimal.Context(prec=80)


def _reference_weight(exponent: Decimal, scale: Decimal) -> int:
    """round(scale · e^exponent) computed independently at 80 digits."""
    return int(_REFERENCE.multiply(scale, _REFERENCE.exp(exponent)).to_integral_value(decimal.ROUND_HALF_UP))


def test_geometric_sequence_matches_an_independent_80_digit_exp():
    ratio_exponent = Decimal(-1) / Decimal(256)
    ratio = _REFERENCE.exp(ratio_exponent)
    scale = Decimal(2) ** 61
    terms = geometric_sequence(ratio, 5000)
    got = round_scaled(terms, scale)
    expected = [_reference_weight(ratio_exponent * z, scale) for z in range(0, 5000, 37)]
    assert got[::37].tolist() == expected


def test_gaussian_sequence_matches_an_independent_80_digit_exp():
    sigma = Decimal("123.25")
    scale = Decimal(2) ** 61
    terms = gaussian_sequence(sigma, 1500)
    got = round_scaled(terms, scale)
    two_var = 2 * sigma * sigma
    expected = [_reference_weight(-Decimal(z * z) / two_var, scale) for z in range(0, 1500, 11)]
    assert got[::11].tolist() == expected


def test_sequence_terms_are_fixed_point_and_decreasing():
    terms = geometric_sequence(Decimal("0.5"), 10)
    assert terms == [1 << (FRACTION_BITS - z) for z in range(10)]
    gauss = gaussian_sequence(Decimal(3), 20)
    assert gauss[0] == 1 << FRACTION_BITS and all(a > b for a, b in itertools.pairwise(gauss))


@pytest.mark.parametrize("build", [lambda: nm.laplace_table(1.0, 256), lambda: nm.gaussian_table(400.0, 256)])
def test_tables_use_neither_numpy_exp_nor_the_callers_decimal_context(build, monkeypatch):
    nm.laplace_table.cache_clear()
    nm.gaussian_table.cache_clear()
    reference = build()
    nm.laplace_table.cache_clear()
    nm.gaussian_table.cache_clear()

    def refuse(*args, **kwargs):
        raise AssertionError("a noise table called numpy.exp (CPU-dependent last bits)")

    monkeypatch.setattr(np, "exp", refuse)
    with decimal.localcontext() as ctx:
        ctx.prec = 6
        ctx.rounding = decimal.ROUND_DOWN
        rebuilt = build()
    nm.laplace_table.cache_clear()
    nm.gaussian_table.cache_clear()
    assert np.array_equal(rebuilt.weights, reference.weights) and rebuilt.total == reference.total
