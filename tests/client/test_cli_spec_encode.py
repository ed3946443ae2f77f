"""``ldp spec`` and ``ldp encode`` (issue 2 CLI), with CliRunner and real files."""

from __future__ import annotations

import json
import os
import stat

import pandas as pd
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.client.cli import state_path
from ldp.report import Report
from ldp.specs import FREQUENCY_MECHANISMS


def _run(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def _spec(tmp_path, *args) -> tuple[object, str]:
    out = tmp_path / "spec.json"
    result = _run("spec", *args, "-o", out)
    assert result.exit_code == 0, result.output
    return ldp.load_spec(out), result.output


@pytest.mark.parametrize("mechanism", list(FREQUENCY_MECHANISMS))  # every registered frequency oracle
def test_spec_frequency_mechanisms_write_json_and_print_epsilon(tmp_path, mechanism):
    domain = "yes,no" if mechanism == "binary-rr" else "a,b,c"
    spec, output = _spec(tmp_path, mechanism, "--epsilon", "1", "--domain", domain)
    assert spec.mechanism == mechanism and spec.epsilon == 1.0
    assert [str(v) for v in spec.domain] == domain.split(",")
    assert "epsilon: 1 " in output and spec.fingerprint in output


def test_spec_to_stdout_is_the_json(tmp_path):
    result = CliRunner().invoke(cli, ["spec", "grr", "--epsilon", "2", "--domain", "a,b"])
    assert result.exit_code == 0
    spec = ldp.load_spec(json.loads(result.stdout))
    assert spec == ldp.GRR(domain=("a", "b"), epsilon=2.0)
    assert "epsilon: 2" in result.stderr and "epsilon" not in result.stdout.split("}")[-1]


def test_spec_domain_file_and_domain_size(tmp_path):
    domain_file = tmp_path / "domain.txt"
    domain_file.write_text("chrome\nfirefox\nsafari\n")
    spec, _ = _spec(tmp_path, "oue", "--epsilon", "1", "--domain-file", domain_file)
    assert spec.domain == ("chrome", "firefox", "safari")
    spec, _ = _spec(tmp_path, "grr", "--epsilon", "1", "--domain-size", "5")
    assert spec.domain == (0, 1, 2, 3, 4)
    # integers accepted as numbers or decimal strings at encode time
    assert spec.index_of(3) == spec.index_of("3") == 3


def test_spec_rappor_prints_both_epsilons(tmp_path):
    spec, output = _spec(
        tmp_path,
        "rappor",
        "--num-bits",
        "128",
        "--num-hashes",
        "2",
        "--num-cohorts",
        "64",
        "--f",
        "0.5",
        "--p",
        "0.5",
        "--q",
        "0.75",
        "--hash",
        "md5",
    )
    assert spec == ldp.Rappor(
        num_bits=128, num_hashes=2, num_cohorts=64, f="1/2", p="1/2", q="3/4", hash="md5"
    )
    assert "epsilon_inf (any number of reports of one value): 4.39445" in output
    assert "epsilon_one (a single report): 1.07429" in output


@pytest.mark.parametrize(
    "args, message",
    [
        (["grr", "--epsilon", "0", "--domain", "a,b"], "epsilon"),
        (["grr", "--epsilon", "-1", "--domain", "a,b"], "epsilon"),
        (["grr", "--epsilon", "1", "--domain", "a,a"], "duplicate"),
        (["grr", "--epsilon", "1"], "domain"),
        (
            [
                "rappor",
                "--num-bits",
                "4",
                "--num-hashes",
                "8",
                "--num-cohorts",
                "1",
                "--f",
                "0.5",
                "--p",
                "0.5",
                "--q",
                "0.75",
            ],
            "num_hashes",
        ),
        (
            [
                "rappor",
                "--num-bits",
                "8",
                "--num-hashes",
                "2",
                "--num-cohorts",
                "1",
                "--f",
                "0.5",
                "--p",
                "0.8",
                "--q",
                "0.75",
            ],
            "p < q",
        ),
        (
            [
                "rappor",
                "--num-bits",
                "8",
                "--num-hashes",
                "2",
                "--num-cohorts",
                "1",
                "--f",
                "1",
                "--p",
                "0.5",
                "--q",
                "0.75",
            ],
            "f",
        ),
    ],
)
def test_spec_bad_parameters_are_one_line_errors(args, message):
    result = _run("spec", *args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output and message in result.output
    assert len(result.output.strip().splitlines()) == 1


def _params_file(tmp_path):
    path = tmp_path / "params.csv"
    path.write_text("k,h,m,p,q,f\n16,2,4,0.5,0.75,0.5\n")
    return path


RAPPOR_ARGS = ["--num-bits", "8", "--num-hashes", "2", "--f", "0.5", "--p", "0.25", "--q", "0.75"]


@pytest.mark.parametrize(
    "args, needles",
    [
        (["rappor", "--from-google", "{params}", "--num-bits", "8"], ("--num-bits", "--from-google")),
        (
            ["rappor", "--from-google", "{params}", "--f", "0.5", "--encoding", "basic"],
            ("--f, --encoding", "--from-google"),
        ),
        (["rappor", "--from-google", "{params}", "--domain", "a,b"], ("--domain", "--from-google")),
        (["rappor", "--epsilon", "1", *RAPPOR_ARGS], ("--epsilon", "rappor", "--f, --p and --q")),
        (["rappor", "--domain", "a,b", *RAPPOR_ARGS], ("--domain", "bloom rappor", "--encoding basic")),
        (["rappor", "--g", "3", *RAPPOR_ARGS], ("--g", "rappor")),
        (["rappor", "--low", "0", *RAPPOR_ARGS], ("--low", "rappor")),
        (
            ["piecewise", "--epsilon", "1", "--low", "0", "--high", "1", "--domain", "a,b"],
            ("--domain", "piecewise"),
        ),
        (
            ["piecewise", "--epsilon", "1", "--low", "0", "--high", "1", "--domain-size", "4"],
            ("--domain-size",),
        ),
        (
            ["piecewise", "--epsilon", "1", "--low", "0", "--high", "1", "--delta", "1e-5"],
            ("--delta", "piecewise"),
        ),
        (["duchi", "--epsilon", "1", "--low", "0", "--high", "1", "--grid", "8"], ("--grid", "duchi")),
        (
            ["laplace", "--epsilon", "1", "--low", "0", "--high", "1", "--num-bits", "8"],
            ("--num-bits", "laplace"),
        ),
        (["auto", "--epsilon", "1", "--low", "0", "--high", "1", "--delta", "1e-5"], ("--delta", "auto")),
        (["grr", "--epsilon", "1", "--domain", "a,b", "--f", "0.5", "--hash", "md5"], ("--f, --hash", "grr")),
        (["oue", "--epsilon", "1", "--domain", "a,b", "--from-google", "{params}"], ("--from-google", "oue")),
    ],
)
def test_spec_ignored_or_contradictory_options_are_one_line_usage_errors(tmp_path, args, needles):
    args = [str(_params_file(tmp_path)) if a == "{params}" else a for a in args]
    out = tmp_path / "spec.json"
    result = _run("spec", *args, "-o", out)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "not apply" in lines[0], result.stderr
    assert all(needle in lines[0] for needle in needles), lines[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["rappor", "--from-google", "{params}", "--hash", "mmh3"],
        ["rappor", "--encoding", "basic", "--domain", "a,b", "--f", "0.5", "--p", "0.25", "--q", "0.75"],
        ["auto", "--epsilon", "1", "--low", "0", "--high", "1", "--grid", "16"],
        ["laplace", "--epsilon", "1", "--low", "0", "--high", "1", "--grid", "16"],
        ["gaussian", "--epsilon", "1", "--low", "0", "--high", "1", "--delta", "1e-5", "--grid", "16"],
        ["olh", "--epsilon", "1", "--domain", "a,b,c", "--g", "3"],
    ],
)
def test_spec_options_that_apply_are_accepted(tmp_path, args):
    args = [str(_params_file(tmp_path)) if a == "{params}" else a for a in args]
    result = _run("spec", *args, "-o", tmp_path / "spec.json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["gaussian", "--epsilon", "1", "--low", "0", "--high", "1"], "gaussian needs --delta"),
        (
            ["rappor", "--num-bits", "8", "--num-hashes", "2", "--p", "0.25", "--q", "0.75"],
            "rappor needs --f",
        ),
        (["rappor", "--num-bits", "8", "--p", "0.25"], "rappor needs --f, --q, --num-hashes"),
        (["rappor", "--encoding", "basic", "--domain", "a,b", "--f", "0.5"], "rappor needs --p, --q"),
    ],
)
def test_spec_missing_parameters_name_the_options(args, message):
    result = _run("spec", *args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], result.stderr


