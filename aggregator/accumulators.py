"""Accumulators of sufficient statistics: add reports, merge, estimate.

An accumulator holds counts only. :meth:`add` takes one
:class:`~ldp.report.Report` (checked by :func:`ldp.report_check.check_report`;
a bad report raises :class:`~ldp.errors.ReportError` and changes nothing),
:meth:`add_batch` a validated :class:`~ldp.batch.ReportBatch` (vectorized),
and :meth:`merge` returns a new accumulator holding the sum of two, so merge
is associative and order independent and any engine can map batches to
accumulators and reduce them.

=================================  =========================================
:class:`ValueAccumulator`          BinaryRR, GRR: bincount of value indices
:class:`UnaryAccumulator`          SUE, OUE: bit counts of packed reports
:class:`LocalHashingAccumulator`   OLH, BLH: support counts by hashing
:class:`RapporAccumulator`         RAPPOR: reports per cohort, ones per
                                   (cohort, bit)
=================================  =========================================

Packed bits are counted by the bit-sliced kernels of
:mod:`ldp.aggregator.bitcounts`, in time linear in the number of report bits
and in bounded memory.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. "Locally Differentially Private
   Protocols for Frequency Estimation". USENIX Security 2017.
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

import numpy as np

from ldp.aggregator import olh
from ldp.aggregator.bitcounts import cohort_bit_counts, column_bit_counts
from ldp.aggregator.estimates import BitEstimates, oracle_columns, rappor_bit_estimates
from ldp.aggregator.table import ColumnTable
from ldp.batch import ReportBatch
from ldp.errors import InputError, ParameterError, ReportError
from ldp.plugins import implementation
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs import FrequencySpec, LocalHashing, Rappor

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Accumulator",
    "FrequencyAccumulator",
    "LocalHashingAccumulator",
    "RapporAccumulator",
    "UnaryAccumulator",
    "ValueAccumulator",
    "check_int_column",
    "check_packed_bits",
    "make_aggregator",
    "require_field",
    "state_value",
]


def check_packed_bits(bits: np.ndarray | None, num_bits: int) -> np.ndarray:
    """A batch's packed bit column: uint8 of shape (n, ⌈num_bits/8⌉) with zero padding, or a ReportError."""
    expected = (num_bits + 7) // 8
    if bits is None:
        raise ReportError("batch has no 'bits' column")
    bits = np.asarray(bits)
    if bits.dtype != np.uint8 or bits.ndim != 2 or bits.shape[1] != expected:
        raise ReportError(f"batch bits must be uint8 of shape (n, {expected}), got {bits.dtype} {bits.shape}")
    spare = expected * 8 - num_bits
    if spare and bits.shape[0] and np.any(bits[:, -1] & ((1 << spare) - 1)):
        raise ReportError(f"batch has bits set beyond bit {num_bits - 1} (padding must be zero)")
    return bits


def check_int_column(column: np.ndarray | None, name: str, upper: int) -> np.ndarray:
    """A batch's integer column ``name``: 1-D, every entry in [0, upper), or a ReportError naming it."""
    if column is None:
        raise ReportError(f"batch has no '{name}' column")
    column = np.asarray(column)
    if column.ndim != 1 or column.dtype.kind not in "iu":
        raise ReportError(f"batch {name} must be a 1-D integer array, got {column.dtype} {column.shape}")
    if column.size and (column.min() < 0 or column.max() >= upper):
        raise ReportError(f"batch {name} must be in [0, {upper})")
    return column


_T = TypeVar("_T")


def state_value(state: Mapping[str, Any], name: str) -> Any:
    """``state[name]`` of a saved accumulator state, or an :class:`~ldp.errors.InputError` naming what is missing."""
    if not isinstance(state, Mapping) or name not in state:
        raise InputError(f"the saved accumulator state has no {name!r}")
    return state[name]


def require_field(value: _T | None, name: str) -> _T:
    """A column :func:`~ldp.report_check.check_report` guarantees for the spec (a ReportError if absent)."""
    if value is None:
        raise ReportError(f"report has no {name!r}")
    return value


