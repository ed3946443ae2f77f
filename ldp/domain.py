"""Categorical domains: validation and value → index lookup.

A domain is a tuple of distinct JSON scalars (strings or integers). Integer
domains also accept their decimal string form at encode time, because values
read from CSV or text files arrive as strings. Booleans are never domain
values, and a boolean value is refused rather than looked up as 1 or 0
(Python's ``True == 1``; a JSON ``true`` is not the integer 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ldp.errors import InputError, ParameterError
from ldp.shorten import VALUE_ECHO_LIMIT, shown

__all__ = ["DomainIndex", "DomainValue", "normalize_domain"]

DomainValue = str | int


def normalize_domain(values: Iterable[Any], name: str = "domain") -> tuple[DomainValue, ...]:
    """Validate and freeze a categorical domain.

    Raises
    ------
    ParameterError
        If the domain is empty, has duplicates, or holds something other than
        integers and strings that UTF-8 can encode (no lone surrogates).
    """
    if isinstance(values, (str, bytes)):
        raise ParameterError(
            f"{name} must be a sequence of values, got the string {shown(values, VALUE_ECHO_LIMIT)}"
        )
    try:
        out = tuple(values)
    except TypeError:
        raise ParameterError(f"{name} must be a sequence of values, got {type(values).__name__}") from None
    if not out:
        raise ParameterError(f"{name} must not be empty")
    for value in out:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ParameterError(
                f"{name} values must be strings or integers, got {shown(value, VALUE_ECHO_LIMIT)} ({type(value).__name__})"
            )
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:  # a lone surrogate: no report could ever carry it
                raise ParameterError(
                    f"{name} value {shown(value, VALUE_ECHO_LIMIT)} is not valid Unicode text (lone surrogate at position {exc.start})"
                ) from None
    if len(set(out)) != len(out):
        seen: set[DomainValue] = set()
        dups = []
        for value in out:
            if value in seen:
                dups.append(value)
            seen.add(value)
        shown_dups = ", ".join(shown(v, VALUE_ECHO_LIMIT) for v in dups[:5])
        raise ParameterError(f"{name} has duplicate values: [{shown_dups}]")
    if len({str(v) for v in out}) != len(out):
        raise ParameterError(f"{name} mixes values that print the same (e.g. 1 and '1'); use one type")
    return out


class DomainIndex(Mapping):
    """Map domain values (and their string forms) to their index."""

    def __init__(self, domain: tuple[DomainValue, ...]):
        self._domain = domain
        self._index: dict[Any, int] = {}
        for i, value in enumerate(domain):
            self._index[value] = i
            self._index.setdefault(str(value), i)

    def __getitem__(self, value: Any) -> int:
        return self._index[value]

    def __iter__(self):
        return iter(self._domain)

    def __len__(self) -> int:
        return len(self._domain)

    def index(self, value: Any, name: str = "value") -> int:
        """Index of ``value``; a clear :class:`InputError` when it is not in the domain (or a boolean)."""
        if isinstance(value, (bool, np.bool_)):
            raise InputError(
                f"{name} {shown(value, VALUE_ECHO_LIMIT)} is a boolean, not a domain value: domains hold strings or integers, "
                f"and a boolean is not read as {int(value)} (pass the domain value itself)"
            )
        try:
            return self._index[value]
        except (KeyError, TypeError):
            pass
        if isinstance(value, float) and value.is_integer():
            try:
                return self._index[int(value)]
            except KeyError:
                pass
        preview = ", ".join(shown(v, VALUE_ECHO_LIMIT) for v in self._domain[:5])
        more = ", ..." if len(self._domain) > 5 else ""
        raise InputError(
            f"{name} {shown(value, VALUE_ECHO_LIMIT)} is not in the domain ({len(self._domain)} values: {preview}{more})"
        )
