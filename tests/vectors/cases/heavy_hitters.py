"""Cross-language vectors of the prefix-hashing heavy hitters: PEM and TreeHist."""

from __future__ import annotations

from . import Case, Invalid

CASES = (
    Case("pem/default", {"mechanism": "pem", "epsilon": 2.0, "max_length": 8}, values=["the", "", "café"]),
    Case(
        "pem/non-ascii",
        {"mechanism": "pem", "epsilon": 1.0, "max_length": 12, "top_k": 3, "eta": 3},
        values=["日本語", "😀", "naïve café"],
    ),
    Case(
        "treehist/default",
        {"mechanism": "treehist", "epsilon": 2.0, "max_length": 4},
        values=["hey", "é", ""],
    ),
)

#: PEM and TreeHist parameters Python refuses (``HeavyHitterSpec._set_common``, ``PEM``, ``TreeHist``).
INVALID = (
    Invalid("pem/max-length-zero", "pem/default", {"max_length": 0}),
    Invalid("pem/max-length-above", "pem/default", {"max_length": 257}),
    Invalid("pem/top-k-zero", "pem/default", {"top_k": 0}),
    Invalid("pem/top-k-above", "pem/default", {"top_k": 4097}),
    Invalid("pem/top-k-bits", "pem/default", {"max_length": 1, "top_k": 256}, match="must be below 2^m"),
    Invalid("pem/eta-zero", "pem/default", {"eta": 0}),
    Invalid("pem/eta-above", "pem/default", {"eta": 13}),
    Invalid(
        "pem/top-k-candidates", "pem/default", {"top_k": 4096, "eta": 9, "width": 4096}, match="top_k * 2^eta"
    ),
    Invalid("pem/width-below-top-k", "pem/default", {"width": 9}),
    Invalid("pem/width-candidates", "pem/default", {"width": 1 << 17}, match="width * 2^eta"),
    Invalid("pem/g-one", "pem/default", {"g": 1}),
    Invalid("treehist/max-length-zero", "treehist/default", {"max_length": 0}),
    Invalid(
        "treehist/top-k-bits", "treehist/default", {"max_length": 1, "top_k": 256}, match="must be below 2^m"
    ),
    Invalid("treehist/width-zero", "treehist/default", {"width": 0}),
    Invalid("treehist/width-above", "treehist/default", {"width": (1 << 16) + 1}),
    Invalid("treehist/beta-zero", "treehist/default", {"beta": 0.0}),
    Invalid("treehist/beta-one", "treehist/default", {"beta": 1.0}),
)
