"""``ldp aggregate`` never loses a report and never crashes on bad input (issue 11, "Reliability").

* CSV quoting: a stray ``"`` costs its own line only, on every CSV path
  (bulk splitter, csv module, gzip, worker threads, Dask); a quoted field
  that legitimately spans lines still reads as one report.
* Text: group keys (and every other text field) that are not UTF-8 or hold
  a lone surrogate are rejects with a reason, in JSON Lines, CSV and Parquet,
  and whatever validation accepts, the writers can write.
* A fuzz test: random bytes, JSON, CSV and Parquet files for every report
  kind go through ``ldp aggregate``; the exit status is 0, 2 or 3, there is
  never a traceback, and valid + rejected equals the rows of the file.
  It is seeded (the project's derandomized Hypothesis profile) and takes a
  few seconds; the tests above it pin down what it and the issue found.
"""

from __future__ import annotations

import base64
import csv
import gzip
import io
import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import sample_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.cli import EXIT_REJECTS, aggregate
from ldp.aggregator.engines import aggregate_files
from ldp.aggregator.rejects import REASONS, RejectsWriter
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch
from ldp.errors import ReportError
from ldp.report import Report
from ldp.report_check import check_report, required_fields

SUMMARY = re.compile(r"([\d,]+) reports read from \d+ files?: ([\d,]+) valid, ([\d,]+) rejected")
GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
DUCHI = ldp.Duchi(epsilon=1.0, low=0, high=1)


def _spec_file(tmp_path, spec):
    path = tmp_path / f"spec-{spec.fingerprint}.json"
    path.write_text(spec.to_json())
    return str(path)


def _run(*args, **kwargs):
    return CliRunner().invoke(aggregate, [str(a) for a in args], **kwargs)


def _counts(result):
    """(read, valid, rejected) from the summary line (stderr; in the error message when nothing was valid)."""
    match = SUMMARY.search(result.stderr)
    assert match, result.stderr
    return tuple(int(g.replace(",", "")) for g in match.groups())


def _rejects(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _engine_result(spec, path, **options):
    with RejectsWriter() as rejects:
        accumulator, valid = aggregate_files(spec, [str(path)], rejects, **options)
    return accumulator, valid, rejects


def _text_cells(cells: list) -> pa.Array:
    """A string column holding exactly these cells (bytes, possibly not UTF-8; None for null)."""
    raw = [b"" if c is None else c for c in cells]
    offsets = np.cumsum([0] + [len(c) for c in raw]).astype(np.int32)
    valid = pa.array([c is not None for c in cells], pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(
        pa.string(),
        len(cells),
        [valid, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))],
        null_count=cells.count(None),
    )


# -- 1. CSV quoting --------------------------------------------------------------------


def _stray_quote_files(tmp_path, n=3000):
    """A clean CSV of ``n`` GRR reports, and the same file with three rows broken by a stray quote.

    The broken rows are line 12 (before the reader's first quote), line 2,500
    (in a later block) and the last line (the quote runs to the end of the
    file). Returns the clean file, the dirty one, the dirty one without its
    broken rows (what must be counted) and the broken rows' line numbers.
    """
    spec = GRR
    clean = tmp_path / "clean.csv"
    write_reports(encode_batch(spec, sample_values(spec, n), np.random.default_rng(1)), clean, spec)
    lines = clean.read_text().splitlines()
    broken = [12, 2500, n + 1]
    for number in broken:
        v, fingerprint, value = lines[number - 1].split(",")
        lines[number - 1] = f'{v},{fingerprint},"{value}'
    dirty = tmp_path / "dirty.csv"
    dirty.write_text("\n".join(lines) + "\n")
    kept = tmp_path / "kept.csv"
    kept.write_text("\n".join(line for k, line in enumerate(lines, 1) if k not in broken) + "\n")
    return clean, dirty, kept, broken


@pytest.mark.parametrize("chunk_size", [7, 100_000])
@pytest.mark.parametrize("route", ["local", "gzip", "threads"])
def test_a_stray_quote_costs_its_line_only(tmp_path, route, chunk_size):
    """The issue's file: one ``"`` swallowed every later line into one reject (10 valid, 1 rejected)."""
    _, dirty, kept, broken = _stray_quote_files(tmp_path)
    path, options = dirty, {"chunk_size": chunk_size}
    if route == "gzip":
        path = tmp_path / "dirty.csv.gz"
        path.write_bytes(gzip.compress(dirty.read_bytes()))
    if route == "threads":
        options.update(workers=2, partition_bytes=1_000)
    accumulator, valid, rejects = _engine_result(GRR, path, **options)
    reference, reference_valid, _ = _engine_result(GRR, kept)
    assert (valid, rejects.total) == (3000 - len(broken), len(broken))
    assert valid == reference_valid and accumulator == reference
    assert [(r.line, r.reason) for r in rejects.examples] == [(line, "unparseable") for line in broken]
    assert "only this line is rejected" in rejects.examples[0].detail


def test_a_stray_quote_costs_its_line_only_on_dask(tmp_path, scheduler):
    _, dirty, kept, broken = _stray_quote_files(tmp_path)
    accumulator, valid, rejects = _engine_result(
        GRR, dirty, engine="dask", scheduler=scheduler, chunk_size=64
    )
    reference, _, _ = _engine_result(GRR, kept)
    assert (valid, rejects.total) == (3000 - len(broken), len(broken)) and accumulator == reference


