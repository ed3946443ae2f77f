"""Subset selection's accumulator: the support count of every value (docs/mechanisms.md#ss).

A report is a d-bit vector with exactly ω bits set; it supports every value
whose bit is set, so the counts are the unary encodings' column bit counts
and the estimate is the pure-oracle one with p* = p and q* = (ω − p)/(d − 1).
The report schema (:class:`ldp.specs.subset.SubsetBits`) refuses a vector of
another weight before it reaches the counts.
"""

from __future__ import annotations

import numpy as np

from ldp.aggregator.accumulators import UnaryAccumulator, check_packed_bits
from ldp.batch import ReportBatch
from ldp.errors import InputError, ReportError
from ldp.specs.subset import bit_weights

__all__ = ["SubsetAccumulator"]


class SubsetAccumulator(UnaryAccumulator):
    """Support counts C_v of subset-selection reports; every report adds ω to their sum.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import SubsetAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.SubsetSelection(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> isinstance(aggregator, SubsetAccumulator), aggregator.n
    (True, 3)
    """

    def _check_counts(self, counts: np.ndarray, n: int) -> None:
        omega = self.spec.omega
        if int(counts.sum()) != omega * n:
            raise InputError(
                f"ss support counts must sum to omega*n = {omega}*{n} = {omega * n}, got {int(counts.sum())}"
            )

    def add_batch(self, batch: ReportBatch) -> None:
        """Count a batch; a vector without exactly ω bits set is refused (no report of the spec has one)."""
        self._check_batch(batch)
        bits = check_packed_bits(batch.bits, self.spec.domain_size)
        weights = bit_weights(bits)
        wrong = np.flatnonzero(weights != self.spec.omega)
        if wrong.size:
            raise ReportError(
                f"batch row {int(wrong[0])} has {int(weights[wrong[0]])} bits set, expected exactly "
                f"omega = {self.spec.omega} ({wrong.size} such rows)"
            )
        super().add_batch(batch)
