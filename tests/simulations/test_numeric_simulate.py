"""ldp simulate for numeric mechanisms: populations, MSE vs theory, CLI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.stats import norm

from ldp.cli import cli
from ldp.errors import ParameterError
from ldp.simulations.numeric import (
    NUMERIC_COLUMNS,
    format_numeric_report,
    numeric_population,
    run_numeric,
    summarize_numeric,
)

Z = float(norm.ppf(1 - 1e-6 / 2))


@pytest.mark.parametrize("name", ["uniform", "gaussian:0.1", "exponential:0.3", "beta:2,5", "beta"])
def test_populations(name):
    pop = numeric_population(name, 0, 100)
    x = pop.draw(1000, np.random.default_rng(0))
    assert x.shape == (1000,)
    with pytest.raises(ParameterError):
        numeric_population("zipf")


def test_mse_matches_theory_over_repeats():
    repeats = 100
    results = run_numeric("duchi,piecewise", "1", 2000, "uniform", low=0, high=10, repeats=repeats, seed=4)
    assert tuple(results.columns) == NUMERIC_COLUMNS
    for _, part in results.groupby("mechanism"):
        ratio = (part["mse"] / part["theory_mse"]).mean()  # mean of chi-square(1) by the CLT
        assert abs(ratio - 1) <= Z * math.sqrt(2 / repeats)
        assert (
            (part["formula_mse"] / part["theory_mse"]).between(0.98, 1.02).all()
        )  # grid ≈ docs/mechanisms.md#numeric
    summary = summarize_numeric(results)
    text = format_numeric_report(summary)
    assert "Best mechanism per epsilon" in text


def test_seed_reproduces():
    a = run_numeric("hybrid", "2", 500, "beta", repeats=2, seed=9)
    b = run_numeric("hybrid,laplace", "2", 500, "beta", repeats=2, seed=9)
    assert a["estimate"].tolist() == b[b["mechanism"] == "hybrid"]["estimate"].tolist()


def test_cli_numeric_sweep_and_real_data(tmp_path):
    out = tmp_path / "r.csv"
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "-m",
            "duchi,hybrid,auto,gaussian",
            "-e",
            "0.1,8",
            "-n",
            "2000",
            "-r",
            "2",
            "--seed",
            "1",
            "--distribution",
            "beta:2,5",
            "--low",
            "0",
            "--high",
            "100",
            "-o",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "mean of beta:2,5" in result.output
    frame = pd.read_csv(out)
    assert set(frame["mechanism"]) == {"duchi", "hybrid", "auto", "gaussian"}
    data = tmp_path / "d.csv"
    data.write_text(
        "minutes\n" + "\n".join(str(v) for v in np.random.default_rng(0).exponential(10, 500)) + "\n"
    )
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "-m",
            "piecewise",
            "-e",
            "1",
            "--data",
            str(data),
            "--column",
            "minutes",
            "--as-users",
            "--high",
            "60",
            "--seed",
            "2",
            "-r",
            "1",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "500 users" in result.output


def test_lower_bound_is_on_the_fixed_data_scale_duchi_attains_it():
    """The lower bound (docs/mechanisms.md#lower-bounds) minus the users' own sampling variance: Duchi's exact fixed-data variance sits on it."""
    results = run_numeric(
        "duchi,stochastic-rounding,piecewise",
        [0.5, 2.0],
        3000,
        distribution="beta",
        low=0,
        high=100,
        repeats=1,
        seed=4,
    )
    for row in results.itertuples():
        iid_line = (1 / math.tanh(row.epsilon / 2)) ** 2 / row.users * 50.0**2  # half width 50
        assert row.lower_bound < iid_line
        if row.resolved in (
            "duchi",
            "stochastic-rounding",
        ):  # rational p calibrated toward privacy: C' >= coth
            assert row.theory_mse >= row.lower_bound * (1 - 1e-12)
            assert row.theory_mse == pytest.approx(row.lower_bound, rel=1e-6)


@pytest.mark.parametrize(
    "low, high, needle",
    [
        (-1e308, 1e308, "high - low overflows a double"),
        (-1e150, 1e150, "is too wide at epsilon=1"),
    ],
)
def test_a_range_with_non_finite_derived_values_is_refused_before_drawing(monkeypatch, low, high, needle):
    """±1e308 used to make the mean −inf (and NaN values in the population): refused at spec time."""
    import ldp.simulations.numeric as numeric

    monkeypatch.setattr(
        numeric.NumericPopulation, "draw", lambda *a: pytest.fail("users drawn before the specs")
    )
    with pytest.raises(ParameterError, match=needle):
        run_numeric("duchi", "1", 100, "uniform", low=low, high=high, repeats=1, seed=0)


def test_numeric_simulation_is_public_and_takes_a_dataframe_or_series_as_a_file(tmp_path):
    import ldp.simulations

    assert ldp.simulations.run_numeric is run_numeric and "run_numeric" in ldp.simulations.__all__
    minutes = pd.Series(np.random.default_rng(0).exponential(10, 500), name="minutes")
    path = tmp_path / "d.csv"
    minutes.to_frame().to_csv(path, index=False)
    grid = {"mechanisms": "duchi,piecewise", "epsilons": [1.0], "repeats": 2, "seed": 3, "high": 60.0}
    scores = ["mechanism", "users", "repeat", "low", "estimate", "truth", "mse", "theory_mse"]
    from_file = run_numeric(data=path, column="minutes", as_users=True, **grid)
    from_frame = run_numeric(data=minutes.to_frame(), column="minutes", as_users=True, **grid)
    from_series = run_numeric(data=minutes, as_users=True, **grid)
    pd.testing.assert_frame_equal(from_frame[scores], from_file[scores])
    pd.testing.assert_frame_equal(from_series[scores], from_file[scores])
    assert (from_series["users"] == 500).all()


def test_run_points_a_numeric_mechanism_to_run_numeric():
    from ldp.simulations import run

    with pytest.raises(
        ParameterError, match=r"'duchi' is a numeric mechanism: simulate it with .*run_numeric"
    ):
        run(mechanisms="grr,duchi", epsilons=[1.0], users=[100], repeats=1, seed=1)
