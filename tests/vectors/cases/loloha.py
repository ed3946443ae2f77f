"""Cross-language vectors of LOLOHA, longitudinal local hashing."""

from __future__ import annotations

from . import NON_ASCII, SECRETS, Case

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
