"""The multi-attribute fast simulator against the real client and aggregator (ldp.simulations.multiattr_fast).

For each method, R seeded collections of one set of records through the
fast simulator and R through the real encoder and accumulator: every
attribute value's estimated count must agree in mean and in variance. Two-
sample z tests, Bonferroni-corrected over the values and the two moments so
that each method's family-wise two-sided significance level is α = 0.001;
mean SE √(s²_fast/R + s²_real/R), log-variance SE √((m₄/s⁴ − 1)/R) per
sample (delta method, no normality assumed).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from ldp.aggregator.multiattr import MultiAttributeAccumulator
from ldp.client.multiattr import encode_records
from ldp.errors import InputError, ParameterError
from ldp.plugins import implementation
from ldp.specs.multiattr import MultiAttribute

ALPHA = 0.001
REPEATS = 300
ATTRIBUTES = [
    {"name": "os", "mechanism": "grr", "domain": ["l", "m", "w"]},
    {"name": "browser", "mechanism": "oue", "domain": ["ff", "ch", "sa", "ed"]},
]
COLUMNS = {
    "os": ["l"] * 300 + ["m"] * 200 + ["w"] * 100,
    "browser": (["ff"] * 50 + ["ch"] * 250 + ["sa"] * 200 + ["ed"] * 100),
}


def _true_counts(spec):
    return [
        np.bincount([attribute.index_of(v) for v in COLUMNS[name]], minlength=attribute.domain_size)
        for name, attribute in zip(spec.names, spec.attributes, strict=True)
    ]


def _estimates(acc):
    return np.concatenate([table["estimate"].to_numpy(float) for table in acc.estimates(0.95).values()])


def _moments(samples):
    mean = samples.mean(axis=0)
    var = samples.var(axis=0, ddof=1)
    return mean, var, ((samples - mean) ** 4).mean(axis=0)


@pytest.mark.parametrize(
    ("method", "attributes"),
    [
        ("smp", ATTRIBUTES),  # the fast representative (~2 s)
        pytest.param("spl", ATTRIBUTES, marks=pytest.mark.slow),
        pytest.param("rsfd-grr", [{**a, "mechanism": "grr"} for a in ATTRIBUTES], marks=pytest.mark.slow),
        *(
            pytest.param(
                f"rsfd-{oracle}-{fake}",
                [{**a, "mechanism": oracle} for a in ATTRIBUTES],
                marks=pytest.mark.slow,
            )
            for oracle in ("sue", "oue")
            for fake in ("z", "r")
        ),
    ],
)
def test_fast_and_real_estimates_agree_in_mean_and_variance(method, attributes):
    spec = MultiAttribute(attributes, 2.0, method=method)
    fast = implementation(spec, "fast_simulator")
    counts = _true_counts(spec)
    drawn = np.array([_estimates(fast(spec, counts, np.random.default_rng([5, r]))) for r in range(REPEATS)])
    real = []
    for r in range(REPEATS):
        acc = MultiAttributeAccumulator(spec)
        acc.add_batch(encode_records(spec, COLUMNS, np.random.default_rng([6, r])))
        real.append(_estimates(acc))
    real = np.array(real)
    (m1, v1, q1), (m2, v2, q2) = _moments(drawn), _moments(real)
    z_limit = norm.isf(ALPHA / (2 * 2 * m1.size))
    z_mean = (m1 - m2) / np.sqrt((v1 + v2) / REPEATS)
    z_var = np.log(v1 / v2) / np.sqrt((q1 / v1**2 - 1) / REPEATS + (q2 / v2**2 - 1) / REPEATS)
    assert np.max(np.abs(z_mean)) < z_limit, (z_mean, z_limit)
    assert np.max(np.abs(z_var)) < z_limit, (z_var, z_limit)


def test_numeric_attributes_and_bad_counts_are_refused_in_one_line():
    rng = np.random.default_rng(0)
    spec = MultiAttribute(ATTRIBUTES, 1.0)
    fast = implementation(spec, "fast_simulator")
    with pytest.raises(InputError, match="must sum to the same n"):
        fast(spec, [np.array([1, 2, 3]), np.array([1, 1, 1, 1])], rng)
    with pytest.raises(InputError, match="holds 1 attributes, the spec 2"):
        fast(spec, [np.array([1, 2, 3])], rng)
    numeric = MultiAttribute(
        [ATTRIBUTES[0], {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 1}], 1.0
    )
    with pytest.raises(ParameterError, match="'ms' \\(piecewise\\) is numeric"):
        fast(numeric, [np.array([1, 2, 3]), np.array([6])], rng)
