"""RAPPOR decoding (docs/mechanisms.md#rappor-decoding): bit counts, design, detection, false positives, determinism.

Counts are drawn from their exact distribution for one report per client:
with T_ij clients of cohort j whose Bloom bit i is 1, the reported ones are
Binomial(T_ij, q*) + Binomial(N_j − T_ij, p*) (PRR and IRR act on each bit
independently). One end-to-end test goes through ``ldp.client.encode_batch``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from rappor_counts import draw_counts

import ldp
from ldp.aggregator.accumulators import RapporAccumulator
from ldp.aggregator.rappor.decode import (
    DECODE_COLUMNS,
    adjust_p_values,
    decode,
    decode_result,
    design_matrix,
    detection_frequency,
    unbiased_bit_counts,
)
from ldp.errors import ParameterError

SPEC = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=32, f="1/4", p="1/4", q="3/4")
TRUE = [f"true-{i}" for i in range(5)]
BOGUS = [f"bogus-{i}" for i in range(20)]


def test_bit_counts_match_formula():
    spec = ldp.Rappor(num_bits=4, num_hashes=2, num_cohorts=2, f="1/2", p="1/2", q="3/4")
    # docs/mechanisms.md#rappor-epsilon example: q* = 0.6875, p* = 0.5625
    n = np.array([1000, 0])
    c = np.array([[700, 562, 600, 650], [0, 0, 0, 0]])
    t, var = unbiased_bit_counts(spec, n, c)
    expected = (c[0] - 0.5625 * 1000) / 0.125
    np.testing.assert_allclose(t[0], expected)
    r = 0.5625 + 0.125 * np.clip(expected / 1000, 0, 1)
    np.testing.assert_allclose(var[0], 1000 * r * (1 - r) / 0.125**2)
    assert np.all(t[1] == 0) and np.all(var[1] == 0)


def test_bit_counts_unbiased_with_formula_variance():
    # alpha = 1e-6 per check (z = 4.89). t is unbiased for T given T; its variance
    # around N·π when each of the N reports has B = 1 with probability π (the
    # i.i.d. convention of docs/mechanisms.md#variance, which is what N·r(1−r)/(q*−p*)² is).
    rng = np.random.default_rng(11)
    p_star, q_star = float(SPEC.prob_one_given_zero), float(SPEC.prob_one_given_one)
    n, share, reps = 5000, 0.24, 4000
    ones = rng.binomial(n, share, reps)
    c = rng.binomial(ones, q_star) + rng.binomial(n - ones, p_star)
    t = (c - p_star * n) / (q_star - p_star)
    r = p_star + (q_star - p_star) * share
    var = n * r * (1 - r) / (q_star - p_star) ** 2
    z = scipy.stats.norm.isf(1e-6 / 2)
    assert abs((t - ones).mean()) <= z * math.sqrt(var / reps)
    # sample variance of a (near) normal sample: SE ≈ var·√(2/(reps−1))
    assert abs(t.var(ddof=1) - var) <= z * var * math.sqrt(2 / (reps - 1))


def test_design_matrix_matches_bit_positions():
    values = ["a", "b", "ccc"]
    x = design_matrix(SPEC, values).toarray()
    k = SPEC.num_bits
    for s, value in enumerate(values):
        for j in range(SPEC.num_cohorts):
            expected = np.zeros(k)
            expected[list(set(SPEC.bit_positions(value, j)))] = 1
            np.testing.assert_array_equal(x[j * k : (j + 1) * k, s], expected)


def _population(rng, n=100_000):
    shares = np.array([0.3, 0.25, 0.2, 0.15, 0.1])
    partition = rng.multinomial(n, shares)
    cc, bc = draw_counts(SPEC, TRUE, partition, rng)
    return partition, cc, bc


def test_detects_all_true_values_above_detection_frequency_and_estimates_within_se():
    rng = np.random.default_rng(2024)
    partition, cc, bc = _population(rng)
    n = int(partition.sum())
    candidates = TRUE + BOGUS
    # detected with probability 1 − 1e-6 each above this frequency (Bonferroni α = 0.05 over 25)
    threshold = detection_frequency(SPEC, n, len(candidates), alpha=0.05, power=1 - 1e-6)
    assert (partition / n).min() > threshold  # the population is above it
    table = decode(SPEC, cc, bc, candidates)
    assert list(table.columns) == list(DECODE_COLUMNS)
    true_rows = table.iloc[: len(TRUE)]
    assert true_rows["detected"].all()
    # estimates within z·SE of the truth, alpha = 1e-6 overall (Bonferroni over 5 values)
    z = scipy.stats.norm.isf(1e-6 / (2 * len(TRUE)))
    err = np.abs(true_rows["estimate"].to_numpy() - partition)
    assert np.all(err <= z * true_rows["std_error"].to_numpy())
    assert np.allclose(table["proportion"], table["estimate"] / n)
    # The default 95% interval is estimate ± z_0.975·std_error (deterministic; rtol covers rounding only).
    half = scipy.stats.norm.isf(0.025) * table["std_error"].to_numpy()
    np.testing.assert_allclose(table["ci_high"] - table["estimate"], half, rtol=1e-12)
    np.testing.assert_allclose(table["estimate"] - table["ci_low"], half, rtol=1e-12)
    # Coverage of the truth: at confidence 1 − 1e-6/25 each, all 25 intervals hold the true count
    # (the 5 true counts, and 0 for the 20 never-reported candidates); alpha = 1e-6 family-wise, Bonferroni.
    wide = decode(SPEC, cc, bc, candidates, confidence=1 - 1e-6 / len(candidates))
    truth = np.concatenate([partition, np.zeros(len(BOGUS))])
    assert np.all((wide["ci_low"].to_numpy() <= truth) & (truth <= wide["ci_high"].to_numpy()))
    pd.testing.assert_frame_equal(
        wide.drop(columns=["ci_low", "ci_high"]), table.drop(columns=["ci_low", "ci_high"])
    )
    summary = table.attrs
    assert summary["num_reports"] == n
    assert summary["allocated_mass"] == pytest.approx(
        true_rows["proportion"].sum() + table.iloc[5:]["proportion"][table.iloc[5:]["detected"]].sum()
    )
    assert (
        abs(summary["unexplained_mass"]) <= z * summary["unexplained_mass_se"]
        or summary["unexplained_mass"] == 0
    )


@pytest.mark.slow
def test_false_positive_rate_at_most_nominal_on_never_reported_candidates():
    # Per-candidate level 0.05 without correction, and the family-wise rate with
    # Bonferroni, over 150 seeded populations; the check allows z = 4.75 binomial
    # standard errors (alpha = 1e-6) above the nominal level.
    rng = np.random.default_rng(7)
    reps, alpha = 150, 0.05
    fp_none = 0
    any_bonferroni = 0
    bh_false = 0
    for _ in range(reps):
        _, cc, bc = _population(rng, n=50_000)
        for correction in ("none", "bonferroni", "bh"):
            table = decode(SPEC, cc, bc, TRUE + BOGUS, correction=correction, alpha=alpha)
            false = int(table["detected"].iloc[len(TRUE) :].sum())
            if correction == "none":
                fp_none += false
            elif correction == "bonferroni":
                any_bonferroni += false > 0
            else:
                bh_false += false
    z = scipy.stats.norm.isf(1e-6)
    trials = reps * len(BOGUS)
    assert fp_none / trials <= alpha + z * math.sqrt(alpha * (1 - alpha) / trials)
    assert any_bonferroni / reps <= alpha + z * math.sqrt(alpha * (1 - alpha) / reps)
    assert bh_false / trials <= alpha + z * math.sqrt(alpha * (1 - alpha) / trials)


def test_deterministic():
    rng = np.random.default_rng(5)
    _, cc, bc = _population(rng)
    first = decode(SPEC, cc, bc, TRUE + BOGUS)
    second = decode(SPEC, cc.copy(), bc.copy(), list(TRUE + BOGUS))
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    assert first.attrs == second.attrs
    # order of the candidate list does not change the answer (up to rounding: the column order changes
    # the Cholesky/NNLS arithmetic only, so rtol 1e-7 on counts of ~10^4 is round-off, not statistics)
    shuffled = list(reversed(TRUE + BOGUS))
    third = decode(SPEC, cc, bc, shuffled).set_index("value").loc[TRUE + BOGUS]
    np.testing.assert_allclose(third["estimate"], first["estimate"], rtol=1e-7, atol=1e-6)
    np.testing.assert_array_equal(third["detected"], first["detected"])


def test_zero_estimates_get_score_p_values_at_least_half():
    rng = np.random.default_rng(9)
    _, cc, bc = _population(rng)
    table = decode(SPEC, cc, bc, TRUE + BOGUS)
    zero = table["estimate"] == 0
    assert zero.any()
    assert (table.loc[zero, "p_value"] >= 0.5 - 1e-9).all()
    assert (table.loc[zero, "std_error"] > 0).all()
    assert not table.loc[zero, "detected"].any()


def test_lasso_screening_with_many_candidates():
    # 303 candidates > 0.8 × 128 informative bits, so the LASSO screens (deterministic). Over R seeded
    # populations: the decision rule is exactly Bonferroni's (deterministic given the p-values); the
    # three true values (shares 0.22 to 0.44, each > 50 standard errors) are always detected; and the
    # family-wise error among the 300 never-reported candidates is at most 0.05 per population
    # (Bonferroni), so the number of populations with any false detection is stochastically at most
    # Binomial(R, 0.05): it must not exceed binom.isf(1e-6, R, 0.05) (alpha = 1e-6).
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=8, f="1/4", p="1/4", q="3/4")
    rng = np.random.default_rng(3)
    values = ["x", "y", "z"]
    partition = np.array([40_000, 30_000, 20_000])
    candidates = values + [f"other-{i}" for i in range(300)]
    reps, level, alpha = 100, 0.05, 1e-6
    rows = spec.num_cohorts * spec.num_bits
    with_false = 0
    for _ in range(reps):
        cc, bc = draw_counts(spec, values, partition, rng)
        result = decode_result(spec, cc, bc, candidates, alpha=level, correction="bonferroni")
        assert result.screened
        table = result.table
        p, estimate = table["p_value"].to_numpy(), table["estimate"].to_numpy()
        np.testing.assert_array_equal(
            table["detected"], (np.minimum(1, p * len(candidates)) < level) & (estimate > 0)
        )
        # a candidate the LASSO drops gets estimate 0, so the detected true values were selected; the
        # refit (selected + background) stays below the rows, so the unconstrained Wald tests apply
        assert len(values) <= result.num_selected and result.num_selected + 1 < rows
        assert table["detected"].iloc[:3].all()
        with_false += bool(table["detected"].iloc[3:].any())
    assert with_false <= scipy.stats.binom.isf(alpha, reps, level)


def test_missing_value_mass_goes_to_background_not_candidates():
    rng = np.random.default_rng(21)
    values = [*TRUE, "missing"]
    partition = rng.multinomial(100_000, [0.2, 0.2, 0.15, 0.15, 0.1, 0.2])
    cc, bc = draw_counts(SPEC, values, partition, rng)
    result = decode_result(SPEC, cc, bc, TRUE + BOGUS)
    # alpha = 1e-6: the background estimate of the missing 20% is within z·SE
    z = scipy.stats.norm.isf(1e-6 / 2)
    truth = partition[-1] / partition.sum()
    assert abs(result.unexplained_mass - truth) <= z * result.unexplained_mass_se
    assert result.residual.shape == (SPEC.num_cohorts, SPEC.num_bits)


def test_basic_and_boolean_decode_directly():
    rng = np.random.default_rng(4)
    basic = ldp.Rappor.basic(("a", "b", "c"), f="1/4", p="1/4", q="3/4", num_cohorts=2)
    n_values = np.array([5000, 3000, 0])
    cohort_counts = np.array([4000, 4000])
    p_star, q_star = float(basic.prob_one_given_zero), float(basic.prob_one_given_one)
    # cohort 0 holds 2500 a + 1500 b, cohort 1 the rest
    ones = np.array([[2500, 1500, 0], [2500, 1500, 0]])
    bits = rng.binomial(ones, q_star) + rng.binomial(cohort_counts[:, None] - ones, p_star)
    table = decode(basic, cohort_counts, bits)
    z = scipy.stats.norm.isf(1e-6 / 6)  # alpha = 1e-6 over 3 values
    assert np.all(np.abs(table["estimate"] - n_values) <= z * table["std_error"])
    boolean = ldp.Rappor.boolean(f="1/4", p="1/4", q="3/4")
    bits = rng.binomial(3000, q_star) + rng.binomial(5000, p_star)
    table = decode(boolean, np.array([8000]), np.array([[bits]]))
    assert list(table["value"]) == [False, True]  # the order of RapporAccumulator.estimate
    assert abs(table["estimate"].iloc[1] - 3000) <= z * table["std_error"].iloc[1]
    assert table["estimate"].sum() == pytest.approx(8000)
    # the accumulator on the same counts gives the same table: estimates and fixed-data SEs
    direct = RapporAccumulator.from_counts(boolean, np.array([8000]), np.array([[bits]])).estimate()
    assert list(direct["value"]) == [False, True]
    for column in ("estimate", "std_error", "ci_low", "ci_high", "proportion"):
        np.testing.assert_allclose(direct[column], table[column], rtol=1e-12)


@pytest.mark.parametrize("truth", [(5000, 3000, 0), (0, 0, 8000), (8000, 0, 0)])
def test_basic_decode_has_the_frequency_oracle_fixed_data_standard_error(truth):
    """decode() of basic RAPPOR equals RapporAccumulator.estimate, and its SE is docs/mechanisms.md#variance at the plug-in frequency."""
    rng = np.random.default_rng(sum(truth))
    spec = ldp.Rappor.basic(("a", "b", "c"), f="1/4", p="1/4", q="3/4", num_cohorts=2)
    one, zero = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
    ones = np.array([[t // 2 for t in truth], [t - t // 2 for t in truth]])
    cohort_counts = np.array([4000, 4000])
    bits = rng.binomial(ones, one) + rng.binomial(cohort_counts[:, None] - ones, zero)
    table = decode(spec, cohort_counts, bits)
    direct = RapporAccumulator.from_counts(spec, cohort_counts, bits).estimate()
    for column in ("estimate", "std_error", "ci_low", "ci_high", "proportion"):
        np.testing.assert_allclose(table[column], direct[column], rtol=1e-12)
    n = 8000
    f = np.clip(table["estimate"].to_numpy() / n, 0, 1)
    expected = np.sqrt(n * (f * one * (1 - one) + (1 - f) * zero * (1 - zero))) / (one - zero)
    np.testing.assert_allclose(table["std_error"], expected, rtol=1e-12)


def test_end_to_end_through_client():
    from ldp.client import encode_batch

    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=8, f="1/4", p="1/4", q="3/4")
    rng = np.random.default_rng(12)
    values = ["red"] * 12_000 + ["green"] * 8_000 + ["blue"] * 5_000
    batch = encode_batch(spec, values, rng)
    bits = np.unpackbits(batch.bits, axis=1, count=spec.num_bits).astype(np.int64)
    cohort_counts = np.bincount(batch.cohorts, minlength=spec.num_cohorts)
    bit_counts = np.stack(
        [
            np.bincount(batch.cohorts, weights=bits[:, i], minlength=spec.num_cohorts)
            for i in range(spec.num_bits)
        ],
        axis=1,
    ).astype(np.int64)
    table = decode(spec, cohort_counts, bit_counts, ["red", "green", "blue", "cyan", "pink"])
    assert table["detected"].iloc[:3].all()
    z = scipy.stats.norm.isf(1e-6 / 6)  # alpha = 1e-6 over 3 values
    truth = np.array([12_000, 8_000, 5_000])
    assert np.all(np.abs(table["estimate"].iloc[:3] - truth) <= z * table["std_error"].iloc[:3])


def test_adjust_p_values():
    p = np.array([0.01, 0.02, 0.03, 0.5])
    np.testing.assert_allclose(adjust_p_values(p, "bonferroni"), [0.04, 0.08, 0.12, 1.0])
    np.testing.assert_allclose(adjust_p_values(p, "bh"), [0.04, 0.04, 0.04, 0.5])
    with pytest.raises(ParameterError):
        adjust_p_values(p, "holm")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cohort_counts": np.zeros(3)},
        {"bit_counts": np.zeros((32, 31))},
        {"bit_counts": np.full((32, 32), 10)},  # more ones than reports
        {"bit_counts": -np.ones((32, 32))},
        {"candidates": None},
        {"correction": "holm"},
        {"alpha": 1.5},
        {"confidence": 0},
    ],
)
def test_bad_input_raises_parameter_error(kwargs):
    args = {"cohort_counts": np.full(32, 5), "bit_counts": np.zeros((32, 32)), "candidates": ["a"]}
    options = {key: kwargs.pop(key) for key in ("correction", "alpha", "confidence") if key in kwargs}
    args.update(kwargs)
    with pytest.raises(ParameterError):
        decode(SPEC, args["cohort_counts"], args["bit_counts"], args["candidates"], **options)


