"""Exact Neyman–Pearson curves of the mechanism specs (docs/accounting.md#mechanism-curves)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import frequency_specs, rappor_specs

import ldp
from ldp.errors import ParameterError
from ldp.privacy.composition import optimal_composition
from ldp.privacy.conversions import dp_to_gdp_mu
from ldp.privacy.loss import PrivacyLoss
from ldp.privacy.mechanisms import mechanism_loss, mechanism_tradeoff, per_report_gdp_mu, tradeoff_summary
from ldp.privacy.tradeoff import GaussianTradeoff, dp_tradeoff
from ldp.specs import numeric_spec

ALPHA = np.linspace(0.0, 1.0, 1001)
SPECS = frequency_specs(1.0) + frequency_specs(3.0, tuple(range(40))) + rappor_specs()


def _ids(spec):
    return f"{spec.mechanism}-{getattr(spec, 'encoding', '')}-{spec.fingerprint[:6]}"


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_single_report_curve_is_exact_and_tight(spec):
    loss = mechanism_loss(spec)
    curve = loss.tradeoff()
    eps = spec.epsilon_achieved if hasattr(spec, "epsilon_achieved") else spec.epsilon_one
    # the worst pair's largest likelihood ratio is exactly the spec's ratio: the ε claim is tight
    assert loss.pure_epsilon == pytest.approx(eps, rel=1e-12)
    # and the curve dominates the generic ε-DP bound f_{ε,0} ...
    assert np.all(curve(ALPHA) >= dp_tradeoff(eps)(ALPHA) - 1e-12)
    # ... while no looser ε' < ε bound holds: δ(ε') > 0
    assert curve.delta(eps * (1 - 1e-6)) > 0
    assert loss.is_symmetric()
    # it is a trade-off function of a pair of distributions: α, β end at 1 and 0
    assert curve.alpha[-1] == pytest.approx(1.0) and curve.beta[-1] == 0.0


def test_binary_rr_curve_is_f_eps_0():
    spec = ldp.BinaryRR(epsilon=1.5)
    curve = mechanism_tradeoff(spec)
    assert np.allclose(curve(ALPHA), dp_tradeoff(spec.epsilon_achieved)(ALPHA), atol=1e-14)
    assert per_report_gdp_mu(spec) == pytest.approx(dp_to_gdp_mu(spec.epsilon_achieved), rel=1e-12)


def test_grr_has_three_segments():
    spec = ldp.GRR(domain=tuple(range(6)), epsilon=1.0)
    curve = mechanism_tradeoff(spec)
    assert curve.alpha.size == 4  # (0,1), two kinks, (1,0): LRs e^ε, 1, e^−ε
    p, q = float(spec.p), float(spec.q)
    assert curve.alpha[1] == pytest.approx(q) and curve.beta[1] == pytest.approx(1 - p)


def test_oue_is_the_product_of_two_bit_curves():
    spec = ldp.OUE(domain=tuple(range(4)), epsilon=1.0)
    p, q = float(spec.p), float(spec.q)
    # outputs of the two differing bits (b_x, b_x'): P = Bern(p)×Bern(q), Q = Bern(q)×Bern(p)
    P = np.array([(1 - p) * (1 - q), (1 - p) * q, p * (1 - q), p * q])
    Q = np.array([(1 - q) * (1 - p), (1 - q) * p, q * (1 - p), q * p])
    order = np.argsort(-(Q / P), kind="stable")
    alpha = np.r_[0, np.cumsum(P[order])]
    beta = 1 - np.r_[0, np.cumsum(Q[order])]
    assert np.allclose(mechanism_tradeoff(spec)(ALPHA), np.interp(ALPHA, alpha, beta), atol=1e-12)


def test_olh_collisions_only_help():
    spec = ldp.OLH(domain=tuple(range(50)), epsilon=2.0)
    grr_on_g = ldp.GRR(domain=tuple(range(spec.g)), epsilon=spec.epsilon, p=spec.p)
    assert np.all(mechanism_tradeoff(spec)(ALPHA) >= mechanism_tradeoff(grr_on_g)(ALPHA) - 1e-12)


def test_k_fresh_reports_compose():
    spec = ldp.GRR(domain=tuple(range(5)), epsilon=0.5)
    single = mechanism_loss(spec)
    five = mechanism_loss(spec, 5)
    explicit = single.compose(single).compose(single).compose(single).compose(single)
    grid = np.linspace(0, 2.5, 6)
    assert np.allclose(five.delta(grid), explicit.delta(grid), rtol=1e-9, atol=1e-15)
    # the mechanism's own curve is tighter than the worst case f_{ε,0}^{⊗k}
    from ldp.privacy.composition import optimal_composition

    assert five.epsilon(1e-6) <= optimal_composition(spec.epsilon_achieved, 5, 1e-6) + 1e-9
    with pytest.raises(ParameterError):
        mechanism_loss(spec, math.inf)


RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")


def test_rappor_formulas_example():
    # docs/mechanisms.md#rappor-epsilon: h=2, f=0.5, p=0.5, q=0.75 → ε∞ = 4 ln 3, ε₁ = 1.07429
    assert mechanism_loss(RAPPOR, 1).pure_epsilon == pytest.approx(1.07429, abs=5e-6)
    assert mechanism_loss(RAPPOR, math.inf).pure_epsilon == pytest.approx(4 * math.log(3), rel=1e-12)


def test_rappor_reports_of_a_memoized_value_tend_to_the_prr_curve():
    prr = mechanism_tradeoff(RAPPOR, math.inf)(ALPHA)
    previous = mechanism_tradeoff(RAPPOR, 1)(ALPHA)
    for r in (2, 5, 20, 80):
        now = mechanism_tradeoff(RAPPOR, r)(ALPHA)
        assert np.all(now <= previous + 1e-9), "more reports reveal more"
        assert np.all(now >= prr - 1e-9), "never more than the PRR (post-processing)"
        previous = now
    assert np.max(previous - prr) < 0.02  # deterministic: at r = 80 the IRR noise hides almost nothing
    # the r-report curve is also above f_{ε∞,0}
    assert mechanism_loss(RAPPOR, 80).epsilon(1e-6) <= RAPPOR.epsilon_inf + 1e-9


@pytest.mark.parametrize("spec", [s for s in rappor_specs() if s.f > 0], ids=_ids)
def test_r_reports_of_a_memoized_value_are_r_epsilon_one_dp(spec):
    """The budget ledger's claim (ldp.privacy.budget): r reports of one value are min(r·ε₁, ε∞)-DP, exactly checked."""
    for r in range(1, 13):
        pure = mechanism_loss(spec, r).pure_epsilon
        assert pure <= min(r * spec.epsilon_one, spec.epsilon_inf) * (1 + 1e-12) + 1e-12
    assert mechanism_loss(spec, 1).pure_epsilon == pytest.approx(spec.epsilon_one, rel=1e-12)


