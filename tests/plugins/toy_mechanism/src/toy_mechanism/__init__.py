"""A toy mechanism in its own package: k-ary randomized response whose reports carry the value's index.

The declaration is the only thing ``ldp`` reads: the package's
``pyproject.toml`` names it in the ``ldp.mechanisms`` entry-point group, and
each layer is imported only when it is used (the client never imports the
aggregator module).
"""

from ldp.registry import MechanismDeclaration

DECLARATION = MechanismDeclaration(
    name="toy-rr",
    spec="toy_mechanism.spec:ToyRR",
    encoder="toy_mechanism.client:toy_encoder",
    batch_encoder="toy_mechanism.client:toy_batch",
    accumulator="toy_mechanism.aggregator:ToyAccumulator.for_spec",
    # The reports are distributed as GRR's (only their wire form differs), so GRR's exact simulator serves.
    fast_simulator="ldp.simulations.fast:grr_support_counts",
    audit_events="toy_mechanism.audit:ToyEvents",
)
