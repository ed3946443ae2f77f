"""The compiled report check accepts exactly what Report.from_dict + check_report accept, with the same result.

For every spec shape (every registered mechanism), real reports and many
mutations of them (each field replaced by values of every JSON type and
boundary, keys added and removed, versions, groups, client ids, spellings
the two-step path normalizes) go through both paths: whatever the compiled
check accepts, the two-step path accepts with the same checked content and
the same JSON form, keys in the same order; whatever it leaves (None), the
two-step path decides. The real reports of a spec without conditional
fields must all take the compiled path (else it would be no faster).
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import numpy as np
import pytest
from conftest import every_spec_shape, report_variants, sample_values

import ldp
from ldp.client import encode_batch
from ldp.errors import ReportError
from ldp.report import Report
from ldp.report_check import check_report
from ldp.report_compiled import compile_report_check
from ldp.report_schema import report_schema_of

SPECS = every_spec_shape()


def _two_step(spec: Any, data: Any) -> tuple[Any, list[tuple[str, Any]]] | None:
    """What the collector's two-step path makes of ``data``: (checked, JSON form as pairs), or None."""
    try:
        report = Report.from_dict(data)
        if report.client is not None:
            report = dataclasses.replace(report, client=None)
        return check_report(spec, report), list(report.to_dict().items())
    except ReportError:
        return None


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.mechanism}-{s.fingerprint[:6]}")
def test_compiled_check_agrees_with_the_two_step_path(spec):
    compiled = compile_report_check(spec)
    if report_schema_of(spec).conditional:
        assert compiled is None  # every report takes the two-step path
        return
    assert compiled is not None
    values = sample_values(spec, 12)
    reports = [r.to_dict() for r in encode_batch(spec, values, np.random.default_rng(3)).reports(spec)]
    fast_paths = 0
    for base in reports:
        assert compiled(base) is not None, f"a real {spec.mechanism} report took the two-step path: {base}"
        for data in report_variants(base):
            fast = compiled(data)
            if fast is None:
                continue
            fast_paths += 1
            slow = _two_step(spec, data)
            assert slow is not None, f"compiled check accepted what the two-step path refuses: {data!r}"
            checked, canonical = fast
            assert repr(checked) == repr(slow[0]), data
            assert list(canonical.items()) == slow[1], data
    assert fast_paths >= len(reports)


def test_compiled_check_takes_grouped_reports_and_leaves_client_ids():
    spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    compiled = compile_report_check(spec)
    assert compiled is not None
    grouped = {"v": 2, "spec": spec.fingerprint, "value": "b", "group": "app 1.2"}
    checked, canonical = compiled(grouped)
    assert (checked.value, checked.group) == (1, "app 1.2")
    assert list(canonical) == ["v", "spec", "value", "group"]
    assert compiled({"v": 1, "spec": spec.fingerprint, "value": "b", "client": "c"}) is None


def test_compiled_bits_are_written_back_in_canonical_base64():
    """'bits' is decoded and re-encoded, as Report does (base64 with non-zero trailing bits decodes the same)."""
    spec = ldp.OUE(domain=[f"v{i}" for i in range(12)], epsilon=1.0)  # 2 bytes: 'AAA=' in base64
    compiled = compile_report_check(spec)
    assert compiled is not None
    data = {"v": 1, "spec": spec.fingerprint, "bits": "gAB="}  # trailing bits set in the last character
    slow = _two_step(spec, data)
    fast = compiled(data)
    assert slow is not None and fast is not None
    assert fast[1]["bits"] == "gAA=" == dict(slow[1])["bits"]
    assert fast[0].bits == base64.b64decode("gAA=")
