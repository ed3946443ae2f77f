"""Privacy amplification by shuffling (docs/accounting.md#shuffle).

When the collector strips every identifier and shuffles the reports of a
window, n reports of an ε₀-LDP randomizer are (ε, δ)-DP in the central model
for an ε far below ε₀. The bounds here follow the "clones" reduction of
Feldman, McMillan and Talwar [1]_:

* every ε₀-DP randomizer's outputs on the two neighbouring inputs x₀, x₁ of
  user 1 split as R(x₀) = α M₀ + (1 − α) M₁, R(x₁) = (1 − α) M₀ + α M₁ with
  α = e^ε₀ / (e^ε₀ + 1), and every other user's output contains
  (β/2) M₀ + (β/2) M₁ for a *clone probability* β (β = e^−ε₀ for any
  randomizer);
* the shuffled reports are then a post-processing of the pair of
  distributions P, Q of (number of M₀ draws, number of M₁ draws): with
  C ~ Bin(n − 1, β) clones and A ~ Bin(C, ½), P puts user 1 on the M₀ side
  with probability α and Q with probability 1 − α;
* δ(ε) of (P, Q) is computed here exactly: given C = c the two coordinates
  add up to c + 1, so C is observed, and the likelihood ratio is monotone in
  the first coordinate, so Σ (p − e^ε q)₊ is one binomial tail per c.

:func:`numerical_epsilon` is the smallest ε with that δ(ε) ≤ δ (the
numerical bound of [1]_, Appendix E, computed over the whole mixture instead
of intervals of c); :func:`closed_form_epsilon` is their closed form, valid
when ε₀ ≤ ln(n / (16 ln(4/δ))). Randomized response over k values has a
larger clone probability: each other user reports x₀ and x₁ with
probability q each, so β = 2q = 2/(e^ε₀ + k − 1), and user 1's report is
identical under x₀ and x₁ with probability (k − 2) q, which scales δ by
w = (e^ε₀ + 1)/(e^ε₀ + k − 1) (joint convexity); the idea of exploiting the
randomizer's structure is [2]_'s.

References
----------
.. [1] V. Feldman, A. McMillan, K. Talwar. "Hiding among the clones: a
   simple and nearly optimal analysis of privacy amplification by
   shuffling". FOCS 2021 (Theorem 3.1, Theorem 3.2, Appendix E).
.. [2] V. Feldman, A. McMillan, K. Talwar. "Stronger privacy amplification
   by shuffling for Rényi and approximate differential privacy". SODA 2023.
.. [3] Ú. Erlingsson, V. Feldman, I. Mironov, A. Raghunathan, K. Talwar,
   A. Thakurta. "Amplification by shuffling: from local to central
   differential privacy via anonymity". SODA 2019.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import betainc, betaincc

from ldp.errors import AccountingError
from ldp.privacy._numeric import check_delta_value, check_epsilon_value
from ldp.specs.base import Spec

__all__ = [
    "CloneReduction",
    "ShuffleBound",
    "binomial_cdf_upper",
    "closed_form_epsilon",
    "closed_form_is_valid",
    "general_reduction",
    "local_epsilon_for",
    "numerical_epsilon",
    "randomized_response_reduction",
    "shuffle_bounds",
    "spec_reduction",
]

#: Largest number of users the accountant takes (the binomial mixture stays exact in float64 counts).
MAX_USERS = 10**12
#: Each computed CDF value of Bin(n, β) is raised by a relative _CDF_MARGIN·√n (an upper bound):
#: 250 times the error of the regularized incomplete beta function measured against sums of
#: the pmf from n = 10⁵ to 10¹² (about 4e-15·√n; tests/privacy/test_privacy_shuffle.py checks it).
_CDF_MARGIN = 1e-12
#: Most ranges of C summed separately (each charged the divergence of its smallest C).
_MAX_RANGES = 2048
#: Relative precision of the ε search (the answer is rounded up to it).
_EPSILON_RTOL = 1e-9


@dataclasses.dataclass(frozen=True)
class CloneReduction:
    """The pair (P, Q) the shuffled reports reduce to ([1]_, Theorem 3.2).

    Attributes
    ----------
    users : int
        Number of shuffled reports n (user 1 and n − 1 others).
    epsilon0 : float
        ε₀ of the pair split: user 1's informative part is on the M₀ side
        with probability α = e^ε₀/(e^ε₀ + 1) under x₀ (1 − α under x₁).
    clone_probability : float
        β: each of the n − 1 other reports is a clone (M₀ or M₁, ½ each)
        with this probability, independently.
    informative_weight : float
        w: user 1's report is informative with this probability, and has the
        same distribution under x₀ and x₁ otherwise; δ scales by w.
    """

    users: int
    epsilon0: float
    clone_probability: float
    informative_weight: float = 1.0

    def __post_init__(self) -> None:
        _check_users(self.users)
        check_epsilon_value(self.epsilon0, "epsilon0")
        if not 0.0 <= self.clone_probability <= 1.0:  # 0: e^−ε₀ underflows (ε₀ > 745), no clones
            raise AccountingError(f"clone_probability must be in [0, 1], got {self.clone_probability!r}")
        if not 0.0 < self.informative_weight <= 1.0:
            raise AccountingError(f"informative_weight must be in (0, 1], got {self.informative_weight!r}")

    @functools.cached_property
    def _mixture(self) -> tuple[np.ndarray, np.ndarray, float]:
        return _clone_counts(self.users - 1, self.clone_probability)

    def delta(self, epsilon: float) -> float:
        """δ(ε) = max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)), times w: an upper bound, sound at every n up to 10¹².

        The two divergences are equal (swapping the coordinates swaps P and
        Q). The divergence D(c) given C = c does not increase with c (one more
        clone is a post-processing), so a range of c may be charged the
        divergence of its smallest c: ranges hold one c each up to 2,048
        values, and the range of C within 12 standard deviations of its mean
        is split into 2,048 equal runs beyond (the last run takes everything
        above; the mass below the first is charged 1). By summation by parts
        the sum is Σ_j F(e_j)·(D_j − D_{j+1}) + D_last with nonnegative
        coefficients, so upper bounds of the CDF values F(e_j)
        (:func:`binomial_cdf_upper`) and of the D_j (made non-increasing)
        give an upper bound of δ.
        """
        eps = check_epsilon_value(epsilon)
        if eps >= self.epsilon0:
            return 0.0  # a post-processing of user 1's ε₀-DP report
        starts, weights, outside = self._mixture
        per_count = _delta_given_clones(starts, eps, self.epsilon0)
        per_count = np.maximum.accumulate(per_count[::-1])[::-1]  # non-increasing, never lowered
        total = float(np.dot(weights, per_count)) + outside
        if not math.isfinite(total):
            raise AccountingError(
                f"shuffle: the clone mixture at n = {self.users} came out {total} (numerical failure)"
            )
        return min(1.0, self.informative_weight * total)

    def epsilon(self, delta: float) -> float:
        """Smallest ε (to 1e-9·ε₀, rounded up) with δ(ε) ≤ δ; at most ε₀."""
        target = check_delta_value(delta, allow_zero=False)
        if self.delta(0.0) <= target:
            return 0.0
        log_target = math.log(target)
        return _smallest_passing(lambda eps: _log(self.delta(eps)) - log_target, 0.0, self.epsilon0)


def _log(x: float) -> float:
    """ln x, with 0 mapped to ln(1e-300) (a finite value for the root finders; δ(ε) is smooth in log scale)."""
    return math.log(max(x, 1e-300))


def _smallest_passing(excess, low: float, high: float) -> float:
    """A point ≥ the root of the decreasing ``excess`` in [low, high] where ``excess`` ≤ 0 (within 1e-9·high).

    ``excess(low) > 0 ≥ excess(high)``. Brent's method finds the root; the
    answer is then moved up until the excess is not positive, so a bound
    never comes out below the root.
    """
    tolerance = _EPSILON_RTOL * high
    root = brentq(excess, low, high, xtol=tolerance, rtol=4 * np.finfo(float).eps)
    answer = min(high, root + tolerance)
    while excess(answer) > 0 and answer < high:
        answer = min(high, answer + tolerance)
    return answer


def _check_users(users: int) -> int:
    if isinstance(users, bool) or not isinstance(users, (int, np.integer)) or not 2 <= users <= MAX_USERS:
        raise AccountingError(f"users must be an integer from 2 to {MAX_USERS:.0e}, got {users!r}")
    return int(users)


def binomial_cdf_upper(values: np.ndarray, trials: int, probability: float) -> np.ndarray:
    """Upper bounds of P[Bin(trials, probability) ≤ c] for each c (non-decreasing, 1 from c = trials on).

    P[X ≤ c] = 1 − I_p(c + 1, n − c), the regularized incomplete beta function
    (SciPy's ``betaincc``, given p itself so no 1 − p is rounded), raised by a
    relative :data:`_CDF_MARGIN`·√n and made monotone. It is accurate for any n
    below 2⁵³; SciPy's ``bdtr`` is not (off by 0.04 near the mean at n = 10⁹,
    NaN beyond 2³¹).
    """
    c = np.asarray(values, dtype=float)
    out = np.ones(c.shape)
    inside = (c >= 0) & (c < trials)
    out[c < 0] = 0.0
    out[inside] = betaincc(c[inside] + 1.0, trials - c[inside], probability)
    if not np.all(np.isfinite(out)):
        raise AccountingError(f"shuffle: the Bin({trials}, {probability:.6g}) CDF came out non-finite")
    margin = _CDF_MARGIN * math.sqrt(max(trials, 1))
    return np.minimum(1.0, np.maximum.accumulate(out * (1.0 + margin)))


def _clone_counts(trials: int, probability: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Ranges of C ~ Bin(trials, probability): their smallest values, their weights, and the weight charged 1.

    The weights are differences of upper bounds of the CDF at the ends of the
    ranges (:func:`binomial_cdf_upper`); the last range runs to ``trials``
    (CDF 1) and the mass below the first is charged δ = 1. So the weights and
    the charged mass add up to 1 (to rounding, < 1e-12), and with a
    non-increasing divergence per range they give an upper bound of δ
    (:meth:`CloneReduction.delta`).
    """
    mean = trials * probability
    spread = math.sqrt(max(mean * (1.0 - probability), 1.0))
    low = max(0, math.floor(mean - 12.0 * spread) - 10)
    high = min(trials, math.ceil(mean + 12.0 * spread) + 10)
    width = max(1, math.ceil((high - low + 1) / _MAX_RANGES))
    starts = np.arange(low, high + 1, width, dtype=np.float64)
    ends = np.minimum(starts + width - 1, high)
    ends[-1] = trials  # the last range takes everything above, charged the divergence of its smallest c
    cdf = binomial_cdf_upper(np.r_[low - 1, ends], trials, probability)
    return starts, np.diff(cdf), float(cdf[0])


