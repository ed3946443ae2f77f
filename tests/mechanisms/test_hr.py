"""Hadamard response (ldp.HR, docs/mechanisms.md#hr): layout, exact privacy, client, decode, variance.

Statistical checks state their significance level: α = 1e-6 per test,
split over the checks it makes (Bonferroni). Tests with seeded generators
are deterministic; α is the chance a correct implementation fails under a
random seed. The on-device encoder's coins come from the CSPRNG and cannot
be seeded, so its false-failure probability is its α.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.linalg import hadamard
from scipy.stats import chi2, norm

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.hadamard import HadamardAccumulator
from ldp.batch import ReportBatch
from ldp.client import encode_batch, make_encoder
from ldp.client.hadamard import hadamard_outputs
from ldp.errors import ParameterError, ReportError
from ldp.exact import exp_lower_bound
from ldp.hadamard_math import fwht, hr_variance, row_positions, signed_counts
from ldp.report import Report
from ldp.simulations.hadamard import hr_histogram

ALPHA = 1e-6

# (d, ε) covering B = 1, B > 1 with several full blocks, one value per block (b = 2), and B > 1 with
# every value in the first block (d = 3, ε = 0.7: B = 2, b = 4).
CASES = [(2, 0.5), (5, 0.5), (6, 1.0), (10, 2.0), (7, 4.0), (3, 0.7), (20, 1.5)]


def channel(spec: ldp.HR, x: int) -> list[Fraction]:
    """P[y | x] from the paper's definition, independently of the library's layout code."""
    b = spec.block_size
    block, row = divmod(x, b - 1)
    favoured = {block * b + int(c) for c in np.flatnonzero(hadamard(b)[row + 1] == 1)}
    inside, outside = spec.p / (b // 2), (1 - spec.p) / (spec.outputs - b // 2)
    return [inside if y in favoured else outside for y in range(spec.outputs)]


def z_quantile(tests: int) -> float:
    return float(norm.isf(ALPHA / (2 * tests)))


# -- layout and transform ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 4, 8, 64, 256])
def test_fwht_equals_dense_hadamard_product(size):
    rng = np.random.default_rng(size)
    x = rng.integers(-50, 50, (3, size))
    before = x.copy()
    assert np.array_equal(fwht(x, axis=1), x @ hadamard(size).T)
    assert np.array_equal(fwht(x.T, axis=0), (x @ hadamard(size).T).T)
    assert np.array_equal(x, before)  # the input is not changed


def test_fwht_refuses_other_lengths():
    with pytest.raises(ValueError, match="power-of-two"):
        fwht(np.zeros(6))


@pytest.mark.parametrize("size", [2, 4, 16, 64])
def test_row_positions_are_the_rows_plus_and_minus_entries(size):
    h = hadamard(size)
    half = size // 2
    for r in range(1, size):
        plus = row_positions(np.full(half, r), np.arange(half), plus=True)
        minus = row_positions(np.full(half, r), np.arange(half), plus=False)
        assert sorted(plus.tolist()) == np.flatnonzero(h[r] == 1).tolist()
        assert sorted(minus.tolist()) == np.flatnonzero(h[r] == -1).tolist()


@pytest.mark.parametrize(("d", "epsilon"), CASES)
def test_layout_matches_the_paper(d, epsilon):
    e = math.exp(epsilon)
    blocks = 2 ** math.floor(math.log2(min(e, 2 * d)))  # the paper's block count
    spec = ldp.HR(range(d), epsilon, blocks=blocks)
    b = 2 ** math.ceil(math.log2(d / blocks + 1))
    assert (spec.blocks, spec.block_size, spec.outputs) == (blocks, b, blocks * b)
    assert spec.report_bits == math.ceil(math.log2(spec.outputs))
    for x in range(d):
        favoured = [y for y, q in enumerate(channel(spec, x)) if q == spec.in_probability]
        assert spec.output_set(x).tolist() == favoured and len(favoured) == b // 2


@pytest.mark.parametrize("d", [6, 20, 1000, 1024, 4096])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 3.0, 4.0, 6.0])
def test_default_blocks_minimize_the_mean_variance_over_uniform_data(d, epsilon):
    """Among the powers of two up to the paper's B, the default has the smallest mean n·Var at uniform data."""
    paper = 2 ** math.floor(math.log2(min(math.exp(epsilon), 2 * d)))
    uniform = np.full(d, 1 / d)

    def mean_variance(blocks):
        spec = ldp.HR(range(d), epsilon, blocks=blocks)
        return float(np.mean(spec.variance(uniform, 1)))  # the exact formula, g from the block sums

    candidates = [2**j for j in range(int(math.log2(paper)) + 1)]
    costs = {blocks: mean_variance(blocks) for blocks in candidates}
    chosen = ldp.HR(range(d), epsilon).blocks
    assert chosen in costs and costs[chosen] <= min(costs.values()) * (1 + 1e-9)


