"""Report file readers and writers (ldp.aggregator.io, .writers, .rejects, .report_columns)."""

from __future__ import annotations

import base64
import csv
import dataclasses
import gzip
import io
import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import every_spec_shape, sample_values
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.io import read_report_file, read_reports, report_format
from ldp.aggregator.rejects import REASONS, RejectsWriter, classify_reason
from ldp.aggregator.report_columns import base64_encode_rows, concat_batches, validate_columns
from ldp.aggregator.writers import write_estimates, write_reports
from ldp.client import encode_batch, make_encoder
from ldp.errors import ParameterError, ReportError
from ldp.report import Report
from ldp.report_check import check_report, required_fields

FORMATS = ("jsonl", "csv", "parquet", "jsonl.gz", "csv.gz")

RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=8, f="1/2", p="1/4", q="3/4")
GRR_STR = ldp.GRR(domain=("a", "b,c", 'q"x', "d"), epsilon=1.0)
GRR_INT = ldp.GRR(domain=(3, 5, 7, 11), epsilon=1.0)
OUE16 = ldp.OUE(domain=tuple(f"v{i}" for i in range(16)), epsilon=1.0)
OLH = ldp.OLH(domain=tuple(range(50)), epsilon=2.0)
SPECS = {"rappor": RAPPOR, "grr-str": GRR_STR, "grr-int": GRR_INT, "oue": OUE16, "olh": OLH}


def _values(spec, n):
    domain = getattr(spec, "domain", None) or ("x", "y", "z")
    return [domain[i % min(3, len(domain))] for i in range(n)]


def _batch(spec, n=500, seed=0):
    return encode_batch(spec, _values(spec, n), np.random.default_rng(seed))


def _read_all(path, spec, chunk_size=10_000):
    chunks = list(read_reports([path], spec, chunk_size=chunk_size))
    batch = concat_batches(spec, [c.batch for c in chunks])
    rejects = [r for c in chunks for r in c.rejects]
    return batch, rejects


def _assert_same(expected, got):
    for name in ("values", "seeds", "bits", "cohorts"):
        a, b = getattr(expected, name), getattr(got, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)


# -- formats and round trips -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_format(tmp_path, name, fmt):
    spec = SPECS[name]
    batch = _batch(spec)
    path = tmp_path / f"reports.{fmt}"
    assert write_reports([batch, batch], path, spec) == 2 * len(batch)
    got, rejects = _read_all(path, spec, chunk_size=333)
    assert rejects == []
    _assert_same(concat_batches(spec, [batch, batch]), got)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_jsonl_writer_matches_report_to_json(name):
    spec = SPECS[name]
    batch = _batch(spec, n=50)
    out = io.StringIO()
    write_reports(batch, out, spec)
    assert out.getvalue() == "".join(line + "\n" for line in batch.to_json_lines(spec))


def _shape_id(spec):
    return spec.mechanism if spec.mechanism != "rappor" else f"rappor-{spec.encoding}-{spec.hash}-f{spec.f}"


def test_the_format_tests_cover_every_registered_mechanism():
    from ldp.registry import BUILTIN_MECHANISMS

    assert {spec.mechanism for spec in every_spec_shape()} == {d.name for d in BUILTIN_MECHANISMS}


def test_a_new_builtin_mechanism_is_a_spec_shape_with_no_edit_to_conftest(monkeypatch):
    """A mechanism no list of conftest names gets the conformance suite's example spec (its constructor's)."""
    import sys
    import types
    from typing import ClassVar

    import ldp.registry
    from ldp.specs.ranges import RangeHaar

    class ToyRange(RangeHaar):  # a kind conftest lists by hand (its ranges), under a new name
        mechanism: ClassVar[str] = "toy-range"

    module = types.ModuleType("toy_range_mechanism")
    module.ToyRange = ToyRange  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toy_range_mechanism", module)
    toy = ldp.registry.MechanismDeclaration("toy-range", "toy_range_mechanism:ToyRange")
    monkeypatch.setattr(ldp.registry, "BUILTIN_MECHANISMS", (*ldp.registry.BUILTIN_MECHANISMS, toy))
    shapes = every_spec_shape()
    assert [spec.mechanism for spec in shapes].count("toy-range") == 1
    assert type(shapes[-1]) is ToyRange and shapes[-1].domain == ("a", "b", "c", "d", "e")


def _shape_format_grid():
    """Every spec shape in every format; the fast set keeps each shape once, in each format in turn.

    So the fast set writes every shape and every format (each format for four or five shapes);
    tests/conformance also round-trips every registered mechanism through JSON Lines, CSV and Parquet.
    """
    shapes = every_spec_shape()
    return [
        pytest.param(
            fmt,
            spec,
            id=f"{fmt}-{_shape_id(spec)}",
            marks=[] if fmt == FORMATS[i % len(FORMATS)] else [pytest.mark.slow],
        )
        for fmt in FORMATS
        for i, spec in enumerate(shapes)
    ]


@pytest.mark.parametrize("fmt, spec", _shape_format_grid())
def test_every_registered_mechanism_round_trips_and_aggregates_alike(tmp_path, spec, fmt):
    """Write, read back, and aggregate from the file: the same reports and the same estimate table."""
    batch = encode_batch(spec, sample_values(spec, 300), np.random.default_rng(3))
    path = tmp_path / f"reports.{fmt}"
    assert write_reports(batch, path, spec) == len(batch)
    got, rejects = _read_all(path, spec, chunk_size=128)
    assert rejects == []
    _assert_same(batch, got)
    direct, from_file = make_aggregator(spec), make_aggregator(spec)
    direct.add_batch(batch)
    from_file.add_batch(got)
    pd.testing.assert_frame_equal(direct.estimate(confidence=0.9), from_file.estimate(confidence=0.9))


def test_write_single_reports_and_read_back(tmp_path):
    spec = ldp.OUE(domain=tuple("abcdefghij"), epsilon=1.0)  # 10 bits: 6 padding bits
    encoder = make_encoder(spec)
    reports = [encoder.encode("abcdefghij"[i % 10]) for i in range(40)]
    path = tmp_path / "r.csv"
    write_reports(reports, path, spec)
    got, rejects = _read_all(path, spec)
    assert rejects == []
    assert [r.tobytes() for r in got.bits] == [r.bits for r in reports]


def test_reports_that_cannot_be_written_are_input_errors(tmp_path):
    """A batch of another spec, an item that is no report, candidates given as one string: InputError."""
    from ldp.aggregator.candidates import unique_candidates
    from ldp.errors import InputError

    with pytest.raises(InputError, match="spec"):
        write_reports(_batch(GRR_STR, n=5), tmp_path / "x.jsonl", GRR_INT)
    with pytest.raises(InputError, match="ReportBatch or Report items"):
        write_reports([object()], tmp_path / "y.jsonl", GRR_INT)
    with pytest.raises(InputError, match="single string"):
        unique_candidates("abc")


