"""The ledger's lifetime ε for a memoized L-GRR spec, τ ∈ {1, 10, 365} reports and c value changes, against the stated bounds.

For each spec, τ and c, a real in-memory ledger (:class:`ldp.privacy.PrivacyLedger`,
a basic ε budget far above every total) is charged τ reports of a value
sequence with at most c changes, each report under the spec's memo key of
its value (as :class:`~ldp.client.budgeted.BudgetedEncoder` charges it). The
sequence is the worst one for the bound: u distinct values, j of them
reported at least twice, the (u, j) that maximize the cost with u ≤ min(τ,
c + 1, k) and u + j ≤ τ. The script checks, exactly up to float rounding:

- ``ledger.committed`` (what the budget is enforced on, value-independent)
  equals the committed bound, the same maximum with no limit on changes,
  and :func:`ldp.privacy.planning.lifetime_epsilon` (τ);
- ``ledger.spent`` (from the memo keys actually used) equals the bound
  given c and :func:`~ldp.privacy.planning.lifetime_epsilon` (τ, c).

The bounds here are computed independently of the ledger, by brute force
over the spreads, from the per-key cost the ledger states
(docs/accounting.md#memoized-streams): ε₁ for a key's first report (one
report of the spec) and, from its second, min(r·ε′, ε∞) for a spec that
states ``memo_linear`` (the chains do), otherwise ε∞, ε′ being what the
ledger charges per report from a key's second
(:func:`~ldp.privacy.spending.stream_parameters`: the spec's
``memo_report_epsilon``, which for L-GRR is above the stated ε₁ where r
reports of one memo cost more than r·ε₁, docs/longitudinal/chains.md; the
``charged`` column). The last column is the issue's min(τ·ε₁, k·ε∞), with
the stated ε₁; the table marks where the ledger differs from it.

Usage::

    python benchmarks/bench_longitudinal_ledger.py
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from ldp.privacy import Budget, PrivacyLedger
from ldp.privacy.planning import lifetime_epsilon
from ldp.privacy.spending import memo_is_linear, memo_key_cost, stream_parameters
from ldp.specs.longitudinal import LGRR

COLLECTIONS = (1, 10, 365)
CHANGES = (0, 1, 3, 9, 364)
SPECS = (
    {"k": 2, "epsilon": 0.5, "epsilon_inf": 1.0},
    {"k": 16, "epsilon": 0.5, "epsilon_inf": 1.0},
    {"k": 16, "epsilon": 0.25, "epsilon_inf": 1.0},
    {"k": 256, "epsilon": 1.0, "epsilon_inf": 4.0},
)


def key_cost(reports: int, one: float, eps1: float, eps_inf: float, linear: bool) -> float:
    """What the ledger states r reports of one memo key cost: ``one`` (ε₁) for one, then min(r·ε′, ε∞) or ε∞."""
    if reports == 0:
        return 0.0
    if reports == 1:
        return one
    return min(reports * eps1, eps_inf) if linear else eps_inf


def worst_spread(tau: int, keys: int, one: float, eps1: float, eps_inf: float, linear: bool) -> list[int]:
    """Reports per memo key (at most ``keys`` keys, τ reports in all) with the largest total cost (brute force).

    Linear: the even spread over each number of keys used (for a fixed number of keys, each holding a report,
    the cost is concave per key). Otherwise every (used keys u, keys reported twice or more j) with u + j ≤ τ;
    the reports left over go to the first key.
    """
    best_cost, best = -1.0, [tau]
    for used in range(1, min(tau, keys) + 1):
        if linear:
            base, extra = divmod(tau, used)
            candidates = [[base + 1] * extra + [base] * (used - extra)]
        else:
            candidates = []
            for twice in range(0, min(used, tau - used) + 1):
                first = (2 if twice else 1) + tau - used - twice
                candidates.append([first] + [2] * max(twice - 1, 0) + [1] * (used - max(twice, 1)))
        for spread in candidates:
            counts: dict[int, int] = {}
            for r in spread:
                counts[r] = counts.get(r, 0) + 1
            cost = sum(m * key_cost(r, one, eps1, eps_inf, linear) for r, m in counts.items())
            if cost > best_cost + 1e-12:
                best_cost, best = cost, spread
    return best


@dataclass
class Row:
    k: int
    eps1_stated: float
    eps1: float
    eps_inf: float
    tau: int
    changes: int
    committed: float
    committed_bound: float
    planner: float
    spent: float
    spent_bound: float
    planner_c: float
    issue_formula: float

    @property
    def ok(self) -> bool:
        close = lambda a, b: math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)  # noqa: E731
        return (
            close(self.committed, self.committed_bound)
            and close(self.committed, self.planner)
            and close(self.spent, self.spent_bound)
            and close(self.spent, self.planner_c)
        )


def measure(k: int, epsilon: float, epsilon_inf: float, tau: int, changes: int) -> Row:
    spec = LGRR(domain=list(range(k)), epsilon=epsilon, epsilon_inf=epsilon_inf)
    eps1, cap, _memoized, _keys = stream_parameters(spec)
    assert cap is not None
    linear = memo_is_linear(spec)
    one = spec.epsilon_one
    spread = worst_spread(tau, min(changes + 1, k), one, eps1, cap, linear)
    ledger = PrivacyLedger.in_memory(Budget(1e9))
    for value, reports in enumerate(spread):  # u − 1 ≤ c changes
        for _ in range(reports):
            ledger.charge(spec, value, memo_key=spec.memo_key(value))
    spent_bound = sum(key_cost(r, one, eps1, cap, linear) for r in spread)
    committed_bound = sum(
        key_cost(r, one, eps1, cap, linear) for r in worst_spread(tau, k, one, eps1, cap, linear)
    )
    assert all(
        math.isclose(
            memo_key_cost(r, eps1, cap, linear=linear, first=one), key_cost(r, one, eps1, cap, linear)
        )
        for r in spread
    )
    return Row(
        k,
        spec.epsilon_one,
        eps1,
        cap,
        tau,
        changes,
        ledger.committed,
        committed_bound,
        lifetime_epsilon(spec, tau),
        ledger.spent,
        spent_bound,
        lifetime_epsilon(spec, tau, changes=changes),
        min(tau * spec.epsilon_one, k * spec.epsilon_inf),
    )


def rows() -> list[Row]:
    out = []
    for params in SPECS:
        for tau in COLLECTIONS:
            for changes in CHANGES:
                if changes < tau:
                    out.append(measure(params["k"], params["epsilon"], params["epsilon_inf"], tau, changes))
    return out


def main() -> int:
    table = rows()
    header = (
        f"{'k':>4} {'eps1':>5} {'charged':>8} {'eps_inf':>7} {'tau':>4} {'c':>4} {'committed':>9} {'bound':>9} "
        f"{'spent':>9} {'bound(c)':>9} {'min(tau*eps1,k*eps_inf)':>24} {'ok':>3}"
    )
    print(
        "L-GRR: the real ledger's lifetime epsilon after tau reports with at most c changes (worst value sequence)"
    )
    print(header)
    print("-" * len(header))
    for r in table:
        differs = "" if math.isclose(r.committed, r.issue_formula, rel_tol=1e-12) else " *"
        print(
            f"{r.k:>4} {r.eps1_stated:>5g} {r.eps1:>8.4f} {r.eps_inf:>7g} {r.tau:>4} {r.changes:>4} {r.committed:>9.4f} "
            f"{r.committed_bound:>9.4f} {r.spent:>9.4f} {r.spent_bound:>9.4f} {r.issue_formula:>24.4f}{differs} "
            f"{'yes' if r.ok else 'NO':>3}"
        )
    failures = [r for r in table if not r.ok]
    print("-" * len(header))
    print(
        f"{len(table) - len(failures)}/{len(table)} rows: committed = the committed bound = lifetime_epsilon(tau), "
        "spent = the bound given c = lifetime_epsilon(tau, c)"
    )
    print(
        "* committed differs from min(tau*eps1, k*eps_inf): 'charged' (the spec's memo_report_epsilon) is "
        "above eps1 where r reports of one memo cost more than r*eps1, or tau reports do not spread evenly "
        "over the k keys"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
