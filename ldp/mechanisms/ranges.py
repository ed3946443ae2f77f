"""Range and quantile queries over an ordered domain (docs/range-queries.md).

``range-hierarchy``: a B-ary hierarchy, one sampled level per user reported
by OUE, with Hay et al.'s constrained-inference consistency. ``range-haar``:
Haar wavelet coefficients with Hadamard randomized response (Cormode,
Kulkarni, Srivastava, VLDB 2019). Two names because the two methods' reports
differ in form; the common prefix groups them in every mechanism list.
"""

from __future__ import annotations

from ldp.registry import MechanismDeclaration

_DOCS = ("ldp.specs.ranges", "ldp.client.ranges", "ldp.aggregator.ranges", "ldp.simulations.ranges")

DECLARATIONS = (
    MechanismDeclaration(
        "range-hierarchy",
        "ldp.specs.ranges:RangeHierarchy",
        encoder="ldp.client.ranges:hierarchy_encoder",
        batch_encoder="ldp.client.ranges:hierarchy_batch",
        accumulator="ldp.aggregator.ranges:HierarchyAccumulator.for_spec",
        fast_simulator="ldp.simulations.ranges:hierarchy_simulated",
        audit_events="ldp.audit_events.ranges:HierarchyEvents",
        docs=_DOCS,
    ),
    MechanismDeclaration(
        "range-haar",
        "ldp.specs.ranges:RangeHaar",
        encoder="ldp.client.ranges:haar_encoder",
        batch_encoder="ldp.client.ranges:haar_batch",
        accumulator="ldp.aggregator.ranges:HaarAccumulator.for_spec",
        fast_simulator="ldp.simulations.ranges:haar_simulated",
        audit_events="ldp.audit_events.ranges:HaarEvents",
        docs=_DOCS,
    ),
)
