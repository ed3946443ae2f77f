"""The memoization test of a RAPPOR client: do r reports of one value share one permanent response?

A memoizing client draws its permanent randomized response (PRR) B' once
per value and every report's instantaneous response (IRR) from it. For a
client reporting one value r times, bit i with true Bloom bit b has
P[B'_i = 1] = π_b (π_1 = 1 − f/2, π_0 = f/2) and, given B'_i, r i.i.d. IRR
bits, so its count C of ones over the r reports follows the mixture

    P0(c | b) = π_b · Bin(c; r, q) + (1 − π_b) · Bin(c; r, p),

independently over bits and clients. A client that re-draws B' on every
report (the classic memoization bug) gives r i.i.d. bits of probability
q*_b = π_b·q + (1 − π_b)·p, so C ~ Bin(r, q*_b): the same mean, less
dispersion (the mixture's variance exceeds the binomial's by
r(r − 1)(q − p)²·π_b(1 − π_b)), so its r reports reveal up to r·ε₁ rather
than min(ε∞, r·ε₁).

The test counts the *extreme* counts: c in A_b = {c : P0(c | b) > P1(c | b)},
where the memoized model puts more mass than the re-drawing one (counts
near 0 and near r). Over the n_b (client, bit) cells of true bit b, the
number N_b of extreme counts is exactly Bin(n_b, P0(A_b | b)) under the
memoized model, so T = N_0 + N_1 is a sum of two independent binomials with
known parameters, and

    p = P0[T ≤ t] = Σ_x Bin(x; n_1, a_1) · BinCDF(t − x; n_0, a_0)

is an exact one-sided p-value (small when there are too few extreme counts,
as from a re-drawing client): P[p ≤ α] ≤ α for a memoizing client, at any
α and any number of clients. Against the re-drawing client the indicator of
A_b is about as efficient as the dispersion (C − r·q*_b)² itself (0.196
against 0.201 standard deviations of shift per cell at r = 8, f = p = ½,
q = ¾), and :func:`memo_power` gives the test's exact power.

The longitudinal chains (:mod:`ldp.specs.longitudinal`) are the same model
with a memoized round of their own: π_1 = p₁, π_0 = q₁, and the fresh round's
P[S = 1 | B' = 1] = p₂, P[S = 1 | B' = 0] = q₂ (:meth:`MemoModel.chain`).

The test needs 0 < f (with f = 0 the PRR is B itself and both models
coincide), p ≠ q and r ≥ 2.
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction

import numpy as np

from ldp.errors import ParameterError

__all__ = ["MemoModel", "MemoTest", "memo_power", "memoization_test", "sum_binomial_cdf"]


@dataclasses.dataclass(frozen=True)
class MemoModel:
    """RAPPOR's PRR and IRR probabilities and the number r of reports of one client.

    Parameters
    ----------
    f, p, q : float or Fraction
        The spec's PRR and IRR probabilities.
    reports : int
        r, the reports of one client of one value (at least 2).
    """

    f: float | Fraction
    p: float | Fraction
    q: float | Fraction
    reports: int
    #: (π_0, π_1) of a permanent response other than RAPPOR's (f/2, 1 − f/2), e.g. the memoized round
    #: (q₁, p₁) of a longitudinal chain (:meth:`chain`); ``f`` is then unused.
    permanent: tuple[float | Fraction, float | Fraction] | None = None

    @classmethod
    def chain(
        cls,
        p1: float | Fraction,
        q1: float | Fraction,
        p2: float | Fraction,
        q2: float | Fraction,
        reports: int,
    ) -> MemoModel:
        """The model of a two-round chain (:mod:`ldp.chain_math`): memo bit 1 w.p. p₁ (true bit 1) or q₁, then
        each report's bit 1 w.p. p₂ (memo bit 1) or q₂: RAPPOR's with π = (q₁, p₁), IRR p = q₂, q = p₂."""
        return cls(f=1, p=q2, q=p2, reports=reports, permanent=(q1, p1))

    def __post_init__(self) -> None:
        if self.reports < 2:
            raise ParameterError(
                f"the memoization test needs at least 2 reports per client, got {self.reports}"
            )
        if self.permanent is not None:
            low, high = self.permanent
            if not (0 < low < 1 and 0 < high < 1 and low != high):
                raise ParameterError(
                    f"the memoization test needs permanent probabilities in (0, 1) that differ, got {self.permanent}"
                )
        elif not 0 < self.f <= 1:
            raise ParameterError(
                f"the memoization test needs 0 < f <= 1 (f = 0 has no PRR), got f = {self.f}"
            )
        if self.p == self.q:
            raise ParameterError("the memoization test needs p != q")

    def permanent_one(self, bit: int) -> float:
        """π_b = P[B' = 1 | B = b]: 1 − f/2 for b = 1, f/2 for b = 0 (or :attr:`permanent`'s π_b)."""
        if self.permanent is not None:
            return float(self.permanent[bit])
        half = float(self.f) / 2
        return 1 - half if bit else half

    def memoized_pmf(self, bit: int) -> np.ndarray:
        """P0(c | b), c = 0..r: the count of ones of one bit over r reports of a memoizing client."""
        return self._tables[0][bit].copy()

    def redrawn_pmf(self, bit: int) -> np.ndarray:
        """P1(c | b) = Bin(c; r, q*_b): the same count when the PRR is re-drawn for every report."""
        return self._tables[1][bit].copy()

    def extreme(self, bit: int) -> np.ndarray:
        """A_b: the counts c (a boolean mask over 0..r) more likely under memoization than under re-drawing."""
        return self._tables[0][bit] > self._tables[1][bit]

    @functools.cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(P0, P1), each of shape (2, r + 1): row b is the pmf of the count for true bit b."""
        from scipy.stats import binom

        c = np.arange(self.reports + 1)
        p, q = float(self.p), float(self.q)
        memo, redraw = np.empty((2, c.size)), np.empty((2, c.size))
        for bit in (0, 1):
            pi = self.permanent_one(bit)
            memo[bit] = pi * binom.pmf(c, self.reports, q) + (1 - pi) * binom.pmf(c, self.reports, p)
            redraw[bit] = binom.pmf(c, self.reports, pi * q + (1 - pi) * p)
        return memo, redraw


