"""Aggregation: accumulate randomized reports and turn them into estimates with error bars.

- :func:`make_aggregator` — an empty accumulator for a spec, with ``add``,
  ``add_batch``, associative ``merge`` and ``estimate``.
- Accumulator classes (:mod:`ldp.aggregator.accumulators`), estimate tables
  (:mod:`ldp.aggregator.estimates`), consistency post-processing
  (:mod:`ldp.aggregator.consistency`), local-hashing support counting
  (:mod:`ldp.aggregator.olh`).
"""

from typing import TYPE_CHECKING

from ldp.lazy import lazy_exports

if TYPE_CHECKING:  # the names for type checkers; at run time __getattr__ imports each on first use
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

#: Public name -> the module that defines it (PEP 562: importing ldp.aggregator loads none of them, so a
#: command imports only the modules it uses).
_LAZY = {
    **dict.fromkeys(
        (
            "Accumulator",
            "FrequencyAccumulator",
            "LocalHashingAccumulator",
            "RapporAccumulator",
            "UnaryAccumulator",
            "ValueAccumulator",
            "make_aggregator",
        ),
        "ldp.aggregator.accumulators",
    ),
    **dict.fromkeys(("CONSISTENCY_METHODS", "apply_consistency"), "ldp.aggregator.consistency"),
    **dict.fromkeys(("BitEstimates",), "ldp.aggregator.estimates"),
    **dict.fromkeys(("MeanAccumulator",), "ldp.aggregator.numeric"),
    **dict.fromkeys(("PEMAccumulator",), "ldp.aggregator.pem"),
    **dict.fromkeys(("CMSAccumulator", "HCMSAccumulator"), "ldp.aggregator.sketch"),
    **dict.fromkeys(("SubsetAccumulator",), "ldp.aggregator.subset"),
}

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


__getattr__, __dir__ = lazy_exports(globals(), _LAZY, __all__)
