"""CMS and HCMS (docs/mechanisms.md#cms): transform, estimator, variance, privacy pieces, simulators.

Statistical tests are seeded; each states its significance level α (1e-6,
Bonferroni over the values tested) and compares with z·SE from the variance
formulas of ldp.specs.sketch, never a widened tolerance.
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest
import scipy.linalg

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.sketch import CMSAccumulator, HCMSAccumulator
from ldp.client import encode_batch, make_encoder
from ldp.errors import ParameterError, ReportError
from ldp.hadamard_math import fwht
from ldp.report import Report
from ldp.simulations.fast import frequency_support_counts

ALPHA = 1e-6
SKETCHES = (ldp.CMS, ldp.HCMS)


def z_bound(tests: int) -> float:
    """Two-sided z at level ALPHA / tests (Bonferroni)."""
    return NormalDist().inv_cdf(1 - ALPHA / (2 * tests))


# -- transform and hashing ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [2, 4, 64, 1024])
def test_fwht_is_the_dense_hadamard_product(m):
    rng = np.random.default_rng(m)
    matrix = rng.integers(-50, 50, size=(5, m))
    assert np.array_equal(fwht(matrix), matrix @ scipy.linalg.hadamard(m))


def test_fwht_refuses_a_width_that_is_not_a_power_of_two():
    with pytest.raises(ParameterError, match="power-of-2"):
        fwht(np.zeros((2, 6), dtype=np.int64))


@pytest.mark.parametrize("cls", SKETCHES)
def test_positions_agree_one_by_one_and_in_bulk(cls):
    spec = cls(domain=["a", "b", 7, "é"], epsilon=1.0, k=8, m=16, salt=5)
    table = spec.domain_positions
    assert table.shape == (4, 8) and not table.flags.writeable
    for i, value in enumerate(spec.domain):
        assert [spec.position(value, j) for j in range(8)] == table[i].tolist()
    assert np.array_equal(spec.positions(["7"]), table[2:3])  # the text form of an integer hashes alike
    other = cls(domain=spec.domain, epsilon=1.0, k=8, m=16, salt=6)
    assert not np.array_equal(other.domain_positions, table)


# -- specs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", SKETCHES)
def test_spec_json_round_trip_and_report_bits(cls):
    spec = cls(domain=range(10), epsilon=2.0, k=64, m=256, salt=3)
    back = ldp.load_spec(spec.to_json())
    assert back == spec and back.fingerprint == spec.fingerprint
    expected = 256 + 6 if cls is ldp.CMS else 1 + 6 + 8
    assert spec.report_bits == expected
    default = cls(domain=range(10), epsilon=2.0)
    assert (default.k, default.m) == (1024, 1024)


def test_spec_validation():
    with pytest.raises(ParameterError, match="power of 2"):
        ldp.HCMS(domain=range(4), epsilon=1.0, m=6)
    assert ldp.CMS(domain=range(4), epsilon=1.0, m=6).m == 6
    with pytest.raises(ParameterError, match="above the limit"):
        ldp.CMS(domain=range(4), epsilon=1.0, k=1 << 14, m=1 << 11)
    with pytest.raises(ParameterError, match="claims epsilon"):
        ldp.CMS(domain=range(4), epsilon=1.0, p="3/4")  # (3/1)^2 = 9 > e
    with pytest.raises(ParameterError, match="must exceed 1/2"):
        ldp.HCMS(domain=range(4), epsilon=1.0, p="1/2")
    with pytest.raises(ParameterError, match="epsilon=50 is above 45"):
        ldp.CMS(domain=range(4), epsilon=50.0)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_privacy_ratio_and_pieces(epsilon):
    cms = ldp.CMS(domain=range(4), epsilon=epsilon)
    assert cms.privacy_ratio == (cms.p / (1 - cms.p)) ** 2
    hcms = ldp.HCMS(domain=range(4), epsilon=epsilon)
    assert hcms.privacy_ratio == hcms.p / (1 - hcms.p)
    for spec in (cms, hcms):
        assert spec.epsilon_achieved <= epsilon and epsilon - spec.epsilon_achieved < 1e-12
        pieces = spec.report_pieces()
        for part in pieces:  # every piece a distribution under both inputs
            assert math.fsum(np.exp(part.log_p)) == pytest.approx(
                1.0, abs=1e-12
            )  # exp of the logs: float rounding
            assert math.fsum(np.exp(part.log_q)) == pytest.approx(
                1.0, abs=1e-12
            )  # exp of the logs: float rounding
        worst = sum(float(np.max(part.log_p - part.log_q)) for part in pieces)
        assert worst == pytest.approx(spec.epsilon_achieved, abs=1e-12)


def test_support_probabilities():
    cms = ldp.CMS(domain=range(4), epsilon=1.0, m=32)
    assert cms.exact_q_star == cms.q + (cms.p - cms.q) / 32
    hcms = ldp.HCMS(domain=range(4), epsilon=1.0, m=32)
    assert hcms.exact_q_star == hcms.p / 32 + (1 - Fraction(1, 32)) / 2


# -- estimator -----------------------------------------------------------------------------------------


def apple_estimate(acc) -> np.ndarray:
    """Apple's server, literally: the k×m sketch M, (HCMS) M·H_mᵀ, then (m/(m−1))((1/k)Σ_j M[j, h_j(x)] − n/m)."""
    spec = acc.spec
    k, m, n = spec.k, spec.m, acc.n
    c = float(spec.c)
    if isinstance(acc, CMSAccumulator):  # M[j] += k(c/2·ṽ + 1/2), ṽ = 2·bits − 1
        sketch = k * (c / 2 * (2 * acc.ones - acc.reports[:, None]) + acc.reports[:, None] / 2)
    else:  # M[j, l] += k·c·(±1), then M ← M·H_mᵀ
        sketch = (k * c * (2 * acc.ones - acc.reports)) @ scipy.linalg.hadamard(m).T
    rows = np.arange(k)
    mean = sketch[rows, spec.domain_positions].sum(axis=1) / k
    return (m / (m - 1)) * (mean - n / m)


