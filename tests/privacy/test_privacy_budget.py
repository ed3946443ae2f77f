"""Per-client budget: enforcement, persistence, refusal, memoized RAPPOR streams."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
import subprocess
import sys

import pytest

import ldp
from ldp.errors import BudgetExceededError, ParameterError, StateError
from ldp.privacy.budget import Budget, PrivacyLedger, worst_case_memoized_cost
from ldp.privacy.composition import heterogeneous_composition, optimal_composition
from ldp.privacy.mechanisms import mechanism_loss
from ldp.privacy.spending import memo_key_cost

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=0.5)
RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")


def test_budget_is_enforced_and_refusal_records_nothing(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.load_or_create(path, Budget(epsilon=2.0))
    for _ in range(4):
        ledger.charge(GRR, "a")
    assert ledger.spent == pytest.approx(2.0)
    before = path.read_bytes()
    with pytest.raises(BudgetExceededError):
        ledger.charge(GRR, "b")
    assert path.read_bytes() == before
    assert ledger.spent == pytest.approx(2.0) and ledger.remaining == 0.0
    assert not ledger.can_charge(GRR, "a")


def test_ledger_survives_restart(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.load_or_create(path, Budget(epsilon=1.2))
    ledger.charge(GRR, "a")
    ledger.charge(GRR, "c")
    again = PrivacyLedger.load_or_create(path, Budget(epsilon=1.2))
    assert again.spent == pytest.approx(1.0)
    assert PrivacyLedger.load_or_create(path).spent == pytest.approx(1.0)  # budget read from the file
    with pytest.raises(BudgetExceededError):
        again.charge(GRR, "a")


def test_file_is_private_and_holds_no_values(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.load_or_create(path, Budget(epsilon=10.0))
    ledger.charge(RAPPOR, "a-very-secret-value")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert "a-very-secret-value" not in text
    lock = tmp_path / "ledger.json.lock"  # the ledger's lock file: empty, private, kept
    assert lock.read_bytes() == b"" and stat.S_IMODE(os.stat(lock).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json", "ledger.json.lock"], (
        "no temporary files left"
    )


def test_memoized_rappor_value_costs_at_most_epsilon_inf(tmp_path):
    ledger = PrivacyLedger.in_memory(Budget(epsilon=100.0))
    for r in range(1, 11):
        spent = ledger.charge(RAPPOR, "x")
        assert spent == pytest.approx(min(r * RAPPOR.epsilon_one, RAPPOR.epsilon_inf))
        assert ledger.committed == pytest.approx(
            r * RAPPOR.epsilon_one
        )  # as if every report were a new value
    # a second value is a second stream
    ledger.charge(RAPPOR, "y")
    assert ledger.spent == pytest.approx(RAPPOR.epsilon_inf + RAPPOR.epsilon_one)
    assert ledger.committed == pytest.approx(11 * RAPPOR.epsilon_one)
    assert len(ledger.streams) == 2


@pytest.mark.parametrize("composition, delta", [("basic", 0.0), ("optimal", 1e-6), ("exact", 1e-6)])
def test_refusal_does_not_depend_on_the_values(composition, delta):
    """A client repeating one value and one changing it are refused at the same report."""
    budget = Budget(RAPPOR.epsilon_inf + RAPPOR.epsilon_one / 2, delta, composition)

    def reports_until_refused(values):
        ledger = PrivacyLedger.in_memory(budget)
        for sent, value in enumerate(values):
            try:
                ledger.charge(RAPPOR, value)
            except BudgetExceededError:
                return sent, ledger
        return len(values), ledger

    same, same_ledger = reports_until_refused(["x"] * 50)
    changing, changing_ledger = reports_until_refused([f"v{i % 7}" for i in range(50)])
    assert same == changing == 4  # 4·ε₁ = 4.30 fits, 5·ε₁ = 5.37 does not (basic and, here, optimal alike)
    assert same_ledger.committed == pytest.approx(changing_ledger.committed)
    for ledger in (same_ledger, changing_ledger):  # the values show only in the informational total
        assert ledger.spent <= ledger.committed * (1 + 1e-12)


def test_finite_domain_rappor_reports_forever_within_d_times_epsilon_inf():
    boolean = ldp.Rappor.boolean(f="1/2", p="1/4", q="3/4")
    ledger = PrivacyLedger.in_memory(Budget(epsilon=2 * boolean.epsilon_inf))
    for i in range(500):
        ledger.charge(boolean, i % 3 == 0)
    assert ledger.committed == pytest.approx(2 * boolean.epsilon_inf)


@pytest.mark.parametrize("reports, values", [(1, 3), (3, 3), (4, 3), (7, 3), (30, 3), (5, None), (10, 1)])
def test_worst_case_memoized_cost_is_the_largest_over_all_value_sequences(reports, values):
    """Brute force over every way of spreading the reports over the values."""
    eps1, cap = 1.0, 2.5
    got = worst_case_memoized_cost(reports, eps1, cap, values)
    if values is None:
        assert got == reports * eps1
        return

    def spreads(left, slots):
        if slots == 1:
            yield (left,)
            return
        for first in range(left + 1):
            for rest in spreads(left - first, slots - 1):
                yield (first, *rest)

    best = max(sum(min(r * eps1, cap) for r in spread) for spread in spreads(reports, values))
    assert got == pytest.approx(best)


def test_invalid_value_records_nothing():
    basic = ldp.Rappor.basic(("a", "b"), f="1/4", p="1/4", q="3/4")
    ledger = PrivacyLedger.in_memory(Budget(epsilon=5.0))
    with pytest.raises(ParameterError):
        ledger.charge(basic, "not-in-domain")
    assert ledger.spent == 0.0 and not ledger.streams


def test_optimal_rule_allows_more_reports_than_basic():
    budget_eps, delta, eps = 5.0, 1e-6, 0.1
    basic = PrivacyLedger.in_memory(Budget(budget_eps))
    tight = PrivacyLedger.in_memory(Budget(budget_eps, delta, "optimal"))
    spec = ldp.GRR(domain=(0, 1), epsilon=eps)

    def fill(ledger):
        n = 0
        while ledger.can_charge(spec, 0):
            ledger.charge(spec, 0)
            n += 1
        return n

    n_basic, n_tight = fill(basic), fill(tight)
    assert n_basic == 50
    assert n_tight > n_basic
    # exactly the largest k whose optimal composition fits
    assert (
        optimal_composition(eps, n_tight, delta) <= budget_eps < optimal_composition(eps, n_tight + 1, delta)
    )


@pytest.mark.parametrize(
    "content",
    ["", "{not json", "[]", '{"format": "other"}', '{"format": "ldp-privacy-ledger/1", "key": "zz"}'],
)
def test_corrupt_or_foreign_file_is_an_error_and_left_alone(tmp_path, content):
    path = tmp_path / "ledger.json"
    path.write_text(content)
    path.chmod(0o600)  # private, so the content is what is judged
    with pytest.raises(StateError):
        PrivacyLedger.load_or_create(path, Budget(1.0))
    assert path.read_text() == content


def test_budget_mismatch_is_an_error(tmp_path):
    path = tmp_path / "ledger.json"
    PrivacyLedger.load_or_create(path, Budget(1.0))
    with pytest.raises(StateError, match="budget"):
        PrivacyLedger.load_or_create(path, Budget(2.0))


def test_missing_file_needs_a_budget(tmp_path):
    with pytest.raises(ParameterError):
        PrivacyLedger.load_or_create(tmp_path / "none.json")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 0},
        {"epsilon": -1},
        {"epsilon": math.inf},
        {"epsilon": 1, "delta": 1},
        {"epsilon": 1, "composition": "magic"},
    ],
)
def test_bad_budget(kwargs):
    with pytest.raises(ParameterError):
        Budget(**kwargs)


def test_tampered_stream_is_an_error(tmp_path):
    path = tmp_path / "ledger.json"
    PrivacyLedger.load_or_create(path, Budget(3.0)).charge(GRR, "a")
    data = json.loads(path.read_text())
    name = next(iter(data["streams"]))
    data["streams"][name]["reports"] = -3
    path.write_text(json.dumps(data))
    with pytest.raises(StateError):
        PrivacyLedger.load(path)


@pytest.mark.slow  # a fresh interpreter; the fast set's import probe: test_cli_imports' --help test
def test_budget_module_does_not_import_scipy():
    code = (
        "import sys, ldp.privacy.budget, ldp.privacy; print('scipy' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# -- memoized specs in general (not only RAPPOR) --------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ToyMemoized:
    """A memoized spec as the ledger sees one: ε₁ per report, ε∞ per memo key, ``memo_domain_size`` keys.

    ``memo_linear`` False (the default of every spec): no proof that r reports of a key are r·ε₁-DP.
    """

    epsilon_one: float = 0.5
    epsilon_inf: float = 2.0
    memo_domain_size: int | None = 3
    memo_linear: bool = False
    mechanism: str = "toy-memo"
    memoized: bool = True

    @property
    def epsilon(self) -> float:
        return self.epsilon_one

    @property
    def fingerprint(self) -> str:
        return f"toy{self.epsilon_one}{self.epsilon_inf}{self.memo_domain_size}{self.memo_linear}"

    def memo_key(self, value) -> bytes:
        if value not in ("a", "b", "c"):
            raise ParameterError(f"toy value {value!r} is not in its domain")
        return value.encode()


def test_memo_key_given_by_the_caller_names_the_stream():
    """Two values under one encoder memo key are one stream; the spec's own memo key is not asked."""
    spec = ToyMemoized(memo_linear=True)
    ledger = PrivacyLedger.in_memory(Budget(epsilon=100.0))
    ledger.charge(spec, "a", memo_key=b"bucket-0")
    ledger.charge(spec, "b", memo_key=b"bucket-0")
    ledger.charge(spec, "zzz-not-in-domain", memo_key=b"bucket-1")
    assert sorted(s.reports for s in ledger.streams.values()) == [1, 2]
    ledger.refund(spec, ["zzz-not-in-domain"], memo_keys=[b"bucket-1"])
    assert [s.reports for s in ledger.streams.values()] == [2]
    with pytest.raises(ParameterError, match="memo key must be bytes"):
        ledger.charge(spec, "a", memo_key="bucket-0")  # type: ignore[arg-type]


