"""ldp: local differential privacy, from the device to the estimate.

``ldp`` (this package) holds the mechanism specs, the privacy math, hashing,
the report format and errors. Client encoders live in :mod:`ldp.client`,
decoding in :mod:`ldp.aggregator`, the accuracy harness in
:mod:`ldp.simulations`.
"""

from ldp.errors import BudgetExceededError, LDPError, ParameterError, ReportError, StateError
from ldp.report import Report
from ldp.specs import (
    BLH,
    GRR,
    HR,
    OLH,
    OUE,
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
    best_frequency_mechanism,
    best_numeric_mechanism,
    frequency_spec,
    load_spec,
    numeric_spec,
    variance_table,
)

__version__ = "0.1.0"

__all__ = [
    "BLH",
    "GRR",
    "HR",
    "OLH",
    "OUE",
    "SUE",
    "BinaryRR",
    "BudgetExceededError",
    "Duchi",
    "FrequencySpec",
    "Gaussian",
    "Hybrid",
    "LDPError",
    "Laplace",
    "NumericSpec",
    "ParameterError",
    "Piecewise",
    "Rappor",
    "Report",
    "ReportError",
    "Spec",
    "StateError",
    "StochasticRounding",
    "SubsetSelection",
    "__version__",
    "best_frequency_mechanism",
    "best_numeric_mechanism",
    "frequency_spec",
    "load_spec",
    "numeric_spec",
    "variance_table",
]
