"""Reports: the randomized records a client sends (docs/report-format.md).

One immutable record type covers every mechanism; which fields are present
depends on the mechanism:

=================  ====================================================
BinaryRR, GRR      ``value`` (the reported domain value)
OLH, BLH           ``seed`` (hash function), ``value`` (reported bucket)
SUE, OUE           ``bits`` (packed bit vector)
RAPPOR             ``cohort``, ``bits``
numeric            ``value`` (a number)
=================  ====================================================

Which fields a spec's reports carry is declared by the spec itself, in its
``report_schema`` (:mod:`ldp.report_schema`). A schema may name new payload
fields (``"index"``, ``"row"``, ...): declaring it makes the names known here
(:func:`declare_report_field`), and a report holds them in :attr:`Report.extra`
(JSON scalars, or bytes written as base64). Keys no schema declares are
refused as unknown fields.

Any report may also carry an optional ``group`` key (e.g. an app version)
for per-group statistics (``ldp aggregate --by-group``). The group key is
NOT privatized: it is sent in the clear, next to the randomized fields, so it
must never be sensitive or identifying. It is a non-empty string of at most
:data:`MAX_GROUP_LENGTH` characters without control characters
(:func:`check_group`, the one rule every reader applies).

Text fields (``spec``, a string ``value``, ``client``, ``group``) must be
Unicode text that UTF-8 can encode: a lone surrogate (which ``json.loads``
makes of ``"\\ud800"``) is refused, so every report accepted here can be
written back to a UTF-8 file (:func:`check_text`).

Bits are packed as :func:`numpy.packbits` does (bit i of the vector is bit
7 − (i mod 8) of byte i // 8). Every report carries its spec's fingerprint
and a format version ``v``; an optional ``client`` id is carried through and
ignored by the aggregator.

Versions
--------
``v`` is the format version, and a report is written with the *lowest*
version that has every field it carries: version 1 (no group; exactly the
original format, JSON and binary) or version 2 (version 1 plus ``group``).
So reports without a group are byte-for-byte what they always were, and a
reader that only knows version 1 refuses a grouped report as "version 2 is not
supported" instead of misreading it. A version-1 report with a group is
rejected. This version reads both.

Binary form (``to_bytes``): ``v`` (1 byte), a presence mask (1 byte: value,
seed, bits, cohort, client, and in version 2 group), the 8-byte fingerprint,
then the present fields in that order: value as a type tag (0 int, 1 float,
2 str) and 8 bytes or a 2-byte length and UTF-8; seed as 8 bytes; bits as a
2-byte length and the bytes; cohort as 4 bytes; client and group each as a
2-byte length and UTF-8. All integers are big-endian.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from ldp.errors import ReportError, SpecError
from ldp.jsonlines import json_line
from ldp.shorten import VALUE_ECHO_LIMIT, shown

__all__ = [
    "BUILTIN_PAYLOAD",
    "GROUP_REPORT_VERSION",
    "MAX_GROUP_LENGTH",
    "REPORT_VERSION",
    "REPORT_VERSIONS",
    "Report",
    "check_group",
    "check_text",
    "declare_report_field",
    "declare_report_field_family",
    "declared_report_fields",
    "pack_bits",
    "report_version",
    "unpack_bits",
]

#: Version of a report without a group (the original format).
REPORT_VERSION = 1
#: Version of a report carrying a ``group`` key.
GROUP_REPORT_VERSION = 2
#: Versions this code reads.
REPORT_VERSIONS = (REPORT_VERSION, GROUP_REPORT_VERSION)
#: Longest group key, in characters.
MAX_GROUP_LENGTH = 256
ReportValue = str | int | float

_FIELDS = ("value", "seed", "bits", "cohort", "client", "group")
_MASK_BITS = {REPORT_VERSION: 0x1F, GROUP_REPORT_VERSION: 0x3F}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_JSON_KEYS = {"v", "spec", *_FIELDS}
_MAX_U64 = (1 << 64) - 1
#: Payload fields with a place of their own in :class:`Report` (any other declared field goes to ``extra``).
BUILTIN_PAYLOAD = ("value", "seed", "bits", "cohort")


def payload_field(record: Any, name: str) -> Any:
    """The payload field ``name`` of a report record: a built-in attribute or an ``extra`` pair; None when absent."""
    if name in BUILTIN_PAYLOAD:
        return getattr(record, name)
    for key, value in record.extra:
        if key == name:
            return value
    return None


_RESERVED = frozenset({"v", "spec", "client", "group", "extra"})
_DECLARED: dict[str, None] = {}  # payload field names declared by report schemas, in order
_FAMILIES: dict[str, re.Pattern[str]] = {}  # prefixes of renamed fields: prefix + a declared name is known
_REGISTRY_LOADED = False


def declare_report_field(name: str) -> None:
    """Make ``name`` a payload field a report may carry (called by :class:`ldp.report_schema.ReportSchema`).

    Raises
    ------
    SpecError
        For a name that is not a non-empty identifier, or a reserved one
        (``v``, ``spec``, ``client``, ``group``).
    """
    if not isinstance(name, str) or not name.isidentifier() or name in _RESERVED:
        raise SpecError(
            f"report field name {name!r} is not allowed (an identifier other than {', '.join(sorted(_RESERVED))})"
        )
    _DECLARED.setdefault(name, None)


def declare_report_field_family(prefix: str) -> None:
    """Make every name ``P + F`` a payload field, where ``P`` fully matches the regular expression ``prefix``
    and ``F`` is a declared field (a spec whose reports rename its parts' fields, as multi-attribute's
    ``a{j}_{field}``, whose names depend on the instance).

    Raises
    ------
    SpecError
        For a prefix that does not compile or matches the empty string.
    """
    try:
        pattern = re.compile(prefix)
    except re.error as err:
        raise SpecError(f"report field family prefix {prefix!r} is not a regular expression: {err}") from None
    if pattern.fullmatch(""):
        raise SpecError(f"report field family prefix {prefix!r} matches the empty string")
    _FAMILIES.setdefault(prefix, pattern)


def _is_declared(name: str) -> bool:
    if name in _DECLARED:
        return True
    return any(
        name.endswith(field) and len(name) > len(field) and pattern.fullmatch(name, 0, len(name) - len(field))
        for pattern in _FAMILIES.values()
        for field in _DECLARED
    )


def _undeclared(names: Iterable[Any]) -> list[Any]:
    """The names no report schema declares, after loading every registered mechanism's spec class once.

    A schema declares its fields when its spec class is defined, which the lazy
    registry defers; a report read before its spec is loaded must parse the same.
    """
    global _REGISTRY_LOADED
    unknown = [n for n in names if n not in _JSON_KEYS and not (isinstance(n, str) and _is_declared(n))]
    if unknown and not _REGISTRY_LOADED:
        _REGISTRY_LOADED = True
        from ldp import registry

        for declaration in registry.declarations():
            try:
                declaration.load_spec()
            except Exception:  # a broken plug-in is reported where it is used, not here
                continue
        unknown = [n for n in unknown if not (isinstance(n, str) and _is_declared(n))]
    return unknown


def declared_report_fields() -> tuple[str, ...]:
    """Every payload field name declared so far (the built-in ones first)."""
    return (*BUILTIN_PAYLOAD, *(n for n in _DECLARED if n not in BUILTIN_PAYLOAD))


def pack_bits(positions, num_bits: int) -> bytes:
    """Pack the set bit ``positions`` of a ``num_bits`` vector (numpy.packbits order)."""
    out = bytearray((num_bits + 7) // 8)
    for i in positions:
        out[i >> 3] |= 0x80 >> (i & 7)
    return bytes(out)


def unpack_bits(data: bytes, num_bits: int) -> list[int]:
    """The 0/1 list of the first ``num_bits`` bits of packed ``data``."""
    return [(data[i >> 3] >> (7 - (i & 7))) & 1 for i in range(num_bits)]


def check_text(text: str, name: str) -> str:
    """``text`` if UTF-8 can encode it (no lone surrogates); a :class:`ReportError` naming field ``name`` otherwise.

    Python strings may hold lone surrogates (``json.loads('"\\ud800"')``,
    file names decoded with ``surrogateescape``); such text cannot be written
    to a UTF-8 file, so no report field may hold it.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ReportError(
            f"report '{name}' must be valid Unicode text, got the lone surrogate "
            f"U+{ord(text[exc.start]):04X} at character {exc.start}"
        ) from None
    return text


