"""A range task's dashboard view (collector/range_view.py): the CDF with its band, and its quantiles."""

from __future__ import annotations

import numpy as np
import pytest

import ldp
from ldp.aggregator.accumulators import make_aggregator
from ldp.client import encode_batch
from ldp.collector.range_view import CDF_POINTS, DASHBOARD_QUANTILES, cdf_indices, range_view
from ldp.collector.tasks import new_task
from ldp.collector.windows import estimate_reply
from ldp.specs.ranges import RangeHaar, RangeHierarchy

Z95 = 1.959963984540054


def _accumulator(spec, n: int = 4000, seed: int = 3):
    rng = np.random.default_rng(seed)
    values = [spec.domain[i] for i in np.minimum(rng.geometric(0.2, n) - 1, len(spec.domain) - 1)]
    accumulator = make_aggregator(spec)
    accumulator.add_batch(encode_batch(spec, values, np.random.default_rng(seed + 1)))
    return accumulator


@pytest.mark.parametrize(
    "spec", [RangeHierarchy(domain=range(16), epsilon=2.0), RangeHaar(domain=range(16), epsilon=2.0)]
)
def test_cdf_rows_are_the_prefix_range_answers_with_their_exact_variance(spec):
    accumulator = _accumulator(spec)
    view = range_view(accumulator, 0.95)
    table = accumulator.estimate(confidence=0.95, ranges=[(0, v) for v in range(16)])
    assert [row["value"] for row in view["cdf"]] == list(range(16))
    n = accumulator.n
    assert [row["cdf"] for row in view["cdf"]] == pytest.approx(list(table["estimate"] / n), rel=1e-12)
    assert [row["std_error"] for row in view["cdf"]] == pytest.approx(list(table["std_error"] / n), rel=1e-12)
    for row in view["cdf"]:
        assert row["ci_high"] - row["cdf"] == pytest.approx(Z95 * row["std_error"], rel=1e-9)
    assert view["cdf"][-1]["cdf"] == pytest.approx(1.0, abs=1e-9)  # the whole domain holds every report
    assert [row["quantile"] for row in view["quantiles"]] == list(DASHBOARD_QUANTILES)


def test_the_reply_of_a_range_window_carries_its_cdf_and_other_tasks_do_not():
    spec = RangeHierarchy(domain=range(16), epsilon=2.0)
    task, _ = new_task(spec, window="1h", time_precision="1h")
    reply = estimate_reply(task, _accumulator(spec), 0.95)
    assert len(reply["cdf"]) == 16 and len(reply["quantiles"]) == len(DASHBOARD_QUANTILES)
    grr = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    task, _ = new_task(grr, window="1h", time_precision="1h")
    accumulator = make_aggregator(grr)
    accumulator.add_batch(encode_batch(grr, ["a"] * task.min_batch, np.random.default_rng(1)))
    assert "cdf" not in estimate_reply(task, accumulator, 0.95)


def test_a_large_domain_is_evaluated_at_a_bounded_number_of_values():
    indices = cdf_indices(4096)
    assert len(indices) == CDF_POINTS and indices[0] == 0 and indices[-1] == 4095
    assert indices == sorted(set(indices))
    assert cdf_indices(10) == list(range(10))
