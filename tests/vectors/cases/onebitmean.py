"""Cross-language vectors of 1BitMean, plain and with alpha-point rounding."""

from __future__ import annotations

from . import SECRETS, Case, Invalid

CASES = (
    Case(
        "onebitmean/plain",
        {"mechanism": "onebitmean", "epsilon": 1.0, "low": 0, "high": 3600},
        values=[0, 1800.5, 3600, 4000, -1],
    ),
    Case(
        "onebitmean/alpha",
        {"mechanism": "onebitmean", "epsilon": 1.0, "high": 100, "rounding": "alpha", "grid": 8},
        values=[0, 37.5, 37.5, 100, 62.2, 12],
        client=(SECRETS[2], 0),
    ),
    Case(
        "onebitmean/alpha-gamma",
        {
            "mechanism": "onebitmean",
            "epsilon": 0.7884573603642712,  # ln(11/5), rounded up: k = 1/8 + (3/4)(3/4) = 11/16
            "rounding": "alpha",
            "p": "3/4",
            "gamma": "1/8",
        },
        values=[0.0, 0.5, 0.5, 0.99],
        client=(SECRETS[1], 0),
    ),
)

#: 1BitMean parameters Python refuses (``OneBitMean.__init__``).
INVALID = (
    Invalid("onebitmean/value-scale", "onebitmean/plain", {"high": 1e200}, match="too wide at epsilon"),
    Invalid("onebitmean/low-not-below-high", "onebitmean/plain", {"low": 3600.0}, match="low < high"),
    Invalid(
        "onebitmean/rounding", "onebitmean/plain", {"rounding": "floor"}, match="rounding must be one of"
    ),
    Invalid(
        "onebitmean/grid-plain", "onebitmean/plain", {"grid": 8}, match="grid applies with rounding='alpha'"
    ),
    Invalid("onebitmean/gamma-plain", "onebitmean/plain", {"gamma": "1/8"}, match="gamma"),
    Invalid("onebitmean/grid-zero", "onebitmean/alpha", {"grid": 0}),
    Invalid("onebitmean/grid-above", "onebitmean/alpha", {"grid": 1025}),
    Invalid(
        "onebitmean/gamma-half", "onebitmean/alpha-gamma", {"gamma": "1/2"}, match="gamma must be below 1/2"
    ),
    Invalid("onebitmean/p-half", "onebitmean/alpha", {"p": "1/2"}, match="p must exceed 1/2"),
    Invalid("onebitmean/too-narrow", "onebitmean/alpha", {"low": 0.0, "high": 5e-324}, match="too narrow"),
)
