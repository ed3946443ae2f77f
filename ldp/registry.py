"""The one declaration of every mechanism: its name, spec class and layer implementations.

A mechanism is declared once, as a :class:`MechanismDeclaration`: its
registered name, its spec class and the callables implementing it in each
layer, all as ``"module:attribute"`` paths. Nothing is imported until it is
looked up, and each lookup imports only the module it names, so the client
(``make_encoder``) never imports aggregator or simulation code, and a
mechanism's modules need no import line anywhere.

The built-in mechanisms are :data:`BUILTIN_MECHANISMS`: the first families,
declared below, then one module per later family in the package
:mod:`ldp.mechanisms` (``ldp/mechanisms/NAME.py``, each with a
``DECLARATIONS`` tuple), discovered by listing that package, so a new
built-in mechanism is a new module there and edits no list.
An installed package adds mechanisms through the entry-point group
``ldp.mechanisms`` (:data:`ENTRY_POINT_GROUP`): each entry point names a
:class:`MechanismDeclaration` or a sequence of them, for example, in the
package's ``pyproject.toml``::

    [project.entry-points."ldp.mechanisms"]
    toy-rr = "toy_mechanism:DECLARATION"

(docs/adding-a-mechanism.md walks through one). Everything that lists
mechanisms reads this registry: the spec loader (:func:`ldp.specs.spec_class`),
the mechanism lists (``FREQUENCY_MECHANISMS``, ...), the CLI choices, the
layer lookups of :mod:`ldp.plugins`, the tests' parametrizations and the
generated API page (``docs/_ext/mechanism_pages.py``).

Roles and how each layer calls them (:data:`ldp.plugins.ROLES`):

==================  =============================================================
field               called as
==================  =============================================================
``spec``            the spec class (a :class:`~ldp.specs.base.Spec` subclass whose
                    ``mechanism`` is the declared name)
``encoder``         ``factory(spec, state)`` → an encoder (``encode(value)`` → Report)
``batch_encoder``   ``factory(spec, values, rng, cohorts=..., indices=...)`` → ReportBatch
``accumulator``     ``factory(spec, threads=...)`` → an ``Accumulator``
``fast_simulator``  ``factory(spec, true_counts, rng)`` → support counts (optional)
``audit_events``    ``factory()`` → an ``AuditFamily`` (``ldp audit``)
==================  =============================================================
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
import re
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = [
    "BUILTIN_MECHANISMS",
    "ENTRY_POINT_GROUP",
    "LAYER_ROLES",
    "MechanismDeclaration",
    "declaration",
    "declarations",
    "load_object",
    "refresh",
]

#: The entry-point group through which installed packages declare mechanisms.
ENTRY_POINT_GROUP = "ldp.mechanisms"

#: The layer roles a declaration can fill (its fields after ``name`` and ``spec``).
LAYER_ROLES = ("encoder", "batch_encoder", "accumulator", "fast_simulator", "audit_events")

_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def load_object(path: str) -> Any:
    """Import ``"package.module:attribute"`` (the attribute may be dotted: ``"mod:Class.method"``)."""
    module_name, _, attribute = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


@dataclasses.dataclass(frozen=True)
class MechanismDeclaration:
    """A mechanism: its name, its spec class and its layer implementations, as ``"module:attribute"`` paths.

    Parameters
    ----------
    name : str
        The registered mechanism name (lower case, words joined by ``-``),
        equal to the spec class's ``mechanism``; what spec files and
        ``ldp spec NAME`` use.
    spec : str
        Path of the spec class, e.g. ``"ldp.specs.frequency:GRR"``.
    encoder, batch_encoder, accumulator, fast_simulator, audit_events : str or None
        Paths of the layer implementations (see the module docstring for how
        each is called). ``None``: the mechanism has no such piece; using it
        in that layer is a :class:`~ldp.errors.ParameterError` naming the
        mechanism and the role. A mechanism needs ``encoder``,
        ``batch_encoder`` and ``accumulator`` to be encoded and aggregated,
        and ``audit_events`` for ``ldp audit``; ``fast_simulator`` is optional
        (``ldp simulate`` then runs the real client and aggregator).
    docs : tuple of str
        Modules of the mechanism whose API reference is generated
        (``docs/api/mechanisms.md``); empty for a third-party mechanism.

    Examples
    --------
    >>> from ldp.registry import declaration
    >>> grr = declaration("grr")
    >>> grr.spec, grr.accumulator
    ('ldp.specs.frequency:GRR', 'ldp.aggregator.accumulators:ValueAccumulator.for_spec')
    >>> grr.load_spec().mechanism
    'grr'
    """

    name: str
    spec: str
    encoder: str | None = None
    batch_encoder: str | None = None
    accumulator: str | None = None
    fast_simulator: str | None = None
    audit_events: str | None = None
    docs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(
                f"mechanism name {self.name!r} must be lower-case letters and digits joined by '-'"
            )
        for field in ("spec", *LAYER_ROLES):
            path = getattr(self, field)
            if (path is not None or field == "spec") and not (
                isinstance(path, str) and _PATH.fullmatch(path)
            ):
                raise ValueError(
                    f"mechanism {self.name!r}: {field} must be a 'module:attribute' path, got {path!r}"
                )
        object.__setattr__(self, "docs", tuple(self.docs))

    def path(self, role: str) -> str | None:
        """The declared path of ``role`` (one of :data:`LAYER_ROLES`), or None."""
        if role not in LAYER_ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {', '.join(LAYER_ROLES)}")
        path: str | None = getattr(self, role)
        return path

    def load_spec(self) -> type:
        """Import the spec class, checking that its ``mechanism`` is the declared name."""
        cls = _load_cached(self.spec)
        if not isinstance(cls, type) or getattr(cls, "mechanism", None) != self.name:
            raise RuntimeError(
                f"mechanism {self.name!r}: {self.spec} is not a spec class whose mechanism is {self.name!r}"
            )
        return cls

    def load(self, role: str) -> Any:
        """Import the implementation of ``role``; None when the mechanism declares none."""
        path = self.path(role)
        return None if path is None else _load_cached(path)


@functools.cache
def _load_cached(path: str) -> Any:
    return load_object(path)


_ENC = "ldp.client.encoders"
_BATCH = "ldp.client.batch"
_ACC = "ldp.aggregator.accumulators"
_FAST = "ldp.simulations.fast"
_AUDIT = "ldp.audit_events"


def _frequency(name: str, cls: str, family: str, accumulator: str, audit: str) -> MechanismDeclaration:
    """A frequency oracle of ldp.specs.frequency served by the shared client, aggregator and simulator."""
    return MechanismDeclaration(
        name,
        f"ldp.specs.frequency:{cls}",
        encoder=f"{_ENC}:{family}_encoder",
        batch_encoder=f"{_BATCH}:{family}_batch",
        accumulator=f"{_ACC}:{accumulator}.for_spec",
        fast_simulator=f"{_FAST}:{'grr' if family == 'grr' else 'pure_oracle'}_support_counts",
        audit_events=audit,
    )


def _numeric(name: str, cls: str) -> MechanismDeclaration:
    """A numeric mechanism of ldp.specs.numeric: one encoder, accumulator and audit family serve them all."""
    return MechanismDeclaration(
        name,
        f"ldp.specs.numeric:{cls}",
        encoder="ldp.client.numeric:numeric_encoder",
        batch_encoder="ldp.client.numeric:encode_numeric_batch",
        accumulator="ldp.aggregator.numeric:MeanAccumulator.for_spec",
        audit_events=f"{_AUDIT}.numeric:NumericEvents",
        docs=("ldp.client.numeric", "ldp.aggregator.numeric"),
    )


def _prefix(name: str, cls: str, accumulator: str) -> MechanismDeclaration:
    """PEM or TreeHist: the prefix-hashing client and audit family, each with its own accumulator."""
    return MechanismDeclaration(
        name,
        f"ldp.specs.heavy_hitters:{cls}",
        encoder="ldp.client.pem:pem_encoder",
        batch_encoder="ldp.client.pem:pem_batch",
        accumulator=f"ldp.aggregator.pem:{accumulator}.for_spec",
        audit_events=f"{_AUDIT}.hashing:PrefixHashingEvents",
        docs=("ldp.specs.heavy_hitters", "ldp.client.pem", "ldp.aggregator.pem"),
    )


def _sketch(name: str, cls: str) -> MechanismDeclaration:
    """CMS or HCMS: each layer's module ``sketch`` names its pieces after the mechanism."""
    return MechanismDeclaration(
        name,
        f"ldp.specs.sketch:{cls}",
        encoder=f"ldp.client.sketch:{name}_encoder",
        batch_encoder=f"ldp.client.sketch:{name}_batch",
        accumulator=f"ldp.aggregator.sketch:{cls}Accumulator.for_spec",
        fast_simulator=f"ldp.simulations.sketch:{name}_support_counts",
        audit_events=f"{_AUDIT}.sketch:SketchEvents",
        docs=("ldp.specs.sketch", "ldp.client.sketch", "ldp.aggregator.sketch", "ldp.simulations.sketch"),
    )


