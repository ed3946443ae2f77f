"""The longitudinal chains l-grr, l-osue, l-oue, l-sue and the two-round chain math (docs/longitudinal/chains.md).

Statistical tests are seeded; each states its significance level α and
derives its tolerance from theory (z·SE, or a chi-square quantile).
"""

from __future__ import annotations

import json
import math
import os
import stat
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2, norm

from ldp.aggregator import make_aggregator
from ldp.audit import audit_claims, run_audit
from ldp.audit_memo import MemoModel, memo_power
from ldp.audit_sources import python_client_sampler
from ldp.batch import ReportBatch
from ldp.chain_math import (
    chain_estimate,
    chain_support,
    chain_variance,
    chain_variance_iid,
    grid_probability,
    rr_chain_ratio,
)
from ldp.client import encode_batch, make_encoder
from ldp.client.longitudinal import ChainGRREncoder, ChainUnaryEncoder, memo_label, randbelow_from
from ldp.client.sampling import PRFStream
from ldp.client.state import ClientState
from ldp.errors import InputError, SpecError
from ldp.exact import exp_lower_bound, ratio_within
from ldp.report_check import check_report
from ldp.specs import Rappor, load_spec, spec_from_dict
from ldp.specs.longitudinal import LGRR, LOSUE, LOUE, LSUE, LongitudinalChain

CHAINS = (LGRR, LOSUE, LOUE, LSUE)
GRID = [(k, e1, einf) for k in (2, 5, 64) for e1, einf in ((0.25, 1.0), (1.0, 2.0), (1.5, 2.0), (3.0, 12.0))]


def _chain(cls, k=5, epsilon=1.0, epsilon_inf=None) -> LongitudinalChain:
    return cls(domain=range(k), epsilon=epsilon, epsilon_inf=epsilon_inf)


# -- exact privacy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
@pytest.mark.parametrize(("k", "e1", "einf"), GRID)
def test_both_claims_hold_exactly_and_are_attained(cls, k, e1, einf):
    """One report's exact ratio ≤ e^ε₁ and the memo's ≤ e^ε∞, each within 1e-9 of the claim (calibration)."""
    spec = cls(domain=range(k), epsilon=e1, epsilon_inf=einf)
    assert ratio_within(spec.privacy_ratio, e1) and ratio_within(spec.permanent_ratio, einf)
    assert math.isclose(math.log(float(spec.privacy_ratio)), e1, rel_tol=1e-9)
    assert math.isclose(math.log(float(spec.permanent_ratio)), einf, rel_tol=1e-9)
    assert spec.epsilon_one == spec.epsilon == e1 and spec.epsilon_inf == einf


def _first_principles_ratio(spec) -> Fraction:
    """max over x, x′ and outputs of P[out | x]/P[out | x′], by enumeration of the two rounds (k = 3)."""
    k = spec.domain_size
    if isinstance(spec, LGRR):

        def law(x):  # P[report = y | x] summed over the memo m
            first = [spec.p1 if m == x else spec.q1 for m in range(k)]
            return [sum(first[m] * (spec.p2 if y == m else spec.q2) for m in range(k)) for y in range(k)]

        return max(law(x)[y] / law(z)[y] for x in range(k) for z in range(k) for y in range(k) if x != z)
    outputs = range(1 << k)

    def bit_law(x):  # P[report bits | x]: each bit independent given x, over its memo bit
        out = []
        for o in outputs:
            prob = Fraction(1)
            for i in range(k):
                m1 = spec.p1 if i == x else spec.q1
                one = m1 * spec.p2 + (1 - m1) * spec.q2
                prob *= one if (o >> i) & 1 else 1 - one
            out.append(prob)
        return out

    laws = [bit_law(x) for x in range(k)]
    return max(laws[x][o] / laws[z][o] for x in range(k) for z in range(k) for o in outputs if x != z)


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
def test_privacy_ratio_is_the_worst_ratio_of_the_enumerated_channel(cls):
    spec = _chain(cls, k=3)
    assert spec.privacy_ratio == _first_principles_ratio(spec)


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
def test_an_edited_claim_is_refused_either_way(cls):
    spec = _chain(cls)
    for field, factor in (
        ("epsilon", 1 - 1e-6),
        ("epsilon", 1.01),
        ("epsilon_inf", 1 - 1e-6),
        ("epsilon_inf", 1.01),
    ):
        data = spec.to_dict()
        data[field] = data[field] * factor
        with pytest.raises(SpecError, match=field):
            spec_from_dict(data)


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
def test_bad_parameters_are_one_line_spec_errors(cls):
    with pytest.raises(SpecError, match="epsilon_inf > epsilon"):
        cls(domain=list("abc"), epsilon=1.0, epsilon_inf=1.0)
    with pytest.raises(SpecError, match="give all of p1"):
        cls(domain=list("abc"), epsilon=1.0, p1="1/2")
    data = _chain(cls).to_dict()
    data["q2"] = "1/3" if data["q2"] != "1/3" else "1/4"
    with pytest.raises(SpecError, match=cls.mechanism):
        spec_from_dict(data)


