"""dBitFlip (Ding, Kulkarni, Yekhanin, NeurIPS 2017): histograms of counters, d memoized bits per user."""

from __future__ import annotations

from ldp.registry import MechanismDeclaration

DECLARATIONS = (
    MechanismDeclaration(
        "dbitflip",
        "ldp.specs.dbitflip:DBitFlip",
        encoder="ldp.client.dbitflip:dbitflip_encoder",
        batch_encoder="ldp.client.dbitflip:dbitflip_batch",
        accumulator="ldp.aggregator.dbitflip:DBitFlipAccumulator.for_spec",
        fast_simulator="ldp.simulations.dbitflip:dbitflip_counts",
        audit_events="ldp.audit_events.dbitflip:DBitFlipEvents",
        docs=(
            "ldp.specs.dbitflip",
            "ldp.client.dbitflip",
            "ldp.aggregator.dbitflip",
            "ldp.simulations.dbitflip",
        ),
    ),
)
