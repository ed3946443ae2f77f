"""Write (or check) the cross-language test vectors ``tests/vectors/vectors.json`` and ``numeric_tables.json``.

Every expected value in the file is computed here by the library itself
(specs, hashing, samplers, encoders, reports); only the *inputs* are fixed:
spec parameters, values, client secrets, cohorts and the random bytes fed to
the samplers. The random bytes are SHAKE-256 streams of fixed labels, or
hand-made prefixes that force a rejection or a long comparison. The specs and
the values encoded under them are in ``tests/vectors/cases/``, one module per
mechanism family, found by listing the folder: a new family's vectors are a
new module there.

Usage::

    python tests/vectors/make_vectors.py           # rewrite vectors.json and numeric_tables.json
    python tests/vectors/make_vectors.py --check   # exit 1 when either is stale

``tests/vectors/README.md`` explains each section for an implementer in
another language; ``tests/js/test_vectors.py`` fails when the file is stale or a
registered mechanism has no vectors.

How the encoders are driven by fixed bytes
    No library code is changed for this. The client's randomness has exactly
    two entry points: ``os.urandom`` (the bit-sliced lane sampler's
    ``urandom_source``) and :mod:`secrets` (``randbelow``, ``randbits``), which
    reads ``random._urandom`` through :class:`random.SystemRandom`. While a
    vector is generated both are replaced by one deterministic stream
    (:func:`fixed_csprng`), so the unmodified encoders consume it in their
    real order. Outside such blocks, while the vectors are built, both entry
    points raise (:func:`no_csprng`), so no vector can depend on real randomness.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import importlib
import importlib.util
import json
import math
import os
import pkgutil
import random
import secrets
import struct
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import mmh3

from ldp.client import encoders as client_encoders
from ldp.client.encoders import make_encoder
from ldp.client.report_bits import BitReader, KnuthYao, reading_from, uniform_subset
from ldp.client.report_bits import sample_lanes as run_lanes
from ldp.client.sampling import PRFStream, binary_digits, lanes_to_packed, sample_lanes
from ldp.client.state import ClientState
from ldp.errors import BudgetExceededError, ParameterError, SpecError
from ldp.hashing import (
    LH_PRIME,
    LH_SEED_SPACE,
    bloom_positions,
    lh_bucket,
    lh_coefficients,
    lh_collision_probability,
    value_bytes,
)
from ldp.numeric_wire import has_table
from ldp.numeric_wire import numeric_table as wire_table
from ldp.privacy.budget import Budget, PrivacyLedger
from ldp.privacy.composition import (
    heterogeneous_epsilon,
)  # loads NumPy's random (reads the OS CSPRNG) here, not while vectors are made
from ldp.privacy.spending import committed_epsilon, spent_epsilon
from ldp.registry import BUILTIN_MECHANISMS
from ldp.report import Report, pack_bits, unpack_bits
from ldp.specs import Rappor, Spec, spec_from_dict
from ldp.specs.multiattr import MultiAttribute
from ldp.specs.numeric import NumericSpec
from ldp.specs.sketch import SketchSpec

#: Version of the layout of vectors.json (bump when a section changes shape).
VECTORS_FORMAT = 1
HERE = Path(__file__).resolve().parent
VECTORS_PATH = HERE / "vectors.json"
TABLES_PATH = HERE / "numeric_tables.json"
CASES_DIR = HERE / "cases"


def _cases_package() -> ModuleType:
    """The package tests/vectors/cases, imported from its path (tests/ is not a package) once per process."""
    name = "ldp_vector_cases"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, CASES_DIR / "__init__.py", submodule_search_locations=[str(CASES_DIR)]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_CASES = _cases_package()
Case, Invalid = _CASES.Case, _CASES.Invalid
NON_ASCII, SECRETS, stream_bytes = _CASES.NON_ASCII, _CASES.SECRETS, _CASES.stream_bytes

#: Tables with at most this many noise weights are written in full; larger ones as a digest.
FULL_TABLE_LIMIT = 600


# -- deterministic byte streams ------------------------------------------------------------


class ByteStream:
    """A byte source that hands out ``data`` in order and records every read."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0
        self.reads: list[int] = []

    def __call__(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise RuntimeError(f"vector byte stream exhausted ({len(self.data)} bytes, {end} wanted)")
        out = self.data[self.pos : end]
        self.pos = end
        self.reads.append(n)
        return out

    @property
    def consumed(self) -> bytes:
        """The bytes read so far."""
        return self.data[: self.pos]


def _refuse(n: int) -> bytes:
    raise RuntimeError("the CSPRNG was read outside a fixed_csprng block while making vectors")


@contextlib.contextmanager
def _csprng(source: Callable[[int], bytes]) -> Iterator[None]:
    """Make ``os.urandom`` and ``secrets`` (via ``random._urandom``) read ``source`` instead of the OS."""
    saved = os.urandom, random._urandom  # type: ignore[attr-defined]
    os.urandom = source
    random._urandom = source  # type: ignore[attr-defined]
    try:
        yield
    finally:
        os.urandom, random._urandom = saved  # type: ignore[attr-defined]


@contextlib.contextmanager
def fixed_csprng(stream: ByteStream) -> Iterator[None]:
    """Within the block, the client's CSPRNG reads are served from ``stream``.

    The per-report samplers' bit reader starts afresh on ``stream`` (one
    byte a read), so a case's bytes are exactly those its draws used.
    """
    with _csprng(stream), reading_from(stream):
        yield


def no_csprng() -> contextlib.AbstractContextManager[None]:
    """Within the block, reading the CSPRNG raises (vectors must not depend on real randomness)."""
    return _csprng(_refuse)


def _fraction(x: Fraction) -> str:
    return str(Fraction(x))


def _big(n: int) -> str:
    """Integers that may exceed 2^53 are written as decimal strings (JavaScript numbers would round them)."""
    return str(int(n))


# -- specs --------------------------------------------------------------------------------


# The cases are in tests/vectors/cases/, one module per family, found by listing the folder.

#: The order of the spec cases (ids) in vectors.json when each family's cases moved into its own module of
#: tests/vectors/cases/, kept so that the file did not change. Cases not listed here come after these, by
#: module name and then in their module's order: a new family's cases are appended and edit no list.
FIRST_SPEC_ORDER = """
binary-rr/default binary-rr/strings grr/int grr/str grr/non-ascii grr/big-int grr/explicit-p sue/int
sue/non-ascii oue/str oue/int olh/default-g olh/large-eps olh/explicit-g blh/str hr/high-privacy
hr/blocks hr/one-per-block pem/default pem/non-ascii treehist/default ss/str ss/omega ss/omega-1
rappor/mmh3 rappor/mmh3-wide rappor/md5 rappor/md5-256 rappor/one-time rappor/basic rappor/boolean
cms/str hcms/int duchi/default duchi/range stochastic-rounding/default stochastic-rounding/range
piecewise/grid8 piecewise/default hybrid/alpha0 hybrid/grid8 laplace/grid8 laplace/default
gaussian/grid8 gaussian/default loloha/default loloha/bi loloha/non-ascii onebitmean/plain
onebitmean/alpha onebitmean/alpha-gamma l-grr/str l-grr/eps-inf l-osue/str l-oue/int l-sue/non-ascii
dbitflip/d1 dbitflip/gamma dbitflip/sue range-hierarchy/b2 range-hierarchy/str range-haar/int
range-haar/str dbitflip/wide pckv-grr/ell2 privkvm/default
"""


def case_modules() -> list[str]:
    """The modules of tests/vectors/cases, by name (each holds one family's ``CASES``)."""
    return sorted(
        info.name for info in pkgutil.iter_modules(_CASES.__path__) if not info.name.startswith("_")
    )


def all_cases() -> list[Case]:
    """Every case of the modules of tests/vectors/cases, by module name; an id given twice is an error."""
    found: list[Case] = []
    for name in case_modules():
        cases = getattr(importlib.import_module(f"{_CASES.__name__}.{name}"), "CASES", None)
        if cases is None or not all(isinstance(case, Case) for case in cases):
            raise SystemExit(f"tests/vectors/cases/{name}.py must hold CASES, a tuple of Case")
        found += cases
    ids = [case.id for case in found]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise SystemExit(f"vector case id(s) given twice in tests/vectors/cases: {', '.join(repeated)}")
    return found


def in_published_order(cases: list[Case], first: str) -> list[Case]:
    """``cases`` with those ``first`` lists (ids apart by white space) first, in its order, then the rest."""
    order = first.split()
    rank = {case_id: i for i, case_id in enumerate(order)}
    gone = [case_id for case_id in order if case_id not in {case.id for case in cases}]
    if gone:
        raise SystemExit(
            f"no case {', '.join(gone)} in tests/vectors/cases: drop it from make_vectors.py's order"
        )
    return sorted(cases, key=lambda case: rank.get(case.id, len(rank)))


#: Every case, in the order of the ``specs`` section (and of the sections that go through the specs).
CASES = in_published_order(all_cases(), FIRST_SPEC_ORDER)
#: (id, spec as given) of every case.
SPEC_CASES: list[tuple[str, dict[str, Any]]] = [(case.id, case.spec) for case in CASES]

#: Spec files as a user might write them (spacing, key order, decimals): canonical JSON and fingerprint.
NONCANONICAL_SPEC_TEXTS = [
    '{ "mechanism": "GRR", "epsilon": 0.6931471806, "domain": [1, 2, 3], "p": "0.5" }',
    '{"p": "6/8", "mechanism": "binary_rr", "domain": ["a", "b"], "epsilon": 1.0986122887}',
    '{"mechanism":"rappor","num_bits":8,"num_hashes":1,"f":0.5,"p":"0.39","q":0.75,"hash":"MD5","format":1}',
    '{"mechanism": "olh", "domain": ["\\u00e9", "e"], "epsilon": 1e-3, "g": 3}',
    '{"mechanism": "duchi", "epsilon": 1, "low": 0, "high": 1}',
    '{"mechanism": "gaussian", "epsilon": 1, "delta": 0.00001, "grid": 8}',
    # a memoized 1BitMean without a grid takes the default grid (16)
    '{"mechanism": "onebitmean", "epsilon": 1.0986122887, "low": 0, "high": 100, "rounding": "alpha", "p": "3/4", '
    '"gamma": "0"}',
    # a prefix oracle without a width takes the default one (it follows from top_k and eta, not from epsilon)
    '{"mechanism": "pem", "epsilon": 2.0, "max_length": 8, "g": 8, "p": "9472756646864836623/18446744073709551616"}',
    '{"mechanism": "TreeHist", "epsilon": 2.0, "max_length": 4, "top_k": 3, "g": 8, '
    '"p": "9472756646864836623/18446744073709551616", "width": null}',
    # LOLOHA without a pool_size takes the default pool, min(2^16, 2^24 // g)
    '{"mechanism": "loloha", "domain": ["a", "b", "c"], "epsilon": 0.5, "epsilon_inf": 2.0, "g": 2, '
    '"p1": "4061959569582297779/4611686018427387904", "p2": "6094743578975061749/9223372036854775808"}',
]


def build_specs() -> dict[str, Spec]:
    """Every spec case, by id."""
    return {name: spec_from_dict(data) for name, data in SPEC_CASES}


def all_invalid() -> list[Invalid]:
    """Every invalid spec case of the modules of tests/vectors/cases (their ``INVALID``), by module name."""
    found: list[Invalid] = []
    for name in case_modules():
        cases = getattr(importlib.import_module(f"{_CASES.__name__}.{name}"), "INVALID", ())
        if not all(isinstance(case, Invalid) for case in cases):
            raise SystemExit(f"tests/vectors/cases/{name}.py: INVALID must be a tuple of Invalid")
        found += cases
    ids = [case.id for case in found]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise SystemExit(f"invalid spec id(s) given twice in tests/vectors/cases: {', '.join(repeated)}")
    return found


def invalid_spec_vectors(specs: dict[str, Spec]) -> list[dict[str, Any]]:
    """Specs Python refuses, each with its error: every client must refuse them (with an error naming ``match``)."""
    out = []
    for case in all_invalid():
        if case.id.split("/")[0] != specs[case.base].mechanism:
            raise SystemExit(f"invalid spec {case.id!r}: its id must start with its base case's mechanism")
        data = json.loads(specs[case.base].to_json())
        data.update(case.changes)
        size = data.pop("domain") if isinstance(data.get("domain"), int) else None
        given = data if size is None else {**data, "domain": list(range(size))}
        try:
            spec_from_dict(given)
        except SpecError as error:
            message = str(error)
        else:
            raise SystemExit(f"invalid spec {case.id!r} is accepted by Python")
        if case.expected not in message:
            raise SystemExit(f"invalid spec {case.id!r} is refused for another reason: {message}")
        item = {"id": case.id, "base": case.base, "input_json": json.dumps(data, ensure_ascii=False)}
        if size is not None:
            item["domain_size"] = size
        out.append({**item, "error": message, "match": case.expected})
    bare = sorted({d.name for d in BUILTIN_MECHANISMS} - {case.id.split("/")[0] for case in all_invalid()})
    if bare:
        raise SystemExit(f"tests/vectors/cases has no INVALID spec of: {', '.join(bare)}")
    return out


def spec_vectors(specs: dict[str, Spec]) -> dict[str, Any]:
    """Canonical JSON and fingerprint of every spec case, and of the non-canonical texts."""
    cases = []
    for name, data in SPEC_CASES:
        spec = specs[name]
        text = spec.to_json()
        cases.append(
            {
                "id": name,
                "mechanism": spec.mechanism,
                "input_json": json.dumps(data, ensure_ascii=False),
                "canonical_json": text,
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "fingerprint": spec.fingerprint,
                "memoized": spec.memoized,  # every report of one value post-processes one permanent response
            }
        )
    texts = []
    for text in NONCANONICAL_SPEC_TEXTS:
        data = json.loads(text)
        spec = spec_from_dict(data)
        case = {"input_text": text, "canonical_json": spec.to_json(), "fingerprint": spec.fingerprint}
        calibrated = calibrated_fields(data, spec)
        if calibrated:
            case.update(
                server_only=True,
                calibrated=calibrated,
                reason=(
                    f"{', '.join(calibrated)} calibrated from epsilon (libm exp): another language must "
                    "refuse this input with a clear error and load the server's canonical spec instead"
                ),
            )
        texts.append(case)
    return {"cases": cases, "from_text": texts}


#: Spec fields the library derives from ε when a spec file leaves them out (via floating-point ``exp``).
CALIBRATED_FIELDS = ("p", "q", "g", "blocks", "omega")


def calibrated_fields(data: dict[str, Any], spec: Spec) -> list[str]:
    """The fields of ``spec`` that ``data`` left out and the library calibrated from ε."""
    canonical = json.loads(spec.to_json())
    return [k for k in CALIBRATED_FIELDS if canonical.get(k) is not None and k not in data]


# -- value bytes, floats ----------------------------------------------------------------

HASHED_VALUES: list[Any] = [
    "",
    "a",
    "hello",
    "é",
    "日本語",
    "😀",
    "naïve café",
    "a\u0000b",
    0,
    42,
    -7,
    2**53 - 1,
]


def value_bytes_vectors() -> list[dict[str, Any]]:
    """The bytes hashed for a value: UTF-8 of ``str(value)``."""
    out = []
    for value in [*HASHED_VALUES, 2**63 - 1, -(2**64), 1.0, 1.5, True]:
        out.append({"value_json": json.dumps(value, ensure_ascii=False), "bytes": value_bytes(value).hex()})
    return out


FLOATS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    0.1,
    1 / 3,
    2.0 / 3.0,
    100.0,
    1e-4,
    1e-5,
    1.5e-7,
    123456789.0,
    1e15,
    1e16,
]
FLOATS += [
    1.2345678901234567e16,
    1e21,
    1e22,
    5e-324,
    1.7976931348623157e308,
    2.0**-1074 * 3,
    0.30000000000000004,
]


