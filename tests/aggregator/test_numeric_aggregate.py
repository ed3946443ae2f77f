"""Numeric aggregation: unbiasedness, variance vs. formulas, SE/CI, sum, merge, groups.

Statistical checks are seeded and use α = 1e-6 (two-sided z = 4.89) with
tolerances z·SE from the *theoretical* variance of the spec, never hand-tuned.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import ldp
from ldp import numeric_math as nm
from ldp.aggregator import make_aggregator
from ldp.aggregator.numeric import MEAN_COLUMNS, MeanAccumulator
from ldp.client import encode_batch, make_encoder
from ldp.errors import ParameterError, ReportError
from ldp.specs.numeric import NUMERIC_MECHANISMS, numeric_spec

ALPHA = 1e-6
Z = float(norm.ppf(1 - ALPHA / 2))
N = 100_000
LOW, HIGH = 10.0, 110.0


def _spec(name, epsilon):
    grid = 64 if name == "gaussian" and epsilon < 0.5 else 256
    return numeric_spec(name, epsilon, LOW, HIGH, grid=grid, delta=1e-5)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("name", list(NUMERIC_MECHANISMS))
def test_mean_is_unbiased_within_z_se(name, epsilon):
    spec = _spec(name, epsilon)
    # a stable seed: hash() of a str is salted per process (PYTHONHASHSEED), so it made the test unseeded
    rng = np.random.default_rng(zlib.crc32(f"{name}/{epsilon!r}".encode()))
    values = rng.beta(2, 5, N) * (HIGH - LOW) + LOW
    acc = make_aggregator(spec)
    batch = encode_batch(spec, values, rng)
    acc.add_batch(batch)
    row = acc.estimate().iloc[0]
    # fixed-data variance of the mean from the spec's exact per-report variances
    se_theory = math.sqrt(spec.native_variance(spec.to_native(values)).sum()) / N * spec.half_width
    bias = spec.max_bias * spec.half_width
    assert abs(row["mean"] - values.mean()) <= Z * se_theory + bias
    assert row["n"] == N
    # the reported SE (i.i.d. framing) is the fixed-data one plus the spread of the values
    se_iid = math.sqrt(se_theory**2 + values.var() / N)
    est = spec.native_estimate(batch.values)
    kurtosis = np.mean((est - est.mean()) ** 4) / est.var() ** 2
    rel_se_of_sd = 0.5 * math.sqrt((kurtosis - 1) / N)  # delta method: SE(s)/s = SE(s²)/(2s²)
    assert row["std_error"] == pytest.approx(se_iid, rel=Z * rel_se_of_sd)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("name", list(NUMERIC_MECHANISMS))
def test_per_report_variance_matches_the_spec(name, epsilon):
    spec = _spec(name, epsilon)
    rng = np.random.default_rng(7)
    value = LOW + 0.3 * (HIGH - LOW)  # t = −0.4, between grid points for no grid
    est = spec.native_estimate(encode_batch(spec, np.full(N, value), rng).values)
    s2 = est.var(ddof=1)
    m4 = np.mean((est - est.mean()) ** 4)
    se_s2 = math.sqrt(max(m4 - s2 * s2, 0.0) / N)
    expected = float(spec.native_variance(spec.to_native(value)))
    assert abs(s2 - expected) <= Z * se_s2


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 4.0, 8.0])
def test_grid_variances_match_formulas(epsilon):
    """The exact grid variances match docs/mechanisms.md#numeric (PM's band is rounded to whole cells)."""
    t = np.linspace(-1, 1, 21)
    K = 256
    pm_band = K * math.exp(-epsilon / 2)
    pm_tol = 0.5 / pm_band + 2.0 / K  # band rounding + input grid
    cases = {
        "duchi": (nm.duchi_variance, 1e-12),
        "laplace": (nm.laplace_variance, 1e-3),
        "piecewise": (nm.pm_variance, pm_tol),
        "hybrid": (nm.hm_variance, pm_tol),
    }
    for name, (formula, tol) in cases.items():
        spec = numeric_spec(name, epsilon, grid=K)
        theory = np.array([formula(epsilon, x) for x in t])
        grid_var = spec.native_variance(t)
        assert np.max(np.abs(grid_var / theory - 1)) <= tol, name
    g = ldp.Gaussian(epsilon=epsilon, delta=1e-5, grid=64)
    assert g.worst_case_variance == pytest.approx(g.sigma**2, rel=1e-3)


