"""Lifetime bounds stated in advance (ldp.privacy.planning): exactly the ledger's, for τ collections and c changes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ldp
from ldp.errors import AccountingError
from ldp.privacy import Budget, PrivacyLedger, lifetime_epsilon, memo_keys_used, plan_reports
from ldp.privacy.spending import memo_key_cost


@dataclasses.dataclass(frozen=True)
class ToyMemoized:
    """A memoized spec as the ledger sees one; values are 0 .. memo_domain_size − 1 (any int when None)."""

    epsilon_one: float = 0.5
    epsilon_inf: float = 1.75
    memo_domain_size: int | None = 4
    memo_linear: bool = True
    mechanism: str = "toy-memo"
    memoized: bool = True

    @property
    def epsilon(self) -> float:
        return self.epsilon_one

    @property
    def fingerprint(self) -> str:
        return f"toy-{self.epsilon_one}-{self.epsilon_inf}-{self.memo_domain_size}-{self.memo_linear}"

    def memo_key(self, value) -> bytes:
        if (
            not isinstance(value, int)
            or value < 0
            or (self.memo_domain_size and value >= self.memo_domain_size)
        ):
            raise ldp.ParameterError(f"toy value {value!r} is out of range")
        return str(value).encode()


@dataclasses.dataclass(frozen=True)
class ToyChain(ToyMemoized):
    """A chain whose r ≥ 2 reports of one memo need ε′ = 0.7 > ε₁ per report (as L-GRR's at large ε∞/ε₁)."""

    memo_report_epsilon: float = 0.7

    @property
    def fingerprint(self) -> str:
        return "chain-" + super().fingerprint


RAPPOR_BASIC = ldp.Rappor.basic(("a", "b", "c"), f="1/2", p="1/4", q="3/4")
SPECS = [
    ToyMemoized(),  # linear, 4 keys, eps_inf / eps1 = 3.5
    ToyChain(),  # linear with ε′ = 0.7 > ε₁ = 0.5: ε₁ for a key's first report, min(r·ε′, ε∞) from r = 2
    ToyChain(memo_domain_size=None),
    ToyMemoized(memo_linear=False),  # no proof of r·eps1: eps_inf from a key's second report
    ToyMemoized(memo_domain_size=None),  # unbounded domain (Bloom-like)
    ToyMemoized(memo_domain_size=None, memo_linear=False),
]


def best_spread(reports: int, keys: int, cost) -> tuple[float, list[int]]:
    """Dynamic programming over keys: the largest Σ cost(r_v) over r_1 + … + r_keys = reports, and a spread reaching it.

    ``best[s][left]`` is the largest sum over s keys holding ``left`` reports: cost(r) plus ``best[s − 1][left − r]``
    at the best r (the largest r among equal sums). The costs are tabulated once (the ledger's cost function is the
    slow part), and the spread is read back from the choices.
    """
    table = np.array([cost(r) for r in range(reports + 1)], dtype=float)
    best = [table]
    picks: list[list[int]] = [list(range(reports + 1))]
    for _ in range(keys - 1):
        below, row, pick = best[-1], np.empty(reports + 1), []  # IEEE sums: the same floats as Python's
        for left in range(reports + 1):
            sums = table[: left + 1] + below[left::-1]  # r = 0 … left
            r = int(np.flatnonzero(sums == sums.max())[-1])
            row[left] = sums[r]
            pick.append(r)
        best.append(row)
        picks.append(pick)
    spread, left = [], reports
    for slots in range(keys, 0, -1):
        r = picks[slots - 1][left]
        spread.append(r)
        left -= r
    return float(best[keys - 1][reports]), spread


def spec_values(spec, spread: list[int]) -> list:
    """A value sequence with the given reports per memo key, in runs (len(runs) − 1 changes)."""
    if isinstance(spec, ToyMemoized):
        return [key for key, count in enumerate(spread) for _ in range(count)]
    return [spec.domain[key] for key, count in enumerate(spread) for _ in range(count)]


@pytest.mark.parametrize("collections", [1, 10, 365])
@pytest.mark.parametrize("changes", [0, 1, 2, 5, None])
@pytest.mark.parametrize("spec", [*SPECS, RAPPOR_BASIC], ids=lambda s: s.fingerprint)
def test_lifetime_bound_is_the_worst_spread_and_what_the_ledger_spends_on_it(spec, collections, changes):
    """The stated bound is the largest spent over every value sequence with at most c changes, reached by one."""
    eps1, cap = spec.epsilon_one, spec.epsilon_inf
    linear = spec.memo_linear
    per_report = getattr(spec, "memo_report_epsilon", eps1)
    keys = memo_keys_used(spec, collections, changes)
    domain = spec.memo_domain_size
    assert keys == min(
        [collections] + ([changes + 1] if changes is not None else []) + ([domain] if domain else [])
    )
    if (
        keys > 12
    ):  # unbounded domain and changes: as many keys as reports; a key reported 3+ times is a split loss
        twice_cost = min(2 * per_report, cap) if linear else cap  # c(2); keys reported 3+ times cost no more
        worst = max(
            twice * twice_cost + (collections - 2 * twice) * eps1 for twice in range(collections // 2 + 1)
        )
        if linear and collections % 2:  # with ε′ > ε₁ a key may also take three: c(3) = min(3ε′, ε∞)
            worst = max(
                worst,
                (collections - 3) // 2 * twice_cost + min(3 * per_report, cap) if collections >= 3 else 0,
            )
        expected = collections * eps1 if linear and per_report == eps1 else worst
        assert lifetime_epsilon(spec, collections, changes) == pytest.approx(expected, rel=1e-12)
        return
    bound, spread = best_spread(
        collections, keys, lambda r: memo_key_cost(r, per_report, cap, linear=linear, first=eps1)
    )
    stated = lifetime_epsilon(spec, collections, changes)
    assert stated == pytest.approx(bound, rel=1e-12)
    if (
        linear and per_report == eps1
    ):  # the closed form: min(τ·ε₁, (c + 1)·ε∞), reached at its two ends
        assert stated <= min(collections * eps1, keys * cap) * (1 + 1e-12)
        if collections <= keys:
            assert stated == pytest.approx(collections * eps1)
        if collections >= keys * -(-cap // eps1):
            assert stated == pytest.approx(keys * cap)
    # a client whose values follow the worst spread (at most c changes) spends exactly the bound
    ledger = PrivacyLedger.in_memory(Budget(epsilon=1e9))
    values = spec_values(spec, [r for r in spread if r])
    assert len(values) == collections
    for value in values:
        ledger.charge(spec, value)
    assert ledger.spent == pytest.approx(stated, rel=1e-12)
    assert ledger.committed == pytest.approx(lifetime_epsilon(spec, collections), rel=1e-12)


@pytest.mark.parametrize("collections", [1, 10, 365])
def test_lifetime_of_fresh_randomness_is_tau_epsilon(collections):
    grr = ldp.GRR(domain=("a", "b", "c"), epsilon=0.25)
    assert lifetime_epsilon(grr, collections) == collections * 0.25
    assert lifetime_epsilon(grr, collections, changes=0) == collections * 0.25  # changes do not matter
    with pytest.raises(AccountingError, match="not memoized"):
        memo_keys_used(grr, collections)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_counts_are_one_line_errors(bad):
    with pytest.raises(AccountingError, match="must be an integer"):
        lifetime_epsilon(ToyMemoized(), bad)
    with pytest.raises(AccountingError, match="must be an integer"):
        lifetime_epsilon(ToyMemoized(), 3, changes=bad)


@pytest.mark.parametrize(
    "spec", [*SPECS, RAPPOR_BASIC, ldp.OUE(domain=("a", "b", "c"), epsilon=0.7)], ids=str
)
@pytest.mark.parametrize(
    "budget", [Budget(epsilon=4.0), Budget(6.0, 1e-6, "optimal"), Budget(6.0, 1e-6, "exact")], ids=repr
)
def test_plan_is_what_the_ledger_sends(spec, budget):
    """The planner's count is exactly where a ledger refuses (for values that change at every report)."""
    plan = plan_reports(spec, budget, per_day=3)
    ledger = PrivacyLedger.in_memory(budget)
    domain = getattr(spec, "memo_domain_size", None)
    sent = 0
    while sent < 200:
        value = sent % domain if domain else sent
        if isinstance(spec, ldp.Rappor):
            value = spec.domain[sent % 3]
        elif isinstance(spec, ldp.OUE):
            value = "a"
        if not ledger.can_charge(spec, value):
            break
        ledger.charge(spec, value)
        sent += 1
    if plan.reports is None:
        assert sent == 200 and ledger.committed <= plan.committed * (1 + 1e-12)
    else:
        assert sent == plan.reports and plan.days == sent // 3
        assert ledger.committed == pytest.approx(plan.committed, rel=1e-12)


def test_plan_given_changes_for_a_memoized_spec():
    """Reports a day × days: 4 keys at eps_inf 1.75 exceed 4.0, 2 keys (one change) never do."""
    spec = ToyMemoized()
    plan = plan_reports(spec, Budget(epsilon=4.0), per_day=2, changes=1)
    assert plan.reports == 8 and plan.days == 4  # 8 reports over 4 keys cost 8 · 0.5 = 4.0
    assert plan.reports_with_changes is None and plan.days_with_changes is None  # 2 · 1.75 = 3.5 ≤ 4
    plan = plan_reports(spec, Budget(epsilon=4.0), changes=2)  # 3 keys: 3 · 1.75 = 5.25 > 4
    assert plan.reports_with_changes == 8  # spread 3, 3, 2: 1.5 + 1.5 + 1.0 = 4.0; 9 reports: 4.5
    assert lifetime_epsilon(spec, 8, changes=2) == pytest.approx(4.0)
    assert lifetime_epsilon(spec, 9, changes=2) > 4.0


def test_plan_refuses_to_look_beyond_its_limit():
    grr = ldp.GRR(domain=("a", "b"), epsilon=0.001)
    with pytest.raises(AccountingError, match="more than 100 reports"):
        plan_reports(grr, Budget(epsilon=10.0), limit=100)


def test_reports_of_one_memo_key_need_not_compose_to_r_epsilon_one():
    """Why memo_linear is opt-in: two-round GRR over 3 values, keep probability 2/5 in both rounds (exact Fractions).

    One report's worst-case ratio is 34/33; two reports of one memoized value reach a ratio above (34/33)²,
    so min(r·ε₁, ε∞) would undercharge; the ledger's default charges ε∞ from a key's second report.
    """
    import itertools
    from fractions import Fraction

    k, keep = 3, Fraction(2, 5)
    grr = [[keep if i == j else (1 - keep) / (k - 1) for j in range(k)] for i in range(k)]

    def worst_ratio(reports: int) -> Fraction:
        best = Fraction(1)
        for outputs in itertools.product(range(k), repeat=reports):
            likelihoods = []
            for value in range(k):  # P(outputs | value) = Σ_b P(b | value) Π_t P(y_t | b)
                total = Fraction(0)
                for b in range(k):
                    term = grr[value][b]
                    for y in outputs:
                        term *= grr[b][y]
                    total += term
                likelihoods.append(total)
            best = max(best, max(likelihoods) / min(likelihoods))
        return best

    one, two = worst_ratio(1), worst_ratio(2)
    assert one == Fraction(34, 33)
    assert two > one**2  # 2 reports cost more than 2·ε₁
    assert two <= grr[0][0] / grr[0][1]  # and at most ε∞ (post-processing of the permanent response)
    toy = ToyMemoized(epsilon_one=0.1, epsilon_inf=1.0, memo_linear=False)
    ledger = PrivacyLedger.in_memory(Budget(epsilon=10.0))
    ledger.charge(toy, 0)
    assert ledger.charge(toy, 0) == pytest.approx(1.0)  # ε∞, not 2·ε₁


@pytest.mark.parametrize("linear", [True, False])
@pytest.mark.parametrize(
    ("eps1", "eps", "cap"), [(0.5, 0.5, 1.75), (0.25, 0.32, 1.0), (0.1, 0.9, 1.0), (0.5, 0.7, None)]
)
def test_worst_spread_is_the_largest_over_every_spread(eps1, eps, cap, linear):
    """worst_case_memoized_cost against dynamic programming over every spread of R ≤ 40 reports on d ≤ 7 keys,
    for the ledger's per-key cost c(1) = ε₁, c(r ≥ 2) = min(r·ε′, ε∞) (or ε∞); with ε′ > ε₁ the worst spread
    can put two reports on a key rather than one (0.25, 0.32: four reports on 16 keys cost 1.28, not 1.0)."""
    from ldp.privacy.spending import worst_case_memoized_cost

    def cost(r: int) -> float:
        return memo_key_cost(r, eps, cap, linear=linear, first=eps1)

    for keys in range(1, 8):
        for reports in range(0, 41):
            expected, _ = best_spread(reports, keys, cost) if reports else (0.0, [])
            got = worst_case_memoized_cost(reports, eps, cap, keys, linear=linear, first=eps1)
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-15), (keys, reports)
    assert memo_key_cost(1, eps, cap, linear=linear, first=eps1) == eps1
