"""Shuffle amplification (ldp/privacy/shuffle.py, docs/accounting.md#shuffle).

Checked three ways: against the published example of Feldman, McMillan and
Talwar (n = 100,000, ε₀ = 4, δ = 1e-6: numerical ε between 0.1675 and 0.1728,
closed form 0.5378), against a brute-force enumeration of the clone mixture at
small n (every (clones, coin, side) outcome summed directly), and for
soundness against the exact central δ(ε) of shuffled binary and 3-ary
randomized response on concrete neighbouring datasets, which every bound must
dominate. All computations are deterministic (no sampling).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.errors import ParameterError
from ldp.privacy._numeric import binom_logpmf
from ldp.privacy.conversions import gdp_epsilon
from ldp.privacy.shuffle import (
    CloneReduction,
    binomial_cdf_upper,
    closed_form_epsilon,
    general_reduction,
    local_epsilon_for,
    numerical_epsilon,
    randomized_response_reduction,
    shuffle_bounds,
    spec_reduction,
)


def test_published_example():
    """FMT 2021's example: numerical ε in [0.1675, 0.1728] (their lower and upper bounds), closed form 0.5378."""
    assert 0.1675 <= numerical_epsilon(4.0, 100_000, 1e-6) <= 0.1728
    assert closed_form_epsilon(4.0, 100_000, 1e-6) == pytest.approx(0.5378, abs=5e-5)


def _brute_force_delta(users: int, epsilon0: float, clone_probability: float, epsilon: float) -> float:
    """max(D(P‖Q), D(Q‖P)) by enumerating C = c, A = a and user 1's side; P, Q on (first, second) counts."""
    alpha = math.exp(epsilon0) / (math.exp(epsilon0) + 1)
    size = users + 1
    p = np.zeros((size, size))
    q = np.zeros((size, size))
    for c in range(users):
        weight_c = math.comb(users - 1, c) * clone_probability**c * (1 - clone_probability) ** (users - 1 - c)
        for a in range(c + 1):
            weight = weight_c * math.comb(c, a) / 2**c
            p[a + 1, c - a] += weight * alpha
            p[a, c - a + 1] += weight * (1 - alpha)
            q[a + 1, c - a] += weight * (1 - alpha)
            q[a, c - a + 1] += weight * alpha
    e = math.exp(epsilon)
    return max(np.clip(p - e * q, 0, None).sum(), np.clip(q - e * p, 0, None).sum())


@pytest.mark.parametrize("users", [2, 7, 40])
@pytest.mark.parametrize("epsilon0", [0.5, 2.0, 5.0])
def test_clone_mixture_matches_brute_force(users, epsilon0):
    reduction = general_reduction(epsilon0, users)
    for epsilon in np.linspace(0.0, epsilon0 * 1.1, 12):
        exact = _brute_force_delta(users, epsilon0, math.exp(-epsilon0), epsilon)
        # abs: the brute force's own float rounding (~1e-15) where the true δ is 0 (ε ≥ ε₀)
        assert reduction.delta(epsilon) == pytest.approx(exact, rel=1e-9, abs=1e-12)


def _shuffled_rr_delta(k: int, epsilon0: float, others: list[int], epsilon: float) -> float:
    """Exact δ(ε) between the histograms of shuffled k-RR reports when user 1 holds 0 versus 1.

    ``others`` are the other users' values. The histogram's law is the
    convolution of the users' categorical laws (last count implied).
    """
    e0 = math.exp(epsilon0)
    keep, other = e0 / (e0 + k - 1), 1 / (e0 + k - 1)

    def law(value: int) -> np.ndarray:
        return np.array([keep if y == value else other for y in range(k)])

    n = len(others) + 1
    shape = (n + 1,) * (k - 1)

    def histogram(first: int) -> np.ndarray:
        dist = np.zeros(shape)
        dist[(0,) * (k - 1)] = 1.0
        for value in [first, *others]:
            probs = law(value)
            new = dist * probs[k - 1]
            for y in range(k - 1):
                new += np.roll(dist, 1, axis=y) * probs[y]
            dist = new
        return dist

    h0, h1 = histogram(0), histogram(1)
    e = math.exp(epsilon)
    return max(np.clip(h0 - e * h1, 0, None).sum(), np.clip(h1 - e * h0, 0, None).sum())


