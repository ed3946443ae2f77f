"""A numeric spec's sampling data in the form other-language clients load (docs/collector.md#endpoints).

Piecewise, hybrid, Laplace and Gaussian sample from integer grid tables
built with floating-point ``exp``; a client in another language must not
rebuild them (one ulp off and the aggregator would decode with a table the
client did not use). It loads this form instead, served by the collector at
``GET /v1/tasks/{task}/tables`` and recorded in the cross-language vectors
(tests/vectors/README.md, section ``numeric``): integers that may exceed 2^53
as decimal strings, probabilities as exact fractions, and a ``digest`` that
pins the table.
"""

from __future__ import annotations

import hashlib
import struct
from fractions import Fraction
from typing import Any

from ldp.errors import SpecError
from ldp.specs.numeric import Hybrid, NumericSpec, _Gridded, _TwoPoint

__all__ = ["has_table", "numeric_table", "table_digest"]


def table_digest(table: Any) -> str:
    """SHA-256 of the weights (int64 big-endian, row-major) followed by the outputs (float64 big-endian)."""
    weights = [int(w) for w in table.weights.reshape(-1).tolist()]
    outputs = [float(y) for y in table.outputs.tolist()]
    return hashlib.sha256(
        struct.pack(f">{len(weights)}q", *weights) + struct.pack(f">{len(outputs)}d", *outputs)
    ).hexdigest()


def has_table(spec: Any) -> bool:
    """True for a numeric spec with sampling data here: a two-point or grid mechanism (1BitMean's client needs only its spec)."""
    return isinstance(spec, (_TwoPoint, _Gridded))


def numeric_table(spec: NumericSpec) -> dict[str, Any]:
    """``low``, ``high`` and the sampling data: two-point ``p`` and outputs, or the full grid table.

    Raises
    ------
    SpecError
        For a numeric spec without a table (:func:`has_table`).
    """
    if not has_table(spec):
        raise SpecError(
            f"{spec.mechanism} samples from no table: its spec holds every probability its client needs"
        )
    out: dict[str, Any] = {"low": spec.low, "high": spec.high}
    if isinstance(spec, _TwoPoint):
        out.update(kind="two-point", p=str(Fraction(spec.p)), outputs=spec.support.tolist())
        return out
    assert isinstance(spec, _Gridded)
    table = spec.table
    out.update(
        kind=table.kind,
        K=table.K,
        total=str(int(table.total)),
        num_outputs=table.num_outputs,
        digest=table_digest(table),
        outputs=[float(y) for y in table.outputs.tolist()],
    )
    if table.kind == "rows":
        a, b, m = table.row_band
        out["band"] = {"a": str(int(a)), "b": str(int(b)), "m": int(m)}
    else:
        out["M"] = table.M
        out["B"] = table.M - table.K
        out["weights"] = [str(int(w)) for w in table.weights.reshape(-1).tolist()]
    if isinstance(spec, Hybrid):
        out["alpha"] = str(Fraction(spec.alpha))
        out["duchi_p"] = str(Fraction(spec.duchi.p))
        out["duchi_outputs"] = spec.duchi.support.tolist()
    return out