def test_l_oue_refuses_an_epsilon_its_oue_second_round_cannot_reach():
    """e^ε₁ < (2e^ε∞ + 1)/3: at ε∞ = 1 an OUE second round reaches ε₁ = ln((2e + 1)/3) = 0.7633 at most."""
    assert LOUE(domain=list("abc"), epsilon=0.76, epsilon_inf=1.0).epsilon == 0.76
    with pytest.raises(SpecError, match="too large for epsilon_inf"):
        LOUE(domain=list("abc"), epsilon=0.77, epsilon_inf=1.0)


# -- closed forms of the second rounds (docs/longitudinal/chains.md) --------------------------------


@pytest.mark.parametrize(("k", "e1", "einf"), GRID)
def test_l_grr_second_round_is_the_closed_form_and_the_composite_is_grr(k, e1, einf):
    spec = LGRR(domain=range(k), epsilon=e1, epsilon_inf=einf)
    a1, ai = math.exp(e1), math.exp(einf)
    p2 = (ai * a1 + (k - 2) * a1 - k + 1) / ((ai - 1) * (a1 + k - 1))
    assert float(spec.p2) == pytest.approx(p2, rel=1e-12)
    a, b = spec.support
    assert a + (k - 1) * b == 1  # one report is randomized response (A, B) over the domain ...
    assert float(a) == pytest.approx(a1 / (a1 + k - 1), rel=1e-12)  # ... exactly GRR(ε₁)


def _peer_l_grr_p2(k, e1, einf):
    """multi-freq-ldpy's L_GRR: p₂ solving (p₁p₂ + q₁q₂)/(p₁q₂ + q₁p₂) = e^ε₁ (q₂ = (1 − p₂)/(k − 1))."""
    p1 = math.exp(einf) / (math.exp(einf) + k - 1)
    q1 = (1 - p1) / (k - 1)
    c = math.exp(e1)
    # (p1 p2 + q1 (1 - p2)/(k-1)) = c (p1 (1 - p2)/(k-1) + q1 p2), linear in p2
    u, v = p1 - q1 / (k - 1) + c * p1 / (k - 1) - c * q1, c * p1 / (k - 1) - q1 / (k - 1)
    return v / u


def test_the_peer_l_grr_formula_is_exact_only_for_two_values():
    assert _peer_l_grr_p2(2, 1.0, 2.0) == pytest.approx(
        float(LGRR(domain=range(2), epsilon=1.0).p2), rel=1e-12
    )
    spec = LGRR(domain=range(5), epsilon=1.0, epsilon_inf=2.0)
    peer = Fraction(_peer_l_grr_p2(5, 1.0, 2.0))
    true_epsilon = math.log(float(rr_chain_ratio(spec.p1, spec.q1, peer, (1 - peer) / 4)))
    assert true_epsilon == pytest.approx(0.86, abs=0.01)  # over-protects: ε₁ = 0.86 < 1 at k = 5, ε∞ = 2


