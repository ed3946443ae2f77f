"""Consistent views of frequency estimates: Norm-Sub by default, EM over the channel, bootstrap intervals.

Statistical tests are seeded; each states its significance level α and
derives its tolerance as z·SE.
"""

from __future__ import annotations

import json
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.cli import aggregate
from ldp.aggregator.consistency import norm_sub
from ldp.aggregator.em import em_frequencies, em_update
from ldp.aggregator.views import (
    add_post_processed_views,
    bootstrap_interval,
    check_channel,
    default_consistency,
    integer_counts,
)
from ldp.errors import ParameterError
from ldp.frequency_math import frequency_variance, unbiased_frequency
from ldp.simulations.fast import frequency_support_counts
from ldp.specs.hadamard import HR

DOMAIN = tuple(f"v{i}" for i in range(16))
ORACLES = (ldp.GRR, ldp.OUE, ldp.OLH)


def _zipf_counts(k: int, n: int, rng: np.random.Generator, s: float = 1.1) -> np.ndarray:
    weights = 1.0 / np.arange(1, k + 1) ** s
    return rng.multinomial(n, weights / weights.sum())


def _accumulator(spec, true_counts, rng):
    return type(make_aggregator(spec)).from_counts(
        spec, frequency_support_counts(spec, true_counts, rng), int(true_counts.sum())
    )


@pytest.mark.parametrize("cls", ORACLES)
def test_norm_sub_view_is_non_negative_and_sums_to_n(cls):
    spec = cls(domain=DOMAIN, epsilon=0.5)
    rng = np.random.default_rng(3)
    for n in (50, 2_000):  # few reports: many negative unbiased estimates
        acc = _accumulator(spec, _zipf_counts(len(DOMAIN), n, rng), rng)
        table = acc.estimate(consistency=default_consistency(spec))
        assert table.attrs["consistency"] == "norm-sub"
        assert (table["consistent"] >= 0).all()
        assert table["consistent"].sum() == pytest.approx(n, rel=1e-12)
        assert table["estimate"].min() < 0 or n > 50  # the unbiased view is kept as it is
        np.testing.assert_array_equal(table["estimate"], acc.estimate()["estimate"])


def test_norm_sub_is_the_projection_on_random_vectors():
    rng = np.random.default_rng(4)
    for _ in range(200):
        f_hat = rng.normal(0.05, 0.2, size=int(rng.integers(1, 60)))
        f = norm_sub(f_hat)
        assert f.min() >= 0 and f.sum() == pytest.approx(1.0, abs=1e-12)
        # KKT: f = max(f̂ + δ, 0) with one δ for every positive entry
        delta = f[f > 0] - f_hat[f > 0]
        assert np.ptp(delta) < 1e-12


@pytest.mark.parametrize("cls", ORACLES)
def test_em_converges_to_a_fixed_point_of_its_update(cls):
    spec = cls(domain=DOMAIN, epsilon=1.0)
    rng = np.random.default_rng(5)
    n = 20_000
    counts = frequency_support_counts(spec, _zipf_counts(len(DOMAIN), n, rng), rng)
    result = em_frequencies(counts, n, spec.p_star, spec.q_star)
    assert result.converged
    assert result.frequencies.min() >= 0 and result.frequencies.sum() == pytest.approx(1.0)
    d = len(DOMAIN)
    p, q = np.full(d, float(spec.p_star)), np.full(d, float(spec.q_star))
    column_sums = p + q.sum() - q
    theta = column_sums * result.frequencies
    theta /= theta.sum()
    assert np.max(np.abs(em_update(theta, counts / counts.sum(), p, q) - theta)) < 1e-8


@pytest.mark.parametrize("cls", ORACLES)
def test_em_recovers_f_from_expected_counts(cls):
    """The truth is EM's fixed point when the support counts are their expectation n·(q* + (p* − q*)f)."""
    spec = cls(domain=DOMAIN, epsilon=0.5)
    f = np.arange(1, len(DOMAIN) + 1, dtype=float)[::-1] ** 2
    f /= f.sum()
    n = 10_000
    expected = n * (float(spec.q_star) + float(spec.p_star - spec.q_star) * f)
    result = em_frequencies(
        expected, n, spec.p_star, spec.q_star, tol=1e-13, likelihood_tol=0, max_iter=200_000
    )
    # to 0.1 user in n = 10⁴: the likelihood is so flat at ε = 0.5 that its double-precision value
    # stops rising within ~2e-6 of the optimum
    np.testing.assert_allclose(result.frequencies, f, atol=1e-5)