#: The first families, in registration order (the order of ties in the mechanism lists).
_CORE_MECHANISMS: tuple[MechanismDeclaration, ...] = (
    _frequency("grr", "GRR", "grr", "ValueAccumulator", f"{_AUDIT}.values:ValueEvents"),
    _frequency("binary-rr", "BinaryRR", "grr", "ValueAccumulator", f"{_AUDIT}.values:ValueEvents"),
    _frequency("sue", "SUE", "unary", "UnaryAccumulator", f"{_AUDIT}.bits:DomainBitEvents"),
    _frequency("oue", "OUE", "unary", "UnaryAccumulator", f"{_AUDIT}.bits:DomainBitEvents"),
    _frequency(
        "olh", "OLH", "local_hashing", "LocalHashingAccumulator", f"{_AUDIT}.hashing:LocalHashingEvents"
    ),
    _frequency(
        "blh", "BLH", "local_hashing", "LocalHashingAccumulator", f"{_AUDIT}.hashing:LocalHashingEvents"
    ),
    MechanismDeclaration(
        "hr",
        "ldp.specs.hadamard:HR",
        encoder="ldp.client.hadamard:hadamard_encoder",
        batch_encoder="ldp.client.hadamard:hadamard_batch",
        accumulator="ldp.aggregator.hadamard:HadamardAccumulator.for_spec",
        fast_simulator="ldp.simulations.hadamard:hr_support_counts",
        audit_events=f"{_AUDIT}.values:HadamardEvents",
        docs=(
            "ldp.specs.hadamard",
            "ldp.hadamard_math",
            "ldp.client.hadamard",
            "ldp.aggregator.hadamard",
            "ldp.simulations.hadamard",
        ),
    ),
    _prefix("pem", "PEM", "PEMAccumulator"),
    _prefix("treehist", "TreeHist", "TreeHistAccumulator"),
    _numeric("duchi", "Duchi"),
    _numeric("stochastic-rounding", "StochasticRounding"),
    _numeric("piecewise", "Piecewise"),
    _numeric("hybrid", "Hybrid"),
    _numeric("laplace", "Laplace"),
    _numeric("gaussian", "Gaussian"),
    MechanismDeclaration(
        "rappor",
        "ldp.specs.rappor:Rappor",
        encoder=f"{_ENC}:rappor_encoder",
        batch_encoder=f"{_BATCH}:rappor_batch",
        accumulator=f"{_ACC}:RapporAccumulator.for_spec",
        audit_events=f"{_AUDIT}.rappor:RapporEvents",
        docs=("ldp.specs.rappor",),
    ),
    _sketch("cms", "CMS"),
    _sketch("hcms", "HCMS"),
    MechanismDeclaration(
        "ss",
        "ldp.specs.subset:SubsetSelection",
        encoder="ldp.client.subset:subset_encoder",
        batch_encoder="ldp.client.subset:subset_batch",
        accumulator="ldp.aggregator.subset:SubsetAccumulator.for_spec",
        fast_simulator="ldp.simulations.subset:subset_support_counts",
        audit_events=f"{_AUDIT}.bits:DomainBitEvents",
        docs=("ldp.specs.subset", "ldp.client.subset", "ldp.aggregator.subset", "ldp.simulations.subset"),
    ),
)


