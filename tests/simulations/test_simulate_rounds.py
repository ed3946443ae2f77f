"""``ldp simulate --rounds``: longitudinal panels, lifetime ε by the ledger's rule, equal-budget calibration.

Statistical checks are seeded; each states its significance level α and
tolerates z·SE from theory (Bonferroni over the mechanisms it checks).
"""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ldp.cli import cli
from ldp.privacy.spending import Budget, Stream, spent_epsilon
from ldp.simulations import Panel, evolving_panel, make_population, read_panel, run_rounds
from ldp.simulations.lifetime import (
    EXACT,
    UPPER_BOUND,
    Accounting,
    accounting_of,
    lifetime_epsilon,
    memo_key_ids,
)
from ldp.simulations.mechanisms import RapporSettings, rappor_for_epsilon
from ldp.simulations.rounds import ROUND_COLUMNS, budget_spec
from ldp.specs import frequency_spec

# A hand-made panel: 3 users over 6 rounds, keys 0..2, -1 = no report.
HAND_KEYS = np.array(
    [
        [0, 1, 2],
        [0, 1, -1],
        [0, 2, 2],
        [1, 2, 2],
        [0, -1, 0],
        [0, 1, 0],
    ]
)


def _ledger_spent(
    keys: np.ndarray, epsilon: float, cap: float | None, memoized: bool, linear: bool = True
) -> np.ndarray:
    """The ledger itself: one Stream per (user, memo key) (per user for a fresh spec), spent_epsilon of them."""
    rounds, users = keys.shape
    out = np.zeros((rounds, users))
    for u in range(users):
        for t in range(rounds):
            reports: dict[str, int] = {}
            for key in keys[: t + 1, u]:
                if key >= 0:
                    name = f"key{key}" if memoized else "spec"
                    reports[name] = reports.get(name, 0) + 1
            streams = {
                name: Stream("fingerprint", epsilon, cap, count, memoized=memoized, linear=linear)
                for name, count in reports.items()
            }
            out[t, u] = spent_epsilon(streams, Budget(1e9))
    return out


@pytest.mark.parametrize(
    ("epsilon", "cap"),
    [(0.5, 1.25), (0.3, 2.0), (1.0, None)],
    ids=["cap-after-3", "cap-after-7", "no-cap"],
)
def test_lifetime_epsilon_is_the_ledgers_spent_epsilon_on_a_hand_made_panel(epsilon, cap):
    got = lifetime_epsilon(HAND_KEYS, Accounting(epsilon, cap, True, None, EXACT))
    np.testing.assert_allclose(got, _ledger_spent(HAND_KEYS, epsilon, cap, True), rtol=1e-12, atol=0)


def test_lifetime_epsilon_of_a_fresh_spec_is_reports_times_epsilon():
    got = lifetime_epsilon(HAND_KEYS, accounting_of(frequency_spec("grr", range(3), 0.7)))
    np.testing.assert_allclose(got, _ledger_spent(HAND_KEYS, 0.7, None, False), rtol=1e-12, atol=0)
    assert got[-1].tolist() == pytest.approx([4.2, 3.5, 3.5])


def test_upper_bound_rule_is_capped_at_memo_domain_size_keys():
    # user 0 reports 2 values, user 2 reports 3: per value min(r·ε₁, ε∞), at most 2·ε∞ in all
    got = lifetime_epsilon(HAND_KEYS, Accounting(1.0, 1.0, True, 2, UPPER_BOUND))
    assert got[-1].tolist() == [2.0, 2.0, 2.0]
    assert got[2].tolist() == [1.0, 2.0, 1.0]


@pytest.mark.parametrize(("epsilon", "cap"), [(0.5, 2.0), (0.3, 0.5)], ids=["cap-above-2x", "cap-below-2x"])
def test_lifetime_epsilon_without_memo_linear_is_the_ledgers_spent_epsilon(epsilon, cap):
    # a spec not proved memo_linear is charged eps_1 for a key's first report and eps_inf from its second
    got = lifetime_epsilon(HAND_KEYS, Accounting(epsilon, cap, True, None, EXACT, linear=False))
    np.testing.assert_allclose(
        got, _ledger_spent(HAND_KEYS, epsilon, cap, True, linear=False), rtol=1e-12, atol=0
    )


