"""ldp.simulations.run, the faithful path, real data, presets, plot and the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

import ldp
from ldp.cli import cli
from ldp.simulations import RESULT_COLUMNS, from_data, run
from ldp.simulations.populations import DISTRIBUTIONS, make_population
from ldp.simulations.presets import regtest_cases, run_rappor_regtest, wang2017

REQUIRED = [
    "mechanism",
    "epsilon",
    "users",
    "domain_size",
    "repeat",
    "mse",
    "mae",
    "max_error",
    "tv",
    "theory_mse",
    "lower_bound",
]


def _numbers(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=["seconds"])


# -- grid, columns, reproducibility -------------------------------------------


def test_run_grid_has_one_row_per_cell_and_repeat():
    frame = run(
        mechanisms="grr,oue,auto", epsilons="1,2", users="1000,2000", domain_size=16, repeats=3, seed=1
    )
    assert len(frame) == 3 * 2 * 2 * 3
    assert list(frame.columns) == list(RESULT_COLUMNS)
    assert set(REQUIRED) <= set(frame.columns)
    assert frame[REQUIRED].notna().all().all()
    assert sorted(frame["users"].unique()) == [1000, 2000]
    # auto is the best by theory at each (ε, D) and reproduces that mechanism's numbers.
    auto = frame[frame["mechanism"] == "auto"]
    for _, row in auto.iterrows():
        assert row["resolved"] == ldp.best_frequency_mechanism(row["epsilon"], 16)


def test_auto_rows_equal_their_choice():
    frame = _numbers(run(mechanisms="ss,auto", epsilons=1.0, users=5000, domain_size=64, repeats=2, seed=3))
    auto = frame[frame["mechanism"] == "auto"].drop(columns=["mechanism"]).reset_index(drop=True)
    chosen = frame[frame["mechanism"] == "ss"].drop(columns=["mechanism"]).reset_index(drop=True)
    assert (auto["resolved"] == "ss").all()
    pd.testing.assert_frame_equal(auto, chosen)


def test_same_seed_same_numbers_and_cells_are_independent_of_the_grid():
    kwargs = {"epsilons": "0.5,2", "users": 3000, "domain_size": 20, "repeats": 2}
    first = _numbers(run(mechanisms="grr,olh,rappor", seed=42, **kwargs))
    second = _numbers(run(mechanisms="grr,olh,rappor", seed=42, **kwargs))
    pd.testing.assert_frame_equal(first, second)
    other = _numbers(run(mechanisms="grr,olh,rappor", seed=43, **kwargs))
    assert not np.allclose(first["mse"], other["mse"])
    # Dropping a mechanism leaves the other cells' numbers unchanged.
    alone = _numbers(run(mechanisms="olh", seed=42, **kwargs)).reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, first[first["mechanism"] == "olh"].reset_index(drop=True))


def test_seed_is_recorded_when_not_given():
    frame = run(mechanisms="grr", epsilons=1, users=500, domain_size=4, repeats=1)
    again = run(
        mechanisms="grr", epsilons=1, users=500, domain_size=4, repeats=1, seed=int(frame["seed"].iloc[0])
    )
    pd.testing.assert_frame_equal(_numbers(frame), _numbers(again))


def test_binary_rr_only_on_two_values():
    frame = run(mechanisms="binary-rr,grr", epsilons=1, users=1000, domain_size=2, repeats=1, seed=0)
    assert set(frame["mechanism"]) == {"binary-rr", "grr"}
    assert "binary-rr" in set(run(epsilons=1, users=1000, domain_size=2, repeats=1, seed=0)["mechanism"])
    with pytest.raises(ldp.ParameterError, match="binary-rr"):
        run(mechanisms="binary-rr", epsilons=1, users=1000, domain_size=5, repeats=1, seed=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mechanisms": "nope"}, "unknown mechanism"),
        ({"epsilons": "1,x"}, "epsilon"),
        ({"epsilons": "-1"}, "epsilon"),
        ({"users": "0"}, "users"),
        ({"distribution": "cauchy"}, "unknown distribution"),
        ({"mode": "slow"}, "mode"),
        ({"repeats": 0}, "repeats"),
        ({"as_users": True}, "as_users needs data and column"),
    ],
)
def test_bad_arguments_raise_parameter_errors(kwargs, message):
    with pytest.raises(ldp.ParameterError, match=message):
        run(**{"users": 100, "domain_size": 4, "repeats": 1, "seed": 0, **kwargs})


def test_rappor_rows_have_detection_metrics():
    from ldp.aggregator.rappor.decode import detection_frequency
    from ldp.simulations.mechanisms import rappor_for_epsilon

    n, d, repeats = 20_000, 16, 2
    frame = run(mechanisms="rappor", epsilons="2,6", users=n, domain_size=d, repeats=repeats, seed=5)
    assert len(frame) == 2 * repeats
    assert frame["theory_mse"].isna().all()
    assert np.allclose(frame["epsilon_achieved"], frame["epsilon"], rtol=0, atol=1e-9)  # rappor_for_epsilon
    # The candidates are the 16 domain values, all with users: Zipf(1.1) gives the rarest 1.56%, so
    # P[some value has no user] <= 16·(1 − 0.0156)^20000 < 1e-130. Hence no false positive is possible,
    # every value is either detected or a false negative, and the counts are exact identities.
    assert make_population("zipf", d).probabilities.min() > 0.015
    assert (frame["false_positives"] == 0).all()
    assert (frame["detected"] + frame["false_negatives"] == d).all()
    assert frame["detected"].between(0, d).all()
    # allocated_mass = Σ of the detected (positive, non-negative-fit) estimates: finite, > 0 iff a
    # value is detected, and by the triangle inequality within Σ_detected |f̂ − f| <= 2·tv of the true
    # mass of the detected values, which is in [0, 1] (= 1 when all 16 are detected).
    mass, tv = frame["allocated_mass"].to_numpy(), frame["tv"].to_numpy()
    assert np.all(np.isfinite(mass)) and np.all((mass > 0) == (frame["detected"] > 0))
    assert np.all(mass <= 1 + 2 * tv + 1e-12)
    everything = (frame["detected"] == d).to_numpy()
    assert np.all(np.abs(mass[everything] - 1) <= 2 * tv[everything] + 1e-12)
    # More privacy budget, more detections. Theory (deterministic): the detection frequency of the
    # simulation's own spec falls as ε grows (it is (z_{1−α/M} + z_power)·SE, and SE falls with ε), at
    # any power >= 1/2 (below, z_power < 0 can make the threshold negative and the order flips).
    specs = {eps: rappor_for_epsilon(eps) for eps in (2.0, 6.0)}
    for power in (0.5, 0.9, 1 - 1e-6):
        assert detection_frequency(specs[6.0], n, d, power=power) < detection_frequency(
            specs[2.0], n, d, power=power
        )
    # Simulation, alpha = 1e-6 family-wise (Bonferroni over 16 values × 2 repeats per ε): a value whose
    # frequency exceeds detection_frequency(power = 1 − 1e-6/32) is detected. That function's standard
    # error uses the null bit variance p*(1−p*); the bit variance r(1−r) <= 1/4 bounds the true one,
    # so the threshold is scaled by √(1/(4p*(1−p*))) (1.03 at ε=2, 1.30 at ε=6). With this population
    # at least 3 values are detected at ε=2 and at least 8 at ε=6.
    probabilities = make_population("zipf", d).probabilities
    for eps, spec in specs.items():
        p_star = float(spec.prob_one_given_zero)
        threshold = detection_frequency(spec, n, d, power=1 - 1e-6 / (d * repeats)) / math.sqrt(
            4 * p_star * (1 - p_star)
        )
        sure = int((probabilities > threshold).sum())
        assert sure == {2.0: 3, 6.0: 8}[eps]
        assert (frame.loc[frame["epsilon"] == eps, "detected"] >= sure).all()


# -- fast versus faithful -----------------------------------------------------


ALPHA_AGREE = 1e-4  # per mechanism; z = 3.89 two-sided


@pytest.mark.parametrize(
    "mechanism, repeats",
    # The fast set: one mechanism per fast simulator and client family (GRR's, the pure oracles' with a unary
    # and a hashing client, subset selection's); binary RR (GRR's simulator), SUE (OUE's) and BLH (OLH's) in
    # the slow set with RAPPOR.
    [
        ("grr", 100),
        pytest.param("sue", 100, marks=pytest.mark.slow),
        ("oue", 100),
        ("olh", 100),
        pytest.param("blh", 100, marks=pytest.mark.slow),
        ("ss", 100),
        pytest.param("rappor", 40, marks=pytest.mark.slow),
        pytest.param("binary-rr", 100, marks=pytest.mark.slow),
    ],
)
def test_fast_and_faithful_agree(mechanism, repeats):
    """Two-sample z-test on the mean MSE over repeats (α = 1e-4 per mechanism).

    Both modes draw fresh users from the same population; the standard error
    uses the sample variances of the per-repeat MSEs (R per mode; RAPPOR's
    decode is slower, so it gets fewer).
    """
    domain_size = 2 if mechanism == "binary-rr" else 16
    kwargs = {
        "mechanisms": mechanism,
        "epsilons": 1.5,
        "users": 4000,
        "domain_size": domain_size,
        "repeats": repeats,
    }
    fast = run(mode="fast", seed=100, **kwargs)["mse"].to_numpy()
    faithful = run(mode="faithful", seed=200, **kwargs)["mse"].to_numpy()
    se = math.sqrt(fast.var(ddof=1) / fast.size + faithful.var(ddof=1) / faithful.size)
    z = stats.norm.isf(ALPHA_AGREE / 2)
    assert abs(fast.mean() - faithful.mean()) <= z * se, (fast.mean(), faithful.mean(), se)


def test_faithful_with_csprng_client_sample():
    from ldp.simulations.faithful import collect

    counts = np.array([600, 200, 60, 40, 30, 30, 20, 20])
    for spec in (
        ldp.GRR(domain=range(8), epsilon=2),
        ldp.OUE(domain=range(8), epsilon=2),
        ldp.OLH(domain=range(8), epsilon=2),
    ):
        accumulator = collect(
            spec, spec.domain, counts, np.random.default_rng(1), client_sample=50, chunk_users=300
        )
        assert accumulator.n == counts.sum()  # 50 CSPRNG reports + 950 batch reports, all counted
    frame = run(
        mechanisms="grr,oue,olh,rappor",
        epsilons=2,
        users=3000,
        domain_size=8,
        repeats=1,
        seed=9,
        mode="faithful",
        client_sample=20,
    )
    assert len(frame) == 4 and frame["mse"].notna().all()


def test_faithful_unary_domain_not_multiple_of_8():
    # Regression: encode_batch once left random bits in the last byte's padding.
    frame = run(mechanisms="oue", epsilons=2, users=1000, domain_size=5, repeats=1, seed=1, mode="faithful")
    assert len(frame) == 1


# -- populations and real data ------------------------------------------------


@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_synthetic_populations_are_distributions(name):
    population = make_population(name, 50)
    assert population.domain_size == 50
    assert math.isclose(population.probabilities.sum(), 1.0)
    assert (population.probabilities > 0).all()


def test_population_shapes():
    z = make_population("zipf:1.5", 10).probabilities
    assert np.all(np.diff(z) < 0)
    assert math.isclose(z[0] / z[1], 2**1.5)
    g = make_population("gaussian", 20).probabilities
    np.testing.assert_allclose(g, g[::-1])


def _write_data(tmp_path):
    values = ["fr"] * 50 + ["de"] * 30 + ["it"] * 15 + ["es"] * 5
    frame = pd.DataFrame({"country": values, "other": range(len(values))})
    csv_path = tmp_path / "visits.csv"
    parquet_path = tmp_path / "visits.parquet"
    jsonl_path = tmp_path / "visits.jsonl"
    frame.to_csv(csv_path, index=False)
    frame.to_parquet(parquet_path, index=False)
    frame.to_json(jsonl_path, orient="records", lines=True)
    return csv_path, parquet_path, jsonl_path


def test_real_data_from_csv_parquet_and_jsonl(tmp_path):
    for path in _write_data(tmp_path):
        population = from_data(path, "country")
        assert population.domain == ("fr", "de", "it", "es")
        np.testing.assert_allclose(population.probabilities, [0.5, 0.3, 0.15, 0.05])
        frame = run(
            data=path, column="country", mechanisms="grr,oue", epsilons=2, users=2000, repeats=2, seed=1
        )
        assert (frame["domain_size"] == 4).all()
        assert (frame["users"] == 2000).all()


def test_real_data_as_users(tmp_path):
    csv_path, parquet_path, _ = _write_data(tmp_path)
    frame = run(
        data=parquet_path, column="country", as_users=True, mechanisms="grr", epsilons=8, repeats=2, seed=1
    )
    assert (frame["users"] == 100).all()
    subset = run(
        data=csv_path,
        column="country",
        as_users=True,
        users=40,
        mechanisms="grr",
        epsilons=8,
        repeats=1,
        seed=1,
    )
    assert (subset["users"] == 40).all()
    with pytest.raises(ldp.ParameterError, match="exceeds"):
        run(data=csv_path, column="country", as_users=True, users=101, epsilons=1, repeats=1, seed=1)


def test_real_data_errors(tmp_path):
    csv_path, _, _ = _write_data(tmp_path)
    with pytest.raises(ldp.ParameterError, match="no column"):
        from_data(csv_path, "city")
    with pytest.raises(ldp.ParameterError, match="does not exist"):
        from_data(tmp_path / "missing.csv", "country")
    with pytest.raises(ldp.ParameterError, match="domain_size does not apply to data"):
        run(data=csv_path, column="country", domain_size=10)


def test_simulation_errors_are_the_specific_kind():
    """A bad spec parameter is a SpecError and unusable data an InputError (both still ParameterErrors)."""
    from ldp.simulations import rappor_for_epsilon
    from ldp.simulations.fast import frequency_support_counts
    from ldp.simulations.metrics import error_metrics

    base = {"users": 100, "domain_size": 4, "repeats": 1, "seed": 0}
    with pytest.raises(ldp.SpecError, match="unknown mechanism"):
        run(mechanisms="nope", **base)
    with pytest.raises(ldp.SpecError, match="numeric mechanism"):
        run(mechanisms="duchi", **base)
    with pytest.raises(ldp.SpecError, match="binary-rr"):
        run(mechanisms="binary-rr", **{**base, "domain_size": 5})
    with pytest.raises(ldp.SpecError, match="epsilon"):
        rappor_for_epsilon(-1.0)
    frame = pd.DataFrame({"country": ["fr", "de", "fr"]})
    with pytest.raises(ldp.InputError, match="'city' is not in the DataFrame"):
        run(data=frame, column="city", epsilons=1, repeats=1)
    with pytest.raises(ldp.InputError, match="not int"):
        run(data=42, column="country", epsilons=1, repeats=1)
    with pytest.raises(ldp.InputError, match="single distinct value"):
        run(data=pd.DataFrame({"country": ["fr", "fr"]}), column="country", epsilons=1, repeats=1)
    with pytest.raises(ldp.InputError, match=">= 0"):
        frequency_support_counts(
            ldp.GRR(domain=("a", "b"), epsilon=1.0), np.array([3, -1]), np.random.default_rng(0)
        )
    with pytest.raises(ldp.InputError, match="same length"):
        error_metrics(np.zeros(3), np.zeros(4))


_SCORES = ["mechanism", "epsilon", "users", "domain_size", "repeat", "mse", "mae", "max_error", "tv"]


@pytest.mark.parametrize("as_users", [False, True])
def test_real_data_from_a_dataframe_or_series_is_the_file_s_data(tmp_path, as_users):
    csv_path, _, _ = _write_data(tmp_path)
    frame = pd.read_csv(csv_path)
    grid = {"mechanisms": "grr,oue", "epsilons": 2, "repeats": 2, "seed": 1, "as_users": as_users}
    from_file = run(data=csv_path, column="country", **grid)
    from_frame = run(data=frame, column="country", **grid)
    from_series = run(data=frame["country"], **grid)
    pd.testing.assert_frame_equal(from_frame[_SCORES], from_file[_SCORES])
    pd.testing.assert_frame_equal(from_series[_SCORES], from_file[_SCORES])
    assert set(from_frame["distribution"]) == {"dataframe:country"}
    assert set(from_series["distribution"]) == {"series:country"}


def test_dataframe_data_errors_name_the_problem():
    frame = pd.DataFrame({"country": ["fr", "de", None, "fr"], "n": [1, 2, 3, 4]})
    assert from_data(frame, "country").domain == ("fr", "de")  # missing values dropped, as from a file
    with pytest.raises(ldp.ParameterError, match="'city' is not in the DataFrame"):
        run(data=frame, column="city", epsilons=1, repeats=1)
    with pytest.raises(ldp.ParameterError, match="data needs column"):
        run(data=frame, epsilons=1, repeats=1)
    with pytest.raises(ldp.ParameterError, match="not the Series' name"):
        from_data(frame["country"], "n")
    with pytest.raises(ldp.ParameterError, match="a file path, a pandas DataFrame or a Series, not list"):
        from_data(["fr", "de"], "country")  # type: ignore[arg-type]


# -- presets --------------------------------------------------------------------


def test_wang2017_preset_small():
    grid = wang2017(small=True)
    frame = run(**grid, seed=2)
    assert len(frame) == 4 * 3 * 2 * 1 * 2
    assert set(frame["domain_size"]) == {16, 256}
    full = wang2017()
    assert full["domain_size"] == [16, 32, 64, 128, 256, 512, 1024]


def test_rappor_regtest_has_25_cases_like_google():
    cases = regtest_cases()
    assert len(cases) == 25
    typical = next(c for c in cases if c.name == "r-zipf1-small-typical")
    candidates = typical.candidates()
    assert len(candidates) == 90 + 20  # v9, v19, ... v99 left out; v101..v120 added
    assert "v9" not in candidates and "v120" in candidates
    assert typical.spec.num_bits == 8 and typical.spec.num_cohorts == 128 and typical.spec.hash == "md5"
    # google/rappor labels these parameters "eps_1 = 1, eps_inf = 5"; exactly they give 0.973 and 4.95.
    assert math.isclose(typical.spec.epsilon_one, 1.0, abs_tol=0.05)
    assert math.isclose(typical.spec.epsilon_inf, 5.0, abs_tol=0.1)


@pytest.mark.slow
def test_rappor_regtest_small_runs():
    frame = run_rappor_regtest(small=True, cases="zipf1-small", seed=4)
    assert len(frame) == 5
    assert (frame["detected"] >= frame["false_positives"]).all()
    missing = frame[frame["case"] != "r-zipf1-small-sharp"]
    # The ten true values left out of the candidate lists all have users, so they are false negatives.
    assert (missing["false_negatives"] >= 10).all()
    assert ((frame["total_variation"] >= 0) & (frame["total_variation"] <= 1)).all()


# -- plot -------------------------------------------------------------------------


@pytest.mark.slow  # the fast set writes the plot through the CLI (test_cli_simulate_writes_results_and_plot)
def test_plot_written(tmp_path):
    from ldp.simulations.plot import plot_results

    frame = run(mechanisms="grr,oue", epsilons="0.5,1,2", users=2000, domain_size=[8, 32], repeats=1, seed=1)
    path = plot_results(frame, tmp_path / "accuracy.png")
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- CLI ----------------------------------------------------------------------------


def test_cli_simulate_writes_results_and_plot(tmp_path):
    import matplotlib  # noqa: F401  (the test extra has it: missing, this fails)

    out = tmp_path / "results.csv"
    png = tmp_path / "accuracy.png"
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "-m",
            "grr,oue,olh",
            "-e",
            "0.5,2",
            "-n",
            "2000",
            "-d",
            "32",
            "-r",
            "2",
            "--seed",
            "7",
            "-o",
            str(out),
            "--plot",
            str(png),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Best mechanism per epsilon" in result.output
    frame = pd.read_csv(out)
    assert len(frame) == 3 * 2 * 2
    assert set(REQUIRED) <= set(frame.columns)
    assert png.stat().st_size > 1000


def test_cli_json_output_and_reproducible(tmp_path):
    runner = CliRunner()
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in paths:
        result = runner.invoke(
            cli, ["simulate", "-e", "1", "-n", "1000", "-d", "8", "-r", "1", "--seed", "3", "-o", str(path)]
        )
        assert result.exit_code == 0, result.output
    first, second = (json.loads(p.read_text()) for p in paths)
    assert [row["mse"] for row in first] == [row["mse"] for row in second]


def test_cli_default_runs():
    result = CliRunner().invoke(cli, ["simulate", "--seed", "1"])
    assert result.exit_code == 0, result.output
    for name in ("grr", "sue", "oue", "olh", "blh"):
        assert name in result.output


def test_cli_user_errors_are_one_line():
    result = CliRunner().invoke(cli, ["simulate", "-m", "grr,nope"])
    assert result.exit_code == 2
    assert "unknown mechanism 'nope'" in result.output
    assert "Traceback" not in result.output


def _error_line(result) -> str:
    """The one error line of a failed command (click's usage header, if any, aside); no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    if not result.stderr.startswith("Usage:"):
        assert result.stderr.strip() == errors[0]
    return errors[0]


@pytest.fixture
def no_sweep(monkeypatch):
    """Fail the test if a simulation starts."""
    import ldp.simulations.numeric
    import ldp.simulations.presets
    import ldp.simulations.runner

    def not_called(*args, **kwargs):
        raise AssertionError("the sweep ran before the options were checked")

    monkeypatch.setattr(ldp.simulations.runner, "run", not_called)
    monkeypatch.setattr(ldp.simulations.numeric, "run_numeric", not_called)
    monkeypatch.setattr(ldp.simulations.presets, "run_rappor_regtest", not_called)


@pytest.mark.parametrize(
    "args, needles",
    [
        (["-o", "results.xyz"], ("results.xyz", "unknown extension '.xyz'", ".csv")),
        (["-o", "missing-dir/results.csv"], ("-o", "missing-dir", "does not exist")),
        (["--plot", "accuracy.txt"], ("--plot", "unknown image extension '.txt'", ".png")),
        (["--plot", "missing-dir/accuracy.png"], ("--plot", "missing-dir", "does not exist")),
        (["--low", "0", "--high", "1", "-o", "results.xyz"], ("results.xyz", "unknown extension")),
        (["--low", "0", "--high", "1", "--plot", "missing-dir/accuracy.png"], ("--plot", "does not exist")),
        (["--preset", "rappor-regtest", "--small", "--plot", "accuracy.png"], ("--plot", "rappor-regtest")),
    ],
)
def test_cli_outputs_checked_before_the_sweep(tmp_path, monkeypatch, no_sweep, args, needles):
    import matplotlib  # noqa: F401  (the test extra has it: missing, this fails)

    monkeypatch.chdir(tmp_path)
    line = _error_line(CliRunner().invoke(cli, ["simulate", *args]))
    assert all(needle in line for needle in needles), line


@pytest.mark.parametrize(
    "epsilon, needles",
    [
        ("0", ("--epsilon must be > 0", "got 0")),
        ("1,-2", ("--epsilon must be > 0", "got -2")),
        ("1,inf", ("--epsilon must be > 0", "got inf")),
        ("1,abc", ("--epsilon", "'abc'")),
    ],
)
def test_cli_epsilon_must_be_positive(no_sweep, epsilon, needles):
    line = _error_line(CliRunner().invoke(cli, ["simulate", "-e", epsilon]))
    assert all(needle in line for needle in needles), line


def test_cli_column_without_data_is_a_usage_error(no_sweep):
    line = _error_line(CliRunner().invoke(cli, ["simulate", "--column", "country"]))
    assert "--column" in line and "--data" in line


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_cli_data_without_the_column_lists_the_columns_on_one_line(tmp_path, suffix):
    frame = pd.DataFrame({"country": ["fr", "de", "fr"], "visits": [1, 2, 3]})
    path = tmp_path / f"data{suffix}"
    {
        ".csv": lambda: frame.to_csv(path, index=False),
        ".parquet": lambda: frame.to_parquet(path),
        ".jsonl": lambda: frame.to_json(path, orient="records", lines=True),
    }[suffix]()
    line = _error_line(CliRunner().invoke(cli, ["simulate", "--data", str(path), "--column", "nope"]))
    assert f"data{suffix}" in line and "'nope'" in line and "'country', 'visits'" in line


def test_data_csv_row_with_an_extra_field_does_not_shift_the_column(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("country,other\nfr,x,extra\nde,y\nfr,z\n")
    population = from_data(path, "country")
    assert set(population.domain) == {"fr", "de"}


def test_cli_help_has_an_example():
    result = CliRunner().invoke(cli, ["simulate", "--help"])
    assert result.exit_code == 0
    assert "ldp simulate -m grr,oue,olh" in result.output


def test_cli_presets_small():
    runner = CliRunner()
    result = runner.invoke(cli, ["simulate", "--preset", "wang2017", "--small", "--seed", "1", "-e", "1"])
    assert result.exit_code == 0, result.output
    assert "D=256" in result.output
    result = runner.invoke(
        cli,
        ["simulate", "--preset", "rappor-regtest", "--small", "--cases", "unif-small-sharp", "--seed", "1"],
    )
    assert result.exit_code == 0, result.output
    assert "r-unif-small-sharp" in result.output


# -- every mechanism/distribution pairing is honoured or refused ------------------------------


class _Captured(Exception):
    """Raised by the patched sweeps: which sweep ran, on which population."""

    def __init__(self, kind, distribution):
        super().__init__(kind, distribution)
        self.kind, self.distribution = kind, distribution


@pytest.fixture
def capture_sweep(monkeypatch):
    """Replace both sweeps by a recorder of (kind, distribution) (nothing is simulated)."""
    import ldp.simulations.numeric
    import ldp.simulations.runner

    def frequency(*args, distribution=None, **kwargs):
        raise _Captured("frequency", distribution)

    def numeric(mechanisms, epsilons, users, distribution, **kwargs):
        raise _Captured("numeric", distribution)

    monkeypatch.setattr(ldp.simulations.runner, "run", frequency)
    monkeypatch.setattr(ldp.simulations.numeric, "run_numeric", numeric)


_NUMERIC_POPULATIONS = {"uniform", "gaussian", "exponential", "beta"}
_FREQUENCY_POPULATIONS = set(DISTRIBUTIONS)


@pytest.mark.parametrize(
    "distribution", [None, "zipf", "uniform", "exponential", "gaussian", "geometric", "beta"]
)
@pytest.mark.parametrize(
    "mechanism",
    [
        None,
        "auto",
        "duchi",
        "stochastic-rounding",
        "piecewise",
        "hybrid",
        "laplace",
        "gaussian",
        "grr",
        "sue",
        "oue",
        "olh",
        "blh",
        "binary-rr",
        "rappor",
    ],
)
def test_every_mechanism_distribution_pairing_is_honoured_or_refused(capture_sweep, mechanism, distribution):
    """``-m duchi --distribution zipf`` used to run beta(2, 5): now each pairing runs as asked or is an error."""
    from ldp.specs import NUMERIC_MECHANISMS

    args = (
        ["simulate"]
        + (["-m", mechanism] if mechanism else [])
        + (["--distribution", distribution] if distribution else [])
    )
    result = CliRunner().invoke(cli, args)
    numeric = mechanism in NUMERIC_MECHANISMS or (mechanism in (None, "auto") and distribution == "beta")
    kind = "numeric" if numeric else "frequency"
    expected = distribution or ("beta" if numeric else "zipf")
    allowed = _NUMERIC_POPULATIONS if numeric else _FREQUENCY_POPULATIONS
    if expected in allowed:
        assert isinstance(result.exception, _Captured), result.output
        assert (result.exception.kind, result.exception.distribution) == (kind, expected)
    else:
        line = _error_line(result)
        assert (
            f"--distribution {distribution!r} does not apply to {mechanism or 'the default mechanisms'}"
            in line
        )
        assert f"({kind} sweep" in line, line


@pytest.mark.parametrize(
    "args, needles",
    [
        (["-m", "grr,duchi"], ("mixes numeric mechanisms (duchi) with frequency oracles (grr)",)),
        (
            ["-m", "oue", "--low", "0", "--high", "1"],
            ("--low/--high apply to numeric mechanisms", "not to oue"),
        ),
        (["-m", "duchi", "-d", "64"], ("--domain-size applies to frequency sweeps only",)),
        (["-m", "piecewise", "--mode", "faithful"], ("--mode applies to frequency sweeps only",)),
        (["-m", "grr", "--grid", "16"], ("--grid applies to numeric sweeps only",)),
        (["-m", "grr", "--delta", "1e-6"], ("--delta applies to numeric sweeps only",)),
        (["--data", "x.csv", "--column", "c", "--distribution", "uniform"], ("does not apply with --data",)),
    ],
)
def test_combinations_a_sweep_would_ignore_are_refused(no_sweep, args, needles):
    line = _error_line(CliRunner().invoke(cli, ["simulate", *args]))
    assert all(needle in line for needle in needles), line


def test_refused_epsilon_stops_the_sweep_before_any_cell(monkeypatch):
    """Every spec is built first: ε above a mechanism's limit is one line, before any user is simulated."""
    import ldp.simulations.runner

    def no_cell(*args, **kwargs):
        raise AssertionError("a cell ran before every spec was validated")

    monkeypatch.setattr(ldp.simulations.runner, "_cell", no_cell)
    with pytest.raises(ldp.ParameterError, match=r"sue: epsilon=800 is above 45"):
        run(mechanisms="sue,grr", epsilons="1,800", users=100, domain_size=4, repeats=1, seed=0)
