"""A spec's report check compiled once: the common well-formed report accepted in one pass.

:func:`compile_report_check` reads a spec's report schema once and returns a
function that takes one report in its parsed JSON form (a dict) and either
accepts it, returning what the two-step path would have produced, or returns
None. The two-step path is :meth:`ldp.report.Report.from_dict` followed by
:func:`ldp.report_check.check_report` (about 20 µs a report: a frozen
dataclass, its validation, the schema walked field by field); the compiled
check does the same work with the schema's rules bound in advance (a domain
as one dict lookup, a bound as one comparison) in a few µs.

It only ever *accepts*: a report it cannot accept exactly as the two-step
path would (a wrong type, a value out of range, an unknown key, a spelling
the two-step path normalizes such as an upper-case fingerprint, a ``client``
id, a schema with conditional fields) gets None, and the caller runs the
two-step path on it, which accepts it or names what is wrong. So every
rejection and its reason is the two-step path's, unchanged; what the compiled
check accepts is accepted there too, with the same checked content and the
same JSON form (tests/core/test_report_compiled.py compares the two on
generated reports).
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Callable
from typing import Any

from ldp.report import BUILTIN_PAYLOAD, REPORT_VERSIONS, check_group
from ldp.report_check import CheckedReport
from ldp.report_schema import BitVector, BoundedInt, DomainElement, PartField, ReportField, report_schema_of

__all__ = ["CompiledCheck", "compile_report_check", "int_range"]

#: One report's checked content and its canonical JSON dict (the keys and order of ``Report.to_dict``).
CompiledCheck = Callable[[Any], "tuple[CheckedReport, dict[str, Any]] | None"]
#: Checks one field's raw JSON value: (checked value, value in the canonical dict); raises when it cannot.
_FieldCheck = Callable[[Any], tuple[Any, Any]]

# What Report itself allows an integer field to hold, by name (others: a declared extra field).
_INT_RANGES = {"value": (-(1 << 63), 1 << 63), "seed": (0, 1 << 64), "cohort": (0, 1 << 32)}
_EXTRA_INT_RANGE = (-(1 << 63), 1 << 64)  # [-2^63, 2^64 - 1]
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_CANONICAL_BUILTINS = ("cohort", "seed", "value")  # the order of Report.to_dict (bits comes after the extras)


def int_range(name: str) -> tuple[int, int]:
    """[low, high): the integers Report lets a payload field named ``name`` hold (value, seed, cohort, or an extra)."""
    return _INT_RANGES.get(name, _EXTRA_INT_RANGE)


class _Refused(Exception):
    """The compiled check cannot accept this value: the two-step path decides."""


def compile_report_check(spec: Any) -> CompiledCheck | None:
    """The compiled check of ``spec``'s reports, or None when its schema has conditional fields.

    The returned function takes one report's parsed JSON (normally a dict)
    and returns ``(checked, canonical)``: the :class:`~ldp.report_check.CheckedReport`
    that ``check_report(spec, Report.from_dict(data))`` returns and the dict
    ``Report.to_dict()`` returns for that report; or None when the report
    must take that two-step path (which then accepts it or says why not).
    A report carrying a ``client`` id always takes the two-step path.
    """
    schema = report_schema_of(spec)
    if schema.conditional:
        return None
    names = schema.names
    namespace: dict[str, Any] = {
        "plain": frozenset({"v", "spec", *names}),
        "grouped": frozenset({"v", "spec", "group", *names}),
        "versions": REPORT_VERSIONS,
        "group_version": max(REPORT_VERSIONS),
        "fingerprint": spec.fingerprint,
        "check_group": check_group,
        "make": tuple.__new__,
        "CheckedReport": CheckedReport,
        "extra_names": frozenset(n for n in names if n not in BUILTIN_PAYLOAD),
    }
    for i, field in enumerate(schema.fields):
        namespace[f"check{i}"] = _field_check(spec, field)
    exec(_source(names), namespace)  # the text holds the schema's identifiers and nothing else
    check: CompiledCheck = namespace["check"]
    return check


def _source(names: tuple[str, ...]) -> str:
    """The text of ``check(data)`` for a schema of unconditional fields ``names`` (see :func:`compile_report_check`).

    Generated, so that one report costs the field checks and nothing else:
    no loop over the fields, no intermediate list or dict.
    """
    position = {name: i for i, name in enumerate(names)}
    # CheckedReport is (value, seed, bits, cohort, group, extra)
    slots = [f"c{position[n]}" if n in position else "None" for n in ("value", "seed", "bits", "cohort")]
    extra = "".join(f"({n!r}, c{i}), " for i, n in enumerate(names) if n not in BUILTIN_PAYLOAD)
    fields = "".join(f"        c{i}, w{i} = check{i}(data[{n!r}])\n" for i, n in enumerate(names))
    # Report.to_dict's order: v, spec, cohort, seed, value, the extra fields as they came, bits, group
    head = "".join(f"{n!r}: w{position[n]}, " for n in _CANONICAL_BUILTINS if n in position)
    if "bits" in position and not extra:
        head += f"'bits': w{position['bits']}"
    extras = ""
    if extra:
        written = ", ".join(f"{n!r}: w{i}" for i, n in enumerate(names) if n not in BUILTIN_PAYLOAD)
        extras = (
            f"    written = {{{written}}}\n"
            "    for name in data:\n"
            "        if name in extra_names:\n"
            "            canonical[name] = written[name]\n"
        )
    bits = f"    canonical['bits'] = w{position['bits']}\n" if "bits" in position and extra else ""
    return (
        "def check(data):\n"
        "    if type(data) is not dict:\n"
        "        return None\n"
        "    keys = data.keys()\n"
        "    if keys == plain:\n"
        "        group = None\n"
        "    elif keys == grouped:\n"
        "        group = data['group']\n"
        "    else:\n"
        "        return None\n"
        "    version = data['v']\n"
        "    if type(version) is not int or version not in versions or data['spec'] != fingerprint:\n"
        "        return None\n"
        "    try:\n"
        "        if group is not None:\n"
        "            if version < group_version:\n"
        "                return None\n"
        "            check_group(group)\n"
        f"{fields}"
        "    except Exception:\n"  # a _Refused, a ReportError, a value not in the domain: the two-step path
        "        return None\n"
        f"    canonical = {{'v': version, 'spec': fingerprint, {head}}}\n"
        f"{extras}"
        f"{bits}"
        "    if group is not None:\n"
        "        canonical['group'] = group\n"
        f"    return make(CheckedReport, ({', '.join(slots)}, group, ({extra}))), canonical\n"
    )


def _field_check(spec: Any, field: ReportField) -> _FieldCheck:
    """The compiled check of one (unconditional) field, under its own name, against ``spec`` or its part."""
    name = field.name
    if isinstance(field, PartField):
        assert field.inner is not None  # PartField checks it
        spec, field = field.part(spec), field.inner  # the part's own rules, under the record's name
    # exact types: a subclass may add rules of its own (subset selection counts the bits set)
    if type(field) is DomainElement:
        return _domain_check(spec, field, name)
    if type(field) is BoundedInt:
        return _bounded_check(field.bound_for(spec), name)
    if isinstance(field, BitVector):
        return _bits_check(spec, field, name)
    if name == "bits":  # Report decodes 'bits' from base64 whatever the field type: the two-step path
        return _refuse
    return _generic_check(spec, field, name)


def _refuse(raw: Any) -> tuple[Any, Any]:
    raise _Refused


def _report_rule(name: str, raw: Any) -> None:
    """Raise :class:`_Refused` unless :class:`~ldp.report.Report` itself takes ``raw`` as field ``name``."""
    kind = type(raw)
    if name in ("seed", "cohort"):
        low, high = _INT_RANGES[name]
        if kind is not int or not low <= raw < high:
            raise _Refused
        return
    if kind is str:
        raw.encode("utf-8")  # a lone surrogate: UnicodeEncodeError (a ValueError)
        return
    if kind is int:
        low, high = int_range(name)
        if not low <= raw < high:
            raise _Refused
        return
    if kind is float and math.isfinite(raw):
        return
    raise _Refused


def _domain_check(spec: Any, field: DomainElement, name: str) -> _FieldCheck:
    """A domain element: one dict lookup, filled as values arrive with the field's own check.

    Filled lazily (a value's first report runs ``field.check``, later ones a
    lookup), so compiling costs nothing for a large domain, and only values
    the field accepted are kept: at most the domain and its string forms.
    """
    index: dict[Any, int] = {}
    most = 2 * len(spec.domain)
    types = (str, int) if name not in ("seed", "cohort") else (int,)

    def check(raw: Any) -> tuple[Any, Any]:
        if type(raw) not in types:  # a bool, a float, None...: the two-step path decides
            raise _Refused
        try:
            return index[raw], raw
        except KeyError:
            pass
        _report_rule(name, raw)
        checked = int(field.check(spec, raw))  # a value not in the domain: ReportError
        if len(index) < most:
            index[raw] = checked
        return checked, raw

    return check


def _bounded_check(bound: int, name: str) -> _FieldCheck:
    """An integer in [0, bound) (a float or text a lenient field also takes: the two-step path)."""
    low, high = int_range(name)
    limit = min(bound, high)
    if low > 0:
        raise AssertionError("no Report field range starts above 0")

    def check(raw: Any) -> tuple[Any, Any]:
        if type(raw) is not int or not 0 <= raw < limit:
            raise _Refused
        return raw, raw

    return check


def _bits_check(spec: Any, field: BitVector, name: str) -> _FieldCheck:
    """A packed bit vector in base64: decoded, its length and zero padding checked (a subclass: its own check).

    ``binascii.a2b_base64(text, strict_mode=True)`` accepts only text that
    ``base64.b64decode(..., validate=True)`` also accepts, with the same bytes.
    The built-in ``bits`` is written back re-encoded (as Report does), another
    name as it came.
    """
    num_bits = field.num_bits(spec)
    width = (num_bits + 7) // 8
    spare = width * 8 - num_bits
    padding = (1 << spare) - 1
    builtin = name == "bits"
    own_check = None if type(field) is BitVector else field.check
    # canonical base64 of `width` bytes: the last character before the padding has its unused bits zero
    last, unused = {0: (0, 0), 1: (-3, 4), 2: (-2, 2)}[width % 3]
    canonical_last = frozenset(_B64[i] for i in range(64) if not i & ((1 << unused) - 1))

    def check(raw: Any) -> tuple[Any, Any]:
        if type(raw) is not str:
            raise _Refused
        decoded = binascii.a2b_base64(raw, strict_mode=True)
        if own_check is not None:
            checked = own_check(spec, decoded)
        elif len(decoded) != width or (padding and decoded[-1] & padding):
            raise _Refused
        else:
            checked = decoded
        if not builtin or (len(decoded) == width and (not last or raw[last] in canonical_last)):
            return checked, raw
        return checked, binascii.b2a_base64(decoded, newline=False).decode("ascii")  # as Report writes it

    return check


def _generic_check(spec: Any, field: ReportField, name: str) -> _FieldCheck:
    """Any other field type: Report's rule for the name, then the field's own check."""

    def check(raw: Any) -> tuple[Any, Any]:
        _report_rule(name, raw)
        return field.check(spec, raw), raw

    return check