def test_upper_bound_rule_without_memo_linear_bounds_every_assignment_of_values_to_keys():
    # client-dependent keys (LOLOHA's buckets): any map of the 3 values onto 2 keys is possible; the bound
    # must cover the ledger's spent of each (merging two values reported once costs eps_inf, not 2·eps_1)
    import itertools

    epsilon, cap = 0.5, 2.0
    got = lifetime_epsilon(HAND_KEYS, Accounting(epsilon, cap, True, 2, UPPER_BOUND, linear=False))
    worst = np.zeros(HAND_KEYS.shape)
    for assignment in itertools.product(range(2), repeat=3):
        mapped = np.where(HAND_KEYS >= 0, np.array(assignment)[np.clip(HAND_KEYS, 0, None)], -1)
        worst = np.maximum(worst, _ledger_spent(mapped, epsilon, cap, True, linear=False))
    np.testing.assert_array_equal(got, worst)  # the worst grouping, attained
    uncapped = lifetime_epsilon(HAND_KEYS, Accounting(epsilon, None, True, None, UPPER_BOUND, linear=False))
    assert uncapped[:2, 0].tolist() == [0.5, math.inf] and not np.isnan(uncapped).any()
    assert got[:, 0].tolist() == [0.5, 2.0, 2.0, 2.5, 2.5, 2.5]  # user 0's values on two keys: 2.0 + 0.5


def test_upper_bound_rule_without_memo_linear_is_the_worst_grouping_on_random_panels():
    import itertools

    rng = np.random.default_rng(11)
    for epsilon, cap, keys in [(0.5, 2.0, 2), (0.5, 0.8, 3), (0.2, 1.0, 3)]:
        panel = rng.integers(-1, 4, size=(7, 6))
        got = lifetime_epsilon(panel, Accounting(epsilon, cap, True, keys, UPPER_BOUND, linear=False))
        worst = np.zeros(panel.shape)
        for assignment in itertools.product(range(keys), repeat=4):
            mapped = np.where(panel >= 0, np.array(assignment)[np.clip(panel, 0, None)], -1)
            worst = np.maximum(worst, _ledger_spent(mapped, epsilon, cap, True, linear=False))
        np.testing.assert_allclose(got, worst, rtol=1e-12, atol=1e-12)


def test_loloha_is_accounted_as_the_ledger_charges_it():
    from ldp.privacy.spending import memo_key_cost
    from ldp.specs.loloha import LOLOHA

    spec = LOLOHA(domain=("a", "b", "c"), epsilon=0.5, epsilon_inf=2.0)
    accounting = accounting_of(spec)
    assert (
        accounting.linear is True and spec.memo_report_epsilon == 0.5
    )  # r reports of a bucket: min(r·ε′, ε∞)
    spent = lifetime_epsilon(np.array([[0], [0], [0]]), accounting)[:, 0].tolist()
    assert spent == [memo_key_cost(r, 0.5, 2.0) for r in (1, 2, 3)] == [0.5, 1.0, 1.5]


@pytest.mark.parametrize("ratio", [0.25, 0.5])
def test_equal_budget_loloha_keeps_its_worst_user_within_the_budget_by_the_ledgers_rule(ratio):
    # LOLOHA is not memo_linear: its worst user is charged eps_inf from a bucket's second report (and the worst
    # grouping of its values onto buckets); the calibration's fast per-user sum must be that same total
    panel = evolving_panel(make_population("uniform", 16), 300, 4, 0.3, np.random.default_rng(3))
    spec = budget_spec("loloha", panel, 4.0, epsilon_ratio=ratio)
    spent = lifetime_epsilon(memo_key_ids(spec, panel.domain, panel.values), accounting_of(spec))
    assert spent[-1].max() == pytest.approx(4.0, rel=1e-6)


def test_memo_keys_come_from_the_specs_memo_key():
    spec = frequency_spec("l-grr", ["a", "b", "c"], 1.0)
    keys = memo_key_ids(spec, spec.domain, np.array([[0, 2, -1], [1, 2, 0]]))
    assert keys.tolist() == [[0, 2, -1], [1, 2, 0]]
    assert accounting_of(spec) == Accounting(1.0, 2.0, True, 3, EXACT)


def test_evolving_panel_changes_with_the_given_probability():
    rng = np.random.default_rng(5)
    population = make_population("uniform", 4)
    panel = evolving_panel(population, 20_000, 3, 0.4, rng)
    changed = (panel.values[1] != panel.values[0]).mean()
    expected = 0.4 * (1 - 1 / 4)  # a redraw lands on the old value with probability 1/4
    se = math.sqrt(expected * (1 - expected) / 20_000)
    assert abs(changed - expected) <= 4.0 * se  # α ≈ 6e-5


def test_rappor_for_epsilon_sets_epsilon_inf_from_f():
    spec = rappor_for_epsilon(0.5, epsilon_inf=2.0)
    assert spec.f > 0
    assert 2.0 - 1e-9 <= spec.epsilon_inf <= 2.0
    assert spec.epsilon_one <= 0.5