def float_text_vectors() -> list[dict[str, Any]]:
    """How Python's JSON writes a float (spec ``epsilon``/``low``/``high``, numeric report values)."""
    return [{"bits": struct.pack(">d", x).hex(), "text": json.dumps(x)} for x in FLOATS]


# -- hashing --------------------------------------------------------------------------------

BLOOM_CONFIGS = [
    ("mmh3", 16, 2),
    ("mmh3", 100, 3),
    ("mmh3", 1 << 20, 4),
    ("md5", 32, 2),
    ("md5", 100, 3),
    ("md5", 256, 16),
]
COHORTS = [0, 1, 63, 4_000_000_000]


def bloom_vectors() -> dict[str, Any]:
    """mmh3 x64-128 digests and Bloom positions of both hash rules."""
    digests = []
    for value in HASHED_VALUES:
        data = value_bytes(value)
        for cohort in COHORTS:
            h = mmh3.hash128(data, seed=cohort, signed=False)
            digests.append(
                {
                    "data": data.hex(),
                    "seed": cohort,
                    "digest": mmh3.hash_bytes(data, cohort).hex(),
                    "h1": _big(h & 0xFFFFFFFFFFFFFFFF),
                    "h2": _big(h >> 64),
                }
            )
    md5 = []
    for value in HASHED_VALUES[:6]:
        for cohort in COHORTS:
            data = cohort.to_bytes(4, "big") + value_bytes(value)
            md5.append({"data": data.hex(), "digest": hashlib.md5(data).hexdigest()})
    positions = []
    for hash_name, num_bits, num_hashes in BLOOM_CONFIGS:
        for value in HASHED_VALUES:
            for cohort in COHORTS[:3] if hash_name == "md5" else COHORTS:
                positions.append(
                    {
                        "hash": hash_name,
                        "num_bits": num_bits,
                        "num_hashes": num_hashes,
                        "cohort": cohort,
                        "value": value,
                        "positions": bloom_positions(value, cohort, num_hashes, num_bits, hash_name),
                    }
                )
    return {"mmh3_x64_128": digests, "md5": md5, "positions": positions}