def test_singular_refit_design_falls_back_to_positive_set_and_is_deterministic():
    # 4 bits, 1 cohort: at most 10 distinct Bloom patterns, and more columns
    # than rows, so the unconstrained WLS tests are undefined; the decoder
    # tests on the NNLS positive set instead.
    spec = ldp.Rappor(num_bits=4, num_hashes=2, num_cohorts=1, f="1/4", p="1/4", q="3/4")
    rng = np.random.default_rng(31)
    values = ["a", "b"]
    cc, bc = draw_counts(spec, values, np.array([30_000, 10_000]), rng)
    candidates = values + [f"c{i}" for i in range(6)]
    first = decode(spec, cc, bc, candidates, screen=False)
    second = decode(spec, cc.copy(), bc.copy(), list(candidates), screen=False)
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    assert np.all(np.isfinite(first["p_value"])) and np.all((first["p_value"] >= 0) & (first["p_value"] <= 1))
    zero = first["estimate"] == 0
    assert (first.loc[zero, "p_value"] >= 0.5 - 1e-9).all()


def _dispersion_adjusted_level(level: float, dof: int) -> float:
    """P[z > z_{1−level}·√φ] for z ~ N(0, 1) independent of φ = max(1, χ²_dof/dof).

    The decoder divides the Wald z by √φ, the residual dispersion of the
    unconstrained WLS fit (module docstring, step 5); under normal errors the
    residual χ² is independent of the coefficient estimates. So at an exact
    model the rejection rate of a never-reported candidate is this, slightly
    below ``level``.
    """
    import scipy.integrate

    z = scipy.stats.norm.isf(level)
    chi2 = scipy.stats.chi2(dof)
    inside = chi2.cdf(dof) * level  # φ = 1: the nominal level
    tail, _ = scipy.integrate.quad(
        lambda u: scipy.stats.norm.sf(z * math.sqrt(u / dof)) * chi2.pdf(u), dof, np.inf
    )
    return inside + tail


