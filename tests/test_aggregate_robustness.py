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
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
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


def _values(spec, n):
    if spec.report_kind == "numeric":
        return np.linspace(0.05, 0.95, n)
    if spec.report_kind == "rappor":
        return [f"u{i % 5}" for i in range(n)]
    return [spec.domain[i % len(spec.domain)] for i in range(n)]


# -- 1. CSV quoting --------------------------------------------------------------------


def _stray_quote_files(tmp_path, n=3000):
    """A clean CSV of ``n`` GRR reports, and the same file with three rows broken by a stray quote.

    The broken rows are line 12 (before the reader's first quote), line 2,500
    (in a later block) and the last line (the quote runs to the end of the
    file). Returns (clean path, dirty path, line numbers of the broken rows).
    """
    spec = GRR
    clean = tmp_path / "clean.csv"
    write_reports(encode_batch(spec, _values(spec, n), np.random.default_rng(1)), clean, spec)
    lines = clean.read_text().splitlines()
    broken = [12, 2500, n + 1]
    for number in broken:
        v, fingerprint, value = lines[number - 1].split(",")
        lines[number - 1] = f'{v},{fingerprint},"{value}'
    dirty = tmp_path / "dirty.csv"
    dirty.write_text("\n".join(lines) + "\n")
    kept = tmp_path / "kept.csv"  # the dirty file without its broken rows: what must be counted
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
    accumulator, valid, rejects = _engine_result(GRR, dirty, engine="dask", scheduler=scheduler, chunk_size=64)
    reference, _, _ = _engine_result(GRR, kept)
    assert (valid, rejects.total) == (3000 - len(broken), len(broken)) and accumulator == reference


def test_a_stray_quote_through_the_cli(tmp_path):
    _, dirty, kept, broken = _stray_quote_files(tmp_path)
    spec_path = _spec_file(tmp_path, GRR)
    result = _run("--spec", spec_path, dirty, "--rejects", tmp_path / "rejects.jsonl", "-o", tmp_path / "dirty-est.csv")
    assert result.exit_code == EXIT_REJECTS, result.stderr
    assert _counts(result) == (3000, 3000 - len(broken), len(broken))
    rejects = _rejects(tmp_path / "rejects.jsonl")
    lines = dirty.read_text().splitlines()
    assert [(r["line"], r["raw"]) for r in rejects] == [(n, lines[n - 1]) for n in broken]  # the line alone
    assert _run("--spec", spec_path, kept, "-o", tmp_path / "kept-est.csv").exit_code == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "dirty-est.csv"), pd.read_csv(tmp_path / "kept-est.csv"))


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
    data = b"v,spec,value\n" + good + stray + b"\n" + undecodable + b"\n" + good + stray + b"\n\n" + stray + b"\n" + good
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
    batch = encode_batch(spec, _values(spec, n), np.random.default_rng(seed))
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
        result = _run("--spec", _spec_file(tmp_path, DUCHI), path, "--by-group", "--rejects", tmp_path / "rejects.jsonl",
                      "-o", output if output == "-" else tmp_path / output, *extra)
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
    assert valid == 98 and [(r.line, r.reason) for r in rejects.examples] == [(6, "unparseable"), (8, "bad_group")]
    assert sorted(accumulator.groups) == ["g0", "g1", "g2"]


def _parquet_with_raw_groups(path, spec, groups: list[bytes | None]):
    """A Parquet file of valid reports whose ``group`` column holds exactly the given bytes (UTF-8 or not)."""
    n = len(groups)
    batch = encode_batch(spec, _values(spec, n), np.random.default_rng(2))
    write_reports(batch, path, spec)
    table = pq.read_table(path)
    data = b"".join(g or b"" for g in groups)
    offsets = np.cumsum([0] + [len(g or b"") for g in groups]).astype(np.int32)
    valid = pa.array([g is not None for g in groups]).buffers()[1]
    column = pa.Array.from_buffers(pa.string(), n, [valid, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=groups.count(None))
    table = table.append_column("group", column).set_column(0, "v", pa.array([1 if g is None else 2 for g in groups], pa.int8()))
    pq.write_table(table, path)


@pytest.mark.parametrize("by_group", [False, True])
def test_a_bad_group_key_in_parquet_rejects_its_row(tmp_path, by_group):
    """Parquet does not check that strings are UTF-8: such a key (or a surrogate's bytes) is a bad_group reject."""
    groups = [b"g0", b"g\xff", None, b"\xed\xa0\x80", b"g1", "é".encode(), b"", b"g0"]
    path = tmp_path / "r.parquet"
    _parquet_with_raw_groups(path, DUCHI, groups)
    extra = ["--by-group"] if by_group else []
    result = _run("--spec", _spec_file(tmp_path, DUCHI), path, "--rejects", tmp_path / "rejects.jsonl",
                  "-o", tmp_path / "est.parquet", *extra)
    assert result.exit_code == EXIT_REJECTS, result.output
    assert _counts(result) == (8, 5, 3)
    rejects = _rejects(tmp_path / "rejects.jsonl")
    assert [(r["line"], r["reason"]) for r in rejects] == [(2, "bad_group"), (4, "bad_group"), (7, "bad_group")]
    assert '"group": "g\\\\xff"' in rejects[0]["raw"]  # the raw row shows the bytes
    if by_group:
        groups = pd.read_parquet(tmp_path / "est.parquet")["group"].tolist()
        assert groups[:3] == ["g0", "g1", "é"] and pd.isna(groups[3])  # the overall row


def test_group_text_rule_is_the_same_for_one_report_and_for_columns():
    """check_group is the one rule: Report refuses a surrogate; the column validator refuses the same rows."""
    from ldp.aggregator.report_columns import validate_columns

    keys = ["g", "\ud800", "é", "", "x" * 256, "x" * 257, "a\tb", "\U0001F600", "\u2028"]
    for key in keys:
        try:
            check_report(DUCHI, Report(spec=DUCHI.fingerprint, value=1.0, group=key))
            accepted = True
        except ReportError:
            accepted = False
        column = pa.array([key.encode("utf-8", "surrogatepass")], pa.binary()).cast(pa.string(), safe=False)
        ok, _ = validate_columns(DUCHI, {"v": pa.array([2]), "spec": pa.array([DUCHI.fingerprint]),
                                         "value": pa.array([1.0]), "group": column}, 1)
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
def test_surrogates_in_other_text_fields_are_rejects_and_the_rejects_file_is_written(tmp_path, case, n, rejects_name):
    spec, template, reason = STRING_FIELDS[case]
    good = [f'{{"v": 1, "spec": "{spec.fingerprint}", "value": "{spec.domain[k % 3]}"}}' for k in range(n)]
    good[1] = template.format(fp=spec.fingerprint)
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(good) + "\n")
    rejects = tmp_path / rejects_name
    result = _run("--spec", _spec_file(tmp_path, spec), path, "--rejects", rejects, "-o", tmp_path / "est.csv")
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
        result = _run("--spec", _spec_file(tmp_path, GRR), name, "--rejects", rejects, "-o", tmp_path / "est.csv")
        assert result.exit_code == EXIT_REJECTS, result.output
        assert "r\\udcff.jsonl" in rejects.read_text(encoding="utf-8")
    [record] = [json.loads(line) for line in (tmp_path / "rejects.jsonl").read_text(encoding="utf-8").splitlines()]
    assert record["file"] == str(name) and record["line"] == 2


