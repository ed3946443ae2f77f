"""A JSON upload body decoded and checked as a whole: the common well-formed upload in a few C passes.

:func:`check_upload_body` decodes an ``application/json`` upload straight
into typed records (msgspec: field types, required and unknown keys, the
fingerprint, the versions and the integer ranges checked as the JSON is
read, in C) and finishes the task's rules over the batch's columns rather
than per report: the distinct ``t`` values against the accepted range, the
time precision and the pruned windows; every id against the id pattern in
one match over their concatenation, and decoded in one call; the bit
vectors' lengths, zero padding and weights (a subset's k ones, dBitFlip's d
samples: :meth:`~ldp.report_schema.BitVector.rows_ok`) in one NumPy pass;
numbers against the spec's output support in one call; domain values
through one dict per spec. The records to store and count are then made by
``map`` over the columns (a domain value's lookup, a record part's presence
the only Python code run per report), and kept as
columns (:class:`~ldp.collector.envelopes.AcceptedColumns`): no checked
record is made per report.

Every field kind of :mod:`ldp.report_schema` is typed (exact types, and the
two bit vector subclasses whose further rule is ``rows_ok``), under any
name, as a record's part (:class:`~ldp.report_schema.PartField`) too, and
conditional fields present exactly where their flag bits are set. The
stored text is what :meth:`~ldp.report.Report.to_dict` gives, written by
msgspec: ``bits`` re-encoded, any other field as it came (a number parsed and
written back in the shortest form, as orjson writes it; a bit vector of
another name as its text). Report keeps fields beyond value, seed, bits and
cohort in the order they came, so with two or more of them the body must
hold their keys in the schema's order in every report, checked by one
search over the body (an accepted body holds no escaped quote, so every
match is a key).

It only ever *accepts* a whole upload: a body it cannot accept exactly as
the envelope-by-envelope path would (:func:`ldp.collector.envelopes.parse_upload`
then :func:`ldp.collector.envelopes.check_envelopes`), because any envelope
is malformed, out of range, carries a key the record does not declare (a
``client`` id), holds text or a number that the two encoders might spell
differently, or fields in another order, gets None, and the caller runs
that path on it, which accepts it or names what is wrong with each
envelope. So every rejection and its reason is that path's, unchanged; what
this accepts is accepted there with the same checked content and the same
stored text (tests/collector/test_upload_batch.py compares the two on
mutated bodies of every registered mechanism).

A spec whose reports have a field of another kind (a subclass with rules of
its own, a field type of a plug-in) has no batch decoder: its uploads take
the envelope-by-envelope path.
"""

from __future__ import annotations

import binascii
import operator
import re
from collections.abc import Callable, Collection
from itertools import compress, repeat
from typing import Annotated, Any, Literal, NamedTuple, cast

import msgspec
import numpy as np

from ldp.collector.acceptance import DEFAULT_ACCEPTANCE, Acceptance, clock_skew
from ldp.collector.envelopes import (
    _URLSAFE,
    JSON_TYPES,
    MAX_BODY_BYTES,
    MAX_ENVELOPES,
    AcceptedColumns,
    CheckedUpload,
    cached_per_spec,
    media_type,
)
from ldp.collector.store import StoredColumns
from ldp.collector.tasks import Task
from ldp.errors import ReportError, SpecError
from ldp.report import BUILTIN_PAYLOAD, REPORT_VERSIONS, check_group
from ldp.report_arrow import base64_bits_rows, base64_length
from ldp.report_compiled import int_range
from ldp.report_schema import (
    BitVector,
    BoundedInt,
    DomainElement,
    Number,
    PartField,
    ReportField,
    report_schema_of,
)
from ldp.specs.dbitflip import DBitFlipBits
from ldp.specs.subset import SubsetBits

__all__ = ["BatchDecoder", "batch_decoder", "check_upload_body"]

