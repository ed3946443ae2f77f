"""Shuffle mode: the central privacy of a window's shuffled reports (docs/collector.md#shuffle).

The collector keeps no sender metadata and stores reports under random ids,
so the reports of a window reach the analyst as a shuffled batch: n ε₀-LDP
reports, one per user, are then (ε, δ)-DP in the central model
(:mod:`ldp.privacy.shuffle`). A range of windows composes its windows
(basic composition: ε and δ add up), since a user may report once per window.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from ldp.collector.tasks import Task

__all__ = ["central_epsilon", "central_privacy"]

#: n is rounded down to this many significant digits before the bound is computed
#: (the central ε falls with n, so this is a bound for the true n; it keeps the cache small).
_SIGNIFICANT_DIGITS = 3


def _rounded_down(n: int) -> int:
    """n with all but its first :data:`_SIGNIFICANT_DIGITS` digits zeroed."""
    if n < 10**_SIGNIFICANT_DIGITS:
        return n
    unit = 10 ** (len(str(n)) - _SIGNIFICANT_DIGITS)
    return n - n % unit


@functools.lru_cache(maxsize=4096)
def _best_epsilon(spec_json: str, users: int, delta: float) -> tuple[float, str]:
    from ldp.privacy.shuffle import shuffle_bounds
    from ldp.specs import load_spec

    spec = load_spec(spec_json)
    epsilon0 = float(spec.epsilon)
    if users < 2:
        return epsilon0, "no amplification (local epsilon0)"
    rows = shuffle_bounds(epsilon0, users, delta, spec=spec)
    best = rows[-1].epsilon
    method = next(r.method for r in rows[:-1] if r.epsilon == best)
    return float(best if best is not None else epsilon0), method


def central_epsilon(task: Task, n: int) -> tuple[float, str]:
    """(central ε at the task's shuffle δ, the bound that gave it) of one window of n reports."""
    if task.shuffle_delta is None:
        raise ValueError("the task is not in shuffle mode")
    return _best_epsilon(task.spec_json, _rounded_down(n), task.shuffle_delta)


def central_privacy(task: Task, window_counts: Sequence[int]) -> dict[str, Any] | None:
    """The ``central`` field of an estimate reply over windows of these counts; None outside shuffle mode."""
    if task.shuffle_delta is None:
        return None
    counted = [n for n in window_counts if n > 0]
    per_window = [central_epsilon(task, n) for n in counted]
    epsilon = math.fsum(eps for eps, _ in per_window)
    methods = sorted({method for _, method in per_window})
    return {
        "epsilon": epsilon,
        "delta": task.shuffle_delta * len(counted),
        "epsilon0": float(task.spec.epsilon),
        "windows": len(counted),
        "bound": methods[0] if len(methods) == 1 else ", ".join(methods),
        "composition": "one window" if len(counted) <= 1 else "basic (sum over windows)",
    }
