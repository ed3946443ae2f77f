"""What a Bloom RAPPOR task with candidates shows: each window decoded against them (docs/collector.md#candidates).

A Bloom RAPPOR report says which Bloom filter bits a client set, hashed per
cohort, never which value; a task's candidate list
(:attr:`Task.candidates <ldp.collector.tasks.Task.candidates>`) names the
values to look for. The decode is the aggregator's own
(:meth:`RapporAccumulator.estimate <ldp.aggregator.accumulators.RapporAccumulator.estimate>`
with ``candidates``, that is :func:`ldp.aggregator.rappor.decode.decode`)
with ``ldp aggregate --candidates``'s defaults (Benjamini-Hochberg at
α = 0.05), so its numbers are those of ``ldp aggregate --candidates`` on the
same reports.

A decode refits the candidates' non-negative regression (tens to hundreds of
milliseconds), so decodes are kept (:class:`CandidateDecodes`) by what
determines them: the spec, the candidates, the confidence and the window's
counts. The dashboard polls every window of every task every 2 s; only a
window whose counts changed (new reports) is decoded again.
"""

from __future__ import annotations

import collections
import hashlib
import math
import threading
from typing import Any

from ldp.aggregator.accumulators import Accumulator, RapporAccumulator
from ldp.aggregator.multiple_testing import DEFAULT_CORRECTION
from ldp.collector.accumulate import estimate_records
from ldp.collector.tasks import Task

__all__ = ["DECODE_ALPHA", "DECODE_CACHE_ROWS", "CandidateDecodes", "candidate_view", "top_candidates"]

#: The detection level of the decode: ``ldp aggregate --alpha``'s default (false discovery rate, with BH).
DECODE_ALPHA = 0.05
#: The most candidate rows the decode cache keeps (the least recently used decodes go first).
DECODE_CACHE_ROWS = 200_000


def _finite(value: Any) -> float | None:
    """A summary number for JSON: a float, or None for NaN (a quantity the fit did not model)."""
    number = float(value)
    return number if math.isfinite(number) else None


def decode_block(
    accumulator: RapporAccumulator, candidates: tuple[str, ...], confidence: float
) -> dict[str, Any]:
    """The decode of ``accumulator`` against ``candidates``: its rows, largest estimate first, and its summary.

    ``rows`` are the records of ``ldp aggregate --candidates``'s table
    (``value, estimate, std_error, ci_low, ci_high, proportion, p_value,
    detected``), sorted by estimate, largest first (ties in the candidates'
    order). The summary: ``num_candidates``, ``num_detected``,
    ``allocated_mass`` (the share of reports the detected candidates
    explain), ``explained_mass`` (every candidate's), ``unexplained_mass``
    and ``unexplained_mass_se`` (the share of values outside the list, and
    its standard error; None when not modelled), ``alpha`` and ``correction``.
    """
    table = accumulator.estimate(confidence, candidates=list(candidates), alpha=DECODE_ALPHA)
    summary = table.attrs
    ordered = table.sort_values("estimate", ascending=False, kind="stable")
    return {
        "rows": estimate_records(ordered),
        "num_candidates": int(summary["num_candidates"]),
        "num_detected": int(summary["num_detected"]),
        "allocated_mass": _finite(summary["allocated_mass"]),
        "explained_mass": _finite(summary["explained_mass"]),
        "unexplained_mass": _finite(summary.get("unexplained_mass", math.nan)),
        "unexplained_mass_se": _finite(summary.get("unexplained_mass_se", math.nan)),
        "alpha": float(summary.get("alpha", DECODE_ALPHA)),
        "correction": str(summary.get("correction", DEFAULT_CORRECTION)),
    }


class CandidateDecodes:
    """Decodes kept by their inputs: spec, candidates, confidence and the counts (safe from several threads).

    At most :data:`DECODE_CACHE_ROWS` candidate rows are kept; the least
    recently used decodes go first. A decode being computed is computed once:
    a second thread asking for it meanwhile (two dashboards polling a live
    window) waits for the first one's result instead of decoding again.
    """

    def __init__(self, max_rows: int = DECODE_CACHE_ROWS) -> None:
        self.max_rows = max_rows
        self._lock = threading.Lock()
        self._kept: collections.OrderedDict[tuple[str, str, float, str], dict[str, Any]] = (
            collections.OrderedDict()
        )
        self._rows = 0
        self._computing: dict[tuple[str, str, float, str], threading.Event] = {}
        #: Decodes computed (not found kept): what a test of the cache counts.
        self.computed = 0

    def decode(self, task: Task, accumulator: RapporAccumulator, confidence: float) -> dict[str, Any]:
        """:func:`decode_block` of ``accumulator`` against ``task``'s candidates, kept or computed now.

        The block is shared with later calls: read it, never change it.
        """
        counts = hashlib.sha256(accumulator.cohort_counts.tobytes())
        counts.update(accumulator.bit_counts.tobytes())
        key = (task.fingerprint, task.candidates_digest, confidence, counts.hexdigest())
        while True:
            with self._lock:
                found = self._kept.get(key)
                if found is not None:
                    self._kept.move_to_end(key)
                    return found
                computing = self._computing.get(key)
                if computing is None:
                    done = self._computing[key] = threading.Event()
                    break
            computing.wait()  # another thread decodes it: then found kept (or, if it failed, decoded here)
        try:
            block = decode_block(accumulator, task.candidates, confidence)
            with self._lock:
                self.computed += 1
                self._kept[key] = block
                self._rows += len(block["rows"])
                while self._rows > self.max_rows and len(self._kept) > 1:
                    _, dropped = self._kept.popitem(last=False)
                    self._rows -= len(dropped["rows"])
        finally:
            with self._lock:
                del self._computing[key]
            done.set()
        return block


def candidate_view(
    task: Task, accumulator: Accumulator, confidence: float, decodes: CandidateDecodes | None = None
) -> dict[str, Any]:
    """``{"candidates": block}`` (:func:`decode_block`) for a Bloom RAPPOR task with candidates; ``{}`` otherwise.

    ``decodes`` keeps the decodes (none: decoded now). A task without
    candidates, or a window without reports, has no decode.
    """
    if not task.candidates or not isinstance(accumulator, RapporAccumulator) or accumulator.n == 0:
        return {}
    if decodes is None:
        return {"candidates": decode_block(accumulator, task.candidates, confidence)}
    return {"candidates": decodes.decode(task, accumulator, confidence)}


def top_candidates(reply: dict[str, Any], count: int) -> dict[str, Any]:
    """``reply`` with only the ``count`` largest decoded candidates (a new dict; ``reply`` is unchanged).

    The dashboard shows the largest candidates of each window; the block's
    ``num_candidates`` still counts them all.
    """
    block = reply.get("candidates")
    if not block or len(block["rows"]) <= count:
        return reply
    return {**reply, "candidates": {**block, "rows": block["rows"][:count]}}