# a Number: an int Report takes whatever the name (msgspec refuses one past 64 bits), or a float (finite)
_NUMBER = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)] | float
# from 1e16 on, msgspec writes a float's exponent without its sign ('1e16'), orjson with it ('1e+16'):
# such a number takes the envelope path (below, both write the shortest repr the same way)
_PLAIN_FLOAT_LIMIT = 1e16
# the field types typed (a bit vector's every rule is its length, zero padding and BitVector.rows_ok)
_TYPED_KINDS = (DomainElement, BoundedInt, Number, BitVector, SubsetBits, DBitFlipBits)
# every id is 22 characters (checked as decoded): the concatenation matches iff each id does
_IDS = re.compile(r"(?:[A-Za-z0-9_-]{21}[AQgw])*")
# text both JSON encoders write verbatim (printable ASCII but the quote and the backslash)
_ESCAPED = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
_ID_SLICES = [slice(18 * i, 18 * i + 16) for i in range(MAX_ENVELOPES)]
_GROUP_VERSION = max(REPORT_VERSIONS)
_get_id, _get_t, _get_report = (operator.attrgetter(n) for n in ("id", "t", "report"))
_get_v, _get_group = operator.attrgetter("v"), operator.attrgetter("group")


class _Refused(Exception):
    """The batch decoder cannot accept this upload: the envelope-by-envelope path decides."""