def test_rappor_large_r_uses_the_lazy_product_soundly():
    loss = mechanism_loss(RAPPOR, 40, max_atoms=10_000)
    exact = mechanism_loss(RAPPOR, 40)
    assert type(loss).__name__ == "ProductLoss"
    assert loss.epsilon(1e-6) == pytest.approx(exact.epsilon(1e-6), abs=1e-7)
    assert np.all(loss.tradeoff()(ALPHA) <= exact.tradeoff()(ALPHA) + 1e-9)


def test_one_time_rappor_has_no_prr_curve():
    spec = ldp.Rappor(num_bits=8, num_hashes=1, f=0, p="1/4", q="3/4")
    with pytest.raises(ParameterError):
        mechanism_loss(spec, math.inf)
    # without a PRR, r reports of one value are r fresh reports
    single = mechanism_loss(spec, 1)
    assert mechanism_loss(spec, 3).epsilon(1e-6) == pytest.approx(
        single.self_compose(3).epsilon(1e-6), abs=1e-9
    )


@pytest.mark.parametrize("spec", SPECS, ids=_ids)
def test_gdp_mu_bounds_the_curve(spec):
    mu = per_report_gdp_mu(spec)
    curve = mechanism_tradeoff(spec)
    assert math.isfinite(mu) and mu > 0
    assert np.all(GaussianTradeoff(mu)(ALPHA) <= curve(ALPHA) + 1e-9)
    eps = mechanism_loss(spec).pure_epsilon
    assert mu <= dp_to_gdp_mu(eps) + 1e-9  # never worse than the generic ε-DP ⇒ GDP bound


