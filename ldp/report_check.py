"""Check a report against the spec it claims to come from.

:func:`check_report` is the single place that decides whether one report is
acceptable for a spec; it raises :class:`~ldp.errors.ReportError` with the
reason (wrong spec, wrong fields, wrong length, cohort or value out of
range) and otherwise returns the report's content in the normalized form the
aggregator counts. What a spec's reports carry, and the rule for each field,
is the spec's report schema (:mod:`ldp.report_schema`); vectorized readers
apply the same schema column-wise.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ldp.errors import ReportError
from ldp.report import BUILTIN_PAYLOAD, Report, payload_field
from ldp.report_schema import report_schema_of

__all__ = ["CheckedReport", "check_report", "required_fields"]


class CheckedReport(NamedTuple):
    """Normalized content: ``value`` is a domain index, bucket or number; ``group`` the group key (if any).

    Fields a schema declares beyond ``value``, ``seed``, ``bits`` and
    ``cohort`` are in ``extra`` as (name, value) pairs; :meth:`field` reads any.
    """

    value: Any = None
    seed: int | None = None
    bits: bytes | None = None
    cohort: int | None = None
    group: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()

    def field(self, name: str) -> Any:
        """The normalized payload field ``name`` (None when absent)."""
        return payload_field(self, name)


def required_fields(spec: Any) -> tuple[str, ...]:
    """Report fields a spec's reports must carry (and no others): its schema's names, in order."""
    return report_schema_of(spec).names


def check_report(spec: Any, report: Report) -> CheckedReport:
    """Validate ``report`` for ``spec``; return its normalized content.

    The format version was checked by :class:`~ldp.report.Report` (an
    integer; a group needs version 2). The optional ``group``
    key (validated by :class:`~ldp.report.Report` itself) is carried through
    for every mechanism; only mean estimates use it (frequency estimates count
    a grouped report like any other and ignore its group).

    Raises
    ------
    ReportError
        Naming what is wrong.
    ParameterError
        If the spec declares no report schema.
    """
    checked = _check_payload(spec, report)
    return checked if report.group is None else checked._replace(group=report.group)


def _check_payload(spec: Any, report: Report) -> CheckedReport:
    schema = report_schema_of(spec)
    if report.spec != spec.fingerprint:
        raise ReportError(f"report is for spec {report.spec}, not {spec.fingerprint}")
    required = schema.names
    conditional = {f.name for f in schema.fields if f.presence_flag() is not None}
    carried = report.payload_names()
    for name in dict.fromkeys((*BUILTIN_PAYLOAD, *carried, *required)):
        present = name in carried
        if name in required and name not in conditional and not present:
            raise ReportError(
                f"report has no '{name}' ({spec.mechanism} reports carry {', '.join(required)})"
            )
        if name not in required and present:
            raise ReportError(f"report has an unexpected '{name}' for {spec.mechanism}")
    builtin: dict[str, Any] = {}
    extra: list[tuple[str, Any]] = []
    checked: dict[str, Any] = {}
    for field in schema.fields:
        if field.name in conditional:
            flags = field.presence_flag()
            expected = schema.carries(field, checked)
            if expected != (field.name in carried):
                state = "set" if expected else "clear"
                which = "has no" if expected else "has an unexpected"
                raise ReportError(
                    f"report {which} '{field.name}' (bit {flags[1]} of its '{flags[0]}' is {state})"  # type: ignore[index]
                )
            if not expected:
                checked[field.name] = None
                extra.append((field.name, None))
                continue
        value = field.check(spec, report.get(field.name))
        checked[field.name] = value
        if field.name in BUILTIN_PAYLOAD:
            builtin[field.name] = value
        else:
            extra.append((field.name, value))
    return CheckedReport(**builtin, extra=tuple(extra))
