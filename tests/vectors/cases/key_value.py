"""Cross-language vectors of key-value data: PCKV-GRR and PrivKVM (PCKV-UE has no TypeScript encoder yet)."""

from __future__ import annotations

from . import Case

CASES = (
    Case(
        "pckv-grr/ell2",
        {"mechanism": "pckv-grr", "domain": ["a", "b", "c", "d"], "epsilon": 2.0, "ell": 2},
        values=[{"a": 0.5}, {}, {"b": -1, "d": 0.25}, [["c", 1]], {"a": 0.1, "b": -0.7}],
    ),
    Case(
        "privkvm/default",
        {"mechanism": "privkvm", "domain": ["a", "b", "c"], "epsilon": 1.0},
        values=[{"a": 0.5}, {}, {"b": -1, "c": 0.25}, {"a": 0.3, "b": 1, "c": -0.1}],
    ),
)
