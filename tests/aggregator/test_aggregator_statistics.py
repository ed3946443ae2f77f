"""End to end through the real client: unbiased estimates, honest standard errors, CI coverage.

Variance convention: fixed data (docs/mechanisms.md#variance). Every run encodes the
*same* users' values, so the only randomness is the mechanism's; the
reported std_error is the fixed-data one.

Significance levels are stated per test. The single-run test uses the
on-device encoder, whose coins come from the CSPRNG and cannot be seeded, so
its false-failure probability is its α = 1e-6. The repeated-run tests use the
seeded simulation encoder (deterministic); their α = 1e-4 per check is the
probability that a correct implementation would fail under a random seed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, chi2, norm

import ldp
from ldp.aggregator import make_aggregator
from ldp.batch import ReportBatch
from ldp.client import encode_batch, make_encoder
from ldp.frequency_math import frequency_variance

DOMAIN = ("a", "b", "c", "d", "e")
WEIGHTS = (0.4, 0.25, 0.2, 0.1, 0.05)

SPECS = [
    ldp.BinaryRR(domain=("no", "yes"), epsilon=1.0),
    ldp.GRR(domain=DOMAIN, epsilon=1.0),
    ldp.SUE(domain=DOMAIN, epsilon=1.0),
    ldp.OUE(domain=DOMAIN, epsilon=1.0),
    ldp.OLH(domain=DOMAIN, epsilon=1.5),
    ldp.BLH(domain=DOMAIN, epsilon=1.0),
    ldp.Rappor.basic(DOMAIN, f="1/4", p="1/4", q="3/4", num_cohorts=4),
    ldp.Rappor.boolean(f="1/4", p="1/4", q="3/4", num_cohorts=2),
]
# The repeated-run test takes 1-4 s per mechanism (the 2-million-user boolean run the longest: encode_batch
# parses booleans one by one): the default run keeps GRR, `pytest -m slow` runs the others.
FAST = {"grr-"}


def _ids(spec):
    return f"{spec.mechanism}-{getattr(spec, 'encoding', '')}"


def values_of(spec) -> tuple:
    """The values an estimate table lists, in order."""
    if isinstance(spec, ldp.Rappor) and spec.encoding == "boolean":
        return (False, True)
    return tuple(spec.domain)


def population(spec, n: int) -> tuple[list, np.ndarray]:
    """n users' values with exact, fixed counts (largest share first)."""
    values = values_of(spec)
    weights = np.array(WEIGHTS[: len(values)], dtype=float)
    counts = np.floor(weights / weights.sum() * n).astype(int)
    counts[0] += n - counts.sum()
    users = [v for v, c in zip(values, counts) for _ in range(c)]
    return users, counts


def support_probabilities(spec):
    """(p*, q*) per listed value, as the estimator uses them."""
    if isinstance(spec, ldp.Rappor):
        one, zero = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
        if spec.encoding == "boolean":
            return np.array([1 - zero, one]), np.array([1 - one, zero])
        return one, zero
    return spec.p_star, spec.q_star


def simulated_batch(spec, users: list, rng: np.random.Generator) -> ReportBatch:
    """Seeded simulation encoding of ``users`` (one report each)."""
    return encode_batch(spec, users, rng)


def rows(batch: ReportBatch, start: int, stop: int) -> ReportBatch:
    fields = {
        name: (None if getattr(batch, name) is None else getattr(batch, name)[start:stop])
        for name in ("values", "seeds", "bits", "cohorts")
    }
    return ReportBatch(spec=batch.spec, **fields)


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_real_client_estimates_within_z_se(spec):
    """α = 1e-6 family-wise (Bonferroni over the d values, two-sided)."""
    n = 3000
    users, truth = population(spec, n)
    acc = make_aggregator(spec)
    if isinstance(spec, ldp.Rappor):  # every user is a separate client with its own secret and cohort
        for user in users:
            acc.add(make_encoder(spec).encode(user))
    else:
        encoder = make_encoder(spec)
        for user in users:
            acc.add(encoder.encode(user))
    table = acc.estimate()
    assert list(table.columns[:6]) == ["value", "estimate", "std_error", "ci_low", "ci_high", "proportion"]
    assert tuple(table["value"]) == values_of(spec)
    assert acc.n == n
    z = norm.isf(1e-6 / (2 * len(truth)))
    assert np.all(np.abs(table["estimate"].to_numpy() - truth) <= z * table["std_error"].to_numpy())
    np.testing.assert_allclose(table["proportion"], table["estimate"] / n)


