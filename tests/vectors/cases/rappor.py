"""Cross-language vectors of RAPPOR: Bloom, basic and boolean encodings (permanent responses: section prr)."""

from __future__ import annotations

from . import SECRETS, Case, Invalid

CASES = (
    Case(
        "rappor/mmh3",
        {
            "mechanism": "rappor",
            "num_bits": 16,
            "num_hashes": 2,
            "num_cohorts": 4,
            "f": "1/2",
            "p": "1/4",
            "q": "3/4",
        },
        values=["hello", "日本語"],
        client=(SECRETS[1], 3),
    ),
    Case(
        "rappor/mmh3-wide",
        {
            "mechanism": "rappor",
            "num_bits": 100,
            "num_hashes": 3,
            "num_cohorts": 64,
            "f": 0.25,
            "p": 0.5,
            "q": 0.75,
        },
        values=["😀"],
        client=(SECRETS[2], 17),
    ),
    Case(
        "rappor/md5",
        {
            "mechanism": "rappor",
            "num_bits": 32,
            "num_hashes": 2,
            "num_cohorts": 64,
            "f": "0.5",
            "p": "0.5",
            "q": "0.75",
            "hash": "md5",
        },
        values=["hello", ""],
        client=(SECRETS[1], 5),
    ),
    Case(
        "rappor/md5-256",
        {
            "mechanism": "rappor",
            "num_bits": 256,
            "num_hashes": 16,
            "num_cohorts": 3,
            "f": "1/8",
            "p": "1/3",
            "q": "2/3",
            "hash": "md5",
        },
        values=["abc"],
        client=(SECRETS[0], 1),
    ),
    Case(
        "rappor/one-time",
        {
            "mechanism": "rappor",
            "num_bits": 8,
            "num_hashes": 2,
            "num_cohorts": 2,
            "f": 0,
            "p": "1/4",
            "q": "3/4",
        },
        values=["hello"],
        client=(SECRETS[1], 1),
    ),
    Case(
        "rappor/basic",
        {
            "mechanism": "rappor",
            "encoding": "basic",
            "domain": ["a", "é", 3, "😀"],
            "f": "1/4",
            "p": "1/4",
            "q": "3/4",
            "num_cohorts": 2,
        },
        values=["a", 3],
        client=(SECRETS[2], 1),
    ),
    Case(
        "rappor/boolean",
        {"mechanism": "rappor", "encoding": "boolean", "f": "1/2", "p": "1/4", "q": "3/4"},
        values=[True, "no"],
        client=(SECRETS[1], 0),
    ),
)

#: RAPPOR parameters Python refuses (``Rappor.__init__``).
INVALID = (
    Invalid("rappor/encoding", "rappor/mmh3", {"encoding": "unary"}, match="encoding must be one of"),
    Invalid("rappor/hash", "rappor/mmh3", {"hash": "sha1"}, match="hash must be one of"),
    Invalid("rappor/bloom-domain", "rappor/mmh3", {"domain": ["a", "b"]}, match="takes no domain"),
    Invalid("rappor/basic-num-bits", "rappor/basic", {"num_bits": 5}, match="num_bits = domain size"),
    Invalid("rappor/basic-num-hashes", "rappor/basic", {"num_hashes": 2}, match="num_hashes = 1"),
    Invalid("rappor/boolean-num-bits", "rappor/boolean", {"num_bits": 2}, match="num_bits = num_hashes = 1"),
    Invalid("rappor/f-one", "rappor/mmh3", {"f": "1"}, match="f must be in [0, 1)"),
    Invalid("rappor/p-not-below-q", "rappor/mmh3", {"p": "3/4", "q": "3/4"}, match="p < q"),
    Invalid("rappor/cohorts-zero", "rappor/mmh3", {"num_cohorts": 0}),
    Invalid("rappor/cohorts-above", "rappor/mmh3", {"num_cohorts": 2**32}),
    Invalid("rappor/bits-zero", "rappor/mmh3", {"num_bits": 0, "num_hashes": 1}),
    Invalid("rappor/bits-above", "rappor/mmh3", {"num_bits": (1 << 20) + 1}),
    Invalid("rappor/md5-bits-above", "rappor/md5", {"num_bits": 257}),
    Invalid("rappor/md5-hashes-above", "rappor/md5", {"num_hashes": 17}),
    Invalid(
        "rappor/hashes-above-bits", "rappor/mmh3", {"num_bits": 2, "num_hashes": 3}, match="cannot exceed"
    ),
    Invalid("rappor/counters", "rappor/mmh3", {"num_cohorts": 1 << 20, "num_bits": 32}, match="counters"),
    Invalid(
        "rappor/basic-domain-one", "rappor/basic", {"domain": ["a"], "num_bits": 1}, match="at least 2 values"
    ),
)