def test_tradeoff_summary():
    out = tradeoff_summary(RAPPOR)
    assert set(out) == {"epsilon", "gdp_mu", "exact", "epsilon_inf", "gdp_mu_inf"}
    assert out["gdp_mu"] < out["gdp_mu_inf"] and out["exact"]
    assert set(tradeoff_summary(ldp.OUE(domain=(1, 2, 3), epsilon=1.0))) == {"epsilon", "gdp_mu", "exact"}


def test_bad_reports():
    with pytest.raises(ParameterError):
        mechanism_loss(RAPPOR, 0)
    with pytest.raises(ParameterError):
        mechanism_loss(RAPPOR, 2.5)


NUMERIC = [
    numeric_spec(m, eps, 0, 100, **({"grid": 16} if m in ("laplace", "piecewise", "hybrid") else {}))
    for m in ("duchi", "stochastic-rounding", "laplace", "piecewise", "hybrid")
    for eps in (0.5, 2.0)
]


@pytest.mark.parametrize("spec", NUMERIC, ids=lambda s: f"{s.mechanism}-{s.epsilon}")
def test_numeric_curve_is_f_eps_0_at_the_achieved_epsilon(spec):
    """Two-point mechanisms: binary RR between the inputs ±1 (exact); grid tables: the sound f_{ε,0} bound."""
    curve = mechanism_tradeoff(spec)
    assert np.allclose(curve(ALPHA), dp_tradeoff(spec.epsilon_achieved)(ALPHA), atol=1e-12)
    exact = spec.mechanism in ("duchi", "stochastic-rounding")
    assert tradeoff_summary(spec)["exact"] is exact
    assert ("bound from its pure epsilon" in curve.label) is not exact
    # k fresh reports compose like f_{ε,0}^{⊗k}: the optimal (KOV) composition
    assert mechanism_loss(spec, 50).epsilon(1e-6) == pytest.approx(
        optimal_composition(spec.epsilon_achieved, 50, 1e-6), rel=1e-6
    )


@pytest.mark.parametrize(
    "spec",
    [s for s in NUMERIC if s.mechanism in ("laplace", "piecewise")],
    ids=lambda s: f"{s.mechanism}-{s.epsilon}",
)
def test_grid_bound_lies_below_the_exact_curve_of_the_extreme_inputs(spec):
    table = spec.table
    low, high = table.row(0).astype(float), table.row(table.K).astype(float)
    exact = PrivacyLoss(np.log(low / table.total), np.log(high / table.total)).tradeoff()
    assert np.all(exact(ALPHA) >= mechanism_tradeoff(spec)(ALPHA) - 1e-12)


def test_gaussian_has_no_pure_epsilon_curve():
    with pytest.raises(ParameterError, match="mu-GDP"):
        mechanism_loss(numeric_spec("gaussian", 1.0, 0, 1, delta=1e-5))


# -- many reports: lattice pairs kept in windows (issue 24, item 1) ---------------------
def _oue(epsilon: float = 1.0):
    return ldp.OUE(epsilon=epsilon, domain=["a", "b", "c", "d"])


