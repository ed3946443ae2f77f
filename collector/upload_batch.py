"""A JSON upload body decoded and checked as a whole: the common well-formed upload in a few C passes.

:func:`check_upload_body` decodes an ``application/json`` upload straight
into typed records (msgspec: field types, required and unknown keys, the
fingerprint, the versions and the integer ranges checked as the JSON is
read, in C) and finishes the task's rules over the batch's columns rather
than per report: the distinct ``t`` values against the accepted range, the
time precision and the pruned windows; every id against the id pattern in
one match over their concatenation, and decoded in one call; the bit
vectors' lengths and zero padding in one NumPy pass; domain values through
one dict per spec. The records to store and count are then made by
``map`` over the columns, with no Python code run per report, and kept as
columns (:class:`~ldp.collector.envelopes.AcceptedColumns`): no checked
record is made per report.

It only ever *accepts* a whole upload: a body it cannot accept exactly as
the envelope-by-envelope path would (:func:`ldp.collector.envelopes.parse_upload`
then :func:`ldp.collector.envelopes.check_envelopes`), because any envelope
is malformed, out of range, carries a key the record does not declare (a
``client`` id), or holds text that the two encoders might spell
differently, gets None, and the caller runs that path on it, which accepts
it or names what is wrong with each envelope. So every rejection and its
reason is that path's, unchanged; what this accepts is accepted there with
the same checked content and the same stored text (tests/collector/test_upload_batch.py
compares the two on mutated bodies of every registered mechanism).

Specs whose reports have a field of another kind (a conditional field, a
record part, a subclass with rules of its own, a declared extra field) have
no batch decoder: their uploads take the envelope-by-envelope path.
"""

from __future__ import annotations

import binascii
import operator
import re
from collections.abc import Callable, Collection
from typing import Annotated, Any, Literal

import msgspec
import numpy as np

from ldp.collector.acceptance import DEFAULT_ACCEPTANCE, Acceptance, clock_skew
from ldp.collector.envelopes import (
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
from ldp.errors import ReportError
from ldp.report import REPORT_VERSIONS, check_group
from ldp.report_schema import BitVector, BoundedInt, DomainElement, report_schema_of

__all__ = ["BatchDecoder", "batch_decoder", "check_upload_body"]

# What Report itself allows an integer field to hold, by name (as ldp.report_compiled)
_INT_RANGES = {"value": (-(1 << 63), 1 << 63), "seed": (0, 1 << 64), "cohort": (0, 1 << 32)}
# every id is 22 characters (checked as decoded): the concatenation matches iff each id does
_IDS = re.compile(r"(?:[A-Za-z0-9_-]{21}[AQgw])*")
_URLSAFE = bytes.maketrans(b"-_", b"+/")
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
        schema = report_schema_of(spec)
        fields = {field.name: field for field in schema.fields}
        # the order of Report.to_dict: v, spec, cohort, seed, value, bits, group (msgspec writes fields in order)
        annotations: dict[str, Any] = {
            "v": Literal[REPORT_VERSIONS],
            "spec": Literal[spec.fingerprint],
        }
        self._domain: Callable[[Any], Any] | None = None
        self._bits: tuple[int, int] | None = None
        for name in ("cohort", "seed", "value", "bits"):
            field = fields.get(name)
            if field is None:
                continue
            if type(field) is DomainElement and name == "value":
                annotations[name] = str | int
                self._domain = _domain_lookup(spec, field)
            elif type(field) is BoundedInt:
                low, high = _INT_RANGES[name]
                limit = min(field.bound_for(spec), high)
                annotations[name] = Annotated[int, msgspec.Meta(ge=max(0, low), lt=limit)]
            elif type(field) is BitVector and name == "bits":
                num_bits = field.num_bits(spec)
                annotations[name] = (
                    bytes  # base64: msgspec accepts what b64decode(validate=True) accepts, or less
                )
                self._bits = ((num_bits + 7) // 8, (1 << (-num_bits % 8)) - 1)
        annotations["group"] = str | None
        record = msgspec.defstruct(
            "Report",
            [(name, kind) for name, kind in annotations.items() if name != "group"]
            + [("group", str | None, None)],
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
        self._names = tuple(name for name in ("value", "seed", "bits", "cohort") if name in fields)
        self._getters = {name: operator.attrgetter(name) for name in self._names}
        self._text_fields = tuple(
            name for name in ("value",) if name in fields and type(fields[name]) is DomainElement
        )

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
            return self._accept(task, envelopes, now, acceptance, pruned)
        except _Refused:
            return None

    def _accept(
        self, task: Task, envelopes: list[Any], now: float, acceptance: Acceptance, pruned: Collection[int]
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
        columns: dict[str, Any] = {name: list(map(getter, reports)) for name, getter in self._getters.items()}
        for name in self._text_fields:
            strings = [value for value in set(columns[name]) if type(value) is str]
            for value in strings:
                _plain(value)
        if self._domain is not None:
            columns["value"] = list(map(self._domain, columns["value"]))
        if self._bits is not None:
            width, padding = self._bits
            bits = columns["bits"]
            if set(map(len, bits)) != {width}:
                raise _Refused
            if (
                padding
                and np.bitwise_and(np.frombuffer(b"".join(bits), np.uint8)[width - 1 :: width], padding).any()
            ):
                raise _Refused
        texts = list(map(bytes.decode, map(self._encode, reports)))
        get = columns.get
        return CheckedUpload(
            AcceptedColumns(
                ids,
                StoredColumns(raw_ids, ts, texts),
                (get("value"), get("seed"), get("bits"), get("cohort")),
                groups,
            ),
            [],
        )


def _plain(text: str) -> None:
    """Refuse a string that the two JSON encoders (orjson, msgspec) might spell differently."""
    if _ESCAPED.search(text) is not None:
        raise _Refused


def _domain_lookup(spec: Any, field: DomainElement) -> Callable[[Any], int]:
    """A domain value's index: one dict lookup, filled with the field's own check as values arrive (as ldp.report_compiled)."""
    index: dict[Any, int] = {}
    most = 2 * len(spec.domain)
    low, high = _INT_RANGES["value"]

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
    """Whether every field of the spec's reports is one the batch decoder types exactly."""
    schema = report_schema_of(spec)
    if schema.conditional:
        return False
    for field in schema.fields:
        kind = type(field)
        if not (
            (kind is DomainElement and field.name == "value")
            or (kind is BoundedInt and field.name in _INT_RANGES)
            or (kind is BitVector and field.name == "bits")
        ):
            return False
    return True


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
