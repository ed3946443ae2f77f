"""Vectorized validation of report columns into a :class:`~ldp.batch.ReportBatch`.

Readers parse a chunk of reports into Arrow columns named as in the report
JSON form (``v``, ``spec``, the payload fields of the spec's report schema,
``client``, ``group``, plus whatever unknown columns the file had).
:func:`validate_columns` applies the rules of
:func:`ldp.report_check.check_report` column-wise and returns which rows are
certainly valid, and their content as a batch. The payload rules are the
spec's report schema (:mod:`ldp.report_schema`): each field converts and
checks its whole column at once. The vectorized rules are *sound* but
deliberately not complete: a row they do not accept (a wrong fingerprint,
but also an upper-case fingerprint, or a bucket written as a string) is
handed back to the reader, which re-checks it alone with
:func:`~ldp.report_check.check_report`, so the exact per-report rules decide
and give the reason. Nothing valid is lost and nothing invalid is counted.

Bit vectors arrive as base64 text (JSON Lines, CSV), decoded with a lookup
table over the whole chunk, or as binary (Parquet), sliced straight out of
the Arrow buffer (:mod:`ldp.report_arrow`).
"""

from __future__ import annotations

import base64
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ldp.arrow_numpy import numeric_values
from ldp.batch import ReportBatch
from ldp.errors import ReportError
from ldp.report import BUILTIN_PAYLOAD, GROUP_REPORT_VERSION, REPORT_VERSION, check_group
from ldp.report_arrow import base64_encode_rows, chunk, int_column, present, string_equal
from ldp.report_check import CheckedReport
from ldp.report_schema import BitVector, report_schema_of

__all__ = [
    "KNOWN_FIELDS",
    "base64_encode_rows",
    "batch_from_checked",
    "batch_from_fields",
    "concat_batches",
    "empty_batch",
    "num_report_bits",
    "validate_columns",
]

#: Columns of the built-in report fields (``client`` is carried and ignored; ``group`` is optional).
#: A spec's report schema may add payload fields of other names.
KNOWN_FIELDS = ("v", "spec", "value", "seed", "bits", "cohort", "client", "group")


def num_report_bits(spec: Any) -> int | None:
    """Length in bits of a spec's ``bits`` field (None when it has none)."""
    field = report_schema_of(spec).field("bits")
    return field.num_bits(spec) if isinstance(field, BitVector) else None


def empty_batch(spec: Any) -> ReportBatch:
    """A batch of zero reports with the spec's columns."""
    return batch_from_checked(spec, [])


def batch_from_checked(spec: Any, checked: Sequence[CheckedReport]) -> ReportBatch:
    """Columns of reports already checked one by one with ``check_report``."""
    schema = report_schema_of(spec)
    fields = {}
    for f in schema.fields:
        get = (
            operator.attrgetter(f.name)
            if f.name in BUILTIN_PAYLOAD
            else operator.methodcaller("field", f.name)
        )
        fields[f.name] = [get(c) for c in checked]
    return batch_from_fields(spec, fields, [c.group for c in checked])


def batch_from_fields(
    spec: Any, fields: Mapping[str, Sequence[Any]], groups: Sequence[str | None]
) -> ReportBatch:
    """Columns of checked reports given field by field: ``fields[name][i]`` is report i's
    :class:`~ldp.report_check.CheckedReport` field ``name`` (every field of the spec's schema), ``groups[i]`` its group.
    """
    columns = {f.name: f.from_checked(spec, fields[f.name]) for f in report_schema_of(spec).fields}
    grouped = None
    if any(group is not None for group in groups):
        grouped = np.empty(len(groups), dtype=object)
        grouped[:] = groups
    return ReportBatch.from_columns(spec.fingerprint, columns, grouped)


def _groups_or_none(batch: ReportBatch) -> np.ndarray:
    """The batch's group keys, with None for every row when it has no group column."""
    if batch.groups is not None:
        return batch.groups
    return np.full(len(batch), None, dtype=object)


def concat_batches(spec: Any, batches: Sequence[ReportBatch]) -> ReportBatch:
    """One batch holding the reports of ``batches`` (same spec)."""
    batches = [b for b in batches if len(b)]
    if not batches:
        return empty_batch(spec)
    if len(batches) == 1:
        return batches[0]
    columns = {}
    for name in batches[0].columns():
        parts = [b.column(name) for b in batches]
        columns[name] = np.concatenate([p for p in parts if p is not None])
    groups = None
    if any(b.groups is not None for b in batches):
        groups = np.concatenate([_groups_or_none(b) for b in batches])
    return ReportBatch.from_columns(spec.fingerprint, columns, groups)