@pytest.mark.parametrize("reports", [1500, pytest.param(3000, marks=pytest.mark.slow)])
def test_oue_curve_beyond_the_explicit_product_is_finite_and_exact(reports):
    # from 1,415 reports the OUE product exceeds 2,000,000 atoms; it printed epsilon 0 and mu inf
    spec = _oue()
    windowed = mechanism_loss(spec, reports)
    explicit = mechanism_loss(spec, reports, max_atoms=(reports + 1) ** 2)  # the exact outer product
    grid = np.linspace(0.0, 0.7 * reports, 15)
    exact = explicit.delta(grid)
    got = windowed.delta(grid)
    # sound (never below the exact δ) and within the 1e-29 of mass the windows leave out; 1e-8
    # relative: the explicit product merges atoms whose losses agree to 1e-9 (MERGE_TOLERANCE)
    assert np.all(got >= exact * (1 - 1e-8))
    assert np.allclose(got, exact, rtol=1e-8, atol=1e-28)
    curve = mechanism_tradeoff(spec, reports)
    eps = curve.epsilon(1e-6)
    assert eps == pytest.approx(explicit.epsilon(1e-6), rel=1e-8)
    assert 0 < eps < reports and math.isfinite(curve.gdp_mu())
    # μ of a windowed pair is the sound composition bound, never below the true tightest μ
    assert curve.gdp_mu() >= explicit.tradeoff().gdp_mu() - 1e-9


def test_oue_composition_agrees_with_dp_accounting():
    """Independent check: Google's dp-accounting PLD (both of its discretizations) brackets the exact value."""
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    spec, reports, interval = _oue(), 1500, 1e-3

    def composed(pessimistic: bool):
        one = None
        for piece in spec.privacy_pieces(1):
            part = pld_module.from_two_probability_mass_functions(
                dict(enumerate(piece.log_p)),
                dict(enumerate(piece.log_q)),
                pessimistic_estimate=pessimistic,
                value_discretization_interval=interval,
            )
            one = part if one is None else one.compose(part)
        result, base, k = None, one, reports
        while k:  # repeated squaring (its self_compose overflows in the FFT power at this size)
            if k & 1:
                result = base if result is None else result.compose(base)
            k >>= 1
            if k:
                base = base.compose(base)
        return result.get_epsilon_for_delta(1e-6)

    ours = mechanism_loss(spec, reports).epsilon(1e-6)
    low, high = composed(False), composed(True)
    assert low <= ours <= high
    assert high - low <= 2 * reports * interval + 1e-6


def test_lattice_mechanisms_cost_grows_with_the_square_root_of_reports():
    # GRR's three-atom pair: 20,000 reports used to be a 40,001-atom log-space convolution (O(k^2))
    spec = ldp.GRR(epsilon=1.0, domain=["a", "b", "c"])
    loss = mechanism_loss(spec, 20_000)
    assert loss.size < 50 * math.sqrt(20_000) and 0 < loss.tail <= 1e-29
    # windows against the exact explicit product at 1,400 reports (4,200 lattice points: windowed)
    half = mechanism_loss(spec, 700)
    assert half.tail == 0  # below the window threshold: exact
    explicit = half.compose(half, max_atoms=5_000_000)
    windowed = mechanism_loss(spec, 1_400)
    assert windowed.tail > 0
    assert windowed.epsilon(1e-6) == pytest.approx(explicit.epsilon(1e-6), rel=1e-8)
    grid = np.linspace(0.0, 1000.0, 16)
    assert np.allclose(windowed.delta(grid), explicit.delta(grid), rtol=1e-8, atol=1e-28)


def test_reports_beyond_the_stated_bound_are_refused():
    spec = _oue()
    with pytest.raises(ParameterError, match="at most 1e\\+06 reports"):
        mechanism_loss(spec, 10**6 + 1)
