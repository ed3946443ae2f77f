"""State files that are links or not private, client ids, and output files that must not destroy anything."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import ldp
from ldp.atomic import (
    TEMP_MARK,
    atomic_output,
    ensure_private_directory,
    private_output,
    remove_stale_temporaries,
)
from ldp.cli import cli
from ldp.client import ClientState
from ldp.client.cli import ledger_path, state_path
from ldp.client.identity import canonical_client_id
from ldp.errors import LDPWarning, ParameterError, StateError
from ldp.privacy.budget import Budget, PrivacyLedger

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=0.5)
RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# -- links and modes -------------------------------------------------------------


def test_a_dangling_symlink_is_never_replaced_by_a_new_secret(tmp_path):
    path = tmp_path / "client.json"
    path.symlink_to(tmp_path / "gone.json")
    with pytest.raises(StateError, match="symbolic link"):
        ClientState.open(path, RAPPOR)
    assert path.is_symlink() and not (tmp_path / "gone.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["client.json"]


def test_a_symlink_to_a_valid_state_is_refused(tmp_path):
    real = tmp_path / "real.json"
    ClientState.open(real, RAPPOR)
    link = tmp_path / "client.json"
    link.symlink_to(real)
    with pytest.raises(StateError, match="symbolic link"):
        ClientState.open(link, RAPPOR)


def test_a_symlinked_ledger_is_refused_and_not_replaced(tmp_path):
    real = tmp_path / "real.ledger.json"
    PrivacyLedger.load_or_create(real, Budget(epsilon=1.0))
    link = tmp_path / "client.ledger.json"
    link.symlink_to(real)
    with pytest.raises(StateError, match="symbolic link"):
        PrivacyLedger.load_or_create(link, Budget(epsilon=1.0))
    assert link.is_symlink()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_state_and_ledger_readable_by_others_are_refused(tmp_path, mode):
    state = tmp_path / "client.json"
    ClientState.open(state, RAPPOR)
    ledger = tmp_path / "client.ledger.json"
    PrivacyLedger.load_or_create(ledger, Budget(epsilon=1.0))
    for path in (state, ledger):
        before = path.read_bytes()
        path.chmod(mode)
        with pytest.raises(StateError, match=f"mode {mode:04o}"):
            if path is state:
                ClientState.open(path, RAPPOR)
            else:
                PrivacyLedger.load_or_create(path, Budget(epsilon=1.0))
        assert path.read_bytes() == before and _mode(path) == mode  # neither replaced nor "fixed" silently


def test_state_directories_are_created_private(tmp_path):
    ClientState.open(tmp_path / "a" / "b" / "client.json", RAPPOR)
    assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700
    PrivacyLedger.load_or_create(tmp_path / "c" / "ledger.json", Budget(epsilon=1.0))
    assert _mode(tmp_path / "c") == 0o700


def test_cli_state_directory_is_created_0700_and_a_listable_one_is_warned_about(tmp_path):
    spec_path = tmp_path / "rappor.json"
    spec_path.write_text(RAPPOR.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,url\nalice,a.com\n")
    states = tmp_path / "new" / "states"
    result = _run(
        "encode", "--spec", spec_path, users, "--column", "url", "--state", states, "-o", tmp_path / "r.jsonl"
    )
    assert result.exit_code == 0, result.output
    assert _mode(states) == 0o700 and _mode(tmp_path / "new") == 0o700
    states.chmod(0o755)
    result = _run(
        "encode", "--spec", spec_path, users, "--column", "url", "--state", states, "-o", tmp_path / "r.jsonl"
    )
    assert result.exit_code == 0 and "Warning: state directory" in result.output and "0755" in result.output
    assert "Traceback" not in result.output


def test_a_state_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(StateError, match="other users can write"):
        ClientState.open(shared / "client.json", RAPPOR)
    assert not list(shared.iterdir())
    with pytest.warns(LDPWarning, match="list"):
        listable = tmp_path / "listable"
        listable.mkdir(mode=0o755)
        listable.chmod(0o755)
        ensure_private_directory(listable)


# -- stale temporaries -------------------------------------------------------------


def _temporary(directory, name: str, age: float):
    path = directory / f".{name}.0123456789ab{TEMP_MARK}.json"
    path.write_bytes(b"partial")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_stale_temporaries_of_killed_writers_are_cleaned_on_open(tmp_path):
    stale = _temporary(tmp_path, "client.json", age=3600)
    young = _temporary(tmp_path, "other.json", age=0)
    held = _temporary(tmp_path, "held.json", age=3600)
    unrelated = tmp_path / ".client.json.notours.tmp"
    unrelated.write_bytes(b"keep")
    fd = os.open(held, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live writer holds its temporary under flock
    try:
        ClientState.open(tmp_path / "client.json", RAPPOR)
        assert not stale.exists()
        assert young.exists() and held.exists() and unrelated.exists()
    finally:
        os.close(fd)
    assert remove_stale_temporaries(tmp_path) == 1 and not held.exists() and young.exists()


# -- client identity ------------------------------------------------------------------


@pytest.mark.parametrize("spellings", [(1, 1.0, "1", "1.0", "1.000"), ("-3", "-3.0", -3, -3.0), ("alice",)])
def test_one_canonical_text_per_client_id(spellings):
    assert len({canonical_client_id(s) for s in spellings}) == 1


@pytest.mark.parametrize("distinct", [("007", "7"), ("1", "1.5"), (" 1", "1"), ("A", "a")])
def test_distinct_ids_stay_distinct(distinct):
    assert canonical_client_id(distinct[0]) != canonical_client_id(distinct[1])


@pytest.mark.parametrize("bad", [True, None, 1.5, float("nan"), float("inf"), 2.0**60, "", [1], {"id": 1}])
def test_ids_that_lost_their_identity_are_refused(bad):
    with pytest.raises(ParameterError, match="client id"):
        canonical_client_id(bad)


def test_json_csv_and_parquet_spellings_select_one_client(tmp_path):
    spec_path = tmp_path / "rappor.json"
    spec_path.write_text(RAPPOR.to_json())
    states = tmp_path / "states"
    (tmp_path / "a.jsonl").write_text('{"client_id": 1, "url": "x"}\n{"client_id": 1.0, "url": "x"}\n')
    (tmp_path / "b.csv").write_text("client_id,url\n1.0,x\n1,x\n")
    # an integer column with a null next to it (pandas would make the ids floats)
    pq.write_table(
        pa.table({"client_id": pa.array([1, None], pa.int64()), "url": ["x", "y"]}), tmp_path / "c.parquet"
    )
    pq.write_table(pa.table({"client_id": pa.array([1.0, 1.0]), "url": ["x", "x"]}), tmp_path / "d.parquet")
    for name in ("a.jsonl", "b.csv", "d.parquet"):
        result = _run(
            "encode",
            "--spec",
            spec_path,
            tmp_path / name,
            "--column",
            "url",
            "--state",
            states,
            "-o",
            tmp_path / f"{name}.out.jsonl",
        )
        assert result.exit_code == 0, result.output
    result = _run(
        "encode",
        "--spec",
        spec_path,
        tmp_path / "c.parquet",
        "--column",
        "url",
        "--state",
        states,
        "-o",
        tmp_path / "c.out.jsonl",
    )
    assert result.exit_code == 2 and "row 2" in result.output and "client_id is missing" in result.output
    assert [p.name for p in states.iterdir() if p.name.endswith(".json")] == [state_path(states, "1").name]
    cohorts = {
        json.loads(line)["cohort"]
        for name in ("a.jsonl", "b.csv", "d.parquet")
        for line in (tmp_path / f"{name}.out.jsonl").read_text().splitlines()
    }
    assert len(cohorts) == 1  # one client, one cohort


def test_budget_of_one_client_spelled_two_ways_is_one_budget(tmp_path):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    users = tmp_path / "users.jsonl"
    users.write_text("".join(f'{{"client_id": {cid}, "value": "a"}}\n' for cid in ("1", "1.0") * 3))
    result = _run(
        "encode",
        "--spec",
        spec_path,
        users,
        "--state",
        tmp_path / "s",
        "--budget",
        "1",
        "-o",
        tmp_path / "out.jsonl",
    )
    assert result.exit_code == 3  # 2 reports at 0.5 fit the budget of 1; the other 4 rows are refused
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 2


# -- outputs ------------------------------------------------------------------------------


def _grr_files(tmp_path, values="a\nb\nc\n"):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    source = tmp_path / "values.txt"
    source.write_text(values)
    return spec_path, source


@pytest.mark.parametrize("how", ["same", "relative", "symlink", "hardlink", "spec"])
def test_encode_refuses_an_output_that_is_an_input(tmp_path, how, monkeypatch):
    spec_path, source = _grr_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    target = {
        "same": source,
        "relative": "values.txt",
        "symlink": tmp_path / "link.txt",
        "hardlink": tmp_path / "hard.txt",
        "spec": spec_path,
    }[how]
    if how == "symlink":
        (tmp_path / "link.txt").symlink_to(source)
    if how == "hardlink":
        os.link(source, tmp_path / "hard.txt")
    before = source.read_bytes(), spec_path.read_bytes()
    result = _run("encode", "--spec", spec_path, source, "-o", target)
    assert result.exit_code == 2 and "would destroy the input" in result.output
    assert (source.read_bytes(), spec_path.read_bytes()) == before


def test_failed_encode_keeps_the_old_output_and_leaves_no_partial_file(tmp_path):
    spec_path, source = _grr_files(tmp_path, "a\nb\nnot-in-domain\nc\n")
    output = tmp_path / "reports.jsonl"
    output.write_text("previous reports\n")
    result = _run("encode", "--spec", spec_path, source, "-o", output)
    assert result.exit_code == 2 and "row 3" in result.output and "nothing was written to" in result.output
    assert output.read_text() == "previous reports\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports.jsonl", "spec.json", "values.txt"]
    fresh = tmp_path / "new.parquet"
    assert _run("encode", "--spec", spec_path, source, "-o", fresh).exit_code == 2 and not fresh.exists()


def test_failed_encode_refunds_the_budget_of_reports_never_written(tmp_path):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n1,a\n1,b\n2,c\n1,zzz\n")
    states = tmp_path / "states"
    result = _run(
        "encode", "--spec", spec_path, users, "--state", states, "--budget", "3", "-o", tmp_path / "o.jsonl"
    )
    assert result.exit_code == 2 and "3 reports made but not written were refunded" in result.output
    for client in ("1", "2"):
        assert PrivacyLedger.load(ledger_path(states, client)).committed == 0.0
    users.write_text("client_id,value\n1,a\n1,b\n2,c\n")  # the same run, fixed: the whole budget is there
    result = _run(
        "encode", "--spec", spec_path, users, "--state", states, "--budget", "3", "-o", tmp_path / "o.jsonl"
    )
    assert result.exit_code == 0
    assert PrivacyLedger.load(ledger_path(states, "1")).committed == pytest.approx(1.0)


def test_failed_encode_to_stdout_says_how_many_reports_were_written(tmp_path):
    spec_path, source = _grr_files(tmp_path, "a\n" * 5 + "zzz\n")
    result = _run("encode", "--spec", spec_path, source)
    assert result.exit_code == 2
    written = sum(1 for line in result.output.splitlines() if line.startswith("{"))
    assert f"{written} reports had been written to standard output" in result.output


def test_atomic_output_keeps_the_target_on_failure_and_its_mode_on_success(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old")
    target.chmod(0o640)
    with pytest.raises(RuntimeError), atomic_output(target) as temporary:
        assert temporary.endswith(".csv") and TEMP_MARK in temporary
        Path(temporary).write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old" and len(list(tmp_path.iterdir())) == 1
    with atomic_output(target) as temporary:
        Path(temporary).write_text("new")
    assert target.read_text() == "new" and _mode(target) == 0o640
    with pytest.raises(ParameterError, match="cannot write"), atomic_output(tmp_path / "missing" / "out.csv"):
        pass


def test_private_output_is_0600_never_replaces_a_name_unless_asked_and_names_only_on_success(tmp_path):
    old_umask = os.umask(0)  # the file is private whatever the umask
    try:
        target = tmp_path / "backup.db"
        with pytest.raises(RuntimeError), private_output(target) as temporary:
            assert _mode(Path(temporary)) == 0o600 and TEMP_MARK in temporary
            Path(temporary).write_text("half")
            raise RuntimeError("killed")
        assert list(tmp_path.iterdir()) == []
        with private_output(target) as temporary:
            Path(temporary).write_text("one")
        assert target.read_text() == "one" and _mode(target) == 0o600
        (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
        for existing in (target, tmp_path / "dangling"):
            with pytest.raises(ParameterError, match="already exists"), private_output(existing) as temporary:
                Path(temporary).write_text("two")
        assert target.read_text() == "one" and not (tmp_path / "nowhere").exists()
        with private_output(target, replace=True) as temporary:
            Path(temporary).write_text("two")
        assert target.read_text() == "two" and _mode(target) == 0o600
        assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.db", "dangling"]
    finally:
        os.umask(old_umask)


# -- echoed values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["spec", "grr", "--domain", "a,b", "--epsilon", "x" * 1_000_000],
        ["spec", "grr", "--domain", "a,b", "--epsilon", "1", "-o", "y" * 200_000 + ".weird"],
        ["privacy", "convert", "--mu", "z" * 300_000, "--delta", "1e-6"],
        # click's own errors: an unknown option and a value outside a choice (shown with the usage banner)
        ["spec", "grr", "--domain", "a,b", "--" + "w" * 300_000],
        ["spec", "grr", "--domain", "a,b", "--epsilon", "1", "--hash", "v" * 300_000],
    ],
)
def test_a_megabyte_value_is_echoed_cut_with_its_length(args):
    result = _run(*args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(error) == 1 and len(error[0]) < 400 and "characters)" in error[0], error


def test_a_5_mb_value_to_encode_is_echoed_cut_by_the_command_and_the_api(tmp_path):
    """Issue 24: one helper (ldp.shorten) cuts every echoed value; an LDPError never holds a 5 MB one."""
    big = "x" * (5 * 1024 * 1024)
    spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    (tmp_path / "spec.json").write_text(spec.to_json())
    (tmp_path / "values.txt").write_text(f"a\n{big}\n")
    result = _run(
        "encode", "--spec", tmp_path / "spec.json", tmp_path / "values.txt", "-o", tmp_path / "r.jsonl"
    )
    assert result.exit_code == 2 and len(result.stderr) < 400, result.stderr[:1000]
    assert (
        "row 2: value 'xxxx" in result.stderr
        and "' (5,242,880 characters) is not in the domain" in result.stderr
    )
    with pytest.raises(ParameterError) as error:
        ldp.client.make_encoder(spec).encode(big)
    assert len(str(error.value)) < 300 and "(5,242,880 characters)" in str(error.value)
    with pytest.raises(ldp.errors.ReportError) as report_error:
        ldp.Report.from_dict({"v": 1, "spec": "y" * len(big), "value": "a"})
    assert len(str(report_error.value)) < 300 and "(5,242,880 characters)" in str(report_error.value)


@pytest.mark.parametrize("option", ["-o", "--rejects"])
@pytest.mark.parametrize("how", ["same", "symlink", "spec"])
def test_aggregate_refuses_an_output_that_is_an_input(tmp_path, option, how):
    spec_path, source = _grr_files(tmp_path)
    reports = tmp_path / "reports.jsonl"
    assert _run("encode", "--spec", spec_path, source, "-o", reports).exit_code == 0
    target = {"same": reports, "symlink": tmp_path / "link.jsonl", "spec": spec_path}[how]
    if how == "symlink":
        target.symlink_to(reports)
    before = reports.read_bytes(), spec_path.read_bytes()
    result = _run("aggregate", "--spec", spec_path, reports, option, target)
    assert result.exit_code == 2 and "would destroy the input" in result.output
    assert (reports.read_bytes(), spec_path.read_bytes()) == before


def test_aggregate_refuses_one_file_for_estimates_and_rejects(tmp_path):
    spec_path, source = _grr_files(tmp_path)
    reports = tmp_path / "reports.jsonl"
    assert _run("encode", "--spec", spec_path, source, "-o", reports).exit_code == 0
    result = _run(
        "aggregate",
        "--spec",
        spec_path,
        reports,
        "-o",
        tmp_path / "x.jsonl",
        "--rejects",
        tmp_path / "x.jsonl",
    )
    assert result.exit_code == 2 and "same file" in result.output


def test_other_commands_refuse_an_output_that_is_an_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "domain.txt").write_text("a\nb\n")
    result = _run("spec", "grr", "--epsilon", "1", "--domain-file", "domain.txt", "-o", "domain.txt")
    assert result.exit_code == 2 and "would destroy the input" in result.output
    assert (tmp_path / "domain.txt").read_text() == "a\nb\n"
    (tmp_path / "data.csv").write_text("x\n" + "1\n2\n" * 50)
    result = _run("simulate", "-m", "grr", "--data", "data.csv", "--column", "x", "-o", "data.csv")
    assert result.exit_code == 2 and "would destroy the input" in result.output
    assert (tmp_path / "data.csv").read_text().startswith("x\n1\n2\n")


def test_google_rappor_commands_refuse_an_output_that_is_an_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rappor.json").write_text(RAPPOR.to_json())
    (tmp_path / "candidates.txt").write_text("a.com\nb.com\n")
    for args in (
        ["params", "--spec", "rappor.json", "-o", "rappor.json"],
        ["map", "--spec", "rappor.json", "--candidates", "candidates.txt", "-o", "candidates.txt"],
        ["counts", "--spec", "rappor.json", "candidates.txt", "-o", "x.csv", "--rejects", "candidates.txt"],
    ):
        result = _run("google-rappor", *args)
        assert result.exit_code == 2 and "would destroy the input" in result.output, args
    assert (tmp_path / "candidates.txt").read_text() == "a.com\nb.com\n"
    assert (tmp_path / "rappor.json").read_text() == RAPPOR.to_json()


def test_a_domain_value_no_report_could_carry_is_refused_by_the_spec():
    with pytest.raises(ParameterError, match="lone surrogate"):
        ldp.GRR(domain=("a", "\ud800"), epsilon=1.0)


def test_a_long_but_real_path_is_echoed_whole(tmp_path):
    deep = tmp_path / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    missing = deep / "values.txt"
    spec_path, _ = _grr_files(tmp_path)
    result = _run("encode", "--spec", spec_path, missing)
    assert result.exit_code == 2 and str(missing) in result.output
