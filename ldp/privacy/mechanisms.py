"""Exact Neyman–Pearson curves of the mechanism specs (docs/accounting.md#mechanism-curves).

Each spec describes its reports under the worst pair of inputs x, x' as
independent pieces of exact output distributions (``spec.privacy_pieces``,
:mod:`ldp.specs.pairs`); :func:`mechanism_loss` composes their privacy-loss
atoms with no knowledge of the mechanism. What the specs describe:

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

from ldp.errors import AccountingError
from ldp.privacy.loss import DEFAULT_MAX_ATOMS, PrivacyLoss, ProductLoss
from ldp.privacy.tradeoff import PiecewiseLinearTradeoff
from ldp.specs import Rappor

__all__ = [
    "MAX_MECHANISM_REPORTS",
    "curve_is_exact",
    "mechanism_loss",
    "mechanism_tradeoff",
    "per_report_gdp_mu",
    "rappor_bit_loss",
    "tradeoff_summary",
]


def rappor_bit_loss(spec: Rappor, reports: float) -> PrivacyLoss:
    """Atoms of one Bloom bit set by x and not by x', over ``reports`` IRRs of one memoized value."""
    bit = spec.bit_pair(reports)
    return PrivacyLoss(bit.log_p, bit.log_q)


#: Most reports a mechanism's curve is computed for: beyond 4,096 its cost grows with √k
#: (windows, :mod:`ldp.privacy._lattice`) or, for RAPPOR's memoized reports, with k.
MAX_MECHANISM_REPORTS = 10**6


def _check_reports(reports) -> int | float:
    if isinstance(reports, float) and math.isinf(reports) and reports > 0:
        return math.inf
    if isinstance(reports, bool) or not isinstance(reports, (int, np.integer)) or reports < 1:
        raise AccountingError(f"reports must be an integer >= 1 (or inf for RAPPOR), got {reports!r}")
    if reports > MAX_MECHANISM_REPORTS:
        raise AccountingError(
            f"a mechanism's curve is computed for at most {MAX_MECHANISM_REPORTS:.0e} reports (its cost grows "
            f"with the number of reports), got {reports}; use ldp privacy compose --epsilon for the "
            "closed-form bounds"
        )
    return int(reports)


def mechanism_loss(
    spec, reports: float = 1, *, max_atoms: int = DEFAULT_MAX_ATOMS
) -> PrivacyLoss | ProductLoss:
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
    pieces = spec.privacy_pieces(_check_reports(reports))
    loss: PrivacyLoss | ProductLoss | None = None
    for piece in pieces:
        one = PrivacyLoss(piece.log_p, piece.log_q)
        part = one.self_compose(piece.copies, max_atoms=max_atoms) if piece.copies > 1 else one
        loss = part if loss is None else loss.compose(part, max_atoms=max_atoms)
    if loss is None:  # pragma: no cover - every spec describes at least one piece
        raise AccountingError(f"{spec.mechanism} describes no privacy piece")
    return loss


def mechanism_tradeoff(spec, reports: float = 1) -> PiecewiseLinearTradeoff:
    """The trade-off curve of ``spec`` (see :func:`mechanism_loss`), labelled for plots."""
    curve = mechanism_loss(spec, reports).tradeoff()
    what = (
        "PRR (any number of reports)"
        if math.isinf(reports)
        else f"{reports} report" + ("s" if reports != 1 else "")
    )
    curve.label = f"{spec.mechanism}, {what}"
    if not curve_is_exact(spec):
        curve.label += " (bound from its pure epsilon)"
    return curve


def curve_is_exact(spec) -> bool:
    """Whether :func:`mechanism_loss` gives the exact curve (True) or a sound bound (the grid numeric specs' f_{ε,0})."""
    return spec.exact_privacy_curve


def per_report_gdp_mu(spec) -> float:
    """The smallest μ such that one report of ``spec`` is μ-GDP (for ``ldp spec`` output)."""
    return mechanism_tradeoff(spec, 1).gdp_mu()


def tradeoff_summary(spec) -> dict[str, float]:
    """Per-report privacy summary: ε, the GDP μ bounding one report, and ε∞'s μ for RAPPOR."""
    out = {"epsilon": float(spec.epsilon), "gdp_mu": per_report_gdp_mu(spec), "exact": curve_is_exact(spec)}
    if spec.memoized and math.isfinite(spec.epsilon_inf):
        out["epsilon_inf"] = spec.epsilon_inf
        out["gdp_mu_inf"] = mechanism_tradeoff(spec, math.inf).gdp_mu()
    return out