LH_SEEDS = [0, 1, LH_PRIME - 1, LH_PRIME, LH_PRIME + 12345, 987654321987654321, LH_SEED_SPACE - 1]
LH_SEEDS += [int.from_bytes(stream_bytes(f"lh-seed/{i}", 8), "big") % LH_SEED_SPACE for i in range(3)]
LH_INDICES = [0, 1, 2, 5, 99, 1_000_000]
LH_GS = [2, 3, 4, 7, 1000, LH_PRIME - 1]


def olh_vectors() -> dict[str, Any]:
    """The hash family of OLH/BLH: coefficients per seed, buckets, collision probabilities."""
    seeds = []
    for seed in LH_SEEDS:
        a, b = lh_coefficients(seed)
        seeds.append(
            {
                "seed": _big(seed),
                "a": a,
                "b": b,
                "buckets": {str(g): [lh_bucket(seed, i, g) for i in LH_INDICES] for g in LH_GS},
            }
        )
    return {
        "prime": LH_PRIME,
        "seed_space": _big(LH_SEED_SPACE),
        "indices": LH_INDICES,
        "seeds": seeds,
        "collision_probability": {str(g): _fraction(lh_collision_probability(g)) for g in LH_GS},
    }


#: PEM: values and prefix lengths of the bit-encoding and prefix-key vectors (max_length 12).
PEM_VALUES = ["", "a", "café", "日本語", "naïve café"]
PEM_LENGTHS = [1, 4, 7, 8, 13, 24, 96]


def pem_vectors() -> dict[str, Any]:
    """PEM's bit encoding of values (zero-padded UTF-8) and the keys of their prefixes."""
    from ldp.specs import PEM
    from ldp.specs.heavy_hitters import PREFIX_HASH_LABEL, prefix_key

    spec = PEM(epsilon=1.0, max_length=12)
    cases = []
    for value in PEM_VALUES:
        bits = spec.value_bits(value)
        prefixes = []
        for length in PEM_LENGTHS:
            prefix = bits >> (spec.num_bits - length)
            size = (length + 7) // 8
            prefixes.append(
                {
                    "length": length,
                    "prefix_bytes": (prefix << (8 * size - length)).to_bytes(size, "big").hex(),
                    "key": prefix_key(prefix, length),
                }
            )
        cases.append(
            {"value": value, "bits": bits.to_bytes(spec.max_length, "big").hex(), "prefixes": prefixes}
        )
    rounds = {
        str(k): {
            "eta": eta,
            "lengths": list(PEM(epsilon=1.0, max_length=12, top_k=k, eta=eta).prefix_lengths),
        }
        for k, eta in ((1, 8), (10, 4), (3, 3))
    }
    return {
        "label": PREFIX_HASH_LABEL.decode("ascii"),
        "max_length": spec.max_length,
        "values": cases,
        "rounds": rounds,
    }


# -- bit packing ----------------------------------------------------------------------------


def packing_vectors() -> list[dict[str, Any]]:
    """Lanes (bit i of an integer) → packed bytes → base64, and back."""
    out = []
    for width, positions in [
        (1, [0]),
        (1, []),
        (7, [0, 6]),
        (8, [0, 1, 7]),
        (9, [8]),
        (16, [3, 15]),
        (20, [0, 9, 19]),
    ]:
        lanes = sum(1 << i for i in positions)
        packed = pack_bits(positions, width)
        if packed != lanes_to_packed(lanes, width) or unpack_bits(packed, width) != [
            int(i in positions) for i in range(width)
        ]:
            raise AssertionError("pack_bits, lanes_to_packed and unpack_bits disagree")
        out.append(
            {
                "num_bits": width,
                "positions": positions,
                "hex": packed.hex(),
                "base64": base64.b64encode(packed).decode(),
            }
        )
    return out