def _as_declarations(obj: Any, where: str) -> list[MechanismDeclaration]:
    items = [obj] if isinstance(obj, MechanismDeclaration) else obj
    if not isinstance(items, Iterable) or isinstance(items, (str, bytes)):
        raise TypeError(f"{where} is {type(obj).__name__}, not a MechanismDeclaration or a sequence of them")
    out = list(items)
    for item in out:
        if not isinstance(item, MechanismDeclaration):
            raise TypeError(f"{where} holds a {type(item).__name__}, not a MechanismDeclaration")
    return out


def _family_modules() -> list[str]:
    """The modules of :mod:`ldp.mechanisms`, by name (each declares one later built-in family)."""
    import ldp.mechanisms

    return sorted(
        f"ldp.mechanisms.{info.name}"
        for info in pkgutil.iter_modules(ldp.mechanisms.__path__)
        if not info.name.startswith("_")
    )


def _builtin() -> tuple[MechanismDeclaration, ...]:
    found = list(_CORE_MECHANISMS)
    for module in _family_modules():
        declared = getattr(importlib.import_module(module), "DECLARATIONS", None)
        if declared is None:
            raise RuntimeError(f"{module} declares no DECLARATIONS")
        found += _as_declarations(declared, module)
    names = [d.name for d in found]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise RuntimeError(f"built-in mechanism name(s) declared twice: {', '.join(repeated)}")
    return tuple(found)