@pytest.mark.parametrize("cls", SKETCHES)
def test_estimate_is_apples_estimator(cls):
    spec = cls(domain=[f"v{i}" for i in range(12)], epsilon=1.5, k=16, m=32)
    rng = np.random.default_rng(11)
    acc = make_aggregator(spec)
    acc.add_batch(encode_batch(spec, rng.integers(0, 12, size=3000), rng, indices=True))
    table = acc.estimate()
    assert np.allclose(table["estimate"].to_numpy(), apple_estimate(acc), rtol=1e-10, atol=1e-6)
    assert list(table.columns) == ["value", "estimate", "std_error", "ci_low", "ci_high", "proportion"]
    clipped = acc.estimate(consistency="norm-sub")
    assert clipped["consistent"].min() >= 0
    np.testing.assert_array_equal(clipped["estimate"], table["estimate"])


def _true_counts(d: int) -> np.ndarray:
    """A skewed population (heavy values make the shared-hash term of the variance matter)."""
    counts = np.array([int(1600 / (i + 1)) for i in range(d)], dtype=np.int64)
    return counts


def _conditional_moments(spec, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of the count estimates given the spec's fixed hash functions, exactly.

    π(x, x′) = (1/k)·#{j : h_j(x) = h_j(x′)}; a report of x′ has E[Y] = π(x, x′) and
    Var[Y] = c²pq + π(1 − π) (CMS) or c² − π² (HCMS); the estimate is (m/(m−1))(ΣY − n/m).
    """
    k, m, n = spec.k, spec.m, int(counts.sum())
    table = spec.domain_positions
    pi = (table[:, None, :] == table[None, :, :]).sum(axis=2) / k  # (d, d)
    scale = m / (m - 1)
    mean = scale * (pi @ counts - n / m)
    c2 = float(spec.c**2)
    cms = isinstance(spec, ldp.CMS)
    per_report = c2 * float(spec.p * spec.q) + pi * (1 - pi) if cms else c2 - pi**2
    return mean, scale**2 * (per_report @ counts)


def _repeat_estimates(specs, counts: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(counts.size), counts)
    out = []
    for spec in specs:
        acc = make_aggregator(spec)
        acc.add_batch(encode_batch(spec, users, rng, indices=True))
        out.append(acc.estimate()["estimate"].to_numpy())
    return np.array(out)


@pytest.mark.slow  # repeated runs: fast representatives are GRR's (test_aggregator_statistics) and the exact mean below
@pytest.mark.parametrize("cls", SKETCHES)
def test_unbiased_with_the_documented_variance_over_random_hash_functions(cls):
    """Over hash families drawn at random (one salt per run), the mean is n_x and the variance count_variance."""
    d, runs = 12, 400
    counts = _true_counts(d)
    n = int(counts.sum())
    specs = [cls(domain=range(d), epsilon=2.0, k=8, m=16, salt=1000 + 8 * r) for r in range(runs)]
    estimates = _repeat_estimates(specs, counts, seed=7)
    others = float(np.sum(counts.astype(float) ** 2)) - counts.astype(float) ** 2
    variance = specs[0].count_variance(counts, n, others)
    z = z_bound(2 * d)
    mean = estimates.mean(axis=0)
    assert np.all(np.abs(mean - counts) <= z * np.sqrt(variance / runs)), (mean - counts) / np.sqrt(
        variance / runs
    )
    # the sample variance against the formula, with the SE of a variance from the sample's fourth moment
    centred = estimates - mean
    sample_var = centred.var(axis=0, ddof=1)
    fourth = (centred**4).mean(axis=0)
    se = np.sqrt(np.maximum(fourth - sample_var**2, 0) / runs)
    assert np.all(np.abs(sample_var - variance) <= z * se), (sample_var - variance) / se
    # the shared-hash term is a visible part of the variance at these (k, m) for the heavy value
    assert variance[1] > 1.05 * specs[0].count_variance(counts[1], n, 0.0)


@pytest.mark.parametrize("cls", SKETCHES)
def test_fixed_hash_estimates_have_the_exact_conditional_mean(cls):
    """With the hash functions fixed, the estimate's mean is the conditional mean (biased by collisions)."""
    d, runs = 12, 300
    counts = _true_counts(d)
    spec = cls(domain=range(d), epsilon=2.0, k=8, m=16, salt=77)
    mean, variance = _conditional_moments(spec, counts)
    estimates = _repeat_estimates([spec] * runs, counts, seed=8)
    z = z_bound(d)
    gap = estimates.mean(axis=0) - mean
    assert np.all(np.abs(gap) <= z * np.sqrt(variance / runs)), gap / np.sqrt(variance / runs)
    assert np.max(np.abs(mean - counts)) > 0  # collisions: the fixed-hash estimand is not n_x


@pytest.mark.parametrize("cls", SKETCHES)
def test_fast_simulator_draws_the_faithful_distribution(cls):
    """Support counts of the fast simulator and of real encoding: same conditional mean and variance."""
    d, runs = 10, 300
    counts = _true_counts(d)
    n = int(counts.sum())
    spec = cls(domain=range(d), epsilon=1.0, k=8, m=16, salt=3)
    rng = np.random.default_rng(21)
    fast = np.array([frequency_support_counts(spec, counts, rng) for _ in range(runs)], dtype=float)
    mean, variance = _conditional_moments(spec, counts)
    p_star, q_star = spec.p_star, spec.q_star
    # E[C_x] from the conditional mean of the estimate: C = n·q* + (p* − q*)·estimate
    support_mean = n * q_star + (p_star - q_star) * mean
    support_var = (p_star - q_star) ** 2 * variance
    z = z_bound(2 * d)
    gap = fast.mean(axis=0) - support_mean
    assert np.all(np.abs(gap) <= z * np.sqrt(support_var / runs)), gap / np.sqrt(support_var / runs)
    centred = fast - fast.mean(axis=0)
    sample_var = centred.var(axis=0, ddof=1)
    se = np.sqrt(np.maximum((centred**4).mean(axis=0) - sample_var**2, 0) / runs)
    assert np.all(np.abs(sample_var - support_var) <= z * se)


@pytest.mark.parametrize("cls", SKETCHES)
def test_simulate_fast_and_faithful_run(cls):
    from ldp.simulations import run

    for mode in ("fast", "faithful"):
        frame = run([cls.mechanism], [1.0], 2000, 16, repeats=1, seed=1, mode=mode)
        assert len(frame) == 1 and frame["mse"].notna().all() and frame["theory_mse"].iloc[0] > 0


# -- client and accumulator --------------------------------------------------------------------------


@pytest.mark.parametrize("cls", SKETCHES)
def test_single_and_batch_encoders_give_valid_reports(cls):
    spec = cls(domain=["x", "y", "z"], epsilon=1.0, k=4, m=8)
    encoder = make_encoder(spec)
    single = make_aggregator(spec)
    for _ in range(50):
        report = encoder.encode("y")
        assert Report.from_json(report.to_json()) == report
        single.add(report)
    batch = make_aggregator(spec)
    batch.add_batch(encode_batch(spec, ["y"] * 50, np.random.default_rng(0)))
    merged = single.merge(batch)
    assert merged.n == 100 and single.n == 50 and batch.n == 50
    assert merged == type(single).from_counts(spec, single.reports + batch.reports, single.ones + batch.ones)
    with pytest.raises(ParameterError, match="must not be None"):
        encoder.encode(None)


def test_values_outside_the_domain_can_be_encoded():
    """The sketch needs no domain: any value is hashed; the domain lists the values estimated."""
    spec = ldp.CMS(domain=["a", "b"], epsilon=1.0, k=4, m=8)
    report = make_encoder(spec).encode("not-listed")
    make_aggregator(spec).add(report)


def test_merge_is_associative():
    spec = ldp.HCMS(domain=range(5), epsilon=1.0, k=4, m=8)
    rng = np.random.default_rng(3)
    parts = []
    for _ in range(3):
        acc = make_aggregator(spec)
        acc.add_batch(encode_batch(spec, rng.integers(0, 5, size=40), rng, indices=True))
        parts.append(acc)
    a, b, c = parts
    assert a.merge(b).merge(c) == a.merge(b.merge(c)) == c.merge(a).merge(b)


def test_bad_reports_are_refused():
    cms = ldp.CMS(domain=range(5), epsilon=1.0, k=4, m=8)
    acc = make_aggregator(cms)
    with pytest.raises(ReportError, match=r"row 4 is out of range \[0, 4\)"):
        acc.add(Report(spec=cms.fingerprint, bits=b"\x00", extra=(("row", 4),)))
    with pytest.raises(ReportError, match="bits have 2 bytes"):
        acc.add(Report(spec=cms.fingerprint, bits=b"\x00\x00", extra=(("row", 0),)))
    hcms = ldp.HCMS(domain=range(5), epsilon=1.0, k=4, m=8)
    acc = make_aggregator(hcms)
    with pytest.raises(ReportError, match="bit 2 must be 0 or 1"):
        acc.add(Report(spec=hcms.fingerprint, extra=(("row", 0), ("column", 1), ("bit", 2))))
    with pytest.raises(ReportError, match=r"column 8 is out of range"):
        acc.add(Report(spec=hcms.fingerprint, extra=(("row", 0), ("column", 8), ("bit", 1))))
    assert acc.n == 0
    with pytest.raises(ParameterError, match="cannot exceed"):
        HCMSAccumulator.from_counts(hcms, np.zeros((4, 8), dtype=np.int64), np.ones((4, 8), dtype=np.int64))


@pytest.mark.slow  # empirical privacy through the CSPRNG client: GRR's (test_client_privacy) is the fast one
@pytest.mark.parametrize("cls", SKETCHES)
def test_empirical_privacy_through_the_real_client_is_near_the_claim(cls):
    """The audit of the CSPRNG client: no bound above ε (α = 1e-6), and the sketch events are not vacuous."""
    from ldp.audit import audit_claims, run_audit
    from ldp.audit_sources import python_client_sampler

    spec = cls(domain=["a", "b"], epsilon=1.0, k=16, m=64)
    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, 20_000, confidence=1 - ALPHA, claims=audit_claims(spec))
    worst = result.worst
    assert all(row.lower_bound <= row.claim.epsilon for row in result.rows)
    assert worst.lower_bound > 0.75 * spec.epsilon, worst  # the "x0's entry, not x1's" event attains e^ε