def test_a_stray_quote_through_the_cli(tmp_path):
    _, dirty, kept, broken = _stray_quote_files(tmp_path)
    spec_path = _spec_file(tmp_path, GRR)
    result = _run(
        "--spec", spec_path, dirty, "--rejects", tmp_path / "rejects.jsonl", "-o", tmp_path / "dirty-est.csv"
    )
    assert result.exit_code == EXIT_REJECTS, result.stderr
    assert _counts(result) == (3000, 3000 - len(broken), len(broken))
    rejects = _rejects(tmp_path / "rejects.jsonl")
    lines = dirty.read_text().splitlines()
    assert [(r["line"], r["raw"]) for r in rejects] == [(n, lines[n - 1]) for n in broken]  # the line alone
    assert _run("--spec", spec_path, kept, "-o", tmp_path / "kept-est.csv").exit_code == 0
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "dirty-est.csv"), pd.read_csv(tmp_path / "kept-est.csv")
    )


QUOTED = ldp.GRR(domain=("line\nbreak", "a,b", 'q"x', "two\n\nbreaks", "c"), epsilon=1.0)


@pytest.mark.parametrize("chunk_size", [1, 4, 100_000])
def test_quoted_fields_spanning_lines_are_one_report_next_to_stray_quotes(tmp_path, chunk_size):
    """Valid rows with line breaks inside quotes are counted once, also right after a stray quote.

    A valid row holds a blank line inside a quoted field (not a blank row);
    an undecodable line inside the runaway field of a stray quote is rejected
    on its own, in line order, when the lines after the stray quote are read again.
    """
    spec = QUOTED
    fp = spec.fingerprint
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[1, fp, value] for value in spec.domain])
    good = out.getvalue().encode()
    stray = f'1,{fp},"a'.encode()
    undecodable = b"1,\xff,c"
    data = (
        b"v,spec,value\n"
        + good
        + stray
        + b"\n"
        + undecodable
        + b"\n"
        + good
        + stray
        + b"\n\n"
        + stray
        + b"\n"
        + good
    )
    path = tmp_path / "q.csv"
    path.write_bytes(data)
    accumulator, valid, rejects = _engine_result(spec, path, chunk_size=chunk_size)
    reference = make_aggregator(spec)
    for value in spec.domain * 3:
        reference.add(Report(spec=fp, value=value))
    assert valid == 3 * len(spec.domain) and accumulator == reference
    lines = data.split(b"\n")
    expected = [k for k, line in enumerate(lines, 1) if line in (stray, undecodable)]
    assert [(r.line, r.reason) for r in rejects.examples] == [(k, "unparseable") for k in expected]
    assert rejects.total == len(expected) == 4