def test_reports_of_another_spec_are_not_written(tmp_path):
    batch = _batch(GRR_STR, n=5)
    with pytest.raises(ParameterError, match="spec"):
        write_reports(batch, tmp_path / "x.jsonl", GRR_INT)


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("a.jsonl", "jsonl"),
        ("a.ndjson", "jsonl"),
        ("a.JSONL.GZ", "jsonl"),
        ("b.csv", "csv"),
        ("b.csv.gz", "csv"),
        ("c.parquet", "parquet"),
        ("-", "jsonl"),
    ],
)
def test_report_format_by_extension(name, fmt):
    assert report_format(name) == fmt


@pytest.mark.parametrize("name", ["a.txt", "a", "a.parquet.gz", "a.xlsx"])
def test_unknown_extension_is_a_parameter_error(name):
    with pytest.raises(ParameterError, match="extension"):
        report_format(name)


def test_missing_file_fails_before_reading(tmp_path):
    good = tmp_path / "good.jsonl"
    write_reports(_batch(GRR_STR, 5), good, GRR_STR)
    with pytest.raises(ParameterError, match="does not exist"):
        list(read_reports([good, tmp_path / "missing.jsonl"], GRR_STR))


def test_corrupt_gzip_and_parquet_are_parameter_errors(tmp_path):
    bad_gz = tmp_path / "r.jsonl.gz"
    bad_gz.write_bytes(b"\x1f\x8b\x08\x00garbage-that-is-not-deflate")
    with pytest.raises(ParameterError, match="cannot read"):
        list(read_report_file(bad_gz, GRR_STR))
    bad_pq = tmp_path / "r.parquet"
    bad_pq.write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(ParameterError, match="Parquet"):
        list(read_report_file(bad_pq, GRR_STR))


def test_chunks_are_bounded_and_lines_counted_across_chunks(tmp_path):
    spec = RAPPOR
    batch = _batch(spec, n=1000)
    lines = list(batch.to_json_lines(spec))
    lines[777] = "not json"
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    chunks = list(read_report_file(path, spec, chunk_size=100))
    assert all(chunk.rows <= 100 for chunk in chunks)
    assert sum(chunk.rows for chunk in chunks) == 1000
    rejects = [r for c in chunks for r in c.rejects]
    assert [(r.line, r.reason, r.raw) for r in rejects] == [(778, "unparseable", "not json")]


# -- bad input: every kind rejected with its line, nothing valid lost -----------------


def _rappor_bad_lines(fp):
    good_bits = base64.b64encode(bytes([0x12, 0x34])).decode()
    return {
        "unparseable": "{not json",
        "missing_field": json.dumps({"v": 1, "spec": fp, "bits": good_bits}),
        "unexpected_field": json.dumps({"v": 1, "spec": fp, "cohort": 1, "bits": good_bits, "seed": 4}),
        "wrong_version": json.dumps({"v": 3, "spec": fp, "cohort": 1, "bits": good_bits}),
        "wrong_spec": json.dumps({"v": 1, "spec": "0123456789abcdef", "cohort": 1, "bits": good_bits}),
        "wrong_length": json.dumps(
            {"v": 1, "spec": fp, "cohort": 1, "bits": base64.b64encode(b"\x01\x02\x03").decode()}
        ),
        "bad_encoding": json.dumps({"v": 1, "spec": fp, "cohort": 1, "bits": "!!!!"}),
        "cohort_out_of_range": json.dumps({"v": 1, "spec": fp, "cohort": 8, "bits": good_bits}),
    }


@pytest.mark.parametrize("chunk_size", [7, 100_000])
def test_each_kind_of_bad_jsonl_line_is_rejected_and_valid_ones_kept(tmp_path, chunk_size):
    spec = RAPPOR
    batch = _batch(spec, n=300)
    lines = list(batch.to_json_lines(spec))
    bad = _rappor_bad_lines(spec.fingerprint)
    expected = {}
    for k, (reason, text) in enumerate(bad.items()):
        position = 20 * k + 3
        lines.insert(position, text)
        expected[position + 1] = (reason, text)
    lines.insert(100, "")  # a blank line is not a report
    expected = {(line if line <= 100 else line + 1): v for line, v in expected.items()}
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    got, rejects = _read_all(path, spec, chunk_size=chunk_size)
    assert {r.line: (r.reason, r.raw) for r in rejects} == expected
    assert all(r.file == str(path) for r in rejects)
    _assert_same(batch, got)


def test_bad_padding_is_rejected(tmp_path):
    spec = ldp.OUE(domain=tuple("abcdefghij"), epsilon=1.0)
    good = Report(spec=spec.fingerprint, bits=bytes([0x80, 0x40]))
    bad = Report(spec=spec.fingerprint, bits=bytes([0x80, 0x41]))
    path = tmp_path / "r.jsonl"
    path.write_text(good.to_json() + "\n" + bad.to_json() + "\n")
    got, rejects = _read_all(path, spec)
    assert [(r.line, r.reason) for r in rejects] == [(2, "bad_padding")]
    assert got.bits.tolist() == [[0x80, 0x40]]


