"""The rows ``ldp encode`` reads: which columns of INPUT, and each cell cleaned for encoding.

The file itself is read by :mod:`ldp.values_file` (kinds by extension,
UTF-8, gzip, errors naming the file and line). Here: the value column, the
``client_id`` column of persistent clients (``--state``), the group column
(``--group-column``, sent in the clear), and each row's value and group
checked, with errors naming the row.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from ldp.errors import InputError, ParameterError
from ldp.specs import Spec
from ldp.values_file import check_column, input_kind, read_lines, read_table

__all__ = [
    "CLIENT_COLUMN",
    "chunks",
    "clean_group",
    "clean_value",
    "clean_values",
    "read_rows",
    "read_values",
]

#: The column naming each row's persistent client (``--state``).
CLIENT_COLUMN = "client_id"
_CLIENT_COLUMN = CLIENT_COLUMN


def _pick_column(columns: list[str], column: str | None, path: str, group_column: str | None = None) -> str:
    if column is not None:
        check_column(path, column, columns)
        return column
    candidates = [c for c in columns if c not in (_CLIENT_COLUMN, group_column)]
    if len(candidates) == 1:
        return candidates[0]
    if "value" in candidates:
        return "value"
    raise InputError(f"{path!r} has several columns ({', '.join(columns)}); choose one with --column")


def read_values(path: str, column: str | None, with_client: bool) -> Iterator[tuple[int, Any, Any]]:
    """Yield (row number, value, client id or None) from CSV/JSONL/JSON/Parquet or plain text."""
    for row, value, client, _ in read_rows(path, column, with_client):
        yield row, value, client


def read_rows(
    path: str,
    column: str | None,
    with_client: bool,
    group_column: str | None = None,
    *,
    record: Sequence[str] | None = None,
) -> Iterator[tuple[int, Any, Any, Any]]:
    """Yield (row number, value, client id or None, group cell or None) of each row of INPUT.

    The file is read by :mod:`ldp.values_file` (its rules: kinds by
    extension, UTF-8, gzip, CSV rows as wide as the header, errors naming
    the file and line). Here: which columns ``ldp encode`` reads. The value
    column is ``column``, else the only column besides ``client_id`` and
    the group column, else ``value``; ``with_client`` needs a ``client_id``
    cell in every row; ``group_column`` names the column of group keys
    (tables only), sent in the clear, see the module docstring. ``record``
    names the columns of a spec whose input is a record
    (``spec.input_columns``): each row's value is then the mapping of those
    columns' cells, and ``column`` is not used.
    """
    if record is not None:
        yield from _read_records(path, tuple(record), with_client, group_column)
        return
    if input_kind(path) == "text":
        if group_column is not None:
            raise ParameterError("--group-column needs a table input (CSV, JSONL or Parquet)")
        if with_client:
            raise ParameterError(
                "--state needs a table input (CSV, JSONL or Parquet) with a client_id column"
            )
        if column is not None:
            raise ParameterError("--column applies to CSV, JSONL and Parquet inputs only")
        for row, line in read_lines(path):
            yield row, line, None, None
        return

    def select(names: list[str]) -> tuple[str, str | None, str | None]:
        """The (value, client id, group) columns among ``names``, checked."""
        if group_column is not None and group_column not in names:
            raise InputError(
                f"--group-column {group_column!r} is not in {path!r} (columns: {', '.join(names)})"
            )
        chosen = _pick_column(names, column, path, group_column)
        if with_client and _CLIENT_COLUMN not in names:
            raise InputError(f"--state needs a {_CLIENT_COLUMN!r} column in {path!r}")
        return chosen, (_CLIENT_COLUMN if with_client else None), group_column

    for row, (value, client, group) in enumerate(read_table(path, select), start=1):
        if with_client and _missing(client):
            raise InputError(f"row {row} of {path!r}: the {_CLIENT_COLUMN} is missing")
        yield row, value, client, group


def _read_records(
    path: str, names: tuple[str, ...], with_client: bool, group_column: str | None
) -> Iterator[tuple[int, Any, Any, Any]]:
    """Rows of a table whose value is a record of the columns ``names`` (a multi-attribute spec's)."""
    if input_kind(path) == "text":
        raise ParameterError(
            f"this spec reads records of the columns {', '.join(names)}: give a table (CSV, JSONL or Parquet)"
        )
    if group_column is not None and group_column in names:
        raise ParameterError(
            f"--group-column {group_column!r} is an attribute of the spec (sent in the clear)"
        )

    def select(found: list[str]) -> tuple[str | None, ...]:
        for name in names:
            check_column(path, name, found)
        if group_column is not None and group_column not in found:
            raise InputError(
                f"--group-column {group_column!r} is not in {path!r} (columns: {', '.join(found)})"
            )
        if with_client and _CLIENT_COLUMN not in found:
            raise InputError(f"--state needs a {_CLIENT_COLUMN!r} column in {path!r}")
        return (*names, _CLIENT_COLUMN if with_client else None, group_column)

    for row, cells in enumerate(read_table(path, select), start=1):
        client, group = cells[-2], cells[-1]
        if with_client and _missing(client):
            raise InputError(f"row {row} of {path!r}: the {_CLIENT_COLUMN} is missing")
        yield row, dict(zip(names, cells[: len(names)], strict=True)), client, group


def _missing(cell: Any) -> bool:
    return cell is None or (isinstance(cell, float) and math.isnan(cell)) or cell == ""


def clean_group(group: Any, row: int) -> str:
    """A row's group cell as a valid group key (sent in the clear), or an InputError naming the row."""
    from ldp.errors import ReportError
    from ldp.report import check_group

    if _missing(group):
        raise InputError(f"row {row}: the group is missing")
    if isinstance(group, float) and group.is_integer():
        group = int(group)
    try:
        return check_group(group if isinstance(group, str) else str(group))
    except ReportError as exc:
        raise InputError(f"row {row}: {str(exc).replace('report ', '', 1)}") from None


def _clean(value: Any, row: int) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise InputError(f"row {row}: the value is missing")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def chunks(rows, size: int):
    """Lists of at most ``size`` consecutive rows."""
    chunk: list = []
    for item in rows:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def clean_values(spec: Spec, chunk) -> list[Any]:
    """The chunk's values, cleaned row by row (numbers read from text, then checked as the numeric encoders do)."""
    return [clean_value(spec, value, row) for row, value, _, _ in chunk]


def clean_value(spec: Spec, value: Any, row: int) -> Any:
    """One row's value: present; for a numeric spec, a finite number (text such as ``12`` parsed)."""
    from ldp.specs.numeric import NumericSpec, parse_numeric_text

    parts = getattr(spec, "input_columns", None)
    if parts is not None:  # a record: each column's cell cleaned for the spec that reads it
        out = {}
        for name, part in parts.items():
            try:
                out[name] = clean_value(part, value.get(name), row)
            except InputError as exc:
                raise InputError(f"{exc} (column {name!r})") from None
        return out
    value = _clean(value, row)
    if isinstance(spec, NumericSpec):
        try:
            return parse_numeric_text(value)
        except ParameterError as exc:
            raise InputError(f"row {row}: {exc}") from None
    return value