#: The mechanisms this package ships, in registration order (the order of ties in the mechanism
#: lists): the first families declared here, then those of :mod:`ldp.mechanisms` by module name.
BUILTIN_MECHANISMS: tuple[MechanismDeclaration, ...] = _builtin()


@functools.cache
def _installed() -> tuple[MechanismDeclaration, ...]:
    """The declarations of installed packages (entry-point group ``ldp.mechanisms``), discovered once.

    An entry point that fails to load, or declares a name already taken, is
    skipped with a :class:`RuntimeWarning` naming it: a broken plug-in never
    breaks the built-in mechanisms.
    """
    from importlib.metadata import entry_points

    taken = {d.name for d in BUILTIN_MECHANISMS}
    found: list[MechanismDeclaration] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        where = f"entry point {point.name!r} ({point.value}) of group {ENTRY_POINT_GROUP!r}"
        try:
            items = _as_declarations(point.load(), where)
        except Exception as exc:  # a third-party import: any failure is reported, not raised
            warnings.warn(f"skipped {where}: {type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)
            continue
        for item in items:
            if item.name in taken:
                warnings.warn(
                    f"skipped mechanism {item.name!r} of {where}: the name is already registered",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            taken.add(item.name)
            found.append(item)
    return tuple(found)


def refresh() -> None:
    """Forget discovered entry points and loaded objects (after installing a package in this process)."""
    _installed.cache_clear()
    _load_cached.cache_clear()
    importlib.invalidate_caches()


def declarations(*, installed: bool = True) -> Iterator[MechanismDeclaration]:
    """Every declared mechanism: the built-in ones in order, then installed packages' by name.

    Parameters
    ----------
    installed : bool, default True
        Include the mechanisms of installed packages (entry points).
    """
    yield from BUILTIN_MECHANISMS
    if installed:
        yield from _installed()


_BUILTIN_BY_NAME = {d.name: d for d in BUILTIN_MECHANISMS}


def declaration(name: str) -> MechanismDeclaration | None:
    """The declaration of mechanism ``name`` (exact registered name), or None."""
    found = _BUILTIN_BY_NAME.get(name)
    if found is not None:
        return found
    for item in _installed():
        if item.name == name:
            return item
    return None
