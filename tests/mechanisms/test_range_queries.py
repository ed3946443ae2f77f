"""Range and quantile queries: range-hierarchy and range-haar (docs/range-queries.md).

Statistical tests are seeded; each states its significance level α and
derives its tolerance from the analytical variance (z·SE), Bonferroni over
the rows it checks.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import chi2, norm

from ldp.aggregator import make_aggregator
from ldp.cli import cli
from ldp.client import encode_batch, make_encoder
from ldp.errors import ParameterError, SpecError
from ldp.range_math import rank_error
from ldp.simulations.ranges import haar_simulated, hierarchy_simulated
from ldp.specs.ranges import RangeHaar, RangeHierarchy

QUERIES = [(0, 0), (3, 40), (0, 10), (20, 63), (5, 5), (17, 18), (1, 62)]


def _population(d: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, rng.dirichlet(np.full(d, 0.5)))


def _truth(counts: np.ndarray, queries) -> np.ndarray:
    return np.array([counts[a : b + 1].sum() for a, b in queries], dtype=float)


# -- privacy: the exact ratio of one report, from first principles ---------------------------------


def _hierarchy_output_probabilities(spec: RangeHierarchy, index: int) -> dict:
    """P[(level, bits)] of one report of domain index ``index``, by enumeration (tiny specs only)."""
    out = {}
    h = spec.levels
    for level in range(1, h + 1):
        width = spec.level_width(level)
        node = index // spec.branching ** (h - level)
        for bits in itertools.product((0, 1), repeat=width):
            prob = Fraction(1, h)
            for position, bit in enumerate(bits):
                one = spec.p if position == node else spec.q
                prob *= one if bit else 1 - one
            out[(level, bits)] = prob
    return out


def _haar_output_probabilities(spec: RangeHaar, index: int) -> dict:
    from ldp.client.ranges import haar_sign

    out = {}
    h = spec.levels
    for level in range(h):
        for j in range(1 << level):
            sign = int(haar_sign(index, spec.leaves, level, j))
            for bit in (0, 1):
                kept = (bit == 1) == (sign > 0)
                out[(level, j, bit)] = Fraction(1, h * (1 << level)) * (spec.p if kept else 1 - spec.p)
    return out


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_hierarchy_exact_ratio_over_every_pair_and_output_is_the_claim(epsilon):
    spec = RangeHierarchy(domain=range(5), epsilon=epsilon, branching=2)
    tables = [_hierarchy_output_probabilities(spec, i) for i in range(spec.domain_size)]
    worst = max(a[y] / b[y] for a, b in itertools.permutations(tables, 2) for y in a)
    assert worst == spec.privacy_ratio
    assert math.log(worst) <= spec.epsilon and math.isclose(math.log(worst), epsilon, rel_tol=1e-9)
    assert all(sum(t.values()) == 1 for t in tables)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_haar_exact_ratio_over_every_pair_and_output_is_the_claim(epsilon):
    spec = RangeHaar(domain=range(7), epsilon=epsilon)
    tables = [_haar_output_probabilities(spec, i) for i in range(spec.domain_size)]
    worst = max(a[y] / b[y] for a, b in itertools.permutations(tables, 2) for y in a)
    assert worst == spec.privacy_ratio
    assert math.isclose(math.log(worst), epsilon, rel_tol=1e-9)
    assert all(sum(t.values()) == 1 for t in tables)


def test_haar_worst_pair_pieces_are_the_enumerated_distributions():
    """report_pieces: the first and last values' output distributions, grouped by likelihood ratio, exactly."""
    spec = RangeHaar(domain=range(8), epsilon=1.0)
    first, last = (_haar_output_probabilities(spec, i) for i in (0, 7))
    grouped: dict = {}
    for y in first:
        key = first[y] / last[y]
        a, b = grouped.get(key, (Fraction(0), Fraction(0)))
        grouped[key] = (a + first[y], b + last[y])
    (piece,) = spec.report_pieces()
    got = sorted(zip(np.exp(piece.log_p).tolist(), np.exp(piece.log_q).tolist()))
    want = sorted((float(a), float(b)) for a, b in grouped.values())
    assert np.allclose(got, want, rtol=1e-12)


