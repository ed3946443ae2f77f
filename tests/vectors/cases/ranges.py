"""Cross-language vectors of the range-query mechanisms: the hierarchy and the Haar wavelet."""

from __future__ import annotations

from . import Case, Invalid

CASES = (
    Case(
        "range-hierarchy/b2",
        {"mechanism": "range-hierarchy", "domain": list(range(10)), "epsilon": 1.0, "branching": 2},
        values=[0, 9, "5", 5],
    ),
    Case(
        "range-hierarchy/str",
        {"mechanism": "range-hierarchy", "domain": ["low", "mid", "high", "é", "😀"], "epsilon": 2.0},
        values=["low", "😀", "é"],
    ),
    Case(
        "range-haar/int",
        {"mechanism": "range-haar", "domain": list(range(10)), "epsilon": 1.0},
        values=[0, 9, "3", 3],
    ),
    Case(
        "range-haar/str",
        {"mechanism": "range-haar", "domain": ["low", "mid", "high"], "epsilon": 0.5},
        values=["low", "high"],
    ),
)

#: Range-query parameters Python refuses (``RangeHierarchy``, ``RangeHaar``).
INVALID = (
    Invalid("range-hierarchy/branching-one", "range-hierarchy/b2", {"branching": 1}),
    Invalid("range-hierarchy/branching-above", "range-hierarchy/b2", {"branching": 1025}),
    Invalid("range-hierarchy/leaves", "range-hierarchy/b2", {"domain": 4097}, match="padded leaves"),
    Invalid("range-hierarchy/p-below-q", "range-hierarchy/b2", {"p": "1/4"}, match="p must exceed q"),
    Invalid("range-haar/leaves", "range-haar/int", {"domain": 4097}, match="padded leaves"),
    Invalid("range-haar/p-half", "range-haar/int", {"p": "1/2"}, match="p must exceed 1/2"),
)