@pytest.mark.parametrize(("e1", "einf"), [(0.25, 1.0), (1.0, 2.0), (3.0, 12.0)])
def test_unary_second_rounds_are_the_closed_forms(e1, einf):
    a1, ai = math.exp(e1), math.exp(einf)
    osue = LOSUE(domain=list("abc"), epsilon=e1, epsilon_inf=einf)
    assert float(osue.p2) == pytest.approx((ai * a1 - 1) / ((ai - 1) * (a1 + 1)), rel=1e-12)
    assert osue.support[0] == Fraction(1, 2)  # A = 1/2: one report is OUE(ε₁)
    u, w = math.exp(einf / 2), math.exp(e1 / 2)
    sue = LSUE(domain=list("abc"), epsilon=e1, epsilon_inf=einf)
    assert float(sue.p1) == pytest.approx(u / (u + 1), rel=1e-12)
    assert float(sue.p2) == pytest.approx((u * w - 1) / ((u - 1) * (w + 1)), rel=1e-12)
    oue = LOUE(domain=list("abc"), epsilon=e1, epsilon_inf=einf)
    q1, c, t = float(oue.q1), a1, float(oue.q2)
    quadratic = 2 * (1 - q1) * (c - 1) * t**2 + (1 - c * (3 - 4 * q1)) * t + 1 - q1 * (1 + 3 * c) / 2
    assert abs(quadratic) < 1e-12 and oue.p2 == Fraction(1, 2)


# -- the chain math ----------------------------------------------------------------------------------


def test_grid_probability_finds_the_boundary_in_both_directions():
    bound = Fraction(3)
    up = grid_probability(lambda t: t / (1 - t), bound, Fraction(1, 2), Fraction(1), increasing=True)
    assert up / (1 - up) <= bound < (up + Fraction(1, 1 << 64)) / (1 - up - Fraction(1, 1 << 64))
    down = grid_probability(lambda t: (1 - t) / t, bound, Fraction(0), Fraction(1, 2), increasing=False)
    step = Fraction(1, 1 << 64)
    assert (1 - down) / down <= bound < (1 - down + step) / (down - step)
    assert grid_probability(lambda t: t, Fraction(1, 4), Fraction(1, 2), Fraction(1), increasing=True) is None


def test_support_gap_and_iid_variance_identities():
    p1, q1, p2, q2 = Fraction(1, 2), Fraction(1, 5), Fraction(4, 5), Fraction(1, 5)
    a, b = chain_support(p1, q1, p2, q2)
    assert a - b == (p1 - q1) * (p2 - q2) and b == q1 * (p2 - q2) + q2
    f = np.linspace(0, 1, 11)
    args = (1000, float(p1), float(q1), float(p2), float(q2))
    gap = chain_variance_iid(f, *args) - chain_variance(f, *args)
    assert np.allclose(gap, f * (1 - f) / 1000, rtol=1e-12, atol=1e-18)  # the population's own variance
    assert np.all(chain_variance_iid(f, *args) >= 0) and np.all(chain_variance(f, *args) >= 0)


def _two_round_counts(rng, holders, n, p1, q1, p2, q2, runs):
    """C_v over ``runs`` repetitions, drawing round 1 then round 2 (not the composite) for each user."""
    memo = np.concatenate([rng.random((runs, holders)) < p1, rng.random((runs, n - holders)) < q1], axis=1)
    report = np.where(memo, rng.random(memo.shape) < p2, rng.random(memo.shape) < q2)
    return report.sum(axis=1)


