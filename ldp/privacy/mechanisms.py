"""Exact Neyman–Pearson curves of the mechanism specs (docs/accounting.md#mechanism-curves).

For each spec, :func:`mechanism_loss` builds the privacy-loss atoms of the
worst pair of inputs x, x' from the spec's exact probabilities:

- GRR / BinaryRR: outputs x' (LR e^ε), x (LR e^{−ε}) and the d − 2 others
  (LR 1, mass (d − 2)q under both).
- SUE / OUE: T(Bern(p), Bern(q)) ⊗ T(Bern(q), Bern(p)) (the two differing bits).
- OLH / BLH: with probability c (the family's collision probability) the hash
  merges x and x' and the report says nothing; otherwise it is GRR over g.
- RAPPOR, r reports of one memoized value: per differing Bloom bit, the count
  of 1s over the r reports is (1 − f/2)Bin(r, q) + (f/2)Bin(r, p) when the bit
  is set and (f/2)Bin(r, q) + (1 − f/2)Bin(r, p) when it is not; the 2h bits
  (h set by x only, h by x' only) compose. r = 1 is one report; r = ∞ is the
  PRR itself, whose pure ε is ε∞.
- Duchi, stochastic rounding: the inputs ±1 give binary randomized response
  with the spec's exact p; every other input is a garbling of those two, so
  the curve is exact.
- Laplace, Piecewise, Hybrid (grid tables): the curve used is f_{ε,0} at the ε
  the integer table achieves over all its inputs and outputs. It is a sound
  lower bound on every pair's curve (the mechanism is exactly ε-LDP), not the
  exact curve of the worst pair.
- Gaussian: (ε, δ)-LDP on a grid; no pure-ε or exact curve here (its
  ``gdp_mu`` is the continuous mechanism's), so it is refused.

Fresh-randomness mechanisms compose over k reports (:func:`mechanism_loss`
with ``reports=k``); RAPPOR reports of a memoized value are post-processing of
the PRR, so their curve never drops below the PRR curve.

Every pair here is symmetric (swapping x and x' gives the same atoms), so
T(P, Q) is the mechanism's trade-off function.

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy". JRSS-B
   84(1), 2022 (trade-off functions, Neyman–Pearson, composition).
.. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response". ACM CCS 2014.
.. [3] T. Wang, J. Blocki, N. Li, S. Jha. "Locally differentially private
   protocols for frequency estimation". USENIX Security 2017.
.. [4] P. Kairouz, S. Oh, P. Viswanath. "The composition theorem for
   differential privacy". ICML 2015 (f_{ε,0} and its optimal composition).
.. [5] J. C. Duchi, M. I. Jordan, M. J. Wainwright. "Minimax optimal procedures
   for locally private estimation". JASA 113(521), 2018.
"""

from __future__ import annotations

import math

import numpy as np

from ldp.errors import ParameterError
from ldp.privacy._numeric import binom_logpmf, log_fraction
from ldp.privacy.loss import DEFAULT_MAX_ATOMS, PrivacyLoss, ProductLoss
from ldp.privacy.tradeoff import PiecewiseLinearTradeoff
from ldp.specs import GRR, Duchi, Gaussian, LocalHashing, NumericSpec, Rappor, StochasticRounding, UnaryEncoding

__all__ = [
    "curve_is_exact",
    "mechanism_loss",
    "mechanism_tradeoff",
    "per_report_gdp_mu",
    "rappor_bit_loss",
    "tradeoff_summary",
]


def _bit_pair(p_one_given_set, p_one_given_unset) -> PrivacyLoss:
    """One bit, P: the bit is set (P[1] = a), Q: not set (P[1] = b)."""
    a, b = p_one_given_set, p_one_given_unset
    return PrivacyLoss(
        np.array([log_fraction(1 - a), log_fraction(a)]),
        np.array([log_fraction(1 - b), log_fraction(b)]),
    )


def _grr_loss(p, q, outputs: int) -> PrivacyLoss:
    log_p, log_q = log_fraction(p), log_fraction(q)
    lp = [log_p, log_q]
    lq = [log_q, log_p]
    if outputs > 2:
        rest = log_fraction((outputs - 2) * q)
        lp.append(rest)
        lq.append(rest)
    return PrivacyLoss(np.array(lp), np.array(lq))


def rappor_bit_loss(spec: Rappor, reports: int | float) -> PrivacyLoss:
    """Atoms of one Bloom bit set by x and not by x', over ``reports`` IRRs of one memoized value."""
    f, p, q = spec.f, spec.p, spec.q
    if math.isinf(reports):
        if f == 0:
            raise ParameterError("rappor with f = 0 has no permanent randomized response (epsilon_inf = inf)")
        return _bit_pair(1 - f / 2, f / 2)
    r = int(reports)
    if r == 1:
        return _bit_pair(spec.prob_one_given_one, spec.prob_one_given_zero)
    lq1, lq0 = log_fraction(q), log_fraction(1 - q)
    lp1, lp0 = log_fraction(p), log_fraction(1 - p)
    count_if_one = binom_logpmf(r, lq1, lq0)  # B' = 1: each report is 1 w.p. q
    count_if_zero = binom_logpmf(r, lp1, lp0)  # B' = 0: w.p. p
    keep, flip = log_fraction(1 - f / 2), log_fraction(f / 2)
    set_bit = np.logaddexp(keep + count_if_one, flip + count_if_zero)
    unset_bit = np.logaddexp(flip + count_if_one, keep + count_if_zero)
    return PrivacyLoss(set_bit, unset_bit)