# -- samplers -------------------------------------------------------------------------------

RANDBELOW_BOUNDS = [1, 2, 3, 5, 6, 7, 255, 256, 257, 1000, (1 << 64) - 1, 1 << 64, LH_SEED_SPACE]


def randbelow_vectors() -> list[dict[str, Any]]:
    """``secrets.randbelow(n)`` fed fixed bytes: result and bytes consumed (rejection sampling)."""
    out = []
    for n in RANDBELOW_BOUNDS:
        nbytes = (n.bit_length() + 7) // 8
        for kind, data in (
            ("stream", stream_bytes(f"randbelow/{n}", 64)),
            ("reject-first", b"\xff" * nbytes + stream_bytes(f"randbelow-after-reject/{n}", 64)),
        ):
            stream = ByteStream(data)
            with fixed_csprng(stream):
                result = secrets.randbelow(n)
            out.append(
                {
                    "n": _big(n),
                    "case": kind,
                    "bytes": stream.consumed.hex(),
                    "reads": stream.reads,
                    "result": _big(result),
                }
            )
    return out


def randbits_vectors() -> list[dict[str, Any]]:
    """``secrets.randbits(k)`` fed fixed bytes (the numeric encoders' rounding coin uses k = 53)."""
    out = []
    for k in (1, 8, 53, 64):
        for i in range(2):
            stream = ByteStream(stream_bytes(f"randbits/{k}/{i}", 16))
            with fixed_csprng(stream):
                result = secrets.randbits(k)
            out.append(
                {"k": k, "bytes": stream.consumed.hex(), "reads": stream.reads, "result": _big(result)}
            )
    return out


def _long_comparison(probability: Fraction, rounds: int) -> bytes:
    """One-lane planes that equal the first ``rounds`` binary digits of ``probability``, then differ."""
    digits, _ = binary_digits(probability, rounds + 1)
    planes = bytes(digits[:rounds]) + bytes([1 - digits[rounds]])
    return planes + stream_bytes("lanes/long-tail", 24)


LANE_CASES: list[tuple[str, int, list[tuple[int, Fraction]], Callable[[], bytes]]] = [
    ("one lane 1/2", 1, [(1, Fraction(1, 2))], lambda: stream_bytes("lanes/0", 48)),
    ("one lane 1/3", 1, [(1, Fraction(1, 3))], lambda: stream_bytes("lanes/1", 48)),
    ("one lane 0", 1, [(1, Fraction(0))], lambda: stream_bytes("lanes/2", 48)),
    ("one lane 1", 1, [(1, Fraction(1))], lambda: stream_bytes("lanes/3", 48)),
    ("one lane 1/3, 70 equal digits", 1, [(1, Fraction(1, 3))], lambda: _long_comparison(Fraction(1, 3), 70)),
    ("3 lanes", 3, [(0b010, Fraction(1, 2)), (0b101, Fraction(1, 5))], lambda: stream_bytes("lanes/4", 48)),
    (
        "9 lanes",
        9,
        [(1 << 4, Fraction(3, 4)), (0x1FF ^ (1 << 4), Fraction(1, 10))],
        lambda: stream_bytes("lanes/5", 96),
    ),
    (
        "20 lanes, 64-bit probabilities",
        20,
        [(0b1011, Fraction(13485650502877567347, 1 << 64)), ((1 << 20) - 1 ^ 0b1011, Fraction(1, 7))],
        lambda: stream_bytes("lanes/6", 144),
    ),
    ("16 lanes, all 1/2", 16, [(0xFFFF, Fraction(1, 2))], lambda: stream_bytes("lanes/7", 96)),
    (
        "12 lanes, a group with an empty mask",
        12,
        [(0, Fraction(1, 9)), (0xFFF, Fraction(2, 3))],
        lambda: b"\x00" * 24 * 2 + stream_bytes("lanes/8", 96),
    ),
]


def lane_vectors() -> list[dict[str, Any]]:
    """The bit-sliced lane sampler (:func:`sample_lanes`) fed fixed bytes."""
    out = []
    for name, width, groups, make in LANE_CASES:
        stream = ByteStream(make())
        lanes = sample_lanes(width, groups, stream)
        out.append(
            {
                "case": name,
                "width": width,
                "groups": [{"mask": mask, "probability": _fraction(p)} for mask, p in groups],
                "bytes": stream.consumed.hex(),
                "reads": stream.reads,
                "lanes": lanes,
                "packed": lanes_to_packed(lanes, width).hex(),
            }
        )
    return out


_GRR_P = Fraction(48886180638618267, 1 << 64)  # GRR's p at d = 1,024, eps = 1

#: Distributions for the Knuth–Yao walk: groups of (count, probability of each outcome).
KNUTH_YAO_CASES: list[tuple[str, list[tuple[int, Fraction]]]] = [
    ("one certain outcome", [(1, Fraction(1))]),
    ("a fair coin", [(1, Fraction(1, 2)), (1, Fraction(1, 2))]),
    ("a coin of 1/3", [(1, Fraction(1, 3)), (1, Fraction(2, 3))]),
    ("uniform of 3", [(3, Fraction(1, 3))]),
    ("uniform of 1023", [(1023, Fraction(1, 1023))]),
    ("dropped groups", [(0, Fraction(1, 2)), (2, Fraction(0)), (4, Fraction(1, 4))]),
    ("grr d = 1,024, eps = 1", [(1, _GRR_P), (1023, (1 - _GRR_P) / 1023)]),
    ("uniform of 2^64 + 13", [((1 << 64) + 13, Fraction(1, (1 << 64) + 13))]),
    ("three groups", [(2, Fraction(1, 10)), (1, Fraction(1, 2)), (3, Fraction(1, 10))]),
]


def knuth_yao_vectors() -> list[dict[str, Any]]:
    """The Knuth–Yao walk (:class:`KnuthYao`) on a bit reader over fixed bytes."""
    out = []
    for name, groups in KNUTH_YAO_CASES:
        for i in range(3):
            stream = ByteStream(stream_bytes(f"knuth-yao/{name}/{i}", 64))
            reader = BitReader(stream)
            group, member = KnuthYao(groups).sample(reader)
            out.append(
                {
                    "case": name,
                    "groups": [{"count": _big(count), "probability": _fraction(p)} for count, p in groups],
                    "bytes": stream.consumed.hex(),
                    "bits": reader.bits_read,
                    "group": group,
                    "member": _big(member),
                }
            )
    return out


