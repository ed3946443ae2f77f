"""dBitFlip (docs/longitudinal/dbitflip.md): exact privacy, memoization, the estimator and its exact variance.

Statistical checks are seeded (or use the CSPRNG where the real client is
tested) and state their significance level α; tolerances are z·SE from the
exact variance, never widened.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom, chi2, norm

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.dbitflip import DBitFlipAccumulator
from ldp.audit import run_audit
from ldp.audit_sources import python_client_sampler
from ldp.batch import ReportBatch
from ldp.client import encode_batch, make_encoder
from ldp.client.dbitflip import DBitFlipEncoder, dbitflip_batch, sampled_buckets
from ldp.client.state import ClientState
from ldp.errors import ParameterError, ReportError
from ldp.exact import exp_lower_bound
from ldp.privacy.mechanisms import mechanism_loss
from ldp.privacy.spending import stream_parameters, worst_case_memoized_cost
from ldp.report_check import check_report
from ldp.simulations.dbitflip import dbitflip_counts
from ldp.specs.dbitflip import DBitFlip

ALPHA = 1e-6


def channel(spec: DBitFlip, x: int, memo: bool = False) -> dict:
    """P[(sampled buckets, bits) | x] from the definition: a uniform d-subset, then one coin per sampled bucket.

    ``memo``: the memoized bits (p, q) instead of the sent ones (p′, q′).
    """
    d, b = spec.d, spec.domain_size
    one, zero = (spec.p, spec.q) if memo else (spec.sent_one, spec.sent_zero)
    out = {}
    for sampled in itertools.combinations(range(b), d):
        for bits in itertools.product((0, 1), repeat=d):
            prob = Fraction(1, math.comb(b, d))
            for j, bit in zip(sampled, bits):
                t = one if j == x else zero
                prob *= t if bit else 1 - t
            out[(sampled, bits)] = prob
    return out


def worst(channels) -> Fraction:
    return max(a[y] / b[y] for a, b in itertools.permutations(channels, 2) for y in a)


# -- spec and exact privacy ------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("gamma", ["0", "1/10"])
def test_ratios_by_enumeration_equal_the_claims(epsilon, d, gamma):
    flip = Fraction(gamma)
    if flip and min(d, 2) * math.log((1 - flip) / flip) <= epsilon:  # γ caps one report's ε below the claim
        with pytest.raises(ParameterError, match="caps one report's epsilon"):
            DBitFlip(range(4), epsilon, d=d, gamma=gamma)
        return
    spec = DBitFlip(range(4), epsilon, d=d, gamma=gamma)
    sent = [channel(spec, x) for x in range(4)]
    assert all(sum(c.values()) == 1 for c in sent)
    assert worst(sent) == spec.privacy_ratio <= exp_lower_bound(epsilon)
    assert epsilon - spec.epsilon_achieved < 1e-12
    memo = worst([channel(spec, x, memo=True) for x in range(4)])
    assert memo == spec.permanent_ratio
    assert memo <= exp_lower_bound(spec.epsilon_inf)  # ε∞ certified (rounded up)
    if gamma == "0":
        assert memo == spec.privacy_ratio
    else:
        assert spec.epsilon_inf > spec.epsilon_one


def test_calibration_is_the_papers_and_exact_for_one_bit():
    for epsilon in (0.5, 1.0, 4.0):
        half = math.exp(epsilon / 2)
        spec = DBitFlip(range(16), epsilon, d=3)
        assert float(spec.p) == pytest.approx(half / (half + 1), rel=1e-14)  # the paper's e^{ε/2}
        one = DBitFlip(range(16), epsilon, d=1)  # one sampled bit cannot differ twice: e^ε per bit
        assert float(one.p) == pytest.approx(math.exp(epsilon) / (math.exp(epsilon) + 1), rel=1e-14)
        assert one.privacy_ratio == one.p / one.q


def test_probabilities_above_the_claim_and_bad_parameters_are_refused():
    spec = DBitFlip(range(5), 1.0, d=2, gamma="0.1")
    assert DBitFlip(range(5), 1.0, d=2, gamma="0.1", p=spec.p) == spec
    with pytest.raises(ParameterError, match="claims epsilon"):
        DBitFlip(range(5), 1.0, d=2, gamma="0.1", p=spec.p + Fraction(1, 1 << 50))
    with pytest.raises(ParameterError, match="gamma must be in"):
        DBitFlip(range(5), 1.0, gamma="1/2")
    with pytest.raises(ParameterError, match=r"d must be in \[1, 5\]"):
        DBitFlip(range(5), 1.0, d=6)
    with pytest.raises(ParameterError, match="caps one report's epsilon"):
        DBitFlip(range(5), 8.0, d=2, gamma="0.2")  # 2·ln(0.8/0.2) = 2.77 < 8
    with pytest.raises(ParameterError, match="p must exceed 1/2"):
        DBitFlip(range(5), 1.0, p="1/2")


# -- the estimator's exact variance ----------------------------------------------------------------


def exact_user_variance(spec: DBitFlip, holds: bool) -> Fraction:
    """Var of one user's term Z = 1[v sampled]·(b/d)·(s_v − q′)/(p′ − q′), enumerated with fractions."""
    b, d = spec.domain_size, spec.d
    p1, q1 = spec.sent_one, spec.sent_zero
    s = Fraction(d, b)
    one = p1 if holds else q1
    values = {(b / Fraction(d)) * (bit - q1) / (p1 - q1): (one if bit else 1 - one) for bit in (0, 1)}
    second = s * sum(z * z * w for z, w in values.items())
    mean = s * sum(z * w for z, w in values.items())
    assert mean == (1 if holds else 0)  # unbiased, per user
    return second - mean * mean


