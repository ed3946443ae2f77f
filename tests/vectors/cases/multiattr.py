"""Cross-language vectors of multi-attribute records: SMP (k = 1 and k = 2), SPL with numeric attributes, RS+FD[GRR].

Each attribute is held calibrated (the client never calibrates), GRR first.
"""

from __future__ import annotations

from ldp.specs.multiattr import MultiAttribute

from . import Case

CASES = (
    Case(
        "multi-attribute/smp",
        MultiAttribute(
            [
                {"name": "os", "mechanism": "grr", "domain": ["linux", "mac", "win", "\u00e9"]},
                {"name": "browser", "mechanism": "oue", "domain": ["ff", "chrome"]},
                {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100},
            ],
            1.0,
        ).to_dict(),
    ),
    Case(
        "multi-attribute/cat",
        MultiAttribute(
            [
                {"name": "os", "mechanism": "grr", "domain": ["linux", "mac", "\u00e9"]},
                {"name": "browser", "mechanism": "oue", "domain": ["ff", "chrome", "safari"]},
                {"name": "page", "mechanism": "olh", "domain": list(range(10))},
            ],
            6.0,
            sample=2,
        ).to_dict(),
        values=[
            {"os": "linux", "browser": "ff", "page": 3},
            ["\u00e9", "safari", "9"],
            {"page": 0, "os": "mac", "browser": "chrome", "extra": 1},
        ],
    ),
    Case(
        "multi-attribute/numeric",
        MultiAttribute(
            [
                {"name": "os", "mechanism": "grr", "domain": ["linux", "mac", "\u00e9"]},
                {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100, "grid": 16},
                {"name": "kb", "mechanism": "hybrid", "low": -1, "high": 1, "grid": 8},
                {"name": "load", "mechanism": "duchi", "low": 0, "high": 1},
            ],
            4.0,
            method="spl",
        ).to_dict(),
        values=[
            {"os": "linux", "ms": 37.5, "kb": -0.25, "load": 0.9},
            ["\u00e9", 250, 0.5, 0],
            {"load": 1, "kb": 1, "ms": -3.0, "os": "mac"},
        ],
    ),
    Case(
        "multi-attribute/rsfd",
        MultiAttribute.rsfd_amplified(
            [{"name": f"g{i}", "mechanism": "grr", "domain": ["a", "b", "c"]} for i in range(3)], 1.0
        ).to_dict(),
        values=[["a", "b", "c"], {"g0": "c", "g1": "c", "g2": "a"}],
    ),
)