@pytest.mark.parametrize(
    ("k", "others"),
    [(2, [0] * 11), (2, [1] * 11), (2, [0, 1] * 6), (3, [2] * 9), (3, [0] * 9), (3, [0, 1, 2] * 3)],
)
@pytest.mark.parametrize("epsilon0", [1.0, 3.0])
def test_bounds_dominate_exact_shuffled_randomized_response(k, others, epsilon0):
    """Soundness: each bound's δ(ε) is at least the true δ(ε) of shuffled k-RR on these neighbours."""
    n = len(others) + 1
    general = general_reduction(epsilon0, n)
    tailored = randomized_response_reduction(epsilon0, n, k)
    for epsilon in np.linspace(0.0, epsilon0, 15):
        true = _shuffled_rr_delta(k, epsilon0, others, epsilon)
        assert general.delta(epsilon) >= true - 1e-12
        assert tailored.delta(epsilon) >= true - 1e-12


def test_randomized_response_bound_is_tighter_for_small_domains():
    general = numerical_epsilon(3.0, 50_000, 1e-6)
    binary = randomized_response_reduction(3.0, 50_000, 2).epsilon(1e-6)
    assert binary < general


def test_epsilon_is_the_smallest_passing_value():
    reduction = general_reduction(2.0, 20_000)
    eps = reduction.epsilon(1e-6)
    assert reduction.delta(eps) <= 1e-6 < reduction.delta(eps * (1 - 1e-4))


def test_central_epsilon_falls_with_users_and_rises_with_epsilon0():
    by_users = [numerical_epsilon(2.0, n, 1e-6) for n in (1_000, 10_000, 100_000, 1_000_000)]
    assert all(a > b for a, b in itertools.pairwise(by_users))
    by_eps0 = [numerical_epsilon(e, 100_000, 1e-6) for e in (0.5, 1.0, 2.0, 4.0)]
    assert all(a < b for a, b in itertools.pairwise(by_eps0))


def test_large_population_is_computed():
    eps = numerical_epsilon(4.0, 100_000_000, 1e-6)
    closed = closed_form_epsilon(4.0, 100_000_000, 1e-6)
    assert closed is not None and 0 < eps < closed < 4.0


# -- populations up to the 10^12 users the accountant accepts (issue 24) --------------------
SCALES = [10**9, 10**10, 10**11, 10**12]


@pytest.mark.parametrize("users", [10**9, 10**10, 10**12])
def test_clone_mixture_weights_sum_to_one_at_scale(users):
    # SciPy's bdtr summed to 1.088 at 10^9 and was NaN beyond 2^31 (the bound then silently became ε₀)
    reduction = general_reduction(4.0, users)
    _, weights, charged = reduction._mixture
    assert np.all(weights >= 0) and 0 <= charged <= 1e-30
    assert math.fsum(weights) + charged == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("users", [10**7, 10**9, pytest.param(10**12, marks=pytest.mark.slow)])