@pytest.mark.parametrize(("d", "epsilon"), CASES)
def test_client_maps_members_onto_the_set_and_its_complement(d, epsilon):
    spec = ldp.HR(range(d), epsilon)
    half, k = spec.block_size // 2, spec.outputs
    for x in range(d):
        inside = hadamard_outputs(spec, [x] * half, [True] * half, np.arange(half))
        outside = hadamard_outputs(spec, [x] * (k - half), [False] * (k - half), np.arange(k - half))
        assert sorted(inside.tolist()) == spec.output_set(x).tolist()
        assert sorted(inside.tolist() + outside.tolist()) == list(range(k))


@pytest.mark.parametrize(("d", "epsilon"), CASES)
def test_on_device_draw_maps_onto_every_output_once(d, epsilon, monkeypatch):
    """The single encoder's walk: b/2 outcomes of p_in on C_x, K − b/2 of p_out off it, each output once."""
    import ldp.client.hadamard as client_hadamard

    spec = ldp.HR(range(d), epsilon)
    encoder = client_hadamard.HadamardEncoder(spec)
    half, k = spec.block_size // 2, spec.outputs
    assert encoder._table.groups == ((half, spec.in_probability), (k - half, spec.out_probability))
    for x in range(d):
        outcomes = [(0, j) for j in range(half)] + [(1, u) for u in range(k - half)]
        outputs = []
        for outcome in outcomes:
            monkeypatch.setattr(client_hadamard, "draw", lambda _table, outcome=outcome: outcome)
            outputs.append(encoder.encode(x).value)
        assert sorted(outputs) == list(range(k))
        assert set(outputs[:half]) == set(spec.output_set(x).tolist())


# -- exact privacy -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "epsilon"), CASES)
def test_exact_ratio_equals_claim(d, epsilon):
    spec = ldp.HR(range(d), epsilon)
    channels = [channel(spec, x) for x in range(d)]
    assert all(sum(c) == 1 for c in channels)
    ratio = max(a[y] / b[y] for a, b in itertools.permutations(channels, 2) for y in range(spec.outputs))
    assert ratio == spec.privacy_ratio == spec.ratio
    assert ratio <= exp_lower_bound(epsilon)
    assert 0 <= epsilon - spec.epsilon_achieved < 1e-12
    # Claiming a hair less than the probabilities give is refused.
    with pytest.raises(ParameterError, match="claims epsilon"):
        ldp.HR(range(d), epsilon * (1 - 1e-6), blocks=spec.blocks, p=spec.p)


@pytest.mark.parametrize(("d", "epsilon"), CASES)
def test_report_pieces_are_the_worst_pair(d, epsilon):
    """The pieces equal the output distributions of the pair whose hockey-stick divergence is largest."""
    spec = ldp.HR(range(d), epsilon)
    (part,) = spec.report_pieces()
    p, q = np.exp(part.log_p), np.exp(part.log_q)
    assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
    channels = [np.array([float(v) for v in channel(spec, x)]) for x in range(d)]
    for t in (0.0, epsilon / 2):
        worst = max(np.maximum(a - math.exp(t) * b, 0).sum() for a, b in itertools.permutations(channels, 2))
        assert np.maximum(p - math.exp(t) * q, 0).sum() == pytest.approx(worst, rel=1e-12)


def test_bad_parameters_are_refused():
    with pytest.raises(ParameterError, match="power of two"):
        ldp.HR(range(10), 1.0, blocks=3)
    with pytest.raises(ParameterError, match="at most 2d"):
        ldp.HR(range(2), 1.0, blocks=8)
    with pytest.raises(ParameterError, match="1/\\(2B\\)"):
        ldp.HR(range(10), 1.0, blocks=2, p="1/4")


def test_json_round_trip_and_explicit_parameters():
    spec = ldp.HR(["x", "y", "z", 4], 1.25)
    again = ldp.load_spec(spec.to_json())
    assert again == spec and again.fingerprint == spec.fingerprint
    assert ldp.HR(spec.domain, spec.epsilon, blocks=spec.blocks, p=spec.p) == spec