@pytest.mark.parametrize(("p1", "q1", "p2", "q2"), [(0.5, 0.1, 0.7, 0.3), (0.8, 0.05, 0.6, 0.2)])
def test_the_estimator_is_unbiased_with_the_exact_fixed_data_variance(p1, q1, p2, q2):
    """R = 2,000 seeded runs of n = 2,000 users with f = 0.3, two rounds drawn in sequence.

    Mean error within z·SE (z of α = 1e-4, two-sided); (R − 1)s²/σ² within the χ²(R − 1) quantiles at
    α = 1e-4 (the estimate is a linear function of a sum of 2,000 Bernoullis: normal to well within that).
    """
    rng = np.random.default_rng(26)
    runs, n, f, alpha = 2000, 2000, 0.3, 1e-4
    counts = _two_round_counts(rng, int(f * n), n, p1, q1, p2, q2, runs)
    est = chain_estimate(counts, n, p1, q1, p2, q2)
    var = float(chain_variance(f, n, p1, q1, p2, q2))
    assert abs(est.mean() - f) <= norm.isf(alpha / 2) * math.sqrt(var / runs)
    ratio = (runs - 1) * est.var(ddof=1) / var
    assert chi2.ppf(alpha / 2, runs - 1) <= ratio <= chi2.isf(alpha / 2, runs - 1), ratio / (runs - 1)


def test_the_iid_population_variance_is_s_one_minus_s():
    """Values drawn i.i.d. with P[x = v] = f each run: Var f̂ = s(1 − s)/(n(p₁ − q₁)²(p₂ − q₂)²), χ² at α = 1e-4."""
    rng = np.random.default_rng(2611)
    runs, n, f, alpha = 2000, 2000, 0.3, 1e-4
    p1, q1, p2, q2 = 0.5, 0.1, 0.7, 0.3
    holders = rng.binomial(n, f, size=runs)
    counts = np.array([_two_round_counts(rng, int(h), n, p1, q1, p2, q2, 1)[0] for h in holders])
    est = chain_estimate(counts, n, p1, q1, p2, q2)
    var = float(chain_variance_iid(f, n, p1, q1, p2, q2))
    ratio = (runs - 1) * est.var(ddof=1) / var
    assert chi2.ppf(alpha / 2, runs - 1) <= ratio <= chi2.isf(alpha / 2, runs - 1), ratio / (runs - 1)


# -- the client: memo through the keyed PRF, stable across restarts ---------------------------------


def test_randbelow_from_consumes_bytes_as_secrets_randbelow():
    """⌈k/8⌉ bytes a try (k = n.bit_length()), their top k bits big-endian, rejected at or above n."""
    assert randbelow_from(iter_bytes(b"\xff\x05"), 200) == 5  # 0xff >= 200 rejected, then 5
    assert randbelow_from(iter_bytes(b"\x81\x00"), 3) == 2  # k = 2: top two bits of 0x81 are 0b10


def iter_bytes(data: bytes):
    position = [0]

    def source(n):
        out = data[position[0] : position[0] + n]
        position[0] += n
        return out

    return source


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
def test_the_memo_survives_a_restart_from_the_state_file(cls, tmp_path):
    spec = _chain(cls, k=16)
    path = tmp_path / "client.json"
    first = make_encoder(spec, state=path)
    memos = {v: first.memo(v) for v in range(16)}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = make_encoder(spec, state=path)  # a restart: the same secret, the same memos
    assert {v: again.memo(v) for v in range(16)} == memos and again.memo("3") == memos[3]
    other = make_encoder(spec, state=tmp_path / "other.json")  # another client: another memo
    assert any(other.memo(v) != memos[v] for v in range(16))
    with pytest.raises(InputError):
        first.encode("not in the domain")