def test_an_unclosed_quote_on_the_last_line_is_a_csv_error(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(f'v,spec,value\n1,{GRR.fingerprint},a\n1,{GRR.fingerprint},"b')
    _, valid, rejects = _engine_result(GRR, path)
    assert valid == 1 and [(r.line, r.reason) for r in rejects.examples] == [(3, "unparseable")]
    assert "CSV error" in rejects.examples[0].detail


def test_quoting_is_strict_and_blank_means_white_space(tmp_path):
    """``"a"b`` is a CSV error (the lenient reader made it ``ab``); ``""`` is a row, not a blank line."""
    fp = GRR.fingerprint
    path = tmp_path / "r.csv"
    path.write_text(f'v,spec,value\n1,{fp},"a"b\n \t\n""\n1,{fp},"a"\n\x0b\n1,{fp},b\n')
    _, valid, rejects = _engine_result(GRR, path)
    assert valid == 2
    assert [(r.line, r.reason) for r in rejects.examples] == [(2, "unparseable"), (4, "unparseable")]
    assert "CSV error" in rejects.examples[0].detail and "1 fields" in rejects.examples[1].detail


# -- 2. Text: group keys and the other string fields ---------------------------------------


def _grouped_lines(spec, n, seed=0):
    """``n`` valid JSON lines of ``spec`` with group keys g0, g1, g2."""
    batch = encode_batch(spec, sample_values(spec, n), np.random.default_rng(seed))
    return [r.with_group(f"g{k % 3}").to_json().encode() for k, r in enumerate(batch.reports(spec))]


BAD_GROUPS = {  # the raw JSON text of a bad group value -> reason
    "not UTF-8": (b'"g\xff"', "unparseable"),
    "lone surrogate": (b'"\\ud800"', "bad_group"),
    "lone low surrogate": (b'"x\\udfff"', "bad_group"),
    "surrogate bytes (CESU-8)": (b'"\xed\xa0\x80"', "unparseable"),
}


@pytest.mark.parametrize("bad", sorted(BAD_GROUPS))
@pytest.mark.parametrize("n", [10, 100])  # 100 lines: parsed by Arrow in one block
@pytest.mark.parametrize("engine", ["local", "threads"])
def test_a_bad_group_key_is_a_reject_in_json_lines(tmp_path, bad, n, engine):
    """The issue: a non-UTF-8 group in a block of 32+ lines crashed with a pyarrow traceback; a lone
    surrogate passed validation and then crashed the --by-group output. Both are rejects now."""
    text, reason = BAD_GROUPS[bad]
    lines = _grouped_lines(DUCHI, n)
    lines[5] = lines[5].replace(b'"g2"', text)
    assert lines[5] != _grouped_lines(DUCHI, n)[5]
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    extra = ["--workers", "2"] if engine == "threads" else []
    for output in ("est.csv", "est.json", "est.jsonl", "est.parquet", "-"):
        result = _run(
            "--spec",
            _spec_file(tmp_path, DUCHI),
            path,
            "--by-group",
            "--rejects",
            tmp_path / "rejects.jsonl",
            "-o",
            output if output == "-" else tmp_path / output,
            *extra,
        )
        assert result.exit_code == EXIT_REJECTS, result.output
        assert _counts(result) == (n, n - 1, 1)
        assert [(r["line"], r["reason"]) for r in _rejects(tmp_path / "rejects.jsonl")] == [(6, reason)]
    table = pd.read_csv(tmp_path / "est.csv", keep_default_na=False)
    assert table["group"].tolist() == ["g0", "g1", "g2", ""]


def test_a_bad_group_key_is_a_reject_on_dask(tmp_path, scheduler):
    lines = _grouped_lines(DUCHI, 100)
    lines[5] = lines[5].replace(b'"g2"', b'"g\xff"')
    lines[7] = lines[7].replace(b'"g1"', b'"\\ud800"')
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    accumulator, valid, rejects = _engine_result(DUCHI, path, engine="dask", scheduler=scheduler)
    assert valid == 98 and [(r.line, r.reason) for r in rejects.examples] == [
        (6, "unparseable"),
        (8, "bad_group"),
    ]
    assert sorted(accumulator.groups) == ["g0", "g1", "g2"]


def _parquet_with_raw_groups(path, spec, groups: list[bytes | None]):
    """A Parquet file of valid reports whose ``group`` column holds exactly the given bytes (UTF-8 or not)."""
    n = len(groups)
    batch = encode_batch(spec, sample_values(spec, n), np.random.default_rng(2))
    write_reports(batch, path, spec)
    table = pq.read_table(path).append_column("group", _text_cells(groups))
    table = table.set_column(0, "v", pa.array([1 if g is None else 2 for g in groups], pa.int8()))
    pq.write_table(table, path)


@pytest.mark.parametrize("by_group", [False, True])
def test_a_bad_group_key_in_parquet_rejects_its_row(tmp_path, by_group):
    """Parquet does not check that strings are UTF-8: such a key (or a surrogate's bytes) is a bad_group reject."""
    groups = [b"g0", b"g\xff", None, b"\xed\xa0\x80", b"g1", "é".encode(), b"", b"g0"]
    path = tmp_path / "r.parquet"
    _parquet_with_raw_groups(path, DUCHI, groups)
    extra = ["--by-group"] if by_group else []
    result = _run(
        "--spec",
        _spec_file(tmp_path, DUCHI),
        path,
        "--rejects",
        tmp_path / "rejects.jsonl",
        "-o",
        tmp_path / "est.parquet",
        *extra,
    )
    assert result.exit_code == EXIT_REJECTS, result.output
    assert _counts(result) == (8, 5, 3)
    rejects = _rejects(tmp_path / "rejects.jsonl")
    assert [(r["line"], r["reason"]) for r in rejects] == [
        (2, "bad_group"),
        (4, "bad_group"),
        (7, "bad_group"),
    ]
    assert '"group": "g\\\\xff"' in rejects[0]["raw"]  # the raw row shows the bytes
    if by_group:
        groups = pd.read_parquet(tmp_path / "est.parquet")["group"].tolist()
        assert groups[:3] == ["g0", "g1", "é"] and pd.isna(groups[3])  # the overall row


def test_group_text_rule_is_the_same_for_one_report_and_for_columns():
    """check_group is the one rule: Report refuses a surrogate; the column validator refuses the same rows."""
    from ldp.aggregator.report_columns import validate_columns

    keys = ["g", "\ud800", "é", "", "x" * 256, "x" * 257, "a\tb", "\U0001f600", "\u2028"]
    for key in keys:
        try:
            check_report(DUCHI, Report(spec=DUCHI.fingerprint, value=1.0, group=key))
            accepted = True
        except ReportError:
            accepted = False
        column = pa.array([key.encode("utf-8", "surrogatepass")], pa.binary()).cast(pa.string(), safe=False)
        ok, _ = validate_columns(
            DUCHI,
            {
                "v": pa.array([2]),
                "spec": pa.array([DUCHI.fingerprint]),
                "value": pa.array([1.0]),
                "group": column,
            },
            1,
        )
        assert bool(ok[0]) == accepted, key
    with pytest.raises(ReportError, match="lone surrogate U\\+D800"):
        Report(spec=DUCHI.fingerprint, value=1.0, group="\ud800")


STRING_FIELDS = [  # (spec, JSON text of a report with a lone surrogate somewhere, reason)
    (GRR, '{{"v": 1, "spec": "{fp}", "value": "\\ud800"}}', "bad_encoding"),
    (GRR, '{{"v": 1, "spec": "{fp}", "value": "a", "client": "\\udc80"}}', "bad_encoding"),
    (GRR, '{{"v": 1, "spec": "\\ud800{fp}", "value": "a"}}', "wrong_spec"),
    (GRR, '{{"v": 1, "spec": "{fp}", "value": "a", "\\ud800": 1}}', "unexpected_field"),
    (GRR, '{{"v": 1, "spec": "{fp}", "value": "a\\ud800"}}', "bad_encoding"),
]


@pytest.mark.parametrize("n", [3, 60])
@pytest.mark.parametrize("case", range(len(STRING_FIELDS)))
@pytest.mark.parametrize("rejects_name", ["rejects.jsonl", "rejects.csv.gz"])
def test_surrogates_in_other_text_fields_are_rejects_and_the_rejects_file_is_written(
    tmp_path, case, n, rejects_name
):
    spec, template, reason = STRING_FIELDS[case]
    good = [f'{{"v": 1, "spec": "{spec.fingerprint}", "value": "{spec.domain[k % 3]}"}}' for k in range(n)]
    good[1] = template.format(fp=spec.fingerprint)
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(good) + "\n")
    rejects = tmp_path / rejects_name
    result = _run(
        "--spec", _spec_file(tmp_path, spec), path, "--rejects", rejects, "-o", tmp_path / "est.csv"
    )
    assert result.exit_code == EXIT_REJECTS, result.output
    assert _counts(result) == (n, n - 1, 1)
    if rejects_name.endswith(".jsonl"):
        [record] = _rejects(rejects)
        assert (record["line"], record["reason"]) == (2, reason)
    else:
        [record] = list(csv.DictReader(io.StringIO(gzip.decompress(rejects.read_bytes()).decode("utf-8"))))
        assert (record["line"], record["reason"]) == ("2", reason)


