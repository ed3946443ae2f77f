"""Cross-language vectors of the sketches CMS and HCMS (their hash functions: the ``sketch`` section)."""

from __future__ import annotations

from . import Case

CASES = (
    Case(
        "cms/str",
        {"mechanism": "cms", "domain": ["a", "b", "\u00e9"], "epsilon": 2.0, "k": 16, "m": 20, "salt": 7},
        values=["a", "\u00e9", "not-in-domain"],
    ),
    Case(
        "hcms/int",
        {"mechanism": "hcms", "domain": [0, 1, 2, 3, 4], "epsilon": 1.0, "k": 8, "m": 32},
        values=[0, "4", 3],
    ),
)