def test_an_edited_probability_above_the_claim_is_refused():
    spec = RangeHaar(domain=range(4), epsilon=1.0)
    with pytest.raises(SpecError, match="epsilon"):
        RangeHaar(domain=range(4), epsilon=1.0, p=spec.p + Fraction(1, 1000))
    with pytest.raises(SpecError, match="p must exceed q"):
        RangeHierarchy(domain=range(4), epsilon=1.0, p="1/4", q="1/2")


def test_one_report_from_the_csprng_has_the_exact_distribution():
    """Haar's single-report encoder (OS CSPRNG): χ² goodness of fit to the enumerated law, α = 1e-4."""
    spec = RangeHaar(domain=range(4), epsilon=1.0)
    law = _haar_output_probabilities(spec, 2)
    encoder = make_encoder(spec)
    n = 6000
    seen: dict = dict.fromkeys(law, 0)
    for _ in range(n):
        r = encoder.encode(2)
        extra = dict(r.extra)
        seen[(extra["level"], extra["index"], extra["bit"])] += 1
    expected = np.array([float(law[y]) * n for y in law])
    stat = float(((np.array([seen[y] for y in law]) - expected) ** 2 / expected).sum())
    assert stat < chi2.isf(1e-4, len(law) - 1)


def test_hierarchy_report_has_no_bits_beyond_its_level():
    spec = RangeHierarchy(domain=range(16), epsilon=2.0, branching=4)
    batch = encode_batch(spec, list(range(16)) * 20, np.random.default_rng(3))
    bits = np.unpackbits(batch.column("bits"), axis=1)
    width = np.power(4, batch.column("level") + 1)
    assert not np.any(bits.astype(bool) & (np.arange(16)[None, :] >= width[:, None]))


# -- range answers: unbiased, with the analytical variance -----------------------------------------


@pytest.mark.parametrize(
    ("cls", "inference"), [(RangeHierarchy, "none"), (RangeHierarchy, "hay"), (RangeHaar, "none")]
)
def test_range_answers_are_unbiased_with_the_analytical_variance(cls, inference):
    """R seeded fast simulations: the mean within z·sqrt(Var/R) of the truth, the sample variance inside the
    χ²(R − 1) interval of Var (two-sided α = 1e-3, Bonferroni over the ranges and the two checks)."""
    counts = _population(64, 20_000, seed=11)
    spec = cls(domain=range(64), epsilon=1.0)
    simulate = hierarchy_simulated if cls is RangeHierarchy else haar_simulated
    rng = np.random.default_rng(12)
    reps = 300
    answers = np.array(
        [simulate(spec, counts, rng).range_answers(QUERIES, inference)[0] for _ in range(reps)]
    )
    acc = simulate(spec, counts, rng)
    _, variance = acc.range_answers(QUERIES, inference, true_counts=counts)
    alpha = 1e-3 / (2 * len(QUERIES))
    z = norm.isf(alpha / 2)
    assert np.all(np.abs(answers.mean(axis=0) - _truth(counts, QUERIES)) <= z * np.sqrt(variance / reps))
    ratio = answers.var(axis=0, ddof=1) / variance
    low, high = chi2.ppf(alpha / 2, reps - 1) / (reps - 1), chi2.isf(alpha / 2, reps - 1) / (reps - 1)
    assert np.all((ratio > low) & (ratio < high)), ratio


