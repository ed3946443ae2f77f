"""Choosing a frequency oracle by theory (docs/mechanisms.md#choosing).

Wang et al.'s rule "GRR iff d < 3e^ε + 2" compares GRR with OUE/OLH at
small frequencies. :func:`best_frequency_mechanism` generalizes it: it builds
each candidate spec with its exact, calibrated probabilities (integer g for
OLH included) and picks the smallest Var*; ties go to the smaller report
(``spec.report_bits``), then to the first in the order of
:data:`FREQUENCY_MECHANISMS` (each class's ``report_size_rank``).

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. USENIX Security 2017, §5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ldp.errors import SpecError
from ldp.specs.base import MechanismView
from ldp.specs.frequency import FrequencySpec
from ldp.specs.validation import check_epsilon, check_int

__all__ = ["FREQUENCY_MECHANISMS", "best_frequency_mechanism", "frequency_spec", "variance_table"]

#: Frequency oracle names in order of report size (cheapest first): a live view of the spec registry.
FREQUENCY_MECHANISMS: Mapping[str, type[FrequencySpec]] = MechanismView(
    FrequencySpec, order=lambda cls: cls.report_size_rank
)


def frequency_spec(mechanism: str, domain: Iterable[Any], epsilon: float) -> FrequencySpec:
    """Build the frequency spec called ``mechanism`` (``"auto"`` picks the best).

    Examples
    --------
    >>> from ldp import frequency_spec
    >>> frequency_spec("oue", ["a", "b", "c"], 1.0).mechanism
    'oue'
    >>> frequency_spec("auto", range(64), 1.0).mechanism  # the smallest Var* at ε = 1 over 64 values
    'ss'
    """
    domain = tuple(domain)
    name = mechanism.strip().lower().replace("_", "-")
    if name == "auto":
        name = best_frequency_mechanism(epsilon, len(domain))
    try:
        cls = FREQUENCY_MECHANISMS[name]
    except KeyError:
        known = ", ".join([*FREQUENCY_MECHANISMS, "auto"])
        raise SpecError(f"unknown frequency mechanism {mechanism!r}; known: {known}") from None
    return cls(domain=domain, epsilon=epsilon)


def variance_table(
    epsilon: float, domain_size: int, *, max_report_bits: int | None = None
) -> dict[str, float]:
    """Var* of every applicable frequency oracle at (ε, d).

    An oracle is applicable when ε and d are within its limits (:mod:`ldp.specs.limits`),
    it draws fresh randomness per report (a memoizing longitudinal chain is
    chosen for its lifetime bound, docs/longitudinal/index.md, not here) and, when ``max_report_bits`` is given, its reports carry at most that many
    bits (:attr:`~ldp.specs.base.Spec.report_bits`); :class:`SpecError`
    names the limits when none is.

    Examples
    --------
    >>> from ldp import variance_table
    >>> table = variance_table(1.0, 64)
    >>> min(table, key=table.get), round(table["oue"], 3)
    ('ss', 3.683)
    """
    epsilon = check_epsilon(epsilon)
    d = check_int(domain_size, "domain_size", minimum=2)
    if max_report_bits is not None:
        max_report_bits = check_int(max_report_bits, "max_report_bits", minimum=1)
    domain = range(d)
    table = {}
    smallest: tuple[int, str] | None = None
    for name, cls in FREQUENCY_MECHANISMS.items():
        if (name == "binary-rr" and d != 2) or epsilon > cls.max_epsilon or d > cls.max_domain_size:
            continue
        if (
            cls.memoized
        ):  # a longitudinal chain (docs/longitudinal/index.md) is chosen for repeated reports, not here
            continue
        spec = cls(domain=domain, epsilon=epsilon)
        if max_report_bits is not None and spec.report_bits > max_report_bits:
            if smallest is None or spec.report_bits < smallest[0]:
                smallest = (spec.report_bits, name)
            continue
        table[name] = spec.variance_star
    if not table and smallest is not None:
        raise SpecError(
            f"auto: no frequency oracle's reports fit in {max_report_bits} bits at epsilon={epsilon:.10g} over "
            f"{d:,} values; the smallest is {smallest[1]} with {smallest[0]} bits"
        )
    if not table:
        limits = ", ".join(
            f"{name} (epsilon <= {cls.max_epsilon:g}, {cls.max_domain_size:,} values)"
            for name, cls in FREQUENCY_MECHANISMS.items()
            if name != "binary-rr"
        )
        raise SpecError(
            f"auto: no frequency oracle supports epsilon={epsilon:.10g} over {d:,} values; "
            f"the limits are {limits}"
        )
    return table


def best_frequency_mechanism(epsilon: float, domain_size: int, *, max_report_bits: int | None = None) -> str:
    """Name of the frequency oracle with the smallest Var* at (ε, d).

    Ties (within 1e-12 relative) go to the smaller report
    (:attr:`~ldp.specs.base.Spec.report_bits`), then to the first in the
    order of :data:`FREQUENCY_MECHANISMS`. BinaryRR is reported as ``"grr"`` (same
    mechanism) so the answer works for any two-value domain. With
    ``max_report_bits``, only oracles whose reports carry at most that many
    bits compete (``ldp spec auto --max-report-bits``).

    Examples
    --------
    >>> from ldp import best_frequency_mechanism
    >>> best_frequency_mechanism(1.0, 64), best_frequency_mechanism(8.0, 4)
    ('ss', 'grr')
    """
    table = variance_table(epsilon, domain_size, max_report_bits=max_report_bits)
    table.pop("binary-rr", None)
    best = min(table.values())
    tied = [name for name in FREQUENCY_MECHANISMS if name in table and table[name] <= best * (1 + 1e-12)]
    if len(tied) == 1:
        return tied[0]
    domain = range(domain_size)  # the smaller report among the tied (list order breaks a tie of sizes)
    return min(tied, key=lambda name: FREQUENCY_MECHANISMS[name](domain=domain, epsilon=epsilon).report_bits)