def test_the_memo_is_the_keyed_prf_of_the_documented_parts():
    spec = _chain(LGRR, k=5)
    state = ClientState.new(spec)
    encoder = ChainGRREncoder(spec, state)
    stream = PRFStream(b"ldp-l-grr-memo-v1", state.secret, spec.fingerprint.encode(), b"2")
    den = math.lcm(spec.p1.denominator, spec.q1.denominator)
    r = randbelow_from(stream, den)
    keep, other = spec.p1 * den, spec.q1 * den
    expected = 2 if r < keep else int((r - keep) // other) + (int((r - keep) // other) >= 2)
    assert encoder.memo(2) == expected and memo_label("l-oue") == b"ldp-l-oue-memo-v1"


@pytest.mark.parametrize(
    "cls",
    # the fast set: the value chain (L-GRR); the unary chains, which share one client, in the slow set (the fast
    # set compares that client's memoized reports with basic RAPPOR's: test_l_sue_and_basic_rappor_clients_...)
    [c if c is LGRR else pytest.param(c, marks=pytest.mark.slow) for c in CHAINS],
    ids=lambda c: c.mechanism,
)
def test_reports_of_one_client_follow_the_fresh_round_around_its_memo(cls):
    """20,000 reports of one value by one client: supports within z·SE of p₂ on the memo and q₂ off it (α = 1e-6)."""
    spec = _chain(cls, k=5)
    encoder = make_encoder(spec)
    n, alpha = 20_000, 1e-6
    acc = make_aggregator(spec)
    for _ in range(n):
        acc.add(encoder.encode(0))
    memo = encoder.memo(0)
    on = (
        np.array([memo == v for v in range(5)])
        if isinstance(spec, LGRR)
        else np.array([(memo >> v) & 1 for v in range(5)], bool)
    )
    expected = np.where(on, float(spec.p2), float(spec.q2))
    se = np.sqrt(expected * (1 - expected) / n)
    z = norm.isf(alpha / 10)
    assert np.all(np.abs(acc.support_counts / n - expected) <= z * se)


# -- L-SUE is basic RAPPOR -----------------------------------------------------------------------------


def _rappor_of(spec: LSUE) -> Rappor:
    return Rappor.basic(spec.domain, **spec.rappor_parameters())


@pytest.mark.parametrize(("e1", "einf"), [(0.5, 2.0), (1.0, 2.0), (2.0, 6.0)])
def test_l_sue_is_basic_rappor_exactly(e1, einf):
    """The same per-bit probabilities, memo and one-report ratios, ε's and estimate tables on the same bits."""
    spec = LSUE(domain=["a", "b", "c", "d"], epsilon=e1, epsilon_inf=einf)
    rappor = _rappor_of(spec)
    assert (rappor.prob_one_given_one, rappor.prob_one_given_zero) == spec.support
    assert rappor.single_report_ratio == spec.privacy_ratio and rappor.permanent_ratio == spec.permanent_ratio
    assert rappor.epsilon_one <= spec.epsilon and rappor.epsilon_inf <= spec.epsilon_inf
    assert math.isclose(rappor.epsilon_one, spec.epsilon, rel_tol=1e-9)
    batch = encode_batch(spec, ["a"] * 500 + ["b"] * 300 + ["d"] * 200, np.random.default_rng(5))
    ours = make_aggregator(spec)
    ours.add_batch(batch)
    theirs = make_aggregator(rappor)
    theirs.add_batch(
        ReportBatch(spec=rappor.fingerprint, cohorts=np.zeros(len(batch), np.int64), bits=batch.bits)
    )
    a, b = ours.estimate(), theirs.estimate()
    for column in ("estimate", "std_error", "ci_low", "ci_high"):
        assert np.array_equal(a[column].to_numpy(), b[column].to_numpy()), column
    assert spec.variance_star == pytest.approx(rappor_variance_star(rappor), rel=1e-12)


def rappor_variance_star(rappor: Rappor) -> float:
    one, zero = float(rappor.prob_one_given_one), float(rappor.prob_one_given_zero)
    return zero * (1 - zero) / (one - zero) ** 2


def test_l_sue_and_basic_rappor_clients_give_the_same_report_distribution():
    """r = 6 reports of one value per client, 3,000 clients each: the count of ones of every bit.

    Each bit's count (0..6) is compared between the two real clients by a
    chi-square homogeneity test, Bonferroni over the 4 bits: α = 1e-4 family-wise.
    Both are the memoized mixture p₁·Bin(6, p₂) + (1 − p₁)·Bin(6, q₂) (or q₁ for bits the value does not set).
    """
    spec = LSUE(domain=["a", "b", "c", "d"], epsilon=1.0, epsilon_inf=2.0)
    rappor = _rappor_of(spec)
    clients, reports, alpha = 3000, 6, 1e-4

    def ones(s):
        out = np.zeros((clients, 4), np.int64)
        for i in range(clients):
            encoder = make_encoder(s)  # a new client (secret) each
            for _ in range(reports):
                bits = np.unpackbits(np.frombuffer(encoder.encode("b").bits, np.uint8))[:4]
                out[i] += bits
        return out

    mine, theirs = ones(spec), ones(rappor)
    for bit in range(4):
        table = np.array([np.bincount(mine[:, bit], minlength=7), np.bincount(theirs[:, bit], minlength=7)])
        table = table[:, table.sum(axis=0) > 0]
        expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0) / table.sum()
        statistic = ((table - expected) ** 2 / expected).sum()
        assert statistic <= chi2.isf(alpha / 4, table.shape[1] - 1), (bit, statistic)