# -- estimator and variance ------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "epsilon"), CASES)
def test_statistic_moments_match_the_variance_formula(d, epsilon):
    """Exact E[L | u] and E[L² | u] by enumeration give the documented mean and fixed-data variance."""
    spec = ldp.HR(range(d), epsilon)
    e, blocks, b = spec.ratio, spec.blocks, spec.block_size
    scale = (2 * blocks - 1 + e) / (e - 1)
    weights = [Fraction(i + 1) for i in range(d)]
    f = [w / sum(weights) for w in weights]
    for x in range(d):
        block, row = divmod(x, b - 1)
        sign = {block * b + c: int(hadamard(b)[row + 1, c]) for c in range(b)}
        first = [sum(q * scale * sign.get(y, 0) for y, q in enumerate(channel(spec, u))) for u in range(d)]
        second = [
            sum(q * scale**2 * abs(sign.get(y, 0)) for y, q in enumerate(channel(spec, u))) for u in range(d)
        ]
        assert first == [1 if u == x else 0 for u in range(d)]  # unbiased for every input
        exact = sum(fu * (s - m * m) for fu, s, m in zip(f, second, first, strict=True))
        g = sum(fu for u, fu in enumerate(f) if u // (b - 1) == block)
        assert hr_variance(float(f[x]), float(g), 1, e, blocks) == pytest.approx(float(exact), rel=1e-12)
        assert spec.variance(np.array([float(v) for v in f]), 1)[x] == pytest.approx(float(exact), rel=1e-12)


def test_high_privacy_hr_is_the_classic_one():
    spec = ldp.HR(range(10), 0.5)
    e = float(spec.ratio)
    assert spec.blocks == 1
    assert spec.variance_star == pytest.approx((e + 1) ** 2 / (e - 1) ** 2, rel=1e-12)
    assert spec.p_star == pytest.approx((e - 1) / (e + 1), rel=1e-12) and spec.q_star == 0


def test_decode_equals_the_direct_sum_and_is_linear():
    """S_x from the transform equals Σ over reports of the ±1 statistic; merging adds the decodes."""
    spec = ldp.HR(range(40), 2.0)
    rng = np.random.default_rng(7)
    outputs = rng.integers(0, spec.outputs, 5000)
    hist = np.bincount(outputs, minlength=spec.outputs)
    signed, block_reports = signed_counts(hist, spec.blocks, spec.block_size, spec.domain_size)
    b = spec.block_size
    for x in range(spec.domain_size):
        block, row = divmod(x, b - 1)
        local = outputs - block * b
        mine = (local >= 0) & (local < b)
        assert signed[x] == int(hadamard(b)[row + 1, local[mine]].sum())
        assert block_reports[x] == int(mine.sum())
    a, c = (
        HadamardAccumulator.from_histogram(spec, hist[:]),
        HadamardAccumulator.from_histogram(spec, hist * 2),
    )
    assert np.array_equal(a.merge(c).support_counts, 3 * signed)


@given(st.lists(st.lists(st.integers(0, 7), max_size=20), min_size=3, max_size=3))
def test_merge_is_associative(parts):
    spec = ldp.HR(range(6), 1.0)  # K = 8 outputs
    accs = []
    for part in parts:
        acc = make_aggregator(spec)
        acc.add_batch(ReportBatch(spec=spec.fingerprint, values=np.array(part, dtype=np.int64)))
        accs.append(acc)
    a, b, c = accs
    assert a.merge(b).merge(c) == a.merge(b.merge(c)) == c.merge(a).merge(b)
    assert a.merge(b).merge(c).n == sum(map(len, parts))


def test_bad_reports_are_refused():
    spec = ldp.HR(range(6), 1.0)
    acc = make_aggregator(spec)
    with pytest.raises(ReportError, match="out of range"):
        acc.add(Report(spec=spec.fingerprint, value=spec.outputs))
    with pytest.raises(ReportError):
        acc.add_batch(ReportBatch(spec=spec.fingerprint, values=np.array([0, -1])))
    assert acc.n == 0


@pytest.mark.parametrize(("d", "epsilon"), [(5, 0.5), (10, 2.0), (20, 1.5)])
def test_unbiased_with_the_documented_variance(d, epsilon):
    """Seeded batch encoder, R runs: mean within z·SE of the truth, sample variance within the χ² band."""
    spec = ldp.HR(range(d), epsilon)
    rng = np.random.default_rng(11)
    counts = rng.multinomial(4000, np.linspace(3, 1, d) / np.linspace(3, 1, d).sum())
    n, repeats = int(counts.sum()), 200
    values = np.repeat(np.arange(d), counts)
    estimates = np.empty((repeats, d))
    plug_in = np.empty((repeats, d))
    for i in range(repeats):
        acc = make_aggregator(spec)
        acc.add_batch(encode_batch(spec, values, rng, indices=True))
        table = acc.estimate()
        estimates[i] = table["estimate"].to_numpy() / n
        plug_in[i] = table["std_error"].to_numpy() / n
    variance = spec.variance(counts / n, n)
    tests = 3 * d
    z = z_quantile(tests)
    assert np.all(np.abs(estimates.mean(axis=0) - counts / n) <= z * np.sqrt(variance / repeats))
    low, high = chi2.ppf(ALPHA / (2 * tests), repeats - 1), chi2.isf(ALPHA / (2 * tests), repeats - 1)
    ratio = estimates.var(axis=0, ddof=1) * (repeats - 1) / variance
    assert np.all((low <= ratio) & (ratio <= high))
    # The plug-in standard error is close to the theoretical one (its relative spread is O(1/sqrt(n))).
    assert np.allclose(plug_in.mean(axis=0), np.sqrt(variance), rtol=0.05)


# -- the client through its real coins, and the fast simulator ----------------------------------------


def _chi2_ok(observed: np.ndarray, expected: np.ndarray, tests: int) -> bool:
    stat = float(((observed - expected) ** 2 / expected).sum())
    return stat <= chi2.isf(ALPHA / tests, observed.size - 1)


@pytest.mark.parametrize(("d", "epsilon"), [(5, 0.5), (6, 1.0), (3, 0.7)])
def test_on_device_encoder_has_the_exact_distribution(d, epsilon):
    """CSPRNG coins (unseeded): the outputs of two inputs fit their exact channels (χ², α = 1e-6)."""
    spec = ldp.HR(range(d), epsilon)
    encoder = make_encoder(spec)
    draws = 3000
    for x in (0, d - 1):
        outputs = [encoder.encode(x).value for _ in range(draws)]
        observed = np.bincount(outputs, minlength=spec.outputs)
        expected = draws * np.array([float(q) for q in channel(spec, x)])
        assert _chi2_ok(observed, expected, tests=2)


def test_on_device_encoder_keeps_the_ratio_empirically():
    """Two values of different blocks (B = 2): per output, P̂[y | x0] − e^ε·P̂[y | x1] is not significantly > 0.

    One-sided z-tests in both directions over the K outputs, family-wise α = 1e-6 (CSPRNG, unseeded).
    """
    spec = ldp.HR(range(6), 1.0, blocks=2)  # B = 2, b = 4: values 0-2 in block 0, 3-5 in block 1
    assert spec.layout([0, 5])[0].tolist() == [0, 1]
    encoder = make_encoder(spec)
    draws = 20_000
    freq = [
        np.bincount([encoder.encode(x).value for _ in range(draws)], minlength=spec.outputs) / draws
        for x in (0, 5)
    ]
    e = math.exp(spec.epsilon)
    z = z_quantile(2 * spec.outputs)
    for a, b in ((freq[0], freq[1]), (freq[1], freq[0])):
        se = np.sqrt(a * (1 - a) / draws + e**2 * b * (1 - b) / draws) + 1e-12
        assert ((a - e * b) / se).max() < z


@pytest.mark.parametrize(("d", "epsilon"), [(5, 0.5), (10, 2.0), (7, 4.0)])
def test_batch_encoder_and_fast_simulator_have_the_exact_histogram(d, epsilon):
    """Faithful (batch encoder) and fast (exact histogram draw) both fit n·Σ f_x Q(·|x) (χ², seeded)."""
    spec = ldp.HR(range(d), epsilon)
    rng = np.random.default_rng(5)
    counts = rng.multinomial(200_000, np.linspace(1, 4, d) / np.linspace(1, 4, d).sum())
    expected = sum(c * np.array([float(q) for q in channel(spec, x)]) for x, c in enumerate(counts))
    faithful = np.bincount(
        encode_batch(spec, np.repeat(np.arange(d), counts), rng, indices=True).values, minlength=spec.outputs
    )
    fast = hr_histogram(spec, counts, rng)
    assert fast.sum() == faithful.sum() == counts.sum()
    assert _chi2_ok(faithful, expected, tests=2)
    assert _chi2_ok(fast, expected, tests=2)


def test_fast_simulator_both_regimes_agree_with_the_estimate_path():
    """Values with few and with many holders (the two sampling branches); the generic estimate is unbiased."""
    from ldp.frequency_math import unbiased_frequency
    from ldp.simulations import fast

    spec = ldp.HR(range(30), 1.0)  # B = 2, b = 16: values with < 8 holders take one draw per user
    counts = np.array([0, 1, 3, 7, 8, 50, 400] + [100] * 23)
    n, repeats = int(counts.sum()), 300
    rng = np.random.default_rng(3)
    estimates = np.array(
        [
            unbiased_frequency(fast.frequency_support_counts(spec, counts, rng), n, spec.p_star, spec.q_star)
            for _ in range(repeats)
        ]
    )
    z = z_quantile(spec.domain_size)
    variance = spec.variance(counts / n, n)
    assert np.all(np.abs(estimates.mean(axis=0) - counts / n) <= z * np.sqrt(variance / repeats))
