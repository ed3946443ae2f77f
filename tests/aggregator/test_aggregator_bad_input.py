"""Bad input never crashes the aggregator: empty chunks flow through every decode path.

A CSV chunk whose rows all have the wrong number of fields is rejected before
the columns are built, so the column validator sees zero rows. These tests pin
that case down for every mechanism (GRR, BinaryRR, OUE/SUE, OLH/BLH, RAPPOR,
numeric), column type and format.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from conftest import sample_values

import ldp
from ldp.aggregator.cli import EXIT_REJECTS, aggregate
from ldp.aggregator.io import read_reports
from ldp.aggregator.report_columns import concat_batches, validate_columns
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch

DOMAIN = ("a", "b", "c", "d", "e")
SPECS = {
    "grr": ldp.GRR(domain=DOMAIN, epsilon=1.0),
    "grr-int": ldp.GRR(domain=(3, 5, 7), epsilon=1.0),
    "binaryrr": ldp.BinaryRR(domain=DOMAIN[:2], epsilon=1.0),
    "oue": ldp.OUE(domain=DOMAIN, epsilon=1.0),
    "sue": ldp.SUE(domain=tuple(f"v{i}" for i in range(12)), epsilon=1.0),
    "olh": ldp.OLH(domain=DOMAIN, epsilon=1.0),
    "blh": ldp.BLH(domain=DOMAIN, epsilon=1.0),
    "rappor": ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/4", p="1/4", q="3/4"),
    "rappor-12": ldp.Rappor(num_bits=12, num_hashes=2, num_cohorts=4, f="1/4", p="1/4", q="3/4"),
    "duchi": ldp.Duchi(epsilon=1.0, low=0, high=1),
    "piecewise": ldp.Piecewise(epsilon=1.0, low=0, high=1),
}
EMPTY_COLUMNS = {
    "string": pa.array([], pa.string()),
    "large_string": pa.array([], pa.large_string()),
    "dictionary": pa.array([], pa.string()).dictionary_encode(),
    "int64": pa.array([], pa.int64()),
    "uint64": pa.array([], pa.uint64()),
    "float64": pa.array([], pa.float64()),
    "bool": pa.array([], pa.bool_()),
    "binary": pa.array([], pa.binary()),
    "fixed_binary": pa.array([], pa.binary(2)),
    "null": pa.nulls(0),
    "chunked": pa.chunked_array([], pa.string()),
}
SUMMARY = re.compile(r"([\d,]+) reports read from \d+ files?: ([\d,]+) valid, ([\d,]+) rejected")


def _spec_file(tmp_path, spec):
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json())
    return str(path)


def _run(*args):
    return CliRunner().invoke(aggregate, [str(a) for a in args], catch_exceptions=False)


def _summary(result):
    """(read, valid, rejected) from the summary line (stderr; in the error message when nothing was valid)."""
    match = SUMMARY.search(result.stderr)
    assert match, result.stderr
    return tuple(int(g.replace(",", "")) for g in match.groups())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_zero_rows_validate_for_every_mechanism_and_column_type(name):
    """Every field, as every column type, alone or among the others: zero rows validate to zero rows.

    One test per mechanism looping over the 99 (column type, field) cases, each named on failure
    (as 1,089 tests, pytest's per-test overhead cost more than the checks).
    """
    spec = SPECS[name]
    for column in sorted(EMPTY_COLUMNS):
        for field in ("v", "spec", "value", "seed", "bits", "cohort", "client", "group", "unknown"):
            columns = {
                "v": pa.array([], pa.int64()),
                "spec": pa.array([], pa.string()),
                **{f: pa.array([], pa.string()) for f in ("value", "bits")},
                **{f: pa.array([], pa.int64()) for f in ("seed", "cohort")},
            }
            columns[field] = EMPTY_COLUMNS[column]
            for given in (columns, {field: EMPTY_COLUMNS[column]}):
                case = (column, field, sorted(given))
                ok, batch = validate_columns(spec, given, 0)
                assert ok.shape == (0,) and len(batch) == 0, case
                assert len(concat_batches(spec, [batch])) == 0, case


@pytest.mark.parametrize("name", sorted(SPECS))
def test_csv_of_only_wrong_field_count_rows_is_a_clean_error(tmp_path, name):
    """The review's reproduction: every row rejected before decoding; exit 2, each row in rejects."""
    spec = SPECS[name]
    header = {
        "value": "v,spec,value",
        "hashed": "v,spec,seed,value",
        "bits": "v,spec,bits",
        "rappor": "v,spec,cohort,bits",
        "numeric": "v,spec,value",
    }[spec.report_kind]
    reports = tmp_path / "b.csv"
    reports.write_text(f"{header}\n1,{spec.fingerprint}\n1\n")
    rejects = tmp_path / "rejects.jsonl"
    result = _run("--spec", _spec_file(tmp_path, spec), reports, "--rejects", rejects)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(
        "Error: nothing could be read: 2 reports read from 1 file: 0 valid, 2 rejected"
    )
    records = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(r["line"], r["reason"]) for r in records] == [(2, "unparseable"), (3, "unparseable")]
    assert "fields, the header has" in records[0]["detail"]


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("chunk_size", [1, 3, 4])
def test_a_chunk_of_only_bad_rows_inside_a_good_file(tmp_path, name, chunk_size):
    """Rows 5-8 (one whole chunk at --chunk-size 4) are bad; the estimates equal those of the clean file."""
    spec = SPECS[name]
    spec_path = _spec_file(tmp_path, spec)
    batch = encode_batch(spec, sample_values(spec, 40), np.random.default_rng(11))
    clean = tmp_path / "clean.csv"
    write_reports(batch, clean, spec)
    lines = clean.read_text().splitlines()
    bad = ["1", f"1,{spec.fingerprint}", "x,y,z,w,v,u", ","]
    dirty_lines = lines[:5] + bad + lines[5:]  # header, 4 good rows, then 4 bad ones
    dirty = tmp_path / "dirty.csv"
    dirty.write_text("\n".join(dirty_lines) + "\n")
    rejects = tmp_path / "rejects.csv"
    result = _run(
        "--spec", spec_path, dirty, "--chunk-size", chunk_size, "--rejects", rejects, "-o", tmp_path / "d.csv"
    )
    assert result.exit_code == EXIT_REJECTS, result.stderr
    assert _summary(result) == (44, 40, 4)
    assert pd.read_csv(rejects)["line"].tolist() == [6, 7, 8, 9]
    assert _run("--spec", spec_path, clean, "-o", tmp_path / "c.csv").exit_code == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "d.csv"), pd.read_csv(tmp_path / "c.csv"))


