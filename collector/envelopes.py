"""Upload bodies: envelopes ``{"id", "t", "report"}`` checked one by one (docs/collector.md#upload).

:func:`parse_upload` reads a request body (a JSON array or JSON Lines) into
items, refusing the body as a whole only when it cannot be read at all
(:class:`UnreadableBody`, answered with a problem document).
:func:`check_envelopes` then accounts for every item: accepted (with the
report to store and its checked form for the accumulators) or rejected with
its index, id and reason. Nothing here touches the store.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import orjson

from ldp.aggregator.rejects import classify_reason
from ldp.collector.acceptance import DEFAULT_ACCEPTANCE, MIN_CLOCK_SKEW, Acceptance, clock_skew
from ldp.collector.errors import CollectorError
from ldp.collector.store import ReadAsList, StoredColumns, StoredReport
from ldp.collector.tasks import Task
from ldp.errors import ReportError, SpecError
from ldp.jsonlines import json_line
from ldp.report import BUILTIN_PAYLOAD, Report
from ldp.report_check import CheckedReport, check_report
from ldp.report_compiled import compile_report_check

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_ENVELOPES",
    "MIN_CLOCK_SKEW",
    "REJECT_REASONS",
    "Accepted",
    "AcceptedColumns",
    "CheckedUpload",
    "Rejection",
    "UnreadableBody",
    "cached_per_spec",
    "check_envelopes",
    "clock_skew",
    "parse_upload",
]

#: Limits of one upload request.
MAX_BODY_BYTES = 1 << 20
MAX_ENVELOPES = 1_000
REJECT_REASONS = (
    "invalid_message",
    "wrong_spec",
    "invalid_report",
    "report_too_early",
    "report_dropped",
    "t_out_of_range",
    "id_conflict",
)
_ENVELOPE_KEYS = frozenset({"id", "t", "report"})
_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")  # 16 bytes in base64url without padding
JSON_TYPES = ("application/json",)
JSON_LINES_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
# navigator.sendBeacon can send a body without a CORS preflight only as a "simple" content type
BEACON_TYPES = ("text/plain",)


class UnreadableBody(CollectorError):
    """A body that cannot be read as a whole: the HTTP status, a short title and the detail."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class Rejection:
    """One rejected envelope: its index in the body, its id (None when unreadable) and why."""

    index: int
    id: str | None
    reason: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "reason": self.reason, "detail": self.detail}


class Accepted(NamedTuple):
    """One envelope that passed every check: what to store and what to count.

    A named tuple (one is made per report: a third of a frozen dataclass's
    time); its ``index`` field hides ``tuple.index``, which nothing here uses.
    """

    index: int  # type: ignore[assignment]
    id: str
    stored: StoredReport
    checked: CheckedReport


class AcceptedColumns(ReadAsList, Sequence[Accepted]):
    """Every envelope of one upload accepted, kept as columns (docs/performance.md#collector-columns).

    What the batch decoder (:mod:`ldp.collector.upload_batch`) accepts: what
    to store as columns (:class:`~ldp.collector.store.StoredColumns`), and the
    checked content as one list per payload field, rather than a
    :class:`~ldp.collector.store.StoredReport`, a
    :class:`~ldp.report_check.CheckedReport` and an :class:`Accepted` per
    report, which were half of the batch check's time. Counting
    reads the columns (:meth:`fields`); as a sequence it gives the same
    :class:`Accepted` records as the envelope-by-envelope path, made when read.

    Parameters
    ----------
    ids : list of str
        The envelopes' ids as sent.
    stored : StoredColumns
        What to store, in request order (envelope ``i`` is index ``i``).
    columns : dict of str to list
        The checked content of every payload field of the spec's report
        schema, in the schema's order, as :func:`~ldp.report_check.check_report`
        gives it (None in a row whose report does not carry a conditional field).
    groups : list of (str or None)
        Each report's group key.
    """

    __slots__ = ("_columns", "groups", "ids", "stored")

    def __init__(
        self, ids: list[str], stored: StoredColumns, columns: dict[str, list[Any]], groups: list[str | None]
    ) -> None:
        self.ids = ids
        self.stored = stored
        self._columns = columns
        self.groups = groups

    def fields(self) -> dict[str, list[Any]]:
        """The checked payload, one list per field of the spec's report schema (in its order)."""
        return self._columns

    def __len__(self) -> int:
        return len(self.stored)

    def _accepted(self, i: int) -> Accepted:
        columns = self._columns
        value, seed, bits, cohort = (
            column[i] if (column := columns.get(name)) is not None else None for name in BUILTIN_PAYLOAD
        )
        extra = tuple((name, column[i]) for name, column in columns.items() if name not in BUILTIN_PAYLOAD)
        checked = CheckedReport(value, seed, bits, cohort, self.groups[i], extra)
        return Accepted(i, self.ids[i], self.stored[i], checked)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._accepted(i) for i in range(len(self))[index]]
        return self._accepted(range(len(self))[index])

    def __iter__(self) -> Iterator[Accepted]:
        return map(self._accepted, range(len(self)))


