"""Engines: the Dask engine and the local thread pool give exactly the local result.

One in-process Dask cluster (``LocalCluster(processes=False)``) is started for
the module and reached through its address, as ``--scheduler`` would.
"""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import every_spec_shape, sample_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.cli import EXIT_REJECTS, aggregate
from ldp.aggregator.engines import DASK_EXTRA_MESSAGE, aggregate_files
from ldp.aggregator.partitions import plan_partitions, read_partition, renumber
from ldp.aggregator.rejects import RejectsWriter
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch
from ldp.errors import ParameterError
from ldp.registry import BUILTIN_MECHANISMS
from ldp.specs import FREQUENCY_MECHANISMS

DOMAIN = tuple(f"v{i}" for i in range(12))
RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/4", p="1/4", q="3/4")


def _one_spec_per_mechanism():
    """A spec of every registered mechanism (the registry is the list, so a new mechanism is covered)."""
    specs = {
        name: cls(domain=("no", "yes") if name == "binary-rr" else DOMAIN, epsilon=1.0)
        for name, cls in FREQUENCY_MECHANISMS.items()
    }
    specs["rappor"] = RAPPOR
    specs["duchi"] = ldp.Duchi(epsilon=1.0, low=0, high=10)
    for spec in every_spec_shape():
        specs.setdefault(spec.mechanism, spec)
    return specs


SPECS = _one_spec_per_mechanism()
CANDIDATES = [f"u{i}" for i in range(7)]
# small partitions so that every file is split into several
SMALL = {"partition_bytes": 2_000, "partition_rows": 150, "chunk_size": 64}


def _values(spec, n):
    if spec is RAPPOR:
        return [CANDIDATES[i % 7] for i in range(n)]
    if spec.report_kind == "numeric":
        return [(i * 7) % 11 for i in range(n)]
    if getattr(spec, "domain", None) is None or hasattr(spec, "example_inputs"):  # strings; key-value sets
        return sample_values(spec, n)
    return [spec.domain[(i * 7) % len(spec.domain)] for i in range(n)]


def _bad_lines(spec):
    fp = spec.fingerprint
    return [
        '{"v": 1, "spec": ',
        json.dumps({"v": 9, "spec": fp, "value": "x"}),
        json.dumps({"v": 1, "spec": "ffffffffffffffff", "value": "x"}),
        "",
        json.dumps({"v": 1, "spec": fp}),
    ]


def _write(tmp_path, spec, fmt, n=900, dirty=False, seed=5):
    rng, values = np.random.default_rng(seed), _values(spec, n)
    batches = [
        encode_batch(spec, values[i : i + 200], rng) for i in range(0, n, 200)
    ]  # Parquet: a row group each
    path = tmp_path / f"{spec.mechanism}-{seed}.{fmt}"
    write_reports(batches, path, spec)
    if dirty and fmt == "jsonl":
        lines = path.read_text().splitlines()
        for k, text in enumerate(_bad_lines(spec)):
            lines.insert(97 * k + 13, text)
        path.write_text("\n".join(lines))  # and no newline after the last line
    if dirty and fmt == "csv":
        _dirty_csv(path, spec)
    return str(path)


def _bad_csv_lines(spec):
    fp = spec.fingerprint
    return [
        b"1,too,many,fields,here,for,any,spec",
        b"9," + fp.encode() + b",x",  # wrong version (and maybe the wrong field count)
        b"",
        b"   ",
        b"\xff\xfe not UTF-8",
        b"1," + fp.encode() + b",a\rb",  # a lone CR: a CSV error
    ]


def _dirty_csv(path, spec):
    """Bad rows between good ones, a BOM and blank lines before the header, CRLF here and there, no final newline."""
    lines = path.read_bytes().splitlines()
    for k, raw in enumerate(_bad_csv_lines(spec)):
        lines.insert(61 * k + 17, raw)
    lines = [raw + b"\r" if k % 5 == 0 else raw for k, raw in enumerate(lines)]
    path.write_bytes(b"\xef\xbb\xbf\n  \n" + b"\n".join(lines))