@pytest.mark.parametrize("n", [10, 200, 5000])
def test_row_bit_counts_equal_unpacking(n):
    from ldp.aggregator.sketch import row_bit_counts

    rng = np.random.default_rng(n)
    k, m = 8, 20
    bits = np.packbits(rng.integers(0, 2, size=(n, m), dtype=np.uint8), axis=1)
    rows = rng.integers(0, k, size=n)
    expected = np.zeros((k, m), dtype=np.int64)
    np.add.at(expected, rows, np.unpackbits(bits, axis=1, count=m).astype(np.int64))
    assert np.array_equal(row_bit_counts(bits, rows, k, m), expected)


def test_candidates_estimate_values_outside_the_domain(tmp_path):
    """A sketch estimates any candidate value; the domain's rows are the same values' rows."""
    from click.testing import CliRunner

    from ldp.cli import cli

    spec = ldp.CMS(domain=["a", "b"], epsilon=2.0, k=256, m=256)
    rng = np.random.default_rng(5)
    values = ["a"] * 2000 + ["zz"] * 3000 + ["b"] * 500
    acc = make_aggregator(spec)
    acc.add_batch(encode_batch(spec, values, rng))
    table = acc.estimate(candidates=["zz", "a", "a", "never"]).set_index("value")
    assert list(table.index) == ["zz", "a", "never"]
    domain_table = acc.estimate().set_index("value")
    assert table.loc["a", "estimate"] == pytest.approx(domain_table.loc["a", "estimate"], rel=1e-12)
    z = z_bound(2)
    for value, truth in (("zz", 3000), ("never", 0)):
        assert abs(table.loc[value, "estimate"] - truth) <= z * table.loc[value, "std_error"]
    with pytest.raises(ParameterError, match="not a single string"):
        acc.estimate(candidates="zz")
    # the command line: --candidates with a sketch spec
    spec_path, reports, cands = tmp_path / "cms.json", tmp_path / "r.jsonl", tmp_path / "c.txt"
    spec_path.write_text(spec.to_json())
    from ldp.aggregator.writers import write_reports

    write_reports([make_encoder(spec).encode(v) for v in values[::10]], reports, spec)
    cands.write_text("zz\na\n")
    result = CliRunner().invoke(
        cli, ["aggregate", "--spec", str(spec_path), str(reports), "--candidates", str(cands)]
    )
    assert result.exit_code == 0, result.output
    assert "zz" in result.output and "never" not in result.output
