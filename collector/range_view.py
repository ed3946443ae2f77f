"""What the dashboard draws for a range task (range-hierarchy, range-haar): the CDF with its band, and quantiles.

The CDF at a domain value v is the range answer [first value, v] over the
window's reports, divided by its reports: its variance is the range's
exact analytical variance (``RangeAccumulator.range_answers``), which keeps
the covariances of the leaf estimates, so the band cannot be rebuilt from
the per-value table's standard errors. At most :data:`CDF_POINTS` values
are evaluated (evenly spread over the domain, the last one always), enough
for a chart and bounded in cost for any domain size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.aggregator.accumulators import Accumulator
from ldp.aggregator.estimates import normal_quantile
from ldp.aggregator.ranges import RangeAccumulator
from ldp.collector.accumulate import estimate_records

__all__ = ["CDF_POINTS", "DASHBOARD_QUANTILES", "range_view"]

#: The most domain values at which the dashboard's CDF is evaluated.
CDF_POINTS = 256
#: The quantiles the dashboard lists under a range task's CDF.
DASHBOARD_QUANTILES = (0.25, 0.5, 0.75, 0.9, 0.99)


def cdf_indices(domain_size: int, points: int = CDF_POINTS) -> list[int]:
    """Domain indices at which to evaluate the CDF: all of them up to ``points``, else evenly spread, last included."""
    if domain_size <= points:
        return list(range(domain_size))
    return sorted({round(float(i)) for i in np.linspace(0, domain_size - 1, points)})


def range_view(accumulator: Accumulator, confidence: float) -> dict[str, Any]:
    """``{"cdf": [...], "quantiles": [...]}`` for a range task's window; ``{}`` for any other accumulator.

    Each ``cdf`` row is ``value``, ``cdf`` (the estimate of F(value)),
    ``std_error``, ``ci_low`` and ``ci_high``; ``quantiles`` is the table of
    ``ldp aggregate --quantiles`` at :data:`DASHBOARD_QUANTILES`.
    """
    if not isinstance(accumulator, RangeAccumulator) or accumulator.n == 0:
        return {}
    n = accumulator.n
    domain = accumulator.spec.domain
    indices = cdf_indices(len(domain))
    answers, variances = accumulator.range_answers([(0, i) for i in indices])
    z = normal_quantile(confidence)
    se = np.sqrt(np.maximum(variances, 0.0)) / n
    cdf = answers / n
    rows = [
        {
            "value": domain[i],
            "cdf": float(c),
            "std_error": float(s),
            "ci_low": float(c - z * s),
            "ci_high": float(c + z * s),
        }
        for i, c, s in zip(indices, cdf, se)
    ]
    quantiles = estimate_records(accumulator.estimate(confidence=confidence, quantiles=DASHBOARD_QUANTILES))
    return {"cdf": rows, "quantiles": quantiles}