@pytest.mark.slow
def test_never_reported_candidates_have_calibrated_p_values():
    # The unconstrained Wald z of a never-reported candidate is N(0, 1), so at
    # level 0.10 (no correction) its rejection probability is at most 0.10 and,
    # after the dispersion factor φ = max(1, χ²/dof) (dof = 32·32 rows − 26
    # columns), exactly _dispersion_adjusted_level = 0.0981. Rejections over
    # the 120 × 20 never-reported candidates are then Binomial(2400, π) with
    # π in [0.0981, 0.10] (independent populations; within a population the
    # bogus candidates' z are nearly uncorrelated: the per-population count's
    # variance is 1.03 × binomial, measured over 3000 populations). Bounds:
    # α = 1e-6 two-sided, α/2 in each tail, from the exact binomial quantiles
    # (lower at π = 0.0981, upper at the nominal 0.10).
    # Measured over 3000 populations the rate is 0.0962 ± 0.0012 (the
    # requirement of a positive NNLS estimate costs a further 0.002), for
    # which the lower bound still fails with probability < 3e-6.
    rng = np.random.default_rng(17)
    reps, level, alpha = 120, 0.10, 1e-6
    rejected = 0
    for _ in range(reps):
        _, cc, bc = _population(rng, n=50_000)
        result = decode_result(SPEC, cc, bc, TRUE + BOGUS, correction="none", alpha=level)
        assert (
            not result.screened
            and result.residual_dof == SPEC.num_cohorts * SPEC.num_bits - len(TRUE + BOGUS) - 1
        )
        rejected += int(result.table["detected"].iloc[len(TRUE) :].sum())
    trials = reps * len(BOGUS)
    exact_level = _dispersion_adjusted_level(level, SPEC.num_cohorts * SPEC.num_bits - len(TRUE + BOGUS) - 1)
    assert 0.098 < exact_level < level
    assert rejected <= scipy.stats.binom.isf(alpha / 2, trials, level)
    assert rejected >= scipy.stats.binom.ppf(alpha / 2, trials, exact_level)