# -- ldp encode ----------------------------------------------------------------
def _grr_spec(tmp_path):
    path = tmp_path / "grr.json"
    path.write_text(ldp.GRR(domain=("a", "b", "c"), epsilon=1.0).to_json())
    return path


def test_encode_text_to_stdout_is_json_lines(tmp_path):
    spec_path = _grr_spec(tmp_path)
    values = tmp_path / "values.txt"
    values.write_text("a\nb\nc\na\n")
    result = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values)])
    assert result.exit_code == 0, result.output
    reports = [Report.from_json(line) for line in result.stdout.splitlines()]
    spec = ldp.load_spec(spec_path)
    assert len(reports) == 4 and all(r.spec == spec.fingerprint and r.value in spec.domain for r in reports)
    assert "encoded 4 values" in result.stderr


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_encode_table_inputs_and_outputs_by_extension(tmp_path, suffix):
    spec_path = _grr_spec(tmp_path)
    frame = pd.DataFrame({"user": ["u1", "u2", "u3"], "browser": ["a", "c", "b"]})
    source = tmp_path / f"in{suffix}"
    {
        ".csv": lambda: frame.to_csv(source, index=False),
        ".jsonl": lambda: frame.to_json(source, orient="records", lines=True),
        ".parquet": lambda: frame.to_parquet(source),
    }[suffix]()
    out = tmp_path / f"out{suffix}"
    result = _run("encode", "--spec", spec_path, source, "--column", "browser", "-o", out)
    assert result.exit_code == 0, result.output
    if suffix == ".parquet":
        table = pd.read_parquet(out)
    elif suffix == ".csv":
        table = pd.read_csv(out, dtype=str)
    else:
        table = pd.read_json(out, lines=True, dtype=False)
    assert len(table) == 3 and set(table["value"]) <= {"a", "b", "c"}
    assert set(map(str, table["spec"])) == {ldp.load_spec(spec_path).fingerprint}


