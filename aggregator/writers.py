"""Write reports (JSON Lines, CSV, Parquet) and estimates (CSV, JSON, Parquet, or a table).

Formats follow the file extension, as everywhere in ``ldp``:

=====================  ==========================================================
reports                ``.jsonl`` (``.ndjson``, ``.json``), ``.csv`` (optionally
                       ``.gz``), ``.parquet``; ``-`` or no path: JSON Lines on stdout
estimates              ``.csv``, ``.json`` (records), ``.jsonl``, ``.parquet``;
                       no path: a readable table on stdout
=====================  ==========================================================

Reports are written in the JSON form of docs/report-format.md, their payload
fields as the spec's report schema declares them (:mod:`ldp.report_schema`:
names, order, and how each field type writes a column); the JSON Lines
output of a batch is byte-for-byte what :meth:`ldp.report.Report.to_json`
gives for each report, and every format reads back through
:mod:`ldp.aggregator.io` to the same batch.

A batch with a ``groups`` column gets a ``group`` field (JSON Lines: after the
mechanism's fields; CSV and Parquet: a last ``group`` column, empty/null for a
report without one), and each report's ``v`` is the lowest version that
carries it (1 without a group, 2 with one; :mod:`ldp.report`). The group key
is written in the clear: it is not privatized.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import math
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ldp.arrow_numpy import array_of, numeric_values, string_array, string_scalar
from ldp.batch import ReportBatch
from ldp.errors import InputError, ParameterError
from ldp.extensions import split_extension
from ldp.jsonlines import json_line
from ldp.report import GROUP_REPORT_VERSION, REPORT_VERSION, Report
from ldp.report_schema import ReportField, report_schema_of

if TYPE_CHECKING:  # pandas only in annotations: `ldp encode` writes reports without importing it
    import pandas as pd

    from ldp.aggregator.table import ColumnTable

__all__ = [
    "ESTIMATE_FORMATS",
    "REPORT_FORMATS",
    "estimates_format",
    "format_estimates",
    "report_columns_of",
    "write_estimates",
    "write_reports",
]

_STDOUT = "-"
#: File extension → format of the report files :func:`write_reports` writes (each optionally ``.gz``, not Parquet).
REPORT_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}
#: File extension → format of the estimate files :func:`write_estimates` writes.
ESTIMATE_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".parquet": "parquet"}
_JSONL_PIECE = 1 << 18


def report_columns_of(spec: Any) -> tuple[str, ...]:
    """Field names of a spec's reports, in the order of the JSON form (after ``v``, ``spec``): its schema's."""
    return report_schema_of(spec).names


def _format(path: str, what: str, allowed: dict[str, str]) -> str:
    suffixes, gz = split_extension(path)
    ext = suffixes[-1] if suffixes else ""
    fmt = allowed.get(ext)
    if fmt is None or (gz and fmt == "parquet"):
        raise ParameterError(
            f"{what} file {path!r}: unknown extension {ext or '(none)'!r}; expected one of {', '.join(sorted(allowed))}"
        )
    return fmt


def estimates_format(path: str) -> str:
    """The format :func:`write_estimates` would write ``path`` in; :class:`ParameterError` for an unknown extension."""
    return _format(path, "estimates", ESTIMATE_FORMATS)


def _open_text(path: str) -> IO[str]:
    try:
        if path.lower().endswith(".gz"):
            return io.TextIOWrapper(gzip.open(path, "wb"), encoding="utf-8", newline="")
        return open(path, "w", encoding="utf-8", newline="")
    except OSError as exc:
        raise ParameterError(f"cannot write {path!r}: {exc.strerror or exc}") from None


# -- reports ------------------------------------------------------------------


def _as_batches(spec, items: ReportBatch | Report | Iterable[ReportBatch | Report]) -> Iterator[ReportBatch]:
    """Group a stream of batches and single reports into batches."""
    from ldp.aggregator.report_columns import batch_from_checked
    from ldp.report_check import check_report

    if isinstance(items, (ReportBatch, Report)):
        items = [items]
    pending: list = []
    for item in items:
        if isinstance(item, ReportBatch):
            if pending:
                yield batch_from_checked(spec, pending)
                pending = []
            if item.spec != spec.fingerprint:
                raise InputError(f"batch is for spec {item.spec}, not {spec.fingerprint}")
            yield item
        elif isinstance(item, Report):
            pending.append(check_report(spec, item))
            if len(pending) >= 100_000:
                yield batch_from_checked(spec, pending)
                pending = []
        else:
            raise InputError(f"write_reports takes ReportBatch or Report items, got {type(item).__name__}")
    if pending:
        yield batch_from_checked(spec, pending)


def _payload_columns(spec: Any, batch: ReportBatch) -> Iterator[tuple[ReportField, np.ndarray]]:
    """Each field of the spec's schema with the batch's column, in JSON field order."""
    for field in report_schema_of(spec).fields:
        column = batch.column(field.name)
        if column is None:
            raise InputError(
                f"the {spec.mechanism} batch has no {field.name!r} column (its reports carry "
                f"{', '.join(report_schema_of(spec).names)})"
            )
        yield field, column


def _carried(spec: Any, batch: ReportBatch) -> dict[str, np.ndarray]:
    """The rows that carry each conditional field (:meth:`ldp.report_schema.ReportSchema.presence`)."""
    schema = report_schema_of(spec)
    columns = batch.columns()
    out = {}
    for field in schema.fields:
        mask = schema.presence(field, columns)
        if mask is not None:
            out[field.name] = mask
    return out


def _text_columns(spec: Any, batch: ReportBatch) -> dict[str, list[Any]]:
    """Python-level columns (JSON types) of a batch, in JSON field order (None where a row has no such field)."""
    carried = _carried(spec, batch)
    out = {}
    for field, column in _payload_columns(spec, batch):
        cells = field.text_cells(spec, column)
        mask = carried.get(field.name)
        out[field.name] = cells if mask is None else [c if m else None for c, m in zip(cells, mask.tolist())]
    return out


def _json_members(spec: Any, batch: ReportBatch) -> list[pa.Array | str]:
    """Each field of a batch as ``,"name":`` and an Arrow string array of JSON texts, in JSON field order.

    A conditional field is one Arrow array of whole members, empty in the
    rows that do not carry it.
    """
    import pyarrow.compute as pc  # here: reading reports and writing estimates need none of it

    carried = _carried(spec, batch)
    parts: list[pa.Array | str] = []
    for field, column in _payload_columns(spec, batch):
        texts = field.json_texts(spec, column)
        mask = carried.get(field.name)
        if mask is None:
            parts += [f',"{field.name}":', texts]
        else:
            members = pc.binary_join_element_wise(
                string_scalar(f',"{field.name}":'), texts, string_scalar("")
            )
            parts.append(pc.if_else(array_of(mask), members, string_scalar("")))
    return parts


def _has_group(batch: ReportBatch) -> np.ndarray:
    """Which rows of a batch carry a group key."""
    if batch.groups is None:
        return np.zeros(len(batch), dtype=bool)
    return np.fromiter((g is not None for g in batch.groups), dtype=bool, count=len(batch))


def _versions(batch: ReportBatch) -> np.ndarray:
    """Each row's report version: the lowest that carries its fields."""
    return np.where(_has_group(batch), GROUP_REPORT_VERSION, REPORT_VERSION).astype(np.int8)