def _half_binomial_sf(j: np.ndarray, c: np.ndarray) -> np.ndarray:
    """P[Bin(c, ½) ≥ j], elementwise (1 for j ≤ 0, 0 for j > c): I_½(j, c − j + 1), accurate for any c < 2⁵³."""
    out = np.where(j <= 0, 1.0, 0.0)
    inside = (j > 0) & (j <= c)
    out[inside] = betainc(j[inside], c[inside] - j[inside] + 1.0, 0.5)
    return out


def _delta_given_clones(c: np.ndarray, epsilon: float, epsilon0: float) -> np.ndarray:
    """D_{e^ε}(P_c‖Q_c) for each clone count c (the divergence given C = c).

    P_c(k) = α B(k − 1) + (1 − α) B(k), Q_c(k) = (1 − α) B(k − 1) + α B(k),
    B the Bin(c, ½) pmf; P_c/Q_c increases in k, so the divergence is
    P_c[K ≥ t] − e^ε Q_c[K ≥ t] at the first k with P_c(k) > e^ε Q_c(k).
    The three thresholds around the computed one are tried and the largest
    kept, so rounding in t can only raise the result (any t gives a lower
    bound of the sum of positive parts; the right one gives it exactly).
    """
    alpha = 1.0 / (1.0 + math.exp(-epsilon0))
    # P_c(k) > e^ε Q_c(k)  ⇔  k/(c − k + 1) > R  ⇔  k > R (c + 1)/(1 + R), with
    # R = (e^(ε+ε₀) − 1)/(e^ε₀ − e^ε); R/(1 + R) is written with e^−ε and e^−ε₀ only (no overflow at any ε₀)
    top = -math.expm1(-epsilon - epsilon0)
    share = top / (top + math.exp(-epsilon) - math.exp(-epsilon0))
    centre = np.floor(share * (c + 1.0)) + 1.0
    tails = [_half_binomial_sf(centre + shift, c) for shift in (-2.0, -1.0, 0.0, 1.0)]
    best = np.zeros_like(c)
    for above_shifted, above in itertools.pairwise(tails):  # t = centre − 1, centre, centre + 1
        p_tail = alpha * above_shifted + (1.0 - alpha) * above
        q_tail = (1.0 - alpha) * above_shifted + alpha * above
        with np.errstate(divide="ignore", over="ignore"):
            scaled = np.exp(epsilon + np.log(q_tail))  # e^ε·Q-tail; inf only where P-tail − it is < 0
        best = np.maximum(best, p_tail - scaled)
    return best


