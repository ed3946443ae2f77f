"""Exception hierarchy of ``ldp``.

Every error raised on bad user input is an :class:`LDPError`, so a caller (and
the CLI) can tell a user mistake from a bug. Messages name the parameter, what
was expected and what was received.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ldp.shorten import ECHO_LIMIT, shorten_values

__all__ = ["BudgetExceededError", "LDPError", "LDPWarning", "ParameterError", "ReportError", "StateError"]


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
    """

    #: The offending parameters, Python name -> value (empty when not known).
    parameters: Mapping[str, Any] = {}
    #: The message with ``{name}`` / ``{name=}`` placeholders, or None.
    template: str | None = None

    @classmethod
    def naming(cls, template: str, /, **parameters: Any) -> ParameterError:
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


def _python_name(name: str, value: Any) -> str:
    return name if value is None else f"{name}={value!r}"


def _render(template: str, parameters: Mapping[str, Any], name: Callable[[str, Any], str]) -> str:
    def spell(match: re.Match[str]) -> str:
        key, with_value = match[1], match[2]
        if key not in parameters:
            return match[0]
        return name(key, parameters[key] if with_value else None)

    return _PLACEHOLDER.sub(spell, template)


class ReportError(LDPError, ValueError):
    """A report is malformed, truncated, of the wrong version or for another spec."""


class StateError(LDPError):
    """A client state file is corrupt, truncated, foreign or unwritable.

    The state file is never replaced silently: replacing it would give the
    client a new secret and break the longitudinal (memoization) guarantee.
    """


class BudgetExceededError(LDPError):
    """An encode would spend more privacy budget than the client has left."""


class LDPWarning(UserWarning):
    """Something works but deserves the user's attention (the CLI prints it as ``Warning: ...``)."""