class Accumulator(abc.ABC):
    """The interface of every accumulator, and common behaviour (spec checks, merge bookkeeping, equality).

    An accumulator holds sufficient statistics of the reports of one spec:
    :meth:`add` one report, :meth:`add_batch` a column batch, :meth:`merge`
    another accumulator of the same type and spec (associative and
    commutative, so any engine may reduce partial accumulators in any
    order), and :meth:`estimate` the table with standard errors and
    confidence intervals. ``estimate(confidence, consistency=...)`` is
    understood by every accumulator; further keyword options are the
    mechanism's own, and an option it does not know is a
    :class:`~ldp.errors.ParameterError`.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import Accumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.OUE(domain=("a", "b"), epsilon=1.0)
    >>> left, right = make_aggregator(spec), make_aggregator(spec)
    >>> left.add_batch(secure_encode_batch(spec, ["a", "b"]))
    >>> right.add_batch(secure_encode_batch(spec, ["b"]))
    >>> merged = left.merge(right)  # e.g. the partial counts of two workers
    >>> isinstance(merged, Accumulator), merged.n, merged.estimate(0.9)["value"].tolist()
    (True, 3, ['a', 'b'])
    """

    spec: Any
    _state_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def for_spec(cls, spec: Any, threads: int | None = 1) -> Self:
        """An empty accumulator of ``spec``: the ``accumulator`` factory a mechanism declares (:mod:`ldp.registry`).

        ``threads`` is for accumulators that decode with threads (they
        override this); the others ignore it.
        """
        return cls(spec)

    def __init__(self, spec: Any) -> None:
        """An empty accumulator of ``spec``'s reports (each subclass keeps its own counts)."""
        self.spec = spec

    def _check_batch(self, batch: ReportBatch) -> None:
        if not isinstance(batch, ReportBatch):
            raise ParameterError(f"add_batch needs a ReportBatch, got {type(batch).__name__}")
        if batch.spec != self.spec.fingerprint:
            raise ReportError(f"batch is for spec {batch.spec}, not {self.spec.fingerprint}")

    def _check_mergeable(self, other: Accumulator) -> None:
        if type(other) is not type(self):
            raise ParameterError(f"cannot merge {type(self).__name__} with {type(other).__name__}")
        if other.spec.fingerprint != self.spec.fingerprint:
            raise ParameterError(
                f"cannot merge accumulators of different specs ({self.spec.fingerprint} and {other.spec.fingerprint})"
            )

    @abc.abstractmethod
    def add(self, report: Report) -> None:
        """Count one report (checked against the spec)."""

    @abc.abstractmethod
    def add_batch(self, batch: ReportBatch) -> None:
        """Count a batch of reports of this spec."""

    def add_reports(self, reports) -> None:
        """Add each report of an iterable; stops at the first bad one (use a reader for rejects)."""
        for report in reports:
            self.add(report)

    @property
    @abc.abstractmethod
    def n(self) -> int:
        """Number of reports counted."""

    @abc.abstractmethod
    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both (same type and spec); neither is changed.

        Merging adds counts, so it is associative and commutative.
        """

    @abc.abstractmethod
    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> pd.DataFrame:
        """The estimate table at ``confidence``, with standard errors and confidence intervals."""

    def estimate_columns(
        self, confidence: float = 0.95, *, consistency: str = "none", **options: Any
    ) -> ColumnTable | None:
        """:meth:`estimate`'s table built without pandas, where this accumulator can; None where it cannot.

        ``ldp aggregate`` writes it (a CSV file without importing pandas);
        :meth:`estimate` is the same table as a DataFrame.
        """
        return None

    # -- saved state (ldp.aggregator.state) ----------------------------------------
    def state(self) -> dict[str, Any]:
        """The sufficient statistics :meth:`from_state` rebuilds this accumulator from, by name.

        By default the values of ``_state_fields`` (the same statistics that
        ``==`` compares): NumPy arrays, integers, or lists and dicts of them.
        :func:`ldp.aggregator.state.dump_state` writes them as bytes. An
        accumulator whose class does not define :meth:`from_state` has no
        saved state (a :class:`~ldp.errors.ParameterError`).
        """
        if not type(self).restorable():
            raise ParameterError(f"{type(self).__name__} has no saved state (it defines no from_state)")
        return {name.lstrip("_"): getattr(self, name) for name in self._state_fields}

    @classmethod
    def restorable(cls) -> bool:
        """True when this class rebuilds an accumulator from its :meth:`state` (it defines :meth:`from_state`)."""
        return cls.from_state.__func__ is not Accumulator.from_state.__func__  # type: ignore[attr-defined]

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """The accumulator of ``spec`` holding ``state`` (what :meth:`state` gave), validated as its ``from_*`` does.

        Raises
        ------
        ParameterError
            When the class cannot be rebuilt from a state, or ``state`` is not
            one of this spec's (an :class:`~ldp.errors.InputError`).
        """
        raise ParameterError(
            f"{cls.__name__} cannot be rebuilt from a saved state (it defines no from_state)"
        )

    def _refuse_options(self, options: dict[str, Any]) -> None:
        """Refuse estimate options this accumulator does not know, naming them."""
        if options:
            raise ParameterError(f"{type(self).__name__}.estimate does not take {', '.join(sorted(options))}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        if other.spec.fingerprint != self.spec.fingerprint:
            return False
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in self._state_fields)

    __hash__ = None  # type: ignore[assignment]  # mutable counts: unhashable (typeshed types __hash__ as a method)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.mechanism}, n={self.n})"


# -- frequency oracles -------------------------------------------------------


class FrequencyAccumulator(Accumulator):
    """Support counts C_v of a pure frequency oracle (docs/mechanisms.md#pure-frequency-oracle).

    Parameters
    ----------
    spec : FrequencySpec
        The mechanism whose reports are counted.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import FrequencyAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.SUE(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> isinstance(aggregator, FrequencyAccumulator), aggregator.n
    (True, 3)
    """

    _state_fields = ("support_counts", "n")

    def __init__(self, spec: FrequencySpec):
        self.spec = spec
        self._counts = np.zeros(spec.domain_size, dtype=np.int64)
        self._n = 0

    @classmethod
    def from_counts(cls, spec: FrequencySpec, support_counts, n: int) -> Self:
        """Rebuild an accumulator from its sufficient statistics (validated)."""
        acc = cls(spec)
        counts = np.asarray(support_counts)
        if counts.shape != (spec.domain_size,):
            raise InputError(f"support_counts must have shape ({spec.domain_size},), got {counts.shape}")
        if counts.dtype.kind not in "iu" and not np.all(np.mod(counts, 1) == 0):
            raise InputError("support_counts must be integers")
        if isinstance(n, bool) or int(n) != n or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}")
        counts = counts.astype(np.int64)
        if counts.size and (counts.min() < 0 or counts.max() > n):
            raise InputError(f"support counts must be in [0, n={n}]")
        acc._check_counts(counts, int(n))
        acc._counts = counts
        acc._n = int(n)
        return acc

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"support_counts", "n"}`` (:meth:`from_counts`)."""
        return cls.from_counts(spec, state_value(state, "support_counts"), state_value(state, "n"))

    def _check_counts(self, counts: np.ndarray, n: int) -> None:
        """Mechanism-specific consistency of counts (hook)."""

    @property
    def support_counts(self) -> np.ndarray:
        """C_v, the number of reports supporting each domain value (read-only view)."""
        view = self._counts.view()
        view.flags.writeable = False
        return view

    @property
    def n(self) -> int:
        """Number of reports counted."""
        return self._n

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both (same spec required)."""
        self._check_mergeable(other)
        return type(self).from_counts(self.spec, self.support_counts + other.support_counts, self.n + other.n)

    def estimate(
        self, confidence: float = 0.95, *, consistency: str = "none", alpha: float = 0.05, **options: Any
    ) -> pd.DataFrame:
        """Unbiased count estimates with standard errors and confidence intervals.

        Parameters
        ----------
        confidence : float
            Two-sided level of ``ci_low``/``ci_high``, default 0.95.
        consistency : str
            ``none`` (default, unbiased), ``clip``, ``base-cut``, ``norm-mul``
            or ``norm-sub``; see :mod:`ldp.aggregator.consistency`. Anything
            but ``none`` trades unbiasedness for lower error.
        alpha : float
            Level of the ``base-cut`` threshold.

        Returns
        -------
        pandas.DataFrame
            ``value, estimate, std_error, ci_low, ci_high, proportion``;
            see :func:`ldp.aggregator.estimates.oracle_estimates`.
        """
        table = self._oracle_columns(confidence, consistency, alpha, options)
        return table.to_frame()

    def estimate_columns(
        self, confidence: float = 0.95, *, consistency: str = "none", alpha: float = 0.05, **options: Any
    ) -> ColumnTable | None:
        """:meth:`estimate`'s table without pandas; None for a subclass with its own :meth:`estimate`."""
        if type(self).estimate is not FrequencyAccumulator.estimate:
            return None
        return self._oracle_columns(confidence, consistency, alpha, options)

    def _oracle_columns(
        self, confidence: float, consistency: str, alpha: float, options: dict[str, Any]
    ) -> ColumnTable:
        self._refuse_options(options)
        return oracle_columns(
            self.spec.domain,
            self.support_counts,
            self.n,
            self.spec.p_star,
            self.spec.q_star,
            confidence=confidence,
            consistency=consistency,
            alpha=alpha,
        )


class ValueAccumulator(FrequencyAccumulator):
    """BinaryRR and GRR: a report supports exactly the value it names.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import ValueAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> isinstance(aggregator, ValueAccumulator), aggregator.n
    (True, 3)
    """

    def _check_counts(self, counts: np.ndarray, n: int) -> None:
        if int(counts.sum()) != n:
            raise InputError(
                f"{self.spec.mechanism} support counts must sum to n={n}, got {int(counts.sum())}"
            )

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        self._counts[checked.value] += 1
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        values = check_int_column(batch.values, "values", self.spec.domain_size)
        self._counts += np.bincount(values, minlength=self.spec.domain_size)
        self._n += int(values.shape[0])


class UnaryAccumulator(FrequencyAccumulator):
    """SUE and OUE: a report supports every value whose bit is set.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import UnaryAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.OUE(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> isinstance(aggregator, UnaryAccumulator), aggregator.n
    (True, 3)
    """

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        bits = np.unpackbits(
            np.frombuffer(require_field(checked.bits, "bits"), dtype=np.uint8), count=self.spec.domain_size
        )
        self._counts += bits
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        d = self.spec.domain_size
        bits = check_packed_bits(batch.bits, d)
        self._counts += column_bit_counts(bits, d)
        self._n += int(bits.shape[0])


class LocalHashingAccumulator(FrequencyAccumulator):
    """OLH and BLH: a report ⟨seed, y⟩ supports every v with H_seed(v) = y.

    Support counts are computed when reports arrive (:mod:`ldp.aggregator.olh`),
    so the state stays d integers. Single reports from :meth:`add` are
    buffered and decoded together.

    Parameters
    ----------
    spec : LocalHashing
    threads : int or None, default 1
        Threads used to decode each batch (None: all CPUs).

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import LocalHashingAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.OLH(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a", "b", "a"]))
    >>> isinstance(aggregator, LocalHashingAccumulator), aggregator.n
    (True, 3)
    """

    _BUFFER = 4096

    @classmethod
    def for_spec(cls, spec: Any, threads: int | None = 1) -> Self:
        """An empty accumulator decoding with ``threads`` threads."""
        return cls(spec, threads=threads)

    def __init__(self, spec: LocalHashing, *, threads: int | None = 1):
        super().__init__(spec)
        self.threads = threads
        self._pending_seeds: list[int] = []
        self._pending_buckets: list[int] = []

    def _flush(self) -> None:
        if self._pending_seeds:
            seeds = np.array(self._pending_seeds, dtype=np.uint64)
            buckets = np.array(self._pending_buckets, dtype=np.int64)
            self._pending_seeds, self._pending_buckets = [], []
            self._counts += olh.support_counts(seeds, buckets, self.spec.g, self.spec.domain_size, threads=1)

    @property
    def support_counts(self) -> np.ndarray:
        self._flush()
        return super().support_counts

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        self._pending_seeds.append(require_field(checked.seed, "seed"))
        self._pending_buckets.append(checked.value)
        self._n += 1
        if len(self._pending_seeds) >= self._BUFFER:
            self._flush()

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        if batch.seeds is None:
            raise ReportError("batch has no 'seeds' column")
        buckets = check_int_column(batch.values, "values", self.spec.g)
        counts = olh.support_counts(
            batch.seeds, buckets, self.spec.g, self.spec.domain_size, threads=self.threads
        )
        self._counts += counts
        self._n += int(buckets.shape[0])

    def merge(self, other: Self) -> Self:
        merged = super().merge(other)
        merged.threads = self.threads
        return merged


# -- RAPPOR ------------------------------------------------------------------


class RapporAccumulator(Accumulator):
    """Reports per cohort and ones per (cohort, bit) of RAPPOR reports.

    Parameters
    ----------
    spec : Rappor

    Attributes
    ----------
    cohort_counts : ndarray of int64, shape (m,)
        N_j, reports received from cohort j.
    bit_counts : ndarray of int64, shape (m, k)
        c_ij, reports from cohort j with bit i set.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import RapporAccumulator, make_aggregator
    >>> from ldp.client import secure_encode_batch
    >>> spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["x", "y", "x"]))
    >>> isinstance(aggregator, RapporAccumulator), aggregator.n
    (True, 3)
    """

    _state_fields = ("cohort_counts", "bit_counts")

    def __init__(self, spec: Rappor):
        self.spec = spec
        self._cohorts = np.zeros(spec.num_cohorts, dtype=np.int64)
        self._bits = np.zeros((spec.num_cohorts, spec.num_bits), dtype=np.int64)

    @classmethod
    def from_counts(cls, spec: Rappor, cohort_counts, bit_counts) -> Self:
        """Rebuild from N_j and c_ij (validated: integers, 0 ≤ c_ij ≤ N_j)."""
        acc = cls(spec)
        n_j = np.asarray(cohort_counts)
        c = np.asarray(bit_counts)
        m, k = spec.num_cohorts, spec.num_bits
        if n_j.shape != (m,) or c.shape != (m, k):
            raise InputError(
                f"expected cohort_counts ({m},) and bit_counts ({m}, {k}), got {n_j.shape} and {c.shape}"
            )
        for name, arr in (("cohort_counts", n_j), ("bit_counts", c)):
            if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(np.mod(arr, 1) == 0)):
                raise InputError(f"{name} must be integers")
        n_j = n_j.astype(np.int64)
        c = c.astype(np.int64)
        if np.any(n_j < 0) or np.any(c < 0) or np.any(c > n_j[:, None]):
            raise InputError("counts must satisfy 0 <= bit_counts[j, i] <= cohort_counts[j]")
        acc._cohorts = n_j
        acc._bits = c
        return acc

    @classmethod
    def from_state(cls, spec: Any, state: Mapping[str, Any]) -> Self:
        """From ``{"cohort_counts", "bit_counts"}`` (:meth:`from_counts`)."""
        return cls.from_counts(spec, state_value(state, "cohort_counts"), state_value(state, "bit_counts"))

    @property
    def cohort_counts(self) -> np.ndarray:
        view = self._cohorts.view()
        view.flags.writeable = False
        return view

    @property
    def bit_counts(self) -> np.ndarray:
        view = self._bits.view()
        view.flags.writeable = False
        return view

    @property
    def n(self) -> int:
        return int(self._cohorts.sum())

    def add(self, report: Report) -> None:
        checked = check_report(self.spec, report)
        bits = np.unpackbits(
            np.frombuffer(require_field(checked.bits, "bits"), dtype=np.uint8), count=self.spec.num_bits
        )
        self._bits[checked.cohort] += bits
        self._cohorts[checked.cohort] += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        m, k = self.spec.num_cohorts, self.spec.num_bits
        bits = check_packed_bits(batch.bits, k)
        cohorts = check_int_column(batch.cohorts, "cohorts", m)
        if cohorts.shape[0] != bits.shape[0]:
            raise ReportError(f"batch has {cohorts.shape[0]} cohorts but {bits.shape[0]} bit rows")
        if cohorts.shape[0] == 0:
            return
        rows = np.zeros(m, dtype=np.int64)  # counted by the kernel, added with the bits (never half a batch)
        self._bits += cohort_bit_counts(bits, cohorts, m, k, rows_out=rows)
        self._cohorts += rows

    def merge(self, other: Self) -> Self:
        """A new accumulator holding the reports of both (same spec required)."""
        self._check_mergeable(other)
        return type(self).from_counts(
            self.spec, self.cohort_counts + other.cohort_counts, self.bit_counts + other.bit_counts
        )

    # -- estimates -----------------------------------------------------------
    def bit_estimates(self) -> BitEstimates:
        """Per-cohort, per-bit unbiased counts t_ij and their variances (docs/mechanisms.md#rappor-decoding)."""
        return rappor_bit_estimates(
            self.cohort_counts, self.bit_counts, self.spec.prob_one_given_one, self.spec.prob_one_given_zero
        )

    def estimate(
        self,
        confidence: float = 0.95,
        *,
        candidates: Sequence[Any] | None = None,
        consistency: str = "none",
        alpha: float = 0.05,
        **options: Any,
    ) -> pd.DataFrame:
        """Estimates from RAPPOR reports.

        * ``basic``: unbiased count of each domain value, pooled over cohorts
          (value i sets bit i whatever the cohort), with the fixed-data
          standard error of :func:`~ldp.aggregator.estimates.oracle_estimates`
          using p* = P[S=1 | B=1], q* = P[S=1 | B=0].
        * ``boolean``: the same for the values ``False`` and ``True``
          (the count of ``False`` is n minus the count of ``True``).
        * ``bloom`` with ``candidates``: the candidate decode of
          :func:`ldp.aggregator.rappor.decode.decode` (``options`` are passed
          to it).
        * ``bloom`` without candidates: the per-cohort, per-bit table of
          :meth:`bit_estimates` (values are unknown without candidates).

        Parameters
        ----------
        confidence : float
            Level of the intervals, default 0.95.
        candidates : sequence, optional
            Candidate values (Bloom RAPPOR only).
        consistency : str
            Post-processing for ``basic``/``boolean`` (default ``none``).
        alpha : float
            Level of the ``base-cut`` threshold; for the Bloom candidate decode,
            the detection level (see ``correction`` of
            :func:`ldp.aggregator.rappor.decode.decode`).
        """
        spec = self.spec
        if spec.encoding == "bloom" and candidates is not None:
            from ldp.aggregator.rappor import decode as rappor_decode

            return rappor_decode.decode(
                spec,
                self.cohort_counts,
                self.bit_counts,
                candidates,
                confidence=confidence,
                alpha=alpha,
                **options,
            )
        return self._columns(confidence, candidates, consistency, alpha, options).to_frame()

    def estimate_columns(
        self,
        confidence: float = 0.95,
        *,
        candidates: Sequence[Any] | None = None,
        consistency: str = "none",
        alpha: float = 0.05,
        **options: Any,
    ) -> ColumnTable | None:
        """:meth:`estimate`'s table without pandas; None for the Bloom candidate decode."""
        if self.spec.encoding == "bloom" and candidates is not None:
            return None
        return self._columns(confidence, candidates, consistency, alpha, options)

    def _columns(
        self,
        confidence: float,
        candidates: Sequence[Any] | None,
        consistency: str,
        alpha: float,
        options: dict[str, Any],
    ) -> ColumnTable:
        """The tables of :meth:`estimate` but the candidate decode."""
        spec = self.spec
        if spec.encoding == "bloom":
            self._refuse_options(options)  # decode options need candidates
            return self.bit_estimates().to_columns(confidence)
        if candidates is not None:
            raise ParameterError(
                f"{spec.encoding} RAPPOR decodes its values directly; candidates are for Bloom RAPPOR"
            )
        self._refuse_options(options)
        n = self.n
        one, zero = spec.prob_one_given_one, spec.prob_one_given_zero
        ones = self.bit_counts.sum(axis=0)
        if spec.encoding == "basic":
            return oracle_columns(
                spec.domain,
                ones,
                n,
                float(one),
                float(zero),
                confidence=confidence,
                consistency=consistency,
                alpha=alpha,
            )
        # boolean: "False" is supported by a 0 bit, with P[0 | False] = 1 − zero, P[0 | True] = 1 − one
        support = np.array([n - ones[0], ones[0]])
        p_star = np.array([float(1 - zero), float(one)])
        q_star = np.array([float(1 - one), float(zero)])
        return oracle_columns(
            (False, True),
            support,
            n,
            p_star,
            q_star,
            confidence=confidence,
            consistency=consistency,
            alpha=alpha,
        )


def make_aggregator(spec: Any, *, threads: int | None = 1) -> Accumulator:
    """An empty accumulator for ``spec``.

    Parameters
    ----------
    spec : Spec
        BinaryRR, GRR, SUE, OUE, OLH, BLH or Rappor.
    threads : int or None, default 1
        Decoding threads for OLH/BLH (None: all CPUs); ignored otherwise.

    Raises
    ------
    ParameterError
        For a spec no accumulator handles.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import secure_encode_batch
    >>> from ldp.aggregator import make_aggregator
    >>> spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    >>> aggregator = make_aggregator(spec)
    >>> aggregator.add_batch(secure_encode_batch(spec, ["a"] * 600 + ["b"] * 300 + ["c"] * 100))
    >>> aggregator.n
    1000
    >>> aggregator.estimate(0.95).columns.tolist()
    ['value', 'estimate', 'std_error', 'ci_low', 'ci_high', 'proportion']
    """
    return implementation(spec, "accumulator")(spec, threads=threads)