def check_group(group: Any) -> str:
    """Validate a group key: a non-empty string of at most MAX_GROUP_LENGTH characters, no control characters.

    It must also be valid Unicode text (:func:`check_text`). This is the one
    rule for group keys: :class:`Report` applies it to every report, and the
    vectorized readers (:mod:`ldp.aggregator.report_columns`) apply it to each
    distinct key of a column. The group key travels in the clear (it is not
    privatized): use it only for non-sensitive keys such as an app version.

    Raises
    ------
    ReportError
        Naming what is wrong.
    """
    if not isinstance(group, str):
        raise ReportError(f"report 'group' must be a string, got {shown(group, VALUE_ECHO_LIMIT)}")
    if not group:
        raise ReportError("report 'group' must be a non-empty string")
    if len(group) > MAX_GROUP_LENGTH:
        raise ReportError(f"report 'group' must be at most {MAX_GROUP_LENGTH} characters, got {len(group)}")
    if _CONTROL.search(group):
        raise ReportError(
            f"report 'group' must not contain control characters, got {shown(group, VALUE_ECHO_LIMIT)}"
        )
    return check_text(group, "group")


def report_version(group: Any) -> int:
    """The lowest format version that can carry a report with (or without) a group."""
    return REPORT_VERSION if group is None else GROUP_REPORT_VERSION