@pytest.mark.parametrize("name", ["oue", "rappor", "olh", "duchi"])
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_chunks_with_every_row_invalid_give_empty_batches(tmp_path, name, fmt):
    """JSON Lines and Parquet chunks whose rows are all invalid (wrong spec) yield empty batches, not errors."""
    spec = SPECS[name]
    other = SPECS["sue"] if name != "sue" else SPECS["oue"]
    good = encode_batch(spec, sample_values(spec, 6), np.random.default_rng(2))
    alien = encode_batch(other, sample_values(other, 6), np.random.default_rng(3))
    path = tmp_path / f"r.{fmt}"
    if fmt == "jsonl":
        path.write_text("\n".join([*alien.to_json_lines(other), *good.to_json_lines(spec)]) + "\n")
    else:
        import pyarrow.parquet as pq

        write_reports(alien, tmp_path / "alien.parquet", other)
        write_reports(good, tmp_path / "good.parquet", spec)
        table = pa.concat_tables(
            [pq.read_table(tmp_path / "alien.parquet"), pq.read_table(tmp_path / "good.parquet")],
            promote_options="permissive",
        )
        pq.write_table(table, path)
    chunks = list(read_reports([path], spec, chunk_size=3))
    assert [len(c.batch) for c in chunks] == [0, 0, 3, 3]
    assert [(r.line, r.reason) for c in chunks for r in c.rejects] == [(i, "wrong_spec") for i in range(1, 7)]


BIG = 5 * 1024 * 1024


@pytest.mark.parametrize(
    ("field", "bad", "reason"),
    [
        ("value", "x" * BIG, "value_out_of_domain"),
        ("spec", "y" * BIG, "wrong_spec"),
        ("z" * BIG, 1, "unexpected_field"),
    ],
    ids=["value", "spec", "field-name"],
)
def test_a_5_mb_bad_value_is_echoed_cut_and_kept_whole_once_in_the_rejects_file(tmp_path, field, bad, reason):
    """Issue 24: a 5 MB bad value went whole to stderr, and twice (detail and raw) into the rejects file."""
    spec = SPECS["grr"]
    good = {"v": 1, "spec": spec.fingerprint, "value": "a"}
    reports = tmp_path / "reports.jsonl"
    reports.write_text(json.dumps(good) + "\n" + json.dumps({**good, field: bad}) + "\n")
    spec_path = _spec_file(tmp_path, spec)
    result = _run("--spec", spec_path, reports)
    assert result.exit_code == EXIT_REJECTS
    assert len(result.stderr) < 1_000 and f"({BIG:,} characters)" in result.stderr
    rejects = tmp_path / "rejects.jsonl"
    assert _run("--spec", spec_path, reports, "--rejects", rejects).exit_code == EXIT_REJECTS
    [record] = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert record["reason"] == reason and len(record["detail"]) < 400
    assert record["raw"] == reports.read_text().splitlines()[1]  # the whole report, once
    assert rejects.stat().st_size < len(record["raw"]) + 1_000
