"""Group keys on reports: wire format, readers/writers, engines, per-group means, CLI.

The group key (e.g. an app version) is sent in the clear; reports without one
keep the original version-1 form byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.cli import aggregate
from ldp.aggregator.engines import aggregate_files
from ldp.aggregator.estimates import normal_quantile
from ldp.aggregator.io import read_report_file
from ldp.aggregator.rejects import RejectsWriter
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch
from ldp.client.cli import encode
from ldp.errors import ReportError
from ldp.report import GROUP_REPORT_VERSION, MAX_GROUP_LENGTH, REPORT_VERSION, Report

DUCHI = ldp.Duchi(epsilon=1.0, low=0, high=10)
PIECEWISE = ldp.Piecewise(epsilon=2.0, low=0, high=10)
FP = "0123456789abcdef"
ALPHA = 1e-6
Z = normal_quantile(
    1 - ALPHA
)  # two-sided: P(|mean - truth| > Z·SE) ≈ α = 1e-6 per check (normal approximation)
SMALL = {"partition_bytes": 2_000, "partition_rows": 150, "chunk_size": 64}

group_keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=MAX_GROUP_LENGTH
)


# -- the Report record --------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    value=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-(2**63), 2**63 - 1),
        st.text(max_size=20),
    ),
    client=st.one_of(st.none(), st.text(max_size=10)),
    group=st.one_of(st.none(), group_keys),
)
def test_report_round_trips_with_and_without_group(value, client, group):
    report = Report(spec=FP, value=value, client=client, group=group)
    assert report.v == (REPORT_VERSION if group is None else GROUP_REPORT_VERSION)
    assert Report.from_bytes(report.to_bytes()) == report
    assert Report.from_json(report.to_json()) == report
    assert Report.from_dict(json.loads(report.to_json())) == report


def test_reports_without_group_are_the_original_version_1_bytes():
    report = Report(spec=FP, cohort=3, bits=b"\x81")
    assert report.to_bytes() == bytes([1, 0b1100]) + bytes.fromhex(FP) + b"\x00\x01\x81" + b"\x00\x00\x00\x03"
    assert report.to_json() == '{"v":1,"spec":"0123456789abcdef","cohort":3,"bits":"gQ=="}'
    grouped = report.with_group("1.2")
    raw = grouped.to_bytes()
    assert raw[0] == 2 and raw[1] == 0b101100 and raw.endswith(b"\x00\x031.2")
    assert grouped.with_group(None) == report


@pytest.mark.parametrize(
    "group, match",
    [
        ("", "non-empty"),
        ("x" * (MAX_GROUP_LENGTH + 1), "at most 256"),
        ("a\nb", "control"),
        (5, "must be a string"),
    ],
)
def test_malformed_group_is_a_report_error(group, match):
    with pytest.raises(ReportError, match=match):
        Report(spec=FP, value=1.0, group=group)


def test_version_handling_is_honest():
    with pytest.raises(ReportError, match="needs format version 2"):
        Report.from_dict({"v": 1, "spec": FP, "value": 1.0, "group": "a"})
    assert Report.from_dict({"v": 2, "spec": FP, "value": 1.0}).v == 2  # version 2 without a group is fine
    version1_with_group_bit = bytes([1, 0b100001]) + bytes.fromhex(FP) + b"\x01" + bytes(8) + b"\x00\x01a"
    with pytest.raises(ReportError, match="unknown bits"):
        Report.from_bytes(version1_with_group_bit)
    with pytest.raises(ReportError, match="version 3"):
        Report.from_bytes(bytes([3, 0]) + bytes.fromhex(FP))


# -- batches, writers and readers ------------------------------------------------------


def _grouped_batch(spec, n=300, seed=0, missing_every=0):
    rng = np.random.default_rng(seed)
    keys = np.empty(n, dtype=object)
    keys[:] = [("1.0", "2.0", "ünï code")[i % 3] for i in range(n)]
    if missing_every:
        keys[::missing_every] = None
    values = np.where(np.array([k == "1.0" for k in keys]), 2.0, 7.0)
    return dataclasses.replace(encode_batch(spec, values, rng), groups=keys)


def _read_all(path, spec):
    batches, rejects = [], []
    for chunk in read_report_file(path, spec, chunk_size=50):
        batches.append(chunk.batch)
        rejects.extend(chunk.rejects)
    return batches, rejects


def _pairs(batches):
    return sorted(
        (float(v), g if g is not None else "")
        for b in batches
        for v, g in zip(b.values.tolist(), b.groups if b.groups is not None else [None] * len(b))
    )


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet", "csv.gz"])
def test_every_format_round_trips_groups(tmp_path, fmt):
    batch = _grouped_batch(PIECEWISE, missing_every=7)
    path = tmp_path / f"r.{fmt}"
    write_reports(batch, path, PIECEWISE)
    batches, rejects = _read_all(path, PIECEWISE)
    assert rejects == []
    assert _pairs(batches) == _pairs([batch])


def test_jsonl_writer_matches_report_to_json(tmp_path):
    batch = _grouped_batch(DUCHI, n=40, missing_every=5)
    path = tmp_path / "r.jsonl"
    write_reports(batch, path, DUCHI)
    assert path.read_text().splitlines() == [r.to_json() for r in batch.reports(DUCHI)]


def test_jsonl_writer_escapes_unicode_line_breaks_like_report_to_json(tmp_path):
    """Domain values and groups holding U+0085/U+2028/U+2029 stay one record per line, read back intact."""
    spec = ldp.GRR(domain=("\x85", "a\u2028b", "c"), epsilon=1.0)
    n = 30
    batch = encode_batch(spec, [spec.domain[i % 3] for i in range(n)], np.random.default_rng(5))
    groups = np.empty(n, dtype=object)
    groups[:] = [("x\u2029y", None, "v1")[i % 3] for i in range(n)]
    batch = dataclasses.replace(batch, groups=groups)
    path = tmp_path / "r.jsonl"
    write_reports(batch, path, spec)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines == [r.to_json() for r in batch.reports(spec)]
    batches, rejects = _read_all(path, spec)
    assert rejects == []
    assert [r for b in batches for r in b.reports(spec)] == list(batch.reports(spec))


def test_frequency_reports_may_carry_a_group(tmp_path):
    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    batch = encode_batch(spec, ["a", "b", "c"] * 20, np.random.default_rng(1))
    keys = np.array(["x", "y"] * 30, dtype=object)
    path = tmp_path / "r.parquet"
    write_reports(dataclasses.replace(batch, groups=keys), path, spec)
    batches, rejects = _read_all(path, spec)
    assert rejects == [] and sum(map(len, batches)) == 60


def _bad_group_lines(spec):
    fp = spec.fingerprint
    value = float(spec.support[0])
    return {
        "bad_group": [
            {"v": 2, "spec": fp, "value": value, "group": ""},
            {"v": 2, "spec": fp, "value": value, "group": "x" * 300},
            {"v": 2, "spec": fp, "value": value, "group": 17},
            {"v": 2, "spec": fp, "value": value, "group": "tab\there"},
        ],
        "wrong_version": [{"v": 1, "spec": fp, "value": value, "group": "a"}],
    }


def test_jsonl_malformed_groups_are_rejects_with_reasons(tmp_path):
    spec = DUCHI
    good = [r.to_json() for r in _grouped_batch(spec, n=100).reports(spec)]
    bad = _bad_group_lines(spec)
    lines = list(good)
    expected = []
    for records in bad.values():
        for record in records:
            lines.insert(len(lines) // 2, json.dumps(record))
    for number, line in enumerate(lines, start=1):
        for reason, records in bad.items():
            if any(line == json.dumps(r) for r in records):
                expected.append((number, reason))
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    batches, rejects = _read_all(path, spec)
    assert [(r.line, r.reason) for r in rejects] == expected
    assert sum(map(len, batches)) == 100


def test_csv_and_parquet_malformed_groups_are_rejects(tmp_path):
    spec = DUCHI
    fp, value = spec.fingerprint, float(spec.support[1])
    long = "y" * 257
    csv_path = tmp_path / "r.csv"
    csv_path.write_text(
        f"v,spec,value,group\n2,{fp},{value},a\n2,{fp},{value},{long}\n1,{fp},{value},b\n1,{fp},{value},\n"
    )
    batches, rejects = _read_all(csv_path, spec)
    assert [(r.line, r.reason) for r in rejects] == [(3, "bad_group"), (4, "wrong_version")]
    assert sum(map(len, batches)) == 2
    table = pa.table(
        {
            "v": pa.array([2, 2, 2, 1], pa.int8()),
            "spec": pa.array([fp] * 4),
            "value": pa.array([value] * 4),
            "group": pa.array(["a", "", "b\x00", None]),
        }
    )
    pq_path = tmp_path / "r.parquet"
    pq.write_table(table, pq_path)
    batches, rejects = _read_all(pq_path, spec)
    assert [(r.line, r.reason) for r in rejects] == [(2, "bad_group"), (3, "bad_group")]
    assert sorted(
        g for b in batches for g in (b.groups if b.groups is not None else [None] * len(b)) if g
    ) == ["a"]
    numeric_group = pa.table(
        {"v": pa.array([2]), "spec": pa.array([fp]), "value": pa.array([value]), "group": pa.array([3])}
    )
    pq.write_table(numeric_group, pq_path)
    _, rejects = _read_all(pq_path, spec)
    assert [(r.line, r.reason) for r in rejects] == [(1, "bad_group")]


# -- accumulator -------------------------------------------------------------------------


def test_group_counts_are_exact_and_merge_is_associative():
    spec = PIECEWISE
    parts = [_grouped_batch(spec, n=120, seed=s, missing_every=4) for s in range(3)]
    accs = []
    for batch in parts:
        acc = make_aggregator(spec)
        acc.add_batch(batch)
        accs.append(acc)
    left = accs[0].merge(accs[1]).merge(accs[2])
    right = accs[0].merge(accs[1].merge(accs[2]))
    swapped = accs[2].merge(accs[0]).merge(accs[1])
    assert left == right == swapped
    one = make_aggregator(spec)
    for batch in parts:
        for report in batch.reports(spec):
            one.add(report)
    assert one == left
    for key, hist in left.group_counts.items():
        assert hist.dtype == np.int64
        expected = sum(int(np.sum(b.groups == key)) for b in parts)
        assert int(hist.sum()) == expected
    table = left.estimate(by_group=True, with_overall=True)
    assert list(table.columns) == ["group", "mean", "std_error", "ci_low", "ci_high", "n"]
    assert table["group"].tolist() == ["1.0", "2.0", "ünï code", None]
    assert table["n"].iloc[-1] == left.n == 360
    assert table["n"].iloc[:-1].sum() == 360 - 3 * 30  # every 4th report has no group


# -- engines ----------------------------------------------------------------------------


def _grouped_files(tmp_path, spec):
    paths = []
    for seed, fmt in enumerate(["jsonl", "parquet", "csv"]):
        batches = [_grouped_batch(spec, n=200, seed=10 * seed + k, missing_every=9) for k in range(3)]
        path = tmp_path / f"g{seed}.{fmt}"
        write_reports(batches, path, spec)
        paths.append(str(path))
    bad = json.dumps(_bad_group_lines(spec)["bad_group"][0])
    lines = Path(paths[0]).read_text().splitlines()
    lines.insert(250, bad)
    Path(paths[0]).write_text("\n".join(lines) + "\n")
    return paths


def _run(spec, paths, rejects_path, **options):
    with RejectsWriter(rejects_path) as rejects:
        acc, valid = aggregate_files(spec, paths, rejects, **options)
    return acc, valid


def test_workers_and_dask_equal_local_with_groups(tmp_path, scheduler):
    spec = PIECEWISE
    paths = _grouped_files(tmp_path, spec)
    local, local_valid = _run(spec, paths, tmp_path / "local.jsonl")
    two, two_valid = _run(spec, paths, tmp_path / "two.jsonl", workers=2, **SMALL)
    dask, dask_valid = _run(spec, paths, tmp_path / "dask.jsonl", engine="dask", scheduler=scheduler, **SMALL)
    assert local_valid == two_valid == dask_valid == 1800
    assert len(local.group_counts) == 3
    assert two == local and dask == local
    expected = local.estimate(by_group=True, with_overall=True)
    pd.testing.assert_frame_equal(two.estimate(by_group=True, with_overall=True), expected)
    pd.testing.assert_frame_equal(dask.estimate(by_group=True, with_overall=True), expected)
    rejects = (tmp_path / "local.jsonl").read_text()
    assert (
        '"bad_group"' in rejects
        and rejects == (tmp_path / "two.jsonl").read_text() == (tmp_path / "dask.jsonl").read_text()
    )


# -- CLI end to end ----------------------------------------------------------------------


def test_cli_encode_group_column_and_aggregate_by_group(tmp_path):
    """Two app versions with different true mean session lengths; each group's mean within z·SE (α = 1e-6)."""
    spec = ldp.Duchi(epsilon=2.0, low=0, high=600)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    rng = np.random.default_rng(2024)
    n = 20_000
    version = rng.choice(["1.0", "2.0"], n)
    length = np.where(version == "1.0", rng.uniform(0, 240, n), rng.uniform(200, 600, n)).round(1)
    frame = pd.DataFrame({"app_version": version, "length": length})
    frame.to_csv(tmp_path / "sessions.csv", index=False)
    truth = frame.groupby("app_version")["length"].mean()
    runner = CliRunner()
    reports = tmp_path / "reports.parquet"
    result = runner.invoke(
        encode,
        [
            "--spec",
            str(spec_path),
            str(tmp_path / "sessions.csv"),
            "--column",
            "length",
            "--group-column",
            "app_version",
            "--seed",
            "7",
            "-o",
            str(reports),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "means.csv"
    result = runner.invoke(
        aggregate,
        ["--spec", str(spec_path), str(reports), "--by-group", "-o", str(out)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out, dtype={"group": object})
    assert list(table.columns) == ["group", "mean", "std_error", "ci_low", "ci_high", "n"]
    assert table["group"].tolist()[:2] == ["1.0", "2.0"] and pd.isna(table["group"].iloc[2])
    for row in table.itertuples():
        expected = truth[row.group] if isinstance(row.group, str) else frame["length"].mean()
        assert abs(row.mean - expected) <= Z * row.std_error, (row, expected)
        assert row.n == (int((version == row.group).sum()) if isinstance(row.group, str) else n)
    # the printed table: one row per group plus the overall row
    printed = runner.invoke(aggregate, ["--spec", str(spec_path), str(reports), "--by-group"])
    assert printed.exit_code == 0 and "(all)" in printed.stdout and "2.0" in printed.stdout


def test_cli_secure_path_and_errors(tmp_path):
    spec = ldp.Duchi(epsilon=1.0, low=0, high=10)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    (tmp_path / "in.csv").write_text("v,g\n1,a\n2,b\n3,a\n")
    runner = CliRunner()
    reports = tmp_path / "r.jsonl"
    result = runner.invoke(
        encode,
        ["--spec", str(spec_path), str(tmp_path / "in.csv"), "--group-column", "g", "-o", str(reports)],
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in reports.read_text().splitlines()]
    assert [r["group"] for r in records] == ["a", "b", "a"] and {r["v"] for r in records} == {2}
    (tmp_path / "missing.csv").write_text("v,g\n1,a\n2,\n")
    result = runner.invoke(
        encode, ["--spec", str(spec_path), str(tmp_path / "missing.csv"), "--group-column", "g"]
    )
    assert result.exit_code != 0 and "row 2: the group is missing" in result.stderr
    result = runner.invoke(
        encode, ["--spec", str(spec_path), str(tmp_path / "in.csv"), "--group-column", "nope"]
    )
    assert result.exit_code != 0 and "--group-column 'nope'" in result.stderr
    assert "NOT privatized" in runner.invoke(encode, ["--help"]).output
    grr = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    (tmp_path / "grr.json").write_text(grr.to_json())
    result = runner.invoke(aggregate, ["--spec", str(tmp_path / "grr.json"), str(reports), "--by-group"])
    assert result.exit_code == 2 and "--by-group" in result.stderr and "numeric spec" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
