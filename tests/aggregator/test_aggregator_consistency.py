"""Consistency post-processing (docs/mechanisms.md#consistency): properties and a reference projection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import brentq
from scipy.stats import norm

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.consistency import (
    apply_consistency,
    base_cut,
    base_cut_threshold,
    clip,
    norm_mul,
    norm_sub,
)
from ldp.batch import ReportBatch
from ldp.errors import InputError, ParameterError

estimates = arrays(
    np.float64,
    st.integers(1, 40),
    elements=st.floats(-3, 3, allow_nan=False, allow_infinity=False),
)


def reference_projection(f: np.ndarray) -> np.ndarray:
    """Simplex projection by root finding on δ ↦ Σ max(f + δ, 0) − 1 (no sorting)."""
    delta = brentq(
        lambda t: np.maximum(f + t, 0).sum() - 1.0, -f.max() - 1.0, 1.0 - f.min(), xtol=1e-15, rtol=1e-15
    )
    return np.maximum(f + delta, 0)


@given(estimates)
def test_norm_sub_is_the_simplex_projection(f):
    out = norm_sub(f)
    assert np.all(out >= 0)
    assert out.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(out, reference_projection(f), atol=1e-9)


@given(estimates, st.integers(0, 2**32 - 1))
def test_norm_sub_is_closest_point(f, seed):
    """No point of the simplex is closer to f than its projection."""
    out = norm_sub(f)
    others = np.random.default_rng(seed).dirichlet(np.ones(f.size), size=50)
    assert np.all(np.linalg.norm(others - f, axis=1) >= np.linalg.norm(out - f) - 1e-12)


@given(st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_norm_sub_keeps_points_of_the_simplex(d, seed):
    f = np.random.default_rng(seed).dirichlet(np.ones(d))
    np.testing.assert_allclose(norm_sub(f), f, atol=1e-12)


@given(estimates)
def test_norm_mul_sums_to_one_and_keeps_ratios(f):
    out = norm_mul(f)
    assert out.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(out >= 0)
    positive = f > 0
    if positive.any():
        np.testing.assert_allclose(out[positive], f[positive] / f[positive].sum(), rtol=1e-9, atol=1e-15)
        assert np.all(out[~positive] == 0)
    else:
        np.testing.assert_allclose(out, 1.0 / f.size)


@given(estimates)
def test_clip_stays_in_unit_interval(f):
    out = clip(f)
    assert np.all((out >= 0) & (out <= 1))
    inside = (f >= 0) & (f <= 1)
    np.testing.assert_array_equal(out[inside], f[inside])


@given(estimates, st.floats(1e-4, 0.5), st.floats(1e-3, 1.0))
def test_base_cut_zeroes_exactly_below_threshold(f, alpha, sigma):
    out = base_cut(f, sigma, alpha)
    threshold = sigma * norm.isf(alpha / f.size)
    np.testing.assert_array_equal(out, np.where(f >= threshold, f, 0.0))
    assert base_cut_threshold(np.full(f.size, sigma), alpha)[0] == pytest.approx(threshold)


def test_dispatch_errors():
    with pytest.raises(ParameterError, match="unknown consistency"):
        apply_consistency("magic", [0.5, 0.5])
    with pytest.raises(ParameterError, match="base-cut"):
        apply_consistency("base-cut", [0.5, 0.5])
    with pytest.raises(ParameterError, match="finite"):
        norm_sub([np.nan, 1.0])
    assert apply_consistency("Norm_Sub", [2.0, 0.0]).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("method", ["norm-sub", "norm-mul", "clip", "base-cut"])
def test_estimate_with_consistency_keeps_both_views(method):
    spec = ldp.GRR(domain=("a", "b", "c", "d"), epsilon=0.5)
    acc = make_aggregator(spec)
    acc.add_batch(
        ReportBatch(spec=spec.fingerprint, values=np.array([0] * 50 + [1] * 30 + [2] * 12 + [3] * 8))
    )
    plain = acc.estimate()
    adjusted = acc.estimate(consistency=method)
    for column in plain.columns:  # the unbiased view is unchanged
        np.testing.assert_array_equal(adjusted[column], plain[column])
    assert list(adjusted.columns) == ["value", "consistent", *plain.columns[1:]]
    assert adjusted.attrs["consistency"] == method
    if method in ("norm-sub", "norm-mul"):
        assert adjusted["consistent"].sum() == pytest.approx(acc.n)
    assert (adjusted["consistent"] >= 0).all()


def test_frequencies_that_are_not_a_finite_vector_are_input_errors():
    for bad, message in (([], "non-empty 1-D"), ([[0.5]], "non-empty 1-D"), ([0.5, np.nan], "finite")):
        with pytest.raises(InputError, match=message):
            clip(bad)
