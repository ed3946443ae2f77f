"""Log-space helpers shared by the accountant (private)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import gammaln, xlog1py, xlogy

__all__ = [
    "at_or_above_root",
    "binom_logpmf",
    "binom_window",
    "check_delta_value",
    "check_epsilon_value",
    "log1mexp",
    "log_diff_exp",
    "log_fraction",
    "logsumexp",
]


def log1mexp(x):
    """log(1 − e^x) for x ≤ 0, accurate everywhere (Mächler 2012); −inf at x = 0."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(x > -math.log(2), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))
    return out


def logsumexp(a) -> float:
    """log(Σ e^a) of a 1-D array, bit for bit what ``scipy.special.logsumexp`` gives (SciPy ≥ 1.15).

    The same steps (the largest term taken out of the sum, ``log1p`` of the rest,
    the direct sum where that is not finite) without its array-API dispatch,
    which costs about ten times the arithmetic on the accountant's short arrays
    (hundreds of thousands of calls in an ε search). −inf for an empty array.
    """
    a = np.asarray(a, dtype=float).ravel()
    if a.size == 0:
        return -math.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        top = a.max()
        at_top = a == top
        count = float(np.count_nonzero(at_top))
        rest = np.exp(np.where(at_top, -np.inf, a) - top).sum()
        if rest != 0:
            rest = rest / count
        out = float(np.log1p(rest) + np.log(count) + top)
        if not math.isfinite(out):  # ±inf or nan among the terms: what the direct sum gives
            out = float(np.log(np.exp(a).sum()))
    return out


def log_diff_exp(a, b):
    """log(e^a − e^b) for a ≥ b (−inf where a = b)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isneginf(b), a, a + log1mexp(b - a))


def at_or_above_root(excess, root: float, high: float) -> float:
    """The smallest point found ≥ ``root`` (a root finder's answer, within its tolerance) where ``excess`` ≤ 0.

    ``excess`` is non-increasing and ``excess(high)`` ≤ 0. A root finder stops
    within its tolerance on either side of the root; a privacy bound must not
    come out on the wrong side, so step up (doubling steps from a few units
    in the last place) until the condition holds.
    """
    answer = min(root, high)
    step = 4 * math.ulp(max(1.0, abs(answer)))
    while excess(answer) > 0 and answer < high:
        answer = min(high, answer + step)
        step *= 2
    return answer


def log_fraction(x: Fraction | float) -> float:
    """ln(x) of an exact positive rational without losing precision (−inf for 0)."""
    x = Fraction(x)
    if x < 0:
        raise ValueError("log of a negative probability")
    if x == 0:
        return -math.inf
    return math.log(x.numerator) - math.log(x.denominator)


_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _stirlerr(m: np.ndarray) -> np.ndarray:
    """ln(m!) − (m + ½) ln m + m − ½ ln(2π), the error of Stirling's formula (m ≥ 1), to ~1e-14 absolute."""
    m = np.asarray(m, dtype=float)
    small = m < 100
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = gammaln(m + 1.0) - (m + 0.5) * np.log(m) + m - _HALF_LOG_2PI
        inv2 = 1.0 / (m * m)
        series = (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680)))) / m
    return np.where(small, direct, series)


def _bd0(x: np.ndarray, log_mean: float) -> np.ndarray:
    """x ln(x / M) + M − x for x ≥ 0, M = e^log_mean, without cancellation (Loader 2000).

    Near the mean: M·((1+t) ln(1+t) − t) with t = (x − M)/M; far from it (or
    when M underflows) the plain form in logarithms, which does not cancel there.
    """
    mean = math.exp(log_mean)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = (x - mean) / mean if mean > 0 else np.full(x.shape, np.inf)
        near = mean * (xlog1py(x / mean, t) - t) if mean > 0 else t
        far = xlogy(x, x) - x * log_mean + mean - x
    return np.where(np.abs(t) < 0.5, near, far)