def test_memoized_spec_without_a_linear_proof_costs_epsilon_inf_from_the_second_report():
    spec = ToyMemoized()
    ledger = PrivacyLedger.in_memory(Budget(epsilon=100.0))
    assert ledger.charge(spec, "a") == pytest.approx(0.5)
    assert ledger.charge(spec, "a") == pytest.approx(2.0)  # not 2·ε₁ = 1.0: unproved for this mechanism
    assert ledger.charge(spec, "a") == pytest.approx(2.0)
    # committed: the worst spread of 3 reports over 3 keys is one each (1.5) or 2 + 1 (2.5)
    assert ledger.committed == pytest.approx(2.5)
    linear = PrivacyLedger.in_memory(Budget(epsilon=100.0))
    for _ in range(3):
        linear.charge(ToyMemoized(memo_linear=True), "a")
    assert linear.spent == pytest.approx(1.5) and linear.committed == pytest.approx(1.5)


@pytest.mark.parametrize(
    "reports, values", [(1, 3), (2, 3), (3, 3), (4, 3), (5, 3), (7, 3), (30, 3), (5, None), (10, 1)]
)
@pytest.mark.parametrize("eps1, cap", [(1.0, 2.5), (1.0, 1.5), (0.3, 2.0)])
def test_worst_case_without_a_linear_proof_is_the_largest_over_all_spreads(reports, values, eps1, cap):
    got = worst_case_memoized_cost(reports, eps1, cap, values, linear=False)
    keys = reports if values is None else values

    def spreads(left, slots):
        if slots == 1:
            yield (left,)
            return
        for first in range(left + 1):
            for rest in spreads(left - first, slots - 1):
                yield (first, *rest)

    best = max(
        sum(memo_key_cost(r, eps1, cap, linear=False) for r in spread) for spread in spreads(reports, keys)
    )
    assert got == pytest.approx(best)