@dataclasses.dataclass(frozen=True)
class MemoTest:
    """The outcome of :func:`memoization_test`.

    ``cells``: (n_0, n_1), the (client, bit) cells of true bit 0 and 1;
    ``extreme``: T, the cells with an extreme count; ``expected``: E0[T];
    ``p_value``: P0[T ≤ observed]; ``alpha``: the level it was tested at.
    """

    reports: int
    clients: int
    cells: tuple[int, int]
    extreme: int
    expected: float
    p_value: float
    alpha: float

    @property
    def rejected(self) -> bool:
        """True when p ≤ α: the reports do not follow the memoized model (false alarm probability ≤ α)."""
        return self.p_value <= self.alpha


def _binomial_pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """P[Bin(n, p) = k] for an array of integers ``k`` (0 outside [0, n]), from the log-gamma function.

    Not :func:`ldp.privacy._numeric.binom_logpmf`: its Loader form keeps 1e-13 at counts up to 2^53, which
    the specs' privacy curves need, but costs an audit's memoization test (5,000 draws) about 0.5 s more; at
    an audit's counts the log-gamma form agrees with ``scipy.stats.binom`` to 1e-11.
    """
    from scipy.special import gammaln, xlog1py, xlogy

    j = np.clip(k, 0, n).astype(np.float64)
    log_pmf = gammaln(n + 1) - gammaln(j + 1) - gammaln(n - j + 1) + xlogy(j, p) + xlog1py(n - j, -p)
    return np.where((k >= 0) & (k <= n), np.exp(log_pmf), 0.0)