@pytest.mark.parametrize(
    ("b", "d", "gamma"), [(8, 1, "0"), (8, 3, "0"), (8, 3, "3/20"), (5, 5, "0"), (20, 2, "1/4")]
)
def test_variance_formula_is_the_enumerated_one(b, d, gamma):
    spec = DBitFlip(range(b), 1.3, d=d, gamma=gamma)
    n = 1000
    for f in (0.0, 0.1, 0.5, 1.0):
        holders = round(f * n)
        exact = (
            holders * exact_user_variance(spec, True) + (n - holders) * exact_user_variance(spec, False)
        ) / n**2
        assert float(spec.variance(holders / n, n)) == pytest.approx(float(exact), rel=1e-12)
    # p′ + q′ = 1: n·Var = (b/d)·p′q′/(p′ − q′)² + f(b/d − 1), the paper's (b/d)e^{ε/2}/(e^{ε/2} − 1)² when γ = 0, d ≥ 2
    p1, q1 = float(spec.sent_one), float(spec.sent_zero)
    for f in (0.0, 0.3):
        closed = (b / d) * p1 * q1 / (p1 - q1) ** 2 + f * (b / d - 1)
        assert float(spec.variance(f, 1)) == pytest.approx(closed, rel=1e-12)
    if gamma == "0" and d >= 2:
        e = math.exp(1.3 / 2)
        assert spec.variance_star == pytest.approx((b / d) * e / (e - 1) ** 2, rel=1e-12)


def test_d_equal_b_is_sue():
    domain = tuple(f"v{i}" for i in range(6))
    spec, sue = DBitFlip(domain, 1.0, d=6), ldp.SUE(domain, 1.0)
    assert spec.p == sue.p and spec.privacy_ratio == sue.privacy_ratio
    for f in (0.0, 0.2, 1.0):
        assert float(spec.variance(f, 100)) == pytest.approx(float(sue.variance(f, 100)), rel=1e-12)
    # the same bits give the same estimates: every bucket is sampled, bit v is SUE's bit v
    rng = np.random.default_rng(26)
    values = [domain[i % 6] for i in range(3000)] + ["v0"] * 1000
    batch = dbitflip_batch(spec, values, rng)
    unpacked = np.unpackbits(batch.bits, axis=1, count=12).astype(bool)
    assert np.all(unpacked[:, :6])  # every bucket sampled
    mine, theirs = make_aggregator(spec), make_aggregator(sue)
    mine.add_batch(batch)
    theirs.add_batch(ReportBatch(spec=sue.fingerprint, bits=np.packbits(unpacked[:, 6:], axis=1)))
    a, b = mine.estimate(), theirs.estimate()
    assert np.allclose(a["estimate"], b["estimate"], rtol=1e-12) and np.allclose(
        a["std_error"], b["std_error"]
    )


