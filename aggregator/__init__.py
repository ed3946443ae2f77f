"""Aggregation: accumulate randomized reports and turn them into estimates with error bars.

- :func:`make_aggregator` — an empty accumulator for a spec, with ``add``,
  ``add_batch``, associative ``merge`` and ``estimate``.
- Accumulator classes (:mod:`ldp.aggregator.accumulators`), estimate tables
  (:mod:`ldp.aggregator.estimates`), consistency post-processing
  (:mod:`ldp.aggregator.consistency`), local-hashing support counting
  (:mod:`ldp.aggregator.olh`).
"""

from ldp.aggregator.accumulators import (
    Accumulator,
    FrequencyAccumulator,
    LocalHashingAccumulator,
    RapporAccumulator,
    UnaryAccumulator,
    ValueAccumulator,
    make_aggregator,
)
from ldp.aggregator.consistency import CONSISTENCY_METHODS, apply_consistency
from ldp.aggregator.estimates import BitEstimates
from ldp.aggregator.numeric import MeanAccumulator
from ldp.aggregator.pem import PEMAccumulator
from ldp.aggregator.sketch import CMSAccumulator, HCMSAccumulator
from ldp.aggregator.subset import SubsetAccumulator

__all__ = [
    "CONSISTENCY_METHODS",
    "Accumulator",
    "BitEstimates",
    "CMSAccumulator",
    "FrequencyAccumulator",
    "HCMSAccumulator",
    "LocalHashingAccumulator",
    "MeanAccumulator",
    "PEMAccumulator",
    "RapporAccumulator",
    "SubsetAccumulator",
    "UnaryAccumulator",
    "ValueAccumulator",
    "apply_consistency",
    "make_aggregator",
]