def _group_strings(groups: np.ndarray) -> pa.Array:
    """A group column as an Arrow string array (null for rows without a group)."""
    return string_array([None if g is None else str(g) for g in groups])


def _write_jsonl(stream: IO[str], spec, batches: Iterable[ReportBatch]) -> int:
    import pyarrow.compute as pc  # here: reading reports and writing estimates need none of it

    fingerprint = json.dumps(spec.fingerprint)
    head = f'{{"v":{REPORT_VERSION},"spec":{fingerprint}'
    count = 0
    for batch in batches:
        if not len(batch):
            continue
        members = _json_members(spec, batch)
        heads: Any = head
        tail: Any = "}\n"
        if batch.groups is not None:
            grouped = _has_group(batch)
            heads = string_array(
                np.where(grouped, f'{{"v":{GROUP_REPORT_VERSION},"spec":{fingerprint}', head).tolist()
            )
            tail = string_array(
                [',"group":' + json_line(str(g)) + "}\n" if g is not None else "}\n" for g in batch.groups]
            )
        for start in range(0, len(batch), _JSONL_PIECE):  # keeps each joined piece far below 2 GiB
            parts: list = [heads if isinstance(heads, str) else heads.slice(start, _JSONL_PIECE)]
            parts += [m if isinstance(m, str) else m.slice(start, _JSONL_PIECE) for m in members]
            parts.append(tail if isinstance(tail, str) else tail.slice(start, _JSONL_PIECE))
            texts = [string_scalar(part) if isinstance(part, str) else part for part in parts]
            stream.write(_joined_text(pc.binary_join_element_wise(*texts, string_scalar(""))))
        count += len(batch)
    return count


