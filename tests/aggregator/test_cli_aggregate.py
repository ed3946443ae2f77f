"""``ldp aggregate`` end to end with click's CliRunner and real files."""

from __future__ import annotations

import base64
import csv
import gzip
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldp
from ldp.aggregator.cli import EXIT_REJECTS, aggregate
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch

GRR = ldp.GRR(domain=("a", "b", "c", "d"), epsilon=2.0)
RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/4", p="1/4", q="3/4")
FORMATS = ("jsonl", "csv", "parquet", "jsonl.gz", "csv.gz")


def _spec_file(tmp_path, spec):
    path = tmp_path / f"{spec.mechanism}.json"
    path.write_text(spec.to_json())
    return str(path)


def _grr_batch(n=2000, seed=1):
    values = [GRR.domain[i % 4] for i in range(n)]
    return encode_batch(GRR, values, np.random.default_rng(seed))


def _run(*args, input=None):
    return CliRunner().invoke(aggregate, [str(a) for a in args], input=input, catch_exceptions=False)


def _estimates(path):
    return pd.read_csv(path)


def test_all_valid_exits_zero_and_writes_estimates(tmp_path):
    spec_path = _spec_file(tmp_path, GRR)
    reports = tmp_path / "r.jsonl"
    write_reports(_grr_batch(), reports, GRR)
    out = tmp_path / "est.csv"
    result = _run("--spec", spec_path, reports, "-o", out)
    assert result.exit_code == 0, result.stderr
    frame = _estimates(out)
    assert frame["value"].tolist() == list(GRR.domain)
    assert {"estimate", "std_error", "ci_low", "ci_high", "proportion"} <= set(frame.columns)
    assert "2,000 reports read from 1 file: 2,000 valid, 0 rejected" in result.stderr
    assert "\r" not in result.stderr  # no progress line when stderr is not a terminal


def test_every_format_gives_identical_estimates(tmp_path):
    spec_path = _spec_file(tmp_path, GRR)
    batch = _grr_batch()
    frames = []
    for fmt in FORMATS:
        reports = tmp_path / f"r.{fmt}"
        write_reports(batch, reports, GRR)
        out = tmp_path / f"est-{fmt.replace('.', '-')}.csv"
        result = _run("--spec", spec_path, reports, "-o", out)
        assert result.exit_code == 0, result.stderr
        frames.append(_estimates(out))
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])


