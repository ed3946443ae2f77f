"""Lifetime bounds stated in advance, and how many reports fit a budget (docs/accounting.md#lifetime).

A client that reports τ times under one spec spends, by the ledger's
accounting (:mod:`ldp.privacy.spending`):

- fresh randomness per report: τ·ε (or the exact composition of τ reports
  under an ``"exact"`` budget);
- a memoized spec: Σ over memo keys of c(r_v), the cost of r_v reports of
  key v (:func:`~ldp.privacy.spending.memo_key_cost`: min(r·ε₁, ε∞) when the
  mechanism proves it, else ε₁ for one report and ε∞ from the second). How
  the τ reports spread over the keys depends on the values; a client whose
  value changes c times uses at most c + 1 keys (at most the spec's
  ``memo_domain_size``), and the worst spread over that many keys is the
  bound (:func:`~ldp.privacy.spending.worst_case_memoized_cost`). For the
  L- chains (linear) it is at most min(τ·ε₁, (c + 1)·ε∞).

The ledger cannot know c without its refusals depending on the values, so
it enforces the bound with no limit on changes (``committed``); the bound
given c is what a user whose value changed at most c times actually spent.
Both are stated here before anything is sent: :func:`lifetime_epsilon` and
:func:`plan_reports`.
"""

from __future__ import annotations

import dataclasses
import math

from ldp.errors import AccountingError
from ldp.privacy.spending import (
    Budget,
    Stream,
    committed_epsilon,
    first_report_epsilon,
    fits_budget,
    memo_is_linear,
    report_loss,
    stream_parameters,
    worst_case_memoized_cost,
)

__all__ = ["ReportPlan", "lifetime_epsilon", "memo_keys_used", "plan_reports"]

#: Most reports :func:`plan_reports` looks at (beyond it the exact curves cost too much to compute).
MAX_PLANNED_REPORTS = 10**6


