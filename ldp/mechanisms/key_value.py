"""Key-value data: PCKV in its UE and GRR forms (Gu et al., USENIX Security 2020) and PrivKVM's single round
(Ye et al., IEEE S&P 2019) as the baseline (docs/key-value.md)."""

from __future__ import annotations

from ldp.registry import MechanismDeclaration

_DOCS = ("ldp.specs.key_value", "ldp.client.key_value", "ldp.aggregator.key_value")


def _key_value(name: str, cls: str, stem: str, accumulator: str) -> MechanismDeclaration:
    return MechanismDeclaration(
        name,
        f"ldp.specs.key_value:{cls}",
        encoder=f"ldp.client.key_value:{stem}_encoder",
        batch_encoder=f"ldp.client.key_value:{stem}_batch",
        accumulator=f"ldp.aggregator.key_value:{accumulator}.for_spec",
        # factory(spec, KeyValuePopulation, rng) → the accumulator's counts (ldp.simulations.key_value_fast)
        fast_simulator=f"ldp.simulations.key_value_fast:{stem}_counts",
        audit_events="ldp.audit_events.key_value:KeyValueEvents",
        docs=_DOCS,
    )


DECLARATIONS = (
    _key_value("pckv-ue", "PCKVUE", "pckv_ue", "PCKVUEAccumulator"),
    _key_value("pckv-grr", "PCKVGRR", "pckv_grr", "PCKVGRRAccumulator"),
    _key_value("privkvm", "PrivKVM", "privkvm", "PrivKVMAccumulator"),
)
