"""Fast path of multi-attribute records: each attribute's counts drawn given the true per-attribute counts.

``multi_attribute_counts(spec, true_counts, rng)`` is the ``fast_simulator``
that ``multi-attribute`` declares: ``true_counts`` holds, per attribute, the
number of records with each of its domain values (every attribute
categorical, with a fast simulator of its own), and the result is the
:class:`~ldp.aggregator.multiattr.MultiAttributeAccumulator` the real
collection would leave, in time independent of n.

Exactness (the encoders: :mod:`ldp.client.multiattr`):

``spl``
    Every record reports every attribute through its own mechanism: each
    attribute's counts are its mechanism's fast simulator on its true
    counts (exact per attribute, as that simulator is).
``smp``
    A record reports attribute j with probability k/d, independently of its
    values: the reporters of value v are Bin(n_{j,v}, k/d), then the
    attribute's fast simulator runs on them. Each attribute's counts have
    their exact distribution; the dependence *between* attributes' reporter
    counts (each record reports exactly k) is not reproduced, so per-attribute
    errors are exact and joint ones are drawn as independent.
``rsfd-grr``
    Attribute j of a record is its GRR report with probability 1/d, else a
    uniform fake value: GRR's fast simulator on Bin(n_{j,v}, 1/d) reporters
    plus one multinomial of the others over the k_j values. Exact per
    attribute, with the same caveat between attributes.
``rsfd-{sue,oue}-{z,r}``
    The UE fast simulator (bit counts) on Bin(n_{j,v}, 1/d) reporters, plus
    per bit v a Bin(n − R_j, φ) for the n − R_j fake reports' bits set, φ the
    fake support (:func:`~ldp.specs.multiattr.rsfd_fake_support`). Each
    bit's count has its exact distribution (``-z``: the bits of a fake report
    are independent, so the counts are exact jointly; ``-r``: a fake report's
    bits share its random value, a dependence between values not reproduced).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.errors import InputError, ParameterError
from ldp.specs.multiattr import MultiAttribute, rsfd_fake_support

__all__ = ["has_fast_path", "multi_attribute_counts"]


def has_fast_path(spec: MultiAttribute) -> bool:
    """Whether every attribute is categorical with a fast simulator of its own (else: the real encoders)."""
    from ldp.plugins import has_implementation

    return all(
        hasattr(attribute, "domain_size") and has_implementation(attribute, "fast_simulator")
        for attribute in spec.attributes
    )


def _checked(spec: MultiAttribute, true_counts: Sequence[Any]) -> tuple[list[np.ndarray], int]:
    if len(true_counts) != spec.dimension:
        raise InputError(f"true_counts holds {len(true_counts)} attributes, the spec {spec.dimension}")
    counts, totals = [], set()
    for name, attribute, given in zip(spec.names, spec.attributes, true_counts, strict=True):
        size = getattr(attribute, "domain_size", None)
        if size is None:
            raise ParameterError(
                f"multi-attribute: attribute {name!r} ({attribute.mechanism}) is numeric; "
                "records with a numeric attribute have no fast simulator (use mode faithful)"
            )
        array = np.asarray(given, dtype=np.int64)
        if array.shape != (size,) or (array.size and array.min() < 0):
            raise InputError(
                f"attribute {name!r}: true_counts must be {size} counts >= 0, got shape {array.shape}"
            )
        counts.append(array)
        totals.add(int(array.sum()))
    if len(totals) != 1:
        raise InputError(f"every attribute's true_counts must sum to the same n, got {sorted(totals)}")
    return counts, totals.pop()


def multi_attribute_counts(spec: MultiAttribute, true_counts: Sequence[Any], rng: np.random.Generator) -> Any:
    """The accumulator of n records whose attribute j has ``true_counts[j][v]`` records of value v (module docstring)."""
    from ldp.aggregator import make_aggregator
    from ldp.aggregator.multiattr import MultiAttributeAccumulator
    from ldp.plugins import implementation

    counts, n = _checked(spec, true_counts)
    d = spec.dimension
    if spec.rsfd:
        parts = []
        for attribute, held in zip(spec.attributes, counts, strict=True):
            reporters = rng.binomial(held, 1.0 / d)
            size = attribute.domain_size  # type: ignore[attr-defined]
            others = n - int(reporters.sum())
            if spec.method == "rsfd-grr":
                fake = rng.multinomial(others, np.full(size, 1.0 / size))
            else:
                phi = rsfd_fake_support(spec.method, attribute.p_star, attribute.q_star, size)  # type: ignore[attr-defined]
                fake = rng.binomial(others, phi, size)
            parts.append(implementation(attribute, "fast_simulator")(attribute, reporters, rng) + fake)
        return MultiAttributeAccumulator.from_parts(spec, parts, n)
    accumulators = []
    for attribute, held in zip(spec.attributes, counts, strict=True):
        reporters = held if spec.method == "spl" else rng.binomial(held, spec.sample / d)
        drawn = implementation(attribute, "fast_simulator")(attribute, reporters, rng)
        if isinstance(drawn, np.ndarray):  # support counts: the attribute's own accumulator holds them
            kind: Any = type(make_aggregator(attribute))  # a FrequencyAccumulator
            drawn = kind.from_counts(attribute, drawn, int(reporters.sum()))
        accumulators.append(drawn)
    return MultiAttributeAccumulator.from_parts(spec, accumulators, n)
