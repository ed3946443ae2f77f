"""Cross-language vectors of multi-attribute records: SMP (k = 1 and k = 2), SPL with numeric attributes, RS+FD
over GRR, SUE-z and OUE-r (the paper's calibration; -r lowered to meet the attribute-level ε).

Each attribute is held calibrated (the client never calibrates), GRR first.
"""

from __future__ import annotations

from ldp.specs.multiattr import MultiAttribute

from . import Case, Invalid

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
    Case(
        "multi-attribute/rsfd-sue-z",
        MultiAttribute.rsfd_amplified(
            [
                {"name": "os", "mechanism": "sue", "domain": ["linux", "mac", "\u00e9"]},
                {"name": "browser", "mechanism": "sue", "domain": ["ff", "chrome", "safari", "edge"]},
            ],
            1.0,
            method="rsfd-sue-z",
        ).to_dict(),
        values=[["linux", "ff"], {"os": "\u00e9", "browser": "edge"}, ["mac", "chrome"]],
    ),
    Case(
        "multi-attribute/rsfd-oue-r",
        MultiAttribute.rsfd_amplified(
            [
                {"name": "os", "mechanism": "oue", "domain": ["linux", "mac", "\u00e9"]},
                {"name": "page", "mechanism": "oue", "domain": list(range(10))},
                {"name": "tier", "mechanism": "oue", "domain": ["free", "pro"]},
            ],
            1.0,
            method="rsfd-oue-r",
        ).to_dict(),
        values=[["linux", 3, "pro"], {"os": "mac", "page": 9, "tier": "free"}, ["\u00e9", "0", "free"]],
    ),
)

_CAT = CASES[1].spec["attributes"]  # grr os, oue browser, olh page: 3 attributes at epsilon 3 each
_RSFD = CASES[3].spec["attributes"]
_GAUSSIAN = {"name": "noise", "mechanism": "gaussian", "epsilon": 3.0, "delta": 1e-6, "grid": 8}

#: Records Python refuses (``MultiAttribute.__init__``): the record's parameters, or one attribute's spec.
INVALID = (
    Invalid(
        "multi-attribute/method", "multi-attribute/cat", {"method": "all"}, match="method must be one of"
    ),
    Invalid("multi-attribute/sample-zero", "multi-attribute/cat", {"sample": 0}),
    Invalid("multi-attribute/sample-above", "multi-attribute/cat", {"sample": 4}, match="cannot exceed"),
    Invalid(
        "multi-attribute/spl-sample", "multi-attribute/numeric", {"sample": 2}, match="spl reports every"
    ),
    Invalid(
        "multi-attribute/rsfd-sample", "multi-attribute/rsfd", {"sample": 2}, match="exactly one attribute"
    ),
    Invalid(
        "multi-attribute/one-attribute",
        "multi-attribute/cat",
        {"attributes": _CAT[:1]},
        match="two attributes",
    ),
    Invalid(
        "multi-attribute/names",
        "multi-attribute/cat",
        {"attributes": [_CAT[0], {**_CAT[1], "name": "os"}, _CAT[2]]},
        match="names must be distinct",
    ),
    Invalid(
        "multi-attribute/attribute-p",
        "multi-attribute/cat",
        {"attributes": [{**_CAT[0], "p": "1/4"}, *_CAT[1:]]},
        match="attribute 'os': grr: p must exceed 1/d",
    ),
    Invalid(
        "multi-attribute/attribute-domain",
        "multi-attribute/cat",
        {"attributes": [{**_CAT[0], "domain": ["linux"]}, *_CAT[1:]]},
        match="attribute 'os': grr needs a domain of at least 2 values",
    ),
    Invalid(
        "multi-attribute/gaussian",
        "multi-attribute/cat",
        {"attributes": [*_CAT[:2], _GAUSSIAN]},
        match="must be a pure epsilon-LDP mechanism",
    ),
    Invalid(
        "multi-attribute/rsfd-oue",
        "multi-attribute/rsfd",
        {"attributes": [*_RSFD[:2], {**_CAT[1], "name": "g2"}]},
        match="rsfd-grr takes GRR attributes",
    ),
    Invalid(
        "multi-attribute/rsfd-sue-grr",
        "multi-attribute/rsfd-sue-z",
        {"attributes": [CASES[4].spec["attributes"][0], {**_RSFD[0], "name": "browser"}]},
        match="rsfd-sue-z takes SUE attributes",
    ),
)