@pytest.mark.parametrize("epsilon0", [0.5, 4.0])
def test_clone_count_cdf_is_an_upper_bound(users, epsilon0):
    # reference: the pmf summed in log space (Loader's form, ~1e-12 relative) from 16 sd below the
    # mean (the mass below is < 1e-56, far below the 1e-33 CDF at z = −12)
    p = math.exp(-epsilon0)
    trials = users - 1
    mean, sd = trials * p, math.sqrt(trials * p * (1 - p))
    low = math.floor(mean - 16 * sd)
    for z in (-12.0, -3.0, 0.0, 3.0):
        c = math.floor(mean + z * sd)
        log_pmf = binom_logpmf(trials, -epsilon0, math.log1p(-p), low, c)
        reference = math.exp(float(np.logaddexp.reduce(log_pmf)))
        upper = float(binomial_cdf_upper(np.array([c]), trials, p)[0])
        # an upper bound (the margin is 1e-12·√n, 250 times the error measured) and a tight one
        assert reference * (1 - 1e-12) <= upper <= reference * (1 + 2e-12 * math.sqrt(trials) + 1e-11)


@pytest.mark.slow
def test_numerical_bound_at_scale_is_monotone_and_matches_the_clt():
    """Up to 10^12 users the bound falls with n and agrees with the CLT of the clone pair.

    Independent check: given C = c clones the pair is a ±1 shift of Bin(c, ½) mixed with weights
    α, 1 − α, which tends to μ-GDP with μ = 2·tanh(ε₀/2)/√(c/4)·½ = 2 tanh(ε₀/2) e^{ε₀/2}/√n at c = n·e^−ε₀.
    The exact mixture must not fall below it by more than its O(1/√n) error (0.1% here) and is within 1%.
    """
    eps0, delta = 4.0, 1e-6
    values = [numerical_epsilon(eps0, n, delta) for n in SCALES]
    assert all(a > b for a, b in itertools.pairwise(values)), values
    for n, value in zip(SCALES, values):
        mu = 2 * math.tanh(eps0 / 2) * math.exp(eps0 / 2) / math.sqrt(n)
        clt = gdp_epsilon(mu, delta)
        assert clt * (1 - 1e-3) <= value <= clt * (1 + 1e-2), (n, value, clt)
    closed = [closed_form_epsilon(eps0, n, delta) for n in SCALES]
    assert all(c is not None and v < c for v, c in zip(values, closed))


def test_target_epsilon_grows_with_the_population():
    # was: 7.89 at 10^9 but 0.01 (no amplification) at 10^10
    found = [local_epsilon_for(0.01, n, 1e-6) for n in (10**9, 10**10, 10**12)]
    assert all(a < b for a, b in itertools.pairwise(found)), found
    assert found[0] == pytest.approx(7.88898, abs=1e-4)
    for eps0, n in zip(found, (10**9, 10**10, 10**12)):
        assert general_reduction(eps0, n).delta(0.01) <= 1e-6


def test_reverse_gives_the_largest_local_epsilon():
    eps0 = local_epsilon_for(0.5, 100_000, 1e-6)
    assert numerical_epsilon(eps0, 100_000, 1e-6) <= 0.5
    assert numerical_epsilon(eps0 * 1.001, 100_000, 1e-6) > 0.5
    assert local_epsilon_for(0.5, 100_000, 1e-6, domain_size=2) >= eps0


def test_closed_form_outside_its_range_is_none():
    assert closed_form_epsilon(8.0, 1_000, 1e-6) is None
    rows = shuffle_bounds(8.0, 1_000, 1e-6)
    closed = next(r for r in rows if r.method == "closed form")
    assert closed.epsilon is None and "not valid" in closed.note
    assert rows[-1].method == "best" and rows[-1].epsilon <= 8.0


