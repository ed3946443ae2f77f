"""The collector's bounded memory (issue 24): the acceptance range of ``t``, sparse windows, one-query restarts."""

from __future__ import annotations

import base64
import time
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import ldp
from ldp.aggregator.accumulators import make_aggregator
from ldp.client import encode_batch
from ldp.collector.acceptance import DEFAULT_MAX_AGE, Acceptance, clock_skew
from ldp.collector.envelopes import check_envelopes
from ldp.collector.ingest import GroupCommitter
from ldp.collector.store import open_store
from ldp.collector.tasks import new_task
from ldp.collector.window_counts import WindowCounts, accumulator_bytes
from ldp.collector.windows import Windows
from ldp.errors import ParameterError

DAY = 86_400
BIG_GRR = ldp.GRR(domain=[f"v{i}" for i in range(16_384)], epsilon=1.0)


def _reports(spec, values, seed=1):
    return list(encode_batch(spec, values, np.random.default_rng(seed)).reports(spec))


def _envelope(n: int, t: int, report) -> dict:
    return {
        "id": base64.urlsafe_b64encode(n.to_bytes(16, "big")).rstrip(b"=").decode(),
        "t": t,
        "report": report,
    }


# -- the acceptance range ----------------------------------------------------------------------------


def test_old_reports_and_reports_before_the_task_started_are_t_out_of_range():
    """Issue 24: any past t was accepted; now t must be within the task's start less the skew and max_age."""
    now = 1_800_000_000
    task, _ = new_task(ldp.GRR(domain=("a", "b"), epsilon=1.0), window="1d", time_precision="1h")
    task = type(task)(**{**task.__dict__, "created": now - 10 * DAY})
    report = _reports(task.spec, ["a"])[0].to_dict()
    hour = 3_600
    start = task.created - task.created % hour - clock_skew(task)
    times = [start - hour, start, now - now % hour, 0]
    checked = check_envelopes(task, [_envelope(n, t, report) for n, t in enumerate(times)], now)
    assert [a.index for a in checked.accepted] == [1, 2]
    assert [(r.index, r.reason) for r in checked.rejected] == [(0, "t_out_of_range"), (3, "t_out_of_range")]
    assert "before the task's start" in checked.rejected[0].detail


def test_max_age_and_max_windows_bound_an_old_task():
    now = 1_800_000_000
    task, _ = new_task(
        ldp.GRR(domain=("a", "b"), epsilon=1.0), window="1h", time_precision="1h", not_before=0
    )
    report = _reports(task.spec, ["a"])[0].to_dict()
    current = now - now % 3_600
    old = current - DEFAULT_MAX_AGE - 3_600
    checked = check_envelopes(task, [_envelope(1, old, report), _envelope(2, old + 3_600, report)], now)
    assert [r.reason for r in checked.rejected] == ["t_out_of_range"]
    assert "more than 30d old" in checked.rejected[0].detail
    narrow = Acceptance(max_age=DEFAULT_MAX_AGE, max_windows=3)
    times = [current - 3 * 3_600, current - 2 * 3_600, current]
    checked = check_envelopes(task, [_envelope(n, t, report) for n, t in enumerate(times)], now, narrow)
    assert [r.index for r in checked.rejected] == [0] and "3 windows back" in checked.rejected[0].detail


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_acceptance_settings_are_positive_integers(bad):
    with pytest.raises(ParameterError, match="positive integer"):
        Acceptance(max_age=bad)
    with pytest.raises(ParameterError, match="positive integer"):
        Acceptance(max_windows=bad)


# -- sparse windows ------------------------------------------------------------------------------------


def test_a_report_in_each_of_many_windows_costs_bytes_not_an_accumulator_each():
    """Issue 24: each window held a dense accumulator (16,384 counts = 128 KiB for one GRR report).

    1,000 windows of one report each took 128 MiB; they must now take far
    less than one accumulator per window (measured with tracemalloc, which
    NumPy reports its buffers to).
    """
    task, _ = new_task(BIG_GRR, window="1h", time_precision="1h")
    reports = _reports(BIG_GRR, [f"v{i}" for i in range(1_000)])
    checked = [ldp.report_check.check_report(BIG_GRR, r) for r in reports]
    windows = Windows()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i, one in enumerate(checked):
            windows.add(task, [(i * 3_600, one)])
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    dense = accumulator_bytes(BIG_GRR)
    assert dense == 16_384 * 8
    assert grown < 1_000 * dense / 20, f"{grown:,} bytes for 1,000 one-report windows"
    assert len(windows.counts(task)) == 1_000