def test_grr_value_out_of_domain_and_string_forms(tmp_path):
    spec = GRR_INT
    fp = spec.fingerprint
    rows = [
        {"v": 1, "spec": fp, "value": 5},
        {"v": 1, "spec": fp, "value": 6},  # not in the domain
        {"v": 1, "spec": fp, "value": "7"},  # string form of an integer value: accepted
        {"v": 1, "spec": fp, "value": True},  # a boolean is not a value
        {"v": 1, "spec": fp},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got, rejects = _read_all(path, spec)
    assert [(r.line, r.reason) for r in rejects] == [
        (2, "value_out_of_domain"),
        (4, "bad_encoding"),
        (5, "missing_field"),
    ]
    assert sorted(got.values.tolist()) == [1, 2]


def test_olh_bucket_and_seed_out_of_range(tmp_path):
    spec = OLH
    fp = spec.fingerprint
    rows = [
        {"v": 1, "spec": fp, "seed": 12, "value": 0},
        {"v": 1, "spec": fp, "seed": 12, "value": spec.g},
        {"v": 1, "spec": fp, "seed": 2**62 + 1, "value": 0},
        {"v": 1, "spec": fp, "seed": -1, "value": 0},
        {"v": 1, "spec": fp, "seed": 13, "value": 1},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got, rejects = _read_all(path, spec)
    assert [(r.line, r.reason) for r in rejects] == [
        (2, "value_out_of_domain"),
        (3, "seed_out_of_range"),
        (4, "seed_out_of_range"),
    ]
    assert got.seeds.tolist() == [12, 13] and got.values.tolist() == [0, 1]


def test_csv_bad_rows_have_their_file_line(tmp_path):
    spec = GRR_STR
    fp = spec.fingerprint
    text = (
        (
            "v,spec,value\n"
            f"1,{fp},a\n"
            f'1,{fp},"b,c"\n'
            f"1,{fp},zzz\n"  # line 4: not in the domain
            f"1,{fp}\n"  # line 5: too few fields
            "\n"
            f"3,{fp},a\n"  # line 7: wrong version (3 is unknown)
            f'1,{fp},"q""x"\n'
            f"1,{fp},d\n"
        ).encode()
        + b"1,"
        + fp.encode()
        + b",\xff\xfe\n"
        + f"1,{fp},a\n".encode()
    )  # line 10: bad UTF-8
    path = tmp_path / "r.csv"
    path.write_bytes(text)
    got, rejects = _read_all(path, spec, chunk_size=3)
    assert [(r.line, r.reason) for r in rejects] == [
        (4, "value_out_of_domain"),
        (5, "unparseable"),
        (7, "wrong_version"),
        (10, "unparseable"),
    ]
    assert rejects[1].raw == f"1,{fp}"
    assert sorted(got.values.tolist()) == sorted([0, 1, 2, 3, 0])


def test_csv_reader_module_uses_the_standard_library_csv(tmp_path):
    """``ldp.aggregator.readers.csv`` shares its name with the standard library's ``csv``, which it imports:
    imports are absolute, so it gets the standard library's module, and quoted fields read."""
    import ldp.aggregator.readers.csv as csv_reader

    assert csv_reader.csv is csv and csv_reader.io is io
    fp = GRR_STR.fingerprint
    path = tmp_path / "r.csv"
    path.write_text(f'v,spec,value\n1,{fp},"b,c"\n1,{fp},"q""x"\n1,{fp},zzz\n1,{fp},a\n')
    got, rejects = _read_all(path, GRR_STR, chunk_size=2)
    assert [(r.line, r.reason) for r in rejects] == [(4, "value_out_of_domain")]
    assert sorted(got.values.tolist()) == [0, 1, 2]


def test_csv_integer_cells_that_do_not_parse_are_rejected_alone(tmp_path):
    spec = RAPPOR
    batch = _batch(spec, n=50)
    path = tmp_path / "r.csv"
    write_reports(batch, path, spec)
    lines = path.read_text().splitlines()
    lines.insert(10, f"1,{spec.fingerprint},seven,AAA=")
    lines.insert(20, f"1,{spec.fingerprint},-1,AAA=")
    path.write_text("\n".join(lines) + "\n")
    got, rejects = _read_all(path, spec)
    assert [(r.line, r.reason) for r in rejects] == [(11, "bad_encoding"), (21, "cohort_out_of_range")]
    _assert_same(batch, got)


def test_parquet_bad_rows_are_rejected_by_row_number(tmp_path):
    spec = RAPPOR
    fp = spec.fingerprint
    table = pa.table(
        {
            "v": pa.array([1, 1, 1, 1, 3], pa.int64()),
            "spec": pa.array([fp, fp, "ffffffffffffffff", fp, fp]),
            "cohort": pa.array([0, 9, 1, 2, 3], pa.int64()),
            "bits": pa.array([b"\x00\x01", b"\x00\x01", b"\x00\x01", b"\x00", b"\x00\x01"], pa.binary()),
        }
    )
    path = tmp_path / "r.parquet"
    pq.write_table(table, path)
    got, rejects = _read_all(path, spec, chunk_size=2)
    assert [(r.line, r.reason) for r in rejects] == [
        (2, "cohort_out_of_range"),
        (3, "wrong_spec"),
        (4, "wrong_length"),
        (5, "wrong_version"),
    ]
    assert json.loads(rejects[0].raw)["cohort"] == 9
    assert got.cohorts.tolist() == [0]


def test_upper_case_fingerprint_is_accepted_like_check_report(tmp_path):
    spec = GRR_STR
    line = json.dumps({"v": 1, "spec": spec.fingerprint.upper(), "value": "a"})
    path = tmp_path / "r.jsonl"
    path.write_text(line + "\n")
    got, rejects = _read_all(path, spec)
    assert rejects == [] and got.values.tolist() == [0]


_VERSION_ROWS = [  # (v, group, accepted): v is an integer, 1 or 2; a group needs version 2
    (1, None, True),
    (2, "g", True),
    (2, None, True),  # version 2 with its optional group left out is a valid version-2 report
    (1, "g", False),
    (1.0, None, False),
    (2.0, "g", False),
    (True, None, False),
    ("1", None, False),
    (3, "g", False),
]


def _version_file(tmp_path, fmt, rows):
    """GRR reports with the given (v, group) as JSON Lines or CSV (a boolean v is the cell ``true``)."""
    fp = GRR_STR.fingerprint
    path = tmp_path / f"r.{fmt}"
    if fmt == "jsonl":
        records = [{"v": v, "spec": fp, "value": "a", **({"group": g} if g else {})} for v, g, _ in rows]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        cells = [("true" if v is True else str(v), g or "") for v, g, _ in rows]
        path.write_text("v,spec,value,group\n" + "".join(f"{v},{fp},a,{g}\n" for v, g in cells))
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("chunk_size", [2, 1000])
def test_version_is_checked_strictly_in_text_formats(tmp_path, fmt, chunk_size):
    rows = _VERSION_ROWS * 5  # 45 lines: the JSON Lines reader parses blocks of 32+ with Arrow
    if fmt == "csv":  # a CSV cell has no types: the text 1 is the integer 1
        rows = [(v, g, ok or (v == "1" and g is None)) for v, g, ok in rows]
    path = _version_file(tmp_path, fmt, rows)
    got, rejects = _read_all(path, GRR_STR, chunk_size=chunk_size)
    assert [r.line for r in rejects] == [
        i + 1 + (fmt == "csv") for i, (_, _, ok) in enumerate(rows) if not ok
    ]
    assert {r.reason for r in rejects} == {"wrong_version"}
    assert all("version" in r.detail for r in rejects)
    assert len(got) == sum(ok for _, _, ok in rows)
    assert sorted(g or "" for g in got.groups) == sorted(g or "" for _, g, ok in rows if ok)


@pytest.mark.parametrize(
    "column, groups, accepted",
    [
        (pa.array([1, 2], pa.int8()), [None, "g"], [True, True]),
        (pa.array([2, 2], pa.int64()), [None, "g"], [True, True]),
        (pa.array([1, 1], pa.uint8()), [None, "g"], [True, False]),
        (pa.array([1.0, 2.0], pa.float64()), [None, "g"], [False, False]),
        (pa.array([True, True]), [None, "g"], [False, False]),
        (pa.array(["1", "2"]), [None, "g"], [False, False]),
    ],
    ids=["int8", "v2-without-group", "v1-with-group", "float", "bool", "string"],
)
def test_version_is_checked_strictly_in_parquet(tmp_path, column, groups, accepted):
    spec = GRR_STR
    table = pa.table(
        {
            "v": column,
            "spec": [spec.fingerprint] * 2,
            "value": ["a", "d"],
            "group": pa.array(groups, pa.string()),
        }
    )
    path = tmp_path / "r.parquet"
    pq.write_table(table, path)
    got, rejects = _read_all(path, spec)
    assert [r.line for r in rejects] == [i + 1 for i, ok in enumerate(accepted) if not ok]
    assert all(r.reason == "wrong_version" for r in rejects)
    assert len(got) == sum(accepted)
    for i, ok in enumerate(accepted):  # check_report agrees row by row
        row = {
            "v": column[i].as_py(),
            "spec": spec.fingerprint,
            "value": "a",
            **({"group": groups[i]} if groups[i] else {}),
        }
        assert (_expected(spec, row) is not None) == ok


def test_report_names_the_version_field():
    spec = GRR_STR
    assert check_report(spec, Report(spec=spec.fingerprint, value="a", v=2)).group is None
    for bad in (1.0, True, "1", 3):
        with pytest.raises(ReportError, match="version 'v' must be an integer") as caught:
            Report.from_json(json.dumps({"v": bad, "spec": spec.fingerprint, "value": "a"}))
        assert classify_reason(str(caught.value)) == "wrong_version"
    assert check_report(spec, Report(spec=spec.fingerprint, value="a", group="g")).group == "g"


def test_frequency_reports_with_a_group_are_counted_and_the_group_ignored(tmp_path):
    spec = GRR_STR
    rows = [
        {"v": 2, "spec": spec.fingerprint, "value": "a", "group": "g"},
        {"v": 1, "spec": spec.fingerprint, "value": "d"},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got, rejects = _read_all(path, spec)
    assert rejects == [] and sorted(got.values.tolist()) == [0, 3]
    grouped = make_aggregator(spec)
    grouped.add_batch(got)
    plain = make_aggregator(spec)
    plain.add_batch(dataclasses.replace(got, groups=None))
    pd.testing.assert_frame_equal(grouped.estimate(), plain.estimate())


# -- the column-wise rules agree with check_report ------------------------------------

_MUTATIONS = {
    "v": st.sampled_from([3, 2, 0, "1", "2", 1.0, 2.0, True, False, None]),
    "spec": st.sampled_from(["UPPER", "0" * 16, "xyz", 7, None]),
    "cohort": st.one_of(st.integers(-2, 10), st.sampled_from(["1", 1.5, True, 2**40, None])),
    "bits": st.one_of(
        st.binary(min_size=0, max_size=3).map(lambda b: base64.b64encode(b).decode()),
        st.sampled_from(["AAA", "AA==", "====", "AAE", "A A=", "AA\n=", 5, None]),
    ),
    "seed": st.integers(-1, 3),
    "value": st.sampled_from(["x", 1]),
    "client": st.sampled_from(["c1", 4]),
    "group": st.sampled_from(["1.2", "", 4, "x" * 257, "x" * 256, "a\nb", "é", None]),
    "extra": st.just(1),
}


@st.composite
def _report_dicts(draw):
    """A valid RAPPOR report dict, then zero to two mutations (None deletes the field)."""
    fp = RAPPOR.fingerprint
    out = {
        "v": 1,
        "spec": fp,
        "cohort": draw(st.integers(0, RAPPOR.num_cohorts - 1)),
        "bits": base64.b64encode(draw(st.binary(min_size=2, max_size=2))).decode(),
    }
    for name in draw(st.lists(st.sampled_from(sorted(_MUTATIONS)), max_size=2)):
        value = draw(_MUTATIONS[name])
        if value == "UPPER":
            value = fp.upper()
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _expected(spec, data):
    """check_report's verdict on one report (JSON text or dict): its content, or None."""
    try:
        report = Report.from_dict(data) if isinstance(data, dict) else Report.from_json(data)
        return check_report(spec, report)
    except ReportError:
        return None


def _csv_report(header, row):
    """The report dict a CSV row stands for: empty cells absent, integer text in v/seed/cohort an int."""
    out = {}
    for name in header:
        text = _csv_text(row.get(name))
        if text == "":
            continue
        out[name] = (
            int(text) if name in ("v", "seed", "cohort") and re.fullmatch(r"[+-]?[0-9]+", text) else text
        )
    return out


def _csv_text(value):
    return "" if value is None else str(value)


def _write_rows(path, rows, fmt):
    """Write report dicts as JSON Lines or CSV; the 1-based line number each row starts on, and what check_report sees."""
    if fmt == "jsonl":
        lines = [json.dumps(row) for row in rows]
        path.write_text("\n".join(lines) + "\n")
        return list(range(1, len(rows) + 1)), lines
    header = list(dict.fromkeys(name for row in rows for name in row))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    numbers, line = [], 2
    for row in rows:
        start = out.tell()
        writer.writerow([_csv_text(row.get(name)) for name in header])
        numbers.append(line)
        line += out.getvalue()[start:].count("\n")
    path.write_text(out.getvalue())
    return numbers, [_csv_report(header, row) for row in rows]


_VERSION_CASES = [  # v must be an integer, 1 or 2; a group needs version 2
    {"v": 1, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE="},
    {"v": 1.0, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE="},
    {"v": True, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE="},
    {"v": "1", "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE="},
    {"v": 2, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE="},
    {"v": 2, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE=", "group": "g"},
    {"v": 2.0, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE=", "group": "g"},
    {"v": 1, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE=", "group": "g"},
    {"v": 3, "spec": RAPPOR.fingerprint, "cohort": 1, "bits": "AAE=", "group": "g"},
]


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rows=st.lists(_report_dicts(), min_size=1, max_size=80),
    chunk_size=st.sampled_from([3, 40, 1000]),
    fmt=st.sampled_from(["jsonl", "csv"]),
)
@example(rows=_VERSION_CASES * 4, chunk_size=3, fmt="jsonl")
@example(rows=_VERSION_CASES * 4, chunk_size=1000, fmt="jsonl")  # one Arrow block
@example(rows=_VERSION_CASES * 4, chunk_size=3, fmt="csv")
def test_reader_decides_exactly_like_check_report(tmp_path_factory, rows, chunk_size, fmt):
    """Every report is accepted iff check_report accepts it, and accepted content is identical."""
    spec = RAPPOR
    path = tmp_path_factory.mktemp("agree") / f"r.{fmt}"
    numbers, seen = _write_rows(path, rows, fmt)
    got, rejects = _read_all(path, spec, chunk_size=chunk_size)
    expected = [_expected(spec, data) for data in seen]
    lines = [number for number, e in zip(numbers, expected) if e is None]
    if fmt == "csv":
        # A row whose quoted field holds a line break ("a\nb" as group, "AA\n=" as bits) is never a valid
        # report here: its first line is rejected and each later line is read again as a row of its own
        # (docs: "CSV: one line, one row"), a fragment with fewer fields than the header, rejected too.
        ends = [*numbers[1:], path.read_bytes().count(b"\n") + 1]
        lines += [
            line
            for start, end, e in zip(numbers, ends, expected)
            if e is None
            for line in range(start + 1, end)
        ]
    assert sorted(r.line for r in rejects) == sorted(lines)
    assert all(r.reason in REASONS for r in rejects)
    valid = [e for e in expected if e is not None]
    groups = got.groups if got.groups is not None else [None] * len(got)
    assert sorted(
        zip(got.cohorts.tolist(), (b.tobytes() for b in got.bits), (g or "" for g in groups))
    ) == sorted((e.cohort, e.bits, e.group or "") for e in valid)


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.binary(max_size=2000),
    ext=st.sampled_from(["jsonl", "csv", "parquet"]),
    name=st.sampled_from(["grr-str", "oue", "rappor", "olh"]),
    chunk_size=st.sampled_from([1, 2, 3, 5, 64]),
)
def test_random_bytes_never_crash_the_readers(tmp_path_factory, data, ext, name, chunk_size):
    """Random bytes with every report kind (value, bits, cohort + bits, seed + bucket), small chunks."""
    spec = SPECS[name]
    path = tmp_path_factory.mktemp("fuzz") / f"r.{ext}"
    path.write_bytes(data)
    try:
        got, rejects = _read_all(path, spec, chunk_size=chunk_size)
    except (
        ParameterError
    ):  # only a file that cannot be read at all (not Parquet) fails, and with a clear error
        assert ext == "parquet"
        return
    assert len(got) + len(rejects) <= data.count(b"\n") + 1
    assert all(r.reason in REASONS and r.line >= 1 for r in rejects)
    assert len({r.line for r in rejects}) == len(rejects)  # one reject per bad report


def _csv_header(spec):
    return ["v", "spec", *required_fields(spec)]


_cells = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=6),
    st.sampled_from(["1", "2", "1.0", "true", "0", "-1", "AA==", "AAE=", "====", "", " "]),
)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    name=st.sampled_from(["grr-str", "oue", "rappor", "olh"]),
    chunk_size=st.sampled_from([1, 2, 3, 4, 7]),
)
def test_every_csv_row_is_counted_or_rejected(tmp_path_factory, data, name, chunk_size):
    """Valid rows, rows of random cells and rows with the wrong number of fields, in small chunks.

    Every non-blank data row ends up either in a batch or in the rejects, and
    exactly the rows check_report accepts are counted.
    """
    spec = SPECS[name]
    header = _csv_header(spec)
    valid = [[str(r.to_dict().get(h, "")) for h in header] for r in _batch(spec, n=12, seed=4).reports(spec)]
    rows = data.draw(
        st.lists(
            st.one_of(
                st.sampled_from(valid),
                st.lists(_cells, min_size=len(header), max_size=len(header)),  # right width, random cells
                st.lists(_cells, min_size=0, max_size=len(header) + 2),  # mostly the wrong width
            ),
            max_size=40,
        )
    )
    rows = [row for row in rows if row and not (len(row) == 1 and not row[0].strip())]  # not blank lines
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path = tmp_path_factory.mktemp("csv-fuzz") / "r.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    got, rejects = _read_all(path, spec, chunk_size=chunk_size)
    assert len(got) + len(rejects) == len(rows)
    assert sorted(r.line for r in rejects) == [
        i + 2
        for i, row in enumerate(rows)
        if len(row) != len(header) or _expected(spec, _csv_report(header, dict(zip(header, row)))) is None
    ]
    assert all(r.reason in REASONS for r in rejects)


# -- vectorized helpers ------------------------------------------------------------------


@given(st.lists(st.binary(min_size=5, max_size=5), min_size=1, max_size=20))
def test_base64_rows_match_the_standard_library(rows):
    encoded = base64_encode_rows(np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), 5))
    assert [bytes(r).decode() for r in encoded] == [base64.b64encode(r).decode() for r in rows]


def test_validate_columns_reads_fixed_size_binary_and_dictionary_columns():
    spec = RAPPOR
    n = 4
    columns = {
        "v": pa.array([1] * n, pa.int8()),
        "spec": pa.array([spec.fingerprint] * n).dictionary_encode(),
        "cohort": pa.array([0, 1, 2, 3], pa.uint32()),
        "bits": pa.array([b"\x00\x01", b"\x02\x03", b"\x04\x05", b"\x06\x07"], pa.binary(2)),
    }
    ok, batch = validate_columns(spec, columns, n)
    assert ok.all()
    assert batch.bits.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert batch.cohorts.tolist() == [0, 1, 2, 3]


# -- rejects and estimates writers -------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "csv.gz"])
def test_rejects_writer_formats_and_counts(tmp_path, suffix):
    from ldp.aggregator.rejects import Reject

    items = [
        Reject("a.jsonl", 3, "wrong_spec", "report is for spec x", '{"v":1}'),
        Reject("a.jsonl", 9, "unparseable", 'bad, "json"', "{,\n"),
    ]
    path = tmp_path / f"rejects.{suffix}"
    with RejectsWriter(path) as writer:
        writer.write(items)
    assert writer.counts == {"wrong_spec": 1, "unparseable": 1} and writer.total == 2
    opener = gzip.open if suffix.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as stream:
        if suffix.startswith("csv"):
            rows = list(csv.DictReader(stream))
            assert [(r["file"], int(r["line"]), r["reason"], r["detail"], r["raw"]) for r in rows] == [
                (i.file, i.line, i.reason, i.detail, i.raw) for i in items
            ]
        else:
            assert [json.loads(line) for line in stream] == [i.to_dict() for i in items]


def test_rejects_jsonl_is_one_line_per_reject_even_with_unicode_line_breaks(tmp_path):
    """NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR in the raw text are escaped, not written raw.

    Python's str.splitlines (and many log tools) break lines at them, so a
    raw one would turn one reject into two unreadable records (the fuzz
    test's failing case was a report line holding only U+0085).
    """
    from ldp.aggregator.rejects import Reject

    items = [
        Reject("a.jsonl", 1, "unparseable", "not JSON", raw)
        for raw in ("\x85", "a\u2028b", "\u2029", "caf\u00e9")
    ]
    path = tmp_path / "rejects.jsonl"
    with RejectsWriter(path) as writer:
        writer.write(items)
    text = path.read_text(encoding="utf-8")
    assert not set("\x85\u2028\u2029") & set(text)
    assert "café" in text  # other non-ASCII text stays readable
    assert [json.loads(line) for line in text.splitlines()] == [i.to_dict() for i in items]


def test_rejects_writer_rejects_unknown_extension(tmp_path):
    with pytest.raises(ParameterError, match="rejects file"):
        RejectsWriter(tmp_path / "rejects.txt")


@pytest.mark.parametrize(
    "message, reason",
    [
        ("report is for spec 0123456789abcdef, not fedcba9876543210", "wrong_spec"),
        ("report has no 'cohort' (rappor reports carry cohort, bits)", "missing_field"),
        ("report has no version field 'v'", "missing_field"),
        ("report version 3 is not supported (this version reads 1)", "wrong_version"),
        ("bits have 3 bytes, expected 2 for 16 bits", "wrong_length"),
        ("cohort 9 is out of range [0, 8)", "cohort_out_of_range"),
        ("value 'z' is not in the domain (3 values: 'a', 'b', 'c')", "value_out_of_domain"),
        ("report 'bits' is not valid base64", "bad_encoding"),
    ],
)
def test_classify_reason(message, reason):
    assert classify_reason(message) == reason


@pytest.mark.parametrize("suffix", ["csv", "json", "jsonl", "parquet"])
def test_write_estimates_by_extension(tmp_path, suffix):
    import pandas as pd

    frame = pd.DataFrame({"value": ["a", "b"], "estimate": [10.5, -2.25], "std_error": [1.0, 1.5]})
    path = tmp_path / f"est.{suffix}"
    write_estimates(frame, path)
    if suffix == "csv":
        back = pd.read_csv(path)
    elif suffix == "json":
        back = pd.DataFrame(json.loads(path.read_text()))
    elif suffix == "jsonl":
        back = pd.read_json(path, lines=True)
    else:
        back = pd.read_parquet(path)
    assert back["value"].tolist() == ["a", "b"]
    np.testing.assert_array_equal(back["estimate"].to_numpy(), frame["estimate"].to_numpy())


def test_write_estimates_table_on_stdout(capsys):
    import pandas as pd

    write_estimates(pd.DataFrame({"value": ["a"], "estimate": [1234.5]}))
    out = capsys.readouterr().out
    assert "value" in out and "1,234.5" in out


@pytest.mark.parametrize("read_bytes", [1, 7, 1 << 24])
@pytest.mark.parametrize("chunk_size", [3, 40, 100_000])
def test_jsonl_blocks_keep_line_numbers_across_reads(tmp_path, monkeypatch, read_bytes, chunk_size):
    import ldp.aggregator.readers.common as reader_module

    monkeypatch.setattr(reader_module, "_READ_BYTES", read_bytes)
    spec = GRR_STR
    batch = _batch(spec, n=120)
    lines = list(batch.to_json_lines(spec))
    lines[50] = lines[50] + "\r"  # CRLF line: still valid
    lines.insert(60, "   ")  # whitespace-only line: not a report
    lines.insert(70, "[1, 2]")  # line 71: not an object
    path = tmp_path / "r.jsonl"
    path.write_bytes("\n".join(lines).encode())  # no final newline
    got, rejects = _read_all(path, spec, chunk_size=chunk_size)
    assert [(r.line, r.reason, r.raw) for r in rejects] == [(71, "unparseable", "[1, 2]")]
    _assert_same(batch, got)


def test_pathological_json_is_rejected_not_raised(tmp_path):
    spec = RAPPOR
    lines = ['{"v": 1, "cohort": ' + "9" * 5000 + "}", "[" * 100_000 + "]" * 100_000, '{"v": 1e400}']
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    got, rejects = _read_all(path, spec)
    assert len(got) == 0
    assert [r.line for r in rejects] == [1, 2, 3]
    assert all(r.reason in REASONS for r in rejects)


def test_csv_huge_integer_cells_are_rejected(tmp_path):
    spec = RAPPOR
    path = tmp_path / "r.csv"
    path.write_text(
        f"v,spec,cohort,bits\n1,{spec.fingerprint},{'9' * 5000},AAA=\n1,{spec.fingerprint},1,AAA=\n"
    )
    got, rejects = _read_all(path, spec)
    assert [(r.line, r.reason) for r in rejects] == [(2, "bad_encoding")]
    assert got.cohorts.tolist() == [1]


# -- CSV: the bulk split of unquoted lines against the csv module -----------------------------

_CSV_SPEC = ldp.GRR(domain=("a", "b", "c d"), epsilon=1.0)
_CSV_PIECES = [
    "1,{fp},a",
    "1,{fp},b",
    "1,{fp},c d",
    "1,{fp}",
    "1,{fp},a,",
    "",
    "  ",
    ",",
    "v,spec,value",
    "1,{fp},a\r",
    "1,{fp},\ra",
    "1,{fp},a\x00",
    "\ufeff1,{fp},b",
    '1,{fp},"a"',
    '"1,{fp}\n,a"',
    '1,{fp},"c d',
    "2,{fp},a",
    "1,{fp},z",
    " 1,{fp},a",
    "1,{fp},a\x85",
]


def _csv_reference(data: bytes, spec, header=None, strip_bom=True):
    """Every line through the csv module (the reader's slow path), as (accumulator, rejects)."""
    from ldp.aggregator.readers.csv import _CsvRows, _Lines

    rows = _CsvRows("f.csv", spec, 7, header)
    chunks = list(rows.take_lines(_Lines(io.BytesIO(data), strip_bom=strip_bom)))
    chunks.append(rows.take())
    return _accumulate_chunks(spec, [c for c in chunks if c is not None])


def _accumulate_chunks(spec, chunks):
    accumulator, rejects = make_aggregator(spec), []
    for chunk in chunks:
        if len(chunk.batch):
            accumulator.add_batch(chunk.batch)
        rejects += [r.to_dict() for r in chunk.rejects]
    return accumulator, rejects


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(st.sampled_from(_CSV_PIECES), st.binary(max_size=10).map(lambda b: b.decode("latin-1"))),
        max_size=30,
    ),
    bad_utf8=st.lists(st.integers(0, 30), max_size=2),
    line_end=st.sampled_from(["\n", "\r\n"]),
    final_newline=st.booleans(),
    bom=st.booleans(),
    header=st.booleans(),
    chunk_size=st.sampled_from([1, 2, 5, 100]),
)
def test_csv_bulk_split_equals_the_csv_module(
    pieces, bad_utf8, line_end, final_newline, bom, header, chunk_size
):
    """The reader's bulk path gives exactly the csv module's reports and rejects, whatever the lines."""
    from ldp.aggregator.io import read_csv_stream

    spec = _CSV_SPEC
    lines = [p.replace("{fp}", spec.fingerprint).encode("utf-8") for p in pieces]
    for k in bad_utf8:
        lines.insert(min(k, len(lines)), b"1,\xff\xfe")
    if not header:
        lines.insert(0, b"v,spec,value")
    data = (
        (b"\xef\xbb\xbf" if bom else b"")
        + line_end.encode().join(lines)
        + (line_end.encode() if final_newline else b"")
    )
    names = ("v", "spec", "value") if header else None
    got = _accumulate_chunks(
        spec, read_csv_stream(io.BytesIO(data), "f.csv", spec, chunk_size=chunk_size, header=names)
    )
    expected = _csv_reference(data, spec, header=names)
    assert got[0] == expected[0]
    assert got[1] == expected[1]


# -- CSV: quoted fields in bulk (Arrow) against the csv module ---------------------------------

_QUOTED_GOOD = ['"1","{fp}","a"', '1,"{fp}","c d"', '1,{fp},"b"', '"1",{fp},b']
_QUOTED_PIECES = [
    *_QUOTED_GOOD,
    '1,"{fp}",""',  # an empty quoted cell is an absent field
    '1,{fp},"a,b"',  # a comma inside quotes
    '1,{fp},"a""b"',  # a doubled quote: the csv module's rules, not Arrow's
    '1,{fp},"a"b',  # text after a closing quote
    '1,{fp},a"b"',  # a quote inside an unquoted field
    '1,"{fp}" ,a',  # a space after a closing quote
    '"1,{fp},a',  # a quote that does not close on its line
    '1,{fp},"a\x00"',
    '1,{fp},"a\rb"',
    '1,{fp},"\xff"',
    "1,{fp},a",
    "",
    "1,{fp}",
    '"",{fp},a',  # a quoted empty version cell
    '1,"",a',  # a quoted empty fingerprint (a dictionary-encoded column)
    '1,{fp},""""',  # a doubled quote alone
    '1,{fp},"',  # a lone quote closing the line
    '1,"{fp},a"',  # a comma inside quotes spanning two cells
    '1,{fp},"a"""',  # a doubled quote before the closing one
]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.tuples(st.integers(0, 80), st.sampled_from(_QUOTED_PIECES)), max_size=6),
    line_end=st.sampled_from(["\n", "\r\n"]),
    quoted_header=st.booleans(),
    bom=st.booleans(),
    chunk_size=st.sampled_from([40, 64, 1000]),
)
def test_csv_quoted_bulk_equals_the_csv_module(pieces, line_end, quoted_header, bom, chunk_size):
    """Blocks with quoted fields, read by Arrow in bulk, give exactly the csv module's reports and rejects."""
    from ldp.aggregator.io import read_csv_stream

    spec = _CSV_SPEC
    lines = [_QUOTED_GOOD[i % len(_QUOTED_GOOD)] for i in range(80)]
    for at, piece in pieces:
        lines.insert(at, piece)
    header = '"v","spec","value"' if quoted_header else "v,spec,value"
    text = line_end.join([header, *(line.replace("{fp}", spec.fingerprint) for line in lines)]) + line_end
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8").replace(b"\xc3\xbf", b"\xff")
    got = _accumulate_chunks(spec, read_csv_stream(io.BytesIO(data), "f.csv", spec, chunk_size=chunk_size))
    expected = _csv_reference(data, spec)
    assert got[0] == expected[0]
    assert got[1] == expected[1]