# -- audit -------------------------------------------------------------------------------------------


def _redrawing_sampler(spec):
    """A chain client with the memoization bug: a new secret (so a new memo) for every report."""

    def sample(value, claim, n):
        return [
            [check_report(spec, make_encoder(spec).encode(value)) for _ in range(claim.reports)]
            for _ in range(n)
        ]

    return sample


@pytest.mark.slow
@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
def test_the_audit_checks_one_report_and_fifty_reports_within_epsilon_inf(cls):
    """ε₁ for one report and min(ε∞, 50·ε₁) = ε∞ for 50 reports of one value; the memo test does not reject (α = 1e-6)."""
    spec = _chain(cls, k=3, epsilon=1.0, epsilon_inf=2.0)
    claims = audit_claims(spec, memo_reports=50)
    assert [(c.reports, c.epsilon) for c in claims] == [(1, 1.0), (50, spec.memo_epsilon(50))]
    assert 1.9 < claims[1].epsilon <= 2.0  # fifty reports of one value: close to ε∞, never above
    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, 400, confidence=1 - 1e-6, claims=claims)
    assert not result.violation, result.worst
    assert len(result.memo) == 1 and not result.memo_rejected


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
def test_the_default_audit_of_a_chain_takes_fifty_reports_of_one_value(cls):
    """The issue's audit target: ``ldp audit``'s default (--memo-reports 8) audits ≥ 50 reports of one value for
    a chain, as for LOLOHA and dBitFlip; 1 still skips the memoized audit."""
    from ldp.audit import DEFAULT_MEMO_REPORTS

    spec = _chain(cls, k=3, epsilon=1.0, epsilon_inf=2.0)
    assert [c.reports for c in audit_claims(spec, DEFAULT_MEMO_REPORTS)] == [1, 50]
    assert [c.reports for c in audit_claims(spec, 80)] == [1, 80]
    assert [c.reports for c in audit_claims(spec, 1)] == [1]