# d = 3 with a memo flip is the fast representative (400 runs); d = 1 without one is in the slow set.
@pytest.mark.parametrize(("d", "gamma"), [pytest.param(1, "0", marks=pytest.mark.slow), (3, "1/10")])
def test_repeated_runs_unbiased_with_the_declared_variance(d, gamma):
    """R seeded runs of n users: the mean error within z·SE and (R−1)s²/σ² in the χ² interval, α = 1e-6 each."""
    spec = DBitFlip(range(8), 1.0, d=d, gamma=gamma)
    runs, n = 400, 2000
    truth = np.array([0.4, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05, 0.0])
    values = np.repeat(np.arange(8), (truth * n).astype(int))
    rng = np.random.default_rng(2017)
    est = np.empty((runs, 8))
    for r in range(runs):
        acc = make_aggregator(spec)
        acc.add_batch(encode_batch(spec, values, rng, indices=True))
        est[r] = acc.estimate()["proportion"].to_numpy()
    sigma2 = spec.variance(truth, n)
    a = ALPHA / 8  # Bonferroni over the values
    assert np.all(np.abs(est.mean(axis=0) - truth) <= norm.isf(a / 2) * np.sqrt(sigma2 / runs))
    ratio = (runs - 1) * est.var(axis=0, ddof=1) / sigma2
    assert np.all(ratio >= chi2.ppf(a / 2, runs - 1)) and np.all(ratio <= chi2.isf(a / 2, runs - 1)), ratio


def test_fast_simulator_matches_the_estimators_moments():
    """The exact-joint fast simulator: Σ N_v = d·n, and the estimates' mean and variance as declared (α = 1e-6)."""
    spec = DBitFlip(range(12), 2.0, d=4, gamma="0.05")
    counts = np.array([500, 300, 200, 100, 100, 50, 50, 0, 0, 100, 100, 500])
    n = int(counts.sum())
    rng = np.random.default_rng(7)
    runs = 600
    est = np.empty((runs, 12))
    for r in range(runs):
        acc = dbitflip_counts(spec, counts, rng)
        assert int(acc.sampled_counts.sum()) == spec.d * n and acc.n == n
        est[r] = acc.estimate()["proportion"].to_numpy()
    truth = counts / n
    sigma2 = spec.variance(truth, n)
    a = ALPHA / 12
    assert np.all(np.abs(est.mean(axis=0) - truth) <= norm.isf(a / 2) * np.sqrt(sigma2 / runs))
    ratio = (runs - 1) * est.var(axis=0, ddof=1) / sigma2
    assert np.all(ratio >= chi2.ppf(a / 2, runs - 1)) and np.all(ratio <= chi2.isf(a / 2, runs - 1)), ratio


def test_simulate_fast_uses_the_accumulators_estimator():
    from ldp.simulations.fast import frequency_fast_estimate

    spec = DBitFlip(range(6), 1.0, d=2)
    estimate = frequency_fast_estimate(spec, [100, 0, 0, 0, 0, 900], np.random.default_rng(3))
    assert estimate.shape == (6,) and abs(estimate.sum() - 1) < 0.5


# -- memoization -----------------------------------------------------------------------------------


def test_memoized_reports_repeat_and_survive_a_restart(tmp_path):
    spec = DBitFlip(tuple("abcdefgh"), 1.0, d=3)
    path = tmp_path / "client.json"
    first = make_encoder(spec, state=path)
    reports = {v: first.encode(v) for v in spec.domain}
    again = make_encoder(spec, state=path)  # a restart: the state file is read, nothing re-drawn
    assert all(again.encode(v) == reports[v] == first.encode(v) for v in spec.domain)
    keys = {first.memo_key(v) for v in spec.domain}
    assert len(keys) == spec.memo_domain_size == 4  # d one-hot patterns and the empty one
    outside = [v for v in spec.domain if spec.index_of(v) not in first.buckets]
    assert len({reports[v] for v in outside}) == 1  # unsampled values share one memo key, one report


