"""Candidate lists for the estimates that take them (RAPPOR's decode, the sketches): duplicates dropped."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ldp.errors import InputError

__all__ = ["unique_candidates"]


def unique_candidates(candidates: Sequence[Any], key: Callable[[Any], Hashable] = str) -> list[Any]:
    """The candidates without duplicates (equal ``key``, by default their text), first occurrence kept.

    Raises
    ------
    InputError
        ``candidates`` is a single string or bytes value.
    """
    if isinstance(candidates, (str, bytes)):
        raise InputError("candidates must be a sequence of values, not a single string")
    seen: dict[Hashable, Any] = {}
    for value in candidates:
        seen.setdefault(key(value), value)
    return list(seen.values())
