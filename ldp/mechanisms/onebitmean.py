"""1BitMean (Ding, Kulkarni, Yekhanin, NeurIPS 2017): plain, or memoized with α-point rounding.

The registered name is ``onebitmean`` (the paper's "1BitMean"; a mechanism
name starts with a letter).
"""

from __future__ import annotations

from ldp.registry import MechanismDeclaration

DECLARATIONS = (
    MechanismDeclaration(
        "onebitmean",
        "ldp.specs.onebitmean:OneBitMean",
        encoder="ldp.client.onebitmean:onebitmean_encoder",
        batch_encoder="ldp.client.onebitmean:onebitmean_batch",
        accumulator="ldp.aggregator.numeric:MeanAccumulator.for_spec",
        fast_simulator="ldp.simulations.onebitmean:onebitmean_support_counts",
        audit_events="ldp.audit_events.onebitmean:OneBitMeanEvents",
        docs=("ldp.specs.onebitmean", "ldp.client.onebitmean", "ldp.simulations.onebitmean"),
    ),
)
