"""Cross-language vectors of the frequency oracles of ldp.specs.frequency: GRR, binary RR, SUE, OUE, OLH, BLH."""

from __future__ import annotations

from . import NON_ASCII, Case, Invalid

CASES = (
    Case("binary-rr/default", {"mechanism": "binary-rr", "epsilon": 1.0}, values=[0, 1, "1"]),
    Case(
        "binary-rr/strings",
        {"mechanism": "binary-rr", "domain": ["no", "yes"], "epsilon": 0.5},
        values=["yes", "no"],
    ),
    Case(
        "grr/int",
        {"mechanism": "grr", "domain": [0, 1, 2, 3, 4, 5, 6, 7], "epsilon": 1.0},
        values=[0, 5, "7"],
    ),
    Case(
        "grr/str",
        {"mechanism": "grr", "domain": ["red", "green", "blue"], "epsilon": 2.0},
        values=["red", "blue"],
    ),
    Case(
        "grr/non-ascii",
        {"mechanism": "grr", "domain": ["", *NON_ASCII, "line\u2028break"], "epsilon": 3.5},
        values=["", "😀", "line\u2028break"],
    ),
    Case("grr/big-int", {"mechanism": "grr", "domain": [-(2**63), 0, 2**53 + 1, 2**64], "epsilon": 1.0}),
    Case(
        "grr/explicit-p",
        {"mechanism": "grr", "domain": [10, 20, 30], "epsilon": 1.0986122887, "p": "0.6"},
        values=[20],
    ),
    Case("sue/int", {"mechanism": "sue", "domain": list(range(10)), "epsilon": 1.0}, values=[0, 9]),
    Case("sue/non-ascii", {"mechanism": "sue", "domain": NON_ASCII, "epsilon": 0.25}, values=["é", "Ωmega"]),
    Case(
        "oue/str",
        {"mechanism": "oue", "domain": [f"v{i}" for i in range(20)], "epsilon": 1.0},
        values=["v0", "v19"],
    ),
    Case("oue/int", {"mechanism": "oue", "domain": [-3, 0, 7, 1000], "epsilon": 4.0}, values=[-3, "1000"]),
    Case(
        "olh/default-g",
        {"mechanism": "olh", "domain": list(range(100)), "epsilon": 1.0},
        values=[0, 42, "99"],
    ),
    Case(
        "olh/large-eps",
        {"mechanism": "olh", "domain": ["a", "b", "c", "d", "é"], "epsilon": 5.0},
        values=["a", "é"],
    ),
    Case(
        "olh/explicit-g",
        {"mechanism": "olh", "domain": list(range(50)), "epsilon": 2.0, "g": 7},
        values=[1, 49],
    ),
    Case(
        "blh/str",
        {"mechanism": "blh", "domain": ["x", "y", "z", "日本語"], "epsilon": 1.0},
        values=["x", "日本語"],
    ),
)

#: Frequency-oracle parameters Python refuses (``DomainSpec`` and each oracle's constructor).
INVALID = (
    Invalid("sue/domain-one", "sue/int", {"domain": [0]}, match="at least 2 values, got 1"),
    Invalid("grr/epsilon-zero", "grr/str", {"epsilon": 0.0}, match="epsilon must be a finite number > 0"),
    Invalid("grr/epsilon-above", "grr/str", {"epsilon": 30.0}, match="epsilon=30 is above 23"),
    Invalid("blh/g-negative", "blh/str", {"g": -1}, match="g = 2 by definition"),
    Invalid("grr/domain-one", "grr/str", {"domain": ["red"]}, match="at least 2 values"),
    Invalid("grr/domain-above", "grr/str", {"domain": (1 << 20) + 1}, match="a domain of 1,048,577 values"),
    Invalid("grr/p-low", "grr/str", {"p": "1/3"}, match="p must exceed 1/d"),
    Invalid("grr/p-one", "grr/str", {"p": "1"}),
    Invalid("binary-rr/domain-three", "binary-rr/default", {"domain": [0, 1, 2]}, match="exactly 2 values"),
    Invalid("sue/domain-above", "sue/int", {"domain": (1 << 18) + 1}, match="a domain of 262,145 values"),
    Invalid("sue/p-below-q", "sue/int", {"p": "1/4", "q": "1/2"}, match="p must exceed q"),
    Invalid("sue/q-zero", "sue/int", {"q": "0"}, match="q must be in (0, 1)"),
    Invalid("oue/p-one", "oue/int", {"p": "1"}, match="p must be in (0, 1)"),
    Invalid("olh/g-one", "olh/large-eps", {"g": 1}),
    Invalid("olh/g-above", "olh/large-eps", {"g": 2**31 - 1}),
    Invalid("olh/p-low", "olh/large-eps", {"p": "1/149"}, match="p must exceed 1/g"),
    Invalid("blh/g-three", "blh/str", {"g": 3}, match="g = 2 by definition"),
)
