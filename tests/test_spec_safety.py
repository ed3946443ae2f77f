"""Spec safety: claimed ε rounds in the safe direction, and parameters a spec cannot honour are refused.

Exact checks use :class:`fractions.Fraction` and 60-digit :mod:`decimal`
arithmetic (correctly rounded, so every comparison below is certified).
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import ldp
from ldp.errors import ParameterError

# -- helpers -------------------------------------------------------------------

_DIGITS = 60
#: Decimal's exp is correctly rounded (half an ulp of 60 digits); this margin covers it.
_DECIMAL_SLACK = Decimal(10) ** (1 - _DIGITS)


def exp_certainly_at_least(epsilon: float, ratio: Fraction) -> bool:
    """e^epsilon >= ratio, certified: e^epsilon's 60-digit value minus its rounding bound still reaches ratio."""
    with decimal.localcontext() as ctx:
        ctx.prec = _DIGITS
        low = Decimal(epsilon).exp() * (1 - _DECIMAL_SLACK)  # Decimal(float) is exact
        ctx.rounding = decimal.ROUND_CEILING
        high_ratio = Decimal(ratio.numerator) / Decimal(ratio.denominator)
        return low >= high_ratio


def exp_within(epsilon: float, ratio: Fraction, relative: float) -> bool:
    """e^epsilon <= ratio·(1 + relative), certified in the same way."""
    with decimal.localcontext() as ctx:
        ctx.prec = _DIGITS
        high = Decimal(epsilon).exp() * (1 + _DECIMAL_SLACK)
        ctx.rounding = decimal.ROUND_FLOOR
        low_ratio = Decimal(ratio.numerator) / Decimal(ratio.denominator)
        return high <= low_ratio * (1 + Decimal(relative))


def _tight(epsilon: float) -> float:
    """Relative excess of e^ε over the ratio a rounded-up claim may carry: the 2^-50 certification slack plus 4 ulps."""
    return 2.0**-49 + 4 * math.ulp(epsilon)


# -- item 1: RAPPOR's ε₁ and ε∞ round up ------------------------------------------

_PROBABILITY = st.fractions(min_value=0, max_value=1, max_denominator=10**9)


@given(f=_PROBABILITY, p=_PROBABILITY, q=_PROBABILITY, h=st.integers(1, 8),
       encoding=st.sampled_from(["bloom", "boolean"]))
def test_rappor_epsilons_are_certified_upper_bounds(f, p, q, h, encoding):
    """exp(ε₁) >= the exact single-report ratio and exp(ε∞) >= the exact PRR ratio, tight to a few ulps."""
    assume(f < 1 and p < q)
    options = {"num_bits": 16, "num_hashes": h} if encoding == "bloom" else {"encoding": "boolean"}
    try:
        spec = ldp.Rappor(f=f, p=p, q=q, **options)
    except ParameterError:  # a certain bit: no single-report privacy
        assume(False)
    assert exp_certainly_at_least(spec.epsilon_one, spec.single_report_ratio)
    assert exp_within(spec.epsilon_one, spec.single_report_ratio, _tight(spec.epsilon_one))
    if spec.f > 0:
        assert exp_certainly_at_least(spec.epsilon_inf, spec.permanent_ratio)
        assert exp_within(spec.epsilon_inf, spec.permanent_ratio, _tight(spec.epsilon_inf))


@pytest.mark.parametrize("spec", [
    ldp.Rappor(num_bits=128, num_hashes=2, num_cohorts=64, f=0.5, p=0.5, q=0.75),
    ldp.Rappor(num_bits=16, num_hashes=2, f="0.45", p="0.39", q="0.61", hash="md5"),
    ldp.Rappor.basic(("a", "b", "c"), f="1/4", p="1/4", q="3/4"),
    ldp.Rappor.boolean(f="1/3", p="1/7", q="5/7"),
])
def test_rappor_epsilons_round_up_on_fixed_examples(spec):
    """ln 81 (README's ε∞) and friends: the nearest double of ln(ratio) can sit below it; the claim never does."""
    assert exp_certainly_at_least(spec.epsilon_one, spec.single_report_ratio)
    assert exp_certainly_at_least(spec.epsilon_inf, spec.permanent_ratio)
