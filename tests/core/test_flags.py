"""Library errors name Python parameters; the commands say the same in their flags (ldp.flags)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

import ldp
from ldp.aggregator.cli import aggregate
from ldp.aggregator.engines import aggregate_files, check_scheduler_address
from ldp.aggregator.rejects import RejectsWriter
from ldp.cli import cli
from ldp.errors import ParameterError
from ldp.flags import Flags
from ldp.simulations import run
from ldp.simulations.numeric import numeric_population
from ldp.simulations.presets import run_rappor_regtest
from ldp.simulations.sweep import check_sweep_options, sweep_kind


def test_naming_renders_python_names_and_flags():
    error = ParameterError.naming(
        "give {scheduler} or {workers=}, not both ({engine=})", scheduler="x", workers=3, engine="dask"
    )
    assert str(error) == "give scheduler or workers=3, not both (engine='dask')"
    assert error.parameters == {"scheduler": "x", "workers": 3, "engine": "dask"}
    flags = Flags(names={"scheduler": "--dask-scheduler"}, choices=frozenset({"engine"}))
    assert flags.message(error) == "give --dask-scheduler or --workers 3, not both (--engine dask)"


def test_translating_leaves_other_errors_alone():
    with pytest.raises(ParameterError, match=r"^plain --text\{x\}$"), Flags().translating():
        raise ParameterError("plain --text{x}")
    with (
        pytest.raises(ParameterError, match=r"^--rappor-bits applies"),
        Flags(names={"rappor.num_bits": "--rappor-bits"}).translating(),
    ):
        raise ParameterError.naming("{rappor.num_bits} applies", **{"rappor.num_bits": 8})


def _reports(tmp_path):
    spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    reports = tmp_path / "reports.jsonl"
    values = tmp_path / "values.txt"
    values.write_text("a\nb\na\n")
    result = CliRunner().invoke(
        cli, ["encode", "--spec", str(spec_path), str(values), "-o", str(reports), "--seed", "1"]
    )
    assert result.exit_code == 0, result.output
    return spec, str(spec_path), str(reports)


def test_too_many_workers_names_the_parameter_in_python_and_the_flag_in_the_cli(tmp_path, monkeypatch):
    import ldp.aggregator.engines as engines

    monkeypatch.setattr(engines, "usable_cpus", lambda: 1)
    spec, spec_path, reports = _reports(tmp_path)
    with pytest.raises(ParameterError) as caught, RejectsWriter(None) as rejects:
        aggregate_files(spec, [reports], rejects, workers=9)
    assert str(caught.value).startswith("workers=9 is too many for this machine: at most 2")
    assert caught.value.parameters == {"workers": 9}
    result = CliRunner().invoke(aggregate, ["--spec", spec_path, reports, "--workers", "9"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --workers 9 is too many for this machine: at most 2")


def test_scheduler_address_names_the_parameter():
    with pytest.raises(ParameterError, match=r"^scheduler='nonsense' is not a Dask scheduler address"):
        check_scheduler_address("nonsense")


def test_sweep_errors_name_parameters_in_python_and_flags_in_the_cli():
    with pytest.raises(ParameterError, match=r"^domain_size, mode apply to frequency sweeps only"):
        check_sweep_options("numeric", ["domain_size", "users", "mode"])
    with pytest.raises(ParameterError, match=r"^rappor.num_bits applies to frequency sweeps only"):
        check_sweep_options("numeric", ["rappor.num_bits"])
    with pytest.raises(ParameterError, match=r"^mechanisms mixes numeric mechanisms"):
        sweep_kind("grr,duchi", None)
    with pytest.raises(ParameterError, match=r"^distribution='uniform' does not apply with data"):
        sweep_kind(None, "uniform", data=True)
    result = CliRunner().invoke(cli, ["simulate", "-m", "duchi", "--rappor-bits", "8", "--mode", "faithful"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: --rappor-bits, --mode apply to frequency sweeps only, not to this numeric sweep"
    )


def test_data_needs_column_names_parameters_in_python_and_flags_in_the_cli(tmp_path):
    from ldp.simulations import run

    path = tmp_path / "d.csv"
    path.write_text("c\na\nb\n")
    with pytest.raises(ParameterError, match=r"^data needs column \(the column"):
        run(data=path, epsilons=1, repeats=1, seed=1)
    result = CliRunner().invoke(cli, ["simulate", "--data", str(path), "-m", "grr"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: --data needs --column (the column holding one value per row)"


def _data_file(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("c\na\nb\n")
    return str(path)


def _as_users_without_data(tmp_path):
    run(as_users=True, users=100, domain_size=4, repeats=1, seed=0)


def _domain_size_with_data(tmp_path):
    run(data=_data_file(tmp_path), column="c", domain_size=4, epsilons=1, repeats=1, seed=0)


def _bad_distribution(tmp_path):
    numeric_population("beta:2,x", 0, 1)


def _bad_cases_pattern(tmp_path):
    run_rappor_regtest(small=True, cases="(")


def _scheduler_without_dask(tmp_path):
    spec, _, reports = _reports(tmp_path)
    with RejectsWriter(None) as rejects:
        aggregate_files(spec, [reports], rejects, scheduler="tcp://127.0.0.1:1")


@pytest.mark.parametrize(
    "library_call, python_words, cli_args, flag_words",
    [
        (
            _as_users_without_data,
            "as_users needs data and column (users are the file's rows)",
            lambda tmp: ["simulate", "--as-users", "-m", "grr"],
            "--as-users needs --data and --column (users are the file's rows)",
        ),
        (
            _domain_size_with_data,
            "domain_size does not apply to data (the domain is the column's distinct values)",
            lambda tmp: ["simulate", "--data", _data_file(tmp), "--column", "c", "-d", "4", "-m", "grr"],
            "--domain-size does not apply to --data (the domain is the column's distinct values)",
        ),
        (
            _bad_distribution,
            "distribution='beta:2,x': parameters must be numbers (e.g. beta:2,5)",
            lambda tmp: ["simulate", "-m", "duchi", "--distribution", "beta:2,x"],
            "--distribution 'beta:2,x': parameters must be numbers (e.g. beta:2,5)",
        ),
        (
            _bad_cases_pattern,
            "cases='(' is not a valid regular expression",
            lambda tmp: ["simulate", "--preset", "rappor-regtest", "--small", "--cases", "("],
            "--cases '(' is not a valid regular expression",
        ),
        (
            _scheduler_without_dask,
            "scheduler is for engine='dask'",
            lambda tmp: [
                "aggregate",
                "--spec",
                _reports(tmp)[1],
                _reports(tmp)[2],
                "--scheduler",
                "tcp://127.0.0.1:1",
            ],
            "--scheduler is for --engine dask",
        ),
    ],
)
def test_library_errors_name_python_parameters_and_the_cli_its_flags(
    tmp_path, library_call, python_words, cli_args, flag_words
):
    """Each library error names Python parameters; the command words the same error with its flags."""
    with pytest.raises(ParameterError) as caught:
        library_call(tmp_path)
    assert str(caught.value).startswith(python_words)
    result = CliRunner().invoke(cli, cli_args(tmp_path))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().startswith("Error: " + flag_words)


@pytest.mark.slow  # a fresh interpreter; the fast set's import probe: test_cli_imports' --help test
def test_library_modules_do_not_import_click():
    code = (
        "import sys\n"
        "import ldp.aggregator.engines, ldp.aggregator.accumulate, ldp.simulations.runner, ldp.simulations.sweep\n"
        "import ldp.simulations.populations, ldp.simulations.numeric, ldp.progress, ldp.values_file, ldp.flags\n"
        "assert 'click' not in sys.modules, 'click imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