@dataclasses.dataclass(frozen=True)
class CheckedUpload:
    """Every envelope of one upload, accepted or rejected (both in request order)."""

    accepted: Sequence[Accepted]
    rejected: list[Rejection]


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type header, lower case, without parameters."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def parse_upload(body: bytes, content_type: str | None, *, beacon: bool = False) -> list[Any]:
    """The items of an upload body (not yet checked as envelopes).

    With ``beacon`` (the caller checked that the request comes from an origin
    the task allows), a ``text/plain`` body is read as JSON Lines: what
    ``navigator.sendBeacon`` sends without a CORS preflight.

    Raises
    ------
    UnreadableBody
        413 for a body over :data:`MAX_BODY_BYTES`, 415 for another content
        type, 400 for JSON that cannot be parsed (too deep nesting included),
        a JSON value that is not an array, or more than :data:`MAX_ENVELOPES` items.
    """
    if len(body) > MAX_BODY_BYTES:
        raise UnreadableBody(
            413, "Body too large", f"an upload is at most {MAX_BODY_BYTES} bytes, got {len(body)}"
        )
    kind = media_type(content_type)
    if kind in JSON_TYPES:
        items = _loads(body, "the body")
        if not isinstance(items, list):
            raise UnreadableBody(400, "Not an array", "a JSON upload is an array of envelopes")
    elif kind in JSON_LINES_TYPES or (beacon and kind in BEACON_TYPES):
        items = [
            _loads(line, f"line {number}")
            for number, line in enumerate(body.split(b"\n"), start=1)
            if line.strip()
        ]
    else:
        shown = kind or "none"
        raise UnreadableBody(
            415,
            "Unsupported media type",
            f"upload reports as application/json (an array) or application/x-ndjson (JSON Lines), not {shown}"[
                :200
            ],
        )
    if len(items) > MAX_ENVELOPES:
        raise UnreadableBody(
            400, "Too many envelopes", f"an upload holds at most {MAX_ENVELOPES} envelopes, got {len(items)}"
        )
    return items