def _check_fingerprint(spec: Any) -> str:
    if not isinstance(spec, str) or len(spec) != 16:
        raise ReportError(
            f"report 'spec' must be a 16-hex-digit fingerprint, got {shown(spec, VALUE_ECHO_LIMIT)}"
        )
    try:
        bytes.fromhex(spec)
    except ValueError:
        raise ReportError(
            f"report 'spec' must be a 16-hex-digit fingerprint, got {shown(spec, VALUE_ECHO_LIMIT)}"
        ) from None
    return spec.lower()


def _check_uint(value: Any, name: str, bits: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise ReportError(
            f"report '{name}' must be an integer in [0, 2^{bits}), got {shown(value, VALUE_ECHO_LIMIT)}"
        )
    return value


@dataclasses.dataclass(frozen=True)
class Report:
    """One randomized report.

    Parameters
    ----------
    spec : str
        Fingerprint of the spec that produced the report.
    value, seed, bits, cohort, client
        Mechanism-dependent fields (see module docstring).
    group : str, optional
        Group key for per-group statistics. Sent in the clear (NOT
        privatized): never put anything sensitive in it.
    v : int, optional
        Report format version; by default the lowest that can carry the
        report (1 without a group, 2 with one).
    extra : mapping or tuple of (name, value) pairs, optional
        Payload fields declared by a report schema beyond the four above
        (:func:`declare_report_field`), in JSON order: a string, a number,
        or bytes (written as base64). Kept as a tuple of pairs.

    Examples
    --------
    >>> import ldp
    >>> from ldp import Report
    >>> spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    >>> report = Report(spec=spec.fingerprint, value="a")
    >>> Report.from_json(report.to_json()) == report
    True
    """

    spec: str
    value: ReportValue | None = None
    seed: int | None = None
    bits: bytes | None = None
    cohort: int | None = None
    client: str | None = None
    group: str | None = None
    v: int | None = None
    extra: tuple[tuple[str, Any], ...] = dataclasses.field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.extra:
            object.__setattr__(self, "extra", _check_extra(self.extra))
        if self.v is None:
            object.__setattr__(self, "v", report_version(self.group))
        if type(self.v) is not int or self.v not in REPORT_VERSIONS:  # 1.0, True and "1" are not versions
            raise ReportError(
                f"report format version 'v' must be an integer this version reads ({_versions_text()}), "
                f"got {shown(self.v, VALUE_ECHO_LIMIT)}"
            )
        if self.group is not None:
            check_group(self.group)
            if self.v < GROUP_REPORT_VERSION:
                raise ReportError(
                    f"report 'group' needs format version {GROUP_REPORT_VERSION} or later, the report says v={self.v}"
                )
        object.__setattr__(self, "spec", _check_fingerprint(self.spec))
        if self.value is not None:
            if isinstance(self.value, bool) or not isinstance(self.value, (str, int, float)):
                raise ReportError(
                    f"report 'value' must be a string or a number, got {shown(self.value, VALUE_ECHO_LIMIT)}"
                )
            if isinstance(self.value, str):
                check_text(self.value, "value")
            if isinstance(self.value, float) and not math.isfinite(self.value):
                raise ReportError(f"report 'value' must be finite, got {self.value!r}")
            if isinstance(self.value, int) and not -(1 << 63) <= self.value < (1 << 63):
                raise ReportError(f"report 'value' integer out of 64-bit range: {self.value}")
        if self.seed is not None:
            _check_uint(self.seed, "seed", 64)
        if self.cohort is not None:
            _check_uint(self.cohort, "cohort", 32)
        if self.bits is not None and not isinstance(self.bits, bytes):
            if isinstance(self.bits, (bytearray, memoryview)):
                object.__setattr__(self, "bits", bytes(self.bits))
            else:
                raise ReportError(f"report 'bits' must be bytes, got {type(self.bits).__name__}")
        if self.client is not None:
            if not isinstance(self.client, str):
                raise ReportError(
                    f"report 'client' must be a string, got {shown(self.client, VALUE_ECHO_LIMIT)}"
                )
            check_text(self.client, "client")

    @classmethod
    def of_encoder(
        cls,
        spec: str,
        *,
        value: ReportValue | None = None,
        seed: int | None = None,
        bits: bytes | None = None,
        extra: tuple[tuple[str, Any], ...] = (),
        cohort: int | None = None,
    ) -> Report:
        """A client encoder's report, without the checks of the constructor: its fields are valid by construction.

        For :mod:`ldp.client`'s single-report encoders only (the checks cost
        more than a cheap mechanism's draw): ``spec`` is the spec's own
        fingerprint, and ``value`` an element of the spec's validated domain or
        output set (a str, int or finite float), ``seed`` an int in the spec's
        range, ``bits`` the packed lanes, ``extra`` (name, value) pairs of the
        spec's declared fields, ``cohort`` the client's cohort (an int in the
        spec's range). tests/conformance/test_conformance_fast.py
        builds every registered encoder's reports again with the constructor
        and requires the same report, field types included.
        """
        report = object.__new__(cls)
        report.__dict__.update(
            _ENCODER_DEFAULTS, spec=spec, value=value, seed=seed, bits=bits, extra=extra, cohort=cohort
        )
        return report

    def get(self, name: str) -> Any:
        """The payload field ``name`` (built-in or in :attr:`extra`); None when absent."""
        return payload_field(self, name)

    def payload_names(self) -> tuple[str, ...]:
        """Names of the payload fields this report carries (built-in ones first)."""
        return (*(n for n in BUILTIN_PAYLOAD if getattr(self, n) is not None), *(k for k, _ in self.extra))

    # -- JSON ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; ``bits`` as base64; absent fields omitted.

        Order: ``v``, ``spec``, ``cohort``, ``seed``, ``value``, the
        :attr:`extra` fields, ``bits``, ``client``, ``group``.
        """
        out: dict[str, Any] = {"v": self.v, "spec": self.spec}
        if self.cohort is not None:
            out["cohort"] = self.cohort
        if self.seed is not None:
            out["seed"] = self.seed
        if self.value is not None:
            out["value"] = self.value
        for name, value in self.extra:
            out[name] = base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        if self.bits is not None:
            out["bits"] = base64.b64encode(self.bits).decode("ascii")
        if self.client is not None:
            out["client"] = self.client
        if self.group is not None:
            out["group"] = self.group
        return out

    def with_group(self, group: str | None) -> Report:
        """This report with ``group`` set (or removed), at the lowest version that carries it."""
        return dataclasses.replace(self, group=group, v=report_version(group))

    def to_json(self) -> str:
        """One line of JSON (the JSON Lines form)."""
        return json_line(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """Validate and build a report from its JSON dict form."""
        if not isinstance(data, Mapping):
            raise ReportError(f"a report must be a JSON object, got {type(data).__name__}")
        unknown = sorted(_undeclared(data), key=str)
        if unknown:
            names = ", ".join(shown(name, VALUE_ECHO_LIMIT) for name in unknown[:5])
            more = f" and {len(unknown) - 5:,} more" if len(unknown) > 5 else ""
            raise ReportError(f"report has unknown fields: {names}{more}")
        if "v" not in data:
            raise ReportError("report has no version field 'v'")
        if "spec" not in data:
            raise ReportError("report has no 'spec' fingerprint")
        bits = data.get("bits")
        if bits is not None:
            if not isinstance(bits, str):
                raise ReportError(
                    f"report 'bits' must be a base64 string, got {shown(bits, VALUE_ECHO_LIMIT)}"
                )
            try:
                bits = base64.b64decode(bits.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError, ValueError):
                raise ReportError("report 'bits' is not valid base64") from None
        return cls(
            spec=data["spec"],
            value=data.get("value"),
            seed=data.get("seed"),
            bits=bits,
            cohort=data.get("cohort"),
            client=data.get("client"),
            group=data.get("group"),
            v=data["v"],
            extra=tuple((k, data[k]) for k in data if k not in _JSON_KEYS and data[k] is not None),
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Report:
        """Parse one JSON line (bytes must be UTF-8, as JSON Lines are; a leading byte-order mark is dropped).

        :func:`json.loads` alone would also take UTF-16/32 bytes and decode
        the bytes of surrogates ("CESU-8"); neither is UTF-8.
        """
        if isinstance(line, (bytes, bytearray, memoryview)):
            try:
                line = bytes(line).decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise ReportError(f"report is not valid UTF-8: {exc}") from None
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ReportError(f"report is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    # -- binary ----------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Compact binary form (see module docstring); only the built-in payload fields have one."""
        if self.extra:
            raise ReportError(
                f"report field {self.extra[0][0]!r} has no binary form (only value, seed, bits, cohort do)"
            )
        mask = 0
        body = bytearray()
        if self.value is not None:
            mask |= 1
            if isinstance(self.value, int):
                body += b"\x00" + struct.pack(">q", self.value)
            elif isinstance(self.value, float):
                body += b"\x01" + struct.pack(">d", self.value)
            else:
                body += b"\x02" + _pack_text(self.value, "value")
        if self.seed is not None:
            mask |= 2
            body += struct.pack(">Q", self.seed)
        if self.bits is not None:
            mask |= 4
            if len(self.bits) > 0xFFFF:
                raise ReportError("report 'bits' longer than 65535 bytes")
            body += struct.pack(">H", len(self.bits)) + self.bits
        if self.cohort is not None:
            mask |= 8
            body += struct.pack(">I", self.cohort)
        if self.client is not None:
            mask |= 16
            body += _pack_text(self.client, "client")
        if self.group is not None:
            mask |= 32
            body += _pack_text(self.group, "group")
        version = report_version(self.group) if self.v is None else self.v  # never None after __post_init__
        return bytes([version, mask]) + bytes.fromhex(self.spec) + bytes(body)

    @classmethod
    def from_bytes(cls, data: bytes) -> Report:
        """Parse the binary form; :class:`ReportError` names what is wrong."""
        reader = _Reader(bytes(data))
        version = reader.take(1, "version")[0]
        if version not in REPORT_VERSIONS:
            raise ReportError(
                f"report version {version} is not supported (this version reads {_versions_text()})"
            )
        mask = reader.take(1, "field mask")[0]
        if mask & ~_MASK_BITS[version]:
            raise ReportError(f"report field mask has unknown bits for version {version}: {mask:#04x}")
        fields: dict[str, Any] = {"spec": reader.take(8, "spec fingerprint").hex()}
        if mask & 1:
            tag = reader.take(1, "value type")[0]
            if tag == 0:
                fields["value"] = struct.unpack(">q", reader.take(8, "value"))[0]
            elif tag == 1:
                fields["value"] = struct.unpack(">d", reader.take(8, "value"))[0]
            elif tag == 2:
                fields["value"] = reader.text("value")
            else:
                raise ReportError(f"report value type tag {tag} is unknown")
        if mask & 2:
            fields["seed"] = struct.unpack(">Q", reader.take(8, "seed"))[0]
        if mask & 4:
            length = struct.unpack(">H", reader.take(2, "bits length"))[0]
            fields["bits"] = reader.take(length, "bits")
        if mask & 8:
            fields["cohort"] = struct.unpack(">I", reader.take(4, "cohort"))[0]
        if mask & 16:
            fields["client"] = reader.text("client")
        if mask & 32:
            fields["group"] = reader.text("group")
        if reader.remaining:
            raise ReportError(f"report has {reader.remaining} unexpected trailing bytes")
        return cls(v=version, **fields)


#: The fields :meth:`Report.of_encoder` does not take, as the constructor sets them (no group: format version 1).
_ENCODER_DEFAULTS = {"client": None, "group": None, "v": report_version(None)}


def _check_extra(extra: Any) -> tuple[tuple[str, Any], ...]:
    """The ``extra`` fields as (name, value) pairs, each a declared name with a JSON scalar or bytes."""
    pairs = tuple(extra.items()) if isinstance(extra, Mapping) else tuple(extra)
    seen: set[str] = set()
    for item in pairs:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise ReportError(
                f"report 'extra' must hold (name, value) pairs, got {shown(item, VALUE_ECHO_LIMIT)}"
            )
        name, value = item
        if name in _JSON_KEYS or _undeclared((name,)):
            raise ReportError(f"report has unknown fields: {shown(name, VALUE_ECHO_LIMIT)}")
        if name in seen:
            raise ReportError(f"report names the field {name!r} twice")
        seen.add(name)
        if isinstance(value, bool) or not isinstance(value, (str, int, float, bytes)):
            raise ReportError(
                f"report '{name}' must be a string, a number or bytes, got {shown(value, VALUE_ECHO_LIMIT)}"
            )
        if isinstance(value, str):
            check_text(value, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ReportError(f"report '{name}' must be finite, got {value!r}")
        if isinstance(value, int) and not -(1 << 63) <= value <= _MAX_U64:
            raise ReportError(f"report '{name}' integer out of 64-bit range: {value}")
    return tuple((name, value) for name, value in pairs)


def _versions_text() -> str:
    return " and ".join(map(str, REPORT_VERSIONS))


def _pack_text(text: str, name: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0xFFFF:
        raise ReportError(f"report '{name}' longer than 65535 bytes")
    return struct.pack(">H", len(raw)) + raw


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int, what: str) -> bytes:
        if self.remaining < n:
            raise ReportError(f"report is truncated: {what} needs {n} bytes, {self.remaining} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def text(self, what: str) -> str:
        length = struct.unpack(">H", self.take(2, f"{what} length"))[0]
        raw = self.take(length, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ReportError(f"report '{what}' is not valid UTF-8") from None
