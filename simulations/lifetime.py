"""Lifetime ε of every user of a panel, by the ledger's accounting (docs/longitudinal/simulate.md#lifetime-epsilon).

The rule is the ledger's (:mod:`ldp.privacy.spending`, basic composition),
read from the spec through :func:`~ldp.privacy.spending.stream_parameters`:

- a spec with fresh randomness per report spends its ε per report: r·ε
  after r reports;
- a memoizing spec (``memoized``) spends, for each memo key the user has
  reported r_k times, c(r_k) summed over its keys
  (:func:`~ldp.privacy.spending.memo_key_cost`): min(r_k·ε₁, ε∞) for a spec
  proved ``memo_linear``, else ε₁ for one report and ε∞ from the second.

The memo key of a report is the spec's ``memo_key(value)`` when the spec
has one (the key is a function of the value: L- chains, RAPPOR, ...): the
accounting is then *exact*. When the key also depends on the client (its
hash seed or bucket pattern: the spec has no ``memo_key``, its encoder
has), every distinct value is counted as its own key and the total is
capped at ``memo_domain_size``·ε∞: an *upper bound* for a linear spec,
because merging values into one key never raises the sum (min(a + b, ε∞) ≤
min(a, ε∞) + min(b, ε∞)) and no client has more than ``memo_domain_size``
keys. Without ``memo_linear`` merging can raise it (two values reported once
each cost 2ε₁ as two keys, ε∞ as one), so the bound is the largest cost of
any grouping of the user's values onto at most ``memo_domain_size`` keys.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ldp.privacy.spending import first_report_epsilon, memo_is_linear, stream_parameters

__all__ = [
    "EXACT",
    "FRESH",
    "UPPER_BOUND",
    "Accounting",
    "accounting_of",
    "lifetime_epsilon",
    "memo_key_ids",
    "memo_key_of_value",
    "report_ranks",
    "worst_grouping",
]

#: How the lifetime ε of a spec is computed (the ``lifetime_rule`` column).
FRESH = "fresh"
EXACT = "memo keys"
UPPER_BOUND = "per-value bound"


@dataclasses.dataclass(frozen=True)
class Accounting:
    """What the ledger reads from a spec: ε per report, the per-key cap, and how keys are known.

    Attributes
    ----------
    epsilon : float
        ε of one report (ε₁ of a memoizing spec).
    epsilon_inf : float or None
        The most any number of reports of one memo key cost (None: no cap,
        or a fresh spec).
    memoized : bool
    memo_domain_size : int or None
        How many memo keys a client can have (None: unbounded).
    rule : str
        :data:`FRESH`, :data:`EXACT` (keys from ``spec.memo_key``) or
        :data:`UPPER_BOUND` (client-dependent keys: one per value, capped).
    linear : bool
        r reports of one memo key cost min(r·ε′, ε∞) (the spec's
        ``memo_linear``, ε′ = ``epsilon``); False: ε₁ for one report, ε∞
        from the second, as the ledger charges
        (:func:`~ldp.privacy.spending.memo_key_cost`).
    first : float or None
        ε₁ of a key's first report when below ``epsilon`` (a chain whose
        per-report charge ε′ exceeds ε₁:
        :func:`~ldp.privacy.spending.first_report_epsilon`); None: ``epsilon``.
    """

    epsilon: float
    epsilon_inf: float | None
    memoized: bool
    memo_domain_size: int | None
    rule: str
    linear: bool = True
    first: float | None = None


def accounting_of(spec: Any) -> Accounting:
    """The :class:`Accounting` of ``spec`` (from :func:`~ldp.privacy.spending.stream_parameters`)."""
    epsilon, cap, memoized, values = stream_parameters(spec)
    if not memoized:
        return Accounting(epsilon, None, False, None, FRESH)
    rule = EXACT if callable(getattr(spec, "memo_key", None)) else UPPER_BOUND
    return Accounting(epsilon, cap, True, values, rule, memo_is_linear(spec), first_report_epsilon(spec))


def memo_key_of_value(spec: Any, domain: tuple) -> np.ndarray:
    """Memo key id of each domain value: values whose ``spec.memo_key`` bytes agree share an id.

    Without ``spec.memo_key`` (client-dependent keys, or a fresh spec) each
    value is its own key (the upper-bound rule).
    """
    memo_key = getattr(spec, "memo_key", None)
    if not getattr(spec, "memoized", False) or not callable(memo_key):
        return np.arange(len(domain), dtype=np.int64)
    ids: dict[bytes, int] = {}
    return np.array([ids.setdefault(memo_key(v), len(ids)) for v in domain], dtype=np.int64)


def memo_key_ids(spec: Any, domain: tuple, values: np.ndarray) -> np.ndarray:
    """Memo key id of every (round, user) of a panel's ``values`` (−1 stays −1; :func:`memo_key_of_value`)."""
    values = np.asarray(values)
    of_value = memo_key_of_value(spec, domain)
    return np.where(values >= 0, of_value[np.clip(values, 0, None)], -1).astype(np.int64)