def test_a_report_file_name_that_is_not_utf8_does_not_crash_the_rejects_writer(tmp_path):
    """Python hands such a name over with lone surrogates; the rejects file writes them as escapes."""
    name = tmp_path / "r\udcff.jsonl"
    try:
        name.write_text(f'{{"v": 1, "spec": "{GRR.fingerprint}", "value": "a"}}\njunk\n')
    except (OSError, UnicodeEncodeError):  # pragma: no cover - a file system that refuses the name
        pytest.skip("file system refuses names that are not UTF-8")
    for rejects in (tmp_path / "rejects.jsonl", tmp_path / "rejects.csv"):
        result = _run(
            "--spec", _spec_file(tmp_path, GRR), name, "--rejects", rejects, "-o", tmp_path / "est.csv"
        )
        assert result.exit_code == EXIT_REJECTS, result.output
        assert "r\\udcff.jsonl" in rejects.read_text(encoding="utf-8")
    [record] = [
        json.loads(line) for line in (tmp_path / "rejects.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert record["file"] == str(name) and record["line"] == 2


def test_group_keys_are_written_in_every_estimates_format_and_on_any_terminal(tmp_path, monkeypatch):
    """Every key the rule accepts is written by every writer, also to a stdout that cannot encode it."""
    from ldp.aggregator.writers import write_estimates

    keys = ["é", "\U0001f600", "a,b", 'q"x', "\u2028", " lead", "x" * 256, "1.0", "null", "NaN"]
    accumulator = make_aggregator(DUCHI)
    batch = encode_batch(DUCHI, sample_values(DUCHI, 40), np.random.default_rng(4))
    accumulator.add_batch(batch, groups=[keys[k % len(keys)] for k in range(40)])
    table = accumulator.estimate(by_group=True, with_overall=True)
    for name in ("est.csv", "est.json", "est.jsonl", "est.parquet"):
        write_estimates(table, tmp_path / name)
    back = {
        "est.csv": pd.read_csv(tmp_path / "est.csv", keep_default_na=False, dtype={"group": str})[
            "group"
        ].tolist(),
        "est.json": [row["group"] for row in json.loads((tmp_path / "est.json").read_text(encoding="utf-8"))],
        "est.jsonl": [
            json.loads(line)["group"]
            for line in (tmp_path / "est.jsonl").read_text(encoding="utf-8").splitlines()
        ],
        "est.parquet": pq.read_table(tmp_path / "est.parquet").column("group").to_pylist(),
    }
    expected = sorted(keys)
    for name, groups in back.items():
        assert groups[:-1] == expected, name
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr("sys.stdout", ascii_out)
    write_estimates(table)
    ascii_out.flush()
    text = ascii_out.buffer.getvalue().decode("ascii")
    assert "\\xe9" in text and "\\U0001f600" in text and "(all)" in text


def _valid_table(spec, n=6, seed=3):
    """``n`` valid reports as an Arrow table (columns v, spec, value, ...)."""
    batch = encode_batch(spec, sample_values(spec, n), np.random.default_rng(seed))
    return pa.Table.from_pylist([report.to_dict() for report in batch.reports(spec)])


PARQUET_SHAPES = {  # name -> (change to a valid table of 6 GRR reports, rows valid after it)
    "duplicate column, one set": (lambda t: t.append_column("value", pa.nulls(6, pa.string())), 6),
    "duplicate column, both set": (lambda t: t.append_column("value", t.column("value")), 0),
    "spec as a list": (lambda t: t.set_column(1, "spec", pa.array([[1]] * 6)), 0),
    "spec as integers": (lambda t: t.set_column(1, "spec", pa.array(range(6))), 0),
    "a timestamp Python cannot hold": (
        lambda t: t.append_column("client", pa.array([2**62] * 6, pa.timestamp("us"))),
        0,
    ),
    "value as a struct": (lambda t: t.set_column(2, "value", pa.array([{"a": 1}] * 6)), 0),
}


@pytest.mark.parametrize("shape", sorted(PARQUET_SHAPES))
def test_parquet_files_of_any_shape_give_rejects_not_crashes(tmp_path, shape):
    """Duplicate column names, a spec column Arrow cannot read as a dictionary, cells Python cannot hold."""
    change, valid = PARQUET_SHAPES[shape]
    path = tmp_path / "r.parquet"
    pq.write_table(change(_valid_table(GRR)), path)
    result = _run(
        "--spec",
        _spec_file(tmp_path, GRR),
        path,
        "--rejects",
        tmp_path / "rejects.jsonl",
        "-o",
        tmp_path / "est.csv",
    )
    assert result.exit_code == (0 if valid == 6 else 2), result.output
    assert "Traceback" not in result.output
    assert _counts(result) == (6, valid, 6 - valid)
    assert all(r["reason"] in REASONS for r in _rejects(tmp_path / "rejects.jsonl"))


def test_docstrings_hold_no_lone_surrogates():
    """A docstring that mentions ``"\\ud800"`` with one backslash holds the surrogate itself (help() cannot print it)."""
    import importlib
    import inspect
    import pkgutil

    import ldp.aggregator

    names = [
        "ldp.report",
        "ldp.report_check",
        *(f"ldp.aggregator.{m.name}" for m in pkgutil.iter_modules(ldp.aggregator.__path__)),
    ]
    for name in names:
        module = importlib.import_module(name)
        objects = [
            module,
            *(obj for _, obj in inspect.getmembers(module) if getattr(obj, "__module__", None) == name),
        ]
        for obj in objects:
            for doc in [
                obj.__doc__,
                *(getattr(m, "__doc__", None) for _, m in inspect.getmembers(obj, inspect.isfunction)),
            ]:
                (doc or "").encode("utf-8")


# -- what the fuzz test below found -------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "parquet-int64", "parquet-uint64"])
def test_numeric_integer_values_beyond_2_to_53_are_rejects(tmp_path, fmt):
    """An integer value column holding 5920939628865251564: Arrow's safe cast to double raised and lost the file."""
    spec = DUCHI
    values = [1] * 40
    values[3] = 5920939628865251564
    if fmt == "parquet-uint64":
        values[4] = 2**64 - 1
    rows = [{"v": 1, "spec": spec.fingerprint, "value": v} for v in values]
    path = tmp_path / ("r.jsonl" if fmt == "jsonl" else "r.parquet")
    if fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    else:
        table = pa.table(
            {
                "v": [1] * 40,
                "spec": [spec.fingerprint] * 40,
                "value": pa.array(values, pa.int64() if fmt == "parquet-int64" else pa.uint64()),
            }
        )
        pq.write_table(table, path)
    result = _run("--spec", _spec_file(tmp_path, spec), path, "--rejects", tmp_path / "rejects.jsonl")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert _counts(result) == (40, 0, 40)  # 1 is not an output of Duchi either: every row is a reject
    assert {r["reason"] for r in _rejects(tmp_path / "rejects.jsonl")} <= {
        "value_out_of_domain",
        "bad_encoding",
    }


# -- 5. Fuzz: any file through ldp aggregate --------------------------------------------------
#
# Hypothesis draws a seed (and the kind, format and options); the file is made
# from the seed by a plain random generator, which puts many kinds of damage
# in every file (Hypothesis's own generation favours small, simple examples).
# With the project's derandomized profile the seeds, hence the files, are the
# same on every run; a failure names its seed.

KINDS = {  # one spec per report kind
    "value": ldp.GRR(domain=("a", "b,c", 'q"x', "é"), epsilon=1.0),
    "seed+value": ldp.OLH(domain=tuple(range(8)), epsilon=1.0),
    "bits": ldp.OUE(domain=tuple(f"v{i}" for i in range(10)), epsilon=1.0),
    "cohort+bits": ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/4", p="1/4", q="3/4"),
    "numeric": DUCHI,
}
_FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _valid_dicts(spec, n=12):
    """``n`` valid reports of ``spec`` as JSON dicts, every third one with a group key."""
    batch = encode_batch(spec, sample_values(spec, n), np.random.default_rng(7))
    return [
        (r.with_group(f"g{k % 2}") if k % 3 == 0 else r).to_dict() for k, r in enumerate(batch.reports(spec))
    ]


_VALID = {kind: _valid_dicts(spec) for kind, spec in KINDS.items()}
_FIELDS = ["v", "spec", "value", "seed", "bits", "cohort", "client", "group"]
_ODD_TEXT = [
    "",
    " ",
    "\ud800",
    "a\udfff",
    "é",
    "\U0001f600",
    "\u2028",
    "\x00",
    '"',
    'a"b',
    "\r",
    "\n",
    "AAA=",
    "====",
    "0123456789abcdef",
    "NaN",
    "1e999",
    "-0",
    "1.0",
    "9" * 400,
]
_RAW_TEXT = [
    b'"g\xff"',
    b'"\xed\xa0\x80"',
    b'"\\ud800"',
    b'"\xc3"',
    b'"\\u0000"',
    b'"\xf0\x9f\x98\x80"',
    b'"\\udfff\\ud800"',
]
_PATHOLOGICAL = [
    b"[" * 3000 + b"]" * 3000,
    b"{" * 2000,
    b'{"v": 1, "seed": ' + b"9" * 5000 + b"}",
    b"null",
    b"[]",
    b'"\\ud800"',
    b"1e999999",
    b'{"v": 1e400}',
    b"\xef\xbb\xbf{}",
    b"\x00",
    b'{"v": 1, "v": 2}',
    b"NaN",
]


def _text(rng) -> str:
    """Short random text: ASCII, any code point (surrogates included), or an odd sample."""
    if rng.random() < 0.3:
        return rng.choice(_ODD_TEXT)
    return "".join(
        chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x10FFFF)])) for _ in range(rng.randint(0, 6))
    )