@pytest.mark.parametrize(
    "spec", [pytest.param(s, marks=pytest.mark.slow) if _ids(s) not in FAST else s for s in SPECS], ids=_ids
)
def test_repeated_runs_unbiased_coverage_and_std_error(spec):
    """R seeded runs of n fixed users; every check at α = 1e-4 (two-sided)."""
    runs, n, alpha, confidence = 2000, 1000, 1e-4, 0.95
    z = norm.isf(alpha / 2)
    users, truth = population(spec, n)
    target = 1  # a value with a mid-range frequency (0.25; "yes"/True: 0.3)
    rng = np.random.default_rng(20240601 + SPECS.index(spec))
    batch = simulated_batch(spec, users * runs, rng)
    estimates = np.empty(runs)
    variances = np.empty(runs)
    covered = np.empty(runs, dtype=bool)
    for r in range(runs):
        acc = make_aggregator(spec)
        acc.add_batch(rows(batch, r * n, (r + 1) * n))
        row = acc.estimate(confidence=confidence).iloc[target]
        estimates[r] = row["estimate"]
        variances[r] = row["std_error"] ** 2
        covered[r] = row["ci_low"] <= truth[target] <= row["ci_high"]

    p_star, q_star = support_probabilities(spec)
    p_t = p_star[target] if np.ndim(p_star) else p_star
    q_t = q_star[target] if np.ndim(q_star) else q_star
    f_true = truth[target] / n
    true_variance = n**2 * frequency_variance(f_true, n, p_t, q_t)  # exact fixed-data variance of the count

    # unbiased: the mean of R estimates is within z·√(Var/R) of the true count
    assert abs(estimates.mean() - truth[target]) <= z * np.sqrt(true_variance / runs)

    # the reported variance is linear in the plug-in f̂ (clipping is negligible here), so its mean is
    # unbiased for the true variance with spread |slope|·√(Var/R), slope = n·(1−p*−q*)/(p*−q*)
    slope = n * (1 - p_t - q_t) / (p_t - q_t)
    assert (
        abs(variances.mean() - true_variance)
        <= z * abs(slope) * np.sqrt(true_variance / runs) + 1e-9 * true_variance
    )

    # std_error matches the empirical spread: (R−1)s²/σ² ~ χ²(R−1)
    statistic = (runs - 1) * estimates.var(ddof=1) / variances.mean()
    assert chi2.ppf(alpha / 2, runs - 1) <= statistic <= chi2.isf(alpha / 2, runs - 1)

    # coverage of the 95% intervals: binomial SE of the rate over R runs
    tolerance = z * np.sqrt(confidence * (1 - confidence) / runs)
    assert abs(covered.mean() - confidence) <= tolerance


def _count_distribution(ones: int, zeros: int, one: float, zero: float) -> np.ndarray:
    """Exact pmf of c = Binomial(ones, q*) + Binomial(zeros, p*) on 0..ones+zeros."""
    return np.convolve(
        binom.pmf(np.arange(ones + 1), ones, one), binom.pmf(np.arange(zeros + 1), zeros, zero)
    )


