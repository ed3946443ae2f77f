"""Exception hierarchy of ``ldp``.

Every error raised on bad user input is an :class:`LDPError`, so a caller (and
the CLI) can tell a user mistake from a bug. Messages name the parameter, what
was expected and what was received.
"""

from __future__ import annotations

__all__ = ["BudgetExceededError", "LDPError", "LDPWarning", "ParameterError", "ReportError", "StateError"]


class LDPError(Exception):
    """Base class of every error ``ldp`` raises on purpose."""


class ParameterError(LDPError, ValueError):
    """A mechanism parameter, option or input value is invalid."""


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
