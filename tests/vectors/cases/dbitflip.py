"""Cross-language vectors of dBitFlip."""

from __future__ import annotations

from . import SECRETS, Case, Invalid

CASES = (
    Case(
        "dbitflip/d1",
        {"mechanism": "dbitflip", "domain": ["0-9", "10-99", "100+", "é", "😀"], "epsilon": 1.0},
        values=["0-9", "100+", "😀"],
        client=(SECRETS[1], 0),
    ),
    Case(
        "dbitflip/gamma",
        {"mechanism": "dbitflip", "domain": list(range(10)), "epsilon": 2.0, "d": 3, "gamma": "1/10"},
        values=[3, 6, "8", 0, 3],
        client=(SECRETS[2], 0),
    ),
    Case(
        "dbitflip/sue",
        {"mechanism": "dbitflip", "domain": ["a", "b", "c", "d"], "epsilon": 0.5, "d": 4},
        values=["a", "d"],
        client=(SECRETS[0], 0),
    ),
    Case(
        "dbitflip/wide",
        {"mechanism": "dbitflip", "domain": list(range(70)), "epsilon": 1.5, "d": 9, "gamma": "0.05"},
        values=[2, 25, "51", 0],
        client=(SECRETS[2], 0),
    ),
)

#: dBitFlip parameters Python refuses (``DBitFlip.__init__``).
INVALID = (
    Invalid("dbitflip/d-zero", "dbitflip/gamma", {"d": 0}),
    Invalid("dbitflip/d-above", "dbitflip/gamma", {"d": 11}),
    Invalid("dbitflip/gamma-half", "dbitflip/gamma", {"gamma": "1/2"}, match="gamma must be in [0, 1/2)"),
    Invalid("dbitflip/p-half", "dbitflip/d1", {"p": "1/2"}, match="p must exceed 1/2"),
    Invalid(
        "dbitflip/domain-above", "dbitflip/d1", {"domain": (1 << 18) + 1}, match="a domain of 262,145 values"
    ),
)