def _json_value(rng, depth=0):
    """A random JSON value: scalars of every type and size, odd text, small nested arrays and objects."""
    roll = rng.random()
    if depth < 2 and roll < 0.1:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2 and roll < 0.2:
        return {_text(rng): _json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return rng.choice(
        [
            None,
            True,
            False,
            rng.randint(-(2**70), 2**70),
            rng.randint(-3, 20),
            rng.uniform(-9, 9),
            float("nan"),
            float("inf"),
            1e308,
            2.0,
            _text(rng),
            rng.choice(_ODD_TEXT),
        ]
    )


def _json_bytes(data, rng) -> bytes:
    """``data`` as one JSON line; lone surrogates become \\u escapes or their raw (not UTF-8) bytes."""
    return json.dumps(data, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")


def _changed(line: bytes, rng) -> bytes:
    """``line`` cut short, or with one byte replaced (never by a newline)."""
    if rng.random() < 0.5:
        return line[: rng.randint(0, len(line))]
    k = rng.randint(0, max(len(line) - 1, 0))
    return line[:k] + bytes([rng.choice([b for b in range(256) if b != 10])]) + line[k + 1 :]


def _bad_json_line(kind, rng) -> bytes:
    valid = rng.choice(_VALID[kind])
    category = rng.choice(["fields", "fields", "raw text", "raw text", "changed", "bytes", "pathological"])
    if category == "fields":  # fields set to anything, removed, or added
        data = dict(valid)
        for _ in range(rng.randint(1, 3)):
            name = rng.choice([*_FIELDS, "extra", "\ud800"])
            if rng.random() < 0.25:
                data.pop(name, None)
            else:
                data[name] = _json_value(rng)
        return _json_bytes(data, rng)
    if category == "raw text":  # a text field holding bytes that are not UTF-8, or escapes of surrogates
        data = dict(valid, **{rng.choice(["group", "group", "client", "spec", "value"]): "\x01HOLE\x01"})
        return json.dumps(data).encode().replace(b'"\\u0001HOLE\\u0001"', rng.choice(_RAW_TEXT))
    if category == "changed":
        return _changed(json.dumps(valid).encode(), rng)
    if category == "bytes":
        return bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 30))).replace(b"\n", b" ")
    return rng.choice(_PATHOLOGICAL)


