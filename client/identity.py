"""One canonical text form of a client id, whatever the input format typed it as.

A client id selects a client's persistent state (its secret and cohort) and
its privacy ledger. If the same client could be spelled two ways, it would get
two secrets and two budgets: averaging the reports of its two permanent
randomized responses would reveal its value, and each budget would allow the
full ε. Input formats type numbers differently: JSON writes ``1`` or
``1.0``, pandas turns an integer column holding a null into floats, CSV
holds text. So every id goes through :func:`canonical_client_id` first:

- text is used exactly as written (no trimming, no case folding), except
  that the zero fraction of a decimal integer is dropped (``"12.0"`` and
  ``"12.000"`` give ``"12"``): that is how a CSV written by pandas or a
  spreadsheet spells an integer id from a column that held a null. Nothing
  else changes: leading zeros and signs stay (``"007"`` is not ``"7"``; in
  text they are part of the id, as in postal codes or account numbers);
- an integer is written in decimal (``1`` gives ``"1"``);
- a float must be a whole number exactly representable as an integer
  (magnitude at most 2**53) and is written as that integer (``1.0`` gives
  ``"1"``); a fraction, NaN, infinity or a float too large to hold its
  integer exactly is refused, because the id it stood for is lost;
- anything else (booleans, null, lists, objects, empty text) is refused.

So ``1``, ``1.0``, ``"1"`` and ``"1.0"`` are one client, in any format.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ldp.errors import InputError

__all__ = ["canonical_client_id"]

_ZERO_FRACTION = re.compile(r"([+-]?[0-9]+)\.0+")
_EXACT_FLOAT_INTEGERS = 2.0**53


def canonical_client_id(raw: Any) -> str:
    """The canonical text form of a client id (see the module docstring for the rule).

    Raises
    ------
    InputError
        If ``raw`` is not text, an integer or a whole-number float, or is empty.

    Examples
    --------
    >>> [canonical_client_id(x) for x in (1, 1.0, "1", "1.0", "007", "alice")]
    ['1', '1', '1', '1', '007', 'alice']
    """
    if isinstance(raw, bool) or raw is None:
        raise InputError(f"client id {raw!r} is not text or an integer")
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw) or not raw.is_integer():
            raise InputError(f"client id {raw!r} is not an integer or text")
        if abs(raw) > _EXACT_FLOAT_INTEGERS:
            raise InputError(
                f"client id {raw!r} is a float too large to hold an integer id exactly; store client ids as text"
            )
        return str(int(raw))
    if isinstance(raw, str):
        if raw == "":
            raise InputError("client id is empty")
        zero_fraction = _ZERO_FRACTION.fullmatch(raw)
        if zero_fraction:
            return zero_fraction.group(1)
        return raw
    raise InputError(f"client id must be text or an integer, got {type(raw).__name__}")
