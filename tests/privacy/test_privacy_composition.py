"""Composition of reports: test vectors, exactness, symmetry, numerics (docs/accounting.md#composition)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldp.errors import ParameterError
from ldp.privacy.composition import (
    advanced_composition,
    basic_composition,
    clt_composition,
    composition_table,
    exact_rr_composition,
    gdp_composition,
    heterogeneous_composition,
    heterogeneous_epsilon,
    kov_closed_form,
    kov_delta,
    kov_heterogeneous_bound,
    optimal_composition,
    sound_gdp_epsilon,
)
from ldp.privacy.conversions import dp_to_gdp_mu
from ldp.privacy.loss import PrivacyLoss, ProductLoss
from ldp.privacy.tradeoff import GaussianTradeoff, dp_tradeoff

ALPHA = np.linspace(0.0, 1.0, 1001)


# -- docs/accounting.md#composition table (δ = 1e-6), at the printed precision
@pytest.mark.parametrize(
    "eps, exact, closed, drv",
    [(0.1, 4.775, 5.756, 6.308), (1.0, 83.53, 98.78, 224.4)],
)
def test_composition_table_vectors(eps, exact, closed, drv):
    k, delta = 100, 1e-6

    def printed(x, ref):  # rounded to the digits the docs print
        decimals = len(str(ref).split(".")[1])
        return round(x, decimals)

    assert printed(optimal_composition(eps, k, delta), exact) == exact
    assert printed(exact_rr_composition(eps, k).epsilon(delta), exact) == exact
    assert printed(kov_closed_form(eps, k, delta), closed) == closed
    assert printed(advanced_composition(eps, k, delta), drv) == drv


@pytest.mark.parametrize("eps, k", [(0.1, 100), (1.0, 100), (0.5, 365), (3.0, 20)])
def test_kov_sum_equals_binomial_privacy_loss(eps, k):
    targets = np.linspace(0.0, k * eps * 0.9, 7)
    assert np.allclose(
        kov_delta(eps, k, targets), PrivacyLoss.binomial(eps, k).delta(targets), rtol=1e-9, atol=1e-300
    )


def test_kov_discrete_points():
    # KOV: ((k−2i)ε, δ_i) with δ_i = Σ_{ℓ<i} C(k,ℓ)(e^{(k−ℓ)ε} − e^{(k−2i+ℓ)ε})/(1+e^ε)^k
    eps, k = 0.4, 9
    for i in range(k // 2 + 1):
        delta_i = (
            sum(
                math.comb(k, j) * (math.exp((k - j) * eps) - math.exp((k - 2 * i + j) * eps))
                for j in range(i)
            )
            / (1 + math.exp(eps)) ** k
        )
        assert kov_delta(eps, k, (k - 2 * i) * eps) == pytest.approx(delta_i, rel=1e-10, abs=1e-15)


def test_bounds_are_ordered():
    # exact ≤ KOV closed form ≤ basic; exact ≤ DRV; exact ≤ sound GDP
    for eps, k in [(0.1, 100), (0.5, 365), (1.0, 100), (2.0, 10)]:
        exact = optimal_composition(eps, k, 1e-6)
        assert exact <= kov_closed_form(eps, k, 1e-6) + 1e-9 <= k * eps + 2e-9
        assert exact <= advanced_composition(eps, k, 1e-6)
        assert exact <= sound_gdp_epsilon(eps, k, 1e-6)[1]


def test_no_overflow_at_epsilon_20_and_10000_reports():
    loss = PrivacyLoss.binomial(20.0, 10_000)
    assert np.all(np.isfinite(loss.log_p)) and np.all(np.isfinite(loss.log_q))
    deltas = loss.delta(np.array([0.0, 1e3, 1e5, 199_990.0, 2e5]))
    assert np.all(np.isfinite(deltas)) and np.all((deltas >= 0) & (deltas <= 1))
    assert deltas[-1] == 0.0
    assert np.isfinite(optimal_composition(20.0, 10_000, 1e-6))
    assert np.isfinite(kov_delta(20.0, 10_000, 1e5))
    # small ε, many reports: the binomial is wide, the result must agree with KOV's sum
    eps = optimal_composition(0.01, 10_000, 1e-6)
    assert kov_delta(0.01, 10_000, eps) == pytest.approx(1e-6, rel=1e-6)
    row_eps = [r.epsilon for r in composition_table(20.0, 10_000, 1e-6)]
    assert not any(math.isnan(e) for e in row_eps)


def test_exact_curve_lies_above_sound_gdp_and_below_single_bound():
    eps, k = 0.5, 30
    curve = exact_rr_composition(eps, k)
    sound = GaussianTradeoff(math.sqrt(k) * dp_to_gdp_mu(eps))
    assert np.all(curve(ALPHA) >= sound(ALPHA) - 1e-12)
    # composing makes things less private than one report
    assert np.all(curve(ALPHA) <= dp_tradeoff(eps)(ALPHA) + 1e-12)


@pytest.mark.parametrize("eps, k", [(0.1, 100), (0.5, 50), (1.0, 30), (0.2, 400)])
def test_berry_esseen_bounds_hold_against_exact(eps, k):
    clt = clt_composition(eps, k, 1e-6)
    curve = exact_rr_composition(eps, k)
    g = GaussianTradeoff(clt.mu)
    inner = ALPHA[(clt.gamma <= ALPHA) & (1 - clt.gamma >= ALPHA)]
    exact = curve(inner)
    assert np.all(g(np.clip(inner + clt.gamma, 0, 1)) - clt.gamma <= exact + 1e-12)
    assert np.all(exact <= g(np.clip(inner - clt.gamma, 0, 1)) + clt.gamma + 1e-12)


def test_clt_bound_is_finite_only_when_gamma_is_small():
    assert math.isinf(clt_composition(0.1, 100, 1e-6).epsilon_bound)
    result = clt_composition(0.001, 1_000_000, 0.05)  # μ ≈ 1, γ ≈ 5.6e-4
    assert result.gamma < 0.05 / 2 and math.isfinite(result.epsilon_bound)
    assert result.epsilon_bound >= optimal_composition(0.001, 1_000_000, 0.05) - 1e-9


def test_gdp_composition():
    assert gdp_composition([3.0, 4.0]).mu == pytest.approx(5.0)
    assert gdp_composition([]).mu == 0.0


def test_basic_composition():
    assert basic_composition([0.1] * 10, [1e-7] * 10) == (pytest.approx(1.0), pytest.approx(1e-6))
    with pytest.raises(ParameterError):
        basic_composition([-1.0])


# -- heterogeneous composition -----------------------------------------------
def _brute_force_delta(epsilons, target):
    total = 0.0
    for signs in itertools.product((1, -1), repeat=len(epsilons)):
        loss = sum(s * e for s, e in zip(signs, epsilons))
        prob = math.prod(
            math.exp(e) / (1 + math.exp(e)) if s > 0 else 1 / (1 + math.exp(e))
            for s, e in zip(signs, epsilons)
        )
        total += prob * max(0.0, 1 - math.exp(target - loss))
    return total


@settings(max_examples=30, deadline=None)
@given(
    epsilons=st.lists(st.sampled_from([0.1, 0.25, 0.5, 1.0, 2.0]), min_size=1, max_size=8),
    target=st.floats(0.0, 5.0),
)
def test_heterogeneous_matches_brute_force(epsilons, target):
    loss = heterogeneous_composition(epsilons)
    assert loss.delta(target) == pytest.approx(_brute_force_delta(epsilons, target), rel=1e-9, abs=1e-15)


@settings(max_examples=30, deadline=None)
@given(
    epsilons=st.lists(st.sampled_from([0.1, 0.3, 0.7, 1.5]), min_size=2, max_size=12), seed=st.integers(0, 99)
)
def test_composition_is_symmetric(epsilons, seed):
    # order does not matter, and (P, Q) vs (Q, P) give the same δ
    shuffled = list(np.random.default_rng(seed).permutation(epsilons))
    a = heterogeneous_composition(epsilons)
    b = heterogeneous_composition(shuffled)
    grid = np.linspace(0, sum(epsilons), 6)
    assert np.allclose(a.delta(grid), b.delta(grid), rtol=1e-9, atol=1e-15)
    assert np.allclose(a.hockey_stick(grid), a.swap().hockey_stick(grid), rtol=1e-9, atol=1e-15)
    left = PrivacyLoss.binomial(0.3, 3).compose(PrivacyLoss.binomial(1.1, 2))
    right = PrivacyLoss.binomial(1.1, 2).compose(PrivacyLoss.binomial(0.3, 3))
    assert np.allclose(left.delta(grid), right.delta(grid), rtol=1e-12, atol=1e-15)


def test_homogeneous_is_a_special_case_of_heterogeneous():
    assert heterogeneous_epsilon([0.5] * 40, 1e-6) == pytest.approx(
        optimal_composition(0.5, 40, 1e-6), rel=1e-9
    )
    mixed = heterogeneous_epsilon([0.1] * 50 + [0.3] * 20, 1e-6)
    assert mixed <= kov_heterogeneous_bound([0.1] * 50 + [0.3] * 20, 1e-6)
    assert mixed <= 50 * 0.1 + 20 * 0.3


def test_product_loss_matches_explicit_product():
    a, b = PrivacyLoss.binomial(0.4, 7), PrivacyLoss.binomial(0.9, 5)
    explicit = a.compose(b)
    lazy = a.compose(b, max_atoms=1)
    assert isinstance(lazy, ProductLoss)
    grid = np.linspace(-2.0, 6.0, 17)
    assert np.allclose(lazy.hockey_stick(grid), explicit.hockey_stick(grid), rtol=1e-9, atol=1e-14)
    assert lazy.epsilon(1e-4) == pytest.approx(explicit.epsilon(1e-4), abs=1e-8)
    assert np.all(lazy.tradeoff()(ALPHA) <= explicit.tradeoff()(ALPHA) + 1e-12)


# -- cross-check with Google's dp-accounting (in the test extra) ----
@pytest.mark.parametrize("epsilons", [[0.1] * 100, [1.0] * 100, [0.1] * 30 + [0.4] * 10])
def test_agrees_with_dp_accounting(epsilons):
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    composed = None
    for eps, count in sorted({e: epsilons.count(e) for e in epsilons}.items()):
        part = pld_module.from_privacy_parameters(
            common.DifferentialPrivacyParameters(eps, 0.0), value_discretization_interval=1e-4
        ).self_compose(count)
        composed = part if composed is None else composed.compose(part)
    theirs = composed.get_epsilon_for_delta(1e-6)
    ours = heterogeneous_epsilon(epsilons, 1e-6)
    # dp-accounting discretizes pessimistically (interval 1e-4): never below the exact value
    assert ours <= theirs + 1e-9
    assert theirs - ours < 1e-3 * len(epsilons) * 1e-4 + 1e-6


def test_lattice_product_matches_explicit_product():
    # three-atom pairs (GRR-like) on one lattice: product computed in log space without the outer product
    grr = PrivacyLoss.from_probabilities([0.5, 0.2, 0.3], [0.2, 0.5, 0.3])
    a, b = grr.self_compose(6), grr.self_compose(5)
    explicit = a.compose(b)
    lattice = a.compose(b, max_atoms=1)
    assert isinstance(lattice, PrivacyLoss) and lattice.size == explicit.size
    grid = np.linspace(-3.0, 5.0, 9)
    assert np.allclose(lattice.delta(grid), explicit.delta(grid), rtol=1e-12, atol=1e-15)
    assert np.allclose(lattice.tradeoff()(ALPHA), explicit.tradeoff()(ALPHA), atol=1e-12)


# -- δ = 0: pure ε exactly, inf where no finite ε exists ---------------------------
@pytest.mark.parametrize("eps, k", [(0.5, 365), (1.0, 10), (3.0, 4)])
def test_composition_at_delta_zero_is_k_epsilon_exactly(eps, k):
    assert optimal_composition(eps, k, 0.0) == pytest.approx(k * eps, rel=1e-12)
    assert exact_rr_composition(eps, k).epsilon(0.0) == pytest.approx(k * eps, rel=1e-12)
    assert kov_closed_form(eps, k, 0.0) == k * eps
    assert math.isinf(advanced_composition(eps, k, 0.0))  # the theorem needs δ' > 0
    assert heterogeneous_epsilon([eps] * k, 0.0) == pytest.approx(k * eps, rel=1e-12)
    assert kov_heterogeneous_bound([eps] * k, 0.0) == pytest.approx(k * eps, rel=1e-12)
    assert math.isinf(clt_composition(eps, k, 0.0).epsilon_approx)
    assert math.isinf(clt_composition(eps, k, 0.0).epsilon_bound)
    rows = {row.method: row for row in composition_table(eps, k, 0.0)}
    assert rows["exact f-DP (binomial curve)"].epsilon == pytest.approx(k * eps, rel=1e-12)
    assert math.isinf(rows["GDP via eps-DP => mu_eps-GDP"].epsilon)
    assert "no finite epsilon at delta = 0" in rows["GDP via eps-DP => mu_eps-GDP"].note


def test_product_loss_at_delta_zero_is_the_sum_of_max_losses():
    a, b = PrivacyLoss.binomial(0.3, 50), PrivacyLoss.binomial(0.7, 40)
    product = ProductLoss(a, b)
    assert product.epsilon(0.0) == pytest.approx(50 * 0.3 + 40 * 0.7, rel=1e-12)
    assert product.delta(product.epsilon(0.0)) == 0.0


@pytest.mark.parametrize("eps", [50.0, 800.0, 1e300])
def test_accounting_at_huge_epsilon_never_overflows(eps):
    """Huge ε used to raise OverflowError (expm1, sinh) or a NaN bracket; every row is now a number."""
    k, delta = 3, 1e-6
    rows = {row.method: row.epsilon for row in composition_table(eps, k, delta)}
    assert not any(math.isnan(value) for value in rows.values())
    # three reports of a huge ε: only the top atom (loss kε, P-mass (1 + e^-ε)^-k ≈ 1) lies above the
    # next loss (k − 2)ε, so δ(ε') = P_top·(1 − e^(ε' − kε)) and ε' = kε + ln(1 − δ/P_top)
    top = (1 + math.exp(-eps)) ** -k
    expected = k * eps + math.log1p(-delta / top)
    assert rows["optimal (Kairouz-Oh-Viswanath)"] == pytest.approx(expected, rel=1e-12)
    assert rows["exact f-DP (binomial curve)"] == pytest.approx(expected, rel=1e-12)
    assert rows["basic (sum)"] == k * eps
    assert math.isinf(advanced_composition(800.0, k, delta))  # e^ε − 1 beyond the double range


def test_gaussian_delta_is_zero_not_nan_when_both_tails_underflow():
    from ldp.privacy.conversions import gdp_epsilon, gdp_mu

    assert GaussianTradeoff(1.0).delta(1e300) == 0.0
    # not every μ works: μ-GDP is (ε, δ)-DP up to μ ≈ √(2ε) (a search cap answered inf here)
    assert gdp_mu(1e300, 1e-6) == pytest.approx(math.sqrt(2e300), rel=1e-6)
    assert math.isinf(gdp_epsilon(1e300, 1e-6))  # μ²/2 beyond the double range


# -- many reports: windows of the binomial, a stated bound (issue 24, item 3) -------------
def _kov_sum(eps: float, k: int, target: float) -> float:
    """The KOV sum over the whole support, written out independently (ln Γ; fine at k = 10^5)."""
    from scipy.special import gammaln, logsumexp

    ell = np.arange(k + 1, dtype=float)
    a, b = (k - ell) * eps, target + ell * eps
    live = a > b
    ell, a, b = ell[live], a[live], b[live]
    terms = gammaln(k + 1.0) - gammaln(ell + 1.0) - gammaln(k - ell + 1.0) + a + np.log(-np.expm1(b - a))
    return float(np.exp(logsumexp(terms) - k * np.logaddexp(0.0, eps)))


@pytest.mark.parametrize("eps, k", [(1.0, 100_000), (0.05, 300_000), (8.0, 50_000)])
def test_windowed_binomial_matches_the_full_kov_sum(eps, k):
    loss = PrivacyLoss.binomial(eps, k)
    assert 0 < loss.tail <= 1e-29 and loss.size < 60 * math.sqrt(k)  # O(√k) atoms, not k + 1
    total = optimal_composition(eps, k, 1e-6)
    assert exact_rr_composition(eps, k).epsilon(1e-6) == pytest.approx(total, rel=1e-9)
    # sound: the exact δ at the answer is within the target, and the answer is not loose
    assert _kov_sum(eps, k, total) <= 1e-6 * (1 + 1e-9)  # ε is rounded up, never down
    assert _kov_sum(eps, k, total * (1 - 1e-6)) > 1e-6
    assert kov_delta(eps, k, total) == pytest.approx(_kov_sum(eps, k, total), rel=1e-8)


def test_composition_table_at_ten_million_reports_is_cheap():
    import tracemalloc

    tracemalloc.start()
    rows = {row.method: row for row in composition_table(1.0, 10**7, 1e-6)}
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # was one float per report and more (10^7 reports: about 1 GB); now O(√k)
    assert peak < 100e6, peak
    exact = rows["exact f-DP (binomial curve)"].epsilon
    assert exact is not None and exact == pytest.approx(rows["optimal (Kairouz-Oh-Viswanath)"].epsilon)
    assert exact <= rows["KOV closed form (Thm 3.4)"].epsilon <= rows["basic (sum)"].epsilon
    assert "1e-29" in rows["exact f-DP (binomial curve)"].note


@pytest.mark.slow
def test_composition_table_at_a_billion_reports():
    import tracemalloc

    tracemalloc.start()
    rows = {row.method: row for row in composition_table(1.0, 10**9, 1e-6)}
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 500e6, peak  # was 8 GB for one array of 10^9 floats (killed)
    exact = rows["exact f-DP (binomial curve)"].epsilon
    assert exact is not None and exact <= rows["KOV closed form (Thm 3.4)"].epsilon
    # the CLT mean k·ε·tanh(ε/2) plus a few standard deviations: the exact value sits just above it
    mean, sd = 10**9 * math.tanh(0.5), math.sqrt(10**9) * (1 - math.tanh(0.5) ** 2) ** 0.5
    assert mean < exact < mean + 10 * sd


def test_exact_rows_beyond_the_stated_bound_are_refused():
    with pytest.raises(ParameterError, match="at most 1e\\+09 reports"):
        exact_rr_composition(1.0, 10**9 + 1)
    with pytest.raises(ParameterError, match="at most 1e\\+09 reports"):
        optimal_composition(1.0, 10**10, 1e-6)
    rows = {row.method: row for row in composition_table(1.0, 10**10, 1e-6)}
    for name in ("optimal (Kairouz-Oh-Viswanath)", "exact f-DP (binomial curve)"):
        assert rows[name].epsilon is None and "not computed above 1e+09" in rows[name].note
    assert rows["KOV closed form (Thm 3.4)"].epsilon is not None


def test_delta_below_the_windows_resolution_is_refused():
    loss = PrivacyLoss.binomial(1.0, 100_000)
    assert 0 < loss.tail <= 1e-29
    with pytest.raises(ParameterError, match="leaves out"):
        loss.epsilon(10 * loss.tail)
    with pytest.raises(ParameterError, match="leaves out"):
        loss.tradeoff().epsilon(10 * loss.tail)
    assert loss.epsilon(0.0) == pytest.approx(100_000.0)  # pure ε: the support's largest loss, exactly


@pytest.mark.parametrize("k", [10**4, 10**6, 10**9])
def test_binomial_log_masses_are_accurate_at_any_k(k):
    import mpmath

    from ldp.privacy._numeric import binom_logpmf, binom_window

    mpmath.mp.dps = 40
    log_p, log_q = -math.log1p(math.e), -math.log1p(1 / math.e)  # 1/(1+e), e/(1+e)
    p = mpmath.exp(mpmath.mpf(log_p))
    mean, sd = k * float(p), math.sqrt(k * float(p * (1 - p)))
    for z in (-11.0, 0.0, 5.0):
        x = round(mean + z * sd)
        exact = mpmath.loggamma(k + 1) - mpmath.loggamma(x + 1) - mpmath.loggamma(k - x + 1)
        exact += x * mpmath.log(p) + (k - x) * mpmath.log1p(-p)
        # ln Γ differences lost 1.7e-6 here at k = 10^9; p's own rounding bounds what is left
        assert float(binom_logpmf(k, log_p, log_q, x, x)[0]) == pytest.approx(float(exact), abs=1e-9)
    _, log_mass, outside = binom_window(k, log_p, log_q, 1e-32)
    assert outside <= 1e-32
    assert math.exp(float(np.logaddexp.reduce(log_mass))) + outside == pytest.approx(1.0, abs=1e-12)


def test_logsumexp_is_scipys_bit_for_bit():
    """The accountant's logsumexp (no array-API dispatch) gives exactly SciPy's answer, edge cases included."""
    from scipy.special import logsumexp as scipy_logsumexp

    from ldp.privacy._numeric import logsumexp

    rng = np.random.default_rng(7)
    inf = math.inf
    cases = [[], [-inf], [-inf, -inf], [inf, 1.0], [math.nan, 1.0], [5.0], [1.0, 1.0, 1.0], [700.0, 710.0]]
    for _ in range(2_000):
        x = rng.normal(0.0, rng.choice([1.0, 10.0, 1000.0]), rng.integers(1, 200))
        x[rng.random(x.size) < 0.2] = -inf
        x[rng.integers(x.size)] = x.max()  # ties at the top
        cases.append(x)
    for case in cases:
        expected = float(scipy_logsumexp(np.asarray(case, dtype=float)))
        got = logsumexp(case)
        assert got == expected or (math.isnan(got) and math.isnan(expected)), (case, got, expected)
