"""Cross-language vectors of Hadamard response."""

from __future__ import annotations

from . import Case

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
