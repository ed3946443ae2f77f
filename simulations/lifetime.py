"""Lifetime ε of every user of a panel, by the ledger's accounting (docs/longitudinal/simulate.md#lifetime-epsilon).

The rule is the ledger's (:mod:`ldp.privacy.spending`, basic composition),
read from the spec through :func:`~ldp.privacy.spending.stream_parameters`:

- a spec with fresh randomness per report spends its ε per report: r·ε
  after r reports;
- a memoizing spec (``memoized``) spends, for each memo key the user has
  reported r_k times, min(r_k·ε₁, ε∞), summed over its keys
  (:meth:`~ldp.privacy.spending.Stream.cost`).

The memo key of a report is the spec's ``memo_key(value)`` when the spec
has one (the key is a function of the value: L- chains, RAPPOR, ...): the
accounting is then *exact*. When the key also depends on the client (its
hash seed or bucket pattern: the spec has no ``memo_key``, its encoder
has), every distinct value is counted as its own key and the total is
capped at ``memo_domain_size``·ε∞: an *upper bound*, because merging
values into one key never raises the sum (min(a + b, ε∞) ≤ min(a, ε∞) +
min(b, ε∞)) and no client has more than ``memo_domain_size`` keys.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ldp.privacy.spending import stream_parameters

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
    """

    epsilon: float
    epsilon_inf: float | None
    memoized: bool
    memo_domain_size: int | None
    rule: str


def accounting_of(spec: Any) -> Accounting:
    """The :class:`Accounting` of ``spec`` (from :func:`~ldp.privacy.spending.stream_parameters`)."""
    epsilon, cap, memoized, values = stream_parameters(spec)
    if not memoized:
        return Accounting(epsilon, None, False, None, FRESH)
    rule = EXACT if callable(getattr(spec, "memo_key", None)) else UPPER_BOUND
    return Accounting(epsilon, cap, True, values, rule)


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
        Σ over the user's keys of min(r_k·ε₁, ε∞) over its reports up to
        round t (r·ε for a fresh spec; capped at ``memo_domain_size``·ε∞
        under the upper-bound rule).

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
    increment = np.where(r > 0, np.minimum(r * eps, cap) - np.minimum((r - 1) * eps, cap), 0.0)
    spent = np.cumsum(increment, axis=0)
    if accounting.rule == UPPER_BOUND and accounting.memo_domain_size is not None and math.isfinite(cap):
        spent = np.minimum(spent, accounting.memo_domain_size * cap)
    return spent