# -- group keys ---------------------------------------------------------------


def _group_column(column: pa.Array | None, n: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """(group keys or None, present, ok) of a ``group`` column.

    ``ok`` holds for rows without a group and for keys that
    :func:`ldp.report.check_group` accepts, applied once to each distinct
    key of the column (the same rule as one report's); other rows are
    re-checked one by one. The column's bytes are never trusted to be UTF-8
    (Arrow's JSON reader and Parquet files do not guarantee it): a key that
    does not decode is not accepted.
    """
    has = present(column, n)
    if column is None or not has.any():
        return None, has, np.ones(n, dtype=bool)
    value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        return None, has, ~has
    encoded = column if pa.types.is_dictionary(column.type) else column.dictionary_encode()
    keys, key_ok = _checked_group_keys(encoded.dictionary)
    index = numeric_values(chunk(encoded.indices)).astype(np.intp)  # a present row has a dictionary entry
    ok = ~has | key_ok[index]
    groups = keys[index]
    groups[~has] = None
    return groups, has, ok


def _checked_group_keys(dictionary: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(keys as str or None, accepted) for each entry of a string column's dictionary."""
    binary = pa.large_binary() if pa.types.is_large_string(dictionary.type) else pa.binary()
    raw = dictionary.cast(binary).to_pylist()
    keys = np.empty(len(raw), dtype=object)
    ok = np.zeros(len(raw), dtype=bool)
    for k, data in enumerate(raw):
        if data is None:
            continue
        try:
            keys[k] = check_group(data.decode("utf-8"))
            ok[k] = True
        except (UnicodeDecodeError, ReportError):
            pass
    return keys, ok


# -- the validator ----------------------------------------------------------


def validate_columns(
    spec: Any, columns: Mapping[str, pa.Array | pa.ChunkedArray | None], n: int
) -> tuple[np.ndarray, ReportBatch]:
    """Rows of a chunk that are certainly valid reports for ``spec``, and their content.

    Parameters
    ----------
    spec
        The aggregator's spec.
    columns : mapping of str to pyarrow.Array
        The chunk's columns by name, each of length ``n`` (absent ones may be
        missing or None).
    n : int
        Number of rows.

    Returns
    -------
    ok : numpy.ndarray of bool, shape (n,)
        Rows accepted here. Rows not accepted must be re-checked one by one.
    batch : ReportBatch
        The accepted rows, in order.

    Raises
    ------
    ParameterError
        If the spec declares no report schema.
    """
    schema = report_schema_of(spec)
    cols = {name: chunk(col) for name, col in columns.items()}
    ok = np.ones(n, dtype=bool)
    groups, has_group, group_ok = _group_column(cols.get("group"), n)
    version, version_ok = int_column(cols.get("v"), n, native=True)  # compared only: kept as read
    # as ldp.report.Report: an integer column; a group only from version 2 on ("Versions")
    ok &= version_ok & ((version == GROUP_REPORT_VERSION) | ((version == REPORT_VERSION) & ~has_group))
    ok &= group_ok
    ok &= string_equal(cols.get("spec"), spec.fingerprint, n)
    required = schema.names
    for name, column in cols.items():
        if name in ("v", "spec", "group") or name in required:
            continue
        if name == "client":
            if column is not None and not (pa.types.is_string(column.type) or pa.types.is_null(column.type)):
                ok &= ~present(column, n)
            continue
        ok &= ~present(column, n)  # a field this mechanism does not use, or an unknown one
    payload: dict[str, np.ndarray] = {}
    for field in schema.fields:
        column = cols.get(field.name)
        payload[field.name], field_ok = field.column(spec, column, n)
        ok &= field_ok
        expected = schema.presence(
            field, payload
        )  # a conditional field: present exactly where its flag is set
        if expected is not None:
            ok &= present(column, n) == expected
    pick: Any = slice(None) if ok.all() else np.flatnonzero(ok)
    if groups is not None:
        groups = groups[pick]
        if not any(g is not None for g in groups):
            groups = None
    batch = ReportBatch.from_columns(spec.fingerprint, {k: v[pick] for k, v in payload.items()}, groups)
    return ok, batch


def bits_to_base64(bits: bytes) -> str:
    """Base64 text of packed bits (for raw reject text)."""
    return base64.b64encode(bits).decode("ascii")