@pytest.mark.parametrize(
    "cls", (LGRR, pytest.param(LOSUE, marks=pytest.mark.slow)), ids=lambda c: c.mechanism
)
def test_a_client_that_redraws_its_memo_is_caught(cls):
    """130 clients per input (390 in all) with 50 reports each, re-drawing the memo every report.

    The memo test's exact power against this client at its Bonferroni level
    (from confidence 1 − 1e-6) is above 1 − 1e-6 (memo_power), so the test
    below fails with probability below 1e-6 for a correct implementation.
    130 is about the fewest clients that give that power for L-GRR (125: 1 − 6.6e-7;
    120: 1 − 1.4e-6); L-OSUE's cells reach it with fewer.
    """
    spec = _chain(cls, k=3, epsilon=1.0, epsilon_inf=3.0)
    claims = audit_claims(spec, memo_reports=50)
    result = run_audit(spec, _redrawing_sampler(spec), 130, confidence=1 - 1e-6, claims=claims)
    ((claim, test),) = result.memo
    model = MemoModel.chain(spec.p1, spec.q1, spec.p2, spec.q2, 50)
    cells = test.cells
    assert cells == ((0, 390) if cls is LGRR else (780, 390))
    assert memo_power(model, cells, test.alpha) > 1 - 1e-6
    assert claim.reports == 50 and test.rejected and result.violation, test


def test_the_chain_memo_model_is_rappors_with_the_chain_probabilities():
    model = MemoModel.chain(0.5, 0.2, 0.8, 0.3, 5)
    c = np.arange(6)
    for bit, pi in ((0, 0.2), (1, 0.5)):
        assert model.permanent_one(bit) == pi
        a = pi * 0.8 + (1 - pi) * 0.3
        assert c @ model.memoized_pmf(bit) == pytest.approx(5 * a) and c @ model.redrawn_pmf(
            bit
        ) == pytest.approx(5 * a)


# -- accounting ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
def test_privacy_pieces_give_epsilon_one_for_a_report_and_epsilon_inf_for_the_memo(cls):
    spec = _chain(cls, epsilon=1.0, epsilon_inf=2.5)

    def worst(pieces):
        forward = sum(p.copies * float(np.max(p.log_p - p.log_q)) for p in pieces)
        backward = sum(p.copies * float(np.max(p.log_q - p.log_p)) for p in pieces)
        return max(forward, backward)

    assert worst(spec.privacy_pieces(1)) == pytest.approx(1.0, rel=1e-9)
    assert worst(spec.privacy_pieces(math.inf)) == pytest.approx(2.5, rel=1e-9)
    assert worst(spec.privacy_pieces(30)) <= 2.5 + 1e-9  # any number of reports: at most the memo's


def test_the_spec_round_trips_and_reports_its_lifetime_facts():
    spec = LOSUE(domain=list("abcdefgh"), epsilon=0.5, epsilon_inf=1.5)
    again = load_spec(json.loads(spec.to_json()))
    assert again == spec and again.memoized and again.memo_domain_size == 8 and again.memo_key("c") == b"2"
    assert spec.privacy_summary()["epsilon_inf"] == 1.5
    assert LGRR(domain=list("ab"), epsilon=1.0).epsilon_inf == 2.0  # the documented default: 2·ε₁
    assert isinstance(make_encoder(spec), ChainUnaryEncoder)
    assert exp_lower_bound(1.5) >= spec.permanent_ratio


# -- many reports of one memo: not r·ε₁ (docs/longitudinal/chains.md#many-reports) ---------------------


def _enumerated_grr_memo_epsilon(spec, r):
    """ln max over every sequence of r reports of P[y | x]/P[y | x′] (exact fractions, x = 0, x′ = 1)."""
    import itertools

    k, best = spec.domain_size, Fraction(0)
    for y in itertools.product(range(k), repeat=r):

        def law(x, y=y):
            return sum(
                (spec.p1 if m == x else spec.q1) * math.prod(spec.p2 if v == m else spec.q2 for v in y)
                for m in range(k)
            )

        best = max(best, law(0) / law(1))
    return math.log(float(best))


