"""LOLOHA, longitudinal local hashing (docs/longitudinal/loloha.md): its declaration."""

from ldp.registry import MechanismDeclaration

DECLARATIONS = (
    MechanismDeclaration(
        "loloha",
        "ldp.specs.loloha:LOLOHA",
        encoder="ldp.client.loloha:loloha_encoder",
        batch_encoder="ldp.client.loloha:loloha_batch",
        accumulator="ldp.aggregator.loloha:LolohaAccumulator.for_spec",
        fast_simulator="ldp.simulations.loloha:loloha_support_counts",
        audit_events="ldp.audit_events.loloha:LolohaEvents",
        docs=(
            "ldp.specs.loloha",
            "ldp.loloha_math",
            "ldp.client.loloha",
            "ldp.aggregator.loloha",
            "ldp.simulations.loloha",
        ),
    ),
)