def test_worst_case_table_of_formulas():
    expected = {
        0.5: (32.0, 16.67, 21.22, 16.67),
        1: (8.0, 4.683, 5.224, 4.289),
        2: (2.0, 1.724, 1.228, 1.042),
        4: (0.5, 1.076, 0.241, 0.219),
    }
    for eps, (lap, duchi, pm, hm) in expected.items():
        assert nm.worst_case_variance("laplace", eps) == pytest.approx(lap, rel=1e-3)
        assert nm.worst_case_variance("duchi", eps) == pytest.approx(duchi, rel=1e-3)
        assert nm.worst_case_variance("piecewise", eps) == pytest.approx(pm, rel=3e-3)  # table has 3-4 digits
        assert nm.worst_case_variance("hybrid", eps) == pytest.approx(hm, rel=3e-3)


def test_estimate_columns_ci_and_sum():
    spec = ldp.Piecewise(epsilon=2, low=0, high=100, grid=64)
    rng = np.random.default_rng(3)
    acc = make_aggregator(spec)
    assert isinstance(acc, MeanAccumulator)
    acc.add_batch(encode_batch(spec, rng.uniform(0, 100, 5000), rng))
    table = acc.estimate(confidence=0.9)
    assert tuple(table.columns[:5]) == MEAN_COLUMNS
    assert tuple(table.columns[5:]) == ("sum", "sum_std_error", "sum_ci_low", "sum_ci_high")
    row = table.iloc[0]
    z = norm.ppf(0.95)
    assert row["ci_low"] == pytest.approx(row["mean"] - z * row["std_error"])
    assert row["ci_high"] == pytest.approx(row["mean"] + z * row["std_error"])
    total = acc.estimate_sum(confidence=0.9).iloc[0]
    assert total["sum"] == pytest.approx(row["mean"] * 5000)
    assert total["std_error"] == pytest.approx(row["std_error"] * 5000)
    with pytest.raises(ParameterError):
        acc.estimate(consistency="norm-sub")


def test_add_matches_add_batch_and_merge_is_exact():
    spec = ldp.Hybrid(epsilon=3, low=0, high=1, grid=32)
    rng = np.random.default_rng(5)
    values = rng.uniform(0, 1, 3000)
    batch = encode_batch(spec, values, rng)
    one = make_aggregator(spec)
    for report in batch.reports(spec):
        one.add(report)
    whole = make_aggregator(spec)
    whole.add_batch(batch)
    assert one == whole
    parts = []
    for chunk in np.array_split(np.arange(3000), 3):
        acc = make_aggregator(spec)
        acc.add_batch(ldp.batch.ReportBatch(spec=spec.fingerprint, values=batch.values[chunk]))
        parts.append(acc)
    a, b, c = parts
    assert a.merge(b).merge(c) == a.merge(b.merge(c)) == c.merge(a).merge(b) == whole


def test_client_reports_aggregate():
    spec = ldp.Laplace(epsilon=4, low=0, high=10, grid=16)
    encoder = make_encoder(spec)
    acc = make_aggregator(spec)
    for _ in range(300):
        acc.add(encoder.encode(7.0))
    row = acc.estimate().iloc[0]
    se = math.sqrt(float(spec.native_variance(spec.to_native(7.0))) / 300) * spec.half_width
    assert abs(row["mean"] - 7.0) <= Z * se + spec.max_bias * spec.half_width