def test_sampled_buckets_are_uniform_and_keyed_by_the_secret():
    """Floyd on the PRF stream: each d-subset of b = 5, d = 2 equally likely over secrets (χ², α = 1e-6)."""
    spec = DBitFlip(range(5), 1.0, d=2)
    draws = [sampled_buckets(spec, ClientState.new(spec).secret) for _ in range(5000)]
    subsets = list(itertools.combinations(range(5), 2))
    counts = np.array([sum(1 for s in draws if s == t) for t in subsets])
    expected = len(draws) / len(subsets)
    assert ((counts - expected) ** 2 / expected).sum() <= chi2.isf(ALPHA, len(subsets) - 1)


def test_output_perturbation_flips_each_memoized_bit_with_gamma():
    """One client, 4000 reports of one value: each sent bit agrees with its memoized bit w.p. 1 − γ (binomial, α = 1e-6)."""
    spec = DBitFlip(range(6), 1.0, d=3, gamma="3/20")
    encoder = make_encoder(spec)
    memo = encoder.permanent_bits(2)
    reps = 4000
    ones = np.zeros(3, dtype=np.int64)
    sampled = np.unpackbits(np.frombuffer(encoder.encode(2).bits, dtype=np.uint8))[:6]
    for _ in range(reps):
        bits = np.unpackbits(np.frombuffer(encoder.encode(2).bits, dtype=np.uint8))
        assert np.array_equal(bits[:6], sampled)  # the sampled buckets never change
        ones += bits[6:9]
    agree = np.where([(memo >> i) & 1 for i in range(3)], ones, reps - ones)
    low, high = binom.ppf(ALPHA / 6, reps, 0.85), binom.isf(ALPHA / 6, reps, 0.85)
    assert np.all((agree >= low) & (agree <= high)), agree


def test_real_clients_send_p_prime_and_q_prime():
    """Fresh clients (CSPRNG), value 0: over the clients that sample bucket 0 its bit is 1 w.p. p′; else q′ (α = 1e-6)."""
    spec = DBitFlip(range(4), 1.0, d=2, gamma="0.1")
    acc = DBitFlipAccumulator(spec)
    for _ in range(6000):
        acc.add(make_encoder(spec).encode(0))
    n_v, o_v = acc.sampled_counts, acc.one_counts
    probability = np.array([float(spec.sent_one)] + [float(spec.sent_zero)] * 3)
    for v in range(4):
        low = binom.ppf(ALPHA / 8, n_v[v], probability[v])
        high = binom.isf(ALPHA / 8, n_v[v], probability[v])
        assert low <= o_v[v] <= high
    assert int(n_v.sum()) == 2 * acc.n


# -- accounting and audit ----------------------------------------------------------------------------


def test_ledger_parameters_and_lifetime_bound():
    spec = DBitFlip(range(10), 1.0, d=2, gamma="0.1")
    epsilon, cap, memoized, values = stream_parameters(spec)
    assert (epsilon, cap, memoized, values) == (spec.epsilon_one, spec.epsilon_inf, True, 3)
    assert worst_case_memoized_cost(10_000, epsilon, cap, values) == pytest.approx(3 * spec.epsilon_inf)
    assert spec.lifetime_epsilon == pytest.approx(3 * spec.epsilon_inf)
    assert DBitFlip(range(4), 1.0, d=4).memo_domain_size == 4  # d = b: b patterns