def _with_bad_lines(valid: list[bytes], bad, rng) -> list[bytes]:
    """Many valid lines (whole blocks for the readers), a few bad ones among them, blank lines in half the files."""
    offset = rng.randint(0, len(valid) - 1)
    count = rng.choice(
        [0, rng.randint(1, 31), rng.randint(32, 120), rng.randint(32, 120)]
    )  # 32+: Arrow parses a block
    lines = [valid[(offset + k) % len(valid)] for k in range(count)]
    blanks = rng.random() < 0.5
    for _ in range(rng.randint(0, 8)):
        line = rng.choice([b"", b"  ", b"\r", b"\t\x0b"]) if blanks and rng.random() < 0.2 else bad(rng)
        lines.insert(rng.randint(0, len(lines)), line)
    return lines


def _csv_line(row, rng) -> bytes:
    """One CSV row: quoted as csv writes it (a cell with a line break spans lines), or cells joined as they are."""
    if rng.random() < 0.3:
        return ",".join(map(str, row)).replace("\n", " ").encode("utf-8", "surrogatepass")
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(row)
    return out.getvalue()[:-1].encode("utf-8", "surrogatepass")


def _bad_csv_line(header, valid_rows, rng) -> bytes:
    category = rng.choice(["cells", "cells", "changed", "odd"])
    if category == "cells":  # random cells, sometimes one too many or too few
        row = list(rng.choice(valid_rows))
        for _ in range(rng.randint(1, 3)):
            cell = rng.choice([_text(rng), str(rng.randint(-(2**70), 2**70)), rng.choice(_ODD_TEXT)])
            roll = rng.random()
            if roll < 0.15:
                row.append(cell)
            elif roll < 0.25 and row:
                row.pop()
            elif row:
                row[rng.randint(0, len(row) - 1)] = cell
        return _csv_line(row, rng)
    if category == "changed":
        return _changed(_csv_line(rng.choice(valid_rows), rng), rng)
    return rng.choice([b"9" * 5000, b"1,\x00,2", b'"', b'"a""', b"\xff\xfe", b'""', b'1,"a"b', b"\r", b",,,"])


def _non_blank_lines(data: bytes) -> int:
    """Lines holding anything but ASCII white space: the reports (rows) of a text report file."""
    return sum(1 for line in data.split(b"\n") if line.strip(b" \t\r\n\f\v"))


