"""Trade-off functions, conversions and their properties (docs/accounting.md#conversions)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from ldp.errors import ParameterError
from ldp.privacy.conversions import dp_to_gdp_mu, gaussian_sigma, gdp_delta, gdp_epsilon, gdp_mu
from ldp.privacy.loss import PrivacyLoss
from ldp.privacy.tradeoff import GaussianTradeoff, PiecewiseLinearTradeoff, dp_tradeoff, identity_tradeoff

ALPHA = np.linspace(0.0, 1.0, 2001)


# -- docs/accounting.md#conversions test vectors ------------------------------------
@pytest.mark.parametrize(
    "eps, expected", [(0.0, 0.382925), (0.5, 0.238422), (1.0, 0.126937), (2.0, 0.0209236)]
)
def test_gdp_delta_vectors(eps, expected):
    # printed to 6 significant digits
    assert gdp_delta(1.0, eps) == pytest.approx(expected, abs=5e-7 if expected > 0.1 else 5e-8)


@pytest.mark.parametrize("eps, expected", [(0.5, 0.62389), (1.0, 1.23204), (2.0, 2.35796)])
def test_dp_to_gdp_mu_vectors(eps, expected):
    assert dp_to_gdp_mu(eps) == pytest.approx(expected, abs=5e-6)


def test_analytic_gaussian_sigma_vector():
    assert gaussian_sigma(1.0, 1.0, 1e-5) == pytest.approx(3.7306, abs=5e-5)


def test_gdp_delta_matches_plain_formula():
    mu, eps = 1.3, np.linspace(0, 4, 9)
    plain = norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert np.allclose(gdp_delta(mu, eps), plain, rtol=1e-10, atol=1e-15)


def test_no_overflow_in_extreme_conversions():
    assert math.isfinite(dp_to_gdp_mu(20.0)) and math.isfinite(dp_to_gdp_mu(1000.0))
    assert dp_to_gdp_mu(1000.0) > dp_to_gdp_mu(20.0)
    # e^800 overflows a float; the log-space form must not
    mu, eps = 40.0, 800.0
    log_a, log_b = norm.logcdf(-eps / mu + mu / 2), eps + norm.logcdf(-eps / mu - mu / 2)
    expected = math.exp(log_a) - math.exp(log_b)
    assert 0.0 < gdp_delta(mu, eps) < 1
    assert gdp_delta(mu, eps) == pytest.approx(expected, rel=1e-9)
    assert gdp_epsilon(30.0, 1e-12) < math.inf


# -- conversions round trip ------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(mu=st.floats(0.05, 8.0), eps=st.floats(0.0, 10.0))
def test_gdp_conversions_round_trip(mu, eps):
    delta = gdp_delta(mu, eps)
    if delta < 1e-250:
        return  # δ underflows: nothing to invert
    assert gdp_epsilon(mu, delta) == pytest.approx(eps, abs=1e-6)
    assert gdp_mu(eps, delta) == pytest.approx(mu, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(0.01, 8.0), eps2=st.floats(0.0, 8.0))
def test_dp_tradeoff_delta_formula_and_inverse(eps, eps2):
    f = dp_tradeoff(eps)
    expected = max(0.0, (math.exp(eps) - math.exp(eps2)) / (1 + math.exp(eps)))
    assert f.delta(eps2) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    if expected > 1e-12:
        assert f.epsilon(expected) == pytest.approx(eps2, abs=1e-7)


def test_dp_tradeoff_closed_form():
    for eps, dl in [(0.0, 0.0), (1.0, 0.0), (1.0, 0.1), (20.0, 1e-6)]:
        f = dp_tradeoff(eps, dl)
        closed = np.maximum.reduce(
            [np.zeros_like(ALPHA), 1 - dl - math.exp(eps) * ALPHA, math.exp(-eps) * (1 - dl - ALPHA)]
        )
        assert np.allclose(f(ALPHA), closed, atol=1e-12)


def test_dp_tradeoff_mu_is_mu_eps():
    for eps in (0.5, 1.0, 2.0):
        assert dp_tradeoff(eps).gdp_mu() == pytest.approx(dp_to_gdp_mu(eps), rel=1e-12)
    assert dp_tradeoff(1.0, 1e-3).gdp_mu() == math.inf  # δ > 0: f(0) < 1, no Gaussian bound


def test_gaussian_curve_is_the_normal_test():
    mu = 1.5
    g = GaussianTradeoff(mu)
    assert np.allclose(g(ALPHA), norm.cdf(norm.ppf(1 - ALPHA) - mu), atol=1e-12)
    assert g.compose(GaussianTradeoff(2.0)).mu == pytest.approx(2.5)


def test_identity_and_bad_alpha():
    assert np.allclose(identity_tradeoff()(ALPHA), 1 - ALPHA)
    assert identity_tradeoff().gdp_mu() == 0.0
    with pytest.raises(ParameterError):
        GaussianTradeoff(1.0)(1.5)
    with pytest.raises(ParameterError):
        GaussianTradeoff(-1.0)


# -- properties of trade-off functions on random instances -----------------
def _random_pair(draw_p, draw_q):
    p = np.asarray(draw_p, dtype=float)
    q = np.asarray(draw_q, dtype=float)
    return PrivacyLoss.from_probabilities(p / p.sum(), q / q.sum())


weights = st.lists(st.floats(0.01, 1.0), min_size=2, max_size=7)


def _check_tradeoff_properties(curve, tol=1e-9):
    beta = curve(ALPHA)
    assert np.all(beta >= -tol) and np.all(beta <= 1 - ALPHA + tol), "f(α) ≤ 1 − α"
    assert np.all(np.diff(beta) <= tol), "non-increasing"
    second = beta[:-2] - 2 * beta[1:-1] + beta[2:]
    assert np.all(second >= -1e-7), "convex"
    # continuous: no jump larger than the steepest slope allows
    slopes = np.abs(np.diff(beta)) / np.diff(ALPHA)
    assert np.all(np.abs(np.diff(beta)) <= slopes.max() * np.diff(ALPHA) + tol)
    assert abs(curve(0.999999) - curve(1.0)) < 1e-3 or curve(1.0) == 0.0


@settings(max_examples=60, deadline=None)
@given(p=weights, q=weights)
def test_exact_curves_are_tradeoff_functions(p, q):
    n = min(len(p), len(q))
    pair = _random_pair(p[:n], q[:n])
    curve = pair.tradeoff()
    _check_tradeoff_properties(curve)
    # vertices convex: slopes non-decreasing
    da, db = np.diff(curve.alpha), np.diff(curve.beta)
    keep = da > 1e-12
    slopes = db[keep] / da[keep]
    assert np.all(np.diff(slopes) >= -1e-6 * (1 + np.abs(slopes[1:])))


@settings(max_examples=30, deadline=None)
@given(mu=st.floats(0.0, 6.0))
def test_gaussian_curves_are_tradeoff_functions(mu):
    _check_tradeoff_properties(GaussianTradeoff(mu))


@settings(max_examples=30, deadline=None)
@given(eps=st.floats(0.0, 6.0), dl=st.floats(0.0, 0.5))
def test_dp_curves_are_tradeoff_functions(eps, dl):
    _check_tradeoff_properties(dp_tradeoff(eps, dl))


@settings(max_examples=60, deadline=None)
@given(p=weights, q=weights)
def test_exact_curve_dominates_its_pure_epsilon_bound(p, q):
    # every pair with max |loss| = ε is ε-DP: T(P, Q) ≥ f_{ε,0}; and ε is tight (Q/P reaches e^ε)
    n = min(len(p), len(q))
    pair = _random_pair(p[:n], q[:n])
    eps = pair.pure_epsilon
    curve = pair.tradeoff()
    assert np.all(curve(ALPHA) >= dp_tradeoff(eps)(ALPHA) - 1e-12)
    assert curve.delta(eps) <= 1e-12
    if eps > 1e-6:
        assert curve.delta(eps * (1 - 1e-6)) > 0 or pair.swap().tradeoff().delta(eps * (1 - 1e-6)) > 0


@settings(max_examples=60, deadline=None)
@given(p=weights, q=weights, eps=st.floats(-3.0, 5.0))
def test_conjugate_delta_equals_hockey_stick(p, q, eps):
    # δ from the curve's convex conjugate = H_{e^ε}(Q‖P) from the atoms (two computations)
    n = min(len(p), len(q))
    pair = _random_pair(p[:n], q[:n])
    assert pair.tradeoff().delta(eps) == pytest.approx(pair.swap().hockey_stick(eps)[0], rel=1e-9, abs=1e-14)


@settings(max_examples=40, deadline=None)
@given(p=weights, q=weights)
def test_gdp_mu_of_curve_is_tight(p, q):
    n = min(len(p), len(q))
    curve = _random_pair(p[:n], q[:n]).tradeoff()
    mu = curve.gdp_mu()
    if not math.isfinite(mu) or mu == 0:
        return
    assert np.all(GaussianTradeoff(mu)(curve.alpha) <= curve.beta + 1e-9)
    assert np.any(GaussianTradeoff(mu * 0.999)(curve.alpha) > curve.beta)  # a smaller μ fails


def test_tangent_envelope_is_a_lower_bound_touching_the_curve():
    exact = PrivacyLoss.binomial(0.7, 12)
    eps = np.linspace(-8.4, 8.4, 301)
    env = PiecewiseLinearTradeoff.from_tangent_lines(eps, exact.swap().hockey_stick(eps))
    truth = exact.tradeoff()
    assert np.all(env(ALPHA) <= truth(ALPHA) + 1e-12)
    assert np.max(truth(ALPHA) - env(ALPHA)) < 5e-3
    for e in (0.0, 1.0, 3.0):
        assert env.delta(e) == pytest.approx(truth.delta(e), rel=1e-6, abs=1e-12)


# -- δ = 0: the exact pure ε, never a search bound ----------------------------------
@settings(max_examples=60, deadline=None)
@given(p=weights, q=weights)
def test_epsilon_at_delta_zero_is_the_largest_privacy_loss(p, q):
    """At δ = 0 a curve's ε is its exact max |ln P/Q| (the search used to stop at max loss + 1)."""
    n = min(len(p), len(q))
    pair = _random_pair(p[:n], q[:n])
    direct = max(
        abs(math.log(a / b)) for a, b in zip(np.asarray(p[:n]) / sum(p[:n]), np.asarray(q[:n]) / sum(q[:n]))
    )
    assert pair.epsilon(0.0) == pytest.approx(direct, rel=1e-12, abs=1e-12)
    # the curve of (Q, P) from its vertices: δ(ε) = H_{e^ε}(P‖Q) is one-sided
    assert pair.swap().tradeoff().epsilon(0.0) == pytest.approx(pair.max_loss, rel=1e-12, abs=1e-12)
    curve = pair.tradeoff()
    pure = curve.epsilon(0.0)
    assert curve.delta(pure) == 0.0
    if pure > 1e-6:
        assert curve.delta(pure * (1 - 1e-6)) > 0  # the smallest such ε


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_pure_curves_give_their_epsilon_at_delta_zero(eps):
    assert dp_tradeoff(eps).epsilon(0.0) == pytest.approx(eps, rel=1e-12)
    assert PrivacyLoss.randomized_response(eps).epsilon(0.0) == pytest.approx(eps, rel=1e-12)
    assert math.isinf(dp_tradeoff(eps, 1e-3).epsilon(0.0))  # f_(ε,δ) with δ > 0 is not pure DP


