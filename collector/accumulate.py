"""Stored reports into accumulators and estimate tables (shared by the server and ``ldp aggregate --store``).

Stored reports were checked against the task's spec when they arrived; they
are read back through the aggregator's columnar JSON Lines reader, so a
chunk of stored reports costs what the same lines in a file cost. The
estimate table is the accumulator's, with ``ldp aggregate``'s defaults, so
the collector's numbers and the file-based ones are the same.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.aggregator.readers.jsonl import read_jsonl_stream
from ldp.batch import ReportBatch
from ldp.errors import StoreError

__all__ = ["StoreIntegrityError", "accumulate_stored", "estimate_records", "stored_batches"]


class StoreIntegrityError(StoreError):
    """A stored report no longer passes its task's spec checks (the store was edited or damaged)."""


def stored_batches(spec: Any, chunks: Iterable[Sequence[str]]) -> Iterator[ReportBatch]:
    """Stored report texts (chunks of JSON lines, :meth:`Store.report_texts`) as report batches.

    Each chunk goes through the aggregator's columnar JSON Lines reader, so
    memory is bounded by the chunk size.

    Raises
    ------
    StoreIntegrityError
        When a stored report no longer passes the spec's checks.
    """
    for chunk in chunks:
        if not chunk:
            continue
        data = "\n".join(chunk).encode("utf-8") + b"\n"
        for read in read_jsonl_stream(io.BytesIO(data), "store", spec, chunk_size=len(chunk)):
            if read.rejects:
                first = read.rejects[0]
                raise StoreIntegrityError(
                    f"{len(read.rejects)} stored report(s) fail the task's spec checks "
                    f"(first: {first.reason}: {first.detail})"
                )
            yield read.batch


def accumulate_stored(
    spec: Any, chunks: Iterable[Sequence[str]], accumulator: Accumulator | None = None
) -> Accumulator:
    """Add every stored report text of ``chunks`` to ``accumulator`` (a new one for ``spec`` by default)."""
    accumulator = make_aggregator(spec) if accumulator is None else accumulator
    for batch in stored_batches(spec, chunks):
        accumulator.add_batch(batch)
    return accumulator


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def estimate_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """An estimate table as JSON-ready records: every float at full precision, NaN as null."""
    columns = [str(column) for column in frame.columns]
    return [
        {column: _json_value(value) for column, value in zip(columns, row)}
        for row in frame.itertuples(index=False, name=None)
    ]
