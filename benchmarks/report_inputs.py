"""Input values for the single-report benchmarks; standard library only (an older checkout's interpreter imports it).

``bench_report_speed.py`` runs its measure in another checkout's environment,
which may predate every other helper here, so this module imports nothing of
``ldp`` nor of the other benchmark modules.
"""

from __future__ import annotations

from typing import Any


def report_inputs(spec: Any, n: int) -> list[Any]:
    """``n`` input values of ``spec`` (domain values in turn, numbers in (0, 1), or the spec's examples)."""
    if spec.report_kind == "numeric":
        return [0.05 + 0.9 * i / max(n - 1, 1) for i in range(n)]
    if hasattr(spec, "example_inputs"):
        return list(spec.example_inputs(n))
    domain = getattr(spec, "domain", None)
    if domain is None:
        return [f"u{i % 100}" for i in range(n)]
    return [domain[i % len(domain)] for i in range(n)]
