"""Cross-language vectors of LOLOHA, longitudinal local hashing."""

from __future__ import annotations

from . import NON_ASCII, SECRETS, Case, Invalid

CASES = (
    Case(
        "loloha/default",
        {"mechanism": "loloha", "domain": list(range(30)), "epsilon": 1.0},
        values=[0, 29, "7"],
        client=(SECRETS[1], 0),
    ),
    Case(
        "loloha/bi",
        {
            "mechanism": "loloha",
            "domain": ["a", "b", "c"],
            "epsilon": 0.5,
            "epsilon_inf": 2.0,
            "g": 2,
            "pool_size": 64,
        },
        values=["a", "c"],
        client=(SECRETS[2], 0),
    ),
    Case(
        "loloha/non-ascii",
        {"mechanism": "loloha", "domain": NON_ASCII, "epsilon": 2.0, "epsilon_inf": 3.0, "pool_size": 1000},
        values=["é", "😀"],
        client=(SECRETS[0], 0),
    ),
)

#: LOLOHA parameters Python refuses (``LOLOHA.__init__``).
INVALID = (
    Invalid("loloha/epsilon-inf-negative", "loloha/default", {"epsilon_inf": -1.0}),
    Invalid(
        "loloha/epsilon-inf-above",
        "loloha/default",
        {"epsilon_inf": 24.0},
        match="epsilon_inf=24 is above 23",
    ),
    Invalid("loloha/g-one", "loloha/default", {"g": 1}),
    Invalid("loloha/pool-zero", "loloha/default", {"pool_size": 0}),
    Invalid("loloha/pool-above", "loloha/default", {"pool_size": (1 << 20) + 1}),
    Invalid("loloha/table", "loloha/default", {"pool_size": 1 << 20, "g": 32}, match="pool_size x g"),
    Invalid("loloha/epsilon-inf", "loloha/default", {"epsilon_inf": 1.0}, match="epsilon_inf"),
    Invalid("loloha/p1-low", "loloha/default", {"p1": "1/4"}, match="p1 must exceed 1/g"),
)