def test_gdp_has_no_finite_epsilon_at_delta_zero():
    """μ-GDP is (ε, δ_μ(ε))-DP with δ_μ(ε) > 0 at every ε: no finite ε at δ = 0 (it used to print 41)."""
    for mu in (0.1, 1.0, 5.0):
        assert math.isinf(gdp_epsilon(mu, 0.0))
        assert math.isinf(GaussianTradeoff(mu).epsilon(0.0))
    assert gdp_epsilon(0.0, 0.0) == 0.0  # μ = 0: no information at all


# -- no NaN or overflow ever becomes a figure (issue 24) ------------------------------------
def test_a_nan_vertex_is_refused():
    with pytest.raises(ParameterError, match="not a finite probability"):
        PiecewiseLinearTradeoff([-np.inf, np.nan, 0.0], [0.0, -1.0, -np.inf], [-np.inf, -1.0, 0.0])
    with pytest.raises(ParameterError, match="NaN"):
        PrivacyLoss([0.0, np.nan], [np.nan, 0.0], check=False)


def test_lazy_product_curve_beyond_the_exponent_range_is_finite():
    # two pairs whose losses lie on no common lattice, with losses beyond e^709: the tangent
    # envelope took e^ε of every grid point, overflowed, and its NaN vertices printed ε = 0, μ = inf
    from ldp.privacy.loss import ProductLoss

    a = PrivacyLoss.from_probabilities([0.5, 0.3, 0.2], [1e-120, 0.5, 0.5 - 1e-120]).self_compose(3)
    b = PrivacyLoss.from_probabilities([0.6, 0.4], [0.25, 0.75]).self_compose(50)
    product = a.compose(b, max_atoms=100)
    assert isinstance(product, ProductLoss) and product.max_loss > 709
    with np.errstate(over="raise", invalid="raise"):
        curve = product.tradeoff()
    assert np.all(np.isfinite(curve.beta)) and np.all(np.isfinite(curve.alpha))
    # a sound lower bound of T(P, Q): its δ(ε) is at least the exact H_{e^ε}(Q‖P) everywhere
    grid = np.linspace(0.0, 900.0, 91)
    assert np.all(curve.delta(grid) >= product.swap().hockey_stick(grid) - 1e-12)
    assert math.isfinite(curve.epsilon(1e-6)) and not math.isnan(curve.gdp_mu())