class BatchDecoder:
    """One spec's upload decoder: the body's records typed by the spec's report schema.

    Built by :func:`batch_decoder` (None for a schema it cannot type).
    """

    def __init__(self, spec: Any) -> None:
        columns = [_column(spec, field) for field in report_schema_of(spec).fields]
        if any(column is None for column in columns):
            raise SpecError(f"the batch decoder cannot type every field of {spec.mechanism} reports")
        self._columns = cast("list[_Column]", columns)
        by_name = {column.name: column for column in self._columns}
        extras = [column.name for column in self._columns if column.name not in BUILTIN_PAYLOAD]
        # the order of Report.to_dict (msgspec writes fields in order): v, spec, cohort, seed, value,
        # the extra fields as they came (checked to come in the schema's order), bits, group
        order = [name for name in ("cohort", "seed", "value") if name in by_name] + extras
        order += ["bits"] if "bits" in by_name else []
        record = msgspec.defstruct(
            "Report",
            [("v", Literal[REPORT_VERSIONS]), ("spec", Literal[spec.fingerprint])]
            + [_struct_field(by_name[name]) for name in order]
            + [("group", str | None, None)],
            kw_only=True,  # (a conditional field, None when absent, may come before a required one)
            forbid_unknown_fields=True,
            omit_defaults=True,
            gc=False,  # (holds no containers: not tracked by the cyclic garbage collector)
        )
        envelope = msgspec.defstruct(
            "Envelope",
            [
                ("id", Annotated[str, msgspec.Meta(min_length=22, max_length=22)]),
                ("t", int),
                ("report", record),
            ],
            forbid_unknown_fields=True,
            gc=False,
        )
        self._decoder = msgspec.json.Decoder(list[envelope])  # type: ignore[valid-type]
        self._encode = msgspec.json.Encoder().encode
        self._getters = [operator.attrgetter(column.name) for column in self._columns]
        self._conditional = any(column.flag is not None for column in self._columns)
        # Report keeps the extra fields in the order they came: with two or more, the body must hold
        # their keys in the schema's order in every report (one search over the body)
        self._extra_keys: re.Pattern[bytes] | None = None
        self._extra_order: list[bytes] = []
        if len(extras) > 1 or self._conditional:
            names = b"|".join(re.escape(name.encode("ascii")) for name in extras)
            self._extra_keys = re.compile(b'"(' + names + b')"[ \t\n\r]*:')
            self._extra_order = [name.encode("ascii") for name in extras]

    def check(
        self,
        task: Task,
        body: bytes,
        now: float,
        acceptance: Acceptance = DEFAULT_ACCEPTANCE,
        pruned: Collection[int] = frozenset(),
    ) -> CheckedUpload | None:
        """Every envelope of ``body`` accepted (as :func:`~ldp.collector.envelopes.check_envelopes` would), or None."""
        try:
            envelopes = self._decoder.decode(body)
        except (
            msgspec.DecodeError,
            UnicodeDecodeError,
        ):  # malformed, not UTF-8, or not typed: envelope by envelope
            return None
        n = len(envelopes)
        if n > MAX_ENVELOPES:
            return None
        if not n:
            return CheckedUpload([], [])
        try:
            return self._accept(task, body, envelopes, now, acceptance, pruned)
        except _Refused:
            return None

    def _accept(
        self,
        task: Task,
        body: bytes,
        envelopes: list[Any],
        now: float,
        acceptance: Acceptance,
        pruned: Collection[int],
    ) -> CheckedUpload:
        n = len(envelopes)
        ids = list(map(_get_id, envelopes))
        ts = list(map(_get_t, envelopes))
        reports = list(map(_get_report, envelopes))
        # t: each distinct value against the range, the precision and the pruned windows
        latest = now + clock_skew(task)
        earliest = acceptance.earliest(task, now)
        low = max(0, earliest[0], task.not_before if task.not_before is not None else 0)
        high = latest if task.not_after is None else min(latest, task.not_after - 1)
        precision = task.time_precision
        for t in set(ts):
            if not low <= t <= high or t % precision or (pruned and task.window_start(t) in pruned):
                raise _Refused
        joined = "".join(ids)
        if _IDS.fullmatch(joined) is None:
            raise _Refused
        blob = binascii.a2b_base64(("AA".join(ids) + "AA").encode("ascii").translate(_URLSAFE))
        raw_ids = list(map(blob.__getitem__, _ID_SLICES[:n]))
        # group: each distinct (version, group) pair
        groups = list(map(_get_group, reports))
        for version, group in set(zip(map(_get_v, reports), groups)):
            if group is not None:
                if version < _GROUP_VERSION:
                    raise _Refused
                _plain(group)
                try:
                    check_group(group)
                except ReportError:
                    raise _Refused from None
        columns: dict[str, list[Any]] = {}
        for column, getter in zip(self._columns, self._getters):
            values = list(map(getter, reports))
            if column.flag is None:
                columns[column.name] = column.finish(values)
            else:
                columns[column.name] = _conditional_column(column, values, columns[column.flag[0]])
        if self._extra_keys is not None and self._extra_keys.findall(body) != self._extra_keys_sent(
            columns, n
        ):
            raise _Refused  # extra fields in another order (stored as they came), spelled otherwise, or repeated
        texts = list(map(bytes.decode, map(self._encode, reports)))
        return CheckedUpload(AcceptedColumns(ids, StoredColumns(raw_ids, ts, texts), columns, groups), [])

    def _extra_keys_sent(self, columns: dict[str, list[Any]], n: int) -> list[bytes]:
        """The extra fields' keys the body holds when each report has them in the schema's order."""
        if not self._conditional:
            return self._extra_order * n
        names = [name for name in columns if name not in BUILTIN_PAYLOAD]
        encoded = [name.encode("ascii") for name in names]
        present = zip(*(map(operator.is_not, columns[name], repeat(None)) for name in names))
        keys: dict[tuple[bool, ...], list[bytes]] = {}
        sent: list[bytes] = []
        for row in present:
            try:
                sent += keys[row]
            except KeyError:
                keys[row] = list(compress(encoded, row))
                sent += keys[row]
        return sent


def _struct_field(column: _Column) -> tuple[Any, ...]:
    """The msgspec struct field of a column (a conditional one is None when absent, and then not written)."""
    return (column.name, column.annotation) if column.flag is None else (column.name, column.annotation, None)


def _conditional_column(column: _Column, values: list[Any], flags: list[bytes]) -> list[Any]:
    """A conditional field's checked column (None where absent): present exactly where its flag bit is set."""
    assert column.flag is not None
    bit = column.flag[1]
    packed = np.frombuffer(b"".join(flags), np.uint8).reshape(len(flags), -1)
    expected = (packed[:, bit >> 3] & (0x80 >> (bit & 7))) != 0
    present = np.fromiter(map(operator.is_not, values, repeat(None)), bool, len(values))
    if not np.array_equal(present, expected):
        raise _Refused
    if present.all():
        return column.finish(values)
    checked = iter(column.finish(list(compress(values, present))) if present.any() else [])
    return [next(checked) if carried else None for carried in present.tolist()]


