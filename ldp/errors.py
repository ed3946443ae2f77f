"""Exception hierarchy of ``ldp``.

Every error raised on bad user input is an :class:`LDPError`, so a caller (and
the CLI) can tell a user mistake from a bug. Messages name the parameter, what
was expected and what was received. Below the base, one class per kind of
mistake, so a caller catches what it means::

    LDPError
    ├── ParameterError (also ValueError): a bad parameter, option or input value
    │   ├── SpecError: a mechanism spec's parameters or a spec file
    │   ├── InputError: a value or data file the code cannot use (not in the domain, not a number)
    │   ├── AccountingError: the privacy accountant refuses a question (bad delta, no conversion)
    │   └── EstimateError: the reports given cannot support an estimate (none at all, an empty round)
    ├── ReportError (also ValueError): a malformed, foreign or wrong-version report
    ├── StateError: a client state file is corrupt, foreign or unwritable
    ├── BudgetError: the client privacy budget
    │   └── BudgetExceededError: an encode would spend more than is left
    └── StoreError: the collector's store
        (ldp.collector.store.StoreUnavailable, ldp.collector.store.UnknownTaskError,
        ldp.collector.accumulate.StoreIntegrityError)

The specific :class:`ParameterError` subclasses were split out of it: an
``except ParameterError`` still catches every one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Self, TypeVar

from ldp.shorten import ECHO_LIMIT, shorten_values

__all__ = [
    "AccountingError",
    "BudgetError",
    "BudgetExceededError",
    "EstimateError",
    "InputError",
    "LDPError",
    "LDPWarning",
    "ParameterError",
    "ReportError",
    "SpecError",
    "StateError",
    "StoreError",
    "recast",
]


class LDPError(Exception):
    """Base class of every error ``ldp`` raises on purpose.

    Its message never holds a user value longer than
    :data:`ldp.shorten.ECHO_LIMIT` characters: a long quoted value is cut to
    its ends and its length (:func:`ldp.shorten.shorten_values`), so a
    megabyte-long bad value never floods a terminal, a log or a rejects file.

    Examples
    --------
    >>> error = LDPError(f"value {'x' * 100_000!r} is not in the domain")
    >>> len(str(error)) < 200, str(error).endswith("(100,000 characters) is not in the domain")
    (True, True)
    """

    def __init__(self, *args: Any) -> None:
        if args and isinstance(args[0], str) and len(args[0]) > ECHO_LIMIT:
            args = (shorten_values(args[0]), *args[1:])
        super().__init__(*args)


#: A parameter named in a :meth:`ParameterError.naming` template: ``{name}`` or ``{name=}``.
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)(=?)\}")


class ParameterError(LDPError, ValueError):
    """A mechanism parameter, option or input value is invalid.

    An error made by :meth:`naming` also carries the offending parameters
    (:attr:`parameters`, Python name -> value) and the message
    :attr:`template`, so a front end (the CLI) can say the same thing in its
    own names (:meth:`render`); ``str(error)`` uses the Python names.

    Examples
    --------
    >>> error = ParameterError.naming("{workers=} must be at least 1", workers=0)
    >>> str(error), error.parameters
    ('workers=0 must be at least 1', {'workers': 0})
    >>> isinstance(error, ValueError)
    True
    """

    #: The offending parameters, Python name -> value (empty when not known).
    parameters: Mapping[str, Any] = {}
    #: The message with ``{name}`` / ``{name=}`` placeholders, or None.
    template: str | None = None

    @classmethod
    def naming(cls, template: str, /, **parameters: Any) -> Self:
        """An error whose message names ``parameters`` by placeholder.

        Parameters
        ----------
        template : str
            The message; ``{name}`` stands for the parameter's name and
            ``{name=}`` for its name and value (as in an f-string,
            ``workers=9``). Only placeholders of ``parameters`` are replaced.
        **parameters
            Every parameter the template names, with its offending value
            (a dotted name such as ``rappor.num_bits`` is passed through
            ``**{...}``).

        Examples
        --------
        >>> error = ParameterError.naming("{workers=} is too many", workers=9)
        >>> str(error), error.parameters
        ('workers=9 is too many', {'workers': 9})
        >>> error.render(lambda name, value: f"--{name} {value}" if value is not None else f"--{name}")
        '--workers 9 is too many'
        """
        error = cls(_render(template, parameters, _python_name))
        error.template = template
        error.parameters = dict(parameters)
        return error

    def render(self, name: Callable[[str, Any], str]) -> str:
        """The message with each parameter spelled by ``name(parameter, value or None)``.

        ``value`` is the parameter's value for a ``{name=}`` placeholder and
        None for ``{name}``. Without a template, ``str(self)``.
        """
        if self.template is None:
            return str(self)
        return _render(self.template, self.parameters, name)


_P = TypeVar("_P", bound=ParameterError)


def recast(error: ParameterError, kind: type[_P]) -> _P:
    """``error`` as a ``kind``: the same message, template and parameters.

    For a boundary that knows what a general :class:`ParameterError` from a
    helper means there (a bad epsilon while building a spec is a
    :class:`SpecError`). The caller raises it ``from None``.

    Examples
    --------
    >>> error = recast(ParameterError.naming("{epsilon=} must be > 0", epsilon=-1), SpecError)
    >>> type(error).__name__, str(error), error.parameters
    ('SpecError', 'epsilon=-1 must be > 0', {'epsilon': -1})
    """
    converted = kind(*error.args)
    converted.template = error.template
    converted.parameters = error.parameters
    return converted


def _python_name(name: str, value: Any) -> str:
    return name if value is None else f"{name}={value!r}"


def _render(template: str, parameters: Mapping[str, Any], name: Callable[[str, Any], str]) -> str:
    def spell(match: re.Match[str]) -> str:
        key, with_value = match[1], match[2]
        if key not in parameters:
            return match[0]
        return name(key, parameters[key] if with_value else None)

    return _PLACEHOLDER.sub(spell, template)


class SpecError(ParameterError):
    """A mechanism spec is invalid: a parameter out of range or inconsistent, or a spec file that is not one.

    Raised by building a spec (a bad ``epsilon``, domain, ``p``, ...), by
    :func:`ldp.specs.spec_from_dict` and ``load_spec``, and by ``ldp spec``.

    Examples
    --------
    >>> from ldp.specs import load_spec
    >>> try:
    ...     load_spec({"mechanism": "grr", "epsilon": -1.0, "domain": ["a", "b"]})
    ... except SpecError as error:
    ...     print(type(error).__name__, isinstance(error, ParameterError))
    SpecError True
    """


class InputError(ParameterError):
    """A value, row or data file cannot be used: not in the spec's domain, not a number, an unreadable column.

    Raised by the encoders (``encode``, ``encode_many``), the values and data
    file readers, and the simulator's population builders. A report that is
    malformed is a :class:`ReportError` instead.

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import make_encoder
    >>> try:
    ...     make_encoder(ldp.GRR(domain=("a", "b"), epsilon=1.0)).encode("z")
    ... except InputError as error:
    ...     print(error)
    value 'z' is not in the domain (2 values: 'a', 'b')
    """


class AccountingError(ParameterError):
    """The privacy accountant refuses a question: a delta or budget out of range, or no conversion exists.

    Raised by :mod:`ldp.privacy` (composition, conversions, curves, shuffle
    amplification, spending plans).

    Examples
    --------
    >>> from ldp.privacy import gdp_epsilon
    >>> try:
    ...     gdp_epsilon(1.0, delta=2)
    ... except AccountingError as error:
    ...     print(error)
    delta must be in [0, 1), got 2
    """


class EstimateError(ParameterError):
    """The reports given cannot support the estimate asked for: none at all, or none in a round that needs some.

    Raised by the aggregators' ``estimate`` (and ``ldp aggregate``); more
    reports, not other parameters, are the remedy.

    Examples
    --------
    >>> import ldp
    >>> from ldp.aggregator import make_aggregator
    >>> try:
    ...     make_aggregator(ldp.GRR(domain=("a", "b"), epsilon=1.0)).estimate()
    ... except EstimateError as error:
    ...     print(error)
    cannot estimate from zero reports
    """


class ReportError(LDPError, ValueError):
    """A report is malformed, truncated, of the wrong version or for another spec.

    Examples
    --------
    >>> from ldp.report import Report
    >>> try:
    ...     Report.from_json('{"v": 1}')
    ... except ReportError as error:
    ...     print(error)
    report has no 'spec' fingerprint
    """


class StateError(LDPError):
    """A client state file is corrupt, truncated, foreign or unwritable.

    The state file is never replaced silently: replacing it would give the
    client a new secret and break the longitudinal (memoization) guarantee.

    Examples
    --------
    >>> import os, tempfile
    >>> import ldp
    >>> from ldp.client import ClientState
    >>> path = os.path.join(tempfile.mkdtemp(), "not-a-state.json")
    >>> descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    >>> _ = os.write(descriptor, b"{}")
    >>> os.close(descriptor)
    >>> try:
    ...     ClientState.load(path, ldp.GRR(domain=("a", "b"), epsilon=1.0))
    ... except StateError as error:
    ...     print("is not an ldp client state file" in str(error))
    True
    """


class BudgetError(LDPError):
    """Base class of the errors of a client's privacy budget (:mod:`ldp.privacy.budget`).

    Examples
    --------
    >>> issubclass(BudgetExceededError, BudgetError), issubclass(BudgetError, ParameterError)
    (True, False)
    """


class BudgetExceededError(BudgetError):
    """An encode would spend more privacy budget than the client has left.

    Examples
    --------
    >>> import os, tempfile
    >>> import ldp
    >>> from ldp.client import make_encoder
    >>> from ldp.privacy import Budget
    >>> ledger = os.path.join(tempfile.mkdtemp(), "client.ledger.json")
    >>> spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    >>> encoder = make_encoder(spec, ledger=ledger, budget=Budget(epsilon=1.0))
    >>> _ = encoder.encode("a")  # spends the whole budget
    >>> try:
    ...     encoder.encode("a")
    ... except BudgetExceededError:
    ...     print("refused; nothing was emitted")
    refused; nothing was emitted
    """


class StoreError(LDPError):
    """Base class of the collector store's errors: unreachable, damaged, or asked about an unknown task.

    Its subclasses live with the store: :class:`ldp.collector.store.StoreUnavailable`,
    :class:`ldp.collector.store.UnknownTaskError` (also a :class:`ParameterError`)
    and :class:`ldp.collector.accumulate.StoreIntegrityError`.

    Examples
    --------
    >>> issubclass(StoreError, LDPError), issubclass(StoreError, ParameterError)
    (True, False)
    """


class LDPWarning(UserWarning):
    """Something works but deserves the user's attention (the CLI prints it as ``Warning: ...``)."""