#: Lane groups for the run sampler (the per-report lanes of fresh coins).
RUN_CASES: list[tuple[str, int, list[tuple[int, Fraction]]]] = [
    ("one lane 1/2", 1, [(1, Fraction(1, 2))]),
    ("one lane 0 and one lane 1", 2, [(1, Fraction(0)), (2, Fraction(1))]),
    ("9 lanes, 3/4 and 1/10", 9, [(1 << 4, Fraction(3, 4)), (0x1FF ^ (1 << 4), Fraction(1, 10))]),
    (
        "40 lanes, 64-bit q",
        40,
        [(1, Fraction(1, 2)), ((1 << 40) - 2, Fraction(4961093570831984269, 1 << 64))],
    ),
    ("300 lanes, sparse 1/1000 (runs reach the cap)", 300, [((1 << 300) - 1, Fraction(1, 1000))]),
    ("64 lanes, 2/3 (rarer symbol 0)", 64, [((1 << 64) - 1, Fraction(2, 3))]),
    ("16 lanes, a group with an empty mask", 16, [(0, Fraction(1, 9)), (0xFFFF, Fraction(1, 3))]),
]


def run_vectors() -> list[dict[str, Any]]:
    """Independent coins over lanes drawn as runs (:func:`report_bits.sample_lanes`) from fixed bytes."""
    out = []
    for name, width, groups in RUN_CASES:
        for i in range(2):
            stream = ByteStream(stream_bytes(f"runs/{name}/{i}", 512))
            reader = BitReader(stream)
            lanes = run_lanes(width, groups, reader)
            out.append(
                {
                    "case": name,
                    "width": width,
                    "groups": [{"mask": _big(mask), "probability": _fraction(p)} for mask, p in groups],
                    "bytes": stream.consumed.hex(),
                    "bits": reader.bits_read,
                    "lanes": _big(lanes),
                    "packed": lanes_to_packed(lanes, width).hex(),
                }
            )
    return out


SUBSET_CASES = [(1, 0), (1, 1), (4, 2), (10, 3), (63, 16), (1023, 256)]


def subset_vectors() -> list[dict[str, Any]]:
    """Uniform k-subsets of [0, n): a Knuth–Yao rank below C(n, k), unranked (colex)."""
    out = []
    for n, k in SUBSET_CASES:
        for i in range(2):
            stream = ByteStream(stream_bytes(f"subset/{n}/{k}/{i}", 160))
            reader = BitReader(stream)
            members = uniform_subset(n, k, reader)
            rank = sum(math.comb(c, j + 1) for j, c in enumerate(members))
            out.append(
                {
                    "n": n,
                    "k": k,
                    "bytes": stream.consumed.hex(),
                    "bits": reader.bits_read,
                    "rank": _big(rank),
                    "members": members,
                }
            )
    return out


# -- RAPPOR PRR ------------------------------------------------------------------------------


class _RecordingPRF(PRFStream):
    """The library's PRFStream, recording its key parts and reads (installed while making PRR vectors)."""

    made: ClassVar[list[_RecordingPRF]] = []

    def __init__(self, *parts: bytes):
        super().__init__(*parts)
        self.parts = parts
        self.reads: list[int] = []
        _RecordingPRF.made.append(self)

    def __call__(self, n: int) -> bytes:
        self.reads.append(n)
        return super().__call__(n)


@contextlib.contextmanager
def recording_prf() -> Iterator[list[_RecordingPRF]]:
    """Replace the encoders' PRFStream by :class:`_RecordingPRF` (no other change)."""
    saved = client_encoders.PRFStream
    _RecordingPRF.made = []
    client_encoders.PRFStream = _RecordingPRF  # type: ignore[misc]
    try:
        yield _RecordingPRF.made
    finally:
        client_encoders.PRFStream = saved  # type: ignore[misc]


PRR_CASES: list[tuple[str, list[tuple[Any, int]]]] = [
    ("rappor/mmh3", [("hello", 0), ("hello", 3), ("", 1), ("日本語", 2), (42, 0)]),
    ("rappor/mmh3-wide", [("hello", 0), ("😀", 63), ("naïve café", 17)]),
    ("rappor/md5", [("hello", 0), ("", 5), ("é", 63), (7, 1)]),
    ("rappor/md5-256", [("hello", 2), ("abc", 0)]),
    ("rappor/one-time", [("hello", 0), ("é", 1)]),
    ("rappor/basic", [("a", 0), ("é", 1), (3, 0), ("3", 1), ("😀", 0)]),
    ("rappor/boolean", [(True, 0), (False, 0), ("yes", 0), (0, 0)]),
]


def prr_vectors(specs: dict[str, Spec]) -> list[dict[str, Any]]:
    """RAPPOR's permanent randomized response for fixed secrets: PRF key parts, stream, B and B'."""
    out = []
    for name, cases in PRR_CASES:
        spec = specs[name]
        assert isinstance(spec, Rappor)
        # f = 0 needs no secret; one-hot encodings are checked with two, Bloom filters with all three
        keys = SECRETS[:1] if spec.f == 0 else SECRETS[:2] if spec.encoding != "bloom" else SECRETS
        for value, cohort in cases:
            for secret in keys:
                state = ClientState(spec=spec.fingerprint, secret=secret, cohort=cohort)
                encoder = client_encoders.RapporEncoder(spec, state)
                with recording_prf() as made:
                    prr = encoder.permanent_bits(value)
                width = spec.num_bits
                true_positions = spec.bit_positions(value, cohort)
                case: dict[str, Any] = {
                    "spec": name,
                    "fingerprint": spec.fingerprint,
                    "secret": secret.hex(),
                    "cohort": cohort,
                    "value": value,
                    "memo_key": spec.memo_key(value).hex(),
                    "true_positions": true_positions,
                    "true_bits": pack_bits(true_positions, width).hex(),
                    "prr_bits": lanes_to_packed(prr, width).hex(),
                }
                if made:
                    (prf,) = made
                    material = b"".join(len(p).to_bytes(4, "big") + p for p in prf.parts)
                    total = sum(prf.reads)
                    if hashlib.shake_256(material).digest(total) != PRFStream(*prf.parts)(total):
                        raise AssertionError("the documented PRF layout does not match PRFStream")
                    case["prf_parts"] = [p.hex() for p in prf.parts]
                    case["prf_input"] = material.hex()
                    case["prf_reads"] = prf.reads
                    case["prf_bytes"] = hashlib.shake_256(material).digest(total).hex()
                out.append(case)
    return out


# -- sketches (CMS, HCMS) ----------------------------------------------------------------------


def sketch_vectors(specs: dict[str, Spec]) -> list[dict[str, Any]]:
    """h_j(value) of CMS and HCMS: MurmurHash3 x64-128 of the value bytes with seed salt + j, h1 mod m."""
    out = []
    for name, spec in specs.items():
        if not isinstance(spec, SketchSpec):
            continue
        for value in [*spec.domain, "not-in-domain"]:
            out.append(
                {
                    "spec": name,
                    "k": spec.k,
                    "m": spec.m,
                    "salt": spec.salt,
                    "value": value,
                    "positions": [spec.position(value, j) for j in range(spec.k)],
                }
            )
    return out


# -- numeric tables --------------------------------------------------------------------------


def numeric_table(spec: NumericSpec) -> dict[str, Any]:
    """The whole sampling data of a numeric spec, in the layout of the ``numeric`` section (full weights).

    The library's own wire form (``ldp.numeric_wire``), which ``GET /v1/tasks/{task}/tables`` also serves.
    """
    return wire_table(spec)


