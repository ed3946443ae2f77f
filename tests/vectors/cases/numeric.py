"""Cross-language vectors of the numeric mechanisms (their sampling data: the ``numeric`` section)."""

from __future__ import annotations

from . import Case, Invalid

CASES = (
    Case("duchi/default", {"mechanism": "duchi", "epsilon": 1.0}, values=[-1.0, 0.0, 0.3, 1, 7.5]),
    Case(
        "duchi/range",
        {"mechanism": "duchi", "epsilon": 0.5, "low": 0, "high": 100},
        values=[0, 12.5, 100, -1],
    ),
    Case(
        "stochastic-rounding/default",
        {"mechanism": "stochastic-rounding", "epsilon": 1.0},
        values=[0.0, 0.25, 1.0],
    ),
    Case(
        "stochastic-rounding/range",
        {"mechanism": "stochastic-rounding", "epsilon": 2.0, "low": -5, "high": 5},
        values=[-5, 1.1, 10],
    ),
    Case(
        "piecewise/grid8", {"mechanism": "piecewise", "epsilon": 1.0, "grid": 8}, values=[-1.0, 0.0, 0.3, 1.0]
    ),
    Case(
        "piecewise/default",
        {"mechanism": "piecewise", "epsilon": 2.0, "low": 0, "high": 10},
        values=[0, 3.3, 10, 11],
    ),
    Case("hybrid/alpha0", {"mechanism": "hybrid", "epsilon": 0.5, "grid": 4}, values=[0.0, 0.6]),
    Case("hybrid/grid8", {"mechanism": "hybrid", "epsilon": 2.0, "grid": 8}, values=[-0.9, 0.0, 0.5, 1.0]),
    Case("laplace/grid8", {"mechanism": "laplace", "epsilon": 1.0, "grid": 8}, values=[-1.0, 0.1, 1.0]),
    Case("laplace/default", {"mechanism": "laplace", "epsilon": 1.0}, values=[0.0, 0.77]),
    Case(
        "gaussian/grid8",
        {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-6, "grid": 8},
        values=[-1.0, 0.4],
    ),
    Case(
        "gaussian/default",
        {"mechanism": "gaussian", "epsilon": 2.0, "delta": 1e-5, "low": 0, "high": 1},
        values=[0.0, 0.5, 1.0],
    ),
)

#: Numeric parameters Python refuses (``NumericSpec``: range, grid, delta).
INVALID = (
    Invalid(
        "duchi/value-scale", "duchi/default", {"low": -1e300, "high": 1e300}, match="too wide at epsilon"
    ),
    Invalid(
        "stochastic-rounding/value-scale",
        "stochastic-rounding/range",
        {"low": 0.0, "high": 1e150},
        match="too wide at epsilon",
    ),
    Invalid("duchi/low-not-below-high", "duchi/range", {"low": 100.0}, match="need low < high"),
    Invalid("duchi/too-wide", "duchi/default", {"low": -1.7e308, "high": 1.7e308}, match="too wide"),
    Invalid(
        "stochastic-rounding/low-above-high", "stochastic-rounding/default", {"low": 2.0}, match="low < high"
    ),
    Invalid("piecewise/grid-zero", "piecewise/grid8", {"grid": 0}),
    Invalid("piecewise/grid-above", "piecewise/grid8", {"grid": 1025}),
    Invalid("piecewise/too-narrow", "piecewise/grid8", {"low": 0.0, "high": 5e-324}, match="too narrow"),
    Invalid("hybrid/low-not-below-high", "hybrid/grid8", {"high": -1.0}, match="low < high"),
    Invalid("laplace/grid-above", "laplace/grid8", {"grid": 2048}),
    Invalid("gaussian/delta-zero", "gaussian/grid8", {"delta": 0.0}, match="delta must be in (0, 1)"),
    Invalid("gaussian/delta-one", "gaussian/grid8", {"delta": 1.0}, match="delta must be in (0, 1)"),
)