def sum_binomial_cdf(t: int, n0: int, a0: float, n1: int, a1: float) -> float:
    """P[X0 + X1 ≤ t] for independent X0 ~ Bin(n0, a0) and X1 ~ Bin(n1, a1), exactly (a sum of positive terms).

    The sum over x = 0 … min(t, n1) of P[X1 = x] · P[X0 ≤ t − x]. The CDF of X0 is needed at the consecutive
    points t − min(t, n1) … t: it is SciPy's ``bdtr`` at the lowest, then that plus the running sum of the pmf.
    SciPy's special functions are called directly: ``scipy.stats.binom`` costs about 0.3 ms a call in argument
    handling, which an audit or a power computation pays thousands of times.
    """
    from scipy.special import bdtr

    if t < 0:
        return 0.0
    top = min(t, n1)
    x = np.arange(top + 1)
    low = t - top  # the lowest point at which X0's CDF is needed (≥ 0)
    base = float(bdtr(low, n0, a0)) if low < n0 else 1.0
    cdf = np.minimum(
        1.0, base + np.concatenate(([0.0], np.cumsum(_binomial_pmf(np.arange(low + 1, t + 1), n0, a0))))
    )
    # cdf[i] is P[X0 ≤ low + i]; the term of x needs P[X0 ≤ t − x] = cdf[top − x]
    return float(min(1.0, np.sum(_binomial_pmf(x, n1, a1) * cdf[::-1])))


def _extreme_probabilities(model: MemoModel, redrawn: bool) -> tuple[float, float]:
    """(P[A_0 | b = 0], P[A_1 | b = 1]) under the memoized model, or under re-drawing."""
    out = []
    for bit in (0, 1):
        pmf = model.redrawn_pmf(bit) if redrawn else model.memoized_pmf(bit)
        out.append(float(pmf[model.extreme(bit)].sum()))
    return out[0], out[1]


def memoization_test(histograms: np.ndarray, model: MemoModel, alpha: float, clients: int = 0) -> MemoTest:
    """Test the memoized model on the counts of ones of each (client, bit) over a client's r reports.

    Parameters
    ----------
    histograms : array of shape (2, r + 1)
        ``histograms[b, c]``: the cells of true bit b whose count of ones over
        the r reports is c (pooled over clients, values and bits).
    model : MemoModel
    alpha : float
        The level: a memoizing client is rejected with probability at most ``alpha``.
    clients : int
        The clients the histograms pool (reported only).

    Returns
    -------
    MemoTest
    """
    histograms = np.asarray(histograms, dtype=np.int64)
    if histograms.shape != (2, model.reports + 1):
        raise ParameterError(f"histograms must have shape (2, {model.reports + 1}), got {histograms.shape}")
    n0, n1 = (int(h.sum()) for h in histograms)
    a0, a1 = _extreme_probabilities(model, redrawn=False)
    extreme = int(sum(histograms[b][model.extreme(b)].sum() for b in (0, 1)))
    p_value = sum_binomial_cdf(extreme, n0, a0, n1, a1)
    return MemoTest(model.reports, clients, (n0, n1), extreme, n0 * a0 + n1 * a1, p_value, alpha)


def memo_power(model: MemoModel, cells: tuple[int, int], alpha: float) -> float:
    """The exact probability that :func:`memoization_test` at level ``alpha`` rejects a re-drawing client.

    ``cells``: (n_0, n_1), the (client, bit) cells of true bit 0 and 1.
    """
    n0, n1 = cells
    a0, a1 = _extreme_probabilities(model, redrawn=False)
    b0, b1 = _extreme_probabilities(model, redrawn=True)
    # the critical value: the largest t with P0[T ≤ t] ≤ α (a bisection over 0..n0 + n1)
    low, high = -1, n0 + n1
    while low < high:
        mid = (low + high + 1) // 2
        if sum_binomial_cdf(mid, n0, a0, n1, a1) <= alpha:
            low = mid
        else:
            high = mid - 1
    return sum_binomial_cdf(low, n0, b0, n1, b1)