def test_em_does_not_get_stuck_at_a_zero_of_its_extrapolation():
    """Regression: an accelerated step that set a value to 0 froze it there (EM cannot revive a 0)."""
    spec = ldp.GRR(domain=("a", "b", "c", "d"), epsilon=1.0)
    result = em_frequencies([4000, 2500, 2000, 1500], 10_000, spec.p_star, spec.q_star, tol=1e-13)
    # the MLE (the plain EM limit): f̂ = (0.749, 0.250, 0.084, −0.083) projected by the likelihood
    np.testing.assert_allclose(result.frequencies, [0.710226, 0.225650, 0.064124, 0.0], atol=1e-6)


def test_grr_em_is_the_mle_so_equals_the_unbiased_estimate_inside_the_simplex():
    """For GRR the support counts are the report histogram; with every f̂_v > 0 the MLE is f̂."""
    spec = ldp.GRR(domain=("a", "b", "c", "d"), epsilon=1.0)
    counts = np.array([4000, 2500, 2000, 2200])
    n = int(counts.sum())
    f_hat = unbiased_frequency(counts, n, spec.p_star, spec.q_star)
    assert f_hat.min() > 0
    result = em_frequencies(counts, n, spec.p_star, spec.q_star, tol=1e-13, likelihood_tol=0)
    np.testing.assert_allclose(result.frequencies, f_hat, atol=1e-8)


def test_em_and_bootstrap_are_refused_without_a_channel():
    hr = HR(domain=DOMAIN, epsilon=1.0)
    with pytest.raises(ParameterError, match="--estimator em needs the channel of a pure frequency oracle"):
        check_channel(hr, estimator="em", resamples=0)
    with pytest.raises(ParameterError, match="bootstrap intervals need"):
        check_channel(hr, estimator="norm-sub", resamples=100)
    with pytest.raises(ParameterError, match="at least 20 resamples"):
        bootstrap_interval(ldp.GRR(domain=DOMAIN, epsilon=1.0), np.ones(16, dtype=int), 16, resamples=5)


def test_integer_counts_round_to_n():
    counts = integer_counts([0.333, 0.333, 0.334], 10)
    assert counts.sum() == 10 and counts.min() >= 3


def test_views_keep_the_unbiased_columns_and_record_the_bootstrap():
    spec = ldp.OUE(domain=DOMAIN, epsilon=1.0)
    rng = np.random.default_rng(6)
    acc = _accumulator(spec, _zipf_counts(len(DOMAIN), 5_000, rng), rng)
    plain = acc.estimate()
    table = add_post_processed_views(acc.estimate(), acc, estimator="em", resamples=20, seed=9)
    assert list(table.columns[:4]) == ["value", "consistent", "consistent_ci_low", "consistent_ci_high"]
    for column in plain.columns:
        np.testing.assert_array_equal(table[column], plain[column])
    expected = {"consistency": "em", "bootstrap_resamples": 20, "bootstrap_seed": 9}
    assert {key: table.attrs[key] for key in expected} == expected
    assert (table["consistent_ci_low"] <= table["consistent"] + 1e-9).all()
    again = add_post_processed_views(acc.estimate(), acc, estimator="em", resamples=20, seed=9)
    pd.testing.assert_frame_equal(table, again)  # seeded: reproducible


def _bootstrap_coverage(
    cls, repetitions: int, resamples: int, seed: int, k: int = 16, n: int = 20_000
) -> np.ndarray:
    """Per repetition, the share of values with f ≥ 3 SE whose 95 % interval covers the true count."""
    spec = cls(domain=range(k), epsilon=1.0)
    rng = np.random.default_rng(seed)
    truth = _zipf_counts(k, n, rng)
    se = n * np.sqrt(frequency_variance(truth / n, n, spec.p_star, spec.q_star))
    large = truth >= 3 * se
    shares = []
    for rep in range(repetitions):
        counts = frequency_support_counts(spec, truth, rng)
        interval = bootstrap_interval(spec, counts, n, resamples=resamples, seed=seed * 1000 + rep)
        covered = (interval.low <= truth) & (truth <= interval.high)
        shares.append(covered[large].mean())
    return np.array(shares)