#: Numeric specs whose curve is exact: binary RR between the inputs ±1, every other input a garbling.
_TWO_POINT = (Duchi, StochasticRounding)


def _numeric_report_loss(spec: NumericSpec) -> PrivacyLoss:
    """One numeric report: exact for the two-point mechanisms, f_{ε,0} (sound bound) for grid tables."""
    if isinstance(spec, Gaussian):
        raise ParameterError(
            f"gaussian is (epsilon, delta)-LDP on a grid, with no exact curve here; the continuous mechanism is "
            f"mu-GDP with mu = {spec.gdp_mu:.6g} (compose that with `ldp privacy convert --mu`)"
        )
    if isinstance(spec, _TWO_POINT):
        keep = spec.p  # P[output +1 | input +1] = P[output -1 | input -1], exact rational
    else:
        ratio = spec.privacy_ratio  # the table's exact worst-case probability ratio e^ε
        keep = ratio / (1 + ratio)
    return _bit_pair(keep, 1 - keep)


def _check_reports(reports) -> int | float:
    if isinstance(reports, float) and math.isinf(reports) and reports > 0:
        return math.inf
    if isinstance(reports, bool) or not isinstance(reports, (int, np.integer)) or reports < 1:
        raise ParameterError(f"reports must be an integer >= 1 (or inf for RAPPOR), got {reports!r}")
    return int(reports)


def mechanism_loss(spec, reports: int | float = 1, *, max_atoms: int = DEFAULT_MAX_ATOMS) -> PrivacyLoss | ProductLoss:
    """Privacy-loss atoms of the worst pair of inputs of ``spec`` over ``reports`` reports.

    Parameters
    ----------
    spec : FrequencySpec, Rappor or NumericSpec (not Gaussian)
    reports : int or math.inf
        Frequency oracles and numeric mechanisms: k independent reports (fresh
        randomness each).
        RAPPOR: r reports of one memoized value (``math.inf``: the PRR bound).
    max_atoms : int
        Largest explicit product; beyond it a :class:`ProductLoss` is returned.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. JRSS-B 84(1), 2022 (Neyman–Pearson, composition).
    .. [2] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014.
    .. [3] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017.
    """
    reports = _check_reports(reports)
    if isinstance(spec, Rappor):
        bit = rappor_bit_loss(spec, reports)
        if spec.encoding == "boolean":
            return bit
        h = spec.num_hashes
        one_side = bit.self_compose(h, max_atoms=max_atoms)
        if isinstance(one_side, ProductLoss):
            raise ParameterError("rappor curve too large to compute exactly; use fewer reports")
        return one_side.compose(one_side.swap(), max_atoms=max_atoms)
    if math.isinf(reports):
        raise ParameterError(f"{spec.mechanism} uses fresh randomness per report; give a finite number of reports")
    if isinstance(spec, GRR):
        single = _grr_loss(spec.p, spec.q, spec.domain_size)
        return single.self_compose(reports, max_atoms=max_atoms)
    if isinstance(spec, UnaryEncoding):
        # each differing bit separately: its k-fold composition is a binomial
        set_bit = _bit_pair(spec.p, spec.q).self_compose(reports)
        return set_bit.compose(set_bit.swap(), max_atoms=max_atoms)
    if isinstance(spec, NumericSpec):
        single = _numeric_report_loss(spec)
        return single if reports == 1 else single.self_compose(reports)
    if isinstance(spec, LocalHashing):
        c = spec.collision_probability
        p, q, g = spec.p, spec.q, spec.g
        lp = [log_fraction((1 - c) * p), log_fraction((1 - c) * q)]
        lq = [log_fraction((1 - c) * q), log_fraction((1 - c) * p)]
        rest = (1 - c) * (g - 2) * q + c
        lp.append(log_fraction(rest))
        lq.append(log_fraction(rest))
        return PrivacyLoss(np.array(lp), np.array(lq)).self_compose(reports, max_atoms=max_atoms)
    raise ParameterError(f"no privacy curve for {type(spec).__name__}")


def mechanism_tradeoff(spec, reports: int | float = 1) -> PiecewiseLinearTradeoff:
    """The trade-off curve of ``spec`` (see :func:`mechanism_loss`), labelled for plots."""
    curve = mechanism_loss(spec, reports).tradeoff()
    what = "PRR (any number of reports)" if math.isinf(reports) else f"{reports} report" + ("s" if reports != 1 else "")
    curve.label = f"{spec.mechanism}, {what}"
    if not curve_is_exact(spec):
        curve.label += " (bound from its pure epsilon)"
    return curve


def curve_is_exact(spec) -> bool:
    """Whether :func:`mechanism_loss` gives the exact curve (True) or the sound f_{ε,0} bound (grid numeric specs)."""
    return not isinstance(spec, NumericSpec) or isinstance(spec, _TWO_POINT)


def per_report_gdp_mu(spec) -> float:
    """The smallest μ such that one report of ``spec`` is μ-GDP (for ``ldp spec`` output)."""
    return mechanism_tradeoff(spec, 1).gdp_mu()


def tradeoff_summary(spec) -> dict[str, float]:
    """Per-report privacy summary: ε, the GDP μ bounding one report, and ε∞'s μ for RAPPOR."""
    out = {"epsilon": float(spec.epsilon), "gdp_mu": per_report_gdp_mu(spec), "exact": curve_is_exact(spec)}
    if isinstance(spec, Rappor) and spec.f > 0:
        out["epsilon_inf"] = spec.epsilon_inf
        out["gdp_mu_inf"] = mechanism_tradeoff(spec, math.inf).gdp_mu()
    return out