def test_equal_budget_rule_on_a_hand_made_panel():
    # user 0: a a b b (S = min(2, 2) + min(2, 2) = 4 at ρ = 1/2); user 1: c c c c (S = 2)
    panel = Panel("hand", ("a", "b", "c"), np.array([[0, 2], [0, 2], [1, 2], [1, 2]]))
    assert budget_spec("oue", panel, 2.0).epsilon == pytest.approx(0.5)
    chain = budget_spec("l-osue", panel, 2.0)
    assert (chain.epsilon, chain.epsilon_inf) == pytest.approx((0.5, 1.0))
    rappor = budget_spec("rappor", panel, 2.0)
    assert rappor.epsilon_one <= 0.5 and rappor.epsilon_inf <= 1.0
    # ρ = 1/4: S = min(2, 4) + min(2, 4) = 4 still; ε∞ = 4·ε₁
    wide = budget_spec("l-grr", panel, 2.0, epsilon_ratio=0.25)
    assert (wide.epsilon, wide.epsilon_inf) == pytest.approx((0.5, 2.0))


def test_equal_budget_uses_the_ledgers_per_report_charge_when_it_exceeds_epsilon_one():
    # L-GRR over 16 values at ε∞ = 4·ε₁: r reports of one memo cost more than r·ε₁, the ledger charges more
    rng = np.random.default_rng(3)
    panel = evolving_panel(make_population("uniform", 16), 200, 10, 0.2, rng)
    spec = budget_spec("l-grr", panel, 2.0, epsilon_ratio=0.25)
    assert spec.memo_report_epsilon > spec.epsilon * 1.05
    assert spec.epsilon_inf == pytest.approx(4 * spec.epsilon)
    spent = lifetime_epsilon(memo_key_ids(spec, panel.domain, panel.values), accounting_of(spec))
    assert spent.max() <= 2.0 * (1 + 1e-9)
    assert spent.max() == pytest.approx(2.0, rel=1e-6)  # the largest ε₁ that fits (bisection to 2^-40)


def test_run_rounds_keeps_every_mechanism_within_the_budget_and_reaches_it():
    budget = 3.0
    results = run_rounds(
        "grr,oue,rappor,l-grr,l-osue,dbitflip",
        rounds=8,
        users=3_000,
        domain_size=8,
        change_prob=0.2,
        budget=budget,
        seed=11,
        rappor=RapporSettings(num_bits=16, num_cohorts=4),
    )
    assert list(results.columns) == list(ROUND_COLUMNS)
    last = results.groupby("mechanism", sort=False).tail(1).set_index("mechanism")
    assert (results["lifetime_max"] <= budget * (1 + 1e-9)).all()
    assert (results["lifetime_median"] <= results["lifetime_max"]).all()
    # the calibration is the largest that fits: the worst user ends at B (dBitFlip's is bisected: within 1e-6)
    assert last["lifetime_max"].to_numpy() == pytest.approx(budget, rel=1e-6)
    assert last.loc["grr", "epsilon"] == pytest.approx(budget / 8)
    assert last.loc["l-grr", "epsilon_inf"] == pytest.approx(2 * last.loc["l-grr", "epsilon"])
    assert set(last["lifetime_rule"]) == {"fresh", "memo keys", "per-value bound"}
    assert last.loc["dbitflip", "lifetime_rule"] == "per-value bound"
    # the same seed gives the same numbers
    again = run_rounds("l-grr", rounds=8, users=3_000, domain_size=8, change_prob=0.2, budget=budget, seed=11)
    pd.testing.assert_series_equal(
        again["mse"].reset_index(drop=True),
        results.query("mechanism == 'l-grr'")["mse"].reset_index(drop=True),
    )


def test_every_registered_memoizing_oracle_is_calibrated_to_the_budget():
    """Generic over the registry: every memoizing frequency oracle (new families included) stays within B and reaches it."""
    from ldp.simulations.rounds import default_round_mechanisms

    names = [name for name in default_round_mechanisms() if name != "rappor"]  # RAPPOR: the test above
    results = run_rounds(names, rounds=6, users=2_000, domain_size=8, change_prob=0.3, budget=2.5, seed=4)
    last = results.groupby("mechanism").tail(1).set_index("mechanism")
    assert set(last.index) == set(names)
    assert (results["lifetime_max"] <= 2.5 * (1 + 1e-9)).all()
    assert last["lifetime_max"].to_numpy() == pytest.approx(2.5, rel=1e-6)
    assert results["theory_mse"].notna().all()


