"""The key-value fast simulators against the real client and aggregator (ldp.simulations.key_value_fast).

For each mechanism, R seeded collections of a small population through the
fast simulator and R through the real batch encoder and accumulator: every
count cell must agree in mean and in variance. Tests are two-sample z tests,
Bonferroni-corrected over the cells and the two moments so that each
mechanism's family-wise two-sided significance level is α = 0.001. The mean
test's SE is √(s²_fast/R + s²_real/R); the variance test compares
log s² with SE √((m₄/s⁴ − 1)/R) per sample (delta method, no normality
assumed).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from ldp.aggregator import make_aggregator
from ldp.client import encode_batch
from ldp.errors import InputError, ParameterError
from ldp.plugins import implementation
from ldp.simulations.key_value_fast import KeyValuePopulation, sign_probabilities
from ldp.specs import spec_class

ALPHA = 0.001
REPEATS = 400
COUNTS = np.array([500, 300, 150, 50, 0])
MEANS = np.array([0.5, -0.3, 0.9, -1.0, 0.25])
DOMAIN = tuple(f"k{i}" for i in range(COUNTS.size))


def _spec(name, ell):
    return spec_class(name)(DOMAIN, 1.0, ell=ell) if name != "privkvm" else spec_class(name)(DOMAIN, 1.0)


def _moments(samples):
    mean = samples.mean(axis=0)
    var = samples.var(axis=0, ddof=1)
    m4 = ((samples - mean) ** 4).mean(axis=0)
    return mean, var, m4


@pytest.mark.parametrize(
    ("name", "ell"),
    [
        pytest.param("pckv-ue", 2, marks=pytest.mark.slow),
        ("pckv-grr", 2),  # the fast representative (~2 s)
        pytest.param("pckv-grr", 1, marks=pytest.mark.slow),
        pytest.param("privkvm", 1, marks=pytest.mark.slow),
    ],
)
def test_fast_and_real_counts_agree_in_mean_and_variance(name, ell):
    spec = _spec(name, ell)
    fast = implementation(spec, "fast_simulator")
    population = KeyValuePopulation(COUNTS, MEANS)
    values = [{DOMAIN[k]: float(MEANS[k])} for k in np.repeat(np.arange(COUNTS.size), COUNTS)]
    drawn = np.array(
        [fast(spec, population, np.random.default_rng([7, r])).ravel() for r in range(REPEATS)], dtype=float
    )
    real = []
    for r in range(REPEATS):
        accumulator = make_aggregator(spec)
        accumulator.add_batch(encode_batch(spec, values, np.random.default_rng([8, r])))
        real.append(accumulator.counts.ravel())
    real = np.array(real, dtype=float)
    assert drawn.shape == real.shape
    if name != "pckv-ue":  # one (key, sign) or (key, response) per user
        assert np.all(drawn.sum(axis=1) == COUNTS.sum())
    (m1, v1, q1), (m2, v2, q2) = _moments(drawn), _moments(real)
    cells = v1 > 0  # a cell that is constant in both (none here) carries no test
    assert np.array_equal(cells, v2 > 0)
    z_limit = norm.isf(ALPHA / (2 * 2 * int(cells.sum())))
    z_mean = (m1 - m2)[cells] / np.sqrt((v1 + v2)[cells] / REPEATS)
    se_log = np.sqrt((q1 / v1**2 - 1)[cells] / REPEATS + (q2 / v2**2 - 1)[cells] / REPEATS)
    z_var = np.log(v1[cells] / v2[cells]) / se_log
    assert np.max(np.abs(z_mean)) < z_limit, (z_mean, z_limit)
    assert np.max(np.abs(z_var)) < z_limit, (z_var, z_limit)


def test_sign_probability_is_the_clients_exact_threshold():
    assert sign_probabilities(np.array([0.0, 1.0, -1.0, 0.5])).tolist() == [0.5, 1.0, 0.0, 0.75]


def test_a_bad_population_is_refused_in_one_line():
    spec = _spec("pckv-grr", 1)
    fast = implementation(spec, "fast_simulator")
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="one count and one value per key"):
        fast(spec, KeyValuePopulation(COUNTS[:3], MEANS[:3]), rng)
    with pytest.raises(InputError, match=r"in \[-1, 1\]"):
        fast(spec, KeyValuePopulation(COUNTS, MEANS * 2), rng)
    with pytest.raises(ParameterError, match="takes a KeyValuePopulation"):
        fast(spec, COUNTS, rng)


def test_ldp_simulate_key_value_runs_fast_by_default_and_faithful_on_request():
    from ldp.simulations.key_value import run_key_value

    fast = run_key_value(["pckv-grr"], [1.0], 2_000, 5, repeats=1, seed=3)
    faithful = run_key_value(["pckv-grr"], [1.0], 2_000, 5, repeats=1, seed=3, mode="faithful")
    assert fast["mode"].tolist() == ["fast"] and faithful["mode"].tolist() == ["faithful"]
    with pytest.raises(ParameterError, match="mode must be fast or faithful"):
        run_key_value(["pckv-grr"], [1.0], 100, 5, repeats=1, seed=3, mode="slow")