def general_reduction(epsilon0: float, users: int) -> CloneReduction:
    """Any ε₀-DP randomizer: clone probability e^−ε₀ ([1]_, Theorem 3.2)."""
    eps0 = check_epsilon_value(epsilon0, "epsilon0")
    return CloneReduction(_check_users(users), eps0, math.exp(-eps0))


def randomized_response_reduction(epsilon0: float, users: int, k: int) -> CloneReduction:
    """k-ary randomized response (GRR; binary RR is k = 2): β = 2/(e^ε₀ + k − 1), w = (e^ε₀ + 1)/(e^ε₀ + k − 1).

    Reports q = 1/(e^ε₀ + k − 1) on each value other than the true one and
    e^ε₀ q on it, so every other user's report holds q of x₀ and q of x₁
    (a clone with probability 2q), and user 1's report falls outside
    {x₀, x₁} with the same probability (k − 2) q under both inputs.
    """
    eps0 = check_epsilon_value(epsilon0, "epsilon0")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise AccountingError(f"k (domain size) must be an integer ≥ 2, got {k!r}")
    # divided through by e^ε₀, so nothing overflows at any ε₀
    small = math.exp(-eps0)
    denominator = 1.0 + (k - 1) * small
    return CloneReduction(
        _check_users(users), eps0, min(1.0, 2.0 * small / denominator), min(1.0, (1.0 + small) / denominator)
    )


