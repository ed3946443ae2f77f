"""Report schemas: each spec declares the payload fields of its reports, once.

A spec class says what its reports carry with a class attribute
``report_schema``, an ordered :class:`ReportSchema` of typed fields::

    report_schema: ClassVar[ReportSchema] = ReportSchema(
        (BoundedInt("seed", bound=LH_SEED_SPACE, ...), BoundedInt("value", bound="g"))
    )

Everything that handles reports reads that declaration and nothing else:
:func:`ldp.report_check.check_report` (one report), the column-wise readers
of JSON Lines, CSV and Parquet (:mod:`ldp.aggregator.report_columns`), the
report writers (:mod:`ldp.aggregator.writers`), :class:`ldp.batch.ReportBatch`
and the rejects path. A new mechanism declares its fields with the types
below, and may name them freely (``"index"``, ``"row"``, ...): no reader,
writer or checker changes. A spec class without a schema is a
:class:`~ldp.errors.SpecError` naming it (:func:`report_schema_of`).

Field types
-----------
=================  ===========================================================
:class:`PartField`    a field of one part of a composite spec (checked against
                      that part), optionally present only when a flag bit is set
:class:`DomainElement`  a domain element in the report, a domain *index* in a batch
:class:`BoundedInt`   an integer in [0, bound): a hash seed, a bucket, a cohort,
                      an index; ``bound`` a number or the name of a spec attribute
:class:`BitVector`    a packed vector of n bits (base64 in text, binary in Parquet)
:class:`Number`       a finite number that the spec can output (``spec.in_support``)
=================  ===========================================================

A spec whose fields depend on its parameters (a composite spec, whose parts
are specs of their own) gives ``report_schema`` as a property of the
instance instead; :func:`report_schema_of` reads the instance's. Such a
schema names the fields of each part with :class:`PartField`, which checks,
converts and writes a field of part ``index`` against that part's spec, and
may be *conditional*: present in a report exactly when bit ``index`` of an
earlier :class:`BitVector` field of the same report is set (a record that
reports only its sampled attributes). A report that lacks a field its flags
call for, or carries one they do not, is refused; in a batch an absent
field's rows hold a filler (:meth:`ReportField.filler`) that nothing reads,
and the writers omit it (an empty CSV cell, a Parquet null).

Each field type knows how to check one value of a parsed report (raising
:class:`~ldp.errors.ReportError` with the reason), convert a whole Arrow
column vectorized, write a batch column as JSON texts, CSV cells and an
Arrow array, and parse a CSV cell. Columns of a :class:`~ldp.batch.ReportBatch`
are keyed by field name.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ldp.errors import ParameterError, ReportError, SpecError
from ldp.jsonlines import json_line
from ldp.report import declare_report_field
from ldp.shorten import VALUE_ECHO_LIMIT, Shown, shown

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BitVector",
    "BoundedInt",
    "DomainElement",
    "Number",
    "PartField",
    "ReportField",
    "ReportSchema",
    "index_bits",
    "report_schema_of",
]


def index_bits(count: int) -> int:
    """Bits to write one of ``count`` values: ⌈log₂ count⌉ (0 for a single value)."""
    return max(count - 1, 0).bit_length()


def _bound_of(spec: Any, bound: int | str) -> int:
    """An integer bound, or the spec attribute it names."""
    if isinstance(bound, int):
        return bound
    value = getattr(spec, bound, None)
    if not isinstance(value, int):
        raise SpecError(
            f"{type(spec).__name__} report schema: bound {bound!r} is not an integer attribute of the spec"
        )
    return value


@dataclasses.dataclass(frozen=True)
class ReportField:
    """One payload field of a report (base class of the field types).

    Parameters
    ----------
    name : str
        The field's name in the JSON form, CSV header and Parquet column, and
        the key of its column in a :class:`~ldp.batch.ReportBatch`.
    """

    name: str

    #: Whether a binary Parquet cell of this field stands for base64 text.
    binary: ClassVar[bool] = False

    # -- one report --------------------------------------------------------
    def check(self, spec: Any, raw: Any) -> Any:
        """The normalized content of the field's value in one report; :class:`ReportError` otherwise."""
        raise NotImplementedError

    def to_report(self, spec: Any, stored: Any) -> Any:
        """The report's value (as :class:`~ldp.report.Report` holds it) of one stored batch entry."""
        raise NotImplementedError

    def csv_cell(self, text: str) -> Any:
        """The JSON value a CSV cell stands for (text it cannot convert stays text)."""
        return text

    def filler(self, spec: Any) -> Any:
        """A checked value (as :meth:`check` returns) standing in a batch for a report without the field."""
        raise NotImplementedError

    def presence_flag(self) -> tuple[str, int] | None:
        """(flags field, bit) whose bit set means a report carries this field; None: every report does."""
        return None

    # -- columns -------------------------------------------------------------
    def from_checked(self, spec: Any, values: Sequence[Any]) -> np.ndarray:
        """The batch column of values returned by :meth:`check`."""
        raise NotImplementedError

    def column(self, spec: Any, column: pa.Array | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(batch column, ok) of an Arrow column of ``n`` rows; rows not ok are re-checked one by one."""
        raise NotImplementedError

    def csv_column(self, cells: list[str | None]) -> pa.Array:
        """The Arrow column of a chunk's CSV cells (None: an empty cell)."""
        from ldp.arrow_numpy import string_array

        return string_array(cells)

    def json_texts(self, spec: Any, column: np.ndarray) -> pa.Array:
        """Each entry's JSON text, as an Arrow string array."""
        raise NotImplementedError

    def text_cells(self, spec: Any, column: np.ndarray) -> list[Any]:
        """Each entry as a Python value for a CSV cell."""
        raise NotImplementedError

    def arrow(self, spec: Any, column: np.ndarray) -> pa.Array:
        """The column as written to Parquet."""
        raise NotImplementedError

    # -- size ------------------------------------------------------------------
    def payload_bits(self, spec: Any) -> int:
        """Bits the field's content needs in a compact binary form (no framing, no names)."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class DomainElement(ReportField):
    """A domain element (``spec.domain``); stored in a batch as its int64 domain index."""

    name: str = "value"

    def check(self, spec: Any, raw: Any) -> int:
        try:
            return int(spec.index_of(raw))
        except ParameterError as exc:
            raise ReportError(str(exc)) from None

    def to_report(self, spec: Any, stored: Any) -> Any:
        return spec.domain[int(stored)]

    def filler(self, spec: Any) -> int:
        return 0

    def payload_bits(self, spec: Any) -> int:
        return index_bits(len(spec.domain))

    def from_checked(self, spec: Any, values: Sequence[Any]) -> np.ndarray:
        return np.fromiter(values, dtype=np.int64, count=len(values))

    def column(self, spec: Any, column: pa.Array | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        from ldp.report_arrow import domain_indices

        return domain_indices(spec.domain, column, n)

    def json_texts(self, spec: Any, column: np.ndarray) -> pa.Array:
        from ldp.arrow_numpy import array_of, string_array

        texts = string_array([json_line(v) for v in spec.domain])
        return texts.take(array_of(column.astype(np.int64)))

    def text_cells(self, spec: Any, column: np.ndarray) -> list[Any]:
        domain = spec.domain
        return [domain[i] for i in column.tolist()]

    def arrow(self, spec: Any, column: np.ndarray) -> pa.Array:
        import pyarrow as pa

        from ldp.arrow_numpy import array_of, string_array

        domain = spec.domain
        if all(isinstance(v, int) for v in domain):
            return array_of(np.asarray(domain, dtype=np.int64)[column])
        return pa.DictionaryArray.from_arrays(
            array_of(column.astype(np.int32)), string_array([str(v) for v in domain])
        )


@dataclasses.dataclass(frozen=True)
class BoundedInt(ReportField):
    """An integer in [0, ``bound``).

    Parameters
    ----------
    name : str
        Field name.
    bound : int or str
        The exclusive upper bound, or the name of the spec attribute holding it.
    message : str
        The error for a value that is not an integer in range, formatted with
        ``name``, ``raw`` (the value as reported) and ``bound``.
    lenient : bool
        Also accept an integral float (``3.0``) and a string of digits (``"3"``).
    dtype : str
        NumPy dtype of the batch column (``"int64"`` or ``"uint64"``).
    """

    bound: int | str = 0
    message: str = "{name} {raw!r} is out of range [0, {bound})"
    lenient: bool = False
    dtype: str = "int64"

    def bound_for(self, spec: Any) -> int:
        """The exclusive upper bound for ``spec`` (``bound`` itself, or the spec attribute it names)."""
        return _bound_of(spec, self.bound)

    def check(self, spec: Any, raw: Any) -> int:
        bound = _bound_of(spec, self.bound)
        value = raw
        if self.lenient:
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, str) and value.isdigit():
                value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < bound:
            raise ReportError(
                self.message.format(name=self.name, raw=Shown(raw, VALUE_ECHO_LIMIT), bound=bound)
            )
        return value

    def to_report(self, spec: Any, stored: Any) -> int:
        return int(stored)

    def filler(self, spec: Any) -> int:
        return 0

    def payload_bits(self, spec: Any) -> int:
        return index_bits(_bound_of(spec, self.bound))

    def csv_cell(self, text: str) -> Any:
        from ldp.report_arrow import INT_TEXT

        return int(text) if INT_TEXT.fullmatch(text) else text

    def from_checked(self, spec: Any, values: Sequence[Any]) -> np.ndarray:
        return np.fromiter(values, dtype=np.dtype(self.dtype), count=len(values))

    def column(self, spec: Any, column: pa.Array | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        from ldp.report_arrow import int_column

        values, ok = int_column(column, n)
        bound = _bound_of(spec, self.bound)
        if n and not (int(values.min()) >= 0 and int(values.max()) < bound):  # (the usual column: two passes)
            ok &= (values >= 0) & (values < bound)
        return values.astype(np.dtype(self.dtype), copy=False), ok

    def csv_column(self, cells: list[str | None]) -> pa.Array:
        from ldp.report_arrow import csv_int_column

        return csv_int_column(cells)

    def json_texts(self, spec: Any, column: np.ndarray) -> pa.Array:
        import pyarrow as pa

        from ldp.arrow_numpy import array_of

        return array_of(column.astype(np.dtype(self.dtype))).cast(pa.string())

    def text_cells(self, spec: Any, column: np.ndarray) -> list[Any]:
        return column.tolist()

    def arrow(self, spec: Any, column: np.ndarray) -> pa.Array:
        from ldp.arrow_numpy import array_of

        return array_of(column.astype(np.int64))


@dataclasses.dataclass(frozen=True)
class BitVector(ReportField):
    """A packed vector of ``length`` bits (numpy.packbits order, zero padding).

    Parameters
    ----------
    name : str
        Field name.
    length : int or str
        Number of bits, or the name of the spec attribute holding it.

    In JSON and CSV the bytes are base64 text, in Parquet binary; in a batch
    the column is a (n, ⌈length/8⌉) uint8 array.
    """

    name: str = "bits"
    length: int | str = 0

    binary: ClassVar[bool] = True

    def num_bits(self, spec: Any) -> int:
        """The vector's length in bits for ``spec``."""
        return _bound_of(spec, self.length)

    def payload_bits(self, spec: Any) -> int:
        return self.num_bits(spec)

    def check(self, spec: Any, raw: Any) -> bytes:
        if isinstance(raw, str):  # a field the Report does not decode itself (a new name)
            try:
                raw = base64.b64decode(raw.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError, ValueError):
                raise ReportError(f"report '{self.name}' is not valid base64") from None
        if not isinstance(raw, (bytes, bytearray)):
            raise ReportError(
                f"report '{self.name}' must be a base64 string, got {shown(raw, VALUE_ECHO_LIMIT)}"
            )
        bits = bytes(raw)
        num_bits = self.num_bits(spec)
        expected = (num_bits + 7) // 8
        if len(bits) != expected:
            raise ReportError(f"bits have {len(bits)} bytes, expected {expected} for {num_bits} bits")
        spare = expected * 8 - num_bits
        if spare and bits[-1] & ((1 << spare) - 1):
            raise ReportError(f"bits set beyond bit {num_bits - 1} (padding must be zero)")
        return bits

    def rows_ok(self, spec: Any, packed: np.ndarray) -> np.ndarray | None:
        """Which rows of a (n, bytes) uint8 column pass the field's rules beyond length and zero padding.

        None: every row (a plain vector has no further rule); a subclass that
        adds a rule to :meth:`check` gives it here for a whole column.
        """
        return None

    def to_report(self, spec: Any, stored: Any) -> bytes:
        return bytes(stored.tobytes())

    def filler(self, spec: Any) -> bytes:
        return bytes((self.num_bits(spec) + 7) // 8)

    def from_checked(self, spec: Any, values: Sequence[Any]) -> np.ndarray:
        width = (self.num_bits(spec) + 7) // 8
        raw = b"".join(values)
        return np.frombuffer(raw, dtype=np.uint8).reshape(len(values), width).copy()

    def column(self, spec: Any, column: pa.Array | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        from ldp.report_arrow import bits_column

        values, ok = bits_column(column, self.num_bits(spec), n)
        further = self.rows_ok(spec, values) if len(values) else None
        return values, ok if further is None else ok & further

    def json_texts(self, spec: Any, column: np.ndarray) -> pa.Array:
        from ldp.report_arrow import quoted_base64_texts

        return quoted_base64_texts(column, (self.num_bits(spec) + 7) // 8)

    def text_cells(self, spec: Any, column: np.ndarray) -> list[Any]:
        from ldp.report_arrow import base64_texts

        n = len(column)
        encoded = base64_texts(column, (self.num_bits(spec) + 7) // 8)
        width = encoded.shape[1]
        text = encoded.tobytes().decode("ascii")
        return [text[i * width : (i + 1) * width] for i in range(n)]

    def arrow(self, spec: Any, column: np.ndarray) -> pa.Array:
        import pyarrow as pa

        n = len(column)
        width = (self.num_bits(spec) + 7) // 8
        data = np.ascontiguousarray(column, dtype=np.uint8)
        offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
        return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


@dataclasses.dataclass(frozen=True)
class Number(ReportField):
    """A finite number the spec can output (``spec.in_support``); stored as float64."""

    name: str = "value"

    def check(self, spec: Any, raw: Any) -> float:
        if isinstance(raw, (str, bool)) or not isinstance(raw, (int, float)):
            raise ReportError(
                f"numeric report value must be a finite number, got {shown(raw, VALUE_ECHO_LIMIT)}"
            )
        if not math.isfinite(float(raw)):
            raise ReportError(f"numeric report value must be a finite number, got {raw!r}")
        if not bool(spec.in_support(float(raw))):
            raise ReportError(f"numeric report value {raw!r} is not an output of this {spec.mechanism} spec")
        return float(raw)

    def to_report(self, spec: Any, stored: Any) -> float:
        return float(stored)

    def filler(self, spec: Any) -> float:
        return 0.0

    def payload_bits(self, spec: Any) -> int:
        return 64  # an IEEE-754 double

    def csv_cell(self, text: str) -> Any:
        from ldp.report_arrow import FLOAT_TEXT

        return float(text) if FLOAT_TEXT.fullmatch(text) else text

    def from_checked(self, spec: Any, values: Sequence[Any]) -> np.ndarray:
        return np.fromiter(values, dtype=np.float64, count=len(values))

    def column(self, spec: Any, column: pa.Array | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        import pyarrow as pa

        from ldp.report_arrow import present

        if column is None or not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            return np.zeros(n), np.zeros(n, dtype=bool)
        # safe=False: an integer beyond 2^53 becomes the nearest double, as float(value) in check does
        # (the safe cast raised and lost the chunk)
        values = np.asarray(column.cast(pa.float64(), safe=False).fill_null(np.nan))
        ok = present(column, n) & np.isfinite(values)
        ok &= spec.in_support(np.where(ok, values, 0.0))  # out of the mechanism's output support
        return values, ok

    def csv_column(self, cells: list[str | None]) -> pa.Array:
        from ldp.report_arrow import csv_float_column

        return csv_float_column(cells)

    def json_texts(self, spec: Any, column: np.ndarray) -> pa.Array:
        from ldp.arrow_numpy import string_array

        return string_array([json.dumps(v) for v in column.tolist()])

    def text_cells(self, spec: Any, column: np.ndarray) -> list[Any]:
        return column.tolist()

    def arrow(self, spec: Any, column: np.ndarray) -> pa.Array:
        from ldp.arrow_numpy import array_of

        return array_of(column.astype(np.float64))


@dataclasses.dataclass(frozen=True)
class PartField(ReportField):
    """Field ``inner`` of part ``index`` of a composite spec, under a name of its own.

    The part is ``getattr(spec, parts)[index]`` (a spec), and every rule of
    ``inner`` (its check, columns and writers) is applied against it, so a
    record's attribute keeps exactly the report form of its own mechanism.

    Parameters
    ----------
    name : str
        The field's name in the composite report (unique in its schema).
    inner : ReportField
        The part's own field.
    index : int
        The part's position in ``getattr(spec, parts)``.
    parts : str
        The spec attribute holding the parts (a sequence of specs).
    flags : str or None
        The name of an earlier :class:`BitVector` field: a report carries
        this field exactly when bit ``index`` of it is set. None: always.
    """

    inner: ReportField | None = None
    index: int = 0
    parts: str = "parts"
    flags: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.inner, ReportField) or isinstance(self.inner, PartField):
            raise SpecError(f"part field {self.name!r} needs the part's own ReportField as 'inner'")

    @property
    def _inner(self) -> ReportField:
        assert self.inner is not None  # checked in __post_init__
        return self.inner

    @property
    def binary(self) -> bool:  # type: ignore[override]  # the inner field's (a ClassVar elsewhere)
        return self._inner.binary

    def part(self, spec: Any) -> Any:
        """The spec of this field's part."""
        return getattr(spec, self.parts)[self.index]

    def presence_flag(self) -> tuple[str, int] | None:
        return None if self.flags is None else (self.flags, self.index)

    def check(self, spec: Any, raw: Any) -> Any:
        return self._inner.check(self.part(spec), raw)

    def to_report(self, spec: Any, stored: Any) -> Any:
        return self._inner.to_report(self.part(spec), stored)

    def csv_cell(self, text: str) -> Any:
        return self._inner.csv_cell(text)

    def filler(self, spec: Any) -> Any:
        return self._inner.filler(self.part(spec))

    def payload_bits(self, spec: Any) -> int:
        return self._inner.payload_bits(self.part(spec))

    def from_checked(self, spec: Any, values: Sequence[Any]) -> np.ndarray:
        part = self.part(spec)
        filler = self._inner.filler(part)
        return self._inner.from_checked(part, [filler if v is None else v for v in values])

    def column(self, spec: Any, column: pa.Array | None, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(batch column, ok); with ``flags``, absent rows hold the filler and are ok here.

        Whether a row's presence agrees with its flag is the schema's rule
        (:meth:`ReportSchema.presence`), applied by the column validator.
        """
        values, ok = self._inner.column(self.part(spec), column, n)
        if self.flags is None:
            return values, ok
        from ldp.report_arrow import present

        absent = ~present(column, n)
        if absent.any():
            values = values.copy()
            values[absent] = self.from_checked(spec, [None])[0]
        return values, ok | absent

    def csv_column(self, cells: list[str | None]) -> pa.Array:
        return self._inner.csv_column(cells)

    def json_texts(self, spec: Any, column: np.ndarray) -> pa.Array:
        return self._inner.json_texts(self.part(spec), column)

    def text_cells(self, spec: Any, column: np.ndarray) -> list[Any]:
        return self._inner.text_cells(self.part(spec), column)

    def arrow(self, spec: Any, column: np.ndarray) -> pa.Array:
        return self._inner.arrow(self.part(spec), column)


@dataclasses.dataclass(frozen=True)
class ReportSchema:
    """The ordered payload fields of a spec's reports (in the order of the JSON form, after ``v``, ``spec``).

    Declaring a schema makes its field names known to :class:`ldp.report.Report`
    (so a report carrying them parses; a spec whose schema lacks one rejects
    it as unexpected).

    Parameters
    ----------
    fields : tuple of ReportField
        At least one field; names unique, none of ``v``, ``spec``,
        ``client``, ``group``.
    """

    fields: tuple[ReportField, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        if not self.fields or not all(isinstance(f, ReportField) for f in self.fields):
            raise SpecError("a report schema needs one or more ReportField fields")
        names = self.names
        if len(set(names)) != len(names):
            raise SpecError(f"report schema names a field twice: {', '.join(names)}")
        for name in names:
            declare_report_field(name)
        for position, f in enumerate(self.fields):
            flag = f.presence_flag()
            if flag is None:
                continue
            earlier = {g.name: g for g in self.fields[:position]}
            if not isinstance(earlier.get(flag[0]), BitVector):
                raise SpecError(
                    f"report schema field {f.name!r}: its flags field {flag[0]!r} must be an earlier BitVector field"
                )

    @property
    def conditional(self) -> bool:
        """Whether some field is present only in some reports (:class:`PartField` with ``flags``)."""
        return any(f.presence_flag() is not None for f in self.fields)

    def carries(self, field: ReportField, checked: Mapping[str, Any]) -> bool:
        """Whether one report must carry ``field``, given the checked values of the fields before it."""
        flag = field.presence_flag()
        if flag is None:
            return True
        name, bit = flag
        bits = checked[name]
        return bool(bits[bit >> 3] & (0x80 >> (bit & 7)))

    def presence(self, field: ReportField, columns: Mapping[str, np.ndarray]) -> np.ndarray | None:
        """Which rows of a batch carry ``field`` (None: every row), from its flags column."""
        flag = field.presence_flag()
        if flag is None:
            return None
        name, bit = flag
        packed = np.asarray(columns[name])
        return (packed[:, bit >> 3] & (0x80 >> (bit & 7))) != 0

    @property
    def names(self) -> tuple[str, ...]:
        """The field names, in order."""
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> ReportField | None:
        """The field called ``name`` (None when the schema has none)."""
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def payload_bits(self, spec: Any) -> int:
        """Bits of a report's payload for ``spec``: the sum of its fields' (docs/report-format.md#size)."""
        return sum(f.payload_bits(spec) for f in self.fields)

    def binary_names(self) -> frozenset[str]:
        """Names of the fields whose binary Parquet cells stand for base64 text."""
        return frozenset(f.name for f in self.fields if f.binary)


def report_schema_of(spec: Any) -> ReportSchema:
    """The report schema a spec (instance or class) declares.

    A class-level schema (a ``ClassVar``) is the same for every instance; an
    instance-level one (a property of the spec, for a schema that depends on
    its parameters) is read from the instance.

    Raises
    ------
    SpecError
        Naming the spec class and mechanism when it declares none, or when
        the schema of a class is asked for and it depends on the instance.
    """
    cls = spec if isinstance(spec, type) else type(spec)
    schema = getattr(spec, "report_schema", None)
    if isinstance(spec, type) and isinstance(schema, (property, functools.cached_property)):
        raise SpecError(
            f"{cls.__name__} (mechanism {getattr(cls, 'mechanism', None)!r}) has a report schema per spec "
            "instance (its fields depend on the spec's parameters): ask an instance"
        )
    if not isinstance(schema, ReportSchema):
        mechanism = getattr(cls, "mechanism", None) or cls.__name__
        raise SpecError(
            f"{cls.__name__} (mechanism {mechanism!r}) declares no report schema: give the spec class a "
            "'report_schema' (a ReportSchema of ldp.report_schema, see docs/adding-a-mechanism.md)"
        )
    return schema