def _loads(data: bytes, where: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UnreadableBody(400, "Malformed JSON", f"{where} is not valid JSON: {exc}"[:300]) from None


def check_envelopes(
    task: Task,
    items: Sequence[Any],
    now: float,
    acceptance: Acceptance = DEFAULT_ACCEPTANCE,
    pruned: Collection[int] = frozenset(),
) -> CheckedUpload:
    """Check each item as an envelope of ``task`` at collector time ``now`` (Unix seconds).

    ``t`` must lie in the range ``acceptance`` allows (:mod:`ldp.collector.acceptance`),
    and not in a window of ``pruned`` (the starts of the windows whose raw reports
    the task's retention deleted: they take no more reports, whatever the
    task's retention is now).

    A well-formed envelope takes one pass: its id, ``t`` and report checked
    with the task's rules bound in advance (:func:`ldp.report_compiled.compile_report_check`).
    Anything that pass does not accept (an envelope in a pruned window among
    them) goes through the envelope and report checks one rule at a time, which
    accept it or give the reason it is refused.
    """
    accepted: list[Accepted] = []
    rejected: list[Rejection] = []
    latest = now + clock_skew(task)
    earliest = acceptance.earliest(task, now)
    spec = task.spec
    fast = _compiled(task)
    # the t a well-formed envelope may have: [low, high], a multiple of the time precision
    low = max(0, earliest[0], task.not_before if task.not_before is not None else 0)
    high = latest if task.not_after is None else min(latest, task.not_after - 1)
    precision = task.time_precision
    well_formed_id = _ID_PATTERN.fullmatch
    keep = accepted.append
    for index, item in enumerate(items):
        if fast is not None and type(item) is dict and item.keys() == _ENVELOPE_KEYS:
            envelope_id, t = item["id"], item["t"]
            if (
                type(t) is int
                and low <= t <= high
                and not t % precision
                and type(envelope_id) is str
                and well_formed_id(envelope_id) is not None
                and not (pruned and task.window_start(t) in pruned)
            ):
                result = fast(item["report"])
                if result is not None:
                    stored = StoredReport(_raw_id(envelope_id), t, report_text(result[1]))
                    keep(Accepted(index, envelope_id, stored, result[0]))
                    continue
        outcome = _check_one(task, spec, index, item, latest, earliest, pruned)
        if isinstance(outcome, Rejection):
            rejected.append(outcome)
        else:
            keep(outcome)
    return CheckedUpload(accepted, rejected)


_T = TypeVar("_T")

#: Specs whose per-spec checkers are kept at once (a collector serving more at once rebuilds some).
_CACHED_SPECS = 256


def cached_per_spec(build: Callable[[Any], _T | None]) -> Callable[[Task], _T | None]:
    """``build(spec)`` once per task spec (keyed by its JSON), or None where the spec has no report schema.

    The upload checkers are built per spec (the compiled report check here, the batch decoder of
    :mod:`ldp.collector.upload_batch`); at most :data:`_CACHED_SPECS` are kept.
    """
    cache: dict[str, _T | None] = {}

    def for_task(task: Task) -> _T | None:
        try:
            return cache[task.spec_json]
        except KeyError:
            pass
        try:
            value = build(task.spec)
        except SpecError:  # a spec without a report schema: each report's check says so, as before
            value = None
        if len(cache) >= _CACHED_SPECS:
            cache.clear()
        cache[task.spec_json] = value
        return value

    return for_task


#: The compiled report check of the task's spec (None: its reports take the two-step path).
_compiled = cached_per_spec(compile_report_check)


_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _raw_id(envelope_id: str) -> bytes:
    """The 16 bytes of a well-formed envelope id (base64url without padding)."""
    return binascii.a2b_base64(envelope_id.encode("ascii").translate(_URLSAFE) + b"==")


def _envelope_id(item: Any) -> str | None:
    """The envelope's id when it is a well-formed one, else None.

    Well-formed: the canonical base64url form of 16 bytes without padding,
    that is 21 characters of the base64url alphabet and a last one carrying
    2 bits and 4 zero bits (``A``, ``Q``, ``g`` or ``w``).
    """
    if not isinstance(item, dict):
        return None
    value = item.get("id")
    if not isinstance(value, str) or _ID_PATTERN.fullmatch(value) is None:
        return None
    return value


def _check_one(
    task: Task,
    spec: Any,
    index: int,
    item: Any,
    latest: float,
    earliest: tuple[int, str],
    pruned: Collection[int] = frozenset(),
) -> Accepted | Rejection:
    def reject(reason: str, detail: str, envelope_id: str | None = None) -> Rejection:
        return Rejection(index, envelope_id, reason, detail[:300])

    if not isinstance(item, dict):
        return reject("invalid_message", f"an envelope is a JSON object, got {type(item).__name__}")
    envelope_id = _envelope_id(item)
    if envelope_id is None:
        return reject(
            "invalid_message", "'id' must be 16 random bytes in base64url without padding (22 characters)"
        )
    if item.keys() != _ENVELOPE_KEYS:
        keys = set(item)
        missing, extra = sorted(_ENVELOPE_KEYS - keys), sorted(keys - _ENVELOPE_KEYS, key=str)
        detail = "; ".join(
            part
            for part in (
                f"missing {', '.join(missing)}" if missing else "",
                f"unknown keys {', '.join(map(repr, extra))}" if extra else "",
            )
            if part
        )
        return reject("invalid_message", f"an envelope has exactly id, t and report: {detail}", envelope_id)
    t = item["t"]
    if isinstance(t, bool) or not isinstance(t, int) or t < 0:
        return reject("invalid_message", "'t' must be a non-negative integer (Unix seconds)", envelope_id)
    if t % task.time_precision:
        return reject(
            "invalid_message",
            f"'t' must be truncated to the task's time precision ({task.time_precision} s): got {t}",
            envelope_id,
        )
    if t > latest:
        return reject(
            "report_too_early", f"'t' = {t} is later than the collector's clock allows", envelope_id
        )
    if (task.not_before is not None and t < task.not_before) or (
        task.not_after is not None and t >= task.not_after
    ):
        return reject("report_dropped", f"'t' = {t} is outside the task's time range", envelope_id)
    if t < earliest[0]:
        return reject(
            "t_out_of_range",
            f"'t' = {t} is earlier than this collector accepts ({earliest[0]}: {earliest[1]})",
            envelope_id,
        )
    if pruned and task.window_start(t) in pruned:
        return reject(
            "t_out_of_range",
            f"'t' = {t} is in the window {task.window_start(t)}, whose raw reports the task's retention deleted "
            "(its estimates are kept; it takes no more reports)",
            envelope_id,
        )
    try:
        report = Report.from_dict(item["report"])
        if report.client is not None:  # the collector stores nothing about the sender
            report = dataclasses.replace(report, client=None)
        checked = check_report(spec, report)
    except ReportError as exc:
        message = str(exc)
        reason = classify_reason(message)
        if reason == "wrong_spec":
            return reject("wrong_spec", message, envelope_id)
        return reject("invalid_report", f"{reason}: {message}", envelope_id)
    raw_id = base64.urlsafe_b64decode(envelope_id + "==")
    return Accepted(index, envelope_id, StoredReport(raw_id, t, report_text(report.to_dict())), checked)


def report_text(report: dict[str, Any]) -> str:
    """The stored text of a report given as :meth:`Report.to_dict`: :meth:`Report.to_json` through orjson.

    The same compact JSON with the same keys in the same order, in a tenth of
    the time; floats may be spelled differently (``1e-7`` for ``1e-07``) and
    parse to the same value. Reports whose text would hold a Unicode line break
    (``to_json`` escapes them) or that orjson cannot encode (integers past 64
    bits) are written as ``to_json`` writes them.
    """
    try:
        text = orjson.dumps(report).decode("utf-8")
    except orjson.JSONEncodeError:
        return json_line(report, separators=(",", ":"))
    if not text.isascii() and ("\u2028" in text or "\u2029" in text or "\u0085" in text):
        return json_line(report, separators=(",", ":"))
    return text
