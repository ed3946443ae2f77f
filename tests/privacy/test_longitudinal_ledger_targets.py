"""Issue 26's ledger target with a real longitudinal spec: τ ∈ {1, 10, 365} reports, c changes, exactly the stated bounds.

The bounds are computed here by brute force over the spreads of τ reports
on the memo keys, from the per-key cost the ledger states
(docs/accounting.md#memoized-streams): ε₁ for a key's first report (it is
one report of the spec) and, from its second, min(r·ε′, ε∞) when the spec
states ``memo_linear`` (the chains do, with ε′ ≥ ε₁ their per-report charge
``memo_report_epsilon``), else ε∞. The real ledger is charged the worst value sequence with at most
c changes, through each value's memo key.
``benchmarks/bench_longitudinal_ledger.py`` prints the table.
"""

from __future__ import annotations

import math

import pytest

from ldp.privacy import Budget, PrivacyLedger, lifetime_epsilon
from ldp.privacy.spending import memo_is_linear, stream_parameters
from ldp.specs.longitudinal import LGRR


def _cost(reports: int, eps1: float, eps: float, eps_inf: float, linear: bool) -> float:
    if reports == 0:
        return 0.0
    if reports == 1:
        return eps1
    return min(reports * eps, eps_inf) if linear else eps_inf


def _worst(
    tau: int, keys: int, eps1: float, eps: float, eps_inf: float, linear: bool
) -> tuple[float, list[int]]:
    """Largest Σ cost over spreads of τ reports on at most ``keys`` keys, and the spread.

    Linear: every number of keys used, the reports spread evenly (for a fixed number of keys each holding
    at least one report the cost is concave per key: increments ε₁, then ≥ ε′, then ≤ ε′). Otherwise every
    (keys used u, keys reported twice or more j) with u + j ≤ τ, the reports left over on the first key.
    """
    best = (-1.0, [tau])
    for used in range(1, min(tau, keys) + 1):
        if linear:
            base, extra = divmod(tau, used)
            spreads = [[base + 1] * extra + [base] * (used - extra)]
        else:
            spreads = []
            for twice in range(0, min(used, tau - used) + 1):
                first = (2 if twice else 1) + tau - used - twice
                spreads.append([first] + [2] * max(twice - 1, 0) + [1] * (used - max(twice, 1)))
        for spread in spreads:
            cost = sum(_cost(r, eps1, eps, eps_inf, linear) for r in spread)
            if cost > best[0] + 1e-12:
                best = (cost, spread)
    return best


@pytest.mark.parametrize(
    "k, eps1, eps_inf",
    [(2, 0.5, 1.0), (16, 0.5, 1.0), pytest.param(16, 0.75, 1.0, marks=pytest.mark.slow), (16, 0.25, 1.0)],
)
@pytest.mark.parametrize("tau", [1, 10, pytest.param(365, marks=pytest.mark.slow)])
@pytest.mark.parametrize("changes", [0, 1, 9])
def test_ledger_charges_exactly_the_stated_lifetime_bounds(k, eps1, eps_inf, tau, changes):
    if changes >= tau:
        pytest.skip("at most τ − 1 changes")
    spec = LGRR(domain=list(range(k)), epsilon=eps1, epsilon_inf=eps_inf)
    eps, cap, memoized, keys = stream_parameters(spec)
    assert memoized and keys == k and cap == eps_inf and eps >= eps1
    linear = memo_is_linear(spec)
    bound_c, spread = _worst(tau, min(changes + 1, k), eps1, eps, cap, linear)
    bound, _ = _worst(tau, k, eps1, eps, cap, linear)
    ledger = PrivacyLedger.in_memory(Budget(1e9))
    for value, reports in enumerate(spread):  # len(spread) − 1 ≤ c changes
        for _ in range(reports):
            ledger.charge(spec, value, memo_key=spec.memo_key(value))
    assert math.isclose(ledger.committed, bound, rel_tol=1e-12)
    assert math.isclose(ledger.committed, lifetime_epsilon(spec, tau), rel_tol=1e-12)
    assert math.isclose(ledger.spent, bound_c, rel_tol=1e-12)
    assert math.isclose(ledger.spent, lifetime_epsilon(spec, tau, changes=changes), rel_tol=1e-12)
    if linear and (tau <= k or tau % k == 0) and eps == eps1:  # even spreads: the min(τ·ε₁, k·ε∞)
        assert math.isclose(ledger.committed, min(tau * eps1, k * eps_inf), rel_tol=1e-12)
    if tau == 1:  # one report costs ε₁ whatever the per-report charge ε′ of r ≥ 2 reports
        assert ledger.committed == ledger.spent == eps1