def binom_logpmf(k: int, log_p: float, log_1mp: float, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """log P[Bin(k, p) = x] for x = lo..hi (default 0..k), from log p and log(1 − p) (no underflow).

    Uses Loader's saddle-point form (Stirling errors and deviances instead of
    differences of ln Γ), so each log-mass has an absolute error of about
    1e-13 at any k up to 2^53 (the ln Γ form loses 1e-6 at k = 10^9 and 1e-3
    at k = 10^12).

    References
    ----------
    .. [1] C. Loader. "Fast and accurate computation of binomial
       probabilities". 2000.
    """
    hi = k if hi is None else hi
    x = np.arange(lo, hi + 1, dtype=float)
    out = np.empty(x.shape)
    edge_lo, edge_hi = x == 0, x == k
    with np.errstate(invalid="ignore"):
        out[edge_lo] = k * log_1mp if k > 0 else 0.0
        out[edge_hi & ~edge_lo] = k * log_p
    inner = ~(edge_lo | edge_hi)
    if np.any(inner):
        xi = x[inner]
        rest = k - xi
        out[inner] = (
            _stirlerr(np.array(float(k)))
            - _stirlerr(xi)
            - _stirlerr(rest)
            - _bd0(xi, math.log(k) + log_p)
            - _bd0(rest, math.log(k) + log_1mp)
            + 0.5 * (math.log(k) - np.log(xi) - np.log(rest))
            - _HALF_LOG_2PI
        )
    return out


def binom_window(k: int, log_p: float, log_1mp: float, tail: float) -> tuple[int, np.ndarray, float]:
    """A range of Bin(k, p) around its mean holding all but at most ``tail`` of its mass.

    Returns (lo, log-masses of x = lo..hi, an upper bound of the mass outside
    lo..hi). The bound is rigorous: beyond a point on the decreasing side of
    the (log-concave) pmf, the ratio of consecutive masses only falls, so the
    tail is at most its first mass over (1 − ratio) (a geometric series).
    """
    p = math.exp(log_p)
    mean = k * p
    spread = math.sqrt(max(k * p * math.exp(log_1mp), 1.0))
    z = math.sqrt(2.0 * math.log(4.0 / tail)) + 2.0
    while True:
        lo = max(0, math.floor(mean - z * spread))
        hi = min(k, math.ceil(mean + z * spread))
        log_mass = binom_logpmf(k, log_p, log_1mp, lo, hi)
        outside = 0.0
        ok = True
        if lo > 0:  # below: masses of lo − 1, lo − 2, ... fall by at most r = lo·q / ((k − lo + 1)·p)
            ratio = math.exp(math.log(lo) + log_1mp - math.log(k - lo + 1) - log_p)
            first = float(binom_logpmf(k, log_p, log_1mp, lo - 1, lo - 1)[0])
            ok = ratio < 1
            outside += math.exp(first) / (1.0 - ratio) if ok else 1.0
        if hi < k:  # above: ratio (k − hi − 1)·p / ((hi + 2)·q)
            ratio = math.exp(math.log(k - hi - 1) + log_p - math.log(hi + 2) - log_1mp) if hi + 1 < k else 0.0
            first = float(binom_logpmf(k, log_p, log_1mp, hi + 1, hi + 1)[0])
            ok = ok and ratio < 1
            outside += math.exp(first) / (1.0 - ratio) if ratio < 1 else 1.0
        if ok and outside <= tail:
            return lo, log_mass, outside
        z *= 1.5


def check_epsilon_value(epsilon, name: str = "epsilon", *, allow_zero: bool = True) -> float:
    """A finite ε ≥ 0 (> 0 when ``allow_zero`` is False), else AccountingError."""
    from ldp.errors import AccountingError

    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise AccountingError(f"{name} must be a number, got {epsilon!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        expected = ">= 0" if allow_zero else "> 0"
        raise AccountingError(f"{name} must be a finite number {expected}, got {epsilon!r}")
    return value


def check_delta_value(delta, name: str = "delta", *, allow_zero: bool = True) -> float:
    """A δ in [0, 1) ((0, 1) when ``allow_zero`` is False), else AccountingError."""
    from ldp.errors import AccountingError

    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise AccountingError(f"{name} must be a number, got {delta!r}") from None
    if not (0 <= value < 1) or (value == 0 and not allow_zero):
        expected = "in [0, 1)" if allow_zero else "in (0, 1)"
        raise AccountingError(f"{name} must be {expected}, got {delta!r}")
    return value