def test_a_version_1_ledger_reads_as_before_and_stays_version_1(tmp_path):
    """RAPPOR and fresh streams under an epsilon budget: the file is byte-for-byte version 1."""
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.load_or_create(path, Budget(epsilon=10.0, delta=1e-6, composition="optimal"))
    ledger.charge(RAPPOR, "x")
    ledger.charge(GRR, "a")
    data = json.loads(path.read_text())
    assert data["format"] == "ldp-privacy-ledger/1"
    assert all(
        set(item) == {"spec", "epsilon", "epsilon_cap", "reports", "memoized", "values"}
        for item in data["streams"].values()
    )
    again = PrivacyLedger.load(path)
    assert all(s.linear and s.loss is None for s in again.streams.values())
    assert again.committed == pytest.approx(ledger.committed)


def test_a_ledger_with_what_version_1_cannot_hold_is_version_2(tmp_path):
    """An older ldp would drop ``linear`` (and undercharge): it must refuse the file instead."""
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.load_or_create(path, Budget(epsilon=10.0))
    ledger.charge(ToyMemoized(), "a")
    data = json.loads(path.read_text())
    assert data["format"] == "ldp-privacy-ledger/2"
    assert [item["linear"] for item in data["streams"].values()] == [False]
    assert PrivacyLedger.load(path).streams == ledger.streams
    data["format"] = "ldp-privacy-ledger/1"  # read as version 1, a memoized stream would be RAPPOR's
    path.write_text(json.dumps(data))
    assert next(iter(PrivacyLedger.load(path).streams.values())).linear


