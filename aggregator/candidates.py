"""Candidate lists for the estimates that take them (RAPPOR's decode, the sketches): read, duplicates dropped."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from ldp.errors import InputError

__all__ = ["parse_candidates", "read_candidates", "unique_candidates"]


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


def parse_candidates(text: str) -> list[str]:
    """The candidates of a candidates file's text: one value per line, each stripped, blank lines and repeats dropped."""
    return list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))


def read_candidates(path: str | Path) -> list[str]:
    """The candidates in the file ``path`` (:func:`parse_candidates`): what ``--candidates FILE`` reads.

    Raises
    ------
    InputError
        The file cannot be read as UTF-8 text, or holds no candidate.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read candidates file {str(path)!r}: {exc}") from None
    candidates = parse_candidates(text)
    if not candidates:
        raise InputError(f"candidates file {str(path)!r} has no candidates (one per line)")
    return candidates