def _run_engine(spec, paths, rejects_path=None, **options):
    with RejectsWriter(rejects_path) as rejects:
        accumulator, valid = aggregate_files(spec, paths, rejects, **options)
    return accumulator, valid, rejects


def _estimate(spec, accumulator):
    if spec is RAPPOR:
        return accumulator.estimate(candidates=CANDIDATES)
    return accumulator.estimate()


def test_the_engine_cases_cover_the_spec_registry():
    assert set(SPECS) == {d.name for d in BUILTIN_MECHANISMS}


# The default run checks GRR and RAPPOR on Dask; `pytest -m slow` every other mechanism.
@pytest.mark.parametrize(
    "name", [n if n in ("grr", "rappor") else pytest.param(n, marks=pytest.mark.slow) for n in sorted(SPECS)]
)
def test_dask_equals_local_for_every_mechanism(tmp_path, scheduler, name):
    spec = SPECS[name]
    paths = [
        _write(tmp_path, spec, "jsonl", dirty=True, seed=1),
        _write(tmp_path, spec, "parquet", seed=2),
        _write(tmp_path, spec, "csv", dirty=True, seed=3),
    ]
    local, local_valid, local_rejects = _run_engine(spec, paths, tmp_path / "local.jsonl")
    dask, dask_valid, dask_rejects = _run_engine(
        spec, paths, tmp_path / "dask.jsonl", engine="dask", scheduler=scheduler, **SMALL
    )
    assert len(plan_partitions(paths, partition_bytes=2_000, partition_rows=150)) > 9
    assert dask == local
    assert dask_valid == local_valid == 2700
    assert dask_rejects.counts == local_rejects.counts and local_rejects.total == 8
    assert (tmp_path / "dask.jsonl").read_text() == (tmp_path / "local.jsonl").read_text()
    pd.testing.assert_frame_equal(_estimate(spec, dask), _estimate(spec, local))


def test_local_workers_equal_one_process(tmp_path):
    spec = SPECS["oue"]
    paths = [
        _write(tmp_path, spec, fmt, dirty=True, seed=seed)
        for seed, fmt in enumerate(["jsonl", "parquet", "csv", "jsonl.gz", "jsonl"])
    ]
    one, one_valid, _one_rejects = _run_engine(spec, paths, tmp_path / "one.csv")
    two, two_valid, _two_rejects = _run_engine(spec, paths, tmp_path / "two.csv", workers=2, **SMALL)
    assert two == one and two_valid == one_valid
    assert (tmp_path / "two.csv").read_text() == (tmp_path / "one.csv").read_text()
    pd.testing.assert_frame_equal(two.estimate(), one.estimate())


def test_byte_ranges_cover_every_line_once(tmp_path):
    """Any split of a JSON Lines file (blank lines, no final newline) reads each line once, numbered globally."""
    spec = SPECS["grr"]
    path = _write(tmp_path, spec, "jsonl", n=300, dirty=True)
    reference, _valid, _rejects = _run_engine(spec, [path], tmp_path / "ref.jsonl")
    expected = (tmp_path / "ref.jsonl").read_text()
    for size in (1, 7, 64, 500, 10_000):
        acc, lines, got = make_aggregator(spec), 0, []
        for part in plan_partitions([path], partition_bytes=size * 50):
            result = read_partition(part, spec, chunk_size=40)
            acc = acc.merge(result.accumulator)
            got += renumber(part, result.rejects, lines)
            lines += result.lines
        assert acc == reference and lines == len(Path(path).read_text().splitlines())
        assert "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in got) == expected


