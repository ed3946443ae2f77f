"""Multi-attribute records (SMP, SPL, RS+FD[GRR]): several attributes under one ε (docs/multi-attribute.md).

Each attribute is a registered frequency oracle or numeric mechanism; the
record's report schema is built per spec instance from theirs
(:class:`ldp.report_schema.PartField`).
"""

from __future__ import annotations

from ldp.registry import MechanismDeclaration

DECLARATIONS = (
    MechanismDeclaration(
        "multi-attribute",
        "ldp.specs.multiattr:MultiAttribute",
        encoder="ldp.client.multiattr:multi_attribute_encoder",
        batch_encoder="ldp.client.multiattr:multi_attribute_batch",
        accumulator="ldp.aggregator.multiattr:MultiAttributeAccumulator.for_spec",
        fast_simulator="ldp.simulations.multiattr_fast:multi_attribute_counts",
        audit_events="ldp.audit_events.records:RecordEvents",
        docs=("ldp.specs.multiattr", "ldp.client.multiattr", "ldp.aggregator.multiattr"),
    ),
)