def test_largest_mu_is_found_for_any_finite_epsilon():
    # a fixed search cap (μ ≤ 1e6) answered "mu <= inf" from ε ≈ 5e11: every mechanism, which is false
    mu = gdp_mu(1e12, 1e-6)
    assert math.isfinite(mu) and mu == pytest.approx(math.sqrt(2e12), rel=1e-3)
    assert gdp_delta(mu, 1e12) <= 1e-6 < gdp_delta(mu * 1.001, 1e12)
    zero = dp_to_gdp_mu(1e-300)
    assert zero == 0.0 and math.copysign(1.0, zero) == 1.0  # printed "mu = -0" before


def test_epsilon_with_infinite_loss_atoms_beyond_the_old_bracket():
    # an atom possible under P only (loss +inf, mass 1e-9) and one of finite loss 2e4: the search
    # bracket was fixed at 1e4, so the answer came out inf although δ(ε) ≤ 1e-6 from ε ≈ 2e4 on
    log_p = np.log([1e-9, 0.5, 0.5 - 1e-9])
    log_q = np.array([-np.inf, math.log(0.5) - 2e4, math.log1p(-0.5 * math.exp(-2e4))])
    loss = PrivacyLoss(log_p, log_q)
    eps = loss.epsilon(1e-6)
    assert eps == pytest.approx(2e4 + math.log1p(-2 * (1e-6 - 1e-9)), abs=1e-6)
    assert loss.delta(eps) <= 1e-6
