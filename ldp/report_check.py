"""Check a report against the spec it claims to come from.

:func:`check_report` is the single place that decides whether one report is
acceptable for a spec; it raises :class:`~ldp.errors.ReportError` with the
reason (wrong spec, wrong fields, wrong length, cohort or value out of
range) and otherwise returns the report's content in the normalized form the
aggregator counts. Vectorized readers apply the same rules column-wise.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ldp.errors import ParameterError, ReportError
from ldp.hashing import LH_SEED_SPACE
from ldp.report import Report

__all__ = ["CheckedReport", "check_report", "required_fields"]

_REQUIRED = {
    "value": ("value",),
    "hashed": ("seed", "value"),
    "bits": ("bits",),
    "rappor": ("cohort", "bits"),
    "numeric": ("value",),
}
_ALL = ("value", "seed", "bits", "cohort")


class CheckedReport(NamedTuple):
    """Normalized content: ``value`` is a domain index, bucket or number; ``group`` the group key (if any)."""

    value: Any = None
    seed: int | None = None
    bits: bytes | None = None
    cohort: int | None = None
    group: str | None = None


def required_fields(spec) -> tuple[str, ...]:
    """Report fields a spec's reports must carry (and no others)."""
    return _REQUIRED[spec.report_kind]


def _check_bits(bits: bytes, num_bits: int) -> bytes:
    expected = (num_bits + 7) // 8
    if len(bits) != expected:
        raise ReportError(f"bits have {len(bits)} bytes, expected {expected} for {num_bits} bits")
    spare = expected * 8 - num_bits
    if spare and bits[-1] & ((1 << spare) - 1):
        raise ReportError(f"bits set beyond bit {num_bits - 1} (padding must be zero)")
    return bits


def check_report(spec, report: Report) -> CheckedReport:
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
    """
    checked = _check_payload(spec, report)
    return checked if report.group is None else checked._replace(group=report.group)


def _check_payload(spec, report: Report) -> CheckedReport:
    if report.spec != spec.fingerprint:
        raise ReportError(f"report is for spec {report.spec}, not {spec.fingerprint}")
    required = required_fields(spec)
    for name in _ALL:
        present = getattr(report, name) is not None
        if name in required and not present:
            raise ReportError(
                f"report has no '{name}' ({spec.mechanism} reports carry {', '.join(required)})"
            )
        if name not in required and present:
            raise ReportError(f"report has an unexpected '{name}' for {spec.mechanism}")
    kind = spec.report_kind
    if kind == "value":
        try:
            return CheckedReport(value=spec.index_of(report.value))
        except ParameterError as exc:
            raise ReportError(str(exc)) from None
    if kind == "hashed":
        if report.seed >= LH_SEED_SPACE:
            raise ReportError(f"seed {report.seed} is outside the hash family (must be < {LH_SEED_SPACE})")
        value = report.value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str) and value.isdigit():
            value = int(value)
        if not isinstance(value, int) or not 0 <= value < spec.g:
            raise ReportError(f"bucket {report.value!r} is out of range [0, {spec.g})")
        return CheckedReport(value=value, seed=report.seed)
    if kind == "bits":
        return CheckedReport(bits=_check_bits(report.bits, spec.domain_size))
    if kind == "rappor":
        if report.cohort >= spec.num_cohorts:
            raise ReportError(f"cohort {report.cohort} is out of range [0, {spec.num_cohorts})")
        return CheckedReport(bits=_check_bits(report.bits, spec.num_bits), cohort=report.cohort)
    if kind == "numeric":
        value = report.value
        if isinstance(value, str) or not math.isfinite(float(value)):
            raise ReportError(f"numeric report value must be a finite number, got {value!r}")
        if not bool(spec.in_support(float(value))):
            raise ReportError(
                f"numeric report value {value!r} is not an output of this {spec.mechanism} spec"
            )
        return CheckedReport(value=float(value))
    raise ReportError(f"unknown report kind {kind!r}")  # pragma: no cover
