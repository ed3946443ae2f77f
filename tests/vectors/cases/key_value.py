"""Cross-language vectors of key-value data: PCKV-UE, PCKV-GRR and PrivKVM."""

from __future__ import annotations

from . import Case, Invalid

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
    Case(
        "pckv-ue/ell2",
        {"mechanism": "pckv-ue", "domain": ["a", "b", "c", "d", "e", "f", "g"], "epsilon": 1.0, "ell": 2},
        values=[{"a": 0.5}, {}, {"b": -1, "g": 0.25}, [["c", 1]], {"a": 0.1, "b": -0.7, "f": 1}],
    ),
    Case(
        "pckv-ue/default",
        {"mechanism": "pckv-ue", "domain": ["x", "y", "z"], "epsilon": 3.0},
        values=[{"x": -0.3}, {}, '{"z": 1}'],
    ),
)

#: Key-value parameters Python refuses (``KeyValueSpec`` and each mechanism's constructor).
INVALID = (
    Invalid("pckv-ue/p-zero", "pckv-ue/default", {"p": "0"}, match="p > 1/2"),
    Invalid("privkvm/p2-one", "privkvm/default", {"p2": "1"}),
    Invalid("pckv-ue/one-key", "pckv-ue/default", {"domain": ["x"]}, match="keys"),
    Invalid("pckv-ue/keys-above", "pckv-ue/default", {"domain": 65537}, match="keys"),
    Invalid("pckv-ue/ell-zero", "pckv-ue/default", {"ell": 0}),
    Invalid("pckv-ue/a-not-above-b", "pckv-ue/default", {"b": "1/2"}, match="a > b"),
    Invalid("pckv-grr/b", "pckv-grr/ell2", {"b": "1/100"}, match="b must be (1 - a)/(d + ell - 1)"),
    Invalid("privkvm/ell-two", "privkvm/default", {"ell": 2}, match="ell must be 1"),
    Invalid("privkvm/p1-half", "privkvm/default", {"p1": "1/2"}, match="p1 > 1/2"),
)