@pytest.mark.parametrize("gamma", ["0", "0.1"])
def test_privacy_pieces_give_eps_one_eps_inf_and_at_most_r_eps_one(gamma):
    spec = DBitFlip(range(6), 1.0, d=2, gamma=gamma)
    for reports, bound in ((1, spec.epsilon_one), (math.inf, spec.epsilon_inf)):
        assert mechanism_loss(spec, reports).epsilon(0.0) == pytest.approx(bound, rel=1e-9)
    for r in (2, 5, 50):
        got = mechanism_loss(spec, r).epsilon(0.0)
        assert got <= min(r * spec.epsilon_one, spec.epsilon_inf) + 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("gamma", ["0", "1/10"])
def test_audit_of_the_real_client_finds_no_violation(gamma):
    spec = DBitFlip(tuple("abcd"), 1.0, d=2, gamma=gamma)
    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, 1000, confidence=1 - 1e-6)
    assert [c.reports for c, _ in result.memo] == [50]
    assert not result.violation, result.worst


class _RedrawingEncoder(DBitFlipEncoder):
    """The classic bug: the memoized bits re-drawn (from the CSPRNG) for every report."""

    def permanent_bits(self, value):
        from ldp.client.sampling import sample_expanded, urandom_source

        pattern = self.pattern(value)
        full = (1 << self.spec.d) - 1
        return sample_expanded(
            self.spec.d, ((pattern, *self._one), (full ^ pattern, *self._zero)), urandom_source
        )


@pytest.mark.slow  # the memo audit's fast representatives are LOLOHA's and the longitudinal chains'
def test_the_audit_flags_a_client_that_redraws_its_memo():
    spec = DBitFlip(tuple("abcd"), 1.0, d=2, gamma="1/10")

    def sampler(value, claim, n):
        out = []
        for _ in range(n):
            client = _RedrawingEncoder(spec, ClientState.new(spec))
            out.append([check_report(spec, client.encode(value)) for _ in range(claim.reports)])
        return out

    result = run_audit(spec, sampler, 300, confidence=1 - 1e-6)
    assert result.memo_rejected and result.violation


# -- reports and the accumulator ---------------------------------------------------------------------


def test_single_and_batch_accumulation_agree_and_bad_reports_are_refused():
    spec = DBitFlip(range(20), 1.0, d=3)
    batch = encode_batch(spec, list(range(20)) * 10, np.random.default_rng(5))
    one_by_one = DBitFlipAccumulator(spec)
    for report in batch.reports(spec):
        one_by_one.add(report)
    whole = make_aggregator(spec)
    whole.add_batch(batch)
    assert whole == one_by_one and whole.n == 200
    two = ldp.Report(spec=spec.fingerprint, bits=bytes([0xC0, 0, 0]))  # 23 bits: buckets 0 and 1 only
    with pytest.raises(ReportError, match=r"samples 2 buckets .* expected exactly d = 3"):
        whole.add(two)
    bad = ReportBatch(spec=spec.fingerprint, bits=np.zeros((1, 3), dtype=np.uint8))
    with pytest.raises(ReportError, match="samples 0 buckets"):
        whole.add_batch(bad)
    assert whole.n == 200


def test_ldp_encode_with_state_memoizes_per_client(tmp_path):
    """``ldp encode --state``: each row through its client's own encoder (it made fresh one-shot reports before)."""
    from click.testing import CliRunner

    from ldp.cli import cli

    spec = DBitFlip(tuple("abcdefgh"), 1.0, d=3)
    (tmp_path / "spec.json").write_text(spec.to_json())
    rows = ["client_id,value"] + [f"u{i % 5},{'abcdefgh'[i % 5]}" for i in range(40)]
    (tmp_path / "values.csv").write_text("\n".join(rows) + "\n")
    args = [
        "encode",
        "--spec",
        str(tmp_path / "spec.json"),
        str(tmp_path / "values.csv"),
        "--column",
        "value",
    ]
    args += ["--state", str(tmp_path / "states"), "-o", str(tmp_path / "reports.jsonl")]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = (tmp_path / "reports.jsonl").read_text().splitlines()
    by_client: dict[str, set[str]] = {}
    for i, line in enumerate(lines):
        by_client.setdefault(f"u{i % 5}", set()).add(line)
    assert all(len(reports) == 1 for reports in by_client.values())  # γ = 0: one memoized report per client
    for key, reports in by_client.items():  # the client's state file makes the same report again
        from ldp.client.identity import canonical_client_id
        from ldp.client.state_paths import state_path

        client = make_encoder(spec, state=state_path(str(tmp_path / "states"), canonical_client_id(key)))
        value = "abcdefgh"[int(key[1:])]
        assert client.encode(value).to_json() in reports