def test_bloom_bit_estimates_unbiased_with_fixed_data_spread():
    """Per-cohort, per-bit t_ij and reported variances (docs/mechanisms.md#rappor-decoding) over R seeded runs; α = 1e-4 per family."""
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")
    runs, n, alpha = 1500, 400, 1e-4
    rng = np.random.default_rng(7)
    users = ["apple"] * 200 + ["pear"] * 120 + ["plum"] * 80
    cohorts = np.arange(n) % spec.num_cohorts
    true_bits = np.zeros((spec.num_cohorts, spec.num_bits))
    for user, cohort in zip(users, cohorts.tolist()):
        true_bits[cohort, sorted(set(spec.bit_positions(user, cohort)))] += 1
    big_n = np.bincount(cohorts, minlength=spec.num_cohorts)[:, None].astype(float)
    batch = encode_batch(spec, users * runs, rng, cohorts=np.tile(cohorts, runs))
    reported_bits = np.unpackbits(batch.bits, axis=1, count=spec.num_bits).astype(np.int64)
    one, zero = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
    gap = one - zero
    t = np.empty((runs, spec.num_cohorts, spec.num_bits))
    reported = np.empty_like(t)
    counts = np.empty_like(t)
    for r in range(runs):
        acc = make_aggregator(spec)
        acc.add_batch(rows(batch, r * n, (r + 1) * n))
        bits = acc.bit_estimates()
        t[r], reported[r] = bits.estimate, bits.variance
        block = reported_bits[r * n : (r + 1) * n]
        counts[r] = np.stack([block[cohorts == j].sum(axis=0) for j in range(spec.num_cohorts)])

    # Exact, for the given counts (deterministic; rtol covers rounding only): the RAPPOR decoding
    # t = (c − p*N)/(q* − p*) and Var = N·r(1−r)/(q*−p*)², r = p* + (q*−p*)·clip(t/N, 0, 1).
    np.testing.assert_allclose(t, (counts - zero * big_n) / gap, rtol=1e-12, atol=1e-9)
    rate = zero + gap * np.clip(t / big_n, 0.0, 1.0)
    np.testing.assert_allclose(reported, big_n * rate * (1 - rate) / gap**2, rtol=1e-12)

    # Statistical, Bonferroni over the 64 cells within each family.
    fixed = (true_bits * one * (1 - one) + (big_n - true_bits) * zero * (1 - zero)) / gap**2
    cells = t[0].size
    z = norm.isf(alpha / (2 * cells))
    # t is unbiased for the true bit counts T
    assert np.all(np.abs(t.mean(axis=0) - true_bits) <= z * np.sqrt(fixed / runs))
    # its spread is the fixed-data variance: (R−1)s²/σ² ~ χ²(R−1)
    statistic = (runs - 1) * t.var(axis=0, ddof=1) / fixed
    assert np.all(statistic >= chi2.ppf(alpha / (2 * cells), runs - 1))
    assert np.all(statistic <= chi2.isf(alpha / (2 * cells), runs - 1))
    # The mean reported variance matches its exact expectation under the exact count distribution
    # c = Bin(T, q*) + Bin(N − T, p*), computed by summing over c (the clamp makes the plug-in
    # nonlinear in c), within z·SD/√R. Without the clamp it would be the RAPPOR decoding (i.i.d.) variance at the
    # truth minus Var(t)/N, i.e. fixed·(1 − 1/N) + N·a(1−a) with a = T/N, not the fixed-data spread.
    expected = np.empty_like(fixed)
    spread = np.empty_like(fixed)
    for j in range(spec.num_cohorts):
        size = int(big_n[j, 0])
        c = np.arange(size + 1)
        r_of_c = zero + gap * np.clip((c - zero * size) / gap / size, 0.0, 1.0)
        v_of_c = size * r_of_c * (1 - r_of_c) / gap**2
        for i in range(spec.num_bits):
            pmf = _count_distribution(int(true_bits[j, i]), size - int(true_bits[j, i]), one, zero)
            expected[j, i] = pmf @ v_of_c
            spread[j, i] = np.sqrt(max(pmf @ (v_of_c - expected[j, i]) ** 2, 0.0))
    assert np.all(np.abs(reported.mean(axis=0) - expected) <= z * spread / np.sqrt(runs) + 1e-9 * expected)