@pytest.mark.parametrize(
    "splits",
    [(37, 700, 5_000, None), pytest.param((1,), marks=pytest.mark.slow)],  # 1: a range at every byte (~1 s)
    ids=["some", "every-byte"],
)
def test_csv_byte_ranges_cover_every_row_once(tmp_path, splits):
    """Any split of an unquoted CSV file reads each row once, with the header, numbered globally.

    The file has a BOM and blank lines before its header, rows with the wrong
    number of fields, an undecodable line, a CSV error, CRLF line ends and no
    final newline: the ranges give exactly the one-reader result (None: two halves).
    """
    spec = SPECS["rappor"]
    path = _write(tmp_path, spec, "csv", n=400, dirty=True)
    reference, _valid, rejects = _run_engine(spec, [path], tmp_path / "ref.jsonl")
    assert rejects.total == len(_bad_csv_lines(spec)) - 2  # the two blank lines are not rows
    expected = (tmp_path / "ref.jsonl").read_text()
    size = os.path.getsize(path)
    for partition_bytes in (size // 2 if split is None else split for split in splits):
        parts = plan_partitions([path], partition_bytes=partition_bytes)
        assert len(parts) > 1 and {p.kind for p in parts} == {"csv-bytes"}
        acc, got = _ranges_result(spec, path, partition_bytes)
        assert acc == reference
        assert "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in got) == expected


def _quote_fields(path) -> None:
    """Quote every field of every line of a CSV file in place, as pyarrow or R would (line ends, BOM kept)."""
    out = []
    for line in Path(path).read_bytes().split(b"\n"):
        bom = b"\xef\xbb\xbf" if line.startswith(b"\xef\xbb\xbf") else b""
        body, cr = line[len(bom) :], b""
        if body.endswith(b"\r"):
            body, cr = body[:-1], b"\r"
        quoted = b",".join(b'"' + field + b'"' for field in body.split(b",")) if body.strip() else body
        out.append(bom + quoted + cr)
    Path(path).write_bytes(b"\n".join(out))


def test_quoted_csv_byte_ranges_cover_every_row_once(tmp_path):
    """A CSV file whose fields are all quoted on their line is split into byte ranges too, with the one-reader result."""
    spec = SPECS["rappor"]
    path = _write(tmp_path, spec, "csv", n=400, dirty=True)
    _quote_fields(path)
    reference, _valid, rejects = _run_engine(spec, [path], tmp_path / "ref.jsonl")
    assert rejects.total == len(_bad_csv_lines(spec)) - 2
    expected = (tmp_path / "ref.jsonl").read_text()
    for partition_bytes in (37, 5_000, os.path.getsize(path) // 2):
        parts = plan_partitions([path], partition_bytes=partition_bytes)
        assert len(parts) > 1 and {p.kind for p in parts} == {"csv-bytes"}
        acc, got = _ranges_result(spec, path, partition_bytes)
        assert acc == reference
        assert "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in got) == expected
    with open(
        path, "ab"
    ) as f:  # a doubled quote: whether a later line break is quoted depends on all before it
        f.write(b'\n"1","x""y","1","AAA="')
    assert {p.kind for p in plan_partitions([path], partition_bytes=37)} == {"file"}


def _ranges_result(spec, path, partition_bytes):
    acc, lines, got = make_aggregator(spec), 0, []
    for part in plan_partitions([path], partition_bytes=partition_bytes):
        result = read_partition(part, spec, chunk_size=3)
        acc = acc.merge(result.accumulator)
        got += renumber(part, result.rejects, lines)
        lines += result.lines
    return acc, got


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(
        st.one_of(
            st.sampled_from(["good", "good", "good", "bad", "blank", "crlf", "cr", "utf8", "bom"]),
            st.binary(max_size=12).filter(lambda b: b'"' not in b),
        ),
        max_size=40,
    ),
    final_newline=st.booleans(),
    partition_bytes=st.one_of(st.integers(1, 8), st.integers(1, 400)),
)
def test_csv_byte_ranges_equal_one_reader_on_random_files(
    tmp_path_factory, pieces, final_newline, partition_bytes
):
    """Random unquoted CSV (good rows, junk, blanks, CR, undecodable bytes, stray BOMs), random range size."""
    spec = SPECS["grr"]
    fp = spec.fingerprint.encode()
    good = [b"1," + fp + b"," + v.encode() for v in spec.domain]
    named = {
        "bad": b"1," + fp,
        "blank": b"",
        "crlf": b"1," + fp + b",v3\r",
        "cr": b"1,\r" + fp,
        "utf8": b"1," + fp + b",\xc3",
        "bom": b"\xef\xbb\xbf1," + fp + b",v1",
    }
    lines = [b"v,spec,value"] + [
        good[k % len(good)] if piece == "good" else named[piece] if isinstance(piece, str) else piece
        for k, piece in enumerate(pieces)
    ]
    path = tmp_path_factory.mktemp("csv") / "r.csv"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    reference, expected = make_aggregator(spec), []
    for part in plan_partitions([str(path)], partition_bytes=1 << 30):  # one "file" partition: the one reader
        result = read_partition(part, spec, chunk_size=3)
        reference, expected = reference.merge(result.accumulator), expected + result.rejects
    acc, got = _ranges_result(spec, str(path), partition_bytes)
    assert acc == reference
    assert [r.to_dict() for r in got] == [r.to_dict() for r in expected]


def test_quoted_csv_is_one_partition(tmp_path):
    """A quote anywhere means a line break may be inside a field: the file is read whole, rightly."""
    spec = ldp.GRR(domain=("a,b", "line\nbreak", "c"), epsilon=1.0)
    values = [spec.domain[i % 3] for i in range(300)]
    path = tmp_path / "q.csv"
    write_reports(encode_batch(spec, values, np.random.default_rng(3)), path, spec)
    assert b'"' in path.read_bytes()
    parts = plan_partitions([str(path)], partition_bytes=100)
    assert [p.kind for p in parts] == ["file"]
    _accumulator, valid, rejects = _run_engine(spec, [str(path)], workers=2, partition_bytes=100)
    assert valid == 300 and rejects.total == 0


def test_dask_rejects_have_file_and_global_line(tmp_path, scheduler):
    spec = SPECS["grr"]
    path = _write(tmp_path, spec, "jsonl", dirty=True)
    _run_engine(spec, [path], tmp_path / "r.jsonl", engine="dask", scheduler=scheduler, **SMALL)
    lines = Path(path).read_text().splitlines()
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(records) == 4
    assert all(r["file"] == path and r["raw"] == lines[r["line"] - 1] for r in records)


def _spec_file(tmp_path, spec):
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json())
    return str(path)


