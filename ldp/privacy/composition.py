"""Composition of k reports: from the basic sum to the exact optimum (docs/accounting.md#composition).

Every function returns the total ε at a target δ (and, where it makes sense,
the composed trade-off curve). For k reports of an ε-LDP randomizer:

============================  =================================================
``basic_composition``         Σ ε_i (and Σ δ_i)
``advanced_composition``      Dwork–Rothblum–Vadhan
``kov_closed_form``           Kairouz–Oh–Viswanath Thm 3.4 (closed-form bound)
``optimal_composition``       Kairouz–Oh–Viswanath, exact (the optimum)
``exact_rr_composition``      f_{ε,0}^{⊗k}, the binomial Neyman–Pearson curve
``heterogeneous_composition`` exact for different ε_i (privacy-loss distribution)
``gdp_composition``           μ = √Σ μ_i²
``sound_gdp_epsilon``         via ε-DP ⇒ μ_ε-GDP (valid, loose)
``clt_composition``           Berry–Esseen CLT: approximate μ and its error γ
============================  =================================================

``optimal_composition`` and ``exact_rr_composition`` agree for pure ε-DP:
randomized response is the worst case among ε-DP randomizers, so its k-fold
curve is both the exact f-DP composition and the KOV optimum.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from scipy.special import gammaln

from ldp.errors import AccountingError, ParameterError
from ldp.privacy._numeric import check_delta_value, check_epsilon_value, logsumexp
from ldp.privacy.conversions import dp_to_gdp_mu, gdp_epsilon
from ldp.privacy.loss import EXACT_ATOMS, PrivacyLoss, ProductLoss
from ldp.privacy.tradeoff import GaussianTradeoff, PiecewiseLinearTradeoff

__all__ = [
    "CLTResult",
    "CompositionRow",
    "advanced_composition",
    "basic_composition",
    "clt_composition",
    "composition_table",
    "exact_rr_composition",
    "gdp_composition",
    "heterogeneous_composition",
    "heterogeneous_epsilon",
    "kov_closed_form",
    "kov_delta",
    "kov_heterogeneous_bound",
    "optimal_composition",
    "sound_gdp_epsilon",
]


#: Most reports the exact rows (binomial curve, KOV optimum) are computed for; beyond it only the closed-form bounds.
MAX_EXACT_REPORTS = 10**9


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise AccountingError(f"number of reports must be an integer >= 1, got {k!r}")
    return int(k)


def _check_exact_k(k) -> int:
    """k for an exact computation: at most :data:`MAX_EXACT_REPORTS` (its cost grows with √k)."""
    k = _check_k(k)
    if k > MAX_EXACT_REPORTS:
        raise AccountingError(
            f"exact composition is computed for at most {MAX_EXACT_REPORTS:.0e} reports (its cost grows "
            f"with the number of reports), got {k}; the closed-form bounds hold for any number"
        )
    return k


def _expm1_or_inf(x: float) -> float:
    """e^x − 1, ``inf`` beyond the double range (accounting at any ε, never an OverflowError)."""
    try:
        return math.expm1(x)
    except OverflowError:
        return math.inf


def _sinh_cosh_or_inf(x: float) -> tuple[float, float]:
    """(sinh x, cosh x) for x ≥ 0, ``inf`` beyond the double range."""
    try:
        return math.sinh(x), math.cosh(x)
    except OverflowError:
        return math.inf, math.inf


def basic_composition(
    epsilons: Iterable[float], deltas: Iterable[float] | None = None
) -> tuple[float, float]:
    """(Σ ε_i, Σ δ_i): the basic composition theorem.

    References
    ----------
    .. [1] C. Dwork, A. Roth. "The Algorithmic Foundations of Differential
       Privacy". Found. Trends TCS 9, 2014, Theorem 3.16.
    """
    eps = [check_epsilon_value(e) for e in epsilons]
    dls = [] if deltas is None else [check_delta_value(d) for d in deltas]
    return math.fsum(eps), min(1.0, math.fsum(dls))


def advanced_composition(epsilon: float, k: int, delta: float, delta0: float = 0.0) -> float:
    """ε' = √(2k ln(1/δ'))·ε + kε(e^ε − 1) for total δ = kδ₀ + δ'.

    Parameters
    ----------
    epsilon, delta0 : float
        Per-report (ε, δ₀).
    k : int
        Number of reports.
    delta : float
        Target total δ; ``inf`` unless it exceeds kδ₀ (the theorem needs δ' > 0).

    References
    ----------
    .. [1] C. Dwork, G. N. Rothblum, S. Vadhan. "Boosting and differential
       privacy". FOCS 2010, Theorem III.3.
    """
    eps, k = check_epsilon_value(epsilon), _check_k(k)
    delta = check_delta_value(delta)
    slack = delta - k * check_delta_value(delta0, "delta0")
    if slack <= 0:
        return math.inf
    drift = k * eps * _expm1_or_inf(eps)
    return math.sqrt(2 * k * math.log(1 / slack)) * eps + drift


def kov_closed_form(epsilon: float, k: int, delta: float, delta0: float = 0.0) -> float:
    """Kairouz–Oh–Viswanath's closed-form bound (Thm 3.4), at total δ = 1 − (1−δ₀)^k(1−δ̃).

    ε̃ = min{kε, kε·tanh(ε/2) + ε√(2k ln(e + √(kε²)/δ̃)), kε·tanh(ε/2) + ε√(2k ln(1/δ̃))}.
    At δ̃ = 0 only the first term holds (kε, basic composition).

    References
    ----------
    .. [1] P. Kairouz, S. Oh, P. Viswanath. "The composition theorem for
       differential privacy". ICML 2015 / IEEE Trans. IT 63(6), 2017, Theorem 3.4.
    """
    eps, k = check_epsilon_value(epsilon), _check_k(k)
    delta = check_delta_value(delta)
    d0 = check_delta_value(delta0, "delta0")
    tilde = 1 - (1 - delta) / (1 - d0) ** k
    if tilde < 0:
        return math.inf
    if tilde == 0:
        return k * eps
    drift = k * eps * math.tanh(eps / 2)
    return min(
        k * eps,
        drift + eps * math.sqrt(2 * k * math.log(math.e + math.sqrt(k * eps * eps) / tilde)),
        drift + eps * math.sqrt(2 * k * math.log(1 / tilde)),
    )


def kov_delta(epsilon: float, k: int, epsilon_total) -> float | np.ndarray:
    """The KOV sum: δ(ε') = (1+e^ε)^{−k} Σ_ℓ C(k,ℓ)[e^{(k−ℓ)ε} − e^{ε'+ℓε}]₊, in log space.

    This is the exact δ of k-fold composition of ε-DP at ε'. Beyond
    :data:`ldp.privacy.loss.EXACT_ATOMS` terms it is the same sum over the
    windows of the binomial that hold all but 10⁻²⁹ of its mass, plus that
    mass (:meth:`PrivacyLoss.binomial`): cost O(√k), at most
    :data:`MAX_EXACT_REPORTS` reports.

    References
    ----------
    .. [1] P. Kairouz, S. Oh, P. Viswanath. IEEE Trans. IT 63(6), 2017, Theorem 3.3.
    """
    eps, k = check_epsilon_value(epsilon), _check_exact_k(k)
    targets = np.atleast_1d(np.asarray(epsilon_total, dtype=float))
    if k + 1 > EXACT_ATOMS:
        out = PrivacyLoss.binomial(eps, k).hockey_stick(targets)
        return float(out[0]) if np.ndim(epsilon_total) == 0 else out
    ell = np.arange(k + 1, dtype=float)
    log_choose = gammaln(k + 1.0) - gammaln(ell + 1.0) - gammaln(k - ell + 1.0)
    log_norm = k * float(np.logaddexp(0.0, eps))
    out = np.empty(targets.shape)
    for i, target in enumerate(targets):
        a = (k - ell) * eps
        b = target + ell * eps
        live = a > b
        if not np.any(live):
            out[i] = 0.0
            continue
        with np.errstate(divide="ignore"):
            terms = log_choose[live] + a[live] + np.log(-np.expm1(b[live] - a[live]))
        out[i] = float(np.exp(logsumexp(terms) - log_norm))
    return float(out[0]) if np.ndim(epsilon_total) == 0 else out


def optimal_composition(epsilon: float, k: int, delta: float, delta0: float = 0.0) -> float:
    """The exact (optimal) total ε of k-fold adaptive composition of (ε, δ₀)-DP at total δ.

    Uses the KOV characterization: total δ = 1 − (1−δ₀)^k (1 − δ_exact(ε')),
    with δ_exact the δ of f_{ε,0}^{⊗k}, solved for ε' continuously.

    References
    ----------
    .. [1] P. Kairouz, S. Oh, P. Viswanath. IEEE Trans. IT 63(6), 2017, Theorem 3.3.
    """
    eps, k = check_epsilon_value(epsilon), _check_exact_k(k)
    delta = check_delta_value(delta)
    d0 = check_delta_value(delta0, "delta0")
    inner = 1 - (1 - delta) / (1 - d0) ** k
    if inner < 0:
        return math.inf
    return PrivacyLoss.binomial(eps, k).epsilon(inner)


def exact_rr_composition(epsilon: float, k: int) -> PiecewiseLinearTradeoff:
    """f_{ε,0}^{⊗k}: the binomial Neyman–Pearson curve of k reports of ε-randomized response.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022, §3.
    """
    curve = PrivacyLoss.binomial(check_epsilon_value(epsilon), _check_exact_k(k)).tradeoff()
    curve.label = f"f_(eps={epsilon:.4g},0)^{k}"
    return curve


def heterogeneous_composition(
    epsilons: Sequence[float], *, max_atoms: int = 2_000_000
) -> PrivacyLoss | ProductLoss:
    """Exact privacy-loss distribution of ε_i-randomized responses, i = 1..k.

    Randomized response is the worst case among ε-DP randomizers, so this is
    the exact composition of any ε_i-DP reports. Equal ε_i are grouped (a
    binomial each), then the groups are multiplied.

    Raises
    ------
    ParameterError
        When more than one product would exceed ``max_atoms`` (too many
        distinct ε_i); use :func:`kov_heterogeneous_bound` then.

    References
    ----------
    .. [1] J. Murtagh, S. Vadhan. "The complexity of computing the optimal
       composition of differential privacy". TCC 2016.
    .. [2] S. Meiser, E. Mohammadi. ACM CCS 2018.
    """
    counts = Counter(check_epsilon_value(e) for e in epsilons)
    result: PrivacyLoss | ProductLoss = PrivacyLoss.identity()
    for eps, n in sorted(counts.items()):
        if eps == 0:
            continue
        part = PrivacyLoss.binomial(eps, n)
        if isinstance(result, ProductLoss):
            raise AccountingError(
                "too many distinct epsilons for exact composition; use kov_heterogeneous_bound"
            )
        result = result.compose(part, max_atoms=max_atoms) if result.size > 1 else part
    return result


def kov_heterogeneous_bound(epsilons: Sequence[float], delta: float) -> float:
    """ε̃ = min{Σε, Σ ε_i tanh(ε_i/2) + √(2 ln(1/δ) Σ ε_i²)} for pure ε_i-DP reports (Σε at δ = 0).

    References
    ----------
    .. [1] P. Kairouz, S. Oh, P. Viswanath. IEEE Trans. IT 63(6), 2017, Theorem 3.5.
    """
    eps = np.array([check_epsilon_value(e) for e in epsilons], dtype=float)
    delta = check_delta_value(delta)
    total = float(eps.sum())
    if delta == 0:
        return total
    bound = float(
        np.sum(eps * np.tanh(eps / 2)) + math.sqrt(2 * math.log(1 / delta) * float(np.sum(eps * eps)))
    )
    return min(total, bound)


def heterogeneous_epsilon(epsilons: Sequence[float], delta: float) -> float:
    """Tight total ε of pure ε_i-DP reports at δ (exact when feasible, else KOV Thm 3.5)."""
    eps = [check_epsilon_value(e) for e in epsilons]
    delta = check_delta_value(delta)
    if not eps:
        return 0.0
    total = math.fsum(eps)
    if delta == 0:
        return total
    try:
        exact = heterogeneous_composition(eps).epsilon(delta)
    except ParameterError:
        return kov_heterogeneous_bound(eps, delta)
    return min(total, exact)


def gdp_composition(mus: Iterable[float]) -> GaussianTradeoff:
    """G_{μ₁} ⊗ … ⊗ G_{μ_k} = G_{√(Σ μ_i²)}.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022, Corollary 3.3.
    """
    values = [check_epsilon_value(m, "mu") for m in mus]
    return GaussianTradeoff(math.sqrt(math.fsum(m * m for m in values)))


def sound_gdp_epsilon(epsilon: float, k: int, delta: float) -> tuple[float, float]:
    """(μ, ε): k reports of ε-DP are √k·μ_ε-GDP (valid, loose); ε at δ from that μ."""
    mu = math.sqrt(_check_k(k)) * dp_to_gdp_mu(epsilon)
    return mu, gdp_epsilon(mu, delta)


@dataclasses.dataclass(frozen=True)
class CLTResult:
    """Berry–Esseen CLT for f_{ε,0}^{⊗k}.

    Attributes
    ----------
    mu : float
        2√k·sinh(ε/2): f^{⊗k} ≈ G_μ.
    gamma : float
        0.56(1 + tanh²(ε/2))cosh(ε/2)/√k; G_μ(α+γ) − γ ≤ f^{⊗k}(α) ≤ G_μ(α−γ) + γ.
    epsilon_approx : float
        ε at δ of G_μ (an approximation, not a guarantee).
    epsilon_bound : float
        ε at δ of the lower curve G_μ(α+γ) − γ, i.e. the smallest ε with
        δ_μ(ε) + γ(1 + e^ε) ≤ δ; ``inf`` when γ is too large for δ.
    """

    mu: float
    gamma: float
    epsilon_approx: float
    epsilon_bound: float


def clt_composition(epsilon: float, k: int, delta: float) -> CLTResult:
    """Central-limit (Berry–Esseen) approximation of k reports of ε-DP.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022, Theorem 3.4 and
       §3.3 (constants as in docs/accounting.md#composition, checked numerically against the
       exact binomial curves).
    """
    eps, k = check_epsilon_value(epsilon), _check_k(k)
    delta = check_delta_value(delta)
    sinh, cosh = _sinh_cosh_or_inf(eps / 2)
    mu = 2 * math.sqrt(k) * sinh
    t = math.tanh(eps / 2)
    gamma = 0.56 * (1 + t * t) * cosh / math.sqrt(k)
    approx = gdp_epsilon(mu, delta) if math.isfinite(mu) else math.inf
    gauss = GaussianTradeoff(mu) if math.isfinite(mu) else None

    bound = math.inf
    if gauss is not None and 2 * gamma < delta:

        def bound_delta(e: float) -> float:
            return gauss.delta(e) + gamma * (1 + math.exp(min(e, 700.0)))

        # δ_μ(ε) + γ(1+e^ε) falls, then rises (γe^ε); find its minimum below where γ(1+e^ε) = δ
        from scipy.optimize import brentq, minimize_scalar

        hi = math.log(delta / gamma - 1)
        best = minimize_scalar(bound_delta, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-10})
        low = float(best.x)
        if bound_delta(0.0) <= delta:
            bound = 0.0
        elif bound_delta(low) <= delta:
            bound = float(brentq(lambda e: bound_delta(e) - delta, 0.0, low, xtol=1e-12))
    return CLTResult(mu=mu, gamma=gamma, epsilon_approx=approx, epsilon_bound=bound)


@dataclasses.dataclass(frozen=True)
class CompositionRow:
    """One line of :func:`composition_table`."""

    method: str
    epsilon: float | None  # None: not computed (the note says why)
    guarantee: str  # "exact", "bound" or "approximation"
    note: str = ""


def composition_table(epsilon: float, k: int, delta: float) -> list[CompositionRow]:
    """Total ε of k reports of ε-DP at δ by every method, loosest first.

    At δ = 0 the exact rows give the pure ε (kε) and the rows with no finite
    ε at δ = 0 (advanced composition, GDP, CLT) are ``inf`` with the reason.
    Beyond :data:`MAX_EXACT_REPORTS` reports the exact rows are not computed
    (``epsilon`` None, the note says why); from
    :data:`ldp.privacy.loss.EXACT_ATOMS` on they are computed in windows of
    the binomial, within 10⁻²⁹ of the exact δ (a sound bound).
    """
    eps, k = check_epsilon_value(epsilon), _check_k(k)
    delta = check_delta_value(delta)
    mu_sound, eps_sound = sound_gdp_epsilon(eps, k, delta)
    clt = clt_composition(eps, k, delta)
    pure = delta == 0
    exact: float | None
    optimum: float | None
    if k > MAX_EXACT_REPORTS:
        exact = optimum = None
        exact_note = f"not computed above {MAX_EXACT_REPORTS:.0e} reports (cost grows with k)"
    else:
        exact = exact_rr_composition(eps, k).epsilon(delta)
        optimum = optimal_composition(eps, k, delta)
        exact_note = "" if k + 1 <= EXACT_ATOMS else "binomial windows: within 1e-29 of delta"
    gdp_note = "; no finite epsilon at delta = 0 (a Gaussian curve is never pure DP)" if pure else ""
    clt_note = f"mu = {clt.mu:.6g}, Berry-Esseen gamma = {clt.gamma:.3g}" + (
        " (gamma >= 1: the approximation says nothing here)" if clt.gamma >= 1 else ""
    )
    if math.isinf(clt.epsilon_bound):
        bound_note = "inf: no finite epsilon at delta = 0" if pure else "inf: gamma exceeds delta"
    else:
        bound_note = ""
    return [
        CompositionRow("basic (sum)", k * eps, "bound", "delta = 0"),
        CompositionRow(
            "advanced (Dwork-Rothblum-Vadhan)",
            advanced_composition(eps, k, delta),
            "bound",
            "inf: the theorem needs delta > 0" if pure else "",
        ),
        CompositionRow(
            "KOV closed form (Thm 3.4)",
            kov_closed_form(eps, k, delta),
            "bound",
            "k * epsilon at delta = 0" if pure else "",
        ),
        CompositionRow("GDP via eps-DP => mu_eps-GDP", eps_sound, "bound", f"mu = {mu_sound:.6g}{gdp_note}"),
        CompositionRow("optimal (Kairouz-Oh-Viswanath)", optimum, "exact", exact_note),
        CompositionRow("exact f-DP (binomial curve)", exact, "exact", exact_note),
        CompositionRow("CLT / GDP approximation", clt.epsilon_approx, "approximation", clt_note + gdp_note),
        CompositionRow("CLT with Berry-Esseen error", clt.epsilon_bound, "bound", bound_note),
    ]