def test_a_budgeted_client_is_charged_per_memo_key(tmp_path):
    """70 reports of one value: spent ε∞ (one memo key, memo_linear); committed min(d + 1, b)·ε∞, value-independent.

    The client is the real CSPRNG one, so the reports are unseeded: a report repeats the memoized one with
    probability (1 − γ)² = 0.81, and 70 reports are all equal with probability at most 0.81^69 < 1e-6 (with 30,
    as before, 2e-3: the test failed about once in 450 runs).
    """
    from ldp.privacy import Budget

    spec = DBitFlip(tuple("abcdefgh"), 1.0, d=2, gamma="0.1")
    client = make_encoder(spec, state=tmp_path / "client.json", budget=Budget(epsilon=100.0))
    reports = {client.encode("a").to_json() for _ in range(70)}
    assert len(reports) > 1  # γ > 0: the reports differ, the memo key does not
    assert client.spent == pytest.approx(spec.epsilon_inf)
    assert client.committed == pytest.approx(spec.lifetime_epsilon) == pytest.approx(3 * spec.epsilon_inf)
    two = make_encoder(spec, state=tmp_path / "other.json", budget=Budget(epsilon=100.0))
    two.encode("a")
    assert two.spent == pytest.approx(spec.epsilon_one)  # one report costs ε₁ < ε∞


# -- the batch encoder -----------------------------------------------------------------------------


@pytest.mark.parametrize("secure", [False, True], ids=["seeded-words", "csprng-bits"])
@pytest.mark.parametrize("x", [4, 8])  # b = 9: x = 8 is the only bucket of the second byte
def test_batch_reports_follow_the_exact_channel(secure, x):
    """2 × 8,192 reports of one value against ``channel``'s 144 exact cells: χ² at α = 1e-6.

    The secure batch (a CSPRNG source, at least ``ECONOMY_MIN_DRAWS`` rows) draws the buckets with subset
    selection's sampler on bits and the sent coins on bits; the seeded one whole words.
    """
    from ldp.client import SystemRandomSource
    from ldp.client.bits import ECONOMY_MIN_DRAWS

    spec = DBitFlip(range(9), 1.0, d=2, gamma="1/10")
    n = 2 * ECONOMY_MIN_DRAWS
    rng = SystemRandomSource() if secure else np.random.default_rng(9 + x)
    bits = np.unpackbits(dbitflip_batch(spec, [x] * n, rng, indices=True).bits, axis=1, count=11)
    exact = channel(spec, x)
    cells = {key: i for i, key in enumerate(exact)}
    counts = np.zeros(len(cells))
    for row in bits:
        sampled = tuple(int(j) for j in np.flatnonzero(row[:9]))
        counts[cells[(sampled, tuple(int(v) for v in row[9:]))]] += 1
    expected = n * np.array([float(p) for p in exact.values()])
    assert expected.min() >= 5  # the χ² approximation holds
    statistic = float(((counts - expected) ** 2 / expected).sum())
    assert statistic <= chi2.isf(ALPHA, len(cells) - 1), statistic


def test_held_ranks_count_the_sampled_buckets_before_the_value():
    """x's rank among a row's sampled buckets from the packed subsets, against a running count of the bits."""
    from ldp.client.dbitflip import _held_ranks

    rng = np.random.default_rng(31)
    for b in (8, 19, 64):
        chosen = rng.random((500, b)) < 0.4
        x = rng.integers(0, b, 500)
        held, rank = _held_ranks(np.packbits(chosen, axis=1), x)
        rows = np.arange(500)
        assert np.array_equal(held, np.flatnonzero(chosen[rows, x]))
        assert np.array_equal(rank, (np.cumsum(chosen, axis=1)[rows, x] - 1)[held])
