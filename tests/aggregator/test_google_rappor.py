"""Google RAPPOR file formats: params, counts, map (round trips, Google's MD5 rule, CLI)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import struct

import numpy as np
import pytest
from click.testing import CliRunner

import ldp
from ldp.aggregator.google import (
    counts_from_reports,
    read_counts,
    read_map,
    read_params,
    write_counts,
    write_map,
    write_params,
)
from ldp.aggregator.rappor.decode import decode, design_matrix
from ldp.cli import cli
from ldp.errors import ParameterError

GOOGLE_SPEC = ldp.Rappor(num_bits=8, num_hashes=2, num_cohorts=128, p="0.39", q="0.61", f="0.45", hash="md5")
SMALL = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, p="0.5", q="0.75", f="0.5", hash="md5")


def google_indices(word: str, num_cohorts: int, num_hashes: int, num_bits: int) -> list[int]:
    """Google's map row, computed independently: MD5(cohort as 4 big-endian bytes ‖ word), byte i mod k."""
    row = []
    for cohort in range(num_cohorts):
        digest = hashlib.md5(struct.pack(">L", cohort) + word.encode("utf-8")).digest()
        row.extend(cohort * num_bits + digest[i] % num_bits + 1 for i in range(num_hashes))
    return row


def test_params_round_trip(tmp_path):
    path = tmp_path / "params.csv"
    write_params(GOOGLE_SPEC, path)
    assert path.read_text().splitlines() == ["k,h,m,p,q,f", "8,2,128,0.39,0.61,0.45"]
    kwargs = read_params(path)
    assert ldp.Rappor(**kwargs) == GOOGLE_SPEC
    assert ldp.Rappor(**kwargs).fingerprint == GOOGLE_SPEC.fingerprint


def test_params_rejects_basic_rappor(tmp_path):
    with pytest.raises(ParameterError):
        write_params(ldp.Rappor.basic(("a", "b"), f="1/4", p="1/4", q="3/4"), tmp_path / "p.csv")


def test_counts_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    n = rng.integers(0, 1000, SMALL.num_cohorts)
    bits = rng.integers(0, 1, (SMALL.num_cohorts, SMALL.num_bits)) + (
        n[:, None] * rng.random((4, 16))
    ).astype(int)
    path = tmp_path / "counts.csv"
    write_counts(path, n, bits)
    lines = path.read_text().splitlines()
    assert len(lines) == SMALL.num_cohorts
    assert lines[0].split(",")[0] == str(n[0]) and lines[0].split(",")[1] == str(
        bits[0, 0]
    )  # N first, then bit 0
    n2, bits2 = read_counts(path, SMALL)
    np.testing.assert_array_equal(n2, n)
    np.testing.assert_array_equal(bits2, bits)


@pytest.mark.parametrize(
    "text",
    [
        "10," + ",".join(["1"] * 16) + "\n",  # one row, m = 4 expected
        "\n".join(["10," + ",".join(["1"] * 15)] * 4) + "\n",  # k columns, k + 1 expected
        "\n".join(["10," + ",".join(["11"] * 16)] * 4) + "\n",  # more ones than reports
        "\n".join(["10," + ",".join(["-1"] * 16)] * 4) + "\n",
        "\n".join(["10," + ",".join(["x"] * 16)] * 4) + "\n",
    ],
)
def test_bad_counts_file(tmp_path, text):
    path = tmp_path / "counts.csv"
    path.write_text(text)
    with pytest.raises(ParameterError):
        read_counts(path, SMALL)


def test_map_indices_equal_googles_md5_rule(tmp_path):
    candidates = ["v1", "v2", "v100", "hello, world", "ünïcode", '"quoted"']
    path = tmp_path / "map.csv"
    write_map(path, GOOGLE_SPEC, candidates)
    parsed = read_map(path, GOOGLE_SPEC)
    assert parsed.candidates == tuple(candidates)
    for word, row in zip(candidates, parsed.indices):
        assert row.tolist() == google_indices(word, 128, 2, 8)
    # the map's design matrix is the decoder's
    assert (parsed.design_matrix() != design_matrix(GOOGLE_SPEC, candidates)).nnz == 0