@pytest.mark.parametrize(
    ("names", "rounds"),
    [
        (["grr", "l-grr", "l-osue"], 100),
        pytest.param(
            ["grr", "oue", "olh", "l-grr", "l-osue", "l-oue", "l-sue", "dbitflip"],
            400,
            marks=pytest.mark.slow,
        ),
    ],
    ids=["fast", "every-chain"],
)
def test_per_round_mse_is_the_exact_variance_within_z_se(names, rounds):
    """α = 0.001 overall (Bonferroni over the mechanisms): mean over rounds of mse − theory, SE from the rounds."""
    results = run_rounds(
        names, rounds=rounds, users=2_000, domain_size=8, change_prob=0.3, epsilon=1.0, seed=2026
    )
    z = NormalDist().inv_cdf(1 - 0.001 / (2 * len(names)))
    for name, block in results.groupby("mechanism"):
        gap = (block["mse"] - block["theory_mse"]).to_numpy()
        se = gap.std(ddof=1) / math.sqrt(gap.size)
        assert abs(gap.mean()) <= z * se, (name, gap.mean(), se)
        assert block["mode"].eq("fast").all()


def test_panel_file_with_bad_rows_is_read_and_the_rows_rejected_with_reasons(tmp_path):
    path = tmp_path / "panel.csv"
    path.write_text(
        "device,day,os\n"
        "u1,1,ios\n"
        "u2,1,android\n"
        "u1,2,ios\n"
        "u2,2,\n"  # no value
        "u3,x,ios\n"  # round not an integer
        "u1,2,android\n"  # u1 already reported in round 2
        "u2,3,android\n"
        "u3,3,linux\n"
    )
    from ldp.aggregator.rejects import RejectsWriter

    with RejectsWriter(keep=10) as rejects:
        panel = read_panel(path, ("device", "day", "os"), rejects=rejects)
    assert dict(rejects.counts) == {"missing_field": 1, "invalid": 2}
    assert [(r.line, r.reason) for r in rejects.examples] == [
        (4, "missing_field"),
        (5, "invalid"),
        (6, "invalid"),
    ]
    assert "u1" in rejects.examples[2].detail and "round 2" in rejects.examples[2].detail
    assert panel.domain == ("android", "ios", "linux")
    assert panel.rounds == (1, 2, 3)
    assert panel.values.tolist() == [[1, 0, -1], [1, -1, -1], [-1, 0, 2]]  # users u1, u2, u3
    # the rejects go to a file from the CLI, the rest is simulated
    out = tmp_path / "rounds.json"
    kept = tmp_path / "rejects.jsonl"
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--panel",
            str(path),
            "--panel-columns",
            "device,day,os",
            "-m",
            "grr,l-grr",
            "--budget",
            "2",
            "--seed",
            "1",
            "--rejects",
            str(kept),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "rejected 3 panel row(s): invalid 2, missing_field 1" in result.stderr
    assert [json.loads(line)["reason"] for line in kept.read_text().splitlines()] == [
        "missing_field",
        "invalid",
        "invalid",
    ]
    rows = pd.read_json(out)
    assert sorted(set(rows["round"])) == [1, 2, 3]
    assert rows["lifetime_max"].max() <= 2.0 * (1 + 1e-9)


def test_a_panel_with_no_usable_row_is_one_clear_error(tmp_path):
    path = tmp_path / "panel.csv"
    path.write_text("user,round,value\nu1,,a\n")
    result = CliRunner().invoke(cli, ["simulate", "--panel", str(path)])
    assert result.exit_code == 2
    assert "no usable row" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "3"], "--budget applies to longitudinal simulations only"),
        (["--rounds", "3", "-r", "2"], "--repeats does not apply to longitudinal simulations"),
        (["--rounds", "3", "--budget", "2", "-e", "1"], "give --budget (lifetime epsilon) or --epsilon"),
        (["--rounds", "3", "-n", "10,20"], "--users must be one integer >= 1 with --rounds"),
        (["--rounds", "3", "--epsilon-ratio", "1"], "--epsilon-ratio 1.0 must be in (0, 1)"),
        (["--rounds", "3", "-m", "duchi,grr"], "--mechanism: duchi estimate means"),
        (
            ["--panel", "p.csv", "--panel-columns", "a,b"],
            "--panel-columns must be three distinct column names",
        ),
    ],
)
def test_cli_refuses_options_that_do_not_apply(args, message):
    result = CliRunner().invoke(cli, ["simulate", *args])
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.slow
def test_sample_run_n_1e5_t_30_budget_4(tmp_path):
    """The docs' sample: n = 10⁵, T = 30, c = 0.1, B = 4, every default mechanism, with the plot."""
    pytest.importorskip("matplotlib")
    plot = tmp_path / "rounds.png"
    result = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--rounds",
            "30",
            "--change-prob",
            "0.1",
            "--budget",
            "4",
            "-d",
            "64",
            "--seed",
            "1",
            "-o",
            str(tmp_path / "rounds.csv"),
            "--plot",
            str(plot),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(tmp_path / "rounds.csv")
    assert rows.groupby("mechanism")["round"].count().eq(30).all()
    assert rows["lifetime_max"].max() <= 4 * (1 + 1e-9)
    assert plot.stat().st_size > 0