def test_spec_hook_grr_matches_randomized_response():
    spec = ldp.GRR(domain=tuple(range(16)), epsilon=2.0)
    own = spec_reduction(spec, 10_000)
    generic = randomized_response_reduction(2.0, 10_000, 16)
    assert own is not None
    assert own.clone_probability == pytest.approx(generic.clone_probability, rel=1e-12)
    assert own.clone_probability <= 2 * float(spec.q)
    assert own.informative_weight >= float(spec.p + spec.q)
    assert own.epsilon(1e-6) == pytest.approx(generic.epsilon(1e-6), rel=1e-6)
    assert spec_reduction(ldp.OUE(domain=tuple(range(16)), epsilon=2.0), 10_000) is None


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"users": 1, "epsilon0": 1.0, "clone_probability": 0.5}, "users"),
        ({"users": 10, "epsilon0": -1.0, "clone_probability": 0.5}, "epsilon0"),
        ({"users": 10, "epsilon0": 1.0, "clone_probability": -0.1}, "clone_probability"),
        ({"users": 10, "epsilon0": 1.0, "clone_probability": 1.5}, "clone_probability"),
        (
            {"users": 10, "epsilon0": 1.0, "clone_probability": 0.5, "informative_weight": 1.5},
            "informative_weight",
        ),
    ],
)
def test_bad_parameters_are_named(kwargs, word):
    with pytest.raises(ParameterError, match=word):
        CloneReduction(**kwargs)


def test_cli_table_and_reverse(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        cli, ["privacy", "shuffle", "--epsilon0", "4", "--users", "100000", "--delta", "1e-6"]
    )
    assert result.exit_code == 0, result.output
    assert "0.537804" in result.output and "App. E" in result.output and "Thm 3.1" in result.output
    spec_path = tmp_path / "grr.json"
    spec_path.write_text(ldp.GRR(domain=tuple(range(8)), epsilon=3.0).to_json())
    result = runner.invoke(cli, ["privacy", "shuffle", "--spec", str(spec_path), "--users", "10000"])
    assert result.exit_code == 0, result.output
    assert "grr: its exact probabilities" in result.output
    result = runner.invoke(cli, ["privacy", "shuffle", "--target-epsilon", "0.5", "--users", "100000"])
    assert result.exit_code == 0 and result.output.startswith("epsilon0 = ")
    result = runner.invoke(cli, ["privacy", "shuffle", "--users", "100000"])
    assert result.exit_code != 0 and "--epsilon0" in result.output


def test_simulate_prints_each_rows_central_epsilon():
    from ldp.simulations.summary import with_central_epsilon

    result = CliRunner().invoke(
        cli,
        [
            *("simulate", "-m", "grr,oue", "-e", "2", "--users", "20000", "--domain-size", "8"),
            *("--repeats", "2", "--seed", "1", "--shuffle-delta", "1e-6"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "central eps" in result.output
    grr = ldp.GRR(domain=tuple(range(8)), epsilon=2.0)
    expected = shuffle_bounds(2.0, 20_000, 1e-6, spec=grr)[-1].epsilon
    assert f"{expected:.3g}" in result.output
    summary = pd.DataFrame(
        {"users": [20_000], "epsilon": [2.0], "resolved": ["oue"], "domain_size": [8], "mechanism": ["oue"]}
    )
    assert with_central_epsilon(summary, 1e-6)["central_epsilon"].iloc[0] == numerical_epsilon(
        2.0, 20_000, 1e-6
    )
    refused = CliRunner().invoke(cli, ["simulate", "-m", "duchi", "-e", "1", "--shuffle-delta", "1e-6"])
    assert refused.exit_code != 0 and "frequency sweeps only" in refused.output


def test_huge_epsilon0_gives_no_amplification_instead_of_an_error():
    # e^−ε₀ underflows to 0 past ε₀ ≈ 745 (no clones) and e^ε₀ overflows past 709: both were errors
    rows = {row.method: row for row in shuffle_bounds(800.0, 1000, 1e-6, domain_size=3)}
    assert rows["numerical (clone mixture)"].epsilon == pytest.approx(800.0, rel=1e-6)
    assert rows["randomized response, k = 3"].epsilon == pytest.approx(800.0, rel=1e-6)
    assert rows["best"].epsilon == pytest.approx(800.0, rel=1e-6)
    # and the safe rewriting of the threshold agrees with the plain formula where both are finite
    assert numerical_epsilon(30.0, 10**6, 1e-6) <= 30.0
