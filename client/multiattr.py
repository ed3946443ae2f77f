"""Encode multi-attribute records (docs/multi-attribute.md): every attribute through its own registered encoder.

:func:`encode_records` takes one column of values per attribute and returns
a :class:`RecordBatch`. For ``smp`` and ``spl`` it holds, per attribute, the
users who report it (their row numbers: the sampled indices, sent in the
clear) and the :class:`~ldp.batch.ReportBatch` its own batch encoder made of
their values; for ``rsfd-grr`` one reported domain index per user and
attribute (the sampled attribute's GRR output among uniform fake values); for the
RS+FD methods over unary encoding, every attribute's bits for every user
(``rows`` all users): the sampled attribute's UE report, fake data elsewhere.
Every coin comes from the given random source (the OS CSPRNG for real users).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import (
    bernoulli_words,
    encode_batch,
    randomized_response_batch,
    unary_batch,
    value_indices,
    words_to_packed,
)
from ldp.client.bits import sampler_for, uniforms
from ldp.client.encoders import UnaryEncoder, make_encoder, stateless_factory
from ldp.client.randomness import RandomSource, as_source
from ldp.client.report_bits import uniform
from ldp.errors import InputError
from ldp.report import Report
from ldp.report_schema import report_schema_of
from ldp.specs.multiattr import RSFD_METHODS, SAMPLED_FIELD, MultiAttribute

__all__ = [
    "MultiAttributeEncoder",
    "RecordBatch",
    "encode_records",
    "multi_attribute_batch",
    "multi_attribute_encoder",
    "record_report_batch",
    "sample_attributes",
]


@dataclasses.dataclass(frozen=True)
class RecordBatch:
    """Reports of ``n`` records under a :class:`~ldp.specs.multiattr.MultiAttribute` spec.

    Attributes
    ----------
    spec : str
        The multi-attribute spec's fingerprint.
    n : int
        Records (users).
    rows : tuple of numpy.ndarray
        ``smp``/``spl``/RS+FD over UE: per attribute, the users (row numbers) who report it (all, but ``smp``).
    reports : tuple of ReportBatch
        ``smp``/``spl``/RS+FD over UE: per attribute, its reports, in the order of ``rows``.
    indices : numpy.ndarray or None
        ``rsfd-grr``: an (n, d) int64 matrix of reported domain indices.
    """

    spec: str
    n: int
    rows: tuple[np.ndarray, ...] = ()
    reports: tuple[ReportBatch, ...] = ()
    indices: np.ndarray | None = None


def sample_attributes(source: RandomSource, n: int, d: int, k: int) -> np.ndarray:
    """An (n, k) int64 matrix: per user, k of the d attributes uniformly without replacement.

    A partial Fisher–Yates shuffle with exact uniform draws
    (:func:`~ldp.client.bits.uniforms`, on bits in a large secure batch).
    """
    perm = np.tile(np.arange(d, dtype=np.int64), (n, 1))
    rows = np.arange(n)
    sampler = sampler_for(source, n)  # bits in a large secure batch
    for t in range(k):
        pick = t + uniforms(sampler, d - t, n).astype(np.int64, copy=False)
        chosen = perm[rows, pick].copy()
        perm[rows, pick] = perm[:, t]
        perm[:, t] = chosen
    return perm[:, :k]


def _columns(spec: MultiAttribute, records: Mapping[str, Sequence[Any]]) -> list[Sequence[Any]]:
    missing = [name for name in spec.names if name not in records]
    if missing:
        raise InputError(
            f"records have no column {missing[0]!r} (the spec's attributes: {', '.join(spec.names)})"
        )
    columns = [records[name] for name in spec.names]
    sizes = {len(c) for c in columns}
    if len(sizes) != 1:
        raise InputError(f"record columns differ in length: {', '.join(str(len(c)) for c in columns)}")
    return columns


def encode_records(
    spec: MultiAttribute, records: Mapping[str, Sequence[Any]], rng: np.random.Generator | RandomSource
) -> RecordBatch:
    """Encode one record per user (``records[name]`` is attribute ``name``'s column).

    Parameters
    ----------
    spec : MultiAttribute
    records : mapping of str to sequence
        One equal-length column per attribute name (extra columns are ignored).
    rng : RandomSource or numpy.random.Generator
        The OS CSPRNG (:class:`~ldp.client.randomness.SystemRandomSource`) for
        real users; a seeded generator only in simulations and tests.

    Raises
    ------
    InputError
        For a missing column, columns of different lengths, or a value an
        attribute's encoder refuses (naming the attribute).

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.specs.multiattr import MultiAttribute
    >>> from ldp.client.multiattr import encode_records
    >>> spec = MultiAttribute([{"name": "os", "mechanism": "grr", "domain": ["l", "m", "w"]},
    ...                        {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100}], epsilon=1.0)
    >>> batch = encode_records(spec, {"os": ["l", "w", "m"], "ms": [3.0, 50.0, 99.0]},
    ...                        np.random.default_rng(1))  # insecure-ok: seeded, doctest only
    >>> batch.n, sum(len(r) for r in batch.rows)  # smp, k = 1: one attribute per user
    (3, 3)
    """
    source = as_source(rng)
    columns = _columns(spec, records)
    n = len(columns[0])
    d = spec.dimension
    for name, attribute, column in zip(spec.names, spec.attributes, columns, strict=True):
        _check_column(attribute, column, name)  # every value, whether its attribute is sampled or not
    if (
        spec.method == "rsfd-grr"
    ):  # each user's chosen attribute randomized, uniform fake values in the others
        sampler = sampler_for(source, n)
        chosen = uniforms(sampler, d, n).astype(np.int64, copy=False)
        out = np.empty((n, d), dtype=np.int64)
        for j, (name, attr) in enumerate(zip(spec.names, spec.attributes, strict=True)):
            idx = _indices(attr, columns[j], name)
            size = attr.domain_size  # type: ignore[attr-defined]
            mine, others = np.flatnonzero(chosen == j), np.flatnonzero(chosen != j)
            p_star, q_star = attr.exact_p_star, attr.exact_q_star  # type: ignore[attr-defined]
            out[mine, j] = randomized_response_batch(sampler, idx[mine], size, p_star, q_star)
            out[others, j] = uniforms(sampler, size, others.size)
        return RecordBatch(spec=spec.fingerprint, n=n, indices=out)
    if spec.rsfd:
        return _rsfd_unary_records(spec, columns, source, n)
    if spec.method == "spl":
        every = np.arange(n, dtype=np.int64)
        rows = tuple(every for _ in range(d))
    else:
        sampled = sample_attributes(source, n, d, spec.sample)
        rows = tuple(np.flatnonzero((sampled == j).any(axis=1)) for j in range(d))
    reports = []
    for j, (name, attr) in enumerate(zip(spec.names, spec.attributes, strict=True)):
        values = [columns[j][int(i)] for i in rows[j]]
        try:
            reports.append(encode_batch(attr, values, source))
        except InputError as error:
            raise InputError(f"attribute {name!r}: {error}") from None
    return RecordBatch(spec=spec.fingerprint, n=n, rows=rows, reports=tuple(reports))


def _rsfd_unary_records(
    spec: MultiAttribute, columns: list[Sequence[Any]], source: RandomSource, n: int
) -> RecordBatch:
    """RS+FD over SUE/OUE: per user one attribute's UE report, fake data (zero or random) in the others."""
    sampler = sampler_for(source, n)
    chosen = uniforms(sampler, spec.dimension, n).astype(np.int64, copy=False)
    fake = RSFD_METHODS[spec.method][1]
    every = np.arange(n, dtype=np.int64)
    reports = []
    for j, (name, attr) in enumerate(zip(spec.names, spec.attributes, strict=True)):
        size = attr.domain_size  # type: ignore[attr-defined]
        mine, others = np.flatnonzero(chosen == j), np.flatnonzero(chosen != j)  # each row draws its part
        bits = np.empty((n, (size + 7) // 8), dtype=np.uint8)
        values = _indices(attr, columns[j], name)[mine]
        honest = unary_batch(attr, values, source, indices=True).column("bits")  # type: ignore[arg-type]
        other: np.ndarray | None
        if fake == "zero":
            zero = np.zeros((others.size, (size + 63) // 64), dtype=np.uint64)
            lanes = bernoulli_words(source, zero, attr.exact_p_star, attr.exact_q_star)  # type: ignore[attr-defined]
            other = words_to_packed(lanes, size)
        else:
            uniform = uniforms(sampler, size, others.size).astype(np.int64, copy=False)
            other = unary_batch(attr, uniform, source, indices=True).column("bits")  # type: ignore[arg-type]
        assert honest is not None and other is not None
        bits[mine], bits[others] = honest, other
        reports.append(ReportBatch(spec=attr.fingerprint, bits=bits))
    return RecordBatch(
        spec=spec.fingerprint, n=n, rows=tuple(every for _ in range(spec.dimension)), reports=tuple(reports)
    )


def _check_column(attr: Any, column: Sequence[Any], name: str) -> None:
    """Refuse a column with a value its attribute's encoder would refuse (naming the attribute)."""
    if hasattr(attr, "index_of"):
        _indices(attr, column, name)
        return
    if not len(column):
        return
    try:
        attr.to_native(list(column))
    except InputError as error:
        raise InputError(f"attribute {name!r}: {error}") from None


def _indices(attr: Any, column: Sequence[Any], name: str) -> np.ndarray:
    try:
        return value_indices(attr, column, False)
    except InputError as error:
        raise InputError(f"attribute {name!r}: {error}") from None


# -- the registered mechanism: one record report, and a ReportBatch of record reports ------------------


class MultiAttributeEncoder:
    """One record's report (docs/multi-attribute.md#reports): each reported attribute by its own encoder.

    ``smp`` draws the k attributes by a partial Fisher–Yates shuffle
    (``uniform``, exact, on the CSPRNG's bits) and reports each by its mechanism's
    encoder; ``spl`` reports every attribute; ``rsfd-grr`` draws the one
    attribute reported by GRR and gives every other a uniform fake value;
    ``rsfd-{sue,oue}-z`` report the drawn attribute by UE and every other as
    the UE perturbation of the zero vector, ``-r`` as the UE report of a
    uniformly drawn value (``uniform``). Every coin comes from the
    OS CSPRNG, drawn in attribute order.

    Examples
    --------
    >>> from ldp.specs.multiattr import MultiAttribute
    >>> from ldp.client.multiattr import MultiAttributeEncoder
    >>> spec = MultiAttribute([{"name": "os", "mechanism": "grr", "domain": ["l", "m", "w"]},
    ...                        {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100}], epsilon=1.0)
    >>> report = MultiAttributeEncoder(spec).encode({"os": "m", "ms": 20.0})
    >>> len(report.payload_names())  # k = 1: the sampled bits and the sampled attribute's one field
    2
    """

    def __init__(self, spec: MultiAttribute) -> None:
        self.spec = spec
        self._encoders = [make_encoder(attribute) for attribute in spec.attributes]
        self._fields = [report_schema_of(attribute).names for attribute in spec.attributes]

    def _sampled(self) -> list[int]:
        d, k = self.spec.dimension, self.spec.sample
        order = list(range(d))
        for t in range(k):  # partial Fisher–Yates: k of d uniformly without replacement
            pick = t + uniform(d - t) if d - t > 1 else t  # the last one left: no draw
            order[t], order[pick] = order[pick], order[t]
        return sorted(order[:k])

    def encode(self, value: Any) -> Report:
        """The report of one record (a mapping by attribute name, or a sequence in attribute order)."""
        record = self.spec.checked_record(value)
        d = self.spec.dimension
        extra: list[tuple[str, Any]] = []
        if self.spec.method == "rsfd-grr":
            chosen = uniform(d)
            for j, attribute in enumerate(self.spec.attributes):
                if j == chosen:
                    reported = self._encoders[j].encode(record[j]).get("value")
                else:
                    domain = attribute.domain  # type: ignore[attr-defined]
                    reported = domain[uniform(len(domain))]
                extra.append((self.spec.field_name(j, "value"), reported))
            return Report.of_encoder(self.spec.fingerprint, extra=tuple(extra))
        if self.spec.rsfd:
            fake = RSFD_METHODS[self.spec.method][1]
            chosen = uniform(d)
            for j, attribute in enumerate(self.spec.attributes):
                unary = self._encoders[j]
                assert isinstance(unary, UnaryEncoder)  # the spec checked every attribute is SUE or OUE
                if j == chosen:
                    packed = unary.perturb(attribute.index_of(record[j]))  # type: ignore[attr-defined]
                elif fake == "zero":
                    packed = unary.perturb(None)
                else:
                    packed = unary.perturb(uniform(attribute.domain_size))  # type: ignore[attr-defined]
                extra.append((self.spec.field_name(j, "bits"), packed))
            return Report.of_encoder(self.spec.fingerprint, extra=tuple(extra))
        sampled = range(d) if self.spec.method == "spl" else self._sampled()
        if self.spec.method == "smp":
            bits = bytearray((d + 7) // 8)
            for j in sampled:
                bits[j >> 3] |= 0x80 >> (j & 7)
            extra.append((SAMPLED_FIELD, bytes(bits)))
        for j in sampled:
            try:
                inner = self._encoders[j].encode(record[j])
            except InputError as error:
                raise InputError(f"attribute {self.spec.names[j]!r}: {error}") from None
            extra += [(self.spec.field_name(j, name), inner.get(name)) for name in self._fields[j]]
        return Report.of_encoder(self.spec.fingerprint, extra=tuple(extra))


#: The encoder factory of ``multi-attribute`` (declared in :mod:`ldp.mechanisms.multiattr`).
multi_attribute_encoder = stateless_factory(MultiAttributeEncoder)


def record_report_batch(spec: MultiAttribute, records: RecordBatch) -> ReportBatch:
    """The :class:`RecordBatch` of :func:`encode_records` as a batch of record reports (one row per user).

    Attribute j's columns hold its reports in the rows of the users who
    report it and the field's filler elsewhere (absent from those reports;
    ``smp``'s ``sampled`` bits say which).
    """
    n, d = records.n, spec.dimension
    columns: dict[str, np.ndarray] = {}
    if spec.method == "rsfd-grr":
        assert records.indices is not None
        for j in range(d):
            columns[spec.field_name(j, "value")] = records.indices[:, j].copy()
        return ReportBatch.from_columns(spec.fingerprint, columns)
    schema = report_schema_of(spec)
    if spec.method == "smp":
        member = np.zeros((n, d), dtype=np.uint8)
        for j, rows in enumerate(records.rows):
            member[rows, j] = 1
        columns[SAMPLED_FIELD] = np.packbits(member, axis=1)
    for j, (attribute, rows, reports) in enumerate(
        zip(spec.attributes, records.rows, records.reports, strict=True)
    ):
        for inner in report_schema_of(attribute).fields:
            name = spec.field_name(j, inner.name)
            part = reports.column(inner.name)
            assert part is not None
            field = schema.field(name)
            assert field is not None
            full = field.from_checked(spec, [None] * n)
            full[rows] = part
            columns[name] = full
    return ReportBatch.from_columns(spec.fingerprint, columns)


def multi_attribute_batch(
    spec: MultiAttribute,
    values: Sequence[Any],
    rng: np.random.Generator | RandomSource,
    *,
    cohorts: Any = None,
    indices: bool = False,
) -> ReportBatch:
    """Record reports of ``values`` (one record each: a mapping by attribute name or a sequence), as a ReportBatch.

    The batch encoder ``multi-attribute`` declares; see :func:`encode_records`.
    """
    if indices:
        raise InputError("multi-attribute records are not domain indices (indices=True)")
    records = [spec.record(v) for v in values]
    table = {name: [r[j] for r in records] for j, name in enumerate(spec.names)}
    return record_report_batch(spec, encode_records(spec, table, rng))