def test_encode_several_columns_needs_column(tmp_path):
    spec_path = _grr_spec(tmp_path)
    source = tmp_path / "in.csv"
    source.write_text("x,y\na,b\n")
    result = _run("encode", "--spec", spec_path, source)
    assert result.exit_code == 2 and "--column" in result.output and "Traceback" not in result.output


def test_encode_value_outside_domain_is_a_one_line_error(tmp_path):
    spec_path = _grr_spec(tmp_path)
    values = tmp_path / "values.txt"
    values.write_text("a\nzzz\n")
    result = _run("encode", "--spec", spec_path, values)
    assert result.exit_code == 2
    assert "row 2" in result.output and "zzz" in result.output and "Traceback" not in result.output


def _rappor_spec(tmp_path):
    spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=64, f="1/2", p="1/4", q="3/4")
    path = tmp_path / "rappor.json"
    path.write_text(spec.to_json())
    return spec, path


def test_encode_without_state_gives_each_row_a_fresh_client(tmp_path):
    _, spec_path = _rappor_spec(tmp_path)
    source = tmp_path / "urls.txt"
    source.write_text("same\n" * 200)
    out = tmp_path / "reports.jsonl"
    assert _run("encode", "--spec", spec_path, source, "-o", out).exit_code == 0
    cohorts = [Report.from_json(line).cohort for line in out.read_text().splitlines()]
    # 200 fresh clients with uniform cohorts over 64: all in one cohort has probability 64^-199
    assert len(cohorts) == 200 and len(set(cohorts)) > 1
    assert not list(tmp_path.glob("*.json.*"))  # no state written anywhere


