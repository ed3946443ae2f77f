"""An estimate table as plain columns, built and written without pandas.

``ldp aggregate`` on a frequency oracle or RAPPOR builds its estimate table
as a :class:`ColumnTable` (ordered NumPy columns, a value column as a list,
and the table's ``attrs``) and writes a CSV file of it with :mod:`csv`, so
the command never imports pandas (~0.4 s of start-up). The library's
``estimate()`` methods return the same table as a :class:`pandas.DataFrame`
(:meth:`ColumnTable.to_frame`); the CSV text of both is the same byte for
byte (numbers as :func:`repr` writes them, missing values empty, RFC 4180
quoting, ``\\n`` line ends), as :meth:`pandas.DataFrame.to_csv` writes it.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ColumnTable", "as_frame"]


class ColumnTable:
    """Named columns of equal length, in order, with the table's ``attrs`` (as a DataFrame's).

    Parameters
    ----------
    columns : mapping of str to array_like
        The columns in order: NumPy arrays, or sequences of Python objects
        (a ``value`` column of domain values).
    attrs : dict, optional
        What the table says about itself (the consistent view's method, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.aggregator.table import ColumnTable
    >>> table = ColumnTable({"value": ["a", "b"], "estimate": np.array([1.5, 2.0])})
    >>> table.insert(1, "consistent", np.array([1.0, 2.5]))
    >>> table.columns, len(table)
    (['value', 'consistent', 'estimate'], 2)
    >>> print(table.csv_text(), end="")
    value,consistent,estimate
    a,1.0,1.5
    b,2.5,2.0
    """

    def __init__(self, columns: dict[str, Any], attrs: dict[str, Any] | None = None) -> None:
        self._columns = {name: _column(values) for name, values in columns.items()}
        lengths = {len(values) for values in self._columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        self.attrs: dict[str, Any] = dict(attrs or {})

    @property
    def columns(self) -> list[str]:
        """The column names, in order."""
        return list(self._columns)

    def __len__(self) -> int:
        return len(next(iter(self._columns.values()), ()))

    def __getitem__(self, name: str) -> Any:
        return self._columns[name]

    def insert(self, loc: int, column: str, value: Any) -> None:
        """Insert the column ``column`` at position ``loc`` (as :meth:`pandas.DataFrame.insert`)."""
        if column in self._columns:
            raise ValueError(f"cannot insert {column}, already exists")
        values = _column(value)
        if self._columns and len(values) != len(self):
            raise ValueError(f"column {column!r} has {len(values)} rows, the table {len(self)}")
        items = list(self._columns.items())
        items.insert(loc, (column, values))
        self._columns = dict(items)

    def to_frame(self) -> pd.DataFrame:
        """The same table as a :class:`pandas.DataFrame` (object columns for lists; ``attrs`` copied)."""
        import pandas as pd

        frame = pd.DataFrame(
            {
                name: pd.Series(values, dtype=object) if isinstance(values, list) else values
                for name, values in self._columns.items()
            }
        )
        frame.attrs.update(self.attrs)
        return frame

    def _rows(self) -> Iterator[Sequence[str]]:
        yield self.columns
        yield from zip(*(_cells(values) for values in self._columns.values()))

    def write_csv(self, path: str) -> None:
        """Write the table as CSV to ``path`` (gzip-compressed when it ends in ``.gz``)."""
        if path.lower().endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8", newline="") as stream:
                self._write(stream)
            return
        with open(path, "w", encoding="utf-8", newline="") as stream:
            self._write(stream)

    def csv_text(self) -> str:
        """The CSV text :meth:`write_csv` writes."""
        stream = io.StringIO(newline="")
        self._write(stream)
        return stream.getvalue()

    def _write(self, stream: Any) -> None:
        """The CSV text to a text stream: the header by :mod:`csv`; rows of numbers alone joined by commas.

        A number's cell (digits, sign, point, exponent, ``inf``, ``True``;
        empty for NaN) never needs quotes, so with two columns or more (a row
        of one empty cell is written ``""``) the rows are the cells joined,
        the text :mod:`csv` writes, at a fraction of its cost (8,192 RAPPOR
        rows: 0.03 -> 0.02 s).
        """
        writer = csv.writer(stream, lineterminator="\n")
        numbers = all(isinstance(values, np.ndarray) for values in self._columns.values())
        if not numbers or len(self._columns) < 2:
            writer.writerows(self._rows())
            return
        writer.writerow(self.columns)
        rows = zip(*(_cells(values) for values in self._columns.values()))
        stream.write("".join(f"{line}\n" for line in map(",".join, rows)))


def as_frame(table: ColumnTable | pd.DataFrame) -> pd.DataFrame:
    """A table as a :class:`pandas.DataFrame` (one already is returned as it is)."""
    return table.to_frame() if isinstance(table, ColumnTable) else table


def _column(values: Any) -> Any:
    """A column as kept: a NumPy array of numbers or booleans, or a list of Python objects."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        if values.ndim != 1:
            raise ValueError(f"a column must be 1-D, got shape {values.shape}")
        return values
    return list(values)


def _cells(values: Any) -> list[str]:
    """The CSV cells of a column, as :meth:`pandas.DataFrame.to_csv` writes them."""
    if isinstance(values, list):
        return ["" if value is None or _is_nan(value) else str(value) for value in values]
    if values.dtype.kind == "f":
        cells = list(map(repr, values.astype(np.float64).tolist()))  # shortest round-trip digits
        for i in np.flatnonzero(np.isnan(values)).tolist():
            cells[i] = ""
        return cells
    return list(map(str, values.tolist()))  # integers; booleans as True/False


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value