def report_ranks(keys: np.ndarray) -> np.ndarray:
    """r of each report: 1 for a user's first report of a memo key, 2 for its second, ...; 0 where no report.

    Parameters
    ----------
    keys : numpy.ndarray of int, shape (T, n)
        Memo key id of user u's report in round t; −1: no report.
    """
    keys = np.asarray(keys, dtype=np.int64)
    rounds, users = keys.shape
    flat = keys.ravel()  # round-major: within a (user, key) group, reports come in round order
    where = np.flatnonzero(flat >= 0)
    width = int(flat.max()) + 1 if where.size else 1
    code = (where % users) * width + flat[where]
    order = np.argsort(code, kind="stable")
    ordered = code[order]
    position = np.arange(ordered.size)
    first = np.ones(ordered.size, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    ranks = np.zeros(rounds * users, dtype=np.int32)
    ranks[where[order]] = position - np.maximum.accumulate(np.where(first, position, 0)) + 1
    return ranks.reshape(rounds, users)


def lifetime_epsilon(
    keys: np.ndarray, accounting: Accounting, *, ranks: np.ndarray | None = None
) -> np.ndarray:
    """Lifetime ε of each user after each round: array (T, n) of the ledger's spent ε (basic composition).

    Parameters
    ----------
    keys : numpy.ndarray of int, shape (T, n)
        Memo key id of user u's report in round t (any ids for a fresh
        spec); −1: no report.
    accounting : Accounting
    ranks : numpy.ndarray, optional
        :func:`report_ranks` of ``keys``, when already computed.

    Returns
    -------
    numpy.ndarray of float, shape (T, n)
        Σ over the user's keys of c(r_k) over its reports up to round t
        (r·ε for a fresh spec; under the upper-bound rule capped at
        ``memo_domain_size``·ε∞, or for a spec without ``memo_linear`` the
        worst spread of its reports over its possible keys).

    Examples
    --------
    >>> import numpy as np
    >>> rule = Accounting(1.0, 2.5, True, None, EXACT)
    >>> lifetime_epsilon(np.array([[0], [0], [0], [1]]), rule)[:, 0].tolist()  # min(3·1, 2.5) + 1
    [1.0, 2.0, 2.5, 3.5]
    """
    keys = np.asarray(keys, dtype=np.int64)
    eps = accounting.epsilon
    if not accounting.memoized:
        return np.cumsum(keys >= 0, axis=0) * eps
    r = (report_ranks(keys) if ranks is None else ranks).astype(np.float64)
    cap = math.inf if accounting.epsilon_inf is None else accounting.epsilon_inf
    if not accounting.linear:
        if accounting.rule == UPPER_BOUND:
            return _worst_grouping(r, eps, cap, accounting.memo_domain_size)
        # the ledger's c(r): ε₁ for a key's first report, ε∞ − ε₁ more at its second, nothing after
        increment = np.where(r == 1, eps, np.where(r == 2, cap - eps, 0.0))
        return np.cumsum(increment, axis=0)
    increment = np.where(r > 0, np.minimum(r * eps, cap) - np.minimum((r - 1) * eps, cap), 0.0)
    if accounting.first is not None and accounting.rule == EXACT:
        # the ledger's c(1) = ε₁ < ε′, c(r) = min(r·ε′, ε∞) from r = 2 (under the upper-bound rule the
        # per-value sum keeps ε′ for first reports: with c(1) = ε₁ merging two values could raise it)
        first = min(accounting.first, cap)
        increment = np.where(r == 1, first, np.where(r == 2, np.minimum(2 * eps, cap) - first, increment))
    spent = np.cumsum(increment, axis=0)
    if accounting.rule == UPPER_BOUND and accounting.memo_domain_size is not None and math.isfinite(cap):
        spent = np.minimum(spent, accounting.memo_domain_size * cap)
    return spent


def _worst_grouping(ranks: np.ndarray, epsilon: float, cap: float, keys: int | None) -> np.ndarray:
    """(T, n): the most a user's reports can cost when its values fall on at most ``keys`` memo keys, c not linear.

    ``ranks`` are per-value (:func:`report_ranks` of value ids): V (distinct
    values) and V₂ (values reported at least twice) after each round are
    the running counts of ranks 1 and 2 (:func:`worst_grouping`).
    """
    distinct = np.cumsum(ranks == 1, axis=0)
    repeated = np.cumsum(ranks == 2, axis=0)
    return worst_grouping(distinct, repeated, epsilon, cap, keys)


def worst_grouping(
    distinct: np.ndarray, repeated: np.ndarray, epsilon: float, cap: float, keys: int | None
) -> np.ndarray:
    """The most a user's reports cost, c not linear, when its values can fall on any of at most ``keys`` keys.

    A key costs ε₁ when it holds one value reported once, ε∞ otherwise. With
    V = ``distinct`` values, V₂ = ``repeated`` of them reported at least
    twice and V₁ = V − V₂ once, the worst grouping puts each of the V₂ on its
    own key and makes m more keys of the V₁ (m ≤ M = min(V, keys) − V₂),
    p = min(m, V₁ − m) of them holding two or more values: the cost
    (V₂ + p)·ε∞ + (m − p)·ε₁ rises with m up to ⌊V₁/2⌋, then moves by
    2ε₁ − ε∞ per key, so its largest value is at m = ⌊V₁/2⌋, ⌈V₁/2⌉ or M.
    With M ≤ 0 every one of the min(V, keys) keys can hold a repeated value.

    Examples
    --------
    >>> import numpy as np
    >>> worst_grouping(np.array([3, 3]), np.array([0, 1]), 0.5, 2.0, 2).tolist()  # 2 keys: {a, b}, {c}
    [2.5, 4.0]
    """
    distinct = np.asarray(distinct, dtype=np.int64)
    repeated = np.asarray(repeated, dtype=np.int64)
    once = distinct - repeated
    groups = distinct if keys is None else np.minimum(distinct, keys)
    most = groups - repeated

    def capped(count: np.ndarray) -> np.ndarray:  # count·ε∞, 0 for no key (also when ε∞ is inf)
        return np.where(count > 0, np.maximum(count, 1) * cap, 0.0)

    best = np.where(most <= 0, capped(groups), 0.0)
    for m in (once // 2, (once + 1) // 2, most):
        m = np.clip(m, 0, np.maximum(most, 0))
        p = np.minimum(m, once - m)
        best = np.maximum(best, np.where(most > 0, capped(repeated + p) + (m - p) * epsilon, 0.0))
    return best