def closed_form_is_valid(epsilon0: float, users: int, delta: float) -> bool:
    """Whether ε₀ ≤ ln(n / (16 ln(4/δ))), the range of [1]_'s closed form."""
    bound = users / (16.0 * math.log(4.0 / delta))
    return bound > 1.0 and epsilon0 <= math.log(bound)


def closed_form_epsilon(epsilon0: float, users: int, delta: float) -> float | None:
    """[1]_'s closed form (Theorem 3.1, with the refinement of their reference computation); None outside its range.

    With a = 8 √(e^ε₀ ln(4/δ) / n) + 8 e^ε₀ / n and ε′ = ln(1 + a):
    ε = ln(1 + (1 − e^−ε₀) / (1 + e^(−ε₀ − ε′)) · a).
    """
    eps0 = check_epsilon_value(epsilon0, "epsilon0")
    n = _check_users(users)
    target = check_delta_value(delta, allow_zero=False)
    if not closed_form_is_valid(eps0, n, target):
        return None
    a = 8.0 * math.sqrt(math.exp(eps0) * math.log(4.0 / target) / n) + 8.0 * math.exp(eps0) / n
    spread = math.log1p(a)
    return math.log1p((-math.expm1(-eps0)) / (1.0 + math.exp(-eps0 - spread)) * a)


def numerical_epsilon(epsilon0: float, users: int, delta: float) -> float:
    """Central ε of n shuffled ε₀-DP reports by the exact clone mixture ([1]_, Appendix E)."""
    return general_reduction(epsilon0, users).epsilon(delta)