@pytest.mark.parametrize("final_newline", [True, False])
def test_line_pieces_are_whole_lines_that_join_to_the_stream(final_newline):
    """Pieces end just after a newline, hold at most ``size`` bytes unless one line is longer, and join to the input."""
    from ldp.aggregator.readers.common import _line_pieces

    lines = [b"x" * length + b"\n" for length in (3, 0, 7, 40, 1, 2, 25, 5, 9)]
    data = b"".join(lines) + (b"" if final_newline else b"tail")
    pieces = list(_line_pieces(io.BytesIO(data), size=16))
    assert b"".join(pieces) == data
    for piece in pieces[:-1]:
        assert piece.endswith(b"\n")
        assert len(piece) <= 16 or piece.count(b"\n") == 1  # the 41-byte line alone
    assert all(pieces)


class _ReadOnlyStream:
    """A binary stream with ``read`` only (no ``readinto``), as a byte range of a file may be."""

    def __init__(self, data: bytes):
        self._stream = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._stream.read(size)


@pytest.mark.parametrize("make_stream", [io.BytesIO, _ReadOnlyStream])
@pytest.mark.parametrize("size", [1, 4, 16, 100])
def test_line_pieces_of_long_last_lines_and_streams_without_readinto(make_stream, size):
    """Lines longer than the piece size, at the end without a newline, from streams with or without readinto."""
    from ldp.aggregator.readers.common import _line_pieces

    for data in (
        b"",
        b"a",
        b"\n",
        b"x" * 50,
        b"ab\n" + b"y" * 37,
        b"\n\n" + b"z" * 20 + b"\nq",
        b"abc\n" * 30,
    ):
        pieces = list(_line_pieces(make_stream(data), size=size))
        assert b"".join(pieces) == data
        assert all(piece.endswith(b"\n") for piece in pieces[:-1])
        assert all(len(piece) <= size or piece.rstrip(b"\n").count(b"\n") == 0 for piece in pieces)