def test_the_real_encoder_and_the_fast_simulator_agree():
    """Real batch encoder: range answers within z·SE of the truth (α = 1e-4, Bonferroni), SE analytical."""
    counts = _population(20, 5_000, seed=2)
    values = np.repeat(np.arange(20), counts)
    queries = [(0, 4), (5, 19), (7, 7)]
    for spec in (RangeHierarchy(domain=range(20), epsilon=1.0), RangeHaar(domain=range(20), epsilon=1.0)):
        acc = make_aggregator(spec)
        acc.add_batch(encode_batch(spec, values, np.random.default_rng(4), indices=True))
        answers, variance = acc.range_answers(queries, true_counts=counts)
        z = norm.isf(1e-4 / (2 * len(queries)))
        assert np.all(np.abs(answers - _truth(counts, queries)) <= z * np.sqrt(variance))


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
@pytest.mark.parametrize(
    ("d", "branching"),
    [(16, 2), pytest.param(64, 4, marks=pytest.mark.slow), pytest.param(60, 3, marks=pytest.mark.slow)],
)
def test_consistency_never_increases_the_error(epsilon, d, branching):
    """Hay's inference vs the raw B-adic answers over every range of the domain.

    Exact: the mean analytical variance (both are unbiased, so it is the MSE)
    never increases. Statistical: over R seeded runs the paired difference of
    squared errors is not significantly positive (one-sided α = 1e-3).
    """
    counts = _population(d, 10_000, seed=d + branching)
    spec = RangeHierarchy(domain=range(d), epsilon=epsilon, branching=branching)
    rng = np.random.default_rng(int(epsilon * 10) + d)
    queries = [(a, b) for a in range(d) for b in range(a, d)]
    if len(queries) > 300:  # a seeded sample of the ranges
        queries = [queries[i] for i in rng.choice(len(queries), 300, replace=False)]
    acc = hierarchy_simulated(spec, counts, rng)
    raw_var = acc.range_answers(queries, "none", true_counts=counts)[1]
    hay_var = acc.range_answers(queries, "hay", true_counts=counts)[1]
    assert hay_var.mean() <= raw_var.mean()
    truth = _truth(counts, queries)
    diffs = []
    for _ in range(40):
        acc = hierarchy_simulated(spec, counts, rng)
        raw = acc.range_answers(queries, "none")[0]
        hay = acc.range_answers(queries, "hay")[0]
        diffs.append(np.mean((hay - truth) ** 2) - np.mean((raw - truth) ** 2))
    diffs = np.array(diffs)
    assert diffs.mean() <= norm.isf(1e-3) * diffs.std(ddof=1) / math.sqrt(diffs.size)


@pytest.mark.parametrize("cls", [RangeHierarchy, RangeHaar])
def test_quantile_rank_error_is_within_the_cdf_error(cls):
    """n = 200,000, D = 256, ε = 1: each quantile's rank error is within z·SE of its CDF (α = 1e-3, Bonferroni)."""
    counts = _population(256, 200_000, seed=5)
    spec = cls(domain=range(256), epsilon=1.0)
    simulate = hierarchy_simulated if cls is RangeHierarchy else haar_simulated
    acc = simulate(spec, counts, np.random.default_rng(6))
    levels = [0.5, 0.9, 0.99]
    table = acc.estimate(quantiles=levels)
    errors = rank_error(counts, [spec.index_of(v) for v in table["value"]], levels)
    z = norm.isf(1e-3 / (2 * len(levels)))
    assert np.all(errors <= z * table["std_error"].to_numpy()), (errors, table)
    assert np.all(errors <= 0.02)


def test_a_domain_beyond_the_leaf_limit_is_refused_in_one_line():
    with pytest.raises(SpecError, match="8,192 padded leaves exceed 4,096"):
        RangeHaar(domain=range(5000), epsilon=1.0)
    assert RangeHierarchy(domain=range(4096), epsilon=1.0).leaves == 4096