def test_cli_dask_and_workers_match_local(tmp_path, scheduler):
    spec = RAPPOR
    spec_path = _spec_file(tmp_path, spec)
    reports = _write(tmp_path, spec, "jsonl", dirty=True)
    candidates = tmp_path / "candidates.txt"
    candidates.write_text("\n".join(CANDIDATES))
    outputs = {}
    for name, extra in {
        "local": [],
        "workers": ["--workers", "2"],
        "dask": ["--engine", "dask", "--scheduler", scheduler],
    }.items():
        out, rejects = tmp_path / f"{name}.csv", tmp_path / f"{name}-rejects.jsonl"
        result = CliRunner().invoke(
            aggregate,
            [
                "--spec",
                spec_path,
                reports,
                "--candidates",
                str(candidates),
                "--rejects",
                str(rejects),
                "-o",
                str(out),
                *extra,
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == EXIT_REJECTS, result.stderr
        assert "904 reports read from 1 file: 900 valid, 4 rejected" in result.stderr
        outputs[name] = (pd.read_csv(out), rejects.read_text())
    for name in ("workers", "dask"):
        pd.testing.assert_frame_equal(outputs[name][0], outputs["local"][0])
        assert outputs[name][1] == outputs["local"][1]


def test_missing_dask_is_a_one_line_message_naming_the_extra(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name == "dask" or name.startswith("dask."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    spec = SPECS["grr"]
    reports = _write(tmp_path, spec, "jsonl")
    result = CliRunner().invoke(
        aggregate, ["--spec", _spec_file(tmp_path, spec), reports, "--engine", "dask"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {DASK_EXTRA_MESSAGE}"
    assert 'pip install -e ".[dask]"' in result.stderr


@pytest.mark.parametrize(
    "options, message",
    [
        ({"scheduler": "tcp://127.0.0.1:1"}, "scheduler is for engine=.dask."),
        ({"engine": "spark"}, "engine must be one of"),
        ({"workers": 0}, "workers must be a positive integer"),
    ],
)
def test_bad_engine_options(tmp_path, options, message):
    spec = SPECS["grr"]
    with pytest.raises(ParameterError, match=message):
        _run_engine(spec, [_write(tmp_path, spec, "jsonl")], **options)


def test_dask_refuses_stdin(scheduler):
    with pytest.raises(ParameterError, match="standard input"):
        _run_engine(SPECS["grr"], ["-"], engine="dask", scheduler=scheduler)


def test_parquet_partitions_follow_row_groups(tmp_path):
    spec = SPECS["grr"]
    path = _write(tmp_path, spec, "parquet", n=900)
    parts = plan_partitions([path], partition_rows=450)
    assert [(p.start, p.stop, p.first_line) for p in parts] == [(0, 2, 1), (2, 4, 401), (4, 5, 801)]
    assert all(p.kind == "parquet" for p in parts)


def test_workers_read_stdin_in_the_main_process(tmp_path):
    spec = SPECS["grr"]
    spec_path = _spec_file(tmp_path, spec)
    reports = _write(tmp_path, spec, "jsonl", dirty=True)
    other = _write(tmp_path, spec, "parquet", seed=9)
    text = Path(reports).read_text()
    results = []
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / f"est{len(extra)}.csv"
        result = CliRunner().invoke(
            aggregate, ["--spec", spec_path, "-", other, "-o", str(out), *extra], input=text
        )
        assert result.exit_code == EXIT_REJECTS, result.stderr
        assert "1,804 reports read from 2 files: 1,800 valid, 4 rejected" in result.stderr
        results.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(results[1], results[0])


# -- options checked up front: stdin once, scheduler addresses, worker counts (issue 11) -----------


def _refuse_dask(monkeypatch):
    """Make any attempt to import Dask (start a cluster, connect) fail the test."""
    import ldp.aggregator.engines as engines

    def no_dask():
        raise AssertionError("Dask was reached: the option should have been refused before")

    monkeypatch.setattr(engines, "import_distributed", no_dask)


def _one_line_error(result, *fragments):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "Exception ignored" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("extra", [[], ["--workers", "2"]])
def test_stdin_given_twice_is_a_one_line_error(tmp_path, extra):
    """``ldp aggregate - -`` read stdin, closed it and crashed on the second read."""
    spec = SPECS["grr"]
    text = Path(_write(tmp_path, spec, "jsonl", n=20)).read_text()
    result = CliRunner().invoke(
        aggregate, ["--spec", _spec_file(tmp_path, spec), "-", "-", *extra], input=text
    )
    _one_line_error(result, "standard input ('-') is given 2 times", "read only once")
    with pytest.raises(ParameterError, match="given 2 times"):
        _run_engine(spec, ["-", "-"])


@pytest.mark.parametrize(
    "address",
    [
        "nonsense",
        "tcp://host",
        "http://host:8786",
        "tcp://host:0",
        "tcp://host:65536",
        "",
        "tcp://:8786",
        "host:port",
        "tcp://host:8786/path",
        "tcp://ho st:8786",
        "inproc://",
    ],
)
def test_a_scheduler_that_is_not_an_address_is_refused_before_dask_starts(tmp_path, monkeypatch, address):
    """``--scheduler nonsense`` printed the error, hung 40 s and printed a traceback."""
    _refuse_dask(monkeypatch)
    spec = SPECS["grr"]
    result = CliRunner().invoke(
        aggregate,
        [
            "--spec",
            _spec_file(tmp_path, spec),
            _write(tmp_path, spec, "jsonl", n=20),
            "--engine",
            "dask",
            "--scheduler",
            address,
        ],
    )
    _one_line_error(result, f"--scheduler {address!r} is not a Dask scheduler address", "tcp://10.0.0.5:8786")


@pytest.mark.parametrize(
    "address",
    [
        "tcp://10.0.0.5:8786",
        "10.0.0.5:8786",
        "tls://scheduler.example.com:8786",
        "tcp://[::1]:8786",
        "ws://h_1:1",
        "inproc://192.0.2.2/16230/1",
    ],
)
def test_scheduler_address_forms_dask_accepts(address):
    from ldp.aggregator.engines import check_scheduler_address

    assert check_scheduler_address(address) == address


def _free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_scheduler_that_does_not_answer_is_a_one_line_error_after_a_short_timeout(tmp_path, monkeypatch):
    """Nobody listens on the port: the error comes after SCHEDULER_TIMEOUT seconds (was 20 s, then a hang)."""
    import time

    import dask.distributed  # noqa: F401  (the test extra has it: missing, this fails)

    import ldp.aggregator.engines as engines

    monkeypatch.setattr(engines, "SCHEDULER_TIMEOUT", 0.25)
    spec = SPECS["grr"]
    address = f"tcp://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    result = CliRunner().invoke(
        aggregate,
        [
            "--spec",
            _spec_file(tmp_path, spec),
            _write(tmp_path, spec, "jsonl", n=20),
            "--engine",
            "dask",
            "--scheduler",
            address,
        ],
    )
    elapsed = time.monotonic() - start
    _one_line_error(result, f"cannot connect to the Dask scheduler {address!r} (waited up to 0.25 s)")
    assert elapsed < 15, (
        elapsed
    )  # the timeout, plus Dask's import and the event loop's start on a busy machine


def test_a_peer_that_is_not_a_scheduler_is_a_one_line_error(tmp_path):
    """Something answers on the port but speaks another protocol: one line, and the half-made client is closed."""
    import socket
    import threading

    import dask.distributed  # noqa: F401  (the test extra has it: missing, this fails)

    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def answer_junk():
        try:
            connection, _ = server.accept()
        except OSError:
            return
        with connection:
            connection.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" + bytes(range(256)) * 4)

    thread = threading.Thread(target=answer_junk, daemon=True)
    thread.start()
    try:
        spec = SPECS["grr"]
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        result = CliRunner().invoke(
            aggregate,
            [
                "--spec",
                _spec_file(tmp_path, spec),
                _write(tmp_path, spec, "jsonl", n=20),
                "--engine",
                "dask",
                "--scheduler",
                address,
            ],
        )
    finally:
        server.close()
        thread.join(timeout=10)
    _one_line_error(result, f"cannot connect to the Dask scheduler {address!r}")


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_workers_are_capped_at_two_per_cpu_without_starting_any(tmp_path, monkeypatch, engine):
    """64 local Dask workers on 2 cores stalled the machine: more than 2 per usable CPU is refused up front."""
    import ldp.aggregator.engines as engines

    _refuse_dask(monkeypatch)
    monkeypatch.setattr(engines, "usable_cpus", lambda: 2)
    spec = SPECS["grr"]
    spec_path, reports = _spec_file(tmp_path, spec), _write(tmp_path, spec, "jsonl", n=50)
    for workers in (5, 64):
        result = CliRunner().invoke(
            aggregate, ["--spec", spec_path, reports, "--engine", engine, "--workers", str(workers)]
        )
        _one_line_error(
            result,
            f"--workers {workers} is too many for this machine: at most 4",
            "this process may use 2 CPUs",
        )
        with pytest.raises(ParameterError, match="too many"):
            _run_engine(spec, [reports], engine=engine, workers=workers)
    if engine == "local":  # the cap itself is allowed
        result = CliRunner().invoke(aggregate, ["--spec", spec_path, reports, "--workers", "4"])
        assert result.exit_code == 0, result.output


def test_usable_cpus_and_the_cap():
    from ldp.aggregator.engines import MAX_WORKERS_PER_CPU, max_workers, usable_cpus

    assert usable_cpus() >= 1 and max_workers() == MAX_WORKERS_PER_CPU * usable_cpus()


@pytest.mark.slow
def test_the_local_dask_cluster_listens_on_loopback_only():
    """``--engine dask`` without --scheduler starts worker processes: none of them, nor the scheduler, may
    listen beyond 127.0.0.1 (Dask's defaults serve HTTP on 0.0.0.0:8787 even without a dashboard)."""
    psutil = pytest.importorskip("psutil")
    distributed = pytest.importorskip("dask.distributed")
    from ldp.aggregator.engines import _dask_client

    with _dask_client(distributed, None, 1):
        processes = [psutil.Process(), *psutil.Process().children(recursive=True)]
        listening = [
            connection.laddr
            for process in processes
            for connection in process.net_connections(kind="inet")
            if connection.status == psutil.CONN_LISTEN
        ]
    assert listening, "no listening socket found: the probe is broken"
    assert all(address.ip == "127.0.0.1" for address in listening), listening
    assert all(address.port != 8787 for address in listening), listening