def _check_run(result, rows, rejects_path):
    """The invariants of any run: exit 0, 2 or 3, no traceback, one-line errors, every row counted once."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2, 3), result.output
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    if result.exit_code == 2:
        assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("Error: "), (
            result.stderr
        )
    if rows is None:  # a file that is not Parquet at all: a one-line error is the answer
        return
    read, valid, rejected = _counts(result)
    assert read == valid + rejected == rows, (read, valid, rejected, rows)
    text = rejects_path.read_text(encoding="utf-8")
    records = (
        text.splitlines() if rejects_path.suffix == ".jsonl" else list(csv.DictReader(io.StringIO(text)))
    )
    assert len(records) == rejected


_options = st.fixed_dictionaries(
    {
        "chunk_size": st.sampled_from(
            [1, 3, 100_000, 100_000]
        ),  # mostly whole blocks (Arrow's path), sometimes tiny
        "workers": st.sampled_from([None, 2]),
        "rejects": st.sampled_from(["rejects.jsonl", "rejects.csv"]),
        "output": st.sampled_from([None, "est.csv", "est.json", "est.jsonl", "est.parquet"]),
        "by_group": st.booleans(),
    }
)


def _aggregate(directory, spec, path, options):
    args = [
        "--spec",
        _spec_file(directory, spec),
        path,
        "--chunk-size",
        options["chunk_size"],
        "--rejects",
        directory / options["rejects"],
    ]
    if options["workers"]:
        args += ["--workers", options["workers"]]
    if options["output"]:
        args += ["-o", directory / options["output"]]
    if options["by_group"] and spec.report_kind == "numeric":
        args.append("--by-group")
    return _run(*args)


def _text_file(directory, name: str, content: bytes, gz: bool):
    path = directory / (name + ".gz" if gz else name)
    path.write_bytes(gzip.compress(content) if gz else content)
    return path


@pytest.mark.slow
@_FUZZ
@given(
    seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(sorted(KINDS)), options=_options, gz=st.booleans()
)
def test_fuzz_json_lines(tmp_path_factory, seed, kind, options, gz):
    import random

    rng = random.Random(seed)
    valid = [json.dumps(d, ensure_ascii=False).encode() for d in _VALID[kind]]
    lines = _with_bad_lines(valid, lambda r: _bad_json_line(kind, r), rng)
    line_end = rng.choice([b"\n", b"\r\n"])
    content = line_end.join(lines) + (line_end if lines and rng.random() < 0.7 else b"")
    directory = tmp_path_factory.mktemp("fuzz-jsonl")
    path = _text_file(directory, "r.jsonl", content, gz)
    _check_run(
        _aggregate(directory, KINDS[kind], path, options),
        _non_blank_lines(content),
        directory / options["rejects"],
    )


@pytest.mark.slow
@_FUZZ
@given(
    seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(sorted(KINDS)), options=_options, gz=st.booleans()
)
def test_fuzz_csv(tmp_path_factory, seed, kind, options, gz):
    """Rows quoted by csv (line breaks inside quotes), rows joined raw (stray quotes), odd cells and bytes.

    No row that spans lines is a valid report here (no field of these specs
    may hold a line break), so every non-blank line after the header is one
    report: valid, or rejected.
    """
    import random

    rng = random.Random(seed)
    spec = KINDS[kind]
    header = ["v", "spec", *required_fields(spec), *(["group"] if rng.random() < 0.5 else [])]
    valid_rows = [[d.get(name, "") for name in header] for d in _VALID[kind]]
    valid = [_csv_line(row, rng) for row in valid_rows]
    lines = _with_bad_lines(valid, lambda r: _bad_csv_line(header, valid_rows, r), rng)
    line_end = rng.choice([b"\n", b"\r\n"])
    bom = b"\xef\xbb\xbf" if rng.random() < 0.2 else b""
    content = bom + line_end.join([",".join(header).encode(), *lines]) + line_end
    directory = tmp_path_factory.mktemp("fuzz-csv")
    path = _text_file(directory, "r.csv", content, gz)
    _check_run(
        _aggregate(directory, spec, path, options),
        _non_blank_lines(content) - 1,
        directory / options["rejects"],
    )


def _maybe(rng, make):
    return None if rng.random() < 0.15 else make()


def _column(rng, n: int) -> pa.Array:
    """A column of ``n`` rows of some Arrow type, with nulls, odd values and text that may not be UTF-8."""
    kind = rng.choice(
        [
            "int",
            "uint",
            "int8",
            "float",
            "bool",
            "string",
            "large",
            "dictionary",
            "bad-utf8",
            "binary",
            "fixed",
            "list",
            "struct",
            "null",
            "timestamp",
        ]
    )
    cells = lambda make: [_maybe(rng, make) for _ in range(n)]  # noqa: E731
    if kind in ("int", "uint", "int8"):
        bounds, arrow = {
            "int": ((-(2**63), 2**63 - 1), pa.int64()),
            "uint": ((0, 2**64 - 1), pa.uint64()),
            "int8": ((-128, 127), pa.int8()),
        }[kind]
        return pa.array(
            cells(lambda: rng.choice([rng.randint(*bounds), rng.randint(max(bounds[0], -2), 20)])), arrow
        )
    if kind == "float":
        return pa.array(
            cells(lambda: rng.choice([rng.uniform(-3, 3), float("nan"), float("inf"), 0.5])), pa.float64()
        )
    if kind == "bool":
        return pa.array(cells(lambda: rng.random() < 0.5), pa.bool_())
    if kind in ("string", "large", "dictionary"):
        array = pa.array(
            cells(lambda: _text(rng).encode("utf-8", "replace").decode()),
            pa.large_string() if kind == "large" else pa.string(),
        )
        return array.dictionary_encode() if kind == "dictionary" else array
    if kind == "bad-utf8":
        return _text_cells(cells(lambda: bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 4)))))
    if kind == "binary":
        return pa.array(
            cells(lambda: bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 4)))), pa.binary()
        )
    if kind == "fixed":
        return pa.array(cells(lambda: bytes([rng.randint(0, 255), rng.randint(0, 255)])), pa.binary(2))
    if kind == "list":
        return pa.array(
            cells(lambda: [rng.randint(0, 9) for _ in range(rng.randint(0, 2))]), pa.list_(pa.int64())
        )
    if kind == "struct":
        return pa.array(cells(lambda: {"a": rng.randint(0, 9)}), pa.struct([("a", pa.int64())]))
    if kind == "timestamp":
        return pa.array(cells(lambda: rng.randint(-(2**62), 2**62)), pa.timestamp("us"))
    return pa.nulls(n)


def _patched(rng, column) -> pa.Array:
    """``column`` with a few cells changed but its type kept: bad text or odd integers among good ones, or nulls."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if pa.types.is_large_string(column.type):
        column = column.cast(pa.string())
    rows = [rng.randint(0, len(column) - 1) for _ in range(rng.randint(1, 3))] if len(column) else []
    if pa.types.is_string(column.type):
        cells = column.cast(pa.binary()).to_pylist()  # as bytes: the text may not be UTF-8 already
        for k in rows:
            cells[k] = rng.choice([None, b"", b"g\xff", b"\xed\xa0\x80", b"\xc3", "é".encode()])
        return _text_cells(cells)
    if pa.types.is_integer(column.type):
        bounds = np.iinfo(column.type.to_pandas_dtype())
        cells = column.to_pylist()
        for k in rows:
            cells[k] = rng.choice([None, -1, 2**40, rng.randint(int(bounds.min), int(bounds.max))])
        return pa.array(
            [c if c is None or bounds.min <= c <= bounds.max else None for c in cells], column.type
        )
    nulls = np.zeros(len(column), dtype=bool)  # other types (Python may not hold their values): nulls
    nulls[rows] = True
    return pc.if_else(pa.array(nulls), pa.scalar(None, column.type), column)