def test_map_duplicates_keep_first_and_bad_rows(tmp_path):
    path = tmp_path / "map.csv"
    write_map(path, SMALL, ["a", "b", "a"])
    assert read_map(path, SMALL).candidates == ("a", "b")
    path.write_text("a,1,2,3\n")
    with pytest.raises(ParameterError):
        read_map(path, SMALL)
    path.write_text("a," + ",".join(["65"] * 8) + "\n")  # index beyond m·k = 64
    with pytest.raises(ParameterError):
        read_map(path, SMALL)


def _reports(tmp_path, spec, values, seed=3):
    from ldp.client import encode_batch

    batch = encode_batch(spec, values, np.random.default_rng(seed))
    path = tmp_path / "reports.jsonl"
    path.write_text("\n".join(batch.to_json_lines(spec)) + "\n")
    return batch, path


def test_counts_from_reports_match_batch(tmp_path):
    batch, path = _reports(tmp_path, SMALL, ["a"] * 300 + ["b"] * 200)
    n, bits = counts_from_reports(SMALL, [path])
    unpacked = np.unpackbits(batch.bits, axis=1, count=SMALL.num_bits)
    for j in range(SMALL.num_cohorts):
        mine = batch.cohorts == j
        assert n[j] == mine.sum()
        np.testing.assert_array_equal(bits[j], unpacked[mine].sum(axis=0))