@pytest.mark.parametrize(
    "cells",
    [
        ['"abc"', '"de"', '""', '"f"'],  # every cell quoted, widths vary, one empty
        ['"abcd"', '"efgh"', '"ijkl"'],  # every cell quoted, one width
        ["abc", '"de"', None, '""', "f"],  # some quoted, an empty cell
        ['"a"b"', '"c"'],  # a quote inside a cell: not plain
        ['"a', 'b"'],  # quotes that do not close in their cell
        ['"', '"a""b"'],  # a lone quote, a doubled one
        ['"ab"', 'c"d', '"e"'],  # two quotes a cell, counts right, one not at the ends
    ],
)
def test_unquoted_cells_are_the_csv_modules_cells_or_none(cells):
    """Cells split at commas lose the quotes of a whole quoted field, as the csv module reads them; other quotes: None."""
    from ldp.aggregator.readers.csv import _unquoted_cells

    column = pa.array(cells, type=pa.string())
    got = _unquoted_cells(column)
    plain = all(
        c is None or '"' not in c or (len(c) >= 2 and c[0] == c[-1] == '"' and c.count('"') == 2)
        for c in cells
    )
    if not plain:
        assert got is None
        return
    expected = [None if c is None else next(csv.reader([c], strict=True))[0] if c else None for c in cells]
    assert got.to_pylist() == [None if e == "" else e for e in expected]
    assert _unquoted_cells(column.slice(1)).to_pylist() == got.to_pylist()[1:]


