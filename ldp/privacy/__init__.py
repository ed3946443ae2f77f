"""Privacy accounting: f-DP / Gaussian DP, exact composition, per-client budgets.

Pure math on NumPy and SciPy (docs/accounting.md). Names are loaded lazily, so
``import ldp.privacy.budget`` (which the client may use) does not import
SciPy; the math modules do.

- :mod:`ldp.privacy.tradeoff` — trade-off functions f_{ε,δ}, G_μ, exact curves.
- :mod:`ldp.privacy.loss` — exact privacy-loss atoms of discrete pairs.
- :mod:`ldp.privacy.conversions` — GDP ⇔ (ε, δ), ε-DP ⇒ GDP, f-DP ⇒ (ε, δ).
- :mod:`ldp.privacy.composition` — basic, advanced, KOV, exact, PLD, GDP, CLT.
- :mod:`ldp.privacy.mechanisms` — Neyman–Pearson curves of the specs.
- :mod:`ldp.privacy.budget` — per-client budget and persistent ledger.
- :mod:`ldp.privacy.plotting` — trade-off plots (matplotlib, lazily).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "TradeoffFunction": "tradeoff",
    "PiecewiseLinearTradeoff": "tradeoff",
    "GaussianTradeoff": "tradeoff",
    "dp_tradeoff": "tradeoff",
    "identity_tradeoff": "tradeoff",
    "PrivacyLoss": "loss",
    "ProductLoss": "loss",
    "gdp_delta": "conversions",
    "gdp_epsilon": "conversions",
    "gdp_mu": "conversions",
    "dp_to_gdp_mu": "conversions",
    "tradeoff_delta": "conversions",
    "tradeoff_epsilon": "conversions",
    "tradeoff_gdp_mu": "conversions",
    "gaussian_sigma": "conversions",
    "basic_composition": "composition",
    "advanced_composition": "composition",
    "kov_closed_form": "composition",
    "kov_delta": "composition",
    "optimal_composition": "composition",
    "exact_rr_composition": "composition",
    "heterogeneous_composition": "composition",
    "heterogeneous_epsilon": "composition",
    "kov_heterogeneous_bound": "composition",
    "gdp_composition": "composition",
    "sound_gdp_epsilon": "composition",
    "clt_composition": "composition",
    "composition_table": "composition",
    "mechanism_loss": "mechanisms",
    "mechanism_tradeoff": "mechanisms",
    "per_report_gdp_mu": "mechanisms",
    "tradeoff_summary": "mechanisms",
    "curve_is_exact": "mechanisms",
    "Budget": "budget",
    "PrivacyLedger": "budget",
    "plot_tradeoffs": "plotting",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ldp.privacy' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ldp.privacy.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