def test_cli_params_map_counts_and_decode_from_counts(tmp_path):
    runner = CliRunner()
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(SMALL.to_json())
    _, reports = _reports(tmp_path, SMALL, ["a"] * 3000 + ["b"] * 2000)
    (tmp_path / "cands.txt").write_text("a\nb\nzzz\n")
    out = runner.invoke(
        cli, ["google-rappor", "params", "--spec", str(spec_path), "-o", str(tmp_path / "params.csv")]
    )
    assert out.exit_code == 0, out.output
    assert ldp.Rappor(**read_params(tmp_path / "params.csv")) == SMALL
    out = runner.invoke(
        cli,
        [
            "google-rappor",
            "map",
            "--spec",
            str(spec_path),
            "--candidates",
            str(tmp_path / "cands.txt"),
            "-o",
            str(tmp_path / "map.csv"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert read_map(tmp_path / "map.csv", SMALL).indices[0].tolist() == google_indices("a", 4, 2, 16)
    out = runner.invoke(
        cli,
        [
            "google-rappor",
            "counts",
            "--spec",
            str(spec_path),
            str(reports),
            "-o",
            str(tmp_path / "counts.csv"),
        ],
    )
    assert out.exit_code == 0, out.output
    n, bits = read_counts(tmp_path / "counts.csv", SMALL)
    assert n.sum() == 5000
    direct = decode(SMALL, *counts_from_reports(SMALL, [reports]), ["a", "b", "zzz"])
    from_file = decode(SMALL, n, bits, ["a", "b", "zzz"])
    np.testing.assert_array_equal(direct["estimate"], from_file["estimate"])


def test_cli_errors_are_one_line(tmp_path):
    runner = CliRunner()
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(ldp.Rappor.boolean(f="1/4", p="1/4", q="3/4").to_json())
    out = runner.invoke(
        cli, ["google-rappor", "params", "--spec", str(spec_path), "-o", str(tmp_path / "p.csv")]
    )
    assert out.exit_code == 2
    assert "Error:" in out.output and "Traceback" not in out.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    spec_path.write_text(SMALL.to_json())
    rejects = tmp_path / "rejects.jsonl"
    out = runner.invoke(
        cli,
        [
            "google-rappor",
            "counts",
            "--spec",
            str(spec_path),
            str(bad),
            "-o",
            str(tmp_path / "c.csv"),
            "--rejects",
            str(rejects),
        ],
    )
    assert out.exit_code == 2  # as ldp aggregate: nothing could be read
    assert out.output.startswith(
        "Error: nothing could be read: 1 reports read from 1 file: 0 valid, 1 rejected (unparseable 1)"
    )
    assert out.output.count("\n") == 1 and "Traceback" not in out.output
    assert [(r["line"], r["reason"]) for r in map(json.loads, rejects.read_text().splitlines())] == [
        (1, "unparseable")
    ]
    assert not (tmp_path / "c.csv").exists()
    with pytest.raises(
        ParameterError, match=r"bad.jsonl:1: bad report \(unparseable\)"
    ):  # library: no rejects writer
        counts_from_reports(SMALL, [bad])


# -- counts from every report format, with rejects ------------------------------------------


def _counts_cli(*args):
    return CliRunner().invoke(cli, ["google-rappor", "counts", *map(str, args)], catch_exceptions=False)


def _write_formats(tmp_path, spec, batch):
    from ldp.aggregator.writers import write_reports

    paths = {}
    for fmt in ("jsonl", "csv", "parquet", "jsonl.gz", "csv.gz"):
        paths[fmt] = tmp_path / f"reports.{fmt}"
        write_reports(batch, paths[fmt], spec)
    return paths


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl.gz", "csv.gz"])
def test_counts_from_every_format_equal_counts_from_json_lines(tmp_path, fmt):
    from ldp.client import encode_batch

    batch = encode_batch(SMALL, ["a"] * 700 + ["b"] * 300 + ["c"] * 20, np.random.default_rng(8))
    paths = _write_formats(tmp_path, SMALL, batch)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(SMALL.to_json())
    outputs = {}
    for name in ("jsonl", fmt):
        outputs[name] = tmp_path / f"counts-{name.replace('.', '-')}.csv"
        result = _counts_cli("--spec", spec_path, paths[name], "-o", outputs[name], "--chunk-size", 64)
        assert result.exit_code == 0, result.output
        assert "1,020 reports read from 1 file: 1,020 valid, 0 rejected" in result.stderr
    assert outputs[fmt].read_text() == outputs["jsonl"].read_text()
    n, bits = read_counts(outputs[fmt], SMALL)
    unpacked = np.unpackbits(batch.bits, axis=1, count=SMALL.num_bits)
    np.testing.assert_array_equal(n, np.bincount(batch.cohorts, minlength=SMALL.num_cohorts))
    np.testing.assert_array_equal(
        bits, [unpacked[batch.cohorts == j].sum(axis=0) for j in range(SMALL.num_cohorts)]
    )
    for got, want in zip(
        counts_from_reports(SMALL, [paths[fmt]]), counts_from_reports(SMALL, [paths["jsonl"]])
    ):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "jsonl.gz"])
@pytest.mark.parametrize("rejects_name", ["rejects.jsonl", "rejects.csv"])
def test_counts_send_bad_reports_to_rejects_and_count_the_rest(tmp_path, fmt, rejects_name):
    import gzip

    from ldp.aggregator.cli import EXIT_REJECTS
    from ldp.client import encode_batch

    batch = encode_batch(SMALL, ["a"] * 200 + ["b"] * 100, np.random.default_rng(9))
    paths = _write_formats(tmp_path, SMALL, batch)
    plain = paths["jsonl"] if fmt.startswith("jsonl") else paths["csv"]
    lines = plain.read_text().splitlines()
    fp = SMALL.fingerprint
    if fmt.startswith("jsonl"):
        bad = {
            12: ("unparseable", "{not json"),
            101: ("cohort_out_of_range", json.dumps({"v": 1, "spec": fp, "cohort": 9, "bits": "AAA="})),
            202: ("wrong_version", json.dumps({"v": 3, "spec": fp, "cohort": 1, "bits": "AAA="})),
        }
    else:
        bad = {
            12: ("unparseable", f"1,{fp}"),
            101: ("cohort_out_of_range", f"1,{fp},9,AAA="),
            202: ("wrong_version", f"1.0,{fp},1,AAA="),
        }
    for line, (_, text) in sorted(bad.items()):
        lines.insert(line - 1, text)
    dirty = tmp_path / f"dirty.{fmt}"
    text = ("\n".join(lines) + "\n").encode()
    dirty.write_bytes(gzip.compress(text) if fmt.endswith(".gz") else text)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(SMALL.to_json())
    rejects = tmp_path / rejects_name
    result = _counts_cli(
        "--spec",
        spec_path,
        dirty,
        "--rejects",
        rejects,
        "-o",
        tmp_path / "counts-dirty.csv",
        "--chunk-size",
        50,
    )
    assert result.exit_code == EXIT_REJECTS, result.output
    assert "303 reports read from 1 file: 300 valid, 3 rejected" in result.stderr
    assert f"rejects written to {rejects}" in result.stderr
    if rejects_name.endswith(".jsonl"):
        records = [json.loads(line) for line in rejects.read_text().splitlines()]
    else:
        records = list(csv.DictReader(io.StringIO(rejects.read_text())))
    assert [(int(r["line"]), r["reason"], r["raw"], r["file"]) for r in records] == [
        (line, reason, raw, str(dirty)) for line, (reason, raw) in sorted(bad.items())
    ]
    assert _counts_cli("--spec", spec_path, plain, "-o", tmp_path / "counts-clean.csv").exit_code == 0
    assert (tmp_path / "counts-dirty.csv").read_text() == (tmp_path / "counts-clean.csv").read_text()


def test_counts_without_a_rejects_file_show_the_rejects_on_stderr(tmp_path):
    from ldp.aggregator.cli import EXIT_REJECTS
    from ldp.aggregator.rejects import RejectsWriter

    _, reports = _reports(tmp_path, SMALL, ["a"] * 40)
    with reports.open("a") as stream:
        stream.write("not json\n")
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(SMALL.to_json())
    result = _counts_cli("--spec", spec_path, reports, "-o", tmp_path / "counts.csv")
    assert result.exit_code == EXIT_REJECTS
    assert f"{reports}:41: unparseable" in result.stderr and "--rejects" in result.stderr
    n, _ = read_counts(tmp_path / "counts.csv", SMALL)
    assert n.sum() == 40
    with RejectsWriter() as writer:  # the library function takes a rejects writer too
        n2, _ = counts_from_reports(SMALL, [reports], rejects=writer, chunk_size=7)
    assert n2.sum() == 40 and writer.counts == {"unparseable": 1}


def test_counts_user_errors_exit_2(tmp_path):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(SMALL.to_json())
    for args, message in [
        ([tmp_path / "missing.jsonl"], "does not exist"),
        ([tmp_path / "reports.txt"], "extension"),
    ]:
        (tmp_path / "reports.txt").write_text("x\n")
        result = _counts_cli("--spec", spec_path, *args, "-o", tmp_path / "c.csv")
        assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("hash_name, warned", [("md5", False), ("mmh3", True)])
def test_params_warns_when_the_spec_does_not_hash_like_google(tmp_path, hash_name, warned):
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, p="0.5", q="0.75", f="0.5", hash=hash_name)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    out = CliRunner().invoke(
        cli, ["google-rappor", "params", "--spec", str(spec_path), "-o", str(tmp_path / "p.csv")]
    )
    assert out.exit_code == 0, out.output
    assert ("warning:" in out.output and "hash_candidates.py with md5" in out.output) is warned