def _plain(text: str) -> None:
    """Refuse a string that the two JSON encoders (orjson, msgspec) might spell differently."""
    if _ESCAPED.search(text) is not None:
        raise _Refused


class _Column(NamedTuple):
    """How the batch decoder types one payload field and checks its column."""

    name: str
    annotation: Any  # the msgspec type of the field's JSON value
    finish: Callable[[list[Any]], list[Any]]  # the checked column (as check_report gives it), or _Refused
    flag: tuple[str, int] | None = None  # (flags field, bit): present exactly where that bit is set


def _column(spec: Any, field: ReportField) -> _Column | None:
    """The batch decoder's column of one schema field, or None when it cannot check it exactly.

    Exact types only: a subclass may add rules of its own (a bit vector's
    subclasses are known: their further rule is :meth:`~ldp.report_schema.BitVector.rows_ok`).
    A :class:`~ldp.report_schema.PartField` is its part's field under its own name.
    """
    name = field.name
    flag = field.presence_flag()
    if isinstance(field, PartField):
        if field.inner is None:
            return None
        spec, field = field.part(spec), field.inner
    column = _typed_column(spec, field, name)
    if column is None or flag is None:
        return column
    if name in BUILTIN_PAYLOAD or flag[0] in BUILTIN_PAYLOAD:
        return None
    # a conditional field: None where absent (Report drops a null extra field as absent too)
    return column._replace(annotation=column.annotation | None, flag=flag)


def _typed_column(spec: Any, field: ReportField, name: str) -> _Column | None:
    """:func:`_column` of a field under ``name``, checked against ``spec`` (its part's, for a record part)."""
    if type(field) not in _TYPED_KINDS:  # exact types: a subclass may add rules of its own
        return None
    if name == "bits":  # Report decodes it (msgspec: what b64decode(validate=True) accepts, or less)
        return _Column(name, bytes, _bits_column(spec, field)) if isinstance(field, BitVector) else None
    if isinstance(field, BoundedInt):
        low, high = int_range(name)
        limit = min(field.bound_for(spec), high, 1 << 63)  # (msgspec's bounds are 64-bit signed)
        if low > 0 or limit <= 0:
            return None
        return _Column(name, Annotated[int, msgspec.Meta(ge=0, le=limit - 1)], _unchanged)
    if name in ("seed", "cohort"):  # Report holds these as integers whatever the schema says
        return None
    if isinstance(field, DomainElement):
        return _Column(name, str | int, _domain_column(spec, field))
    if isinstance(field, Number):
        return _Column(name, _NUMBER, _number_column(spec))
    assert isinstance(field, BitVector)
    return _Column(name, str, _base64_column(spec, field))  # Report keeps the text that came


def _unchanged(values: list[Any]) -> list[Any]:
    return values


def _domain_column(spec: Any, field: DomainElement) -> Callable[[list[Any]], list[Any]]:
    """Domain values: each distinct text plain, then one dict lookup each."""
    lookup = _domain_lookup(spec, field)

    def finish(values: list[Any]) -> list[Any]:
        for value in set(values):
            if type(value) is str:
                _plain(value)
        return list(map(lookup, values))

    return finish


def _number_column(spec: Any) -> Callable[[list[Any]], list[Any]]:
    """Numbers (msgspec: an int in 64 bits or a finite float): in the spec's output support, in one pass."""

    def finish(values: list[Any]) -> list[Any]:
        numbers = np.fromiter(map(float, values), np.float64, len(values))  # float(raw), as Number.check
        if not (
            np.isfinite(numbers).all()
            and (np.abs(numbers) < _PLAIN_FLOAT_LIMIT).all()
            and np.asarray(spec.in_support(numbers)).all()
        ):
            raise _Refused
        return numbers.tolist()

    return finish