def _abbreviated(case: dict[str, Any]) -> bool:
    """A shift table too long to write in vectors.json (its full form is in numeric_tables.json)."""
    return case["kind"] == "shift" and len(case["weights"]) > FULL_TABLE_LIMIT


def numeric_vectors(specs: dict[str, Spec]) -> list[dict[str, Any]]:
    """Every numeric spec case's sampling data: two-point p and outputs, or the integer grid table.

    Shift tables longer than ``FULL_TABLE_LIMIT`` weights are abbreviated here (head, center, tail) and
    written in full in numeric_tables.json (``full_table`` names the file).
    """
    out = []
    for name, spec in specs.items():
        if not isinstance(spec, NumericSpec) or not has_table(spec):
            continue
        case = {"spec": name, **numeric_table(spec)}
        if _abbreviated(case):
            weights, outputs, M = case.pop("weights"), case.pop("outputs"), case["M"]
            case["full_table"] = TABLES_PATH.name
            case["num_weights"] = len(weights)
            case["weights_head"] = weights[:4]
            case["weights_center"] = weights[M - 2 : M + 3]
            case["weights_tail"] = weights[-4:]
            case["outputs_head"] = outputs[:4]
            case["outputs_tail"] = outputs[-4:]
        out.append(case)
    return out


TABLES_README = (
    "Full numeric tables of the cross-language vectors (tests/vectors/README.md, section numeric): the "
    "shift tables vectors.json abbreviates, keyed by spec id, in the layout of its numeric section (and of "
    "the collector's GET /v1/tasks/{task}/tables). Generated by tests/vectors/make_vectors.py."
)


def numeric_tables(specs: dict[str, Spec]) -> dict[str, Any]:
    """numeric_tables.json: the full form of every table the numeric section abbreviates."""
    tables = {}
    for name, spec in specs.items():
        if isinstance(spec, NumericSpec) and has_table(spec):
            case = numeric_table(spec)
            if _abbreviated(case):
                tables[name] = {"spec": name, "fingerprint": spec.fingerprint, **case}
    return {"format": VECTORS_FORMAT, "README": TABLES_README, "tables": tables}


# -- complete encodings ----------------------------------------------------------------------

#: The order of the encoding cases when they moved into tests/vectors/cases (as FIRST_SPEC_ORDER).
FIRST_ENCODING_ORDER = """
binary-rr/default binary-rr/strings grr/int grr/str grr/non-ascii grr/explicit-p sue/int
sue/non-ascii oue/str oue/int olh/default-g olh/large-eps olh/explicit-g blh/str hr/high-privacy
hr/blocks hr/one-per-block pem/default pem/non-ascii treehist/default ss/str ss/omega ss/omega-1
rappor/mmh3 rappor/mmh3-wide rappor/md5 rappor/md5-256 rappor/one-time rappor/basic rappor/boolean
cms/str hcms/int duchi/default duchi/range stochastic-rounding/default stochastic-rounding/range
piecewise/grid8 piecewise/default hybrid/alpha0 hybrid/grid8 laplace/grid8 laplace/default
gaussian/grid8 gaussian/default loloha/default loloha/bi loloha/non-ascii onebitmean/plain
onebitmean/alpha onebitmean/alpha-gamma l-grr/str l-grr/eps-inf l-osue/str l-oue/int l-sue/non-ascii
dbitflip/d1 pckv-grr/ell2 privkvm/default dbitflip/gamma dbitflip/sue range-hierarchy/b2
range-hierarchy/str range-haar/int range-haar/str dbitflip/wide
"""
#: The cases with values to encode, in the order of the ``encodings`` section.
ENCODE_CASES = in_published_order([case for case in CASES if case.values], FIRST_ENCODING_ORDER)


def record_tables(spec: Spec) -> dict[str, Any]:
    """A multi-attribute spec's grid tables by attribute name, as ``GET /v1/tasks/{task}/tables`` serves them."""
    if not isinstance(spec, MultiAttribute):
        return {}
    every = {
        name: numeric_table(attribute)
        for name, attribute in zip(spec.names, spec.attributes, strict=True)
        if isinstance(attribute, NumericSpec) and has_table(attribute)
    }
    return {name: table for name, table in every.items() if "digest" in table}


def encoding_vectors(specs: dict[str, Spec]) -> list[dict[str, Any]]:
    """Whole reports from the unmodified encoders fed a fixed byte stream (and a fixed client, with state)."""
    out = []
    for vector_case in ENCODE_CASES:
        name, values, client = vector_case.id, vector_case.values, vector_case.client
        spec = specs[name]
        state = None
        if client is not None:
            state = ClientState(spec=spec.fingerprint, secret=client[0], cohort=client[1])
        encoder = make_encoder(spec, state=state)
        for n, value in enumerate(values):
            stream = ByteStream(stream_bytes(f"encode/{name}/{n}", 4096))
            with fixed_csprng(stream):
                report = encoder.encode(value)
            case: dict[str, Any] = {
                "spec": name,
                "fingerprint": spec.fingerprint,
                "value": value,
                "bytes": stream.consumed.hex(),
                "reads": stream.reads,
                "report_json": report.to_json(),
            }
            tables = record_tables(spec)
            if tables:
                case["tables"] = tables
            if not report.extra:  # fields a report schema declares have no binary form
                case["report_binary"] = report.to_bytes().hex()
            if client is not None:
                case["secret"] = client[0].hex()
                case["cohort"] = client[1]
            out.append(case)
    return out


# -- report forms ----------------------------------------------------------------------------

FP = "0123456789abcdef"


def report_vectors() -> list[dict[str, Any]]:
    """Report JSON lines and binary forms of every payload shape (with and without client and group)."""
    bits9 = pack_bits([0, 8], 9)
    reports = [
        Report(spec=FP, value=3),
        Report(spec=FP, value=-(1 << 63)),
        Report(spec=FP, value="é😀"),
        Report(spec=FP, value=""),
        Report(spec=FP, value="tab\tnew\nline\u2028sep\u0085nel\x7f"),
        Report(spec=FP, value=0.1),
        Report(spec=FP, value=-0.0),
        Report(spec=FP, value=1e16),
        Report(spec=FP, value=1.5e-7),
        Report(spec=FP, seed=LH_SEED_SPACE - 1, value=6),
        Report(spec=FP, bits=bits9),
        Report(spec=FP, bits=b""),
        Report(spec=FP, cohort=4_000_000_000, bits=bytes(range(16))),
        Report(spec=FP, value=1, client="client-7"),
        Report(spec=FP, value=1, group="v2.3 — bêta"),
        Report(spec=FP, cohort=1, bits=b"\xff\x80", client="ç", group="g"),
        Report(spec="ABCDEF0123456789", value=2),
    ]
    out = []
    for report in reports:
        line = report.to_json()
        if Report.from_json(line) != report or Report.from_bytes(report.to_bytes()) != report:
            raise AssertionError(f"report does not round-trip: {line}")
        out.append({"json": line, "binary": report.to_bytes().hex()})
    return out


# -- the file -------------------------------------------------------------------------------

#: Specs used only by the budget section (written in full there), by id.
BUDGET_SPECS = {
    "budget/grr-0.1": {"mechanism": "grr", "domain": ["a", "b", "c"], "epsilon": 0.1},
    "budget/oue-0.5": {"mechanism": "oue", "domain": ["w", "x", "y", "z"], "epsilon": 0.5},
}