def _joined_text(lines: pa.Array) -> str:
    """All strings of an Arrow string array, concatenated, straight from its data buffer."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset : lines.offset + len(lines) + 1]
    start, stop = int(offsets[0]), int(offsets[-1])
    return lines.buffers()[2].slice(start, stop - start).to_pybytes().decode("utf-8")


def _peek(batches: Iterable[ReportBatch]) -> tuple[ReportBatch | None, Iterator[ReportBatch]]:
    """The first batch, and all the batches again."""
    batches = iter(batches)
    first = next(batches, None)
    return first, batches if first is None else itertools.chain([first], batches)


def _check_group_column(batch: ReportBatch, with_group: bool, what: str) -> None:
    if batch.groups is not None and not with_group:
        raise ParameterError(
            f"cannot write group keys to this {what} file: its first batch had none, so it has no 'group' column "
            "(give every batch a groups column, or none)"
        )


def _write_csv(stream: IO[str], spec, batches: Iterable[ReportBatch]) -> int:
    writer = csv.writer(stream, lineterminator="\n")
    names = report_columns_of(spec)
    first, batches = _peek(batches)
    with_group = first is not None and first.groups is not None
    writer.writerow(("v", "spec", *names, *(("group",) if with_group else ())))
    count = 0
    for batch in batches:
        _check_group_column(batch, with_group, "CSV")
        columns = _text_columns(spec, batch)
        n = len(batch)
        fields = [_versions(batch).tolist(), [spec.fingerprint] * n, *(columns[name] for name in names)]
        if with_group:
            groups = batch.groups if batch.groups is not None else [None] * n
            fields.append(["" if g is None else str(g) for g in groups])
        writer.writerows(zip(*fields))
        count += n
    return count


def _arrow_table(spec, batch: ReportBatch, with_group: bool = False) -> pa.Table:
    import pyarrow.compute as pc  # here: reading reports and writing estimates need none of it

    n = len(batch)
    arrays: dict[str, pa.Array] = {
        "v": array_of(_versions(batch)),
        "spec": pa.DictionaryArray.from_arrays(
            array_of(np.zeros(n, dtype=np.int32)), string_array([spec.fingerprint])
        ),
    }
    carried = _carried(spec, batch)
    for field, column in _payload_columns(spec, batch):
        array = field.arrow(spec, column)
        mask = carried.get(field.name)
        if mask is not None:  # null where a row does not carry the field
            if pa.types.is_dictionary(array.type):
                array = pa.DictionaryArray.from_arrays(
                    array_of(numeric_values(array.indices), valid=mask), array.dictionary
                )
            else:
                array = pc.if_else(array_of(mask), array, pa.nulls(1, array.type)[0])
        arrays[field.name] = array
    if with_group:
        arrays["group"] = (
            _group_strings(batch.groups) if batch.groups is not None else pa.nulls(n, type=pa.string())
        )
    return pa.table(arrays)


def _write_parquet(path: str, spec, batches: Iterable[ReportBatch]) -> int:
    import pyarrow.parquet as pq  # here: writing CSV or JSON Lines needs none of it

    writer = None
    count = 0
    first, batches = _peek(batches)
    with_group = first is not None and first.groups is not None
    try:
        for batch in batches:
            _check_group_column(batch, with_group, "Parquet")
            table = _arrow_table(spec, batch, with_group)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
            count += len(batch)
        if writer is None:  # no reports: still write a file with the schema
            writer = pq.ParquetWriter(path, _arrow_table(spec, _empty(spec)).schema)
    except OSError as exc:
        raise ParameterError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    finally:
        if writer is not None:
            writer.close()
    return count


def _empty(spec) -> ReportBatch:
    from ldp.aggregator.report_columns import empty_batch

    return empty_batch(spec)


def write_reports(
    batches_or_reports: ReportBatch | Report | Iterable[ReportBatch | Report],
    path_or_stdout: str | Path | IO[str] | None,
    spec,
) -> int:
    """Write reports of ``spec`` to a file (format by extension) or to stdout.

    Parameters
    ----------
    batches_or_reports : ReportBatch, Report, or an iterable of them
        The reports; consumed once, batch by batch, so a generator of
        batches is written in bounded memory. Single reports are checked
        with :func:`ldp.report_check.check_report`.
    path_or_stdout : str, Path, text stream, or None
        ``.jsonl``/``.ndjson``/``.json`` (JSON Lines), ``.csv`` (header
        ``v,spec,<fields>``), either optionally ``.gz``, or ``.parquet``
        (``bits`` as binary). ``None`` or ``"-"``: JSON Lines on stdout; an
        open text stream: JSON Lines into it.
    spec
        The spec the reports belong to.

    Returns
    -------
    int
        Number of reports written.

    Raises
    ------
    ParameterError
        Unknown extension or unwritable path.
    InputError
        A report or batch of another spec, or an item that is neither (a :class:`ParameterError` too).
    """
    batches = _as_batches(spec, batches_or_reports)
    if path_or_stdout is None or str(path_or_stdout) == _STDOUT:
        return _write_jsonl(sys.stdout, spec, batches)
    if not isinstance(path_or_stdout, (str, Path)) and hasattr(path_or_stdout, "write"):
        return _write_jsonl(path_or_stdout, spec, batches)
    path = str(path_or_stdout)
    fmt = _format(path, "reports", REPORT_FORMATS)
    if fmt == "parquet":
        return _write_parquet(path, spec, batches)
    with _open_text(path) as stream:
        return (_write_jsonl if fmt == "jsonl" else _write_csv)(stream, spec, batches)


# -- estimates ------------------------------------------------------------------


def format_estimates(estimates: pd.DataFrame, *, digits: int = 4) -> str:
    """A readable fixed-width table of an estimate DataFrame (a per-group table's overall row shows as ``(all)``)."""
    frame = estimates.copy()
    if "group" in frame.columns and frame["group"].dtype == object:
        frame["group"] = frame["group"].map(lambda g: "(all)" if g is None else g)

    def fmt(x: Any) -> str:
        if isinstance(x, (float, np.floating)):
            value = float(x)
            if not math.isfinite(value):
                return str(value)
            if value != 0 and (abs(value) >= 1e7 or abs(value) < 10**-digits):
                return f"{value:.{digits}g}"
            return f"{value:,.{digits}f}" if abs(value) < 1 else f"{value:,.1f}"
        return str(x)

    return frame.to_string(
        index=False, formatters={c: fmt for c in frame.columns if frame[c].dtype.kind == "f"}
    )


def _write_stdout(text: str) -> None:
    """Write ``text`` to stdout; characters its encoding lacks (a group key on an ASCII terminal) as escapes."""
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:  # TextIOWrapper encodes the whole text before writing any of it
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        sys.stdout.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _one_type_per_column(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each object column whose values mix Python types written as text (Parquet columns have
    one type; a multi-attribute table's ``value`` column holds every attribute's values, ints beside strings),
    as the CSV form writes them; missing values stay null."""
    mixed = [
        name
        for name in frame.columns
        if frame[name].dtype == object and len({type(v) for v in frame[name] if not _missing(v)}) > 1
    ]
    if not mixed:
        return frame
    frame = frame.copy()
    for name in mixed:
        frame[name] = [None if _missing(v) else str(v) for v in frame[name]]
    return frame


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def write_estimates(estimates: pd.DataFrame | ColumnTable, path: str | Path | None = None) -> None:
    """Write an estimate table: ``.csv``, ``.json`` (records), ``.jsonl``, ``.parquet``; no path: table on stdout.

    A :class:`~ldp.aggregator.table.ColumnTable` is written to CSV without
    pandas (the same bytes as the DataFrame's CSV); for the other outputs it
    is converted to a DataFrame first.

    Raises
    ------
    ParameterError
        Unknown extension or unwritable path.
    """
    from ldp.aggregator.table import ColumnTable, as_frame

    if path is None or str(path) == _STDOUT:
        _write_stdout(format_estimates(as_frame(estimates)) + "\n")
        return
    path = str(path)
    fmt = estimates_format(path)
    try:
        if isinstance(estimates, ColumnTable):
            if fmt == "csv":
                estimates.write_csv(path)
                return
            estimates = estimates.to_frame()
        if fmt == "csv":
            estimates.to_csv(path, index=False, compression="infer")
        elif fmt == "json":
            estimates.to_json(path, orient="records", indent=1, double_precision=15, compression="infer")
        elif fmt == "jsonl":
            estimates.to_json(path, orient="records", lines=True, double_precision=15, compression="infer")
        else:
            _one_type_per_column(estimates).to_parquet(path, index=False)
    except OSError as exc:
        raise ParameterError(f"cannot write estimates to {path!r}: {exc.strerror or exc}") from None
