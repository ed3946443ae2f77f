"""Aggregation: accumulate randomized reports and turn them into estimates with error bars.

- :func:`make_aggregator` — an empty accumulator for a spec, with ``add``,
  ``add_batch``, associative ``merge`` and ``estimate``.
- Accumulator classes (:mod:`ldp.aggregator.accumulators`), estimate tables
  (:mod:`ldp.aggregator.estimates`), consistency post-processing
  (:mod:`ldp.aggregator.consistency`), local-hashing support counting
  (:mod:`ldp.aggregator.olh`).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Public name -> the module defining it, imported on first use (PEP 562), so that importing a
#: submodule (``ldp encode`` uses :mod:`ldp.aggregator.writers`) does not import pandas and scipy.
_HOMES = {
    "Accumulator": "accumulators",
    "FrequencyAccumulator": "accumulators",
    "LocalHashingAccumulator": "accumulators",
    "RapporAccumulator": "accumulators",
    "UnaryAccumulator": "accumulators",
    "ValueAccumulator": "accumulators",
    "make_aggregator": "accumulators",
    "CONSISTENCY_METHODS": "consistency",
    "apply_consistency": "consistency",
    "BitEstimates": "estimates",
    "MeanAccumulator": "numeric",
}

__all__ = [
    "CONSISTENCY_METHODS",
    "Accumulator",
    "BitEstimates",
    "FrequencyAccumulator",
    "LocalHashingAccumulator",
    "MeanAccumulator",
    "RapporAccumulator",
    "UnaryAccumulator",
    "ValueAccumulator",
    "apply_consistency",
    "make_aggregator",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
