"""1BitMean (onebitmean): exact privacy of both modes, α-point rounding, memoization, estimator, audit.

Statistical checks are seeded (or use the CSPRNG with a stated significance
level α) and compare with z·SE from the exact probabilities.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2, norm

import ldp
from ldp.aggregator import make_aggregator
from ldp.aggregator.numeric import MeanAccumulator
from ldp.client import encode_batch, make_encoder
from ldp.client.onebitmean import OneBitMeanEncoder, onebitmean_encoder
from ldp.client.state import ClientState
from ldp.errors import AccountingError, ParameterError, SpecError
from ldp.exact import ratio_within
from ldp.registry import MechanismDeclaration, declaration
from ldp.specs import spec_from_dict
from ldp.specs.frequency import calibrate_keep_probability
from ldp.specs.onebitmean import ALPHA_BITS, OneBitMean, alpha_point, alpha_points

SPAN = 1 << ALPHA_BITS


def _plain() -> OneBitMean:
    return OneBitMean(epsilon=1.0, low=0, high=100)


def _alpha(gamma: bool = False) -> OneBitMean:
    if gamma:
        return OneBitMean(epsilon=0.5, low=0, high=100, rounding="alpha", grid=8, epsilon_inf=2.0)
    return OneBitMean(epsilon=1.0, low=0, high=100, rounding="alpha", grid=8)


# -- the name ------------------------------------------------------------------------------------------


def test_the_registered_name_is_onebitmean_because_a_name_starts_with_a_letter():
    assert declaration("onebitmean").load_spec() is OneBitMean
    with pytest.raises(ValueError, match="lower-case letters"):
        MechanismDeclaration("1bitmean", "ldp.specs.onebitmean:OneBitMean")


# -- privacy: both ε's exact -------------------------------------------------------------------------


def _one_report_probability(spec: OneBitMean, u: Fraction) -> Fraction:
    """P[report = 1 | position u] from first principles: over the α grid, the memo bit, the γ flip."""
    if not spec.memoized:  # unbiased rounding of u to {0, 1}, then keep with p
        prob_one = u * spec.p + (1 - u) * (1 - spec.p)
    else:
        steps = spec.grid
        pos = u * steps
        cell = min(math.floor(pos), steps - 1)
        fine = math.floor((pos - cell) * SPAN)  # α indices j ≥ 2^32 − fine round up
        up = Fraction(fine, SPAN)
        prob_one = (1 - up) * spec.memo_probability(cell) + up * spec.memo_probability(cell + 1)
    return spec.gamma + (1 - 2 * spec.gamma) * prob_one


@pytest.mark.parametrize(
    "spec", [_plain(), _alpha(), _alpha(gamma=True)], ids=["plain", "alpha", "alpha-gamma"]
)
def test_one_report_worst_ratio_from_first_principles_is_the_claim(spec):
    positions = [Fraction(i, 40) for i in range(41)] + [Fraction(1, 3), Fraction(2, 7)]
    ones = [_one_report_probability(spec, u) for u in positions]
    worst = max(max(ones) / min(ones), max(1 - o for o in ones) / min(1 - o for o in ones))
    assert worst == spec.privacy_ratio == spec.keep / (1 - spec.keep)
    assert ratio_within(worst, spec.epsilon) and math.isclose(
        spec.epsilon_achieved, spec.epsilon, rel_tol=1e-9
    )
    data = spec.to_dict() | {"epsilon": spec.epsilon * (1 - 1e-6)}
    with pytest.raises(SpecError, match="claims epsilon"):
        spec_from_dict(data)


def test_epsilon_inf_is_the_memoized_bits_exact_ratio_and_gamma_gives_epsilon_one_exactly():
    spec = _alpha(gamma=True)
    p = calibrate_keep_probability(2.0, 2, "onebitmean")
    assert spec.p == p and spec.permanent_ratio == p / (1 - p)
    assert ratio_within(p / (1 - p), spec.epsilon_inf) and math.isclose(spec.epsilon_inf, 2.0, rel_tol=1e-9)
    # γ = (p − k)/(2p − 1) exactly: one report keeps with the calibrated k of ε₁
    assert spec.keep == calibrate_keep_probability(0.5, 2, "onebitmean")
    assert spec.gamma == (p - spec.keep) / (2 * p - 1) and 0 < spec.gamma < Fraction(1, 2)
    assert math.isclose(float(spec.gamma), (1 - math.tanh(0.25) / math.tanh(1.0)) / 2, rel_tol=1e-12)
    assert (spec.epsilon_one, spec.memo_domain_size, spec.memoized) == (0.5, 9, True)
    assert _alpha().gamma == 0 and _alpha().epsilon_inf == pytest.approx(1.0)
    assert _plain().epsilon_inf == math.inf and not _plain().memoized and _plain().memo_domain_size is None


def test_with_gamma_is_the_papers_parametrization():
    spec = OneBitMean.with_gamma(2.0, "1/10", low=0, high=60, grid=4)
    k = Fraction(1, 10) + Fraction(8, 10) * spec.p
    assert spec.gamma == Fraction(1, 10) and spec.keep == k and spec.rounding == "alpha"
    assert ratio_within(k / (1 - k), spec.epsilon) and spec.epsilon < spec.epsilon_inf
    assert spec_from_dict(json.loads(spec.to_json())) == spec


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"grid": 8}, "grid applies with rounding='alpha' only"),
        ({"epsilon_inf": 2.0}, "epsilon_inf applies with rounding='alpha' only"),
        ({"gamma": "1/10"}, "gamma .* applies with rounding='alpha' only"),
        ({"rounding": "beta"}, "rounding must be one of"),
        ({"rounding": "alpha", "epsilon_inf": 0.5}, "epsilon_inf .* must be at least epsilon"),
        ({"rounding": "alpha", "gamma": "1/2", "p": "3/4"}, "gamma must be below 1/2"),
        ({"rounding": "alpha", "p": "1/2"}, "p must exceed 1/2"),
        ({"rounding": "alpha", "grid": 0}, "grid"),
        ({"rounding": "alpha", "grid": 2000}, "grid"),
        ({"rounding": "alpha", "epsilon_inf": 2.0, "p": "3/4"}, "epsilon_inf or p, not both"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises(SpecError, match=message):
        OneBitMean(epsilon=1.0, **kwargs)


def test_json_round_trip_and_a_spec_file_cannot_carry_epsilon_inf():
    for spec in (_plain(), _alpha(), _alpha(gamma=True)):
        again = spec_from_dict(json.loads(spec.to_json()))
        assert again == spec and again.fingerprint == spec.fingerprint
    assert json.loads(_plain().to_json())["grid"] is None
    with pytest.raises(SpecError, match="unknown fields: epsilon_inf"):
        spec_from_dict(_alpha().to_dict() | {"epsilon_inf": 3.0})


def test_privacy_pieces_of_memoized_reports_grow_to_epsilon_inf_and_never_exceed_r_epsilon_one():
    spec = _alpha(gamma=True)
    assert spec.memo_linear
    worst = []
    for r in (1, 2, 5, 20, 200, math.inf):
        (part,) = spec.privacy_pieces(r)
        loss = float(np.max(np.abs(part.log_p - part.log_q)))
        assert loss <= min(r * spec.epsilon_one, spec.epsilon_inf) + 1e-9, r  # what memo_linear states
        worst.append(loss)
    assert (
        np.all(np.diff(worst) >= -1e-9)
        and worst[0] == pytest.approx(spec.epsilon)
        and worst[-1] == pytest.approx(2.0)
    )
    assert worst[-2] == pytest.approx(2.0, abs=1e-6)  # 200 reports reveal the memoized bit
    plain = _plain().privacy_pieces(3)
    assert plain[0].copies == 3  # fresh bits compose
    with pytest.raises(SpecError, match="fresh randomness"):
        _plain().privacy_pieces(math.inf)


# -- α-point rounding ---------------------------------------------------------------------------------


@pytest.mark.parametrize("u", [0.0, 0.3, 0.5, 0.123456789, 0.999, 1.0, 2.0**-40, 1 - 2.0**-53])
@pytest.mark.parametrize("grid", [1, 3, 8, 1024])
def test_alpha_point_rounds_up_for_exactly_the_top_fine_alphas(u, grid):
    """The α indices that round up are j ≥ 2^32 − ⌊frac·2^32⌋: P[up] = ⌊frac·2^32⌋/2^32 (unbiased on that sub-grid)."""
    pos = Fraction(u) * grid
    cell = min(math.floor(pos), grid - 1)
    fine = math.floor((pos - cell) * SPAN)
    threshold = SPAN - fine
    if threshold > 0:
        assert alpha_point(u, grid, threshold - 1) == cell
    if threshold < SPAN:
        assert alpha_point(u, grid, threshold) == cell + 1
    assert alpha_point(u, grid, 0) == cell + (fine == SPAN) and alpha_point(u, grid, SPAN - 1) == cell + (
        fine > 0
    )
    bias = Fraction(fine, SPAN) - (pos - cell)  # E_α[point] − u·s, in grid steps
    assert -Fraction(1, SPAN) < bias <= 0
    if (pos * SPAN).denominator == 1:
        assert bias == 0


def test_vectorized_alpha_points_equal_the_scalar_rule():
    rng = np.random.default_rng(5)
    u = np.concatenate([rng.random(2000), [0.0, 1.0, 0.5, 0.25]])
    alpha = rng.integers(0, SPAN, u.size)
    for grid in (1, 7, 16):
        expected = [alpha_point(float(x), grid, int(a)) for x, a in zip(u, alpha)]
        assert alpha_points(u, grid, alpha).tolist() == expected


# -- the client: memoization --------------------------------------------------------------------------


def test_an_unchanged_rounded_value_is_reported_identically_every_day(tmp_path):
    spec = _alpha()
    path = tmp_path / "client.json"
    encoder = make_encoder(spec, state=path)
    days = [encoder.encode(37.5).value for _ in range(30)]
    assert len(set(days)) == 1
    again = make_encoder(spec, state=path)  # a restart: the same α, the same memoized bits
    assert again.encode(37.5).value == days[0] and again.memo_key(37.5) == encoder.memo_key(37.5)
    assert encoder.memo_key(0) == b"0" and encoder.memo_key(100) == b"8" and encoder.memo_key(1e9) == b"8"
    point = int(encoder.memo_key(37.5))
    assert point in (3, 4)  # 37.5 is 3 steps of 12.5: no α moves it
    assert encoder.memo_key(37.5 + 0.01) in (b"3", b"4")


def test_the_memo_key_is_the_encoders_not_the_specs():
    with pytest.raises(AccountingError, match=r"encoder\.memo_key"):
        _alpha().memo_key(3.0)
    with pytest.raises(AccountingError, match="memoizes nothing"):
        _plain().memo_key(3.0)
    with pytest.raises(SpecError, match="no grid points"):
        OneBitMeanEncoder(_plain()).memo_key(3.0)


def test_plain_mode_keeps_no_state_and_a_foreign_state_is_refused(tmp_path):
    assert onebitmean_encoder(_plain(), state=None).state is None
    other = ClientState.new(_plain())
    with pytest.raises(ParameterError, match="client state is for spec"):
        OneBitMeanEncoder(_alpha(), other)


def test_output_perturbation_flips_the_memoized_bit_with_probability_gamma():
    """One client, r reports of one value: each differs from the memoized bit w.p. γ (α = 1e-6 two-sided)."""
    spec = _alpha(gamma=True)
    encoder = OneBitMeanEncoder(spec, ClientState.new(spec))
    bit = encoder.memo_bit(encoder.grid_point(60.0))
    r = 20_000
    flips = sum(encoder.sample_bit(60.0) != bit for _ in range(r))
    g = float(spec.gamma)
    assert abs(flips - r * g) <= norm.isf(1e-6 / 2) * math.sqrt(r * g * (1 - g))


# α with a memo flip (the most general client) and the plain one are fast; α without a flip is slow.
@pytest.mark.parametrize(
    "spec",
    [_plain(), pytest.param(_alpha(), marks=pytest.mark.slow), _alpha(gamma=True)],
    ids=["plain", "alpha", "alpha-gamma"],
)
def test_the_real_client_over_fresh_users_is_one_bitmean_at_epsilon_one(spec):
    """n fresh clients (CSPRNG secret, α, memo bit, flip) report x: P[1] = (1 − k) + u(2k − 1); α = 1e-6, 3 values."""
    n, alpha = 4000, 1e-6
    for x in (0.0, 30.0, 100.0):
        ones = sum(make_encoder(spec).encode(x).value for _ in range(n))
        prob = float(_one_report_probability(spec, Fraction(x / 100)))
        stat = (ones - n * prob) ** 2 / (n * prob * (1 - prob))
        assert stat <= chi2.isf(alpha / 3, 1), (x, ones / n, prob)


def test_batch_encoder_matches_the_exact_marginal_and_the_estimate_is_unbiased():
    """Seeded; each check at α = 1e-6 two-sided."""
    z = norm.isf(1e-6 / 2)
    for spec in (_plain(), _alpha(), _alpha(gamma=True)):
        rng = np.random.default_rng(11)
        values = rng.uniform(-10, 110, 50_000)
        batch = encode_batch(spec, values, rng)
        k = float(spec.keep)  # P[1 | u] = (1 − k) + u(2k − 1): _one_report_probability, in closed form
        prob = (1 - k) + np.clip(values / 100, 0, 1) * (2 * k - 1)
        ones = batch.values.sum()
        assert abs(ones - prob.sum()) <= z * math.sqrt(np.sum(prob * (1 - prob)))
        acc = make_aggregator(spec)
        acc.add_batch(batch)
        row = acc.estimate().iloc[0]
        truth = float(np.clip(values, 0, 100).mean())
        assert abs(row["mean"] - truth) <= z * row["std_error"]


def test_fast_simulator_counts_have_the_marginal_distribution():
    from ldp.simulations.onebitmean import onebitmean_support_counts, onebitmean_value_counts

    spec = _alpha(gamma=True)
    counts = np.array([100, 0, 0, 0, 0, 0, 0, 0, 300])  # users at the grid points 0 and 100
    rng = np.random.default_rng(3)
    draws = np.array([onebitmean_support_counts(spec, counts, rng) for _ in range(400)])
    assert (draws.sum(axis=1) == 400).all()
    k = float(spec.keep)
    mean = 100 * (1 - k) + 300 * k
    sd = math.sqrt(400 * k * (1 - k) / 400)
    assert abs(draws[:, 1].mean() - mean) <= norm.isf(1e-6 / 2) * sd
    acc = MeanAccumulator.from_counts(spec, onebitmean_value_counts(spec, [50.0] * 1000, rng))
    assert acc.n == 1000
    with pytest.raises(ParameterError, match="at least 2 levels"):
        onebitmean_support_counts(spec, [5], rng)


# -- shared paths this mechanism goes through ----------------------------------------------------------


def test_numeric_simulation_runs_through_the_declared_batch_encoder():
    from ldp.simulations import run_numeric

    results = run_numeric(
        mechanisms="onebitmean,stochastic-rounding", epsilons=[1.0], users=[2000], repeats=1, seed=2
    )
    rows = results.set_index("mechanism")
    assert rows.loc["onebitmean", "formula_mse"] == pytest.approx(
        rows.loc["stochastic-rounding", "formula_mse"]
    )


def test_the_collector_serves_no_table_for_onebitmean():
    from ldp.collector.service import _table_reply
    from ldp.numeric_wire import has_table, numeric_table

    assert _table_reply(_alpha().to_json()) is None and not has_table(_alpha())
    assert has_table(ldp.StochasticRounding(epsilon=1.0))
    with pytest.raises(SpecError, match="samples from no table"):
        numeric_table(_plain())


# -- audit ---------------------------------------------------------------------------------------------


def test_audit_claims_one_report_and_memoized_reports():
    from ldp.audit import audit_claims

    assert [c.label for c in audit_claims(_plain())] == ["one report"]
    claims = audit_claims(_alpha(gamma=True), memo_reports=8)
    assert [(c.label, c.reports) for c in claims] == [("one report", 1), ("8 memoized reports", 8)]
    assert claims[1].epsilon == pytest.approx(min(2.0, 8 * 0.5))


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [False, True], ids=["gamma0", "gamma"])
def test_audit_of_the_memoizing_client_passes_and_a_redrawing_one_is_flagged(gamma, monkeypatch):
    from ldp.audit import audit_claims, run_audit
    from ldp.audit_sources import python_client_sampler

    spec = OneBitMean.with_gamma(2.0, "1/10", low=0, high=100, grid=8) if gamma else _alpha()
    claims = audit_claims(spec, memo_reports=8)
    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, 600, confidence=1 - 1e-6, claims=claims)
    assert not result.violation and not result.memo_rejected
    # a client that re-draws its "memoized" bit on every report: rejected by the memoization test
    monkeypatch.setattr(
        OneBitMeanEncoder,
        "memo_bit",
        lambda self, point: ldp.client.sampling.sample_lanes(
            1, [(1, self.spec.memo_probability(point))], ldp.client.sampling.urandom_source
        ),
    )
    with python_client_sampler(spec) as sampler:
        result = run_audit(spec, sampler, 600, confidence=1 - 1e-6, claims=claims[1:])
    assert result.memo_rejected


def test_ldp_encode_with_a_state_directory_reports_each_clients_memoized_bits(tmp_path):
    """`ldp encode --state DIR`: a memoizing spec's rows go through each client's own encoder (not fresh clients)."""
    from click.testing import CliRunner

    from ldp.cli import cli

    spec_path = tmp_path / "spec.json"
    spec_path.write_text(_alpha().to_json())
    rows = [(f"u{i % 7}", 12.5 * (i % 9)) for i in range(40)]
    values = tmp_path / "values.csv"
    values.write_text("client_id,value\n" + "".join(f"{c},{v}\n" for c, v in rows))
    runs = []
    for day in range(3):
        out = tmp_path / f"day{day}.jsonl"
        args = [
            "encode",
            "--spec",
            str(spec_path),
            str(values),
            "--column",
            "value",
            "--state",
            str(tmp_path / "s"),
        ]
        result = CliRunner().invoke(cli, [*args, "-o", str(out)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        runs.append([json.loads(line)["value"] for line in out.read_text().splitlines()])
    assert runs[0] == runs[1] == runs[2]  # γ = 0: every client's grid points keep their bits
    # the same client and grid point within a run: the same bit (values on the grid: no α moves them)
    seen: dict[tuple[str, float], float] = {}
    for (client, value), bit in zip(rows, runs[0]):
        assert seen.setdefault((client, value), bit) == bit
