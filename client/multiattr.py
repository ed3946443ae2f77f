"""Encode multi-attribute records (docs/multi-attribute.md): every attribute through its own registered encoder.

:func:`encode_records` takes one column of values per attribute and returns
a :class:`RecordBatch`. For ``smp`` and ``spl`` it holds, per attribute, the
users who report it (their row numbers: the sampled indices, sent in the
clear) and the :class:`~ldp.batch.ReportBatch` its own batch encoder made of
their values; for ``rsfd-grr`` one reported domain index per user and
attribute (the sampled attribute's GRR output among uniform fake values).
Every coin comes from the given random source (the OS CSPRNG for real users).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ldp.batch import ReportBatch
from ldp.client.batch import encode_batch, randomized_response_batch, value_indices
from ldp.client.randomness import RandomSource, as_source, uniform_below
from ldp.errors import InputError
from ldp.specs.multiattr import MultiAttribute

__all__ = ["RecordBatch", "encode_records", "sample_attributes"]


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
        ``smp``/``spl``: per attribute, the users (row numbers) who report it.
    reports : tuple of ReportBatch
        ``smp``/``spl``: per attribute, its reports, in the order of ``rows``.
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
    (:func:`~ldp.client.randomness.uniform_below`).
    """
    perm = np.tile(np.arange(d, dtype=np.int64), (n, 1))
    rows = np.arange(n)
    for t in range(k):
        pick = t + uniform_below(source, d - t, n).astype(np.int64)
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
    if spec.method == "rsfd-grr":
        chosen = uniform_below(source, d, n).astype(np.int64)
        out = np.empty((n, d), dtype=np.int64)
        for j, (name, attr) in enumerate(zip(spec.names, spec.attributes, strict=True)):
            idx = _indices(attr, columns[j], name)
            size = attr.domain_size  # type: ignore[attr-defined]
            honest = randomized_response_batch(source, idx, size, attr.exact_p_star, attr.exact_q_star)  # type: ignore[attr-defined]
            fake = uniform_below(source, size, n).astype(np.int64)
            out[:, j] = np.where(chosen == j, honest, fake)
        return RecordBatch(spec=spec.fingerprint, n=n, indices=out)
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


def _indices(attr: Any, column: Sequence[Any], name: str) -> np.ndarray:
    try:
        return value_indices(attr, column, False)
    except InputError as error:
        raise InputError(f"attribute {name!r}: {error}") from None
