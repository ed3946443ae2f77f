"""Lookups of mechanism implementations by spec, through the one declarative registry.

Every mechanism is declared once, in :mod:`ldp.registry` (built-in ones) or
by an installed package through the ``ldp.mechanisms`` entry-point group:
its spec class and its implementation of each role, by ``"module:attribute"``
path. A lookup imports only the module of the implementation asked for, so
``make_encoder`` never imports aggregator or simulation code:

==================  ==========================  =====================================
role                usually lives in            called as
==================  ==========================  =====================================
``encoder``         ``ldp.client``              ``factory(spec, state)`` → encoder
``batch_encoder``   ``ldp.client``              ``factory(spec, values, rng, cohorts, indices)`` → ReportBatch
``accumulator``     ``ldp.aggregator``          ``factory(spec, threads)`` → accumulator
``fast_simulator``  ``ldp.simulations``         ``factory(spec, true_counts, rng)`` → support counts
``audit_events``    ``ldp.audit_events``        ``factory()`` → an ``AuditFamily`` (``ldp audit``)
==================  ==========================  =====================================

Lookups follow the spec class's method resolution order: a subclass of a
declared spec class (``class FasterOUE(OUE)``) is served by the
implementations declared for its base unless it has its own.
:func:`implements` registers an implementation in this process only (tests,
notebooks); a package declares its mechanisms through the entry point.

A spec with no implementation for a role is a
:class:`~ldp.errors.SpecError` naming the spec class, its mechanism name
and the role, never a ``KeyError`` deep inside a layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ldp.errors import ParameterError, SpecError
from ldp.registry import MechanismDeclaration, declaration, declarations

__all__ = ["ROLES", "declaration_of", "has_implementation", "implementation", "implements"]

#: The roles a mechanism can implement, with what each one is for (used in messages).
ROLES: dict[str, str] = {
    "encoder": "client encoder",
    "batch_encoder": "batch encoder",
    "accumulator": "aggregator",
    "fast_simulator": "fast simulator",
    "audit_events": "audit events",
}

#: Implementations registered in this process with :func:`implements`, by role and spec class.
_IMPLEMENTATIONS: dict[str, dict[type, Callable[..., Any]]] = {role: {} for role in ROLES}

F = TypeVar("F", bound=Callable[..., Any])


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ParameterError(f"unknown plug-in role {role!r}; expected one of {', '.join(ROLES)}")


def declaration_of(spec_class: type) -> MechanismDeclaration | None:
    """The declaration whose spec class is exactly ``spec_class`` (found by its ``mechanism`` name), or None."""
    name = spec_class.__dict__.get("mechanism")
    if not isinstance(name, str) or not name:
        return None
    found = declaration(name)
    if found is None or found.load_spec() is not spec_class:
        return None
    return found


def implements(spec_class: type, role: str) -> Callable[[F], F]:
    """Decorator: register the decorated factory as ``spec_class``'s implementation of ``role`` in this process.

    For tests and interactive use; a mechanism shipped in a package is
    declared once in :mod:`ldp.registry` or through its entry point.

    Raises
    ------
    RuntimeError
        If ``spec_class`` already has a different implementation of ``role``
        (two pieces of code claiming one mechanism is a programming error).
    """
    _check_role(role)
    table = _IMPLEMENTATIONS[role]

    def register(factory: F) -> F:
        existing = table.get(spec_class)
        declared = declaration_of(spec_class)
        if existing is None and declared is not None:
            existing = declared.load(role)
        if existing is not None and existing is not factory:
            raise RuntimeError(f"{spec_class.__name__} already has a {ROLES[role]}: {existing!r}")
        table[spec_class] = factory
        return factory

    return register


def _find(spec_class: type, role: str) -> Callable[..., Any] | None:
    _check_role(role)
    table = _IMPLEMENTATIONS[role]
    for klass in spec_class.__mro__:
        if klass in table:
            return table[klass]
        declared = declaration_of(klass)
        if declared is not None and declared.path(role) is not None:
            factory: Callable[..., Any] = declared.load(role)
            return factory
    return None


def _has(spec_class: type, role: str) -> bool:
    _check_role(role)
    for klass in spec_class.__mro__:
        if klass in _IMPLEMENTATIONS[role]:
            return True
        declared = declaration_of(klass)
        if declared is not None and declared.path(role) is not None:
            return True
    return False


def implementation(spec: Any, role: str) -> Callable[..., Any]:
    """The factory implementing ``role`` for ``spec`` (a spec instance or class), imported on first use.

    Raises
    ------
    SpecError
        If nothing implements ``role`` for the spec's class.
    """
    spec_class = spec if isinstance(spec, type) else type(spec)
    factory = _find(spec_class, role)
    if factory is None:
        mechanism = getattr(spec_class, "mechanism", None) or spec_class.__name__
        served = sorted(
            {d.name for d in declarations() if d.path(role) is not None}
            | {getattr(k, "mechanism", "") or k.__name__ for k in _IMPLEMENTATIONS[role]}
        )
        raise SpecError(
            f"no {ROLES[role]} for {spec_class.__name__} (mechanism {mechanism!r}); "
            f"{ROLES[role]}s exist for: {', '.join(served) or 'none'}"
        )
    return factory


def has_implementation(spec: Any, role: str) -> bool:
    """True when ``spec`` (an instance or class) has an implementation of ``role`` (imports nothing)."""
    return _has(spec if isinstance(spec, type) else type(spec), role)
