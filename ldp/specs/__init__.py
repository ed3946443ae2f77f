"""Mechanism specs: frozen, validated parameters of every mechanism."""

from typing import TYPE_CHECKING

from ldp.lazy import lazy_exports

if TYPE_CHECKING:  # the names for type checkers; at run time __getattr__ imports each on first use
    from ldp.specs.base import SPEC_FORMAT, Spec, load_spec, spec_class, spec_from_dict
    from ldp.specs.frequency import (
        BLH,
        GRR,
        OLH,
        OUE,
        SUE,
        BinaryRR,
        FrequencySpec,
        LocalHashing,
        UnaryEncoding,
    )
    from ldp.specs.hadamard import HR
    from ldp.specs.heavy_hitters import HEAVY_HITTER_MECHANISMS, PEM, HeavyHitterSpec, PrefixHashing, TreeHist
    from ldp.specs.numeric import (
        NUMERIC_MECHANISMS,
        Duchi,
        Gaussian,
        Hybrid,
        Laplace,
        NumericSpec,
        Piecewise,
        StochasticRounding,
        best_numeric_mechanism,
        numeric_spec,
    )
    from ldp.specs.rappor import Rappor
    from ldp.specs.selection import (
        FREQUENCY_MECHANISMS,
        best_frequency_mechanism,
        frequency_spec,
        variance_table,
    )
    from ldp.specs.sketch import CMS, HCMS
    from ldp.specs.subset import SubsetSelection

#: Public name -> the module that defines it (PEP 562: importing ldp.specs loads none of them, so a
#: command imports only the modules it uses).
_LAZY = {
    **dict.fromkeys(("SPEC_FORMAT", "Spec", "load_spec", "spec_class", "spec_from_dict"), "ldp.specs.base"),
    **dict.fromkeys(
        ("BLH", "GRR", "OLH", "OUE", "SUE", "BinaryRR", "FrequencySpec", "LocalHashing", "UnaryEncoding"),
        "ldp.specs.frequency",
    ),
    **dict.fromkeys(("HR",), "ldp.specs.hadamard"),
    **dict.fromkeys(
        ("HEAVY_HITTER_MECHANISMS", "PEM", "HeavyHitterSpec", "PrefixHashing", "TreeHist"),
        "ldp.specs.heavy_hitters",
    ),
    **dict.fromkeys(
        (
            "NUMERIC_MECHANISMS",
            "Duchi",
            "Gaussian",
            "Hybrid",
            "Laplace",
            "NumericSpec",
            "Piecewise",
            "StochasticRounding",
            "best_numeric_mechanism",
            "numeric_spec",
        ),
        "ldp.specs.numeric",
    ),
    **dict.fromkeys(("Rappor",), "ldp.specs.rappor"),
    **dict.fromkeys(
        ("FREQUENCY_MECHANISMS", "best_frequency_mechanism", "frequency_spec", "variance_table"),
        "ldp.specs.selection",
    ),
    **dict.fromkeys(("CMS", "HCMS"), "ldp.specs.sketch"),
    **dict.fromkeys(("SubsetSelection",), "ldp.specs.subset"),
}

__all__ = [
    "BLH",
    "CMS",
    "FREQUENCY_MECHANISMS",
    "GRR",
    "HCMS",
    "HEAVY_HITTER_MECHANISMS",
    "HR",
    "NUMERIC_MECHANISMS",
    "OLH",
    "OUE",
    "PEM",
    "SPEC_FORMAT",
    "SUE",
    "BinaryRR",
    "Duchi",
    "FrequencySpec",
    "Gaussian",
    "HeavyHitterSpec",
    "Hybrid",
    "Laplace",
    "LocalHashing",
    "NumericSpec",
    "Piecewise",
    "PrefixHashing",
    "Rappor",
    "Spec",
    "StochasticRounding",
    "SubsetSelection",
    "TreeHist",
    "UnaryEncoding",
    "best_frequency_mechanism",
    "best_numeric_mechanism",
    "frequency_spec",
    "load_spec",
    "numeric_spec",
    "spec_class",
    "spec_from_dict",
    "variance_table",
]


__getattr__, __dir__ = lazy_exports(globals(), _LAZY, __all__)
