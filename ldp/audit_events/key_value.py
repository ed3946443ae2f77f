"""Audit events of the key-value mechanisms (PCKV-UE, PCKV-GRR, PrivKVM): one report at the spec's ε.

Inputs are sets of pairs, as hashable tuples of pairs: {(k₀, 1)} against
{(k₀, −1)} (the value's privacy) and {(k₀, 1)} against {(k₁, −1)} (the
key's, with the value); with ℓ > 1 also the first ℓ keys all +1 against all
−1 (UE's worst pair) and against k₀ flipped (GRR's worst pair), so that no
dummy pair dilutes the difference. These attain the exact worst ratio of
each spec (docs/key-value.md#privacy). Events: the
report's outputs on the two keys (UE: +1, −1 or 0 at each, and pairs of
them; GRR: the reported (key, sign); PrivKVM: the drawn key and response).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, first_reports
from ldp.errors import SpecError
from ldp.report_check import CheckedReport

__all__ = ["KeyValueEvents"]


def _bits(reports: Sequence[CheckedReport], name: str, width: int) -> np.ndarray:
    packed = np.frombuffer(b"".join(r.field(name) for r in reports), dtype=np.uint8).reshape(len(reports), -1)
    return np.unpackbits(packed, axis=1)[:, :width].astype(np.int64)


def _equal(**wanted: int) -> Callable[[Features], np.ndarray]:
    def test(f: Features) -> np.ndarray:
        out = np.ones(len(next(iter(f.values()))), dtype=bool)
        for name, value in wanted.items():
            out &= f[name] == value
        return out

    return test


class KeyValueEvents(AuditFamily):
    """The outputs on the pair's keys, for one report."""

    name = "key-value reports"

    def pairs(self, spec: Any) -> list[tuple[Any, Any]]:
        keys = getattr(spec, "domain", None)
        if not keys or len(keys) < 2:
            raise SpecError(f"{spec.mechanism} spec has no two keys to audit")
        k0, k1 = keys[0], keys[1]
        held = keys[: min(int(getattr(spec, "ell", 1)), len(keys))]
        pairs: list[tuple[Any, Any]] = [(((k0, 1.0),), ((k0, -1.0),)), (((k0, 1.0),), ((k1, -1.0),))]
        if len(held) > 1:  # ℓ pairs, so no dummy dilutes them: all +1 against all −1, and one value flipped
            plus = tuple((k, 1.0) for k in held)
            pairs.append((plus, tuple((k, -1.0) for k in held)))
            pairs.append((plus, ((k0, -1.0), *plus[1:])))
        return pairs

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        reports = first_reports(samples)
        schema = {f.name for f in spec.report_schema.fields}
        if "plus" in schema:  # a ternary vector: +1 → 1, −1 → −1 per key
            width = spec.padded_size
            y = _bits(reports, "plus", width) - _bits(reports, "minus", width)
            return {f"y{i}": y[:, i] for i in range(min(width, max(2, spec.ell)))}
        second = "sign" if "sign" in schema else "response"
        return {
            "key": np.array([int(r.field("key")) for r in reports], dtype=np.int64),
            "out": np.array([int(r.field(second)) for r in reports], dtype=np.int64),
        }

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        schema = {f.name for f in spec.report_schema.fields}
        events = []
        if "plus" in schema:
            for y0 in (-1, 0, 1):
                events.append(Event(f"y0 = {y0}", _equal(y0=y0)))
                for y1 in (-1, 0, 1):
                    events.append(Event(f"y0 = {y0}, y1 = {y1}", _equal(y0=y0, y1=y1)))
            held = min(spec.ell, spec.padded_size)
            if held > 2:
                for y in (-1, 1):
                    same = {f"y{i}": y for i in range(held)}
                    events.append(Event(f"y0..y{held - 1} all = {y}", _equal(**same)))
            return events
        outputs = (0, 1) if "sign" in schema else (0, 1, 2)
        for key in (0, 1):
            for out in outputs:
                events.append(Event(f"key = {key}, output = {out}", _equal(key=key, out=out)))
        return events