def test_encode_with_state_keeps_each_client(tmp_path):
    spec, spec_path = _rappor_spec(tmp_path)
    source = tmp_path / "users.csv"
    source.write_text("client_id,url\nalice,a.com\nbob,b.com\nalice,c.com\n")
    states = tmp_path / "states"
    out1, out2 = tmp_path / "r1.jsonl", tmp_path / "r2.jsonl"
    assert (
        _run(
            "encode", "--spec", spec_path, source, "--column", "url", "--state", states, "-o", out1
        ).exit_code
        == 0
    )
    for client in ("alice", "bob"):
        path = state_path(states, client)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    first = [Report.from_json(line) for line in out1.read_text().splitlines()]
    assert first[0].cohort == first[2].cohort  # alice's two rows: one client
    alice = ldp.client.ClientState.load(state_path(states, "alice"), spec)
    assert first[0].cohort == alice.cohort
    before = state_path(states, "alice").read_bytes()
    assert (
        _run(
            "encode", "--spec", spec_path, source, "--column", "url", "--state", states, "-o", out2
        ).exit_code
        == 0
    )
    assert state_path(states, "alice").read_bytes() == before  # restart: same secret and cohort
    second = [Report.from_json(line) for line in out2.read_text().splitlines()]
    assert [r.cohort for r in second] == [r.cohort for r in first]
    # the same PRR as a client built from the same file
    prr = ldp.client.make_encoder(spec, state=str(state_path(states, "alice"))).permanent_bits("a.com")
    assert prr == ldp.client.make_encoder(spec, state=alice).permanent_bits("a.com")


def test_encode_corrupt_state_is_an_error_and_left_alone(tmp_path):
    _, spec_path = _rappor_spec(tmp_path)
    source = tmp_path / "users.csv"
    source.write_text("client_id,url\nalice,a.com\n")
    states = tmp_path / "states"
    states.mkdir(mode=0o700)
    state_path(states, "alice").write_text("{not json")
    state_path(states, "alice").chmod(0o600)
    result = _run("encode", "--spec", spec_path, source, "--column", "url", "--state", states)
    assert result.exit_code == 2 and "corrupt" in result.output and "Traceback" not in result.output
    assert state_path(states, "alice").read_text() == "{not json"


def test_encode_state_needs_a_client_id_column(tmp_path):
    _, spec_path = _rappor_spec(tmp_path)
    source = tmp_path / "users.csv"
    source.write_text("url\na.com\n")
    result = _run("encode", "--spec", spec_path, source, "--state", tmp_path / "states")
    assert result.exit_code == 2 and "client_id" in result.output


def test_encode_seed_warns_that_it_is_insecure(tmp_path):
    spec_path = _grr_spec(tmp_path)
    values = tmp_path / "values.txt"
    values.write_text("a\nb\n")
    result = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values), "--seed", "1"])
    assert result.exit_code == 0
    assert "NOT private" in result.stderr
    again = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values), "--seed", "1"])
    assert again.stdout == result.stdout  # reproducible, which is exactly why it is not private


def test_encode_progress_only_on_a_terminal_and_with_an_output_file(tmp_path, monkeypatch):
    import ldp.client.cli as client_cli

    spec_path = _grr_spec(tmp_path)
    values = tmp_path / "values.txt"
    values.write_text("a\nb\nc\na\nb\n")
    out = tmp_path / "reports.jsonl"
    plain = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values), "-o", str(out)])
    assert plain.exit_code == 0 and "rows read" not in plain.stderr  # not a terminal: silent

    import ldp.progress

    monkeypatch.setattr(ldp.progress, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(client_cli._Progress, "every", 2)
    shown = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values), "-o", str(out)])
    assert shown.exit_code == 0 and "rows read" in shown.stderr
    assert len(out.read_text().splitlines()) == 5
    to_stdout = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(values)])
    assert to_stdout.exit_code == 0 and "rows read" not in to_stdout.stderr  # reports on stdout: no bar
    assert len(to_stdout.stdout.splitlines()) == 5
