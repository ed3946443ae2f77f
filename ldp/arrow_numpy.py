"""Arrow ↔ NumPy conversions through the arrays' buffers, which never import pandas.

pyarrow imports pandas (~0.4 s) the first time a conversion asks its lazy
pandas shim whether an object is a pandas one: ``pa.array(...)`` and
``pa.scalar(...)`` of anything, ``Array.to_numpy()``, ``np.asarray(array)``,
``array.fill_null(0)`` and a compute function given a Python scalar all do.
The readers of ``ldp aggregate`` convert every chunk, so they go through
these helpers instead, which read and build Arrow buffers directly
(``Array.buffers()``, ``pa.Array.from_buffers``): the same values, without
pandas in the process.

Only what the readers need is here: validity and boolean bitmaps, fixed-width
numeric arrays, and string arrays and scalars built from Python text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

__all__ = [
    "array_of",
    "binary_values",
    "bool_values",
    "null_string",
    "number_scalar",
    "numeric_values",
    "numeric_view",
    "string_array",
    "string_scalar",
    "validity",
]


def _bitmap(buffer: pa.Buffer | None, offset: int, n: int, default: bool) -> np.ndarray:
    """``n`` bits of an Arrow bitmap (least significant bit first) from bit ``offset``, as bool."""
    if buffer is None:
        return np.full(n, default, dtype=bool)
    bits = np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), count=offset + n, bitorder="little")
    return bits[offset:].astype(bool)


def validity(array: pa.Array) -> np.ndarray:
    """Which entries of ``array`` hold a value (all False for a null-typed array)."""
    n = len(array)
    if pa.types.is_null(array.type):
        return np.zeros(n, dtype=bool)
    if array.null_count == 0:
        return np.ones(n, dtype=bool)
    return _bitmap(array.buffers()[0], array.offset, n, True)


def bool_values(array: pa.Array) -> np.ndarray:
    """The values of a boolean array as a NumPy bool array; null entries are False."""
    if not pa.types.is_boolean(array.type):
        raise TypeError(f"expected a boolean array, got {array.type}")
    values = _bitmap(array.buffers()[1], array.offset, len(array), False)
    if array.null_count:
        values &= validity(array)
    return values


def _numpy_dtype(value_type: pa.DataType) -> np.dtype:
    if pa.types.is_signed_integer(value_type):
        return np.dtype(f"<i{value_type.bit_width // 8}")
    if pa.types.is_unsigned_integer(value_type):
        return np.dtype(f"<u{value_type.bit_width // 8}")
    if pa.types.is_floating(value_type):
        return np.dtype(f"<f{value_type.bit_width // 8}")
    raise TypeError(f"expected an integer or floating-point array, got {value_type}")


def numeric_view(array: pa.Array) -> np.ndarray:
    """A read-only view of an integer or floating-point array's values buffer (no copy; a null entry's value is
    whatever the buffer holds there)."""
    n = len(array)
    return np.frombuffer(array.buffers()[1], dtype=_numpy_dtype(array.type))[array.offset : array.offset + n]


def numeric_values(array: pa.Array, fill: float = 0) -> np.ndarray:
    """The values of an integer or floating-point array as a new NumPy array; null entries are ``fill``."""
    values = (
        numeric_view(array).copy()
        if array.buffers()[1] is not None
        else np.zeros(len(array), dtype=_numpy_dtype(array.type))
    )
    if array.null_count:
        values[~validity(array)] = fill
    return values


def _arrow_type(dtype: np.dtype) -> pa.DataType:
    kind, size = dtype.kind, dtype.itemsize
    if kind == "b":
        return pa.bool_()
    if kind in "iu":
        return {
            ("i", 1): pa.int8(),
            ("i", 2): pa.int16(),
            ("i", 4): pa.int32(),
            ("i", 8): pa.int64(),
            ("u", 1): pa.uint8(),
            ("u", 2): pa.uint16(),
            ("u", 4): pa.uint32(),
            ("u", 8): pa.uint64(),
        }[(kind, size)]
    if kind == "f" and size in (2, 4, 8):
        return {2: pa.float16(), 4: pa.float32(), 8: pa.float64()}[size]
    raise TypeError(f"no Arrow type for NumPy {dtype}")


def array_of(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """An Arrow array of a 1-D bool, integer or float NumPy array; entries where ``valid`` is False are null."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise TypeError(f"expected a 1-D array, got shape {values.shape}")
    arrow_type = _arrow_type(values.dtype)
    n = len(values)
    if values.dtype.kind == "b":
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")))
    mask = None
    null_count = 0
    if valid is not None:
        valid = np.asarray(valid, dtype=bool)
        null_count = int(n - np.count_nonzero(valid))
        if null_count:
            mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(arrow_type, n, [mask, data], null_count=null_count)


def string_array(texts: Sequence[str | None]) -> pa.Array:
    """An Arrow string array of Python strings (None: null).

    Raises
    ------
    UnicodeEncodeError
        For a string that is not valid Unicode text (a lone surrogate), as
        ``pa.array`` refuses it too.
    """
    n = len(texts)
    encoded = [b"" if text is None else text.encode("utf-8") for text in texts]
    lengths = np.fromiter((len(item) for item in encoded), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        raise ValueError("string column of 2 GiB or more")
    valid = np.fromiter((text is not None for text in texts), dtype=bool, count=n)
    null_count = int(n - np.count_nonzero(valid))
    mask = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(
        pa.string(),
        n,
        [mask, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))],
        null_count=null_count,
    )


def binary_values(array: pa.Array) -> list[bytes | None]:
    """The bytes of each entry of a string or binary array (None: null), read from its buffers.

    For short arrays (a dictionary's entries): no compute function, no
    UTF-8 decoding (a Parquet string cell need not be valid UTF-8).

    Raises
    ------
    TypeError
        For an array of another type.
    """
    if pa.types.is_string(array.type) or pa.types.is_binary(array.type):
        offset_type: type[np.signedinteger] = np.int32
    elif pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        offset_type = np.int64
    else:
        raise TypeError(f"expected a string or binary array, got {array.type}")
    n = len(array)
    if n == 0:
        return []
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[array.offset : array.offset + n + 1].tolist()
    first, last = offsets[0], offsets[-1]
    data = buffers[2].slice(first, last - first).to_pybytes() if buffers[2] is not None else b""
    present = validity(array).tolist()
    return [data[offsets[i] - first : offsets[i + 1] - first] if present[i] else None for i in range(n)]


def string_scalar(text: str) -> pa.Scalar:
    """An Arrow string scalar (for compute functions: a Python ``str`` argument would import pandas)."""
    return string_array([text])[0]


def number_scalar(value: float) -> pa.Scalar:
    """An Arrow int64 or float64 scalar (for compute functions, as :func:`string_scalar`)."""
    dtype = np.float64 if isinstance(value, float) else np.int64
    return array_of(np.array([value], dtype=dtype))[0]


def null_string() -> pa.Scalar:
    """The null Arrow string scalar."""
    return pa.nulls(1, pa.string())[0]
