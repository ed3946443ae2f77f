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
- :mod:`ldp.privacy.planning` — lifetime bounds and how many reports fit a budget.
- :mod:`ldp.privacy.plotting` — trade-off plots (matplotlib, lazily).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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
    "ReportPlan": "planning",
    "lifetime_epsilon": "planning",
    "memo_keys_used": "planning",
    "plan_reports": "planning",
    "plot_tradeoffs": "plotting",
}

__all__ = [
    "Budget",
    "GaussianTradeoff",
    "PiecewiseLinearTradeoff",
    "PrivacyLedger",
    "PrivacyLoss",
    "ProductLoss",
    "ReportPlan",
    "TradeoffFunction",
    "advanced_composition",
    "basic_composition",
    "clt_composition",
    "composition_table",
    "curve_is_exact",
    "dp_to_gdp_mu",
    "dp_tradeoff",
    "exact_rr_composition",
    "gaussian_sigma",
    "gdp_composition",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "heterogeneous_composition",
    "heterogeneous_epsilon",
    "identity_tradeoff",
    "kov_closed_form",
    "kov_delta",
    "kov_heterogeneous_bound",
    "lifetime_epsilon",
    "mechanism_loss",
    "mechanism_tradeoff",
    "memo_keys_used",
    "optimal_composition",
    "per_report_gdp_mu",
    "plan_reports",
    "plot_tradeoffs",
    "sound_gdp_epsilon",
    "tradeoff_delta",
    "tradeoff_epsilon",
    "tradeoff_gdp_mu",
    "tradeoff_summary",
]

if TYPE_CHECKING:  # the names for type checkers and IDEs; at run time __getattr__ imports them on first use
    from ldp.privacy.budget import Budget, PrivacyLedger
    from ldp.privacy.composition import (
        advanced_composition,
        basic_composition,
        clt_composition,
        composition_table,
        exact_rr_composition,
        gdp_composition,
        heterogeneous_composition,
        heterogeneous_epsilon,
        kov_closed_form,
        kov_delta,
        kov_heterogeneous_bound,
        optimal_composition,
        sound_gdp_epsilon,
    )
    from ldp.privacy.conversions import (
        dp_to_gdp_mu,
        gaussian_sigma,
        gdp_delta,
        gdp_epsilon,
        gdp_mu,
        tradeoff_delta,
        tradeoff_epsilon,
        tradeoff_gdp_mu,
    )
    from ldp.privacy.loss import PrivacyLoss, ProductLoss
    from ldp.privacy.mechanisms import (
        curve_is_exact,
        mechanism_loss,
        mechanism_tradeoff,
        per_report_gdp_mu,
        tradeoff_summary,
    )
    from ldp.privacy.planning import ReportPlan, lifetime_epsilon, memo_keys_used, plan_reports
    from ldp.privacy.plotting import plot_tradeoffs
    from ldp.privacy.tradeoff import (
        GaussianTradeoff,
        PiecewiseLinearTradeoff,
        TradeoffFunction,
        dp_tradeoff,
        identity_tradeoff,
    )


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ldp.privacy' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ldp.privacy.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