def _dialect_file(dialect: str, rows: list[list[str]]) -> bytes:
    """The rows (header first) as a standard tool writes CSV."""
    import pyarrow.csv as pa_csv

    if dialect == "pyarrow":  # strings quoted, LF
        table = pa.table({name: [row[j] for row in rows[1:]] for j, name in enumerate(rows[0])})
        table = table.set_column(0, "v", pa.array([int(row[0]) for row in rows[1:]]))
        sink = io.BytesIO()
        pa_csv.write_csv(table, sink)
        return sink.getvalue()
    if dialect == "pandas":  # quotes only where needed, LF
        return pd.DataFrame(rows[1:], columns=rows[0]).to_csv(index=False).encode()
    text = io.StringIO()
    quoting = {"csv quote all": csv.QUOTE_ALL, "csv minimal": csv.QUOTE_MINIMAL, "R": csv.QUOTE_NONNUMERIC}
    writer = csv.writer(text, quoting=quoting[dialect])  # CRLF line ends, as the csv module writes them
    body: list[list] = [[int(row[0]), *row[1:]] for row in rows[1:]] if dialect == "R" else rows[1:]
    writer.writerows([rows[0], *body])
    return text.getvalue().encode()


@pytest.mark.parametrize("dialect", ["pyarrow", "pandas", "csv quote all", "csv minimal", "R"])
def test_csv_dialects_of_standard_tools_are_parsed_by_arrow_in_bulk_with_identical_results(
    monkeypatch, dialect
):
    """CSV as pyarrow, pandas, R and the csv module write it: Arrow parses every line after the header at once.

    The reports and rejects equal the csv module's line by line (a reject
    of another spec, an unknown value, an empty cell and a quoted comma
    among them), and no data line goes through the line-by-line path.
    """
    import ldp.aggregator.readers.csv as csv_reader
    from ldp.aggregator.io import read_csv_stream

    spec = _CSV_SPEC
    fp = spec.fingerprint
    rows = [["v", "spec", "value"]] + [["1", fp, spec.domain[i % 3]] for i in range(300)]
    rows[40] = ["1", "0000000000000000", "a"]  # another spec's report
    rows[41] = ["1", fp, "zz"]  # a value outside the domain
    rows[42] = ["1", fp, ""]  # no value
    data = _dialect_file(dialect, rows)
    exact_lines = []
    exact_block = csv_reader._exact_block

    def spy(rows_, block, ends, taken, strip_bom):
        exact_lines.append(int(ends.size))
        return exact_block(rows_, block, ends, taken, strip_bom)

    monkeypatch.setattr(csv_reader, "_exact_block", spy)
    got = _accumulate_chunks(spec, read_csv_stream(io.BytesIO(data), "f.csv", spec, chunk_size=64))
    assert exact_lines == [1]  # the header only
    expected = _csv_reference(data, spec)
    assert got[0] == expected[0]
    assert got[1] == expected[1]
    assert [r["line"] for r in got[1]] == [41, 42, 43]
    # a quoted comma (a value no tool would quote otherwise) is read exactly too, off the bulk path
    if dialect != "pandas":
        comma = data.replace(b"zz", b"z,z") if dialect == "pyarrow" else data.replace(b'"zz"', b'"z,z"')
        assert _accumulate_chunks(spec, read_csv_stream(io.BytesIO(comma), "f.csv", spec)) == _csv_reference(
            comma, spec
        )


