"""``ldp simulate`` for key-value mechanisms: frequency and mean MSE per key against the reported variances."""

from __future__ import annotations

import numpy as np
import pytest

from ldp.simulations.key_value import format_key_value_report, run_key_value

#: Significance level of the statistical check below (two-sided normal quantile Z).
ALPHA = 0.001
Z = 3.2905267314919255


def test_key_value_results_report_the_mean_variance():
    results = run_key_value(["pckv-ue"], (2.0,), 5000, 10, "uniform", repeats=1, seed=5)
    for column in ("raw_mean_mse", "theory_mean_mse", "mean_mse", "freq_covered", "mean_covered"):
        assert column in results.columns and results[column].notna().all()
    assert "raw" in format_key_value_report(results)


@pytest.mark.parametrize("mechanism", ["pckv-ue", "pckv-grr"])
def test_mean_mse_matches_the_reported_variance_for_frequent_keys(mechanism):
    """Few frequent keys (every frequency many SEs above 0): raw mean MSE / reported variance is 1 within Z·SE.

    α = 0.001; the 30 repeats are independent and the SE is that of the mean of their ratios.
    """
    results = run_key_value([mechanism], (4.0,), 4000, 4, "uniform", repeats=30, seed=9)
    ratios = (results["raw_mean_mse"] / results["theory_mean_mse"]).to_numpy()
    se = ratios.std(ddof=1) / np.sqrt(ratios.size)
    assert abs(ratios.mean() - 1.0) <= Z * se, (ratios.mean(), se)
    freq = (results["freq_mse"] / results["theory_freq_mse"]).to_numpy()
    assert abs(freq.mean() - 1.0) <= Z * freq.std(ddof=1) / np.sqrt(freq.size), freq.mean()
