"""Cross-language vectors of the sketches CMS and HCMS (their hash functions: the ``sketch`` section)."""

from __future__ import annotations

from . import Case, Invalid

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

#: Sketch layouts Python refuses (``SketchSpec.__init__``).
INVALID = (
    Invalid("cms/k-zero", "cms/str", {"k": 0}),
    Invalid("cms/k-above", "cms/str", {"k": (1 << 16) + 1}),
    Invalid("cms/m-one", "cms/str", {"m": 1}),
    Invalid("cms/m-above", "cms/str", {"m": (1 << 20) + 1}),
    Invalid("cms/counters", "cms/str", {"k": 1 << 16, "m": 512}, match="counters"),
    Invalid("cms/hashes", "cms/str", {"k": 2048, "m": 2, "domain": 32769}, match="hash evaluations"),
    Invalid("cms/domain", "cms/str", {"domain": 65537}, match="a domain of 65,537 values"),
    Invalid("cms/salt-negative", "cms/str", {"salt": -1}),
    Invalid("cms/salt-above", "cms/str", {"salt": (1 << 32) - 15}),
    Invalid("hcms/m-not-power", "hcms/int", {"m": 24}, match="m a power of 2"),
    Invalid("hcms/k-zero", "hcms/int", {"k": 0}),
)
