"""check_envelopes' one pass agrees with its rule-by-rule path on every envelope, accepted or refused.

A well-formed envelope is accepted in one pass (the id, ``t`` and the report
checked with the task's rules bound in advance); anything else goes through
the checks one rule at a time, which give the reason. Here the same uploads
go through check_envelopes as it is and with the one pass switched off: the
accepted envelopes (what is stored, what is counted) and the rejections
(index, id, reason, detail) must be identical, and the well-formed ones must
take the one pass.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

import ldp
from ldp.client import encode_batch
from ldp.collector import envelopes
from ldp.collector.acceptance import clock_skew
from ldp.collector.envelopes import check_envelopes
from ldp.collector.tasks import new_task

NOW = 1_800_000_000
HOUR = 3_600
SPECS = [
    ldp.GRR(domain=[f"v{i}" for i in range(16)], epsilon=1.0),
    ldp.GRR(domain=[3, 5, 8], epsilon=1.0),
    ldp.OUE(domain=[f"v{i}" for i in range(12)], epsilon=1.0),
    ldp.Rappor(num_bits=20, num_hashes=2, num_cohorts=4, f="1/2", p="1/4", q="3/4"),
    ldp.OLH(domain=["a", "b", "c"], epsilon=2.0),
]


def _id(n: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).rstrip(b"=").decode()


def _uploads(task) -> list:
    """Envelopes of every kind: well-formed, and each part of them wrong in each way."""
    spec = task.spec
    domain = getattr(spec, "domain", None) or ["u0", "u1", "u2"]
    values = [domain[i % len(domain)] for i in range(6)]
    reports = [r.to_dict() for r in encode_batch(spec, values, np.random.default_rng(1)).reports(spec)]
    report = reports[0]
    t = NOW - NOW % task.time_precision
    low = max(task.not_before or 0, NOW - 30 * 86_400)
    low += -low % task.time_precision
    high = int(NOW + clock_skew(task))
    high -= high % task.time_precision
    times = [t, low, low - task.time_precision, high, high + task.time_precision, t + 1, -t, 0]
    times += [
        float(t),
        True,
        str(t),
        None,
        2**64,
        task.not_after,
        (task.not_after or t) - task.time_precision,
    ]
    items: list = [{"id": _id(n), "t": t, "report": r} for n, r in enumerate(reports)]
    items += [{"id": _id(100 + n), "t": when, "report": report} for n, when in enumerate(times)]
    ids = [_id(7)[:-1] + "B", _id(7)[:-1], _id(7) + "A", _id(7).replace("A", "+"), 7, None, "", "é" * 22]
    items += [{"id": value, "t": t, "report": report} for value in ids]
    items += [
        {"id": _id(200), "t": t},
        {"id": _id(201), "t": t, "report": report, "extra": 1},
        {"t": t, "report": report},
        {"id": _id(202), "t": t, "report": {**report, "spec": "0" * 16}},
        {"id": _id(203), "t": t, "report": {**report, "v": 9}},
        {"id": _id(204), "t": t, "report": {**report, "client": "c"}},
        {"id": _id(205), "t": t, "report": {**report, "v": 2, "group": "g"}},
        {"id": _id(206), "t": t, "report": "text"},
        {"id": _id(207), "t": t, "report": {k: v for k, v in report.items() if k != "v"}},
        {"id": _id(0), "t": t, "report": report},  # the id of the first envelope again (the store decides)
        [1],
        "envelope",
        None,
    ]
    return items


@pytest.mark.parametrize("bounded", [False, True], ids=["open", "bounded"])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.mechanism)
def test_one_pass_agrees_with_the_rule_by_rule_path(spec, bounded, monkeypatch):
    window = {"not_before": NOW - 2 * HOUR, "not_after": NOW + 2 * HOUR} if bounded else {}
    task, _ = new_task(spec, window="1h", time_precision="1m", **window)
    task = type(task)(**{**task.__dict__, "created": NOW - 40 * 86_400})
    items = _uploads(task)
    fast = check_envelopes(task, items, NOW)
    monkeypatch.setattr(envelopes, "_compiled", lambda task: None)
    slow = check_envelopes(task, items, NOW)
    assert fast.rejected == slow.rejected
    assert fast.accepted == slow.accepted
    assert len(fast.accepted) >= 8 and len(fast.rejected) >= 20


def test_well_formed_envelopes_take_the_one_pass(monkeypatch):
    task, _ = new_task(SPECS[0], window="1h", time_precision="1m")
    t = NOW - NOW % 60
    reports = encode_batch(task.spec, ["v1", "v2"], np.random.default_rng(2)).reports(task.spec)
    items = [{"id": _id(n), "t": t, "report": r.to_dict()} for n, r in enumerate(reports)]

    def refuse(*args, **kwargs):
        raise AssertionError("a well-formed envelope took the rule-by-rule path")

    monkeypatch.setattr(envelopes, "_check_one", refuse)
    checked = check_envelopes(task, items, NOW)
    assert [a.index for a in checked.accepted] == [0, 1] and checked.rejected == []
    assert checked.accepted[0].stored.report_id == (0).to_bytes(16, "big")
