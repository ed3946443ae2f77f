"""``ldp simulate`` for the range mechanisms: range answers' MSE against their reported variance, quantile rank error."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.simulations.range_sweep import RANGE_COLUMNS, is_range, range_sweep, run_ranges
from ldp.simulations.sweep import RANGE, sweep_kind

#: Significance level of the statistical checks below (two-sided normal quantile Z).
ALPHA = 0.001
Z = 3.2905267314919255


def test_range_mechanisms_select_the_range_sweep():
    assert is_range("range-hierarchy") and is_range("range-haar")
    assert not is_range("oue") and not is_range("nope")
    assert sweep_kind("range-hierarchy,range-haar", None) == RANGE
    assert sweep_kind("range-haar", "zipf") == RANGE
    with pytest.raises(ldp.ParameterError, match="mixes range mechanisms"):
        sweep_kind("range-haar,oue", None)
    with pytest.raises(ldp.ParameterError, match="does not apply to range mechanisms"):
        sweep_kind("range-haar", "beta")
    with pytest.raises(ldp.ParameterError, match="do not apply to range mechanisms"):
        sweep_kind("range-haar", None, numeric_range=True)


def test_run_ranges_has_one_row_per_cell_and_is_reproducible():
    frame = run_ranges(None, (1.0, 2.0), users=5_000, domain_size=32, repeats=2, seed=4)
    assert list(frame.columns) == list(RANGE_COLUMNS)
    assert len(frame) == 2 * 2 * 2
    assert set(frame["mechanism"]) == {"range-hierarchy", "range-haar"}
    assert frame[["mse", "theory_mse", "exact_mse", "covered"]].notna().all().all()
    ranks = frame[["rank_error_p50", "rank_error_p90", "rank_error_p99"]].to_numpy()
    assert ((ranks >= 0) & (ranks <= 1)).all()
    again = run_ranges(None, (1.0, 2.0), users=5_000, domain_size=32, repeats=2, seed=4)
    assert frame.equals(again)
    # A cell's numbers do not depend on the rest of the grid.
    alone = run_ranges(["range-haar"], (2.0,), users=5_000, domain_size=32, repeats=2, seed=4)
    both = frame[(frame["mechanism"] == "range-haar") & (frame["epsilon"] == 2.0)].reset_index(drop=True)
    assert alone.equals(both)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["range-hierarchy", "range-haar"])
def test_measured_range_mse_matches_the_reported_variance(mechanism):
    """Mean over 40 independent collections of MSE / reported variance is 1 within Z·SE (α = 0.001).

    The ranges of one collection share its noise, so the repeats (not the
    ranges) are the independent units; the SE is that of the mean of the 40
    per-collection ratios.
    """
    frame = run_ranges([mechanism], (1.0,), users=50_000, domain_size=64, repeats=40, seed=11)
    ratios = frame["mse_ratio"].to_numpy()
    se = ratios.std(ddof=1) / np.sqrt(ratios.size)
    assert abs(ratios.mean() - 1.0) <= Z * se, (ratios.mean(), se)
    # The reported (plug-in) variance is close to the exact one at this n.
    assert np.allclose(frame["theory_mse"], frame["exact_mse"], rtol=0.05)
    coverage = frame["covered"].to_numpy()
    assert abs(coverage.mean() - 0.95) <= Z * coverage.std(ddof=1) / np.sqrt(coverage.size) + 0.005


def test_quantile_rank_error_is_small_with_many_users():
    frame = run_ranges(None, (1.0,), users=1_000_000, domain_size=256, repeats=1, seed=2)
    assert (frame[["rank_error_p50", "rank_error_p90", "rank_error_p99"]] <= 0.01).all().all()


def test_range_sweep_refuses_bad_input_in_one_line():
    with pytest.raises(ldp.ParameterError, match="one --users"):
        range_sweep("range-haar", "1", "100,200", None, None)
    with pytest.raises(ldp.ParameterError, match="epsilons"):
        range_sweep("range-haar", "-1", "100", None, None)
    with pytest.raises(ldp.ParameterError, match="not a range mechanism"):
        run_ranges(["oue"], (1.0,), users=100, domain_size=8, repeats=1, seed=0)


def test_cli_simulates_range_mechanisms(tmp_path):
    runner = CliRunner()
    out = tmp_path / "ranges.csv"
    args = ["simulate", "-m", "range-hierarchy,range-haar", "-e", "1", "-n", "10000", "-d", "32", "-r", "1"]
    result = runner.invoke(cli, [*args, "--seed", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "range MSE" in result.output and "rank p99" in result.output
    assert out.exists()
    for extra in (["--plot", str(tmp_path / "p.png")], ["--mode", "faithful"], ["-m", "range-haar,grr"]):
        bad = runner.invoke(cli, ["simulate", "-m", "range-haar", "-e", "1", "-n", "1000", "-r", "1", *extra])
        assert bad.exit_code != 0 and "Traceback" not in bad.output
        assert len(bad.output.strip().splitlines()) == 1, bad.output
