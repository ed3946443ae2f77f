"""ldp.values_file: one reader, one set of rules, for ``ldp encode`` INPUT and ``ldp simulate --data``."""

from __future__ import annotations

import collections
import gzip
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.client.cli import read_rows
from ldp.errors import ParameterError
from ldp.simulations import from_data
from ldp.values_file import input_kind, read_column, read_lines, read_table

_WORDS = ("chrome", "safari", "edge", "firefox", "opera")


def _values(seed: int, n: int = 300) -> list[str]:
    rng = np.random.default_rng(seed)
    return [_WORDS[i] for i in rng.choice(len(_WORDS), size=n, p=[0.4, 0.25, 0.2, 0.1, 0.05])]


def _write(path, values: list[str]) -> None:
    """``values`` as column ``browser`` (beside a ``n`` column) in the format of ``path``'s extension."""
    frame = pd.DataFrame({"browser": values, "n": range(len(values))})
    name = str(path).removesuffix(".gz")
    if name.endswith(".csv"):
        text = "\ufeff" + frame.to_csv(index=False, lineterminator="\r\n")  # a BOM and CRLF line ends
    elif name.endswith(".jsonl"):
        # blank lines between the records
        text = "\n\n".join(json.dumps(record) for record in frame.to_dict("records")) + "\n"
    elif name.endswith(".json"):
        text = json.dumps(frame.to_dict("records"))
    elif name.endswith(".parquet"):
        frame.to_parquet(path)
        return
    else:
        text = "".join(value + "\n" for value in values)
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if str(path).endswith(".gz") else data)


@pytest.mark.parametrize(
    "name", ["v.csv", "v.csv.gz", "v.jsonl", "v.jsonl.gz", "v.json", "v.parquet", "v.txt", "v.txt.gz"]
)
def test_encode_and_simulate_read_the_same_values(tmp_path, name):
    values = _values(seed=len(name))
    path = tmp_path / name
    _write(path, values)
    table = input_kind(path) != "text"
    column = "browser" if table else None
    encoded = [value for _, value, _, _ in read_rows(str(path), column, with_client=False)]
    assert encoded == values
    if table:
        assert read_column(path, "browser") == values
        population = from_data(path, "browser", as_users=True)
        counts = collections.Counter(values)
        assert dict(zip(population.domain, population.user_counts.tolist())) == dict(counts)
        assert population.domain[0] == counts.most_common(1)[0][0]
    else:
        assert [value for _, value in read_lines(path)] == values


@pytest.mark.parametrize(
    "name, kind",
    [
        ("a.CSV", "csv"),
        ("a.csv.gz", "csv"),
        ("a.ndjson", "jsonl"),
        ("a.json", "json"),
        ("a.pq", "parquet"),
        ("a.txt", "text"),
        ("a", "text"),
    ],
)
def test_input_kind_by_extension(name, kind):
    assert input_kind(name) == kind


def test_plain_text_keeps_blank_lines_and_drops_line_ends(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"a\r\n\nb")
    assert list(read_lines(path)) == [(1, "a"), (2, ""), (3, "b")]


def test_a_column_of_plain_text_is_refused(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("a\nb\n")
    with pytest.raises(ParameterError, match="plain text"):
        read_column(path, "x")


def test_missing_column_lists_the_columns_for_both_commands(tmp_path):
    path = tmp_path / "v.jsonl"
    _write(path, _values(seed=1, n=5))
    with pytest.raises(ParameterError, match=r"has no column 'nope'; its columns: 'browser', 'n'"):
        read_column(path, "nope")
    with pytest.raises(ParameterError, match=r"has no column 'nope'; its columns: 'browser', 'n'"):
        list(read_rows(str(path), "nope", with_client=False))


def test_not_utf8_names_the_line_for_both_commands(tmp_path):
    path = tmp_path / "v.csv"
    path.write_bytes(b"browser\nchrome\nsafari\xff\n")
    for read in (lambda: read_column(path, "browser"), lambda: from_data(path, "browser")):
        with pytest.raises(ParameterError, match=r"line 3: not UTF-8 text \(byte 0xff"):
            read()


def test_json_must_be_an_array_of_objects(tmp_path):
    path = tmp_path / "v.json"
    path.write_text('{"browser": ["a", "b"]}')
    with pytest.raises(ParameterError, match="JSON array of objects"):
        read_column(path, "browser")
    path.write_text('[{"browser": "a"}, 3]')
    with pytest.raises(ParameterError, match="element 2: expected a JSON object"):
        read_column(path, "browser")


def test_ragged_csv_rows_are_an_error_unless_lenient(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("browser,n\nchrome,1,extra\nedge\nsafari,3\n")
    with pytest.raises(ParameterError, match="line 2: 3 fields, but the header has 2"):
        read_column(path, "browser")
    assert read_column(path, "browser", strict=False) == ["chrome", "edge", "safari"]
    assert list(read_table(path, lambda names: ("n", None), strict=False)) == [
        ("1", None),
        (None, None),
        ("3", None),
    ]


def test_parquet_integers_with_nulls_stay_integers(tmp_path):
    path = tmp_path / "v.parquet"
    pd.DataFrame({"x": pd.array([3, None, 3, 1], dtype="Int64")}).to_parquet(path)
    assert read_column(path, "x") == [3, None, 3, 1]
    population = from_data(path, "x")
    assert population.domain == (3, 1)


def test_missing_file(tmp_path):
    with pytest.raises(ParameterError, match="does not exist"):
        read_column(tmp_path / "nope.csv", "x")


def test_simulate_reads_gzip_and_json_data(tmp_path):
    """Formats ldp simulate --data gained from the shared reader: .csv.gz and .json (an array of objects)."""
    for name in ("v.csv.gz", "v.json"):
        path = tmp_path / name
        _write(path, _values(seed=3, n=200))
        result = CliRunner().invoke(
            cli,
            [
                "simulate",
                "--data",
                str(path),
                "--column",
                "browser",
                "-m",
                "grr",
                "-e",
                "1",
                "-r",
                "1",
                "--seed",
                "1",
            ],
        )
        assert result.exit_code == 0, result.output
        assert "seed: 1" in result.output


def test_encode_reads_json_arrays(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(ldp.GRR(domain=_WORDS, epsilon=2.0).to_json())
    path = tmp_path / "v.json"
    _write(path, _values(seed=4, n=20))
    result = CliRunner().invoke(cli, ["encode", "--spec", str(spec), str(path), "--column", "browser"])
    assert result.exit_code == 0, result.output
    assert "encoded 20 values" in result.stderr