@pytest.mark.parametrize(("k", "r"), [(3, 2), (3, 4), (4, 3), (5, 3)])
def test_l_grr_memo_epsilon_is_the_enumerated_worst_case(k, r):
    spec = LGRR(domain=range(k), epsilon=0.2, epsilon_inf=3.0)
    assert spec.memo_log_ratio(r) == pytest.approx(_enumerated_grr_memo_epsilon(spec, r), rel=1e-12)


@pytest.mark.parametrize("cls", (LOSUE, LOUE, LSUE), ids=lambda c: c.mechanism)
def test_unary_memo_epsilon_is_the_exact_pieces_worst_case(cls):
    spec = _chain(cls, epsilon=1.0, epsilon_inf=4.0)
    for r in (2, 3, 7):
        pieces = spec.privacy_pieces(r)
        worst = sum(float(np.max(p.log_p - p.log_q)) for p in pieces)
        assert spec.memo_log_ratio(r) == pytest.approx(worst, rel=1e-12)


def test_r_reports_of_one_memo_can_cost_more_than_r_times_epsilon_one():
    """L-GRR over k > 2 values and L-OUE: two reports of one memo exceed 2·ε₁ (L-OSUE and L-SUE did not, here)."""
    grr = LGRR(domain=range(5), epsilon=0.2, epsilon_inf=3.0)
    assert grr.memo_epsilon(2) == pytest.approx(0.404119, abs=1e-6) and grr.memo_epsilon(2) > 0.4
    oue = LOUE(domain=range(5), epsilon=1.0, epsilon_inf=4.0)
    assert oue.memo_epsilon(2) == pytest.approx(2.108908, abs=1e-6)
    assert LGRR(domain=range(2), epsilon=0.2, epsilon_inf=3.0).memo_epsilon(2) <= 0.4 + 1e-9


@pytest.mark.parametrize("cls", CHAINS, ids=lambda c: c.mechanism)
@pytest.mark.parametrize(("e1", "einf"), [(0.2, 3.0), (1.0, 4.0), (0.5, 1.0)])
def test_the_ledger_charge_min_r_times_its_epsilon_and_epsilon_inf_is_sound(cls, e1, einf):
    from ldp.privacy.spending import stream_parameters

    spec = _chain(cls, epsilon=e1, epsilon_inf=einf)
    per_report, cap, memoized, values = stream_parameters(spec)
    assert (per_report, cap, memoized, values) == (spec.memo_report_epsilon, einf, True, 5)
    assert per_report >= e1
    for r in range(1, math.ceil(einf / e1) + 3):
        assert spec.memo_epsilon(r) <= min(r * per_report, einf) * (1 + 1e-12)


def test_ldp_encode_with_a_state_directory_keeps_each_clients_memo(tmp_path):
    """`ldp encode --state`: 4,000 reports of one value by one client follow p₂ around its own memo.

    Before the fix every row drew a fresh memo (the reports followed A = 0.711
    instead of p₂ = 0.876 around the memo, 30 SE apart). z·SE at α = 1e-6, two-sided.
    """
    from click.testing import CliRunner

    from ldp.cli import cli
    from ldp.client.state_paths import state_path

    spec = LGRR(domain=["a", "b", "c", "d"], epsilon=2.0, epsilon_inf=2.5)
    spec_path, users, out = tmp_path / "spec.json", tmp_path / "users.csv", tmp_path / "r.jsonl"
    spec_path.write_text(spec.to_json())
    n = 4000
    users.write_text("client_id,value\n" + "7,a\n" * n)
    result = CliRunner().invoke(
        cli, ["encode", "--spec", str(spec_path), str(users), "--state", str(tmp_path / "s"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    memo = spec.domain[make_encoder(spec, state=state_path(tmp_path / "s", 7)).memo("a")]
    values = [json.loads(line)["value"] for line in out.read_text().splitlines()]
    share, p2 = values.count(memo) / n, float(spec.p2)
    assert abs(share - p2) <= norm.isf(1e-6 / 2) * math.sqrt(p2 * (1 - p2) / n), (share, p2)