def test_group_means():
    spec = ldp.Duchi(epsilon=2, low=0, high=600)
    rng = np.random.default_rng(11)
    versions = rng.choice(["1.0", "2.0"], N)
    length = np.where(versions == "1.0", 120.0, 300.0)
    acc = make_aggregator(spec)
    half = N // 2
    acc.add_batch(encode_batch(spec, length[:half], rng), groups=versions[:half])
    other = make_aggregator(spec)
    other.add_batch(encode_batch(spec, length[half:], rng), groups=versions[half:])
    merged = acc.merge(other)
    table = merged.estimate(by_group=True).set_index("group")
    for version, truth in (("1.0", 120.0), ("2.0", 300.0)):
        row = table.loc[version]
        t = spec.to_native(truth)
        se = math.sqrt(float(spec.native_variance(t)) / row["n"]) * spec.half_width
        assert abs(row["mean"] - truth) <= Z * se
    assert table["n"].sum() == merged.n == N


def test_bad_batches_raise_report_error():
    spec = ldp.Duchi(epsilon=1)
    acc = make_aggregator(spec)
    with pytest.raises(ReportError, match="not an output"):
        acc.add_batch(ldp.batch.ReportBatch(spec=spec.fingerprint, values=np.array([0.5])))
    with pytest.raises(ReportError):
        acc.add_batch(ldp.batch.ReportBatch(spec="0" * 16, values=np.array([spec.c])))
    assert acc.n == 0


def test_lower_bound_holds_on_the_worst_population():
    """docs/mechanisms.md#lower-bounds: on a fair ±1 population (μ = 0) every unbiased mechanism has per-user i.i.d. variance ≥ coth²(ε/2)."""
    for eps in (0.1, 1.0, 8.0):
        bound = nm.mean_lower_bound(eps, 1)
        assert bound == pytest.approx(nm.duchi_variance(eps, 0.0))
        for name, formula in (
            ("laplace", nm.laplace_variance),
            ("duchi", nm.duchi_variance),
            ("piecewise", nm.pm_variance),
            ("hybrid", nm.hm_variance),
        ):
            iid = (formula(eps, 1.0) + formula(eps, -1.0)) / 2 + 1.0  # E[Var[y|t]] + Var(t)
            assert iid >= bound * (1 - 1e-12), name
            if name == "duchi":
                assert iid == pytest.approx(bound)


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(["duchi", "stochastic-rounding", "piecewise", "hybrid", "laplace"]),
    epsilon=st.floats(0.05, 10),
    low=st.floats(-1e6, 1e6),
    width=st.floats(1e-3, 1e6),
)
def test_spec_json_round_trip_property(name, epsilon, low, width):
    spec = numeric_spec(name, epsilon, low, low + width, grid=16)
    again = ldp.load_spec(spec.to_json())
    assert again == spec and again.fingerprint == spec.fingerprint
    assert spec.epsilon_achieved <= epsilon


_MERGE_SPEC = ldp.Laplace(epsilon=1.5, low=0, high=1, grid=16)
_MERGE_VALUES = encode_batch(_MERGE_SPEC, np.linspace(0, 1, 600), np.random.default_rng(2)).values


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(0, 600), min_size=2, max_size=2), order=st.permutations([0, 1, 2]))
def test_merge_is_associative_and_order_independent(cuts, order):
    a, b = sorted(cuts)
    parts = []
    for lo, hi in ((0, a), (a, b), (b, 600)):
        acc = make_aggregator(_MERGE_SPEC)
        acc.add_batch(ldp.batch.ReportBatch(spec=_MERGE_SPEC.fingerprint, values=_MERGE_VALUES[lo:hi]))
        parts.append(acc)
    whole = make_aggregator(_MERGE_SPEC)
    whole.add_batch(ldp.batch.ReportBatch(spec=_MERGE_SPEC.fingerprint, values=_MERGE_VALUES))
    x, y, z = (parts[i] for i in order)
    assert x.merge(y).merge(z) == x.merge(y.merge(z)) == whole
    assert x.merge(y).merge(z).estimate().equals(whole.estimate())
