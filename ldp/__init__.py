"""ldp: local differential privacy, from the device to the estimate.

The public surface of ``ldp`` is ``__all__``, listed here by job; each name has
its own ``help()`` and a docstring example. Client encoders live in
:mod:`ldp.client`, decoding in :mod:`ldp.aggregator`, the accuracy harness in
:mod:`ldp.simulations`, the privacy accountant in :mod:`ldp.privacy`. The
modules ``help(ldp)`` lists under PACKAGE CONTENTS (pydoc lists every file of a
package) are the implementation: import from the names below and from those
subpackages.

Building and choosing a spec

    load_spec                 a spec from a JSON file, JSON text or a dict
    frequency_spec            the frequency spec of a mechanism name ("auto": the best)
    numeric_spec              the numeric spec of a mechanism name ("auto": the best)
    best_frequency_mechanism  the frequency oracle of least variance at (epsilon, d)
    best_numeric_mechanism    the numeric mechanism of least worst-case variance
    variance_table            the variance of every applicable frequency oracle

Frequency oracles (one value of a known domain per user)

    GRR, BinaryRR             (generalized) randomized response
    SUE, OUE                  symmetric and optimized unary encoding
    OLH, BLH                  optimized and binary local hashing
    HR                        Hadamard response
    SubsetSelection           a random subset holding the value
    CMS, HCMS                 Apple's (Hadamard) count-mean sketch
    Rappor                    RAPPOR: Bloom filter, permanent and instantaneous responses

Heavy hitters (strings of an unknown domain)

    PEM                       prefix extending method
    TreeHist                  a binary prefix tree walked with a threshold

Numeric mechanisms (a mean of values in [low, high])

    Duchi, StochasticRounding, Piecewise, Hybrid, Laplace, Gaussian

Base classes

    Spec, FrequencySpec, NumericSpec

Reports

    Report                    one randomized report, in JSON, CSV and binary form

Errors (catch LDPError for any of them)

    LDPError                  the base of every error ldp raises on purpose
    ParameterError            a bad parameter, option or value; its subclasses say which:
    SpecError                 ... a mechanism spec
    InputError                ... a value, row or data file
    EstimateError             ... reports that cannot support the estimate asked for
    AccountingError           ... a question the privacy accountant refuses
    ReportError               a malformed report, or one of another spec
    BudgetError               a client's privacy budget (BudgetExceededError: spent)
    BudgetExceededError       an encode would spend more than is left
    StateError                a client state file
    StoreError                the collector's store

The package imports only its errors when loaded: every other name of
``__all__`` (the specs, :class:`Report`) is imported on first use, so the
``ldp`` command (``ldp --help``) starts without loading numpy.
"""

from __future__ import annotations

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
from ldp.lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(globals(), _LAZY, __all__)