@pytest.mark.slow
def test_bootstrap_intervals_of_norm_sub_cover_95_percent():
    """Coverage of the 95 % basic parametric bootstrap (B = 400) over GRR, OUE, OLH; α = 0.001.

    The repetitions are independent, the values within one are not: the SE
    of the mean coverage is the spread of the per-repetition shares / √R.
    """
    shares = np.concatenate([_bootstrap_coverage(cls, 40, 400, seed) for seed, cls in enumerate(ORACLES, 1)])
    z = NormalDist().inv_cdf(1 - 0.001 / 2)
    se = shares.std(ddof=1) / np.sqrt(shares.size)
    assert abs(shares.mean() - 0.95) <= z * se + 0.005, (shares.mean(), se)  # + Monte Carlo error of B


@pytest.mark.slow
def test_bootstrap_coverage_at_a_large_domain():
    """OUE, d = 1,024, n = 10⁵, ε = 1 (7 values with f ≥ 3 SE): 95 % coverage; α = 0.001.

    Norm-Sub shifts every kept value down by about one SE here, so the fitted
    values of the smaller large ones sit near 0 in the bootstrap world; a
    bootstrap of the value after its cut at 0 covered 88 % (72 % for the two
    smallest), the bootstrap of f̂ + δ covers 95 % within noise.
    """
    shares = _bootstrap_coverage(ldp.OUE, 80, 200, seed=27, k=1024, n=100_000)
    z = NormalDist().inv_cdf(1 - 0.001 / 2)
    se = shares.std(ddof=1) / np.sqrt(shares.size)
    assert abs(shares.mean() - 0.95) <= z * se + 0.005, (shares.mean(), se)  # + Monte Carlo error of B


def test_bootstrap_coverage_fast_representative():
    """One mechanism, fewer draws; α = 0.001 as above."""
    shares = _bootstrap_coverage(ldp.OUE, 25, 200, seed=7)
    z = NormalDist().inv_cdf(1 - 0.001 / 2)
    se = max(shares.std(ddof=1), 0.05) / np.sqrt(shares.size)
    assert abs(shares.mean() - 0.95) <= z * se + 0.01, (shares.mean(), se)


# -- the command line and the collector ---------------------------------------------------------------


def _aggregate(tmp_path, spec, *options):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    rng = np.random.default_rng(8)
    from ldp.aggregator.writers import write_reports
    from ldp.client import encode_batch

    weights = np.linspace(2, 1, len(spec.domain))
    values = rng.choice(len(spec.domain), size=2_000, p=weights / weights.sum())
    write_reports(encode_batch(spec, values, rng, indices=True), tmp_path / "r.jsonl", spec)
    arguments = ["--spec", str(spec_path), str(tmp_path / "r.jsonl"), *options]
    return CliRunner().invoke(aggregate, arguments, catch_exceptions=False)


def test_cli_table_shows_the_consistent_view_by_default_and_says_so(tmp_path):
    spec = ldp.GRR(domain=tuple("abcdefghij"[:20]), epsilon=1.0)
    result = _aggregate(tmp_path, spec)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split()[:3] == ["value", "consistent", "estimate"]
    assert "consistent: Norm-Sub (projection onto the simplex), non-negative, summing to n" in result.stderr
    none = _aggregate(tmp_path, spec, "--consistency", "none")
    assert "consistent" not in none.stdout and "consistent:" not in none.stderr


def test_cli_estimator_em_with_bootstrap_writes_both_views(tmp_path):
    spec = ldp.OLH(domain=tuple("abcdefgh"), epsilon=1.0)
    out = tmp_path / "est.json"
    result = _aggregate(
        tmp_path, spec, "--estimator", "em", "--bootstrap", "50", "--seed", "1", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert {
        "consistent",
        "consistent_ci_low",
        "consistent_ci_high",
        "estimate",
        "std_error",
        "ci_low",
    } <= set(rows[0])
    assert sum(r["consistent"] for r in rows) == pytest.approx(2_000)


def test_cli_estimator_em_is_refused_in_one_line_without_a_channel(tmp_path):
    spec = HR(domain=tuple("abcd"), epsilon=1.0)
    result = _aggregate(tmp_path, spec, "--estimator", "em")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "Error: --estimator em needs the channel of a pure frequency oracle (support counts with exact p*, q*); "
        "hr does not give one"
    ]


def test_default_consistency_is_none_where_no_view_applies():
    assert default_consistency(ldp.GRR(domain=("a", "b"), epsilon=1.0)) == "norm-sub"
    assert default_consistency(ldp.Duchi(epsilon=1.0)) == "none"
