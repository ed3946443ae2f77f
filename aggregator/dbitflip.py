"""dBitFlip's accumulator: per bucket, the reports that sampled it and the ones sent for it (docs/longitudinal/dbitflip.md).

The sufficient statistics are two counts per bucket v: N_v, the reports
whose sampled buckets include v, and O_v, the ones among their bits for v.
The paper's estimator is then

    ĥ(v) = (b/(n d))·Σ_{reports sampling v} (s_v − q′)/(p′ − q′) = (b/(n d))·(O_v − q′ N_v)/(p′ − q′),

unbiased for the fraction of users in bucket v, with the exact fixed-data
variance :meth:`ldp.specs.dbitflip.DBitFlip.variance`. Merging adds the
counts, so it is associative and commutative.

References
----------
.. [1] B. Ding, J. Kulkarni, S. Yekhanin. "Collecting telemetry data
   privately". NeurIPS 2017.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ldp.aggregator.accumulators import Accumulator, check_packed_bits, state_value
from ldp.aggregator.estimates import add_consistent_view, estimate_table
from ldp.batch import ReportBatch
from ldp.errors import EstimateError, InputError, ReportError
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.dbitflip import DBitFlip, sampled_weights

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DBitFlipAccumulator", "dbitflip_estimates"]

#: Reports unpacked at once by :meth:`DBitFlipAccumulator.add_batch` (rows × b booleans ≤ 16 MiB).
_BLOCK_CELLS = 1 << 24


def dbitflip_estimates(
    spec: DBitFlip,
    sampled_counts,
    one_counts,
    n: int,
    *,
    confidence: float = 0.95,
    consistency: str = "none",
    alpha: float = 0.05,
) -> pd.DataFrame:
    """The estimate table (``value, estimate, std_error, ci_low, ci_high, proportion``) from N_v, O_v and n.

    ``estimate`` is n·ĥ(v) (users), ``std_error`` n·√Var at f = clip(ĥ(v), 0, 1); ``consistency``
    post-processes as for every frequency oracle (:mod:`ldp.aggregator.consistency`).
    """
    if n <= 0:
        raise EstimateError("cannot estimate from zero reports")
    sampled = np.asarray(sampled_counts, dtype=float)
    ones = np.asarray(one_counts, dtype=float)
    p1, q1 = float(spec.sent_one), float(spec.sent_zero)
    f_hat = spec.domain_size / (n * spec.d) * (ones - q1 * sampled) / (p1 - q1)
    variance = spec.variance(np.clip(f_hat, 0.0, 1.0), n)
    table = estimate_table(spec.domain, n * f_hat, n * np.sqrt(variance), n, confidence=confidence)
    if str(consistency).strip().lower() != "none":
        null_se = np.sqrt(np.broadcast_to(spec.variance(0.0, n), f_hat.shape))
        add_consistent_view(table, f_hat, n, consistency, null_se, alpha)
    return table


class DBitFlipAccumulator(Accumulator):
    """N_v (reports sampling bucket v) and O_v (ones sent for v) of dBitFlip reports.

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.aggregator import make_aggregator
    >>> from ldp.client import encode_batch
    >>> from ldp.specs.dbitflip import DBitFlip
    >>> spec = DBitFlip(domain=("a", "b", "c"), epsilon=1.0, d=2)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(encode_batch(spec, ["a", "b", "a"], np.random.default_rng(1)))  # insecure-ok: example
    >>> aggregator.n, int(aggregator.sampled_counts.sum())  # each report samples d = 2 buckets
    (3, 6)
    """

    _state_fields = ("sampled_counts", "one_counts", "n")

    def __init__(self, spec: DBitFlip):
        self.spec = spec
        self._sampled = np.zeros(spec.domain_size, dtype=np.int64)
        self._ones = np.zeros(spec.domain_size, dtype=np.int64)
        self._n = 0

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"sampled_counts", "one_counts", "n"}`` (:meth:`from_counts`)."""
        return cls.from_counts(
            spec,
            state_value(state, "sampled_counts"),
            state_value(state, "one_counts"),
            state_value(state, "n"),
        )

    @classmethod
    def from_counts(cls, spec: DBitFlip, sampled_counts, one_counts, n: int) -> Self:
        """Rebuild an accumulator from N_v, O_v and n (validated: 0 ≤ O_v ≤ N_v ≤ n).

        Reports give Σ N_v = d·n exactly; the fast simulator's counts
        (:func:`ldp.simulations.dbitflip.dbitflip_counts`) have the exact
        marginals only, so the sum is not required.
        """
        acc = cls(spec)
        b = spec.domain_size
        arrays = []
        for name, counts in (("sampled_counts", sampled_counts), ("one_counts", one_counts)):
            array = np.asarray(counts)
            if array.shape != (b,):
                raise InputError(f"{name} must have shape ({b},), got {array.shape}")
            if array.dtype.kind not in "iu" and not np.all(np.mod(array, 1) == 0):
                raise InputError(f"{name} must be integers")
            arrays.append(array.astype(np.int64))
        sampled, ones = arrays
        if isinstance(n, bool) or int(n) != n or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}")
        if np.any(ones < 0) or np.any(ones > sampled) or np.any(sampled > n):
            raise InputError("dbitflip counts must satisfy 0 <= one_counts <= sampled_counts <= n")
        acc._sampled, acc._ones, acc._n = sampled, ones, int(n)
        return acc

    @property
    def sampled_counts(self) -> np.ndarray:
        """N_v, the reports whose sampled buckets include v (read-only view)."""
        view = self._sampled.view()
        view.flags.writeable = False
        return view

    @property
    def one_counts(self) -> np.ndarray:
        """O_v, the ones sent for bucket v (read-only view)."""
        view = self._ones.view()
        view.flags.writeable = False
        return view

    @property
    def n(self) -> int:
        """Number of reports counted."""
        return self._n

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        b, d = self.spec.domain_size, self.spec.d
        bits = np.unpackbits(np.frombuffer(checked.bits or b"", dtype=np.uint8))
        positions = np.flatnonzero(bits[:b])
        sent = bits[b : b + d]
        self._sampled[positions] += 1
        self._ones[positions] += sent
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        """Count a batch; a row whose first b bits do not hold exactly d ones is refused (no report has one)."""
        self._check_batch(batch)
        b, d = self.spec.domain_size, self.spec.d
        bits = check_packed_bits(batch.bits, b + d)
        weights = sampled_weights(bits, b)
        wrong = np.flatnonzero(weights != d)
        if wrong.size:
            raise ReportError(
                f"batch row {int(wrong[0])} samples {int(weights[wrong[0]])} buckets, expected exactly "
                f"d = {d} ({wrong.size} such rows)"
            )
        rows = max(1, _BLOCK_CELLS // (b + d))
        for start in range(0, bits.shape[0], rows):
            unpacked = np.unpackbits(bits[start : start + rows], axis=1, count=b + d)
            chosen = unpacked[:, :b].astype(bool)
            _, columns = np.nonzero(chosen)  # row-major: each row's buckets in ascending order, as its bits
            self._sampled += chosen.sum(axis=0, dtype=np.int64)
            self._ones += np.bincount(columns, weights=unpacked[:, b:].ravel(), minlength=b).astype(np.int64)
        self._n += int(bits.shape[0])

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both (same spec required)."""
        self._check_mergeable(other)
        return type(self).from_counts(
            self.spec, self._sampled + other._sampled, self._ones + other._ones, self._n + other._n
        )

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", alpha: float = 0.05, **options: Any
    ) -> pd.DataFrame:
        """Unbiased bucket counts with standard errors and confidence intervals (:func:`dbitflip_estimates`)."""
        self._refuse_options(options)
        return dbitflip_estimates(
            self.spec,
            self._sampled,
            self._ones,
            self._n,
            confidence=confidence,
            consistency=consistency,
            alpha=alpha,
        )
