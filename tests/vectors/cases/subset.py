"""Cross-language vectors of subset selection."""

from __future__ import annotations

from . import Case

CASES = (
    Case(
        "ss/str",
        {"mechanism": "ss", "domain": [f"s{i}" for i in range(10)], "epsilon": 1.0},
        values=["s0", "s9"],
    ),
    Case(
        "ss/omega",
        {"mechanism": "ss", "domain": list(range(70)), "epsilon": 0.5, "omega": 20},
        values=[0, 35, "69"],
    ),
    Case("ss/omega-1", {"mechanism": "ss", "domain": ["a", "é", 3], "epsilon": 2.0}, values=["é", 3]),
)
