"""The longitudinal chains L-GRR, L-OSUE, L-OUE, L-SUE (docs/longitudinal/chains.md).

A memoized first round at ε∞ and a fresh second round, one report ε₁-LDP:
spec :mod:`ldp.specs.longitudinal`, client :mod:`ldp.client.longitudinal`
(keyed-PRF memo, CSPRNG second round), the support counting of GRR's and the
unary encodings' accumulators (a chain's report is one domain value, or d
bits, supporting v with p* = A and q* = B), simulator
:mod:`ldp.simulations.longitudinal`, audit :mod:`ldp.audit_events.longitudinal`.
"""

from __future__ import annotations

from ldp.registry import MechanismDeclaration

_DOCS = (
    "ldp.specs.longitudinal",
    "ldp.chain_math",
    "ldp.client.longitudinal",
    "ldp.simulations.longitudinal",
    "ldp.audit_events.longitudinal",
)


def _chain(name: str, cls: str, accumulator: str, events: str) -> MechanismDeclaration:
    return MechanismDeclaration(
        name,
        f"ldp.specs.longitudinal:{cls}",
        encoder="ldp.client.longitudinal:longitudinal_encoder",
        batch_encoder="ldp.client.longitudinal:chain_batch",
        accumulator=f"ldp.aggregator.accumulators:{accumulator}.for_spec",
        fast_simulator="ldp.simulations.longitudinal:chain_support_counts",
        audit_events=f"ldp.audit_events.longitudinal:{events}",
        docs=_DOCS,
    )


DECLARATIONS = (
    _chain("l-grr", "LGRR", "ValueAccumulator", "ChainValueEvents"),
    _chain("l-osue", "LOSUE", "UnaryAccumulator", "ChainBitEvents"),
    _chain("l-oue", "LOUE", "UnaryAccumulator", "ChainBitEvents"),
    _chain("l-sue", "LSUE", "UnaryAccumulator", "ChainBitEvents"),
)
