"""ldp: local differential privacy, from the device to the estimate.

``ldp`` (this package) holds the mechanism specs, the privacy math, hashing,
the report format and errors. Client encoders live in :mod:`ldp.client`,
decoding in :mod:`ldp.aggregator`, the accuracy harness in
:mod:`ldp.simulations`.

The package imports only its errors when loaded: every other name of
``__all__`` (the specs, :class:`Report`) is imported on first use, so the
``ldp`` command (``ldp --help``) starts without loading numpy.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from ldp.errors import (
    AccountingError,
    BudgetError,
    BudgetExceededError,
    EstimateError,
    InputError,
    LDPError,
    ParameterError,
    ReportError,
    SpecError,
    StateError,
    StoreError,
)

__version__ = "0.1.0"

__all__ = [
    "BLH",
    "CMS",
    "GRR",
    "HCMS",
    "HR",
    "OLH",
    "OUE",
    "PEM",
    "SUE",
    "AccountingError",
    "BinaryRR",
    "BudgetError",
    "BudgetExceededError",
    "Duchi",
    "EstimateError",
    "FrequencySpec",
    "Gaussian",
    "Hybrid",
    "InputError",
    "LDPError",
    "Laplace",
    "NumericSpec",
    "ParameterError",
    "Piecewise",
    "Rappor",
    "Report",
    "ReportError",
    "Spec",
    "SpecError",
    "StateError",
    "StochasticRounding",
    "StoreError",
    "SubsetSelection",
    "TreeHist",
    "__version__",
    "best_frequency_mechanism",
    "best_numeric_mechanism",
    "frequency_spec",
    "load_spec",
    "numeric_spec",
    "variance_table",
]

#: The names imported on first use: name -> the module that defines it (every other name is a spec's).
_LAZY = {name: "ldp.specs" for name in __all__ if name not in globals()} | {"Report": "ldp.report"}

if TYPE_CHECKING:  # the names for type checkers and IDEs; at run time __getattr__ imports them on first use
    from ldp.report import Report
    from ldp.specs import (
        BLH,
        CMS,
        GRR,
        HCMS,
        HR,
        OLH,
        OUE,
        PEM,
        SUE,
        BinaryRR,
        Duchi,
        FrequencySpec,
        Gaussian,
        Hybrid,
        Laplace,
        NumericSpec,
        Piecewise,
        Rappor,
        Spec,
        StochasticRounding,
        SubsetSelection,
        TreeHist,
        best_frequency_mechanism,
        best_numeric_mechanism,
        frequency_spec,
        load_spec,
        numeric_spec,
        variance_table,
    )


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"ldp.{name}") is not None:
        value = importlib.import_module(f"ldp.{name}")  # ``import ldp; ldp.specs`` works as when eager
    else:
        raise AttributeError(f"module 'ldp' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