@pytest.mark.parametrize(
    "change",
    [
        lambda item: item.pop("linear"),
        lambda item: item.update(linear="no"),
        lambda item: item.update(loss={"log_p": [0.0], "log_q": [-1.0]}),  # Q-masses do not sum to 1
        lambda item: item.update(loss={"log_p": [0.0], "log_q": []}),
        lambda item: item.update(loss={"log_p": [float("nan")], "log_q": [0.0]}),
    ],
)
def test_a_tampered_version_2_stream_is_an_error(tmp_path, change):
    path = tmp_path / "ledger.json"
    PrivacyLedger.load_or_create(path, Budget(epsilon=10.0)).charge(ToyMemoized(), "a")
    data = json.loads(path.read_text())
    change(next(iter(data["streams"].values())))
    path.write_text(json.dumps(data))
    with pytest.raises(StateError, match="corrupt"):
        PrivacyLedger.load(path)


# -- budgets beyond pure epsilon: the exact curves of the reports sent -----------------------------------

OUE = ldp.OUE(domain=("a", "b", "c", "d"), epsilon=1.0)


def _fill(ledger, spec, value="a", most=100):
    sent = 0
    while sent < most and ledger.can_charge(spec, value):
        ledger.charge(spec, value)
        sent += 1
    return sent


def test_exact_rule_charges_the_composed_curve_of_the_reports_sent():
    """30 OUE reports at epsilon = 1, delta = 1e-6: the exact curve gives 22.59, the worst case of 1-DP 29.99."""
    delta = 1e-6
    exact = PrivacyLedger.in_memory(Budget(100.0, delta, "exact"))
    optimal = PrivacyLedger.in_memory(Budget(100.0, delta, "optimal"))
    for _ in range(30):
        exact.charge(OUE, "a")
        optimal.charge(OUE, "b")
    assert exact.committed == pytest.approx(mechanism_loss(OUE, 30).epsilon(delta), rel=1e-9)
    assert exact.committed == pytest.approx(22.5877, abs=1e-4)
    assert optimal.committed == pytest.approx(optimal_composition(1.0, 30, delta), rel=1e-9)
    assert optimal.committed == pytest.approx(29.9879, abs=1e-4)
    # a budget of 20: the generic rule refuses report 21, the exact curve lets 25 through
    assert _fill(PrivacyLedger.in_memory(Budget(20.0, delta, "optimal")), OUE) == 20
    assert _fill(PrivacyLedger.in_memory(Budget(20.0, delta, "exact")), OUE) == 25
    assert mechanism_loss(OUE, 25).epsilon(delta) <= 20 < mechanism_loss(OUE, 26).epsilon(delta)


def test_exact_rule_composes_different_specs_together():
    delta = 1e-6
    ledger = PrivacyLedger.in_memory(Budget(100.0, delta, "exact"))
    for _ in range(7):
        ledger.charge(OUE, "a")
    for _ in range(5):
        ledger.charge(GRR, "a")
    expected = mechanism_loss(OUE, 7).compose(mechanism_loss(GRR, 5)).epsilon(delta)
    assert ledger.committed == pytest.approx(expected, rel=1e-9)
    assert (
        ledger.committed
        < PrivacyLedger.in_memory(Budget(100.0, delta, "optimal")).committed + 7 * 1.0 + 5 * 0.5
    )
    rappor = PrivacyLedger.in_memory(Budget(100.0, delta, "exact"))  # memoized pieces: randomized response
    for value in ("x", "y", "x"):
        rappor.charge(RAPPOR, value)
    rappor.charge(OUE, "a")
    pure = [worst_case_memoized_cost(3, RAPPOR.epsilon_one, RAPPOR.epsilon_inf, None)]
    expected = heterogeneous_composition(pure).compose(mechanism_loss(OUE, 1)).epsilon(delta)
    assert rappor.committed == pytest.approx(expected, rel=1e-9)


