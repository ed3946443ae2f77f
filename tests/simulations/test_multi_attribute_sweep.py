"""``ldp simulate --spec RECORDS.json --data FILE``: SMP, SPL and RS+FD compared on a multi-column file."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from ldp.cli import cli
from ldp.errors import ParameterError
from ldp.simulations.multiattr import recalibrated, records_sweep
from ldp.specs.multiattr import MULTI_ATTRIBUTE_METHODS, MultiAttribute

CATEGORICAL = [
    {"name": "os", "mechanism": "grr", "domain": ["l", "m", "w"]},
    {"name": "browser", "mechanism": "olh", "domain": ["ff", "chrome", "safari", "edge"]},
]


def _records(path, rows: int = 400, numeric: bool = False):
    header = "os,browser,ms" if numeric else "os,browser"
    lines = [header]
    for i in range(rows):
        cells = ["lmw"[i % 3] if i % 5 else "l", ["ff", "chrome", "safari", "edge"][i % 4]]
        lines.append(",".join(cells + ([str(i % 100)] if numeric else [])))
    lines.append(",ff" + (",3" if numeric else ""))  # a missing cell: the row is dropped
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_method_runs_on_categorical_records_and_the_spec_is_recalibrated(tmp_path):
    spec = MultiAttribute(CATEGORICAL, 1.0)
    results, text = records_sweep(spec, _records(tmp_path / "r.csv"), "1,4", repeats=2, seed=3)
    assert set(results["method"]) == set(MULTI_ATTRIBUTE_METHODS)  # rsfd over GRR, SUE-z/r and OUE-z/r too
    assert set(results["attribute"]) == {"os", "browser"} and (results["n"] == 400).all()
    assert (results["variance"] > 0).all() and results.groupby(["epsilon", "attribute"])["best"].sum().eq(
        1
    ).all()
    # smp: the paper's k at each epsilon; spl: every attribute
    assert results.loc[results["method"] == "smp", "sample"].tolist() == [1, 1, 1, 1]
    assert "not run" not in text
    again = recalibrated(spec, 4.0, "spl")
    assert again.epsilon == 4.0 and [a.epsilon for a in again.attributes] == [2.0, 2.0]
    assert again.attributes[1].g != spec.attributes[1].g  # OLH's g recalibrated at its share


def test_rsfd_is_left_out_with_its_reason_when_an_attribute_is_numeric(tmp_path):
    spec = MultiAttribute(
        [*CATEGORICAL, {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100}], 1.0
    )
    results, text = records_sweep(spec, _records(tmp_path / "r.csv", numeric=True), "1", repeats=2, seed=3)
    assert set(results["method"]) == {"smp", "spl"}
    assert "not run: rsfd-grr at epsilon=1: rsfd-grr takes categorical attributes; 'ms' is piecewise" in text
    assert "not run: rsfd-oue-r at epsilon=1: rsfd-oue-r takes categorical attributes" in text
    with pytest.raises(ParameterError, match="takes categorical"):
        recalibrated(spec, 1.0, "rsfd-grr")


def test_the_cli_compares_the_methods_and_refuses_what_does_not_apply(tmp_path):
    spec = MultiAttribute(CATEGORICAL, 1.0)
    (tmp_path / "spec.json").write_text(spec.to_json())
    data = _records(tmp_path / "r.csv")
    runner = CliRunner()
    args = ["simulate", "--spec", str(tmp_path / "spec.json"), "--data", str(data), "-e", "1", "-r", "2"]
    result = runner.invoke(cli, [*args, "--seed", "5", "-o", str(tmp_path / "out.csv")])
    assert result.exit_code == 0, result.output
    assert "rsfd-grr" in result.output and "seed: 5" in result.output
    assert set(pd.read_csv(tmp_path / "out.csv")["method"]) == set(MULTI_ATTRIBUTE_METHODS)
    result = runner.invoke(cli, [*args, "-m", "grr"])
    assert result.exit_code == 2 and "--mechanism does not apply to a multi-attribute sweep" in result.output
    (tmp_path / "bad.csv").write_text("os,browser\nz,ff\n")
    result = runner.invoke(
        cli, ["simulate", "--spec", str(tmp_path / "spec.json"), "--data", str(tmp_path / "bad.csv")]
    )
    assert result.exit_code != 0 and "'z'" in result.output and "Traceback" not in result.output


def test_the_sweep_is_fast_for_categorical_records_and_faithful_with_a_numeric_attribute(tmp_path):
    spec = MultiAttribute(CATEGORICAL, 1.0)
    fast, _ = records_sweep(spec, _records(tmp_path / "r.csv"), "1", repeats=1, seed=3)
    faithful, _ = records_sweep(spec, _records(tmp_path / "r.csv"), "1", repeats=1, seed=3, mode="faithful")
    assert set(fast["mode"]) == {"fast"} and set(faithful["mode"]) == {"faithful"}
    numeric = MultiAttribute(
        [*CATEGORICAL, {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100}], 1.0
    )
    mixed, _ = records_sweep(numeric, _records(tmp_path / "n.csv", numeric=True), "1", repeats=1, seed=3)
    assert set(mixed["mode"]) == {"faithful"}  # no fast simulator for a numeric attribute
    with pytest.raises(ParameterError, match="mode must be fast or faithful"):
        records_sweep(spec, _records(tmp_path / "r.csv"), "1", repeats=1, seed=3, mode="slow")