def _check_count(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise AccountingError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def memo_keys_used(spec, collections: int, changes: int | None = None) -> int | None:
    """How many distinct memo keys ``collections`` reports of a memoized spec can use: min(τ, c + 1, d).

    ``changes`` None: no limit on changes (the value can be new at every
    report). None when unbounded (a Bloom-filter domain with no limit on
    changes).

    Examples
    --------
    >>> import ldp
    >>> spec = ldp.Rappor.basic(("a", "b", "c"), f="1/2", p="1/4", q="3/4")
    >>> memo_keys_used(spec, 365), memo_keys_used(spec, 365, changes=1), memo_keys_used(spec, 2)
    (3, 2, 2)
    """
    collections = _check_count(collections, "collections", 0)
    _eps, _cap, memoized, domain = stream_parameters(spec)
    if not memoized:
        raise AccountingError(f"{spec.mechanism} is not memoized: it has no memo keys")
    limits = [collections]
    if changes is not None:
        limits.append(_check_count(changes, "changes", 0) + 1)
    if domain is not None:
        limits.append(domain)
    return min(limits)


def lifetime_epsilon(spec, collections: int, changes: int | None = None) -> float:
    """Pure ε of ``collections`` reports of ``spec`` by one client whose value changes at most ``changes`` times.

    Fresh randomness: τ·ε. Memoized: the largest Σ_v c(r_v) over spreads of
    the τ reports over :func:`memo_keys_used` keys (docs/accounting.md#lifetime
    proves it). ``changes`` None: any number of changes, the bound the ledger
    enforces (its ``committed`` after τ reports under a ``"basic"`` budget).

    Examples
    --------
    >>> import ldp
    >>> spec = ldp.Rappor.basic(("a", "b", "c"), f="1/2", p="1/4", q="3/4")
    >>> round(spec.epsilon_one, 4), round(spec.epsilon_inf, 4)
    (1.0217, 2.1972)
    >>> round(lifetime_epsilon(spec, 365), 4)  # 3 memo keys: 3·ε∞
    6.5917
    >>> round(lifetime_epsilon(spec, 365, changes=0), 4)  # one value for life: ε∞
    2.1972
    >>> round(lifetime_epsilon(spec, 1, changes=0), 4)  # one report: ε₁
    1.0217
    >>> lifetime_epsilon(ldp.GRR(domain=("a", "b"), epsilon=0.5), 10)
    5.0
    """
    collections = _check_count(collections, "collections", 0)
    epsilon, cap, memoized, _domain = stream_parameters(spec)
    if not memoized:
        return collections * epsilon
    keys = memo_keys_used(spec, collections, changes)
    return worst_case_memoized_cost(
        collections, epsilon, cap, keys, linear=memo_is_linear(spec), first=first_report_epsilon(spec)
    )


@dataclasses.dataclass(frozen=True)
class ReportPlan:
    """How many reports of one spec fit a budget (:func:`plan_reports`).

    Attributes
    ----------
    reports : int or None
        The most reports the ledger sends before it refuses one, whatever the
        values (None: any number; a memoized spec whose worst case over all its
        memo keys fits the budget).
    days : int or None
        ``reports`` // reports per day (None: forever).
    committed : float
        The committed ε (μ for a GDP budget) after ``reports`` reports (when
        unlimited: the most it ever reaches).
    changes : int or None
        The number of value changes the following fields assume (None: any).
    reports_with_changes, days_with_changes : int or None
        The same for a client whose value changes at most ``changes`` times:
        how long the budget holds for such a client. The ledger itself does not
        know ``changes`` (its refusals never depend on the values), so it
        refuses after ``reports``.
    """

    reports: int | None
    days: int | None
    committed: float
    changes: int | None = None
    reports_with_changes: int | None = None
    days_with_changes: int | None = None


def _committed_after(spec, budget: Budget, reports: int, keys: int | None) -> float:
    """The committed total of ``reports`` reports of ``spec`` alone, at most ``keys`` memo keys (memoized)."""
    epsilon, cap, memoized, _domain = stream_parameters(spec)
    if reports == 0:
        return 0.0
    stream = Stream(
        spec=spec.fingerprint,
        epsilon=epsilon,
        epsilon_cap=cap,
        reports=reports,
        memoized=memoized,
        values=keys if memoized else None,
        linear=memo_is_linear(spec) if memoized else True,
        loss=report_loss(spec) if (budget.composes_curves and not memoized) else None,
        epsilon_first=first_report_epsilon(spec),
    )
    return committed_epsilon({"plan": stream}, budget)


def _most_reports(spec, budget: Budget, keys: int | None, limit: int) -> tuple[int | None, float]:
    """(largest τ ≤ ``limit`` whose committed fits, that committed); (None, ceiling) when every τ fits."""
    epsilon, cap, memoized, _domain = stream_parameters(spec)
    if memoized and keys is not None and cap is not None:
        # from keys·max(2, ⌈ε∞/ε₁⌉) reports on, the worst spread caps every key: the total stops growing
        saturated = keys * max(2, math.ceil(cap / epsilon) if epsilon > 0 else 2)
        ceiling = _committed_after(spec, budget, saturated, keys)
        if fits_budget(ceiling, budget):
            return None, ceiling
        limit = min(limit, saturated)
    low, high = 0, 1  # committed(low) fits; look for a high that does not
    while high <= limit and fits_budget(_committed_after(spec, budget, high, keys), budget):
        low, high = high, high * 2
    if high > limit:
        if fits_budget(_committed_after(spec, budget, limit, keys), budget):
            raise AccountingError(
                f"more than {limit} reports of {spec.mechanism} fit this budget; "
                "the planner looks no further (the exact curves cost too much beyond)"
            )
        high = limit
    while high - low > 1:  # committed grows with the number of reports: bisect
        middle = (low + high) // 2
        if fits_budget(_committed_after(spec, budget, middle, keys), budget):
            low = middle
        else:
            high = middle
    return low, _committed_after(spec, budget, low, keys)


def plan_reports(
    spec, budget: Budget, *, per_day: int = 1, changes: int | None = None, limit: int = MAX_PLANNED_REPORTS
) -> ReportPlan:
    """How many reports of ``spec`` fit ``budget``, and for how many days at ``per_day`` reports a day.

    The ledger's decision is reproduced exactly: the largest τ whose
    committed total (value-independent) fits. With ``changes``, also how
    many reports a client whose value changes at most that many times can
    send before its lifetime bound (:func:`lifetime_epsilon`, composed by the
    budget's rule) exceeds the budget.

    Raises
    ------
    AccountingError
        If more than ``limit`` reports fit (the planner looks no further), or
        the spec cannot be accounted for.

    Examples
    --------
    >>> import ldp
    >>> from ldp.privacy import Budget
    >>> oue = ldp.OUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    >>> plan_reports(oue, Budget(20.0, 1e-6, "optimal")).reports  # each report as 1-randomized response
    20
    >>> plan_reports(oue, Budget(20.0, 1e-6, "exact")).reports  # OUE's own curve
    25
    >>> boolean = ldp.Rappor.boolean(f="1/2", p="1/4", q="3/4")
    >>> plan = plan_reports(boolean, Budget(epsilon=5.0), per_day=4)
    >>> plan.reports, plan.days, round(plan.committed, 4)  # 2·ε∞ fits: any number of reports
    (None, None, 2.1972)
    >>> basic = ldp.Rappor.basic(tuple("abcdefgh"), f="1/2", p="1/4", q="3/4")
    >>> plan = plan_reports(basic, Budget(epsilon=5.0), changes=1)
    >>> plan.reports, plan.reports_with_changes  # 4 reports for any values; forever with one change
    (4, None)
    """
    per_day = _check_count(per_day, "per_day", 1)
    _eps, _cap, memoized, _domain = stream_parameters(spec)
    any_keys = memo_keys_used(spec, limit) if memoized else None
    reports, committed = _most_reports(spec, budget, any_keys, limit)
    plan = ReportPlan(
        reports=reports, days=None if reports is None else reports // per_day, committed=committed
    )
    if changes is None:
        return plan
    _check_count(changes, "changes", 0)
    keys = memo_keys_used(spec, limit, changes) if memoized else None
    given, _ = _most_reports(spec, budget, keys, limit)
    return dataclasses.replace(
        plan,
        changes=changes,
        reports_with_changes=given,
        days_with_changes=None if given is None else given // per_day,
    )
