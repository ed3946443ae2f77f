"""Bad input on the command line: one-line messages naming the file or option, never a traceback.

docs/architecture.md#errors: the CLI exits non-zero with a one-line
message on user error. Each case uses click's CliRunner and real files.
"""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli

NOT_UTF8 = b"\xff\xfe not utf-8\n"


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _one_line_error(result, *needles: str) -> str:
    """The single error line of a failed command; checks it names every needle and that no traceback was printed."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture
def grr_spec(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(ldp.GRR(domain=("chrome", "safari", "edge"), epsilon=20.0).to_json())
    return path


# -- ldp encode: unreadable input ---------------------------------------------------


@pytest.mark.parametrize("name", ["values.txt", "values.csv", "values.jsonl", "values.csv.gz"])
def test_encode_input_that_is_not_utf8(tmp_path, grr_spec, name):
    source = tmp_path / name
    data = b"value\nchrome\n" + NOT_UTF8 if name.endswith((".csv", ".csv.gz")) else b"chrome\n" + NOT_UTF8
    source.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    line = _one_line_error(_run("encode", "--spec", grr_spec, source), name, "not UTF-8")
    expected = 3 if name.endswith((".csv", ".csv.gz")) else 2
    assert f"line {expected}" in line


# Each row: (file name, content, --column, fragments the one error line must contain).
_BAD_TEXT_INPUTS = [
    pytest.param(
        "h.jsonl",
        '{"x": "chrome"}\nnot json\n',
        "x",
        ("h.jsonl", "line 2", "not valid JSON"),
        id="jsonl-not-json",
    ),
    pytest.param(
        "h.jsonl",
        '{"x": "chrome"}\n\n["edge"]\n',
        "x",
        ("h.jsonl", "line 3", "JSON object"),
        id="jsonl-not-object",
    ),
    pytest.param("empty.csv", "", None, ("empty.csv", "empty", "header"), id="csv-empty"),
    pytest.param("header.csv", "value\n", "nope", ("header.csv", "'nope'"), id="csv-header-only-bad-column"),
    # a blank line and a quoted newline come first: the line number is the file's, not the record's
    pytest.param(
        "r.csv",
        'value,other\nchrome,x\n\nsafari,"y\nz"\nedge,a,b\n',
        "value",
        ("r.csv", "line 6"),
        id="csv-later-bad-row",
    ),
    pytest.param(
        "r.csv", "other,value\nx,chrome\nedge\n", "value", ("r.csv", "line 3", "1 fields"), id="csv-short-row"
    ),
    pytest.param(
        "r.csv", "value,value\nchrome,edge\n", "value", ("r.csv", "'value'"), id="csv-repeated-header"
    ),
]


@pytest.mark.parametrize("name, content, column, fragments", _BAD_TEXT_INPUTS)
def test_encode_bad_text_input_is_one_line_naming_file_and_line(
    tmp_path, grr_spec, name, content, column, fragments
):
    source = tmp_path / name
    source.write_text(content)
    args = ["encode", "--spec", grr_spec, source] + (["--column", column] if column else [])
    _one_line_error(_run(*args), *fragments)


def test_encode_jsonl_blank_lines_and_spaces_are_fine(tmp_path, grr_spec):
    source = tmp_path / "h.jsonl"
    source.write_text('{"x": "chrome"}\n\n   {"x": "edge"}  \n')
    result = _run("encode", "--spec", grr_spec, source, "--column", "x")
    assert result.exit_code == 0, result.output
    assert "encoded 2 values" in result.stderr


def test_encode_corrupt_parquet(tmp_path, grr_spec):
    source = tmp_path / "c.parquet"
    source.write_bytes(b"this is not parquet")
    _one_line_error(_run("encode", "--spec", grr_spec, source), "c.parquet", "Parquet")


def test_encode_truncated_parquet(tmp_path, grr_spec):
    good = tmp_path / "good.parquet"
    pd.DataFrame({"value": ["chrome", "edge"] * 1000}).to_parquet(good)
    source = tmp_path / "t.parquet"
    source.write_bytes(good.read_bytes()[:-100])
    _one_line_error(_run("encode", "--spec", grr_spec, source), "t.parquet")


def test_encode_corrupt_gzip(tmp_path, grr_spec):
    source = tmp_path / "values.csv.gz"
    source.write_bytes(gzip.compress(b"value\n" + b"chrome\n" * 1000)[:30])
    _one_line_error(_run("encode", "--spec", grr_spec, source), "values.csv.gz")
    source.write_bytes(b"not gzip at all")
    _one_line_error(_run("encode", "--spec", grr_spec, source), "values.csv.gz")


# -- ldp encode: a malformed CSV row must never shift the columns ------------------


def test_encode_csv_row_with_more_fields_than_the_header_is_an_error(tmp_path, grr_spec):
    # pandas would make "chrome" the index and read "safari" as the value
    source = tmp_path / "r.csv"
    source.write_text("value,other\nchrome,safari,edge\n")
    result = _run("encode", "--spec", grr_spec, source, "--column", "value")
    _one_line_error(result, "r.csv", "line 2", "3 fields", "header has 2")
    assert result.stdout == ""  # no report was emitted


def test_encode_csv_quoted_commas_and_bom_are_read(tmp_path, grr_spec):
    source = tmp_path / "ok.csv"
    source.write_bytes('\ufeffnote,value\n"a, b",chrome\n"c",edge\n'.encode("utf-8"))
    out = tmp_path / "reports.jsonl"
    result = _run("encode", "--spec", grr_spec, source, "--column", "value", "-o", out)
    assert result.exit_code == 0, result.output
    assert "encoded 2 values" in result.stderr


def test_encode_state_with_a_missing_client_id_is_an_error(tmp_path, grr_spec):
    source = tmp_path / "users.csv"
    source.write_text("client_id,value\nu1,chrome\n,edge\n")
    _one_line_error(
        _run("encode", "--spec", grr_spec, source, "--state", tmp_path / "states"),
        "users.csv",
        "row 2",
        "client_id",
    )


# -- --spec and other input files ---------------------------------------------------


def test_spec_file_that_is_not_utf8(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"mechanism": "grr", "x": "\xff"}')
    values = tmp_path / "values.txt"
    values.write_text("a\n")
    _one_line_error(_run("encode", "--spec", bad, values), "bad.json", "not UTF-8")
    _one_line_error(_run("aggregate", "--spec", bad, values), "bad.json", "not UTF-8")
    _one_line_error(_run("privacy", "tradeoff", "--spec", bad), "bad.json", "not UTF-8")


def test_spec_file_that_is_not_json_names_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    values = tmp_path / "values.txt"
    values.write_text("a\n")
    _one_line_error(_run("encode", "--spec", bad, values), "spec is not valid JSON", "bad.json")


def test_spec_domain_file_that_is_not_utf8(tmp_path):
    domain = tmp_path / "domain.txt"
    domain.write_bytes(b"chrome\nsafari\n" + NOT_UTF8)
    _one_line_error(
        _run("spec", "grr", "--epsilon", "1", "--domain-file", domain),
        "--domain-file",
        "domain.txt",
        "line 3",
        "not UTF-8",
    )


@pytest.mark.parametrize(
    "text, needles",
    [
        (b"k,h,m,p,q,f\n16,2,64,0.5,0.75\n", ("5 values", "expected 6")),
        (b"k,h,m,p,q,f\n16,2,64,0.5,0.75,0.5,9\n", ("7 values", "expected 6")),
        (b"k,h,m,p,q,f\n16,2,x,0.5,0.75,0.5\n", ("integers", "m=x")),
        (b"k,h,m,p,q,f\n16,2,64,0.5,0.75,\xff\n", ("not UTF-8",)),
        (b"k,h,m,p,q\n16,2,64,0.5,0.75\n", ("header must be k,h,m,p,q,f",)),
        (b"", ("header and one row",)),
    ],
)
def test_spec_from_google_bad_params_file(tmp_path, text, needles):
    params = tmp_path / "bp.csv"
    params.write_bytes(text)
    _one_line_error(_run("spec", "rappor", "--from-google", params), "bp.csv", *needles)


# -- checks that must run before the work --------------------------------------------


@pytest.fixture
def no_reading(monkeypatch):
    """Fail the test if ldp aggregate starts reading reports."""
    import ldp.aggregator.engines

    def not_called(*args, **kwargs):
        raise AssertionError("reports were read before the options were checked")

    monkeypatch.setattr(ldp.aggregator.engines, "aggregate_files", not_called)


def _reports(tmp_path, spec, values):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    source = tmp_path / "values.txt"
    source.write_text("".join(f"{v}\n" for v in values))
    reports = tmp_path / "reports.jsonl"
    result = _run("encode", "--spec", spec_path, source, "-o", reports)
    assert result.exit_code == 0, result.output
    return spec_path, reports


@pytest.mark.parametrize(
    "output, needles",
    [
        ("out.txt", ("out.txt", "unknown extension '.txt'", ".csv")),
        ("missing-dir/out.csv", ("-o", "missing-dir", "does not exist")),
    ],
)
def test_aggregate_bad_output_fails_before_reading(tmp_path, no_reading, output, needles):
    spec_path, reports = _reports(tmp_path, ldp.GRR(domain=("a", "b"), epsilon=1.0), "abab")
    result = _run("aggregate", "--spec", spec_path, reports, "-o", tmp_path / output)
    _one_line_error(result, *needles)


@pytest.mark.parametrize(
    "spec, values, needles",
    [
        (
            ldp.Piecewise(epsilon=1.0, low=0.0, high=1.0),
            [0.5, 0.25],
            ("--consistency norm-sub", "mean estimates"),
        ),
        (
            ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=2, f=0, p="1/4", q="3/4"),
            "abab",
            ("--consistency", "Bloom RAPPOR", "--candidates"),
        ),
    ],
)
def test_aggregate_consistency_checked_before_reading(tmp_path, no_reading, spec, values, needles):
    spec_path, reports = _reports(tmp_path, spec, values)
    result = _run("aggregate", "--spec", spec_path, reports, "--consistency", "norm-sub")
    _one_line_error(result, *needles)


def test_aggregate_consistency_with_candidates_checked_before_reading(tmp_path, no_reading):
    spec = ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=2, f=0, p="1/4", q="3/4")
    spec_path, reports = _reports(tmp_path, spec, "abab")
    candidates = tmp_path / "candidates.txt"
    candidates.write_text("a\nb\n")
    result = _run(
        "aggregate", "--spec", spec_path, reports, "--candidates", candidates, "--consistency", "clip"
    )
    _one_line_error(result, "--consistency", "candidate decode")