def test_sparse_and_dense_windows_give_the_accumulators_numbers():
    spec = ldp.GRR(domain=[f"v{i}" for i in range(64)], epsilon=1.0)
    reports = _reports(spec, [f"v{i % 64}" for i in range(3_000)], seed=3)
    from ldp.aggregator.report_columns import batch_from_checked
    from ldp.report_check import check_report

    window = WindowCounts(spec, accumulator_bytes(spec))
    expected = make_aggregator(spec)
    seen_sparse = False
    for start in range(0, 3_000, 7):
        batch = batch_from_checked(spec, [check_report(spec, r) for r in reports[start : start + 7]])
        window.add_batch(batch)
        expected.add_batch(batch)
        seen_sparse |= not window.dense
        assert window.n == expected.n
    assert seen_sparse and window.dense  # it started as columns and became an accumulator
    assert window.accumulator() == expected
    pd.testing.assert_frame_equal(window.accumulator().estimate(), expected.estimate(), check_exact=True)


# -- restarts -------------------------------------------------------------------------------------------


class _CountingStore:
    """A store whose report-reading calls are counted."""

    def __init__(self, store):
        self.store = store
        self.calls = 0

    def __getattr__(self, name):
        attribute = getattr(self.store, name)
        if name in (
            "reports",
            "report_texts",
            "reports_by_time",
            "reports_since",
            "read_windows",
            "count_by_window",
        ):
            self.calls += 1
        return attribute


def test_a_restart_reads_a_task_in_one_query_and_rebuilds_the_same_windows(tmp_path):
    """Issue 24: a restart ran one query per window."""
    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    task, _ = new_task(spec, window="1h", time_precision="1h", not_before=0)
    now = int(time.time())
    now -= now % 3_600
    reports = _reports(spec, ["a", "b", "c", "a"] * 50)
    items = [_envelope(n, now - (n % 40) * 3_600, r.to_dict()) for n, r in enumerate(reports)]
    checked = check_envelopes(task, items, now)
    assert not checked.rejected
    with open_store(str(tmp_path / "s.db")) as store:
        store.create_task(task)
        live = Windows()
        committer = GroupCommitter(store, live)
        committer.submit(task, checked.accepted).result(30)
        committer.close()
        counting = _CountingStore(store)
        rebuilt = Windows()
        assert rebuilt.load(counting, task) == 200
        assert counting.calls == 1
        assert rebuilt.counts(task) == live.counts(task) and len(live.counts(task)) == 40
        assert rebuilt.merged(task, None, None) == live.merged(task, None, None)
        for start in live.counts(task):
            assert rebuilt.merged(task, start, start + 3_600) == live.merged(task, start, start + 3_600)


def test_the_window_reply_cache_is_bounded_by_estimate_rows(monkeypatch):
    """Replies have a row per domain value: the dashboard's cache must not keep windows x domain rows."""
    import ldp.collector.windows as windows_module
    from ldp.report_check import check_report

    spec = ldp.GRR(domain=[f"v{i}" for i in range(100)], epsilon=1.0)
    task, _ = new_task(spec, window="1h", time_precision="1h", min_batch=1)
    windows = Windows()
    for i, report in enumerate(_reports(spec, [f"v{i}" for i in range(30)])):
        windows.add(task, [(i * 3_600, check_report(spec, report))])
    monkeypatch.setattr(windows_module, "REPLY_CACHE_ROWS", 1_000)
    first = windows.replies(task, 0.95)
    assert len(first) == 30 and all(len(reply["estimates"]) == 100 for reply in first)
    assert len(windows._replies) == 10 and windows._reply_rows == 1_000
    assert windows.replies(task, 0.95) == first  # recomputed replies are the same
