"""Cross-language vectors of the prefix-hashing heavy hitters: PEM and TreeHist."""

from __future__ import annotations

from . import Case

CASES = (
    Case("pem/default", {"mechanism": "pem", "epsilon": 2.0, "max_length": 8}, values=["the", "", "café"]),
    Case(
        "pem/non-ascii",
        {"mechanism": "pem", "epsilon": 1.0, "max_length": 12, "top_k": 3, "eta": 3},
        values=["日本語", "😀", "naïve café"],
    ),
    Case(
        "treehist/default",
        {"mechanism": "treehist", "epsilon": 2.0, "max_length": 4},
        values=["hey", "é", ""],
    ),
)