def test_group_keys_are_written_in_every_estimates_format_and_on_any_terminal(tmp_path, monkeypatch):
    """Every key the rule accepts is written by every writer, also to a stdout that cannot encode it."""
    from ldp.aggregator.writers import write_estimates

    keys = ["é", "\U0001F600", "a,b", 'q"x', "\u2028", " lead", "x" * 256, "1.0", "null", "NaN"]
    accumulator = make_aggregator(DUCHI)
    batch = encode_batch(DUCHI, _values(DUCHI, 40), np.random.default_rng(4))
    accumulator.add_batch(batch, groups=[keys[k % len(keys)] for k in range(40)])
    table = accumulator.estimate(by_group=True, with_overall=True)
    for name in ("est.csv", "est.json", "est.jsonl", "est.parquet"):
        write_estimates(table, tmp_path / name)
    back = {
        "est.csv": pd.read_csv(tmp_path / "est.csv", keep_default_na=False, dtype={"group": str})["group"].tolist(),
        "est.json": [row["group"] for row in json.loads((tmp_path / "est.json").read_text(encoding="utf-8"))],
        "est.jsonl": [json.loads(line)["group"] for line in (tmp_path / "est.jsonl").read_text(encoding="utf-8").splitlines()],
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


def _parquet_table(spec, n=6, seed=3):
    """``n`` valid reports as an Arrow table (columns v, spec, value, ...)."""
    batch = encode_batch(spec, _values(spec, n), np.random.default_rng(seed))
    return pa.Table.from_pylist([report.to_dict() for report in batch.reports(spec)])


PARQUET_SHAPES = {  # name -> (change to a valid table of 6 GRR reports, rows valid after it)
    "duplicate column, one set": (lambda t: t.append_column("value", pa.nulls(6, pa.string())), 6),
    "duplicate column, both set": (lambda t: t.append_column("value", t.column("value")), 0),
    "spec as a list": (lambda t: t.set_column(1, "spec", pa.array([[1]] * 6)), 0),
    "spec as integers": (lambda t: t.set_column(1, "spec", pa.array(range(6))), 0),
    "a timestamp Python cannot hold": (lambda t: t.append_column("client", pa.array([2**62] * 6, pa.timestamp("us"))), 0),
    "value as a struct": (lambda t: t.set_column(2, "value", pa.array([{"a": 1}] * 6)), 0),
}


@pytest.mark.parametrize("shape", sorted(PARQUET_SHAPES))
def test_parquet_files_of_any_shape_give_rejects_not_crashes(tmp_path, shape):
    """Duplicate column names, a spec column Arrow cannot read as a dictionary, cells Python cannot hold."""
    change, valid = PARQUET_SHAPES[shape]
    path = tmp_path / "r.parquet"
    pq.write_table(change(_parquet_table(GRR)), path)
    result = _run("--spec", _spec_file(tmp_path, GRR), path, "--rejects", tmp_path / "rejects.jsonl",
                  "-o", tmp_path / "est.csv")
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

    names = ["ldp.report", "ldp.report_check", *(f"ldp.aggregator.{m.name}" for m in pkgutil.iter_modules(ldp.aggregator.__path__))]
    for name in names:
        module = importlib.import_module(name)
        objects = [module, *(obj for _, obj in inspect.getmembers(module) if getattr(obj, "__module__", None) == name)]
        for obj in objects:
            for doc in [obj.__doc__, *(getattr(m, "__doc__", None) for _, m in inspect.getmembers(obj, inspect.isfunction))]:
                (doc or "").encode("utf-8")
