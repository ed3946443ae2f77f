"""Subset selection (ss): exact privacy, the client's output distribution, unbiasedness and variance,
report checks, round trips and the fast simulator (docs/mechanisms.md#ss).

Statistical checks state their significance level α; tolerances are z·SE from the theoretical variance.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2, norm

import ldp
import ldp.client.subset as subset_client
from ldp.aggregator import SubsetAccumulator, make_aggregator
from ldp.batch import ReportBatch
from ldp.client import GeneratorSource, encode_batch, make_encoder
from ldp.client.randomness import bernoulli, uniform_below, uniform_below_each
from ldp.errors import ParameterError, ReportError
from ldp.exact import exp_lower_bound
from ldp.frequency_math import frequency_variance
from ldp.privacy.mechanisms import mechanism_loss
from ldp.report_check import check_report
from ldp.simulations.fast import frequency_support_counts
from ldp.specs.subset import SubsetSelection, default_subset_size

ALPHA = 1e-6


def channel(spec: SubsetSelection, x: int) -> dict[tuple[int, ...], Fraction]:
    """P[subset | x] from the mechanism's definition: holds x w.p. p, other members uniform without replacement."""
    d, w = spec.domain_size, spec.omega
    holding, other = spec.p / math.comb(d - 1, w - 1), (1 - spec.p) / math.comb(d - 1, w)
    return {s: holding if x in s else other for s in itertools.combinations(range(d), w)}


def packed_subset(subset: tuple[int, ...], d: int) -> bytes:
    bits = np.zeros(d, dtype=bool)
    bits[list(subset)] = True
    return np.packbits(bits).tobytes()


# -- spec and exact privacy ------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("omega", [1, 2, 3, 5])
def test_ratio_by_enumeration_equals_privacy_ratio(epsilon, omega):
    spec = SubsetSelection(range(6), epsilon, omega=omega)
    channels = [channel(spec, x) for x in range(6)]
    assert all(sum(c.values()) == 1 for c in channels)
    worst = max(a[s] / b[s] for a, b in itertools.permutations(channels, 2) for s in a)
    assert worst == spec.privacy_ratio
    assert worst <= exp_lower_bound(epsilon)
    assert epsilon - spec.epsilon_achieved < 1e-12


@pytest.mark.parametrize("omega", [1, 2, 4])
def test_probabilities_just_above_the_claim_are_refused(omega):
    spec = SubsetSelection(range(9), 1.0, omega=omega)
    assert SubsetSelection(range(9), 1.0, omega=omega, p=spec.p) == spec  # the calibrated p passes
    with pytest.raises(ParameterError, match="claims epsilon"):
        SubsetSelection(range(9), 1.0, omega=omega, p=spec.p + Fraction(1, 1 << 50))
    # the exact p of a known ratio: e^eps = 3 with omega = 2, d = 8: p·6/((1 − p)·2) = 3 at p = 1/2
    exact = SubsetSelection(range(8), math.log(3) + 1e-12, omega=2, p="1/2")
    assert exact.privacy_ratio == 3
    with pytest.raises(ParameterError, match="claims epsilon"):
        SubsetSelection(range(8), math.log(3) - 1e-9, omega=2, p="1/2")


def test_default_omega_and_formulas():
    for epsilon, d in [(0.5, 16), (1.0, 16), (1.0, 1024), (4.0, 128), (8.0, 10)]:
        spec = SubsetSelection(range(d), epsilon)
        e = math.exp(epsilon)
        assert spec.omega == max(1, round(d / (e + 1))) == default_subset_size(epsilon, d)
        w = spec.omega
        assert float(spec.p) == pytest.approx(w * e / (w * e + d - w), rel=1e-14)
        q = (w * (w - 1) * e + w * (d - w)) / ((d - 1) * (w * e + d - w))
        assert spec.q_star == pytest.approx(q, rel=1e-13)
        closed = ((w - 1) * e + d - w) * (w * e + d - w - 1) / (w * (d - w) * (e - 1) ** 2)
        assert spec.variance_star == pytest.approx(closed, rel=1e-12)
        assert spec.report_bits == d
    # below OUE's Var* in the medium regime, and tending to it for large d
    assert ldp.SubsetSelection(range(16), 1.0).variance_star < ldp.OUE(range(16), 1.0).variance_star
    big = ldp.SubsetSelection(range(1 << 16), 1.0).variance_star
    assert big == pytest.approx(4 * math.e / (math.e - 1) ** 2, rel=1e-3)