def test_every_format_and_csv_dialect_writes_the_same_estimate_bytes(tmp_path):
    """The estimates file is byte for byte the same from every format, CSV quoted as pyarrow writes it included.

    Each file also holds one report of another spec (a reject), so the
    column-wise path and the row-by-row re-check both take part.
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    spec_path = _spec_file(tmp_path, GRR)
    batch = _grr_batch()
    files = []
    for fmt in FORMATS:
        reports = tmp_path / f"r.{fmt}"
        write_reports(batch, reports, GRR)
        files.append(reports)
    quoted = tmp_path / "r-quoted.csv"
    text = dict.fromkeys(("spec", "value"), pa.string())  # a fingerprint may look like 1e5
    table = pa_csv.read_csv(tmp_path / "r.csv", convert_options=pa_csv.ConvertOptions(column_types=text))
    pa_csv.write_csv(table, quoted)
    files.append(quoted)
    for path in (tmp_path / "r.jsonl", tmp_path / "r.csv", quoted):
        with path.open("a") as out:
            out.write(
                '{"v": 1, "spec": "0000000000000000"}\n'
                if path.suffix == ".jsonl"
                else "1,0000000000000000,a\n"
            )
    outputs = []
    for reports in files:
        out = tmp_path / f"est-{reports.name.replace('.', '-')}.csv"
        result = _run("--spec", spec_path, reports, "-o", out)
        assert result.exit_code in (0, EXIT_REJECTS), result.stderr
        outputs.append(out.read_bytes())
    assert len(set(outputs)) == 1
    frame = _estimates(tmp_path / "est-r-quoted-csv.csv")
    assert frame["value"].tolist() == list(GRR.domain)


def test_several_files_equal_one_file(tmp_path):
    spec_path = _spec_file(tmp_path, GRR)
    first, second = _grr_batch(seed=1), _grr_batch(seed=2)
    write_reports(first, tmp_path / "a.jsonl", GRR)
    write_reports(second, tmp_path / "b.parquet", GRR)
    write_reports([first, second], tmp_path / "both.csv", GRR)
    assert (
        _run(
            "--spec", spec_path, tmp_path / "a.jsonl", tmp_path / "b.parquet", "-o", tmp_path / "two.csv"
        ).exit_code
        == 0
    )
    assert _run("--spec", spec_path, tmp_path / "both.csv", "-o", tmp_path / "one.csv").exit_code == 0
    pd.testing.assert_frame_equal(_estimates(tmp_path / "two.csv"), _estimates(tmp_path / "one.csv"))


def _bad_rappor_lines(fp):
    bits = base64.b64encode(b"\x12\x34").decode()
    return {
        "unparseable": '{"v": 1, "spec": ',
        "wrong_length": json.dumps(
            {"v": 1, "spec": fp, "cohort": 0, "bits": base64.b64encode(b"\x12").decode()}
        ),
        "wrong_version": json.dumps({"v": 9, "spec": fp, "cohort": 0, "bits": bits}),
        "wrong_spec": json.dumps({"v": 1, "spec": "ffffffffffffffff", "cohort": 0, "bits": bits}),
        "cohort_out_of_range": json.dumps({"v": 1, "spec": fp, "cohort": 4, "bits": bits}),
        "missing_field": json.dumps({"v": 1, "spec": fp, "bits": bits}),
    }


@pytest.mark.parametrize("rejects_name", ["rejects.jsonl", "rejects.csv"])
def test_bad_reports_go_to_rejects_and_nothing_valid_is_lost(tmp_path, rejects_name):
    spec = RAPPOR
    spec_path = _spec_file(tmp_path, spec)
    batch = encode_batch(spec, [f"u{i % 7}" for i in range(600)], np.random.default_rng(3))
    clean = tmp_path / "clean.jsonl"
    write_reports(batch, clean, spec)
    lines = clean.read_text().splitlines()
    bad = _bad_rappor_lines(spec.fingerprint)
    expected = {}
    for k, text in enumerate(bad.values()):
        lines.insert(50 * k + 10, text)
    for number, line in enumerate(lines, start=1):
        for reason, text in bad.items():
            if line == text:
                expected[number] = reason
    dirty = tmp_path / "dirty.jsonl"
    dirty.write_text("\n".join(lines) + "\n")

    rejects = tmp_path / rejects_name
    result = _run("--spec", spec_path, dirty, "--rejects", rejects, "-o", tmp_path / "dirty.csv")
    assert result.exit_code == EXIT_REJECTS
    assert "606 reports read from 1 file: 600 valid, 6 rejected" in result.stderr
    for reason in bad:
        assert f"{reason} 1" in result.stderr
    if rejects_name.endswith(".jsonl"):
        records = [json.loads(line) for line in rejects.read_text().splitlines()]
    else:
        records = pd.read_csv(rejects, keep_default_na=False).to_dict("records")
    assert {int(r["line"]): r["reason"] for r in records} == expected
    assert all(r["file"] == str(dirty) and r["raw"] == lines[int(r["line"]) - 1] for r in records)

    assert _run("--spec", spec_path, clean, "-o", tmp_path / "clean.csv").exit_code == 0
    pd.testing.assert_frame_equal(_estimates(tmp_path / "dirty.csv"), _estimates(tmp_path / "clean.csv"))


def test_rejects_without_a_rejects_file_are_shown_on_stderr(tmp_path):
    spec_path = _spec_file(tmp_path, GRR)
    reports = tmp_path / "r.jsonl"
    write_reports(_grr_batch(50), reports, GRR)
    with reports.open("a") as stream:
        stream.write(json.dumps({"v": 1, "spec": GRR.fingerprint, "value": "zzz"}) + "\n")
    result = _run("--spec", spec_path, reports)
    assert result.exit_code == EXIT_REJECTS
    assert f"{reports}:51: value_out_of_domain" in result.stderr
    assert "--rejects" in result.stderr
    assert "estimate" in result.stdout  # the table still goes to stdout


def test_nothing_readable_is_a_one_line_error_with_status_2(tmp_path):
    spec_path = _spec_file(tmp_path, GRR)
    other = ldp.GRR(domain=("a", "b", "c", "d"), epsilon=1.0)
    reports = tmp_path / "r.jsonl"
    write_reports(encode_batch(other, ["a"] * 20, np.random.default_rng(0)), reports, other)
    rejects = tmp_path / "rejects.jsonl"
    result = _run("--spec", spec_path, reports, "--rejects", rejects)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: nothing could be read: 20 reports read from 1 file: 0 valid, 20 rejected (wrong_spec 20)"
    )
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert len(rejects.read_text().splitlines()) == 20


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.jsonl"], "does not exist"),
        (["reports.txt"], "extension"),
        ([], "no report files"),
        (["r.jsonl", "--confidence", "1.5"], "--confidence"),
        (["r.jsonl", "--candidates", "cands.txt"], "take candidate values (rappor, cms, hcms)"),
        (["r.jsonl", "--rejects", "rejects.txt"], "rejects file"),
        (["r.jsonl", "-o", "est.xlsx"], "estimates file"),
    ],
)
def test_user_errors_exit_2_without_traceback(tmp_path, args, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec_path = _spec_file(tmp_path, GRR)
    write_reports(_grr_batch(20), tmp_path / "r.jsonl", GRR)
    (tmp_path / "reports.txt").write_text("x\n")
    (tmp_path / "cands.txt").write_text("a\n")
    result = _run("--spec", spec_path, *args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_spec_file_is_a_user_error(tmp_path):
    (tmp_path / "spec.json").write_text("{not json")
    write_reports(_grr_batch(5), tmp_path / "r.jsonl", GRR)
    result = _run("--spec", tmp_path / "spec.json", tmp_path / "r.jsonl")
    assert result.exit_code == 2 and result.stderr.startswith("Error: spec is not valid JSON")


def test_reads_json_lines_from_stdin(tmp_path):
    spec_path = _spec_file(tmp_path, GRR)
    batch = _grr_batch(300)
    write_reports(batch, tmp_path / "r.jsonl", GRR)
    result = _run(
        "--spec", spec_path, "-", "-o", tmp_path / "stdin.csv", input=(tmp_path / "r.jsonl").read_bytes()
    )
    assert result.exit_code == 0, result.stderr
    assert _run("--spec", spec_path, tmp_path / "r.jsonl", "-o", tmp_path / "file.csv").exit_code == 0
    pd.testing.assert_frame_equal(_estimates(tmp_path / "stdin.csv"), _estimates(tmp_path / "file.csv"))


@pytest.mark.parametrize("suffix", ["json", "parquet"])
def test_estimates_output_formats(tmp_path, suffix):
    spec_path = _spec_file(tmp_path, GRR)
    write_reports(_grr_batch(100), tmp_path / "r.jsonl", GRR)
    out = tmp_path / f"est.{suffix}"
    assert (
        _run("--spec", spec_path, tmp_path / "r.jsonl", "-o", out, "--consistency", "norm-sub").exit_code == 0
    )
    frame = pd.DataFrame(json.loads(out.read_text())) if suffix == "json" else pd.read_parquet(out)
    assert frame["value"].tolist() == list(GRR.domain)
    assert (frame["consistent"] >= 0).all()  # norm-sub projects onto the simplex
    assert frame["consistent"].sum() == pytest.approx(100)  # n reports
    assert {"estimate", "std_error", "ci_low", "ci_high", "proportion"} <= set(frame.columns)  # both views


def test_rappor_candidates_decode(tmp_path):
    spec = RAPPOR
    spec_path = _spec_file(tmp_path, spec)
    batch = encode_batch(spec, ["apple"] * 3000 + ["pear"] * 1000, np.random.default_rng(5))
    write_reports(batch, tmp_path / "r.parquet", spec)
    (tmp_path / "cands.txt").write_text("apple\npear\nplum\n")
    out = tmp_path / "est.csv"
    result = _run(
        "--spec", spec_path, tmp_path / "r.parquet", "--candidates", tmp_path / "cands.txt", "-o", out
    )
    assert result.exit_code == 0, result.stderr
    frame = pd.read_csv(out).set_index("value")
    assert sorted(frame.index) == ["apple", "pear", "plum"]
    assert (
        frame.loc["apple", "detected"] and frame.loc["pear", "detected"]
    )  # 3,000 and 1,000 of 4,000 reports


def test_google_counts_input(tmp_path):
    from ldp.aggregator import google

    spec = RAPPOR
    spec_path = _spec_file(tmp_path, spec)
    batch = encode_batch(spec, ["apple"] * 500, np.random.default_rng(6))
    write_reports(batch, tmp_path / "r.jsonl", spec)
    counts = tmp_path / "counts.csv"
    cohorts = np.bincount(batch.cohorts, minlength=spec.num_cohorts)
    bits = np.unpackbits(batch.bits, axis=1)[:, : spec.num_bits]
    ones = np.stack([bits[batch.cohorts == c].sum(axis=0) for c in range(spec.num_cohorts)])
    counts.write_text(
        "".join(",".join(map(str, [cohorts[c], *ones[c]])) + "\n" for c in range(spec.num_cohorts))
    )
    assert hasattr(google, "read_counts")
    from_counts = _run("--spec", spec_path, "--counts", counts, "-o", tmp_path / "a.csv")
    from_reports = _run("--spec", spec_path, tmp_path / "r.jsonl", "-o", tmp_path / "b.csv")
    assert from_counts.exit_code == 0 and from_reports.exit_code == 0, from_counts.stderr
    pd.testing.assert_frame_equal(_estimates(tmp_path / "a.csv"), _estimates(tmp_path / "b.csv"))


# -- fuzz: nothing crashes the aggregator ----------------------------------------------------

_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=8)
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_report_like = st.fixed_dictionaries(
    {},
    optional={
        "v": st.one_of(st.just(1), _json_values),
        "spec": st.one_of(st.just(RAPPOR.fingerprint), _json_values),
        "cohort": st.one_of(st.integers(-1, 5), _json_values),
        "bits": st.one_of(st.binary(max_size=3).map(lambda b: base64.b64encode(b).decode()), _json_values),
        "value": _json_values,
        "client": _json_values,
    },
)


_SUMMARY = re.compile(r"([\d,]+) reports read from \d+ files?: ([\d,]+) valid, ([\d,]+) rejected")
OUE = ldp.OUE(domain=("a", "b", "c", "d", "e"), epsilon=1.0)
OLH = ldp.OLH(domain=("a", "b", "c", "d", "e"), epsilon=1.0)
FUZZ_SPECS = {"grr": GRR, "oue": OUE, "rappor": RAPPOR, "olh": OLH}
_FUZZ_FIELDS = {
    "value": ("value",),
    "hashed": ("seed", "value"),
    "bits": ("bits",),
    "rappor": ("cohort", "bits"),
}


def _valid_dicts(spec):
    values = (
        [f"u{i}" for i in range(8)]
        if spec.report_kind == "rappor"
        else [spec.domain[i % 4] for i in range(8)]
    )
    return [r.to_dict() for r in encode_batch(spec, values, np.random.default_rng(9)).reports(spec)]


_VALID = {name: _valid_dicts(spec) for name, spec in FUZZ_SPECS.items()}


def _check_no_crash(result, path):
    """Exit 0, 2 or 3 without a traceback; (read, valid, rejected) from the summary when one was printed."""
    assert result.exit_code in (0, 2, EXIT_REJECTS), result.stderr
    assert "Traceback" not in result.stderr
    if result.exit_code != 2:
        assert path.exists()
    match = _SUMMARY.search(result.stderr)
    if result.exit_code != 2:
        assert match, result.stderr
    if match is None:
        return None
    read, valid, rejected = (int(g.replace(",", "")) for g in match.groups())
    assert read == valid + rejected
    assert (result.exit_code == 0) == (rejected == 0 and valid > 0)
    assert (result.exit_code == 2) == (valid == 0)
    return read, valid, rejected


def _rejects_written(path):
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


@st.composite
def _fuzz_report(draw, name):
    """A valid report dict of FUZZ_SPECS[name] with zero to two fields replaced or deleted."""
    row = dict(draw(st.sampled_from(_VALID[name])))
    for _ in range(draw(st.integers(0, 2))):
        field = draw(
            st.sampled_from(("v", "spec", "value", "seed", "bits", "cohort", "client", "group", "extra"))
        )
        value = draw(
            st.one_of(st.none(), _json_scalars, st.sampled_from([1.0, 2, True, "AA==", "AAE=", "1"]))
        )
        if value is None:
            row.pop(field, None)
        else:
            row[field] = value
    return row


def _csv_cell(value):
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _write_lines(path, fmt, name, items):
    """Write fuzz items (report dicts, other JSON values, text) as JSON Lines or CSV; the number of data lines."""
    if fmt.startswith("jsonl"):
        lines = [item if isinstance(item, str) else json.dumps(item) for item in items]
        lines = [line.replace("\n", " ") for line in lines]
        text = "\n".join(lines) + "\n"
        count = sum(1 for line in lines if line.encode("utf-8", "surrogatepass").strip())
    else:
        header = ["v", "spec", *_FUZZ_FIELDS[FUZZ_SPECS[name].report_kind], "client", "group"]
        rows = []
        for item in items:
            if isinstance(item, dict):
                rows.append([_csv_cell(item.get(h)) for h in header])
            else:  # any other JSON value or text: a row of some width (mostly the wrong one)
                text = item if isinstance(item, str) else json.dumps(item)
                rows.append(text.replace("\n", " ").replace("\r", " ").split(" "))
        rows = [[cell.replace("\n", " ").replace("\r", " ") for cell in row] for row in rows]
        rows = [
            row for row in rows if row and not (len(row) == 1 and not row[0].strip())
        ]  # blank lines are no rows
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        text, count = out.getvalue(), len(rows)
    raw = text.encode("utf-8", "surrogatepass")
    path.write_bytes(gzip.compress(raw, mtime=0) if fmt.endswith(".gz") else raw)
    return count


@pytest.mark.slow
@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(FUZZ_SPECS)),
    fmt=st.sampled_from(["jsonl", "csv", "csv.gz", "jsonl.gz"]),
    chunk_size=st.sampled_from([1, 2, 3, 4, 7]),
)
def test_fuzz_random_json_lines_never_crash(tmp_path_factory, data, name, fmt, chunk_size):
    """Mutated reports, random JSON values and text, as JSON Lines or CSV, every report kind, small chunks.

    The aggregator never raises, and every data line is either counted or
    rejected (valid + rejected == data lines, and the rejects file has every
    rejected one).
    """
    items = data.draw(
        st.lists(
            st.one_of(
                _fuzz_report(name),
                _report_like,
                _json_values,
                st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20),
            ),
            max_size=30,
        )
    )
    tmp_path = tmp_path_factory.mktemp("fuzz")
    spec_path = _spec_file(tmp_path, FUZZ_SPECS[name])
    reports = tmp_path / f"r.{fmt}"
    lines = _write_lines(reports, fmt, name, items)
    out, rejects = tmp_path / "est.csv", tmp_path / "rejects.jsonl"
    result = _run("--spec", spec_path, reports, "--rejects", rejects, "-o", out, "--chunk-size", chunk_size)
    counts = _check_no_crash(result, out)
    if counts is None:  # exit 2 before reading anything: only for a file without any report
        assert lines == 0, result.stderr
        return
    read, _valid, rejected = counts
    assert read == lines
    assert _rejects_written(rejects) == rejected


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.binary(max_size=3000),
    suffix=st.sampled_from(["jsonl", "csv", "parquet", "jsonl.gz", "csv.gz"]),
    name=st.sampled_from(sorted(FUZZ_SPECS)),
    chunk_size=st.sampled_from([1, 2, 3, 4, 100]),
)
def test_fuzz_random_bytes_never_crash(tmp_path_factory, data, suffix, name, chunk_size):
    tmp_path = tmp_path_factory.mktemp("fuzz")
    spec_path = _spec_file(tmp_path, FUZZ_SPECS[name])
    reports = tmp_path / f"r.{suffix}"
    reports.write_bytes(data)
    out, rejects = tmp_path / "est.csv", tmp_path / "rejects.jsonl"
    result = _run("--spec", spec_path, reports, "--rejects", rejects, "-o", out, "--chunk-size", chunk_size)
    counts = _check_no_crash(result, out)
    if counts is not None:
        read, _valid, rejected = counts
        assert read <= data.count(b"\n") + 1 or suffix.endswith(".gz")
        assert _rejects_written(rejects) == rejected


@pytest.mark.parametrize("name", sorted(FUZZ_SPECS))
@pytest.mark.parametrize("fmt", ["csv", "csv.gz"])
def test_bit_vector_csv_of_only_bad_rows_does_not_crash(tmp_path, name, fmt):
    """The review's reproduction (every CSV row has the wrong number of fields) for every report kind."""
    spec = FUZZ_SPECS[name]
    reports = tmp_path / f"b.{fmt}"
    text = f"v,spec,{','.join(_FUZZ_FIELDS[spec.report_kind])}\n1,{spec.fingerprint}\n"
    reports.write_bytes(gzip.compress(text.encode()) if fmt.endswith(".gz") else text.encode())
    result = _run("--spec", _spec_file(tmp_path, spec), reports)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "1 reports read from 1 file: 0 valid, 1 rejected (unparseable 1)" in result.stderr