@pytest.mark.parametrize(
    "case",
    ["doubled quote", "text after a closing quote", "quote inside a field", "unclosed quote", "lone CR"],
)
def test_csv_quoted_bad_line_is_rejected_alone(tmp_path, case):
    """A line that quotes otherwise than whole fields costs its own line only, as the csv module reads it."""
    fp = _CSV_SPEC.fingerprint
    bad = {
        "doubled quote": f'1,{fp},"a""b"',
        "text after a closing quote": f'1,{fp},"a"b',
        "quote inside a field": f'1,{fp},a"b"',
        "unclosed quote": f'1,{fp},"a',
        "lone CR": f'1,{fp},"a\rb"',
    }[case]
    lines = [f'"1","{fp}","a"'] * 100
    lines[50] = bad
    path = tmp_path / "r.csv"
    path.write_bytes(('"v","spec","value"\n' + "\n".join(lines) + "\n").encode())
    got, rejects = _read_all(path, _CSV_SPEC)
    assert [r.line for r in rejects] == [52]
    assert len(got) == 99


# -- directories of report files (datasets partitioned by window) ------------------------------------


def test_a_directory_is_read_as_its_parquet_files_in_window_order_skipping_hidden_names(tmp_path):
    from ldp.aggregator.datasets import dataset_files, dataset_windows
    from ldp.aggregator.io import check_paths

    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    batch = encode_batch(spec, ["a", "b", "c", "a"] * 5, np.random.default_rng(1))
    root = tmp_path / "ds"
    for window in (200, 100, 30):  # 30 < 100 < 200 numerically, not as text
        (root / f"window={window}").mkdir(parents=True)
        write_reports(batch, root / f"window={window}" / "part-00000.parquet", spec)
    (root / "_spec.json").write_text(spec.to_json())
    (root / "window=100" / ".part-00001.parquet.ldp-tmp").write_text("a writer's temporary")
    (root / "_tmp").mkdir()
    write_reports(batch, root / "_tmp" / "skipped.parquet", spec)
    expected = [str(root / f"window={w}" / "part-00000.parquet") for w in (30, 100, 200)]
    assert dataset_files(root) == expected == check_paths([root])
    assert dataset_windows(root) == [30, 100, 200]
    assert dataset_files(root, [200, 30]) == [expected[0], expected[2]]
    chunks = list(read_reports([root], spec, chunk_size=7))
    assert sum(len(chunk.batch) for chunk in chunks) == 3 * len(batch)
    assert not any(chunk.rejects for chunk in chunks)
    with pytest.raises(ParameterError, match="no partition window=5; its windows: 30, 100, 200"):
        dataset_files(root, [5])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ParameterError, match="holds no Parquet report files"):
        check_paths([tmp_path / "empty"])