@pytest.mark.parametrize("cls", [RangeHierarchy, RangeHaar])
def test_the_domain_and_epsilon_are_checked_by_the_frequency_oracles_validation(cls):
    """The range specs reuse the frequency oracles' domain and ε checks (one DomainSpec), with their messages."""
    from ldp.specs.frequency import GRR, DomainSpec
    from ldp.specs.ranges import RangeSpec

    assert issubclass(RangeSpec, DomainSpec)
    for name in ("__init__", "domain_size", "domain_index", "index_of", "max_epsilon", "max_domain_size"):
        assert name not in vars(RangeSpec), name
    for domain, epsilon in (([1], 1.0), ([1, 2], -1.0), ([1, 2], float("nan")), ([1, 2], 1e6)):
        with pytest.raises(SpecError) as theirs:
            GRR(domain=domain, epsilon=epsilon)
        with pytest.raises(SpecError) as ours:
            cls(domain=domain, epsilon=epsilon)
        assert str(ours.value) == str(theirs.value).replace("grr", cls.mechanism)
    spec = cls(domain=["low", "mid", "high"], epsilon=1.0)
    assert (spec.domain_size, spec.index_of("high")) == (3, 2)


def test_estimate_options_are_checked():
    spec = RangeHierarchy(domain=range(8), epsilon=1.0)
    acc = hierarchy_simulated(spec, np.full(8, 10), np.random.default_rng(0))
    with pytest.raises(ParameterError, match="quantiles must be"):
        acc.estimate(quantiles=[0.5, 1.0])
    with pytest.raises(ParameterError, match="inference must be"):
        acc.estimate(inference="bogus")
    with pytest.raises(ParameterError, match="consistency 'norm-sub' does not apply"):
        acc.estimate(consistency="norm-sub")
    with pytest.raises(ParameterError, match="empty"):
        acc.estimate(ranges=[(5, 2)])
    table = acc.estimate(ranges=[(0, 7)])
    assert math.isclose(table["estimate"][0], 80.0) and table["std_error"][0] < 1e-9  # the root is n


# -- the command line --------------------------------------------------------------------------------


def test_cli_range_and_quantile_tables(tmp_path):
    runner = CliRunner()
    spec_path, values, reports = tmp_path / "s.json", tmp_path / "v.txt", tmp_path / "r.jsonl"
    domain = ",".join(str(i) for i in range(32))
    assert (
        runner.invoke(
            cli, ["spec", "range-hierarchy", "--epsilon", "2", "--domain", domain, "-o", str(spec_path)]
        ).exit_code
        == 0
    )
    values.write_text("".join(f"{i % 32}\n" for i in range(3000)))
    assert (
        runner.invoke(cli, ["encode", "--spec", str(spec_path), str(values), "-o", str(reports)]).exit_code
        == 0
    )
    out = tmp_path / "ranges.csv"
    got = runner.invoke(
        cli,
        [
            "aggregate",
            "--spec",
            str(spec_path),
            str(reports),
            "--range",
            "0:15",
            "--range",
            "3:3",
            "-o",
            str(out),
        ],
    )
    assert got.exit_code == 0, got.output
    import pandas as pd

    table = pd.read_csv(out)
    assert list(table.columns) == ["low", "high", "estimate", "std_error", "ci_low", "ci_high", "proportion"]
    assert len(table) == 2 and np.all(table["std_error"] > 0)
    got = runner.invoke(cli, ["aggregate", "--spec", str(spec_path), str(reports), "--quantiles", "0.5,0.9"])
    assert got.exit_code == 0 and "quantile" in got.output
    bad = runner.invoke(cli, ["aggregate", "--spec", str(spec_path), str(reports), "--range", "7"])
    assert bad.exit_code == 2 and "LO:HI" in bad.output and "Traceback" not in bad.output
    grr = tmp_path / "grr.json"
    runner.invoke(cli, ["spec", "grr", "--epsilon", "1", "--domain", "a,b", "-o", str(grr)])
    bad = runner.invoke(cli, ["aggregate", "--spec", str(grr), str(reports), "--range", "a:b"])
    assert bad.exit_code == 2 and "range spec" in bad.output