def _fuzzed_parquet_table(kind, rng) -> pa.Table:
    """Valid reports whose columns are patched, replaced by other types, added twice or dropped."""
    offset = rng.randint(0, len(_VALID[kind]) - 1)
    reports = [
        _VALID[kind][(offset + k) % len(_VALID[kind])] for k in range(rng.choice([0, rng.randint(1, 60)]))
    ]
    table = pa.Table.from_pylist(reports) if reports else pa.table({"v": pa.array([], pa.int64())})
    if "bits" in table.column_names:  # bits as binary, as the writers store them
        bits = [None if b is None else base64.b64decode(b) for b in table.column("bits").to_pylist()]
        table = table.set_column(table.column_names.index("bits"), "bits", pa.array(bits, pa.binary()))
    for _ in range(rng.randint(0, 3)):
        action = rng.choice(["patch", "patch", "replace", "add", "drop"])
        position = rng.randint(0, table.num_columns - 1)
        if action == "drop" and table.num_columns > 1:
            table = table.remove_column(position)
        elif action in ("patch", "replace"):
            new = _patched(rng, table.column(position)) if action == "patch" else _column(rng, table.num_rows)
            table = table.set_column(position, table.column_names[position], new)
        else:
            table = table.append_column(rng.choice([*_FIELDS, "extra"]), _column(rng, table.num_rows))
    return table


@pytest.mark.slow
@_FUZZ
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(sorted(KINDS)), options=_options)
def test_fuzz_parquet(tmp_path_factory, seed, kind, options):
    """Wrong types, missing and duplicated columns, text that is not UTF-8, several row groups."""
    import random

    rng = random.Random(seed)
    table = _fuzzed_parquet_table(kind, rng)
    directory = tmp_path_factory.mktemp("fuzz-parquet")
    path = directory / "r.parquet"
    pq.write_table(table, path, row_group_size=rng.choice([2, 7, None]))
    _check_run(
        _aggregate(directory, KINDS[kind], path, options), table.num_rows, directory / options["rejects"]
    )


@pytest.mark.slow
@_FUZZ
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(sorted(KINDS)))
def test_fuzz_files_that_are_not_parquet(tmp_path_factory, seed, kind):
    """Random bytes, or a real Parquet file cut short or with junk appended: a one-line error, never a traceback."""
    import random

    rng = random.Random(seed)
    directory = tmp_path_factory.mktemp("fuzz-not-parquet")
    real = directory / "real.parquet"
    pq.write_table(pa.Table.from_pylist(_VALID[kind]), real)
    data = real.read_bytes()
    path = directory / "r.parquet"
    path.write_bytes(
        data[: rng.randint(0, len(data))] + bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 100)))
    )
    options = {
        "chunk_size": 100_000,
        "workers": None,
        "rejects": "rejects.jsonl",
        "output": None,
        "by_group": False,
    }
    _check_run(_aggregate(directory, KINDS[kind], path, options), None, directory / "rejects.jsonl")