def test_aggregate_refuses_an_output_inside_an_input_directory(tmp_path):
    """``ldp aggregate DIR -o DIR/est.parquet`` ran, and the next run read the estimates back as reports."""
    from click.testing import CliRunner

    from ldp.cli import check_outputs_distinct, cli

    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    root = tmp_path / "ds"
    (root / "window=100").mkdir(parents=True)
    write_reports(_batch(spec, 50), root / "window=100" / "part-00000.parquet", spec)
    (tmp_path / "spec.json").write_text(spec.to_json())
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    for output in (root / "est.parquet", root / "window=100" / "est.csv", tmp_path / "alias" / "est.csv"):
        result = CliRunner().invoke(
            cli, ["aggregate", "--spec", str(tmp_path / "spec.json"), str(root), "-o", str(output)]
        )
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "is inside the input directory REPORTS" in lines[0], result.stderr
        assert not output.exists()
    with pytest.raises(ParameterError, match=r"--rejects .* is inside the input directory"):
        check_outputs_distinct([("REPORTS", root)], [("-o", None), ("--rejects", root / "r.jsonl")])
    # beside the directory, or in one whose name merely starts alike: allowed
    check_outputs_distinct([("REPORTS", root)], [("-o", tmp_path / "est.csv"), ("--x", tmp_path / "ds2/e")])
    result = CliRunner().invoke(
        cli, ["aggregate", "--spec", str(tmp_path / "spec.json"), str(root), "-o", str(tmp_path / "est.csv")]
    )
    assert result.exit_code == 0, result.output
