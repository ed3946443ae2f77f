"""Numeric specs: exact ε on the grid, float-attack regression, calibration, validation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import ldp
from ldp import numeric_math as nm
from ldp.client import make_encoder
from ldp.errors import ParameterError, ReportError
from ldp.exact import exp_lower_bound
from ldp.report import Report
from ldp.report_check import check_report
from ldp.specs.numeric import NUMERIC_MECHANISMS, best_numeric_mechanism, numeric_spec

EPSILONS = (0.1, 1.0, 8.0)


def _brute_force_ratio(spec) -> Fraction:
    """max over grid inputs i, i' and outputs j of P[j|i]/P[j|i'] from the dense integer table."""
    if isinstance(spec, (ldp.Duchi, ldp.StochasticRounding)):
        rows = [[spec.p, 1 - spec.p], [1 - spec.p, spec.p]]
    else:
        dense = spec.table.dense()
        rows = [[Fraction(int(w), spec.table.total) for w in row] for row in dense]
    best = Fraction(0)
    for j in range(len(rows[0])):
        column = [row[j] for row in rows]
        assert min(column) > 0
        best = max(best, max(column) / min(column))
    return best


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("name", ["duchi", "stochastic-rounding", "piecewise", "laplace"])
def test_exact_epsilon_on_grid(name, epsilon):
    grid = 8 if name == "laplace" else 16
    spec = numeric_spec(name, epsilon, 0.0, 10.0, grid=grid)
    ratio = _brute_force_ratio(spec) if name != "laplace" or epsilon > 0.5 else spec.privacy_ratio
    assert ratio == spec.privacy_ratio
    # the achieved ε is the claim (up to the calibration toward privacy) and never above it
    assert ratio <= exp_lower_bound(epsilon)
    assert spec.epsilon_achieved == pytest.approx(epsilon, abs=1e-6)
    # ... and it fails just above: the ratio is not within a slightly smaller ε
    assert not ratio <= exp_lower_bound(epsilon - 1e-5)


def test_exact_epsilon_laplace_brute_force_small_epsilon():
    spec = ldp.Laplace(epsilon=0.5, grid=4)
    assert _brute_force_ratio(spec) == spec.privacy_ratio
    assert spec.epsilon_achieved <= 0.5


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_exact_epsilon_hybrid(epsilon):
    spec = ldp.Hybrid(epsilon=epsilon, grid=16)
    duchi = spec.duchi
    expected = _brute_force_ratio(duchi)
    if spec.alpha > 0:
        expected = max(expected, _brute_force_ratio(ldp.Piecewise(epsilon=epsilon, grid=16)))
    assert spec.privacy_ratio == expected
    assert spec.epsilon_achieved <= epsilon


def test_hm_switch_and_alpha():
    assert pytest.approx(0.60935, abs=1e-5) == nm.HM_EPSILON_STAR
    assert ldp.Hybrid(epsilon=0.5).alpha == 0
    assert float(ldp.Hybrid(epsilon=2).alpha) == pytest.approx(1 - math.exp(-1), abs=1e-9)


@pytest.mark.parametrize("name", ["piecewise", "hybrid", "laplace", "gaussian"])
def test_output_support_does_not_depend_on_input(name):
    """Float-attack regression: every output has positive probability for every input."""
    spec = numeric_spec(name, 1.0, 0.0, 1.0, grid=8, delta=1e-5)
    dense = spec.table.dense()
    supports = {tuple(np.flatnonzero(row > 0)) for row in dense}
    assert len(supports) == 1
    assert len(supports.pop()) == spec.table.num_outputs


@pytest.mark.parametrize("name", list(NUMERIC_MECHANISMS))
def test_client_outputs_stay_in_the_fixed_support(name):
    spec = numeric_spec(name, 1.0, 0.0, 100.0, grid=16, delta=1e-5)
    encoder = make_encoder(spec)
    outputs_a = {encoder.encode(0.0).value for _ in range(400)}
    outputs_b = {encoder.encode(100.0).value for _ in range(400)}
    for v in outputs_a | outputs_b:
        assert spec.in_support(v)
    if name in ("duchi", "stochastic-rounding"):  # two-point: both inputs reach both outputs
        assert outputs_a == outputs_b == set(spec.support.tolist())
    else:  # a continuous input maps into the same finite set, not to input-dependent floats
        mid = {encoder.encode(33.3333333).value for _ in range(400)}
        assert all(spec.in_support(v) for v in mid)


def test_gaussian_calibration_matches_analytic_values():
    assert nm.analytic_gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(3.7306, abs=1e-4)
    assert nm.analytic_gaussian_sigma(0.5, 1e-5, 1.0) == pytest.approx(7.0318, abs=1e-4)
    assert 1.0 / nm.analytic_gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(0.26805, abs=1e-5)
    assert nm.classic_gaussian_sigma(0.5, 1e-5, 1.0) == pytest.approx(9.6896, abs=1e-4)
    with pytest.raises(ParameterError):
        nm.classic_gaussian_sigma(1.0, 1e-5)
    spec = ldp.Gaussian(epsilon=1.0, delta=1e-5)
    assert spec.sigma == pytest.approx(2 * 3.7306, rel=2e-3)  # Δ = 2 on [−1, 1]
    assert spec.delta_achieved <= 1e-5
    assert spec.delta_achieved == pytest.approx(1e-5, rel=0.05)


@pytest.mark.parametrize("name", list(NUMERIC_MECHANISMS))
def test_json_round_trip_and_fingerprint(name):
    spec = numeric_spec(name, 2.0, -5, 20, grid=32, delta=1e-6)
    again = ldp.load_spec(spec.to_json())
    assert again == spec and again.fingerprint == spec.fingerprint
    assert spec.low == -5.0 and spec.high == 20.0


def test_validation_errors():
    with pytest.raises(ParameterError, match="low < high"):
        ldp.Piecewise(epsilon=1, low=3, high=3)
    with pytest.raises(ParameterError, match="epsilon"):
        ldp.Laplace(epsilon=-1)
    with pytest.raises(ParameterError, match="grid"):
        ldp.Laplace(epsilon=1, grid=0)
    with pytest.raises(ParameterError, match="delta"):
        ldp.Gaussian(epsilon=1, delta=2)
    with pytest.raises(ParameterError, match="low"):
        ldp.Duchi(epsilon=1, low=float("nan"))
    encoder = make_encoder(ldp.Duchi(epsilon=1, low=0, high=1))
    for bad in (float("nan"), "abc", None, float("inf"), True):
        with pytest.raises(ParameterError):
            encoder.encode(bad)


def test_clipping():
    spec = ldp.Duchi(epsilon=1, low=0, high=10)
    assert spec.unit_position(-5) == 0.0 and spec.unit_position(50) == 1.0
    # text is not a number (issue 24): a values file's text is parsed by its reader first
    with pytest.raises(ldp.errors.ParameterError, match="parse text first"):
        spec.unit_position("2.5")
    assert spec.unit_position(ldp.specs.numeric.parse_numeric_text("2.5")) == 0.25


def test_auto_uses_worst_case_variances():
    assert best_numeric_mechanism(0.5) == "duchi"  # HM = Duchi below ε*: the cheaper report wins ties
    assert best_numeric_mechanism(2.0) == "hybrid"
    table = ldp.specs.numeric.numeric_variance_table(1.0)
    assert table["laplace"] == pytest.approx(8.0)
    assert table["duchi"] == pytest.approx(4.683, abs=1e-3)
    assert table["piecewise"] == pytest.approx(5.224, abs=1e-3)
    assert table["hybrid"] == pytest.approx(4.289, abs=1e-3)
    assert isinstance(numeric_spec("auto", 4.0), ldp.Hybrid)


def test_report_check_rejects_values_outside_the_support():
    spec = ldp.Piecewise(epsilon=1, grid=16)
    good = Report(spec=spec.fingerprint, value=float(spec.support[3]))
    assert check_report(spec, good).value == spec.support[3]
    with pytest.raises(ReportError, match="not an output"):
        check_report(spec, Report(spec=spec.fingerprint, value=float(spec.support[3]) + 1e-9))
    with pytest.raises(ReportError, match="finite"):
        check_report(spec, Report(spec=spec.fingerprint, value="x"))


def test_budget_ledger_refuses_gaussian(tmp_path):
    from ldp.privacy.budget import Budget

    gaussian = make_encoder(
        ldp.Gaussian(epsilon=1, delta=1e-5, grid=8), ledger=tmp_path / "l.json", budget=Budget(epsilon=4)
    )
    with pytest.raises(
        ParameterError, match="delta"
    ):  # the pure-ε ledger cannot account for δ: nothing is sent
        gaussian.encode(0.5)
    encoder = make_encoder(ldp.Duchi(epsilon=1), ledger=tmp_path / "d.json", budget=Budget(epsilon=2))
    encoder.encode(0.5)
    encoder.encode(0.5)
    with pytest.raises(ldp.BudgetExceededError):
        encoder.encode(0.5)


@pytest.mark.parametrize(
    "spec", [ldp.Duchi(epsilon=1.0), ldp.Piecewise(epsilon=1.0, grid=4)], ids=["duchi", "pm"]
)
def test_empirical_privacy_through_the_csprng_client(spec):
    """Observed output frequencies of the two extreme inputs respect e^ε (one-sided, α = 1e-6 per output)."""
    from scipy.stats import norm

    z = float(norm.ppf(1 - 1e-6))
    n = 20_000
    encoder = make_encoder(spec)
    freq = {}
    for x in (spec.low, spec.high):
        outputs = np.array([encoder.sample_native(x) for _ in range(n)])
        idx, ok = spec.support_index(outputs)
        assert ok.all()
        freq[x] = np.bincount(idx, minlength=spec.support.size) / n
    e = math.exp(spec.epsilon)
    for a, b in ((spec.low, spec.high), (spec.high, spec.low)):
        pa, pb = freq[a], freq[b]
        se = np.sqrt(pa * (1 - pa) / n + e * e * pb * (1 - pb) / n)
        assert np.all(pa - e * pb <= z * se + 1e-12)


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (0.5, 1e-3), (4.0, 1e-8)])
def test_gaussian_delta_is_the_worst_pair_on_the_grid(epsilon, delta):
    """δ(ε) over *all* grid input pairs of the integer table equals delta_achieved (≤ δ)."""
    spec = ldp.Gaussian(epsilon=epsilon, delta=delta, grid=8)
    dense = spec.table.dense().astype(np.float64) / spec.table.total
    e = math.exp(epsilon)
    worst = max(np.clip(dense[i] - e * dense[j], 0, None).sum() for i in range(9) for j in range(9))
    assert worst == pytest.approx(spec.delta_achieved, rel=1e-9)
    assert spec.delta_achieved <= delta


@pytest.mark.parametrize(
    ("name", "i"),  # the grid's two ends and an inside row; the fast set keeps one row of each sampler
    [
        ("piecewise", 77),
        ("laplace", 0),
        pytest.param("laplace", 77, marks=pytest.mark.slow),
        pytest.param("laplace", 256, marks=pytest.mark.slow),
        *(
            pytest.param(name, i, marks=pytest.mark.slow)
            for name, i in [
                ("piecewise", 0),
                ("piecewise", 256),
                ("hybrid", 0),
                ("hybrid", 77),
                ("hybrid", 256),
            ]
        ),
    ],
)
def test_secure_batch_draws_each_grid_row_exactly(name, i):
    """A secure batch (CSPRNG, ≥ ECONOMY_MIN_DRAWS values: the bit samplers, a PM band by a coin and a uniform
    cell, a noise cell by lazy inversion) of grid input i against the exact integer row: χ² at α = 1e-6.

    v = i/K on [0, 1] is on the grid, so no rounding coin is drawn. Hybrid's row mixes the PM row (α) with
    the Duchi part's two outputs, whose input is t_i.
    """
    from scipy import stats

    from ldp.client import SystemRandomSource
    from ldp.client.bits import ECONOMY_MIN_DRAWS
    from ldp.client.numeric import encode_numeric_batch

    spec = numeric_spec(name, 1.0, low=0.0, high=1.0)
    table = spec.table
    n = 2 * ECONOMY_MIN_DRAWS
    out = encode_numeric_batch(spec, np.full(n, i / table.K), SystemRandomSource()).values
    outputs = table.outputs.tolist()
    probability = {y: Fraction(int(w), table.total) for y, w in zip(outputs, table.row(i).tolist())}
    if name == "hybrid":  # P[PM] = α; the Duchi part: side 1 w.p. i/K, kept with p
        duchi, alpha = spec.duchi, Fraction(spec.alpha)
        probability = {y: alpha * q for y, q in probability.items()}
        high = Fraction(i, table.K) * duchi.p + (1 - Fraction(i, table.K)) * (1 - duchi.p)
        low_y, high_y = duchi.support.tolist()
        for y, q in ((low_y, 1 - high), (high_y, high)):
            probability[y] = probability.get(y, Fraction(0)) + (1 - alpha) * q
    keys = sorted(probability)
    counts = np.array([np.count_nonzero(out == y) for y in keys], dtype=float)
    assert counts.sum() == n  # nothing outside the support
    expected = n * np.array([float(probability[y]) for y in keys])
    small = expected < 5  # pooled
    if small.any():
        counts = np.append(counts[~small], counts[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    assert stats.chisquare(counts, expected).pvalue >= 1e-6
