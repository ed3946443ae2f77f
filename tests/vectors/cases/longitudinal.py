"""Cross-language vectors of the longitudinal chains: their memo is keyed by the client secret (cohort 0)."""

from __future__ import annotations

from . import NON_ASCII, SECRETS, Case, Invalid

CASES = (
    Case(
        "l-grr/str",
        {"mechanism": "l-grr", "domain": ["red", "green", "blue", "é"], "epsilon": 1.0},
        values=["red", "é", "red"],
        client=(SECRETS[1], 0),
    ),
    Case(
        "l-grr/eps-inf",
        {"mechanism": "l-grr", "domain": list(range(10)), "epsilon": 0.5, "epsilon_inf": 3.0},
        values=[0, "9", 9],
        client=(SECRETS[2], 0),
    ),
    Case(
        "l-osue/str",
        {"mechanism": "l-osue", "domain": [f"v{i}" for i in range(12)], "epsilon": 1.0},
        values=["v0", "v11", "v0"],
        client=(SECRETS[1], 0),
    ),
    Case(
        "l-oue/int",
        {"mechanism": "l-oue", "domain": [-3, 0, 7, 1000, 42], "epsilon": 0.5, "epsilon_inf": 2.0},
        values=[-3, "1000"],
        client=(SECRETS[2], 0),
    ),
    Case(
        "l-sue/non-ascii",
        {"mechanism": "l-sue", "domain": NON_ASCII, "epsilon": 1.0, "epsilon_inf": 4.0},
        values=["é", "😀", "é"],
        client=(SECRETS[1], 0),
    ),
)

#: Longitudinal chain parameters Python refuses (``LongitudinalSpec.__init__``).
INVALID = (
    Invalid("l-grr/epsilon-inf", "l-grr/str", {"epsilon_inf": 1.0}, match="epsilon_inf > epsilon"),
    Invalid("l-grr/p1-one", "l-grr/str", {"p1": "1"}, match="p1 must be in (0, 1)"),
    Invalid("l-grr/not-grr", "l-grr/str", {"q1": "1/10"}, match="l-grr: "),
    Invalid("l-osue/not-oue", "l-osue/str", {"q1": "1/2"}, match="the OUE round needs p1 = 1/2 > q1"),
    Invalid("l-oue/not-oue", "l-oue/int", {"p2": "3/4"}, match="l-oue: "),
    Invalid("l-sue/domain-above", "l-sue/non-ascii", {"domain": (1 << 18) + 1}, match="a domain of 262,145"),
)
