"""Common machinery of mechanism specs: JSON round trip, fingerprint, registry.

A spec is a frozen dataclass holding a mechanism's parameters. Its canonical
JSON (sorted keys, no whitespace, exact fractions) identifies it: the
``fingerprint`` is the first 16 hex digits of the SHA-256 of that text, and
every report carries it, so reports can never be decoded with the wrong
parameters.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from ldp.errors import AccountingError, ParameterError, SpecError, recast
from ldp.exact import epsilon_of_ratio, exp_lower_bound, fraction_to_json, ratio_within
from ldp.specs.limits import CLAIM_TOLERANCE, REPRESENTABLE_MAX_EPSILON, check_epsilon_limit
from ldp.specs.pairs import PrivacyPiece
from ldp.textfile import read_utf8_text

__all__ = [
    "SPEC_FORMAT",
    "ExactPrivacySpec",
    "MechanismView",
    "Spec",
    "load_spec",
    "register",
    "registered_specs",
    "spec_class",
    "spec_from_dict",
]

#: Version of the spec JSON layout.
SPEC_FORMAT = 1

#: Spec types registered in this process with :func:`register` (tests, notebooks), by mechanism name.
_REGISTRY: dict[str, type[Spec]] = {}


def register(cls: type[Spec]) -> type[Spec]:
    """Class decorator: make a spec type loadable by its ``mechanism`` name in this process.

    For tests and interactive use: a mechanism shipped in a package is
    declared once, in :mod:`ldp.registry` or through the ``ldp.mechanisms``
    entry point, and needs no decorator.
    """
    name = cls.mechanism
    declared = _declared_specs().get(name)
    if (name in _REGISTRY and _REGISTRY[name] is not cls) or (declared is not None and declared is not cls):
        raise RuntimeError(f"mechanism name {name!r} registered twice")
    _REGISTRY[name] = cls
    return cls


def _declared_specs() -> dict[str, type[Spec]]:
    from ldp.registry import declarations

    return {d.name: d.load_spec() for d in declarations()}


def registered_specs() -> dict[str, type[Spec]]:
    """Every spec type loadable by name, by its ``mechanism`` name (a copy, in registration order).

    The declared mechanisms (:mod:`ldp.registry`: the built-in ones, then
    those of installed packages), then any registered in this process.
    """
    return {**_declared_specs(), **_REGISTRY}


_S = TypeVar("_S", bound="Spec")


class MechanismView(Mapping[str, type[_S]], Generic[_S]):
    """A live, read-only view of the registered spec types of one kind: name -> spec type.

    The one list of mechanisms is the declarative registry (:mod:`ldp.registry`);
    views such as ``FREQUENCY_MECHANISMS`` select from it, so a mechanism
    registered anywhere appears in every list (``ldp spec``, ``ldp simulate``,
    ``auto`` selection, the tests) without being added to any.

    Parameters
    ----------
    kind : type
        The base class whose registered subclasses the view holds.
    order : callable, optional
        Sort key on the spec type (stable: registration order breaks ties).
    """

    def __init__(self, kind: type[_S], order: Callable[[type[_S]], Any] | None = None):
        self._kind = kind
        self._order = order

    def _items(self) -> list[tuple[str, type[_S]]]:
        kind = self._kind
        items = [(name, cls) for name, cls in registered_specs().items() if issubclass(cls, kind)]
        order = self._order
        return sorted(items, key=lambda item: order(item[1])) if order else items

    def __getitem__(self, name: str) -> type[_S]:
        for key, cls in self._items():
            if key == name:
                return cls
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in self._items()])

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"MechanismView({self._kind.__name__}: {', '.join(self)})"


def spec_class(mechanism: str) -> type[Spec]:
    """The spec type registered under ``mechanism`` (case-insensitive, '_' or '-')."""
    from ldp.registry import declaration

    key = mechanism.strip().lower().replace("_", "-")
    if key in _REGISTRY:
        return _REGISTRY[key]
    found = declaration(key)
    if found is None:
        known = ", ".join(sorted(registered_specs()))
        raise SpecError(f"unknown mechanism {mechanism!r}; known: {known}")
    spec: type[Spec] = found.load_spec()
    return spec


def _jsonable(value: Any) -> Any:
    if isinstance(value, Fraction):
        return fraction_to_json(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def _raising_spec_errors(method: Callable[..., None]) -> Callable[..., None]:
    """``method`` (a spec's ``__init__`` or ``__post_init__``) with its parameter errors re-raised as SpecError."""

    @functools.wraps(method)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except SpecError:
            raise
        except ParameterError as error:
            raise recast(error, SpecError).with_traceback(error.__traceback__) from None

    checked._raises_spec_errors = True  # type: ignore[attr-defined]
    return checked


@dataclasses.dataclass(frozen=True)
class Spec(abc.ABC):
    """Abstract base class of every mechanism spec.

    What every spec provides: its registered :attr:`mechanism` name,
    :attr:`report_kind` and ``report_schema`` (the report payload's fields,
    :mod:`ldp.report_schema`); its parameters as dataclass fields, with the
    canonical JSON (:meth:`to_dict`, :meth:`to_json`, :meth:`from_dict`) and
    the :attr:`fingerprint` of it; its privacy claim :attr:`epsilon` (per
    report, with :attr:`epsilon_inf` for any number of reports of one value),
    :meth:`privacy_summary` and, for the accountant,
    :meth:`privacy_pieces`; and whether its reports are :attr:`memoized`.
    A concrete spec is a frozen dataclass declared in :mod:`ldp.registry` (or by a
    package through the ``ldp.mechanisms`` entry point).

    Examples
    --------
    >>> import ldp
    >>> spec = ldp.OUE(domain=("a", "b", "c"), epsilon=1.0)
    >>> isinstance(spec, ldp.Spec), len(spec.fingerprint)
    (True, 16)
    >>> ldp.load_spec(spec.to_json()).fingerprint == spec.fingerprint  # the JSON is the spec
    True
    """

    #: The name the spec is registered (and written in its JSON) under.
    mechanism: ClassVar[str] = ""
    #: What a report of this spec carries (each mechanism family sets it).
    report_kind: ClassVar[str] = ""
    #: True when reports of one value are memoized (all of them post-process one permanent response).
    memoized: ClassVar[bool] = False
    #: Memoized specs only: True when r reports of one memo key are proved (r·ε′)-DP for this mechanism,
    #: ε′ its per-report charge (``memo_report_epsilon`` when the spec states one, else ε₁;
    #: docs/accounting.md#memoized-streams), so the ledger charges them min(r·ε′, ε∞); False: ε₁ for
    #: one report of a key and ε∞ from the second on, the bound that holds for every memoized mechanism.
    memo_linear: ClassVar[bool] = False
    #: True when :meth:`privacy_pieces` gives the exact trade-off curve; False when it is a sound bound.
    exact_privacy_curve: ClassVar[bool] = True
    #: How an estimate takes a list of candidate values (``ldp aggregate --candidates``): None (it does
    #: not), ``"estimate"`` (estimates of the given values, as of a domain's) or ``"decode"`` (a candidate
    #: decode with its own options, RAPPOR's).
    candidates_mode: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Make every :class:`ParameterError` raised while building a spec of ``cls`` a :class:`SpecError`.

        The shared checks (:func:`ldp.specs.validation.check_epsilon`,
        :func:`ldp.domain.normalize_domain`, ...) raise the general class;
        building a spec is where they mean "a bad spec", so its ``__init__``
        and ``__post_init__`` re-raise them as :class:`SpecError` (same
        message and parameters).
        """
        super().__init_subclass__(**kwargs)
        for name in ("__init__", "__post_init__"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_raises_spec_errors", False):
                setattr(cls, name, _raising_spec_errors(method))

    if TYPE_CHECKING:  # a field of most specs, a property of others (RAPPOR's ε₁): declared for the checker

        @property
        def epsilon(self) -> float:
            """The ε of one report."""

    # -- privacy, for the accountant (ldp.specs.pairs) -----------------
    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """The reports of the worst pair of inputs, as independent pieces (:mod:`ldp.specs.pairs`).

        ``reports`` reports of one client; ``math.inf`` only for memoized
        mechanisms (the permanent response itself). A mechanism that cannot
        describe its privacy this way raises :class:`~ldp.errors.AccountingError` saying so.
        """
        raise AccountingError(
            f"{self.mechanism or type(self).__name__} provides no worst-case pair of output "
            "distributions, so the accountant has no curve for it"
        )

    @property
    def epsilon_inf(self) -> float:
        """ε of any number of reports of one value: finite only for :attr:`memoized` specs (RAPPOR's PRR)."""
        return math.inf

    # -- size ----------------------------------------------------------
    @property
    def report_bits(self) -> int:
        """Bits of one report's payload in a compact binary form (docs/report-format.md#size).

        The sum of the report schema's fields: ⌈log₂ d⌉ for a domain value,
        ⌈log₂ b⌉ for an integer below b, the length of a bit vector, 64 for a
        number. Framing (JSON keys, the spec fingerprint) is not counted.
        """
        from ldp.report_schema import report_schema_of

        return report_schema_of(self).payload_bits(self)

    # -- serialization -------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Canonical, JSON-ready parameters, including ``mechanism`` and ``format``."""
        out: dict[str, Any] = {"mechanism": self.mechanism, "format": SPEC_FORMAT}
        for field in dataclasses.fields(self):
            out[field.name] = _jsonable(getattr(self, field.name))
        return out

    def to_json(self, indent: int | None = None) -> str:
        """JSON text of :meth:`to_dict` (canonical when ``indent`` is None)."""
        if indent is None:
            return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild a spec of this type from :meth:`to_dict` output (validated)."""
        data = dict(data)
        data.pop("mechanism", None)
        fmt = data.pop("format", SPEC_FORMAT)
        if fmt != SPEC_FORMAT:
            raise SpecError(f"spec format {fmt!r} is not supported (this version reads {SPEC_FORMAT})")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise SpecError(
                f"{cls.mechanism} spec has unknown fields: {', '.join(unknown)} "
                f"(its fields: {', '.join(sorted(names))})"
            )
        kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items()}
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise SpecError(f"{cls.mechanism} spec: {exc}") from None

    @property
    def fingerprint(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON."""
        cached = self.__dict__.get("_fingerprint")
        if cached is None:
            cached = hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()[:16]
            object.__setattr__(self, "_fingerprint", cached)
        return cached

    # -- privacy summary -----------------------------------------------
    @abc.abstractmethod
    def privacy_summary(self) -> dict[str, float]:
        """The ε figures a user should see (``epsilon``; RAPPOR adds ε∞ and ε₁)."""

    def shuffle_clones(self) -> tuple[float, float, float] | None:
        """A clone split tighter than the general one for shuffle amplification, or None.

        ``(epsilon0, clone_probability, informative_weight)`` as in
        :class:`ldp.privacy.shuffle.CloneReduction`, each rounded the safe way
        (docs/accounting.md#shuffle). None: only the general bound (clone
        probability e^−ε) applies.
        """
        return None


@dataclasses.dataclass(frozen=True)
class ExactPrivacySpec(Spec):
    """A pure ε-LDP spec whose ε is checked exactly against its probabilities.

    Subclasses define :attr:`privacy_ratio`, the worst-case ratio
    max over inputs x, x′ and outputs y of P[y|x]/P[y|x′] as an exact
    fraction, set :attr:`max_epsilon` (:mod:`ldp.specs.limits`), and call
    :meth:`_check_epsilon_limit` before calibrating and :meth:`_check_claim`
    after validating their fields.
    """

    #: Largest ε the mechanism supports honestly (for every value of its other parameters).
    max_epsilon: ClassVar[float] = REPRESENTABLE_MAX_EPSILON
    #: Why ε is capped there (shown in the error).
    max_epsilon_reason: ClassVar[str] = "e^epsilon must be a finite double to certify the claim"
    #: True when the spec's JSON stores both ε and its probabilities: then ε must also not exceed
    #: what they give (by more than CLAIM_TOLERANCE), so an edited ε cannot go unnoticed.
    claim_matches_probabilities: ClassVar[bool] = True

    def _epsilon_limit(self) -> tuple[float, str]:
        """(largest ε for this spec's parameters, the words qualifying it in the error)."""
        return type(self).max_epsilon, ""

    def _check_epsilon_limit(self) -> None:
        """Refuse an ε above :meth:`_epsilon_limit` (before anything is calibrated or allocated)."""
        limit, where = self._epsilon_limit()
        epsilon = self.epsilon
        check_epsilon_limit(epsilon, limit, self.mechanism, self.max_epsilon_reason, where=where)

    def report_pieces(self) -> tuple[PrivacyPiece, ...]:
        """One report of the worst pair of inputs, as independent pieces (fresh-randomness mechanisms)."""
        return Spec.privacy_pieces(self)

    def privacy_pieces(self, reports: float = 1) -> tuple[PrivacyPiece, ...]:
        """``reports`` independent reports: every piece of :meth:`report_pieces`, once per report."""
        if math.isinf(reports):
            raise SpecError(
                f"{self.mechanism} uses fresh randomness per report; give a finite number of reports"
            )
        return tuple(part.repeated(int(reports)) for part in self.report_pieces())

    @property
    def privacy_ratio(self) -> Fraction:
        """max over inputs x, x′ and outputs y of P[y|x]/P[y|x′], exactly."""
        raise NotImplementedError

    @property
    def epsilon_achieved(self) -> float:
        """ln of :attr:`privacy_ratio`: the ε the exact probabilities give (≤ ``epsilon``)."""
        return epsilon_of_ratio(self.privacy_ratio)

    def privacy_summary(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "epsilon_achieved": self.epsilon_achieved}

    def _check_claim(self) -> None:
        """Refuse a spec whose probabilities give more ε than it claims, or (stored probabilities) clearly less.

        The first check is certified (:func:`ldp.exact.ratio_within`); the second refuses only when the
        certified lower bound of e^ε exceeds the exact ratio by more than :data:`CLAIM_TOLERANCE`.
        """
        ratio = self.privacy_ratio
        epsilon = self.epsilon
        if not ratio_within(ratio, epsilon):
            raise SpecError(
                f"{self.mechanism} claims epsilon={epsilon!r} but its exact probabilities give "
                f"epsilon={self.epsilon_achieved:.17g}; the claim must be at least what the probabilities give"
            )
        if self.claim_matches_probabilities and exp_lower_bound(epsilon) > ratio * (
            1 + Fraction(CLAIM_TOLERANCE)
        ):
            raise SpecError(
                f"{self.mechanism} states epsilon={epsilon!r} but its exact probabilities give "
                f"epsilon={self.epsilon_achieved:.17g}; the stated epsilon must match them (e^epsilon within a "
                f"relative {CLAIM_TOLERANCE:g}): change the probabilities with epsilon, or rebuild the spec from epsilon"
            )


def spec_from_dict(data: Mapping[str, Any]) -> Spec:
    """Build any registered spec from its dict form."""
    if not isinstance(data, Mapping):
        raise SpecError(f"a spec must be a JSON object, got {type(data).__name__}")
    if "mechanism" not in data:
        raise SpecError("spec has no 'mechanism' field")
    return spec_class(str(data["mechanism"])).from_dict(data)


def load_spec(source: str | Path | Mapping[str, Any] | Spec) -> Spec:
    """Load a spec from a JSON file path, a JSON string, a dict, or return a spec as is.

    Raises
    ------
    SpecError
        If the file cannot be read or is not UTF-8 text, is not JSON, or
        describes an invalid spec.

    Examples
    --------
    >>> from ldp import load_spec
    >>> spec = load_spec('{"mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"]}')
    >>> spec.mechanism, spec.domain, spec.epsilon
    ('grr', ('a', 'b', 'c'), 1.0)
    >>> load_spec(spec.to_dict()) == spec  # a dict (or a file path) gives the same spec
    True
    """
    if isinstance(source, Spec):
        return source
    if isinstance(source, Mapping):
        return spec_from_dict(source)
    text: str
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("{")):
        path = Path(source)
        text = read_utf8_text(path, "spec file")
        where = f" in {str(path)!r}"
    else:
        text = str(source)
        where = ""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"spec is not valid JSON{where}: {exc}") from None
    return spec_from_dict(data)
