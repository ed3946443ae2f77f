"""Cross-language vectors of Hadamard response."""

from __future__ import annotations

from . import Case, Invalid

CASES = (
    Case(
        "hr/high-privacy",
        {"mechanism": "hr", "domain": ["a", "b", "c", "d", "é"], "epsilon": 0.5},
        values=["a", "é", "c"],
    ),
    Case("hr/blocks", {"mechanism": "hr", "domain": list(range(40)), "epsilon": 2.5}, values=[0, 17, "39"]),
    Case(
        "hr/one-per-block",
        {"mechanism": "hr", "domain": [-3, 0, 7, 1000, 2**53 + 1], "epsilon": 4.0},
        values=[-3, "1000", "9007199254740993"],
    ),
)

#: Hadamard response parameters Python refuses (``HadamardResponse.__init__``).
INVALID = (
    Invalid("hr/domain-one", "hr/blocks", {"domain": [0], "blocks": 1}, match="at least 2 values, got 1"),
    Invalid("hr/blocks-zero", "hr/blocks", {"blocks": 0}),
    Invalid("hr/blocks-not-power", "hr/blocks", {"blocks": 6}, match="power of two"),
    Invalid("hr/blocks-above-2d", "hr/high-privacy", {"blocks": 16}, match="at most 2d"),
    Invalid("hr/p-low", "hr/blocks", {"p": "1/16"}, match="p must exceed 1/(2B)"),
)
