"""How a CLI command names the Python parameters of library errors: by its flags.

Library code raises :meth:`ParameterError.naming <ldp.errors.ParameterError.naming>`
errors that name Python parameters (``workers=9 is too many ...``). A command
wraps its library calls in :meth:`Flags.translating`, which re-raises such an
error in the command's own words (``--workers 9 is too many ...``); every
other error passes through unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from ldp.errors import ParameterError

__all__ = ["Flags"]


@dataclasses.dataclass(frozen=True)
class Flags:
    """The flag of each Python parameter of one command.

    Parameters
    ----------
    names : mapping of str to str
        Python parameter -> flag (``{"rappor.num_bits": "--rappor-bits"}``).
        A parameter not listed is spelled ``--`` + its name with ``_`` as ``-``.
    choices : frozenset of str
        Parameters whose values are click choices, shown bare
        (``--engine dask``); other text values are quoted (``--scheduler 'x'``).
    """

    names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    choices: frozenset[str] = frozenset()

    def flag(self, parameter: str) -> str:
        """The flag of ``parameter``."""
        return self.names.get(parameter, "--" + parameter.replace("_", "-"))

    def spell(self, parameter: str, value: Any = None) -> str:
        """``--flag``, or ``--flag VALUE`` when a value is given."""
        flag = self.flag(parameter)
        if value is None:
            return flag
        shown = value if parameter in self.choices or not isinstance(value, str) else repr(value)
        return f"{flag} {shown}"

    def message(self, error: ParameterError) -> str:
        """The text of ``error`` with its parameters spelled as flags."""
        return error.render(self.spell)

    @contextlib.contextmanager
    def translating(self) -> Iterator[None]:
        """Re-raise a :class:`ParameterError` that names parameters with this command's flags."""
        try:
            yield
        except ParameterError as error:
            if error.template is None:
                raise
            raise type(error)(self.message(error)) from None