@dataclasses.dataclass(frozen=True)
class ShuffleBound:
    """One row of :func:`shuffle_bounds`: a central ε, how it was obtained, and whether it is in force."""

    method: str
    epsilon: float | None
    source: str
    note: str = ""


def spec_reduction(spec: Spec, users: int) -> CloneReduction | None:
    """The spec's own clone split (:meth:`ldp.specs.Spec.shuffle_clones`) for n users, or None."""
    clones = spec.shuffle_clones()
    if clones is None:
        return None
    epsilon0, clone_probability, informative_weight = clones
    return CloneReduction(_check_users(users), epsilon0, clone_probability, informative_weight)


def shuffle_bounds(
    epsilon0: float,
    users: int,
    delta: float,
    *,
    domain_size: int | None = None,
    spec: Spec | None = None,
) -> list[ShuffleBound]:
    """Every central-ε bound for n shuffled ε₀-DP reports at δ; the last row, "best", is the smallest in force.

    ``domain_size``: the randomizer is randomized response over k values
    (:func:`randomized_response_reduction`). ``spec``: also the spec's own
    clone split where it has one (GRR and binary RR, from their exact
    probabilities); ``epsilon0`` must then be the spec's ε.
    """
    eps0 = check_epsilon_value(epsilon0, "epsilon0")
    n = _check_users(users)
    target = check_delta_value(delta, allow_zero=False)
    rows = [ShuffleBound("no amplification (local epsilon0)", eps0, "post-processing")]
    closed = closed_form_epsilon(eps0, n, target)
    rows.append(
        ShuffleBound(
            "closed form",
            closed,
            "Feldman-McMillan-Talwar 2021, Thm 3.1",
            "" if closed is not None else "not valid: epsilon0 > ln(n / (16 ln(4/delta)))",
        )
    )
    rows.append(
        ShuffleBound(
            "numerical (clone mixture)",
            numerical_epsilon(eps0, n, target),
            "Feldman-McMillan-Talwar 2021, App. E",
        )
    )
    if domain_size is not None:
        rows.append(
            ShuffleBound(
                f"randomized response, k = {domain_size}",
                randomized_response_reduction(eps0, n, domain_size).epsilon(target),
                "clones 2/(e^eps0 + k - 1), after FMT 2023",
            )
        )
    own = spec_reduction(spec, n) if spec is not None else None
    if own is not None and spec is not None:
        rows.append(
            ShuffleBound(
                f"{spec.mechanism}: its exact probabilities",
                own.epsilon(target),
                "clones 2q, weight p + q, after FMT 2023",
            )
        )
    best = min(r.epsilon for r in rows if r.epsilon is not None)
    rows.append(ShuffleBound("best", best, "smallest of the above"))
    return rows


def local_epsilon_for(
    target_epsilon: float,
    users: int,
    delta: float,
    *,
    domain_size: int | None = None,
    max_epsilon0: float = 50.0,
) -> float:
    """Largest ε₀ (to 1e-9·max_epsilon0, rounded down) whose n shuffled reports are (target, δ)-DP by the numerical bound.

    ``domain_size`` uses the randomized-response reduction as well (the
    smaller ε of the two). The central ε is increasing in ε₀.
    """
    goal = check_epsilon_value(target_epsilon, "target epsilon")
    n = _check_users(users)
    target = check_delta_value(delta, allow_zero=False)

    reductions = [lambda eps0: general_reduction(eps0, n)]
    if domain_size is not None:
        reductions.append(lambda eps0: randomized_response_reduction(eps0, n, domain_size))
    found = goal  # ε₀ = goal always satisfies it (no amplification needed)
    for reduction in reductions:
        if reduction(max_epsilon0).delta(goal) <= target:
            return max_epsilon0

        def excess(eps0: float, reduction=reduction) -> float:  # increasing in ε₀
            return _log(reduction(eps0).delta(goal)) - math.log(target)

        tolerance = _EPSILON_RTOL * max_epsilon0
        root = brentq(excess, goal, max_epsilon0, xtol=tolerance, rtol=4 * np.finfo(float).eps)
        answer = max(goal, root - tolerance)
        while answer > goal and excess(answer) > 0:  # never above the root
            answer = max(goal, answer - tolerance)
        found = max(found, answer)
    return found