#: Ledger scenarios: (id, budget, charges as (spec id, value)); every charge is attempted in order.
BUDGET_LEDGERS: list[tuple[str, dict[str, Any], list[tuple[str, Any]]]] = [
    ("basic/grr", {"epsilon": 3.0}, [("grr/str", "red")] * 4),
    ("basic/float-sum", {"epsilon": 1.0}, [("budget/grr-0.1", "a")] * 11),
    (
        "optimal/delta0-is-basic",
        {"epsilon": 1.0, "delta": 0.0, "composition": "optimal"},
        [("budget/grr-0.1", "b")] * 11,
    ),
    (
        "optimal/many-small",
        {"epsilon": 2.0, "delta": 1e-6, "composition": "optimal"},
        [("budget/grr-0.1", "c")] * 60,
    ),
    (
        "optimal/mixed",
        {"epsilon": 8.0, "delta": 1e-5, "composition": "Optimal"},
        [
            (spec, value)
            for i in range(14)
            for spec, value in (
                ("budget/grr-0.1", "a"),
                ("budget/oue-0.5", "x"),
                ("rappor/mmh3", ["alpha", "beta", "alpha", "gamma"][i % 4]),
                ("rappor/boolean", i % 3 == 0),
            )
        ],
    ),
    (
        "basic/rappor-finite-domains",
        {"epsilon": 30.0},
        [("rappor/basic", ["a", "\u00e9", 3, "not-in-domain"][i % 4]) for i in range(12)]
        + [("rappor/boolean", i % 2 == 0) for i in range(12)],
    ),
    (
        "parameter-error/gaussian",
        {"epsilon": 5.0},
        [("budget/grr-0.1", "a"), ("gaussian/grid8", 0.5), ("budget/grr-0.1", "a")],
    ),
]

#: heterogeneous_epsilon cases: (pieces as (epsilon, count) runs, delta).
BUDGET_COMPOSITIONS: list[tuple[list[tuple[float, int]], float]] = [
    ([(0.5, 10)], 1e-6),
    ([(1.0, 50)], 1e-5),
    ([(0.1, 100), (0.7, 20)], 1e-6),
    ([(2.0, 1), (0.3, 2), (1.1, 1)], 1e-3),
    ([(0.25, 1000)], 1e-8),
    ([(0.1, 10)], 0.0),
    ([(0.05, 1500), (0.3, 1400)], 1e-6),  # over 2,000,000 atoms: evaluated lazily (ProductLoss)
    ([(0.05, 1500), (0.3, 1400), (0.7, 3)], 1e-6),  # a third factor after that: KOV Theorem 3.5
]


def _approx(x: float) -> float:
    """A total ε to 10 significant digits: NumPy's vectorized exp/log may differ in the last bits between
    CPUs, and these totals come from them (another implementation compares within a relative 1e-9)."""
    return float(f"{x:.10g}")


def budget_vectors(specs: dict[str, Spec]) -> dict[str, Any]:
    """RAPPOR's ε₁/ε∞, the optimal rule's total ε, and ledgers' charge decisions (ldp.privacy.budget).

    ε₁ and ε∞ are exact (pure Python); the totals are rounded (:func:`_approx`).
    """
    extra = {key: spec_from_dict(dict(data)) for key, data in BUDGET_SPECS.items()}
    known = {**specs, **extra}
    epsilons = [
        {
            "spec": key,
            "epsilon_one": spec.epsilon_one,
            "epsilon_inf": None if math.isinf(spec.epsilon_inf) else spec.epsilon_inf,
            "values": spec.memo_domain_size,
        }
        for key, spec in specs.items()
        if isinstance(spec, Rappor)
    ]
    compositions = []
    for runs, delta in BUDGET_COMPOSITIONS:
        pieces = [eps for eps, count in runs for _ in range(count)]
        compositions.append(
            {
                "runs": [list(r) for r in runs],
                "delta": delta,
                "epsilon": _approx(heterogeneous_epsilon(pieces, delta)),
            }
        )
    ledgers = []
    for key, budget_args, charges in BUDGET_LEDGERS:
        budget = Budget(**budget_args)
        with fixed_csprng(ByteStream(stream_bytes(f"budget/{key}", 32))):
            ledger = PrivacyLedger.in_memory(budget)
        steps = []
        for spec_id, value in charges:
            step: dict[str, Any] = {"spec": spec_id, "value": value}
            try:
                ledger.charge(known[spec_id], value)
                step["outcome"] = "charged"
            except BudgetExceededError:
                step["outcome"] = "refused"
            except ParameterError:
                step["outcome"] = "parameter_error"
            step["committed"] = _approx(ledger.committed)
            step["spent"] = _approx(ledger.spent)
            steps.append(step)
        ledgers.append({"id": key, "budget": budget_args, "charges": steps})
    return {
        "specs": {key: spec.to_json() for key, spec in extra.items()},
        "rappor_epsilons": epsilons,
        "compositions": compositions,
        "ledgers": ledgers,
        "memo_costs": _memo_cost_vectors(),
        "ledger_files": _ledger_file_vectors(),
    }


#: (reports, per-report ε, ε∞ or None, memo keys or None, linear, ε₁ of a key's first report or None) for the
#: worst spread of a memoized spec's reports; ε₁ below the per-report ε: a chain whose ε′ exceeds ε₁.
MEMO_COST_CASES = [
    (reports, eps1, cap, keys, linear, None)
    for reports in (0, 1, 2, 3, 4, 7, 30, 365)
    for eps1, cap in ((0.5, 1.75), (1.0, 1.5), (0.3, 2.0), (1.0, None))
    for keys in (1, 3, None)
    for linear in (True, False)
] + [
    (reports, eps, cap, keys, linear, first)
    for reports in (1, 2, 3, 4, 5, 7, 30, 365)
    for first, eps, cap in ((0.25, 0.32, 1.0), (0.5, 0.7, None), (0.1, 0.9, 1.0))
    for keys in (1, 3, 16, None)
    for linear in (True, False)
]


def _memo_cost_vectors() -> list[dict[str, Any]]:
    """What r reports of one memo key cost, and the worst spread of R reports over the keys (ldp.privacy.spending)."""
    from ldp.privacy.spending import memo_key_cost, worst_case_memoized_cost

    return [
        {
            "reports": reports,
            "epsilon_one": eps1,
            "epsilon_inf": cap,
            "values": keys,
            "linear": linear,
            "epsilon_first": first,
            "key_cost": _approx_or_none(memo_key_cost(reports, eps1, cap, linear=linear, first=first)),
            "worst_case": _approx_or_none(
                worst_case_memoized_cost(reports, eps1, cap, keys, linear=linear, first=first)
            ),
        }
        for reports, eps1, cap, keys, linear, first in MEMO_COST_CASES
    ]


def _approx_or_none(x: float) -> float | None:
    """:func:`_approx`, or None for an unbounded ε (JSON has no infinity)."""
    return None if math.isinf(x) else _approx(x)


