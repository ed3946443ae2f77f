"""User values as messages may echo them: a megabyte-long value is cut to its ends and its length.

A bad value is named in its error message, but a 5 MB value must not fill a
terminal, a log or every line of a rejects file. Every message that echoes a
user value does it through this module:

- :func:`shown` is ``repr(value)`` for a message being written, cut when long:
  ``'aaaa...aaaa' (5,242,880 characters)``;
- :func:`shorten_values` cuts every long quoted value of a finished message
  (as ``repr`` and click quote them), and the message itself when it is
  still too long. Every :class:`~ldp.errors.LDPError` message goes through
  it, so no error of ``ldp`` holds a value longer than :data:`ECHO_LIMIT`.

This module imports only the standard library.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ECHO_KEEP", "ECHO_LIMIT", "MESSAGE_LIMIT", "VALUE_ECHO_LIMIT", "Shown", "shorten_values", "shown"]

#: Echoed values longer than this are cut (characters): above any real path (PATH_MAX is 4,096 bytes),
#: so a file name in a message is never hidden.
ECHO_LIMIT = 4096
#: A cut value keeps this many characters from its start and from its end.
ECHO_KEEP = 40
#: Whole messages longer than this are cut (characters).
MESSAGE_LIMIT = 10_000
#: A user's value (a report field, a value to encode) is echoed whole up to this many characters;
#: a longer one by its ends and its length. (:data:`ECHO_LIMIT` is the bound of any quoted text,
#: file names included.) A rejects file holds such a message for every bad report, beside its raw text.
VALUE_ECHO_LIMIT = 200
_QUOTED = re.compile("|".join(rf"{q}(?:[^{q}\\\n]|\\.){{{ECHO_LIMIT},}}{q}" for q in ("'", '"')))


def _cut_quoted(text: str) -> str:
    """``'first...last' (N characters)`` of a quoted ``text``; N counts what is between the quotes."""
    quote, value = text[0], text[1:-1]
    return f"{quote}{value[:ECHO_KEEP]}...{value[-ECHO_KEEP:]}{quote} ({len(value):,} characters)"


def shown(value: Any, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)`` for a message, cut to its first and last :data:`ECHO_KEEP` characters when long.

    Parameters
    ----------
    value : object
        The user's value.
    limit : int
        The longest repr shown whole (characters); a longer one is cut, with its length.

    Examples
    --------
    >>> shown("abc")
    "'abc'"
    >>> shown("a" * 5_242_880)
    "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' (5,242,880 characters)"
    >>> shown(list(range(10_000)), limit=20)
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1...9995, 9996, 9997, 9998, 9999] (58,890 characters)'
    """
    if isinstance(value, str) and len(value) > limit:  # cut before repr: never a copy of a huge string
        head, tail = repr(value[:ECHO_KEEP]), repr(value[-ECHO_KEEP:])
        if head[0] == tail[0] == head[-1] == tail[-1]:
            return f"{head[:-1]}...{tail[1:]} ({len(value):,} characters)"
    text = repr(value)
    if len(text) <= limit:
        return text
    if text[0] in "'\"" and text[-1] == text[0]:
        return _cut_quoted(text)
    return f"{text[:ECHO_KEEP]}...{text[-ECHO_KEEP:]} ({len(text):,} characters)"


class Shown:
    """A value whose ``repr`` (and ``str``) is :func:`shown`: for ``str.format`` templates that write ``{raw!r}``."""

    __slots__ = ("limit", "value")

    def __init__(self, value: Any, limit: int = ECHO_LIMIT) -> None:
        self.value = value
        self.limit = limit

    def __repr__(self) -> str:
        return shown(self.value, self.limit)

    __str__ = __repr__


def shorten_values(message: str) -> str:
    """``message`` with every quoted value longer than :data:`ECHO_LIMIT` cut, with its length.

    Values are echoed quoted (``'...'`` or ``"..."``, as ``repr`` and click
    write them); each long one keeps its first and last :data:`ECHO_KEEP`
    characters and says how long it was. A message still longer than
    :data:`MESSAGE_LIMIT` is cut to its first half and its length.

    Examples
    --------
    >>> shorten_values("value " + repr("x" * 5000) + " is not in the domain")
    "value 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' (5,000 characters) is not in the domain"
    """
    if len(message) <= ECHO_LIMIT:
        return message
    shortened = _QUOTED.sub(lambda match: _cut_quoted(match[0]), message)
    if len(shortened) <= MESSAGE_LIMIT:
        return shortened
    return f"{shortened[: MESSAGE_LIMIT // 2]}... ({len(shortened):,} characters)"