def test_gdp_budget_refuses_the_first_report_whose_curve_falls_below_g_mu():
    ledger = PrivacyLedger.in_memory(Budget(mu=2.0))
    sent = _fill(ledger, OUE)
    assert mechanism_loss(OUE, sent).gdp_mu() <= 2.0 < mechanism_loss(OUE, sent + 1).gdp_mu()
    assert ledger.committed == pytest.approx(mechanism_loss(OUE, sent).gdp_mu(), rel=1e-9)
    # composing the one-report mu (G_mu1 of each report: sqrt(k)·mu1 <= 2) would stop earlier
    mu1 = mechanism_loss(OUE, 1).gdp_mu()
    assert math.floor((2.0 / mu1) ** 2) < sent
    with pytest.raises(BudgetExceededError, match="mu="):
        ledger.charge(OUE, "a")


def test_gdp_and_exact_budgets_round_trip_through_the_file(tmp_path):
    for budget in (Budget(mu=1.5), Budget(5.0, 1e-6, "exact")):
        path = tmp_path / f"{budget.measure}.json"
        ledger = PrivacyLedger.load_or_create(path, budget)
        ledger.charge(OUE, "a")
        ledger.charge(RAPPOR, "x")
        assert json.loads(path.read_text())["format"] == "ldp-privacy-ledger/2"
        again = PrivacyLedger.load_or_create(path)
        assert again.budget == budget and again.streams == ledger.streams
        assert again.committed == pytest.approx(ledger.committed)
        with pytest.raises(StateError, match="holds the budget"):
            PrivacyLedger.load_or_create(path, Budget(epsilon=1.5))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"epsilon": 1.0, "mu": 1.0},
        {"mu": 0},
        {"mu": 1.0, "delta": 1e-6},
        {"mu": 1.0, "composition": "basic"},
    ],
)
def test_bad_gdp_budget(kwargs):
    with pytest.raises(ParameterError):
        Budget(**kwargs)


def test_the_ledger_file_vectors_read_as_stated(tmp_path):
    """tests/vectors ledger_files (what the TypeScript client must make of Python's files) hold for Python."""
    from pathlib import Path

    cases = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "vectors.json").read_text())[
        "budget"
    ]["ledger_files"]
    assert {c["id"] for c in cases} >= {"v2/capped-stream", "v2/exact-budget", "v2/mu-budget"}
    for case in cases:
        path = tmp_path / f"{case['id'].replace('/', '-')}.json"
        path.write_text(json.dumps(case["file"]))
        path.chmod(0o600)
        ledger = PrivacyLedger.load(path)
        if case["committed"] is not None:
            assert ledger.committed == pytest.approx(case["committed"], rel=1e-9)
            assert ledger.spent == pytest.approx(case["spent"], rel=1e-9)


def test_a_chains_first_report_of_a_key_costs_epsilon_one_and_the_file_keeps_it(tmp_path):
    """L-GRR over 16 values at ε₁ = 0.25, ε∞ = 1 charges ε′ = memo_report_epsilon ≈ 0.32 per report from a key's
    second report (two reports of one memo can cost more than 2ε₁); its first report is one report: ε₁. The
    file records ``epsilon_first`` and reads it back; a malformed one is refused as corrupt."""
    import json

    from ldp.errors import StateError
    from ldp.specs.longitudinal import LGRR

    spec = LGRR(domain=list(range(16)), epsilon=0.25, epsilon_inf=1.0)
    assert spec.memo_report_epsilon > 0.3
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.load_or_create(path, Budget(epsilon=10.0))
    assert ledger.charge(spec, 0) == pytest.approx(0.25)  # was ε′ ≈ 0.32
    assert ledger.committed == pytest.approx(0.25)
    assert ledger.charge(spec, 0) == pytest.approx(2 * spec.memo_report_epsilon)
    ledger.charge(spec, 1)
    again = PrivacyLedger.load_or_create(path)
    assert again.spent == pytest.approx(2 * spec.memo_report_epsilon + 0.25)
    data = json.loads(path.read_text())
    (stream,) = [s for s in data["streams"].values() if s["reports"] == 1]
    assert stream["epsilon_first"] == 0.25 and stream["epsilon"] == spec.memo_report_epsilon
    for bad in ("x", -1.0, 1.0):  # not a number, negative, above the per-report charge
        for s in data["streams"].values():
            s["epsilon_first"] = bad
        path.write_text(json.dumps(data))
        with pytest.raises(StateError, match="corrupt"):
            _ = PrivacyLedger.load_or_create(path).spent
