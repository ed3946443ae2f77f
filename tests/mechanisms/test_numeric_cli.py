"""CLI for numeric specs: ldp spec / encode / aggregate (CliRunner, real files)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.stats import norm

import ldp
from ldp.cli import cli
from ldp.client import encode_batch, make_encoder
from ldp.errors import ParameterError

Z = float(norm.ppf(1 - 1e-6 / 2))


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize(
    "args, cls",
    [
        (["piecewise", "--epsilon", 1, "--low", 0, "--high", 100], ldp.Piecewise),
        (["duchi", "--epsilon", 1, "--low", 0, "--high", 100], ldp.Duchi),
        (["stochastic-rounding", "--epsilon", 1, "--low", 0, "--high", 1], ldp.StochasticRounding),
        (["laplace", "--epsilon", 2, "--low", -5, "--high", 5, "--grid", 64], ldp.Laplace),
        (["hybrid", "--epsilon", 2, "--low", 0, "--high", 10], ldp.Hybrid),
        (["gaussian", "--epsilon", 1, "--delta", 1e-5, "--low", 0, "--high", 1], ldp.Gaussian),
        (["auto", "--epsilon", 4, "--low", 0, "--high", 3600], ldp.Hybrid),
        (["auto", "--epsilon", 0.3, "--low", 0, "--high", 3600], ldp.Duchi),
    ],
)
def test_spec_command(tmp_path, args, cls):
    out = tmp_path / "spec.json"
    result = run("spec", *args, "-o", out)
    assert result.exit_code == 0, result.output
    spec = ldp.load_spec(out)
    assert isinstance(spec, cls)
    assert "fingerprint" in result.output and "epsilon" in result.output


def test_spec_command_errors():
    result = run("spec", "piecewise", "--epsilon", 1)
    assert result.exit_code == 2 and "--low and --high" in result.output
    result = run("spec", "laplace", "--epsilon", 1, "--low", 5, "--high", 1)
    assert result.exit_code == 2 and "low < high" in result.output
    result = run("spec", "gaussian", "--epsilon", 1, "--low", 0, "--high", 1)
    assert result.exit_code == 2 and "delta" in result.output
    result = run("spec", "grr", "--epsilon", 1, "--domain", "a,b", "--low", 0)
    assert result.exit_code == 2


def test_encode_aggregate_round_trip_with_rejects(tmp_path):
    spec_path = tmp_path / "pm.json"
    assert run("spec", "piecewise", "--epsilon", 2, "--low", 0, "--high", 100, "-o", spec_path).exit_code == 0
    spec = ldp.load_spec(spec_path)
    values = np.random.default_rng(1).uniform(0, 100, 3000)
    data = tmp_path / "values.csv"
    data.write_text("minutes\n" + "\n".join(f"{v:.4f}" for v in values) + "\n250\n")  # 250 is clipped to 100
    reports = tmp_path / "reports.jsonl"
    result = run("encode", "--spec", spec_path, data, "-o", reports)
    assert result.exit_code == 0, result.output
    lines = reports.read_text().splitlines()
    assert len(lines) == 3001
    first = json.loads(lines[0])
    assert set(first) == {"v", "spec", "value"} and isinstance(first["value"], float)
    with reports.open("a") as fh:
        fh.write(json.dumps({"v": 1, "spec": spec.fingerprint, "value": 0.123456}) + "\n")  # off the grid
        fh.write(json.dumps({"v": 1, "spec": spec.fingerprint, "value": "abc"}) + "\n")
        fh.write('{"v": 1, "spec": "' + spec.fingerprint + '", "value": NaN}\n')
    rejects = tmp_path / "rejects.jsonl"
    estimates = tmp_path / "mean.csv"
    result = run("aggregate", "--spec", spec_path, reports, "--rejects", rejects, "-o", estimates)
    assert result.exit_code == 3, result.output  # rejects present
    assert len(rejects.read_text().splitlines()) == 3
    table = pd.read_csv(estimates)
    assert list(table.columns[:5]) == ["mean", "std_error", "ci_low", "ci_high", "n"]
    row = table.iloc[0]
    truth = np.append(values, 100.0).mean()
    t = spec.to_native(np.append(values, 100.0))
    se = math.sqrt(spec.native_variance(t).sum()) / t.size * spec.half_width
    assert row["n"] == 3001
    assert abs(row["mean"] - truth) <= Z * se
    assert row["sum"] == pytest.approx(row["mean"] * 3001)


def test_encode_rejects_nan_with_a_clear_error(tmp_path):
    spec_path = tmp_path / "d.json"
    run("spec", "duchi", "--epsilon", 1, "--low", 0, "--high", 1, "-o", spec_path)
    data = tmp_path / "v.csv"
    data.write_text("x\n0.5\nnan\n")
    result = run("encode", "--spec", spec_path, data, "-o", tmp_path / "r.jsonl")
    assert result.exit_code == 2
    assert "finite" in result.output


def test_seeded_encode_parquet_aggregate(tmp_path):
    spec_path = tmp_path / "lap.json"
    run("spec", "laplace", "--epsilon", 4, "--low", 0, "--high", 10, "--grid", 32, "-o", spec_path)
    data = tmp_path / "v.txt"
    data.write_text("\n".join(["7"] * 2000) + "\n")
    reports = tmp_path / "r.parquet"
    result = run("encode", "--spec", spec_path, data, "--seed", 5, "-o", reports)
    assert result.exit_code == 0, result.output
    out = tmp_path / "m.json"
    result = run("aggregate", "--spec", spec_path, reports, "-o", out)
    assert result.exit_code == 0, result.output
    spec = ldp.load_spec(spec_path)
    row = pd.read_json(out).iloc[0]
    se = math.sqrt(float(spec.native_variance(spec.to_native(7.0))) / 2000) * spec.half_width
    assert abs(row["mean"] - 7.0) <= Z * se + spec.max_bias * spec.half_width


@pytest.mark.parametrize("text", ["12", b"12", " 1e3 ", True])
def test_the_numeric_encoders_refuse_text_and_booleans(text):
    """Issue 24: the Python numeric encoder silently read the string '12' as the number 12."""
    spec = ldp.Duchi(epsilon=1.0, low=0, high=100)
    with pytest.raises(ParameterError, match="numeric value must be a number, got"):
        make_encoder(spec).encode(text)
    for batch in ([text], [1.0, text]) if not isinstance(text, bool) else ([text],):
        with pytest.raises(ParameterError, match="numeric value must be a number, got"):
            encode_batch(spec, batch, np.random.default_rng(1))
    assert make_encoder(spec).encode(12).spec == spec.fingerprint  # numbers still are


def test_ldp_encode_still_parses_the_numbers_of_a_text_file(tmp_path):
    spec = ldp.Duchi(epsilon=1.0, low=0, high=100)
    (tmp_path / "spec.json").write_text(spec.to_json())
    (tmp_path / "values.txt").write_text("12\n 13 \n1e1\n")
    for seed in ([], ["--seed", "1"]):
        result = CliRunner().invoke(
            cli, ["encode", "--spec", str(tmp_path / "spec.json"), str(tmp_path / "values.txt"), *seed]
        )
        assert result.exit_code == 0, result.output
        assert len(result.stdout.splitlines()) == 3
    (tmp_path / "values.txt").write_text("12\nabc\n")
    result = CliRunner().invoke(
        cli, ["encode", "--spec", str(tmp_path / "spec.json"), str(tmp_path / "values.txt")]
    )
    assert result.exit_code == 2 and "row 2: numeric value must be a number, got 'abc'" in result.stderr
