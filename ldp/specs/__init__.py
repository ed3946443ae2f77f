"""Mechanism specs: frozen, validated parameters of every mechanism."""

from ldp.specs.base import SPEC_FORMAT, Spec, load_spec, spec_class, spec_from_dict
from ldp.specs.frequency import BLH, GRR, OLH, OUE, SUE, BinaryRR, FrequencySpec, LocalHashing, UnaryEncoding
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
from ldp.specs.selection import FREQUENCY_MECHANISMS, best_frequency_mechanism, frequency_spec, variance_table
from ldp.specs.sketch import CMS, HCMS
from ldp.specs.subset import SubsetSelection

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