def _ledger_file_vectors() -> list[dict[str, Any]]:
    """Ledger files as Python writes them (format 2: a memoized stream charged eps_inf from its second report;
    a budget composed by exact curves), with what the TypeScript client must make of them."""
    key = "ab" * 32
    capped = {"spec": "0123456789abcdef", "epsilon": 0.5, "epsilon_cap": 1.75, "reports": 2, "memoized": True}
    linear = {"spec": "fedcba9876543210", "epsilon": 0.25, "epsilon_cap": 1.0, "reports": 3, "memoized": True}
    streams = {
        "value:" + "1" * 64: {**capped, "values": 4, "linear": False},
        "value:" + "2" * 64: {**linear, "values": None, "linear": True},
        "fresh:00000000000000ff": {
            "spec": "00000000000000ff",
            "epsilon": 1.0,
            "epsilon_cap": None,
            "reports": 2,
            "memoized": False,
            "values": None,
            "linear": True,
        },
    }
    budget = Budget(epsilon=10.0)
    return [
        {
            "id": "v2/capped-stream",
            "file": {
                "format": "ldp-privacy-ledger/2",
                "key": key,
                "budget": budget.to_dict(),
                "streams": streams,
            },
            "committed": _approx(committed_epsilon(_streams_of(streams), budget)),
            "spent": _approx(spent_epsilon(_streams_of(streams), budget)),
        },
        {
            "id": "v2/exact-budget",
            "file": {
                "format": "ldp-privacy-ledger/2",
                "key": key,
                "budget": Budget(5.0, 1e-6, "exact").to_dict(),
                "streams": {},
            },
            "committed": None,
            "spent": None,
        },
        {
            "id": "v2/mu-budget",
            "file": {
                "format": "ldp-privacy-ledger/2",
                "key": key,
                "budget": Budget(mu=1.0).to_dict(),
                "streams": {},
            },
            "committed": None,
            "spent": None,
        },
    ]


def _streams_of(items: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from ldp.privacy.spending import Stream

    return {name: Stream(**item) for name, item in items.items()}


README = (
    "Cross-language test vectors of the ldp client, generated by tests/vectors/make_vectors.py from the "
    "library; tests/vectors/README.md documents every section. Integers that can exceed 2^53 are decimal "
    "strings; bytes are lowercase hex; probabilities are exact fractions 'a/b'."
)


def build() -> dict[str, Any]:
    """Every vector, as the JSON-ready document (vectors.json)."""
    return build_all()[0]


def build_all() -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON-ready documents of vectors.json and numeric_tables.json."""
    with no_csprng():
        return _build()


def _build() -> tuple[dict[str, Any], dict[str, Any]]:
    specs = build_specs()
    vectors = {
        "format": VECTORS_FORMAT,
        "README": README,
        "specs": spec_vectors(specs),
        "invalid_specs": invalid_spec_vectors(specs),
        "value_bytes": value_bytes_vectors(),
        "float_text": float_text_vectors(),
        "bloom": bloom_vectors(),
        "olh": olh_vectors(),
        "pem": pem_vectors(),
        "bit_packing": packing_vectors(),
        "samplers": {
            "randbelow": randbelow_vectors(),
            "randbits": randbits_vectors(),
            "lanes": lane_vectors(),
        },
        "bits": {
            "knuth_yao": knuth_yao_vectors(),
            "runs": run_vectors(),
            "subset": subset_vectors(),
        },
        "prr": prr_vectors(specs),
        "sketch": sketch_vectors(specs),
        "numeric": numeric_vectors(specs),
        "encodings": encoding_vectors(specs),
        "reports": report_vectors(),
        "budget": budget_vectors(specs),
    }
    check_json_safe(vectors)
    # the vectors compare the two clients: a mechanism without a TypeScript encoder has none yet
    missing = sorted(
        {d.name for d in BUILTIN_MECHANISMS} & typescript_encoders() - covered_mechanisms(vectors)
    )
    if missing:
        raise SystemExit(f"make_vectors.py has no spec and encoding vectors for: {', '.join(missing)}")
    tables = numeric_tables(specs)
    check_json_safe(tables, "numeric_tables")
    wanted = {case["spec"] for case in vectors["numeric"] if "full_table" in case}
    if wanted != set(tables["tables"]):
        raise AssertionError("numeric_tables.json must hold exactly the tables vectors.json abbreviates")
    return vectors, tables


#: Largest integer every JSON reader (JavaScript's included) reads exactly.
SAFE_INTEGER = 2**53 - 1


def typescript_encoders() -> set[str]:
    """Mechanisms with a TypeScript encoder (an ``@mechanisms``-tagged class in js/src)."""
    path = Path(__file__).resolve().parents[2] / "js" / "scripts" / "spec_fields.py"
    module_spec = importlib.util.spec_from_file_location("ldp_spec_fields_for_make_vectors", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return set(module.encoder_classes())


def check_json_safe(value: Any, where: str = "vectors") -> None:
    """Refuse an integer beyond ±(2^53 − 1) written as a JSON number (JavaScript would round it)."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_json_safe(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_json_safe(item, f"{where}[{i}]")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > SAFE_INTEGER:
        raise AssertionError(f"{where} = {value} must be written as a string")


def covered_mechanisms(vectors: dict[str, Any]) -> set[str]:
    """Mechanisms with both spec vectors and complete encodings in ``vectors``."""
    with_spec = {case["id"]: case["mechanism"] for case in vectors["specs"]["cases"]}
    encoded = {with_spec[case["spec"]] for case in vectors["encodings"]}
    return set(with_spec.values()) & encoded


def _dump(value: Any, depth: int = 0, in_list: bool = False) -> str:
    """Stable ASCII text: sorted keys; one line per case (a dict inside a list), containers of cases expanded.

    Non-ASCII characters are written as ``\\u`` escapes (surrogate pairs above U+FFFF), so the file is
    plain ASCII whatever the editor; every JSON reader decodes the same strings.
    """
    expand = (isinstance(value, dict) and value and not in_list) or (
        isinstance(value, list) and any(isinstance(item, dict) for item in value)
    )
    if not expand:
        return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    pad = " " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {_dump(value[k], depth + 1)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    return "[\n" + ",\n".join(pad + _dump(v, depth + 1, True) for v in value) + "\n" + " " * depth + "]"


def render_all() -> dict[Path, str]:
    """The exact text of every generated file (vectors.json, numeric_tables.json), by path."""
    vectors, tables = build_all()
    return {VECTORS_PATH: _dump(vectors) + "\n", TABLES_PATH: _dump(tables) + "\n"}


def render() -> str:
    """The exact text of vectors.json."""
    return render_all()[VECTORS_PATH]


def main(argv: list[str] | None = None) -> int:
    """Write the vector files, or with ``--check`` exit 1 when one differs from what would be written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a vector file is stale; write nothing"
    )
    args = parser.parse_args(argv)
    texts = render_all()
    if args.check:
        stale = [
            path
            for path, text in texts.items()
            if (path.read_text(encoding="utf-8") if path.exists() else None) != text
        ]
        for path in stale:
            print(f"{path} is stale: run python tests/vectors/make_vectors.py", file=sys.stderr)
        if stale:
            return 1
        print(f"{', '.join(str(path) for path in texts)} are current")
        return 0
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path} ({len(text.encode('utf-8')):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