@pytest.mark.parametrize("d, epsilon", [(2, 1.0), (3, 0.5), (5, 2.0), (40, 4.0)])
def test_omega_one_is_grr(d, epsilon):
    spec, grr = SubsetSelection(range(d), epsilon, omega=1), ldp.GRR(range(d), epsilon)
    assert spec.p == grr.p and spec.exact_q_star == grr.q and spec.privacy_ratio == grr.privacy_ratio
    for mine, theirs in zip(spec.report_pieces(), grr.report_pieces()):
        np.testing.assert_array_equal(mine.log_p, theirs.log_p)
        np.testing.assert_array_equal(mine.log_q, theirs.log_q)
    # the subset {y} has GRR's probability of reporting y
    for x in range(min(d, 3)):
        assert channel(spec, x) == {(y,): grr.p if y == x else grr.q for y in range(d)}


@pytest.mark.parametrize("omega", [1, 2, 3])
def test_privacy_pieces_give_the_exact_hockey_stick_curve(omega):
    """δ(ε′) of one and of two reports from the accountant equals the enumeration over subsets (pairs)."""
    spec = SubsetSelection(range(5), 1.0, omega=omega)
    under_x, under_y = channel(spec, 0), channel(spec, 1)
    pairs_x = {(a, b): under_x[a] * under_x[b] for a in under_x for b in under_x}
    pairs_y = {(a, b): under_y[a] * under_y[b] for a in under_y for b in under_y}
    for reports, (px, py) in [(1, (under_x, under_y)), (2, (pairs_x, pairs_y))]:
        loss = mechanism_loss(spec, reports)
        for eps in (0.0, 0.3, 0.9, 1.5, 2.0):
            exact = sum(max(0.0, float(px[s]) - math.exp(eps) * float(py[s])) for s in px)
            assert float(loss.delta(eps)) == pytest.approx(exact, rel=1e-9, abs=1e-15)
    assert mechanism_loss(spec, 1).max_loss == pytest.approx(spec.epsilon_achieved, rel=1e-12)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"omega": 0}, "omega"),
        ({"omega": 5}, "omega"),
        ({"omega": 2, "p": "2/5"}, "must exceed omega/d"),
        ({"omega": 2, "p": "1"}, "p"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        SubsetSelection(range(5), 1.0, **kwargs)


def test_json_round_trip_and_registry():
    spec = SubsetSelection(["x", "y", 3, "é"], 0.8, omega=2)
    again = ldp.load_spec(spec.to_json())
    assert again == spec and again.fingerprint == spec.fingerprint
    assert (
        ldp.load_spec({"mechanism": "SS", "domain": ["x", "y", 3, "é"], "epsilon": 0.8, "omega": 2}) == spec
    )
    assert ldp.frequency_spec("ss", range(16), 1.0) == SubsetSelection(range(16), 1.0)
    assert ldp.best_frequency_mechanism(1.0, 16) == "ss"
    with pytest.raises(ParameterError, match="unknown fields"):
        ldp.load_spec(spec.to_dict() | {"g": 3})


# -- client ----------------------------------------------------------------------------------------


def _chi_square_against(counts: dict[tuple[int, ...], int], probs: dict[tuple[int, ...], Fraction]) -> None:
    n = sum(counts.values())
    observed = np.array([counts.get(s, 0) for s in probs])
    expected = np.array([float(p) * n for p in probs.values()])
    statistic = float(((observed - expected) ** 2 / expected).sum())
    assert statistic <= chi2.isf(ALPHA, len(probs) - 1), statistic


def _subsets(bits: np.ndarray, d: int) -> list[tuple[int, ...]]:
    rows = np.unpackbits(np.asarray(bits, dtype=np.uint8).reshape(len(bits), -1), axis=1)[:, :d]
    return [tuple(np.flatnonzero(row).tolist()) for row in rows]


def test_real_client_output_distribution_and_privacy():
    """The CSPRNG client's subsets follow the exact channel (χ², α = 1e-6), and so its empirical ratio."""
    spec = SubsetSelection(["a", "b", "c", "d", "e"], 1.0, omega=2)
    encoder = make_encoder(spec)
    n = 20_000
    for x, value in enumerate(["a", "c"]):
        reports = [encoder.encode(value) for _ in range(n)]
        subsets = _subsets(np.frombuffer(b"".join(r.bits for r in reports), dtype=np.uint8), 5)
        counts: dict[tuple[int, ...], int] = {}
        for s in subsets:
            counts[s] = counts.get(s, 0) + 1
        _chi_square_against(counts, channel(spec, 2 * x))


@pytest.mark.parametrize("d, omega", [(5, 2), (9, 1), (9, 4), (12, 11)])
def test_batch_encoder_output_distribution(d, omega):
    spec = SubsetSelection(range(d), 1.0, omega=omega)
    rng = np.random.default_rng(7 + d + omega)
    for x in (0, d - 1):
        batch = encode_batch(spec, np.full(30_000, x), rng, indices=True)
        assert np.all(np.bitwise_count(batch.bits).sum(axis=1) == omega)
        counts: dict[tuple[int, ...], int] = {}
        for s in _subsets(batch.bits, d):
            counts[s] = counts.get(s, 0) + 1
        _chi_square_against(counts, channel(spec, x))


def test_secure_batch_matches_the_reports_form():
    from ldp.client import SystemRandomSource

    spec = SubsetSelection(range(70), 0.5, omega=20)
    batch = encode_batch(spec, list(range(70)) * 3, SystemRandomSource())
    assert batch.bits.shape == (210, 9)
    assert np.all(np.bitwise_count(batch.bits).sum(axis=1) == 20)
    assert batch.bits[:, -1].tolist() == (batch.bits[:, -1] & 0xFC).tolist()  # padding zero


# -- aggregator ------------------------------------------------------------------------------------


def test_estimates_within_z_se_and_std_error_from_the_variance():
    """One seeded run of 200,000 users: every estimate within z·SE (α = 1e-6 family-wise)."""
    spec = SubsetSelection(range(32), 1.0)
    weights = np.arange(32, 0, -1, dtype=float)
    truth = np.floor(weights / weights.sum() * 200_000).astype(np.int64)
    n = int(truth.sum())
    rng = np.random.default_rng(11)
    acc = make_aggregator(spec)
    acc.add_batch(encode_batch(spec, np.repeat(np.arange(32), truth), rng, indices=True))
    table = acc.estimate()
    f_hat = np.clip(table["estimate"].to_numpy() / n, 0, 1)
    np.testing.assert_allclose(table["std_error"], n * np.sqrt(spec.variance(f_hat, n)), rtol=1e-12)
    true_se = n * np.sqrt(frequency_variance(truth / n, n, spec.p_star, spec.q_star))
    z = norm.isf(ALPHA / (2 * 32))
    assert np.all(np.abs(table["estimate"].to_numpy() - truth) <= z * true_se)
    assert int(acc.support_counts.sum()) == spec.omega * n


def test_repeated_runs_unbiased_with_the_stated_variance():
    """R = 400 seeded runs of 2,000 fixed users: mean within z·√(Var/R), spread χ²-consistent (α = 1e-6)."""
    spec = SubsetSelection(range(16), 1.0)
    runs, n = 400, 2000
    truth = np.array([600, 400, 300, 200] + [500 // 12] * 12)
    truth[0] += n - truth.sum()
    users = np.repeat(np.arange(16), truth)
    rng = np.random.default_rng(3)
    batch = encode_batch(spec, np.tile(users, runs), rng, indices=True)
    estimates = np.empty((runs, 16))
    for r in range(runs):
        acc = make_aggregator(spec)
        acc.add_batch(ReportBatch(spec=batch.spec, bits=batch.bits[r * n : (r + 1) * n]))
        estimates[r] = acc.estimate()["estimate"].to_numpy()
    variance = n**2 * frequency_variance(truth / n, n, spec.p_star, spec.q_star)
    z = norm.isf(ALPHA / (2 * 16))
    assert np.all(np.abs(estimates.mean(axis=0) - truth) <= z * np.sqrt(variance / runs))
    statistic = (runs - 1) * estimates.var(axis=0, ddof=1) / variance
    assert np.all(statistic >= chi2.ppf(ALPHA / 32, runs - 1))
    assert np.all(statistic <= chi2.isf(ALPHA / 32, runs - 1))


def test_merge_is_associative_and_counts_are_checked():
    spec = SubsetSelection(range(10), 1.5, omega=3)
    rng = np.random.default_rng(5)
    parts = []
    for size in (10, 0, 37):
        acc = make_aggregator(spec)
        acc.add_batch(encode_batch(spec, rng.integers(0, 10, size), rng, indices=True))
        parts.append(acc)
    a, b, c = parts
    left, right = a.merge(b).merge(c), a.merge(b.merge(c))
    np.testing.assert_array_equal(left.support_counts, right.support_counts)
    assert isinstance(left, SubsetAccumulator) and left.n == right.n == 47
    with pytest.raises(ParameterError, match="omega"):
        SubsetAccumulator.from_counts(spec, np.ones(10, dtype=np.int64), 4)


def test_reports_without_omega_bits_are_rejected():
    spec = SubsetSelection(range(10), 1.5, omega=3)
    good = make_encoder(spec).encode(4)
    assert check_report(spec, good).bits == good.bits
    for subset in [(1, 2), (1, 2, 3, 4), ()]:
        bad = ldp.Report(spec=spec.fingerprint, bits=packed_subset(subset, 10))
        with pytest.raises(ReportError, match="exactly 3"):
            check_report(spec, bad)
        with pytest.raises(ReportError, match="exactly omega"):
            make_aggregator(spec).add_batch(
                ReportBatch(
                    spec=spec.fingerprint, bits=np.frombuffer(bad.bits, dtype=np.uint8).reshape(1, -1)
                )
            )


def test_read_rejects_a_wrong_weight_row(tmp_path):
    from ldp.aggregator.io import read_reports

    spec = SubsetSelection(range(10), 1.5, omega=3)
    encoder = make_encoder(spec)
    lines = [encoder.encode(v).to_json() for v in (1, 2, 3)]
    lines.insert(1, ldp.Report(spec=spec.fingerprint, bits=packed_subset((0, 9), 10)).to_json())
    path = tmp_path / "reports.jsonl"
    path.write_text("\n".join(lines) + "\n")
    chunks = list(read_reports([path], spec))
    assert sum(len(c.batch) for c in chunks) == 3
    rejects = [r for c in chunks for r in c.rejects]
    assert len(rejects) == 1 and "exactly 3" in rejects[0].detail and rejects[0].line == 2


# -- fast simulator --------------------------------------------------------------------------------


def _exact_covariance(spec: SubsetSelection, counts: np.ndarray) -> np.ndarray:
    d, w, p = spec.domain_size, spec.omega, float(spec.p)
    p_star, q_star = spec.p_star, spec.q_star
    both_other = (p * (w - 1) * (w - 2) + (1 - p) * w * (w - 1)) / ((d - 1) * (d - 2))
    both_mine = p * (w - 1) / (d - 1)
    n = counts.sum()
    cov = np.empty((d, d))
    for u in range(d):
        for v in range(d):
            if u == v:
                cov[u, v] = counts[u] * p_star * (1 - p_star) + (n - counts[u]) * q_star * (1 - q_star)
            else:
                mine = counts[u] * (both_mine - p_star * q_star) + counts[v] * (both_mine - p_star * q_star)
                cov[u, v] = mine + (n - counts[u] - counts[v]) * (both_other - q_star**2)
    return cov


# 4,000 runs of the fast simulator take about a second: slow (test_simulate checks it against the encoder fast)
@pytest.mark.parametrize("draw", [pytest.param("fast", marks=pytest.mark.slow), "faithful"])
def test_fast_simulator_draws_the_exact_joint_distribution(draw):
    """Means and covariances of the support counts match the exact ones (z-tests, α = 1e-6 Bonferroni)."""
    spec = SubsetSelection(range(6), 0.5, omega=2)
    counts = np.array([400, 250, 150, 100, 60, 40])
    rng = np.random.default_rng(17 if draw == "fast" else 18)
    runs = 4000
    if draw == "fast":
        draws = np.array([frequency_support_counts(spec, counts, rng) for _ in range(runs)])
    else:
        batch = encode_batch(spec, np.tile(np.repeat(np.arange(6), counts), runs), rng, indices=True)
        rows = np.unpackbits(batch.bits, axis=1)[:, :6].reshape(runs, counts.sum(), 6)
        draws = rows.sum(axis=1)
    n = counts.sum()
    assert np.all(draws.sum(axis=1) == spec.omega * n)  # every report supports exactly omega values
    mean = spec.p_star * counts + spec.q_star * (n - counts)
    cov = _exact_covariance(spec, counts)
    tests = 6 + 15
    z = norm.isf(ALPHA / (2 * tests))
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= z * np.sqrt(np.diag(cov) / runs))
    centered = draws - mean
    for u, v in itertools.combinations(range(6), 2):
        products = centered[:, u] * centered[:, v]
        assert abs(products.mean() - cov[u, v]) <= z * products.std(ddof=1) / math.sqrt(runs), (u, v)


def test_fast_simulator_large_cells_fall_back_to_exact_margins(monkeypatch):
    import ldp.simulations.subset as fast_subset

    monkeypatch.setattr(fast_subset, "JOINT_LIMIT", 1)
    spec = SubsetSelection(range(8), 1.0, omega=2)
    counts = np.array([300, 100, 50, 50, 0, 0, 0, 500])
    rng = np.random.default_rng(2)
    draws = np.array([frequency_support_counts(spec, counts, rng) for _ in range(3000)])
    n = counts.sum()
    mean = spec.p_star * counts + spec.q_star * (n - counts)
    var = counts * spec.p_star * (1 - spec.p_star) + (n - counts) * spec.q_star * (1 - spec.q_star)
    z = norm.isf(ALPHA / 16)
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= z * np.sqrt(var / 3000))


# -- audit through the real client -----------------------------------------------------------------


@pytest.mark.slow  # fast representatives: test_audit's GRR audits (consistent at the claim, flagged at 1.15 ε)
def test_audit_of_the_real_client_is_consistent_and_catches_a_larger_epsilon():
    """Clopper–Pearson lower bounds (α = 1e-6): within the claim at ε = 1, above it for a client running ε = 1.6."""
    from ldp.audit import audit_claims, run_audit
    from ldp.audit_sources import python_client_sampler

    honest = SubsetSelection(range(8), 1.0, omega=3)
    with python_client_sampler(honest) as sampler:
        result = run_audit(honest, sampler, 10_000, confidence=1 - ALPHA, claims=audit_claims(honest))
    assert not result.violation
    assert all(row.lower_bound <= row.claim.epsilon for row in result.rows)
    assert result.worst.lower_bound > 0.5  # the event "bit x0 = 1, bit x1 = 0" is tight
    louder = SubsetSelection(range(8), 1.6, omega=3)
    with python_client_sampler(louder) as sampler:
        result = run_audit(honest, sampler, 20_000, confidence=1 - ALPHA, claims=audit_claims(honest))
    assert result.violation and result.worst.lower_bound > 1.0


# -- the vectorized batch path against a plain reference --------------------------------------------


class _Replay:
    """A seeded source whose draws can be replayed: the same words for the batch path and the reference."""

    secure = False

    def __init__(self, seed: int):
        self._source = GeneratorSource(np.random.default_rng(seed))  # insecure-ok: replayable test stream

    def words(self, n: int) -> np.ndarray:
        return self._source.words(n)

    def integers(self, bound: int, n: int) -> np.ndarray:
        return uniform_below(self, bound, n)


def _reference_rows(source, x: np.ndarray, spec: SubsetSelection) -> list[set[int]]:
    """The batch path's draws, in its order, applied user by user with Python sets (Floyd's algorithm)."""
    d, omega, m = spec.domain_size, spec.omega, x.size
    population = d - 1
    holds = bernoulli(source, spec.p, m)
    chosen: list[set[int]] = [set() for _ in range(m)]
    first = np.flatnonzero(~holds)
    if first.size:
        for user, t in zip(first, source.integers(population - omega + 1, first.size), strict=True):
            chosen[user].add(int(t))
    for js in subset_client._step_batches(population - omega + 1, population):
        draws = uniform_below_each(source, np.arange(js.start + 1, js.stop + 1), m)
        for row, j in enumerate(js):
            for user in range(m):
                t = int(draws[row, user])
                chosen[user].add(j if t in chosen[user] else t)
    subsets = []
    for user in range(m):
        xu = int(x[user])
        members = {o + (o >= xu) for o in chosen[user]}
        subsets.append(members | {xu} if holds[user] else members)
    return subsets


@pytest.mark.parametrize(("d", "omega"), [(5, 2), (9, 1), (12, 11), (300, 90), (70, 69)])
def test_batch_path_equals_floyd_on_the_same_draws(d, omega, monkeypatch):
    """The matrix form of Floyd (bulk draws, shift to domain coordinates, packing) is the plain algorithm.

    On the same words, each user's subset equals Floyd's, drawn with Python
    sets from the same uniform integers in the same order (step batches
    crossing the 8- to 16-bit unit edge at d = 300, several chunks of users).
    Floyd's subsets are uniform [Bentley & Floyd 1987] and the integers exact
    (test_uniform_below_each_maps_every_unit_exactly), so the batch path is exact.
    """
    monkeypatch.setattr(subset_client, "_BLOCK_BYTES", 8 * 64 * ((d + 7) // 8))  # chunks of 64 users
    spec = SubsetSelection(range(d), 1.0, omega=omega)
    x = np.random.default_rng(d).integers(0, d, 150)
    batch = encode_batch(spec, x, _Replay(d + omega), indices=True)
    chunks = [x[k : k + 64] for k in range(0, x.size, 64)]
    replay = _Replay(d + omega)
    expected = [s for chunk in chunks for s in _reference_rows(replay, chunk, spec)]
    assert [set(s) for s in _subsets(batch.bits, d)] == expected
    assert all(len(s) == omega for s in expected)
