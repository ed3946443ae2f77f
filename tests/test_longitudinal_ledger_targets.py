"""Issue 26's ledger target with a real longitudinal spec: τ ∈ {1, 10, 365} reports, c changes, exactly the stated bounds.

The bounds are computed here by brute force over (keys used u, keys reported
twice or more j) from the per-key cost the ledger states
(docs/accounting.md#memoized-streams): ε for a key's first report and ε∞
from its second (L-GRR does not state ``memo_linear``), ε being the
ledger's per-report charge (``stream_parameters``). The real ledger is
charged the worst value sequence with at most c changes, through each
value's memo key. ``benchmarks/bench_longitudinal_ledger.py`` prints the
table.
"""

from __future__ import annotations

import math

import pytest

from ldp.privacy import Budget, PrivacyLedger, lifetime_epsilon
from ldp.privacy.spending import memo_is_linear, stream_parameters
from ldp.specs.longitudinal import LGRR


def _worst(tau: int, keys: int, eps: float, eps_inf: float) -> tuple[float, list[int]]:
    """Largest Σ cost over spreads of τ reports on at most ``keys`` keys (first report ε, then ε∞), and the spread."""
    best = (-1.0, [tau])
    for used in range(1, min(tau, keys) + 1):
        for twice in range(0, min(used, tau - used) + 1):
            first = (2 if twice else 1) + tau - used - twice
            spread = [first] + [2] * max(twice - 1, 0) + [1] * (used - max(twice, 1))
            cost = sum(eps if r == 1 else eps_inf for r in spread)
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
    assert memoized and keys == k and cap == eps_inf and not memo_is_linear(spec)
    bound_c, spread = _worst(tau, min(changes + 1, k), eps, cap)
    bound, _ = _worst(tau, k, eps, cap)
    ledger = PrivacyLedger.in_memory(Budget(1e9))
    for value, reports in enumerate(spread):  # len(spread) − 1 ≤ c changes
        for _ in range(reports):
            ledger.charge(spec, value, memo_key=spec.memo_key(value))
    assert math.isclose(ledger.committed, bound, rel_tol=1e-12)
    assert math.isclose(ledger.committed, lifetime_epsilon(spec, tau), rel_tol=1e-12)
    assert math.isclose(ledger.spent, bound_c, rel_tol=1e-12)
    assert math.isclose(ledger.spent, lifetime_epsilon(spec, tau, changes=changes), rel_tol=1e-12)
    if eps == eps1 and eps_inf == 2 * eps1:  # then j·ε∞ + (u − j)·ε₁ = (u + j)·ε₁: the closed form
        assert math.isclose(ledger.committed, min(tau * eps1, k * eps_inf), rel_tol=1e-12)
