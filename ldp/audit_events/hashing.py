"""Audit events of local-hashing reports: OLH, BLH, and the prefix oracles of PEM and TreeHist."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.audit_events.base import AuditFamily, Event, Features, first_reports
from ldp.hashing import lh_bucket
from ldp.report_check import CheckedReport


class _BucketEvents(AuditFamily):
    """The reported bucket equals H_seed(x0), also restricted to the seeds where H_seed(x0) ≠ H_seed(x1)."""

    def buckets(self, spec: Any, first: Sequence[CheckedReport], x: Any) -> list[int]:
        """The bucket of ``x`` under each report's hash function."""
        raise NotImplementedError

    def features(self, spec: Any, samples: Sequence[Sequence[CheckedReport]], pair: tuple[Any, Any]):
        first = first_reports(samples)
        return {
            "value": np.array([r.value for r in first], dtype=np.int64),
            "h0": np.array(self.buckets(spec, first, pair[0]), dtype=np.int64),
            "h1": np.array(self.buckets(spec, first, pair[1]), dtype=np.int64),
        }

    def events(self, spec: Any, pair: tuple[Any, Any], selection: Sequence[Features]) -> list[Event]:
        x0, x1 = pair
        return [
            Event(f"bucket = H_seed({x0!r})", lambda f: f["value"] == f["h0"]),
            Event(f"bucket = H_seed({x1!r})", lambda f: f["value"] == f["h1"]),
            Event(
                f"bucket = H_seed({x0!r}) != H_seed({x1!r})",
                lambda f: (f["value"] == f["h0"]) & (f["h0"] != f["h1"]),
            ),
            Event(
                f"bucket = H_seed({x1!r}) != H_seed({x0!r})",
                lambda f: (f["value"] == f["h1"]) & (f["h0"] != f["h1"]),
            ),
        ]


class LocalHashingEvents(_BucketEvents):
    """OLH, BLH: the value's bucket under each report's seed."""

    name = "local hashing"

    def buckets(self, spec: Any, first: Sequence[CheckedReport], x: Any) -> list[int]:
        index = spec.index_of(x)
        return [lh_bucket(int(r.seed or 0), index, spec.g) for r in first]


class PrefixHashingEvents(_BucketEvents):
    """PEM, TreeHist: the bucket of the value's prefix of each report's round."""

    name = "prefix hashing"

    def pairs(self, spec: Any) -> list[tuple[Any, Any]]:
        return [("a", "\u00e9")]  # the first bit differs (0x61 against 0xC3 0xA9)

    def buckets(self, spec: Any, first: Sequence[CheckedReport], x: Any) -> list[int]:
        from ldp.specs.heavy_hitters import prefix_key

        bits = spec.value_bits(x)
        out = []
        for r in first:
            length = spec.prefix_length(int(r.field("round")))
            out.append(
                lh_bucket(int(r.seed or 0), prefix_key(bits >> (spec.num_bits - length), length), spec.g)
            )
        return out
