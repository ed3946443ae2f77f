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
    StochasticRounding,
    best_numeric_mechanism,
    numeric_spec,
    Rappor,
    Spec,
    best_frequency_mechanism,
    frequency_spec,
    load_spec,
    variance_table,
)

__version__ = "0.1.0"

__all__ = [
    "LDPError",
    "ParameterError",
    "ReportError",
    "StateError",
    "BudgetExceededError",
    "Report",
    "Spec",
    "FrequencySpec",
    "BinaryRR",
    "GRR",
    "SUE",
    "OUE",
    "OLH",
    "BLH",
    "Rappor",
    "best_frequency_mechanism",
    "frequency_spec",
    "variance_table",
    "load_spec",
    "NumericSpec",
    "Laplace",
    "Duchi",
    "StochasticRounding",
    "Piecewise",
    "Hybrid",
    "Gaussian",
    "numeric_spec",
    "best_numeric_mechanism",
    "__version__",
]
