"""Pure math of two-round chained randomized response (docs/longitudinal/chains.md).

A longitudinal chain reports a value through two randomizers in sequence.
Round 1 is *memoized*: its output is drawn once per value and reused in every
later report of that value. Round 2 is *fresh*: it randomizes the memoized
output again for every report. Each round is described by two probabilities
of "supporting" a value v (the round's output names v, or sets v's bit):

- round 1: p₁ = P[memo supports v | x = v], q₁ = P[memo supports v | x ≠ v];
- round 2: p₂ = P[report supports v | memo supports v],
  q₂ = P[report supports v | memo does not support v].

One report then supports v with probability

    A = P[support v | x = v] = p₁p₂ + (1 − p₁)q₂,
    B = P[support v | x ≠ v] = q₁p₂ + (1 − q₁)q₂ = q₁(p₂ − q₂) + q₂,

so A − B = (p₁ − q₁)(p₂ − q₂), the estimator f̂_v = (C_v/n − B)/(A − B) is
unbiased and its variance follows from the binomial count C_v. Everything
here is a pure function of (p₁, q₁, p₂, q₂), exact on
:class:`~fractions.Fraction` inputs and elementwise on floats, so any chain
(GRR over a domain or over hash buckets, unary encodings) uses it.

References
----------
.. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao. "Improving the
   utility of locally differentially private protocols for longitudinal and
   multidimensional frequency estimates". Digital Communications and
   Networks, 2022 (arXiv:2111.04636).
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response". ACM CCS 2014 (the memoized PRR and
   fresh IRR).
.. [3] T. Wang, J. Blocki, N. Li, S. Jha. "Locally differentially private
   protocols for frequency estimation". USENIX Security 2017 (pure oracles).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

from ldp.exact import DENOMINATOR

__all__ = [
    "chain_estimate",
    "chain_support",
    "chain_variance",
    "chain_variance_iid",
    "grid_probability",
    "memo_epsilon_bound",
    "rr_chain_ratio",
    "rr_memo_log_ratio",
    "rr_ratio",
    "smallest_linear_epsilon",
    "ue_chain_ratio",
    "ue_ratio",
]

_N = TypeVar("_N", Fraction, float)


def chain_support(p1: _N, q1: _N, p2: _N, q2: _N) -> tuple[_N, _N]:
    """(A, B): the probabilities that one report supports v when x = v and when x ≠ v.

    A = p₁p₂ + (1 − p₁)q₂ and B = q₁p₂ + (1 − q₁)q₂; exact on fractions.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> chain_support(F(1, 2), F(1, 4), F(3, 4), F(1, 4))
    (Fraction(1, 2), Fraction(3, 8))
    """
    return p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2


def chain_estimate(support_counts: Any, n: int, p1: float, q1: float, p2: float, q2: float) -> np.ndarray:
    """f̂_v = (C_v/n − B)/(A − B) with A − B = (p₁ − q₁)(p₂ − q₂), elementwise (unbiased).

    Parameters
    ----------
    support_counts : array_like
        C_v, the reports supporting each value.
    n : int
        Number of reports.
    p1, q1, p2, q2 : float
        The two rounds' support probabilities.
    """
    _, b = chain_support(float(p1), float(q1), float(p2), float(q2))
    gap = (float(p1) - float(q1)) * (float(p2) - float(q2))
    return (np.asarray(support_counts, dtype=float) / n - b) / gap


def chain_variance(frequency: Any, n: int, p1: float, q1: float, p2: float, q2: float) -> Any:
    """Fixed-data Var[f̂_v]: [f·A(1 − A) + (1 − f)·B(1 − B)] / (n (p₁ − q₁)²(p₂ − q₂)²), elementwise.

    The randomness is the mechanism's only (n·f users hold v exactly), the
    convention of every frequency oracle of this package: C_v is then the
    sum of two independent binomials, Bin(nf, A) + Bin(n(1 − f), B).
    """
    a, b = chain_support(float(p1), float(q1), float(p2), float(q2))
    f = np.asarray(frequency, dtype=float)
    gap = (float(p1) - float(q1)) * (float(p2) - float(q2))
    return (f * a * (1 - a) + (1 - f) * b * (1 - b)) / (n * gap**2)


def chain_variance_iid(frequency: Any, n: int, p1: float, q1: float, p2: float, q2: float) -> Any:
    """i.i.d.-population Var[f̂_v] = s(1 − s)/(n (p₁ − q₁)²(p₂ − q₂)²), s = B + f(A − B), elementwise.

    Each user's value is drawn independently with P[x = v] = f, so every
    report supports v independently with probability s and C_v ~ Bin(n, s).
    It exceeds :func:`chain_variance` by exactly f(1 − f)/n, the sampling
    variance of the population itself, and is never negative.
    """
    a, b = chain_support(float(p1), float(q1), float(p2), float(q2))
    f = np.asarray(frequency, dtype=float)
    s = b + f * (a - b)
    gap = (float(p1) - float(q1)) * (float(p2) - float(q2))
    return s * (1 - s) / (n * gap**2)


def rr_ratio(keep: Fraction, other: Fraction) -> Fraction:
    """Worst-case ratio of randomized response over a domain: keep/other (output x against x′)."""
    return keep / other


def ue_ratio(one: Fraction, zero: Fraction) -> Fraction:
    """Worst-case ratio of independent bits over a one-hot vector: one(1 − zero)/((1 − one)·zero).

    Two inputs differ in two bits; the worst output sets x's bit and clears x′'s.
    """
    return one * (1 - zero) / ((1 - one) * zero)


def rr_chain_ratio(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> Fraction:
    """A/B: one report of a chain of two randomized responses is randomized response with (A, B)."""
    return rr_ratio(*chain_support(p1, q1, p2, q2))


def rr_memo_log_ratio(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction, k: int, reports: int) -> float:
    """max over outputs of ln P[y | x]/P[y | x′] for r reports of a GRR chain over k outputs sharing one memo.

    Round 1 keeps x w.p. p₁ (each other output q₁), round 2 keeps the memo
    w.p. p₂ (each other q₂). With ρ = p₂/q₂ and n_u the reports naming u,
    P[y | x] ∝ p₁ρ^{n_x} + q₁ρ^{n_x′} + q₁S with S = Σ_{u ≠ x, x′} ρ^{n_u}; the
    ratio falls as S grows, and for m reports on the k − 2 others S is least
    when they are spread evenly (ρ^n is convex), so the maximum is over
    (n_x, n_x′) only. Floating point (the caller rounds up:
    :func:`memo_epsilon_bound`).
    """
    r = int(reports)
    lp1, lq1 = math.log(p1), math.log(q1)
    log_rho = math.log(p2) - math.log(q2)
    j, l_ = np.meshgrid(np.arange(r + 1), np.arange(r + 1), indexing="ij")
    m = r - j - l_
    ok = m >= 0 if k > 2 else m == 0
    j, l_, m = j[ok], l_[ok], m[ok]
    if k > 2:  # m reports spread evenly: extra values hold base + 1, the other k − 2 − extra hold base
        base, extra = np.divmod(m, k - 2)
        with np.errstate(divide="ignore"):  # log 0 = -inf: no value holds base + 1
            log_s = np.logaddexp(np.log(extra) + (base + 1) * log_rho, np.log(k - 2 - extra) + base * log_rho)
    else:
        log_s = np.full(j.shape, -np.inf)
    top = np.logaddexp.reduce([lp1 + j * log_rho, lq1 + l_ * log_rho, lq1 + log_s])
    bottom = np.logaddexp.reduce([lq1 + j * log_rho, lp1 + l_ * log_rho, lq1 + log_s])
    return float(np.max(top - bottom))


def memo_epsilon_bound(log_ratio: float, epsilon_inf: float) -> float:
    """A floating-point worst log ratio of r ≥ 2 memoized reports raised by a relative 1e-9 and by 1e-12 (so
    rounding never makes it smaller than the true value), and never above ε∞ (the memo's own bound)."""
    return min(epsilon_inf, log_ratio * (1 + 1e-9) + 1e-12)


def smallest_linear_epsilon(
    memo_epsilon: Callable[[int], float],
    epsilon_one: float,
    epsilon_inf: float,
    fresh: Callable[[], float],
    limit: int,
) -> float:
    """The smallest ε′ ≥ ε₁ with ε(r reports of one memo) ≤ min(r·ε′, ε∞) for every r ≥ 1.

    ``memo_epsilon(r)`` is checked for every 2 ≤ r ≤ ⌈ε∞/ε₁⌉ (from there on
    r·ε₁ ≥ ε∞ caps the charge) when that is at most ``limit``; above it,
    ``fresh()`` (a bound every report satisfies whatever the memo) when
    larger than ε₁.
    """
    top = math.ceil(epsilon_inf / epsilon_one)
    if top > limit:
        return max(epsilon_one, fresh())
    worst = epsilon_one
    for r in range(2, top + 1):
        worst = max(worst, memo_epsilon(r) / r)
    return worst


def ue_chain_ratio(p1: Fraction, q1: Fraction, p2: Fraction, q2: Fraction) -> Fraction:
    """A(1 − B)/((1 − A)B): one report of a chain of two unary encodings (each bit independent)."""
    return ue_ratio(*chain_support(p1, q1, p2, q2))


def grid_probability(
    ratio: Callable[[Fraction], Fraction],
    bound: Fraction,
    low: Fraction,
    high: Fraction,
    *,
    increasing: bool,
    denominator: int = DENOMINATOR,
) -> Fraction | None:
    """The probability on the 1/denominator grid in [low, high] that gives the most utility with ratio ≤ bound.

    ``ratio(t)`` must be monotone in t: with ``increasing`` true the answer
    is the largest grid point t with ratio(t) ≤ bound, else the smallest.
    The search is an exact bisection on the integers t·denominator (64
    steps for the 2⁻⁶⁴ grid), so the returned probability's ratio is ≤
    ``bound`` exactly (calibrated toward more privacy); None when no grid
    point of [low, high] qualifies.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> grid_probability(lambda t: t / (1 - t), F(3), F(1, 2), F(1), increasing=True, denominator=8)
    Fraction(3, 4)
    """
    lo = math.ceil(low * denominator)
    hi = math.floor(high * denominator)
    if lo > hi:
        return None

    def ok(k: int) -> bool:
        return ratio(Fraction(k, denominator)) <= bound

    if increasing:  # the largest k with ok(k): ok holds on a prefix [lo, k*]
        if not ok(lo):
            return None
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if ok(mid):
                lo = mid
            else:
                hi = mid - 1
        return Fraction(lo, denominator)
    if not ok(hi):  # the smallest k with ok(k): ok holds on a suffix [k*, hi]
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return Fraction(hi, denominator)
