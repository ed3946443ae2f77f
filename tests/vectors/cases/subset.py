"""Cross-language vectors of subset selection."""

from __future__ import annotations

from . import Case, Invalid

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

#: Subset-selection parameters Python refuses (``SubsetSelection.__init__``).
INVALID = (
    Invalid("ss/omega-zero", "ss/str", {"omega": 0}),
    Invalid("ss/omega-d", "ss/str", {"omega": 10}),
    Invalid("ss/p-low", "ss/str", {"p": "3/10"}, match="p must exceed omega/d"),
    Invalid("ss/domain-above", "ss/str", {"domain": (1 << 18) + 1}, match="a domain of 262,145 values"),
)
