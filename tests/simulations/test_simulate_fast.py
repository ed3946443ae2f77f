"""Fast path: empirical MSE against the theoretical variance, for every mechanism.

Fixed-data convention (docs/mechanisms.md#variance): the true counts are held fixed and
only the mechanism's randomness varies, so the expected MSE over the domain
is exactly mean_v Var[f̂_v] (``theory_mse``). Over R independent collections
the mean MSE has standard error √(2·tr(Σ²)/R)/D, with Σ the covariance
matrix of the estimates (Gaussian approximation of the squared errors; the
errors are sums of ≥ 10⁴ independent coins). Each test uses α = 1e-6
(two-sided z = 4.89), so a correct implementation fails about once in a
million runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import ldp
from ldp.frequency_math import unbiased_frequency
from ldp.simulations import fast
from ldp.simulations.mechanisms import rappor_for_epsilon
from ldp.simulations.metrics import error_metrics, lower_bound, theory_mse
from ldp.simulations.populations import draw_counts, zipf

ALPHA = 1e-6
Z = stats.norm.isf(ALPHA / 2)
REPEATS = 400


def _estimate_covariance(spec, counts: np.ndarray) -> np.ndarray:
    """Exact covariance of f̂ under the fast sampler (GRR: multinomial per true value; else independent)."""
    n = counts.sum()
    gap = spec.p_star - spec.q_star
    if isinstance(spec, ldp.GRR):
        d = spec.domain_size
        p, q = float(spec.p), float(spec.q)
        cov = np.zeros((d, d))
        for x, n_x in enumerate(counts):
            probs = np.full(d, q)
            probs[x] = p
            cov += n_x * (np.diag(probs) - np.outer(probs, probs))
    else:
        p, q = spec.p_star, spec.q_star
        cov = np.diag(counts * p * (1 - p) + (n - counts) * q * (1 - q))
    return cov / (n * gap) ** 2


def _specs():
    domain = tuple(range(32))
    return [
        ldp.BinaryRR(domain=(0, 1), epsilon=1.0),
        ldp.GRR(domain=domain, epsilon=1.0),
        ldp.GRR(domain=domain, epsilon=4.0),
        ldp.SUE(domain=domain, epsilon=1.0),
        ldp.OUE(domain=domain, epsilon=1.0),
        ldp.OLH(domain=domain, epsilon=2.0),
        ldp.BLH(domain=domain, epsilon=1.0),
    ]


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: f"{s.mechanism}-eps{s.epsilon:g}")
def test_fast_mse_matches_theory(spec):
    rng = np.random.default_rng(20240601)
    population = zipf(spec.domain_size, 1.1)
    counts = draw_counts(population, 20_000, rng)
    n = int(counts.sum())
    truth = counts / n
    mses = np.empty(REPEATS)
    for r in range(REPEATS):
        support = fast.frequency_support_counts(spec, counts, rng)
        estimate = unbiased_frequency(support, n, spec.p_star, spec.q_star)
        mses[r] = error_metrics(estimate, truth)["mse"]
    expected = theory_mse(spec, truth, n)
    cov = _estimate_covariance(spec, counts)
    assert math.isclose(np.trace(cov) / spec.domain_size, expected, rel_tol=1e-9)  # same theory two ways
    se = math.sqrt(2 * np.sum(cov * cov) / REPEATS) / spec.domain_size
    assert abs(mses.mean() - expected) <= Z * se, (mses.mean(), expected, se)


def test_fast_grr_counts_sum_to_n():
    spec = ldp.GRR(domain=range(10), epsilon=1.0)
    counts = np.arange(10) * 7
    support = fast.frequency_support_counts(spec, counts, np.random.default_rng(1))
    assert support.sum() == counts.sum()


def test_fast_basic_rappor_bits_match_unary_theory():
    """Basic RAPPOR, one cohort: bit v is Bin(n_v, P[1|1]) + Bin(n − n_v, P[1|0]), a unary oracle."""
    domain = tuple(f"v{i}" for i in range(16))
    spec = ldp.Rappor.basic(domain, f="1/4", p="1/4", q="3/4")
    p1, p0 = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
    rng = np.random.default_rng(7)
    counts = draw_counts(zipf(16, 1.0), 10_000, rng)
    n = int(counts.sum())
    truth = counts / n
    mses = np.empty(REPEATS)
    for r in range(REPEATS):
        cohort_counts, bit_counts = fast.rappor_counts(spec, domain, counts, rng)
        assert cohort_counts.tolist() == [n]
        mses[r] = error_metrics(unbiased_frequency(bit_counts[0], n, p1, p0), truth)["mse"]
    per_value = (counts * p1 * (1 - p1) + (n - counts) * p0 * (1 - p0)) / (n * (p1 - p0)) ** 2
    se = math.sqrt(2 * np.sum(per_value**2) / REPEATS) / len(domain)
    assert abs(mses.mean() - per_value.mean()) <= Z * se


def test_fast_bloom_rappor_bit_counts_are_unbiased():
    """Σ_j c_ij over repeats: E = Σ_j [N_j P10 + T_ij (P11 − P10)], T from the Bloom bits (α = 1e-6 per bit, Bonferroni)."""
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")
    values = [f"v{i}" for i in range(8)]
    counts = np.array([4000, 2000, 1000, 500, 250, 125, 60, 65])
    n = counts.sum()
    p1, p0 = float(spec.prob_one_given_one), float(spec.prob_one_given_zero)
    bits = fast.rappor_true_bits(spec, values)  # (D, m, k)
    # Per user of value v: P[bit i = 1] averaged over the uniform cohort.
    p_true = bits.mean(axis=1)  # (D, k)
    expected = n * p0 + (p1 - p0) * (counts[:, None] * p_true).sum(axis=0)
    rng = np.random.default_rng(11)
    totals = np.array([fast.rappor_counts(spec, values, counts, rng)[1].sum(axis=0) for _ in range(300)])
    # Each user's bit i is an independent Bernoulli with mean p0 + (p1 − p0)·P[B_i = 1].
    prob = p0 + (p1 - p0) * p_true
    var = (counts[:, None] * prob * (1 - prob)).sum(axis=0)
    z = stats.norm.isf(ALPHA / (2 * spec.num_bits))
    assert np.all(np.abs(totals.mean(axis=0) - expected) <= z * np.sqrt(var / len(totals)))


def test_rappor_for_epsilon_calibrates_epsilon_one():
    for eps in (0.5, 1.0, 4.0):
        spec = rappor_for_epsilon(eps)
        assert spec.epsilon_one <= eps
        assert eps - spec.epsilon_one < 1e-9


def test_lower_bound_reference_values():
    n = 10_000
    for eps in (0.5, 1.0, 3.0):
        e = math.exp(eps)
        # d = 2: subset selection is randomized response; fixed-data variance at f = 1/2.
        assert math.isclose(lower_bound(eps, 2, n), e / (n * (e - 1) ** 2), rel_tol=1e-9)
        # Large d: about 4e^ε/(n(e^ε − 1)²) per value (docs/mechanisms.md#lower-bounds), and never above OUE at uniform.
        big = lower_bound(eps, 4096, n)
        oue = ldp.OUE(domain=range(4096), epsilon=eps).variance(1 / 4096, n)
        assert big <= oue
        assert math.isclose(big, 4 * e / (n * (e - 1) ** 2), rel_tol=0.01)
