"""ColumnTable: the estimate table of ``ldp aggregate``, built and written as CSV without pandas.

Its CSV must be byte for byte what pandas writes for the same table (the
library's ``estimate()`` DataFrame), whatever the values hold.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.table import ColumnTable, as_frame
from ldp.aggregator.writers import write_estimates
from ldp.client import encode_batch
from ldp.specs.base import load_spec


def test_csv_is_what_pandas_writes_for_awkward_values_and_numbers():
    table = ColumnTable(
        {
            "value": ["plain", "with,comma", 'with "quote"', "line\nbreak", None, 3, False, float("nan")],
            "estimate": np.array([0.1, -2.5e-7, 1e16, np.nan, np.inf, -np.inf, 123456789.123, 0.0]),
            "reports": np.arange(8, dtype=np.int64),
            "flag": np.array([True, False] * 4),
        },
        attrs={"consistency": "norm-sub"},
    )
    frame = table.to_frame()
    assert frame.attrs == {"consistency": "norm-sub"}
    assert table.csv_text() == frame.to_csv(index=False)


def test_number_cells_are_what_pandas_writes_at_the_edges_of_float_and_integer_types():
    """Floats written by repr (shortest round trip), as pandas does, extremes and signed zero included."""
    table = ColumnTable(
        {
            "f64": np.array([-0.0, 5e-324, 1e-5, 1e-4, 1.7976931348623157e308, 1 / 3, 2.0**53 + 2, np.nan]),
            "i64": np.array([-(2**63), 2**63 - 1, 0, -1, 1, 7, 8, 9], dtype=np.int64),
            "u64": np.array([2**64 - 1, 0, 1, 2, 3, 4, 5, 6], dtype=np.uint64),
        }
    )
    assert table.csv_text() == table.to_frame().to_csv(index=False)


def test_tables_of_numbers_alone_are_what_pandas_writes():
    """Rows of numbers are joined without the csv module: a row of empty (NaN) cells, booleans, one column."""
    nan = np.nan
    tables = [
        {"a": np.array([nan, 1.5, nan]), "b": np.array([nan, nan, -0.0]), "c": np.array([True, False, True])},
        {"only": np.array([nan, 2.0, nan])},  # a row of one empty cell is written ""
        {"x": np.array([], dtype=np.float64), "y": np.array([], dtype=np.int64)},
    ]
    for columns in tables:
        table = ColumnTable(columns)
        assert table.csv_text() == table.to_frame().to_csv(index=False), list(columns)


def test_insert_places_a_column_like_a_dataframe():
    table = ColumnTable({"value": ["a"], "estimate": np.array([1.0])})
    table.insert(1, "consistent", np.array([0.5]))
    assert table.columns == ["value", "consistent", "estimate"]
    with pytest.raises(ValueError, match="already exists"):
        table.insert(0, "value", ["b"])
    with pytest.raises(ValueError, match="rows"):
        table.insert(0, "other", np.array([1.0, 2.0]))


@pytest.mark.parametrize(
    "spec",
    [
        ldp.GRR(domain=("a", "b", "c"), epsilon=1.0),
        ldp.OUE(domain=("a", "b", "c"), epsilon=1.0),
        ldp.OLH(domain=("a", "b", "c"), epsilon=1.0),
        ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/4", q="3/4"),
        ldp.Rappor(domain=("a", "b", "c"), encoding="basic", f="1/2", p="1/4", q="3/4"),
    ],
    ids=["grr", "oue", "olh", "rappor-bloom", "rappor-basic"],
)
@pytest.mark.parametrize("consistency", ["none", "norm-sub", "base-cut"])
def test_estimate_columns_are_the_estimate_dataframe(spec, consistency, tmp_path):
    if spec.mechanism == "rappor" and spec.encoding == "bloom" and consistency != "none":
        pytest.skip("Bloom bit estimates take no consistent view")
    accumulator = make_aggregator(spec)
    accumulator.add_batch(encode_batch(spec, ["a", "b", "a", "c"] * 50, np.random.default_rng(3)))
    frame = accumulator.estimate(0.9, consistency=consistency)
    columns = accumulator.estimate_columns(0.9, consistency=consistency)
    assert isinstance(columns, ColumnTable)
    assert columns.attrs == frame.attrs
    assert as_frame(columns).equals(frame)
    write_estimates(columns, tmp_path / "estimates.csv")
    write_estimates(columns, tmp_path / "estimates.csv.gz")
    expected = frame.to_csv(index=False)
    assert (tmp_path / "estimates.csv").read_text() == expected
    assert gzip.decompress((tmp_path / "estimates.csv.gz").read_bytes()).decode() == expected


def test_accumulators_with_their_own_estimate_build_no_columns():
    """A subclass that overrides estimate() must not have the base class's table written in its place."""
    from ldp.aggregator.accumulators import ValueAccumulator

    class Doubled(ValueAccumulator):
        def estimate(self, confidence=0.95, **options):
            return super().estimate(confidence, **options) * 2

    assert Doubled(ldp.GRR(domain=("a", "b"), epsilon=1.0)).estimate_columns() is None


def test_oracle_columns_take_the_oracles_own_unbiased_frequencies():
    # The estimator's f̂ when it is not (C/n − q*)/(p* − q*) (LOLOHA's): the counts follow it, the SEs stay p*/q*'s.
    from ldp.aggregator.estimates import oracle_columns, oracle_estimates

    given = np.array([0.25, 0.75])
    table = oracle_columns(["a", "b"], [10, 30], 40, 0.8, 0.2, frequency=given)
    np.testing.assert_allclose(table["estimate"], 40 * given)
    frame = oracle_estimates(["a", "b"], [10, 30], 40, 0.8, 0.2, frequency=given)
    np.testing.assert_allclose(frame["estimate"], 40 * given)


def test_a_records_table_mixing_integer_and_text_values_writes_parquet_as_its_csv(tmp_path):
    """Parquet columns hold one type: a multi-attribute table's ``value`` column mixes an integer domain's values
    with a text domain's (and the numeric attribute's null), so it is written as the CSV writes it, as text.

    Regression: ``ldp aggregate -o x.parquet`` died with pyarrow's ArrowTypeError traceback.
    """
    import pyarrow.parquet as pq

    spec = load_spec(
        {
            "mechanism": "multi-attribute",
            "epsilon": 1,
            "attributes": [
                {"name": "os", "mechanism": "grr", "domain": ["a", "b"]},
                {"name": "n", "mechanism": "grr", "domain": [1, 2, 3]},
                {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100},
            ],
        }
    )
    records = [{"os": "ab"[i % 2], "n": 1 + i % 3, "ms": float(i % 100)} for i in range(300)]
    aggregator = make_aggregator(spec)
    aggregator.add_batch(encode_batch(spec, records, np.random.default_rng(5)))
    table = aggregator.estimate()
    write_estimates(table, tmp_path / "e.parquet")
    write_estimates(table, tmp_path / "e.csv")
    values = pq.read_table(tmp_path / "e.parquet").column("value").to_pylist()
    assert values == ["a", "b", "1", "2", "3", None]
    assert [line.split(",")[2] for line in (tmp_path / "e.csv").read_text().splitlines()[1:]] == [
        "a",
        "b",
        "1",
        "2",
        "3",
        "",
    ]