@pytest.mark.parametrize(("num_bits", "num_hashes"), [(256, 16), (128, 2), (7, 3), (1, 1)])
def test_batched_md5_positions_are_googles_bit_for_bit(num_bits, num_hashes):
    """The chunked built-in-MD5 batch gives digest[i] mod k of hashlib's MD5(cohort ‖ value) for every pair.

    Values span 0 to 200 bytes (several MD5 blocks, multi-byte UTF-8), cohorts reach above 2^24,
    and the list is longer than one chunk of pairs, so each chunk boundary is crossed.
    """
    from ldp.hashing import _CHUNK_PAIRS, bloom_positions, bloom_positions_batch, md5_constructor

    values = [("é" * (i % 101)) + str(i) if i % 3 else i for i in range(_CHUNK_PAIRS // 4 + 7)]
    cohorts = [0, 1, 255, 256, (1 << 24) + 3]
    got = bloom_positions_batch(values, cohorts, num_hashes, num_bits, "md5")
    assert got.shape == (len(values), len(cohorts), num_hashes) and got.dtype == np.int64
    for s in range(0, len(values), 97):
        data = str(values[s]).encode("utf-8")
        for j, cohort in enumerate(cohorts):
            digest = hashlib.md5(cohort.to_bytes(4, "big") + data).digest()
            expected = [digest[i] % num_bits for i in range(num_hashes)]
            assert (
                got[s, j].tolist()
                == expected
                == bloom_positions(values[s], cohort, num_hashes, num_bits, "md5")
            )
    assert md5_constructor()(b"abc").digest() == hashlib.md5(b"abc").digest()
    assert bloom_positions_batch([], cohorts, num_hashes, num_bits, "md5").shape == (
        0,
        len(cohorts),
        num_hashes,
    )
