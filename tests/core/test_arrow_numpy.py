"""ldp.arrow_numpy: the buffer-level Arrow ↔ NumPy conversions give what pyarrow's own conversions give."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ldp.arrow_numpy import (
    array_of,
    binary_values,
    bool_values,
    null_string,
    number_scalar,
    numeric_values,
    string_array,
    string_scalar,
    validity,
)


@pytest.mark.parametrize("arrow_type", [pa.int8(), pa.int64(), pa.uint64(), pa.float32(), pa.float64()])
@pytest.mark.parametrize("offset", [0, 3])
def test_numeric_values_and_validity_match_pyarrow_with_nulls_and_offsets(arrow_type, offset):
    source = pa.array([1, None, 3, 4, None, 6, 7, 8, 9, None, 11], type=arrow_type).slice(offset)
    values = numeric_values(source, fill=0)
    assert values.dtype == source.type.to_pandas_dtype()
    assert values.tolist() == source.fill_null(0).to_pylist()
    assert validity(source).tolist() == source.is_valid().to_pylist()


@pytest.mark.parametrize("offset", [0, 5])
def test_bool_values_treat_nulls_as_false(offset):
    source = pa.array([True, None, False, True, True, None, True, False, True, True], type=pa.bool_())
    source = source.slice(offset)
    assert bool_values(source).tolist() == source.fill_null(False).to_pylist()


def test_validity_of_a_null_typed_array_is_all_false():
    assert validity(pa.nulls(3)).tolist() == [False, False, False]


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint64, np.float64])
def test_array_of_round_trips_with_nulls(dtype):
    values = np.array([1, 0, 1, 1], dtype=dtype)
    valid = np.array([True, False, True, True])
    built = array_of(values, valid)
    assert built.to_pylist() == pa.array(values, mask=~valid).to_pylist()
    assert built.null_count == 1


def test_string_arrays_and_scalars_compare_as_pyarrows():
    texts = ["a", None, "héllo", ""]
    built = string_array(texts)
    assert built.equals(pa.array(texts, type=pa.string()))
    assert pc.equal(built, string_scalar("héllo")).to_pylist() == [False, None, True, False]
    assert pc.if_else(pa.array([True, False]), string_array(["x", "y"]), null_string()).to_pylist() == [
        "x",
        None,
    ]
    assert pc.less_equal(pa.array([1, 50]), number_scalar(40)).to_pylist() == [True, False]


def test_string_array_refuses_a_lone_surrogate():
    with pytest.raises(UnicodeEncodeError):
        string_array(["\ud800"])


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])
@pytest.mark.parametrize("offset", [0, 2])
def test_binary_values_are_the_bytes_of_each_entry_with_nulls_and_offsets(arrow_type, offset):
    texts = ["a", None, "héllo", "", "zz", None, "last"]
    source = pa.array(texts, type=arrow_type).slice(offset, 4)
    expected = [None if t is None else t.encode("utf-8") for t in texts[offset : offset + 4]]
    assert binary_values(source) == expected
    assert binary_values(source.slice(0, 0)) == []


def test_binary_values_read_bytes_that_are_not_utf8_and_refuse_other_types():
    source = pa.Array.from_buffers(
        pa.string(), 2, [None, pa.py_buffer(np.array([0, 1, 3], dtype=np.int32)), pa.py_buffer(b"\xffab")]
    )
    assert binary_values(source) == [b"\xff", b"ab"]
    with pytest.raises(TypeError, match="string or binary"):
        binary_values(pa.array([1, 2]))
