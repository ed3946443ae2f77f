"""The one registry of mechanism implementations, keyed by spec class.

A mechanism is a spec class (in ``ldp.specs``) plus its implementations in
the other layers, each registered next to its own code:

==================  ==========================  =====================================
role                registered in               called as
==================  ==========================  =====================================
``encoder``         ``ldp.client``              ``factory(spec, state)`` → encoder
``batch_encoder``   ``ldp.client``              ``factory(spec, values, rng, cohorts, indices)`` → ReportBatch
``accumulator``     ``ldp.aggregator``          ``factory(spec, threads)`` → accumulator
``fast_simulator``  ``ldp.simulations``         ``factory(spec, true_counts, rng)`` → support counts
``audit_events``    ``ldp.audit_events``        ``factory()`` → an ``AuditFamily`` (``ldp audit``)
==================  ==========================  =====================================

``ldp`` itself imports none of those layers (the dependency direction of the
architecture); each layer's package imports its implementing modules, so a
lookup made through a layer (``make_encoder``, ``make_aggregator``, ...) sees
every implementation of that layer. Lookups follow the spec class's method
resolution order, so an implementation registered for a base class
(``UnaryEncoding``) serves its subclasses (``SUE``, ``OUE``) unless they
register their own.

A spec with no implementation for a role is a
:class:`~ldp.errors.ParameterError` naming the spec class, its mechanism name
and the role, never a ``KeyError`` deep inside a layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ldp.errors import ParameterError

__all__ = ["ROLES", "has_implementation", "implementation", "implements"]

#: The roles a mechanism can implement, with what each one is for (used in messages).
ROLES: dict[str, str] = {
    "encoder": "client encoder",
    "batch_encoder": "batch encoder",
    "accumulator": "aggregator",
    "fast_simulator": "fast simulator",
    "audit_events": "audit events",
}

_IMPLEMENTATIONS: dict[str, dict[type, Callable[..., Any]]] = {role: {} for role in ROLES}

F = TypeVar("F", bound=Callable[..., Any])


def _table(role: str) -> dict[type, Callable[..., Any]]:
    try:
        return _IMPLEMENTATIONS[role]
    except KeyError:
        raise ParameterError(f"unknown plug-in role {role!r}; expected one of {', '.join(ROLES)}") from None


def implements(spec_class: type, role: str) -> Callable[[F], F]:
    """Decorator: register the decorated factory as ``spec_class``'s implementation of ``role``.

    Raises
    ------
    RuntimeError
        If ``spec_class`` already has a different implementation of ``role``
        (two modules claiming one mechanism is a programming error).
    """
    table = _table(role)

    def register(factory: F) -> F:
        existing = table.get(spec_class)
        if existing is not None and existing is not factory:
            raise RuntimeError(f"{spec_class.__name__} already has a {ROLES[role]}: {existing!r}")
        table[spec_class] = factory
        return factory

    return register


def _find(spec_class: type, role: str) -> Callable[..., Any] | None:
    table = _table(role)
    for klass in spec_class.__mro__:
        if klass in table:
            return table[klass]
    return None


def implementation(spec: Any, role: str) -> Callable[..., Any]:
    """The factory implementing ``role`` for ``spec`` (a spec instance or class).

    Raises
    ------
    ParameterError
        If nothing implements ``role`` for the spec's class.
    """
    spec_class = spec if isinstance(spec, type) else type(spec)
    factory = _find(spec_class, role)
    if factory is None:
        mechanism = getattr(spec_class, "mechanism", None) or spec_class.__name__
        served = ", ".join(sorted(k.__name__ for k in _table(role))) or "none"
        raise ParameterError(
            f"no {ROLES[role]} for {spec_class.__name__} (mechanism {mechanism!r}); "
            f"{ROLES[role]}s exist for: {served}"
        )
    return factory


def has_implementation(spec: Any, role: str) -> bool:
    """True when ``spec`` (an instance or class) has an implementation of ``role``."""
    return _find(spec if isinstance(spec, type) else type(spec), role) is not None