def _bits_column(spec: Any, field: BitVector) -> Callable[[list[Any]], list[Any]]:
    """Decoded bit vectors: their lengths, zero padding and the field's further rule, in one NumPy pass."""
    num_bits = field.num_bits(spec)
    width, padding = (num_bits + 7) // 8, (1 << (-num_bits % 8)) - 1
    further = type(field).rows_ok is not BitVector.rows_ok  # (a plain vector's bytes need no array)

    def finish(values: list[Any]) -> list[Any]:
        if set(map(len, values)) != {width}:
            raise _Refused
        if padding or further:
            packed = np.frombuffer(b"".join(values), np.uint8).reshape(len(values), width)
            if padding and np.bitwise_and(packed[:, -1], padding).any():
                raise _Refused
            _rows_ok(spec, field, packed)
        return values

    return finish


def _base64_column(spec: Any, field: BitVector) -> Callable[[list[Any]], list[Any]]:
    """Bit vectors in base64 under another name than ``bits`` (Report keeps their text): decoded in one pass."""
    num_bits = field.num_bits(spec)
    width, length = (num_bits + 7) // 8, base64_length((num_bits + 7) // 8)
    slices = [slice(width * i, width * (i + 1)) for i in range(MAX_ENVELOPES)]

    def finish(values: list[Any]) -> list[Any]:
        if set(map(len, values)) != {length}:
            raise _Refused
        try:
            text = "".join(values).encode("ascii")
        except UnicodeEncodeError:
            raise _Refused from None
        packed, ok = base64_bits_rows(np.frombuffer(text, np.uint8).reshape(len(values), length), num_bits)
        if not ok.all():
            raise _Refused
        _rows_ok(spec, field, packed)
        return list(map(packed.tobytes().__getitem__, slices[: len(values)]))

    return finish


def _rows_ok(spec: Any, field: BitVector, packed: np.ndarray) -> None:
    ok = field.rows_ok(spec, packed)
    if ok is not None and not ok.all():
        raise _Refused


def _domain_lookup(spec: Any, field: DomainElement) -> Callable[[Any], int]:
    """A domain value's index: one dict lookup, filled with the field's own check as values arrive (as ldp.report_compiled)."""
    index: dict[Any, int] = {}
    most = 2 * len(spec.domain)
    low, high = int_range("value")

    def lookup(raw: Any) -> int:
        try:
            return index[raw]
        except KeyError:
            pass
        if type(raw) is int and not low <= raw < high:
            raise _Refused
        try:
            checked = int(field.check(spec, raw))
        except ReportError:
            raise _Refused from None
        if len(index) < most:
            index[raw] = checked
        return checked

    return lookup


#: The batch decoder of the task's spec, built once per spec (None: its uploads go envelope by envelope).
batch_decoder = cached_per_spec(lambda spec: BatchDecoder(spec) if _typed(spec) else None)


def _typed(spec: Any) -> bool:
    """Whether the batch decoder types every field of the spec's reports exactly."""
    return all(_column(spec, field) is not None for field in report_schema_of(spec).fields)


def check_upload_body(
    task: Task,
    body: bytes,
    content_type: str | None,
    now: float,
    acceptance: Acceptance = DEFAULT_ACCEPTANCE,
    pruned: Collection[int] = frozenset(),
) -> CheckedUpload | None:
    """Every envelope of a JSON upload ``body`` accepted in one pass, or None: then parse and check it envelope by envelope.

    None for another content type, a body over :data:`~ldp.collector.envelopes.MAX_BODY_BYTES`,
    a spec without a batch decoder, or any envelope that the batch decoder
    does not accept (see the module's docstring).
    """
    if len(body) > MAX_BODY_BYTES or media_type(content_type) not in JSON_TYPES:
        return None
    decoder = batch_decoder(task)
    if decoder is None:
        return None
    return decoder.check(task, body, now, acceptance, pruned)
