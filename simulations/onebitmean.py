"""Fast simulation of 1BitMean: the count of ones of n reports, drawn from its exact distribution.

One report of a value at position u ∈ [0, 1] is 1 with probability
P(u) = (1 − k) + u(2k − 1), k = γ + (1 − 2γ)p, in both modes: in plain mode
by construction, with α-point rounding because over the client's α the
grid point g has E[g/s] = u (to within 2^-32 of a step,
:func:`ldp.specs.onebitmean.alpha_point`) and the memoized bit of g is 1
with probability linear in g/s. Reports of distinct clients are
independent, so the ones of the users at each level are binomial.

:func:`onebitmean_support_counts` is the declared ``fast_simulator``: users
are counted at L evenly spaced levels low + i(high − low)/(L − 1)
(L = ``len(true_counts)`` ≥ 2: the s + 1 grid points of a memoized spec,
for example); :func:`onebitmean_value_counts` takes the users' numbers.
Both return the support histogram ``[zeros, ones]`` a
:class:`~ldp.aggregator.numeric.MeanAccumulator` holds
(``MeanAccumulator.from_counts``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldp.errors import ParameterError
from ldp.specs.onebitmean import OneBitMean

__all__ = ["onebitmean_support_counts", "onebitmean_value_counts"]


def _report_one(spec: OneBitMean, u: np.ndarray) -> np.ndarray:
    k = float(spec.keep)
    return (1.0 - k) + u * (2.0 * k - 1.0)


def onebitmean_support_counts(spec: OneBitMean, true_counts: Any, rng: np.random.Generator) -> np.ndarray:
    """``[zeros, ones]`` of the reports of ``true_counts[i]`` users at level i of L evenly spaced levels.

    Parameters
    ----------
    spec : OneBitMean
    true_counts : array_like of int
        Users at each level low + i(high − low)/(L − 1), i = 0..L − 1 (L ≥ 2).
    rng : numpy.random.Generator
        Seeded generator (simulation only).
    """
    counts = np.asarray(true_counts, dtype=np.int64)
    if counts.ndim != 1 or counts.size < 2:
        raise ParameterError(
            f"true_counts must hold the users of at least 2 levels, got shape {counts.shape}"
        )
    if counts.min() < 0:
        raise ParameterError("true_counts must be >= 0")
    u = np.arange(counts.size) / (counts.size - 1)
    ones = int(rng.binomial(counts, _report_one(spec, u)).sum())
    return np.array([int(counts.sum()) - ones, ones], dtype=np.int64)


def onebitmean_value_counts(spec: OneBitMean, values: Any, rng: np.random.Generator) -> np.ndarray:
    """``[zeros, ones]`` of one report of each of ``values`` (the users' numbers, clipped to the range)."""
    u = (spec.to_native(values) + 1.0) / 2.0
    ones = int((rng.random(u.size) < _report_one(spec, u)).sum())
    return np.array([u.size - ones, ones], dtype=np.int64)
