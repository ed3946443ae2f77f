"""Secrets out of URLs before they are printed or logged.

:func:`redact_url` masks the password of a URL's user part and the values of
query parameters that carry credentials (``password``, ``token``, ``secret``,
``key``, in any case) with ``***``; everything else of the URL is kept as
written, and a string that is not a URL is returned unchanged.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

__all__ = ["MASK", "redact_url"]

#: What a secret is replaced with.
MASK = "***"
_SECRET_PARAMETERS = frozenset({"password", "token", "secret", "key"})


def redact_url(url: str) -> str:
    """``url`` with its password and credential query values replaced by ``***``; never raises.

    Parameters
    ----------
    url : str
        Any string; only ``scheme://…`` URLs are changed.

    Returns
    -------
    str
        The URL with ``user:***@`` for ``user:password@`` and ``name=***`` for
        each ``password``, ``token``, ``secret`` or ``key`` query parameter;
        any other string unchanged.

    Examples
    --------
    >>> redact_url("postgresql://ldp:hunter2@db:5432/ldp?sslmode=require&Password=x")
    'postgresql://ldp:***@db:5432/ldp?sslmode=require&Password=***'
    >>> redact_url("ldp-collector.db")
    'ldp-collector.db'
    """
    if not isinstance(url, str):
        return url
    scheme, found, rest = url.partition("://")
    if not found or not scheme or not scheme.replace("+", "").replace("-", "").replace(".", "").isalnum():
        return url
    try:
        return f"{scheme}://{_redact_rest(rest)}"
    except Exception:  # pragma: no cover - defensive: a redactor must never be the thing that fails
        return f"{scheme}://{MASK}"


def _redact_rest(rest: str) -> str:
    """The part after ``scheme://``: authority, path, query and fragment."""
    end = len(rest)
    for mark in "/?#":
        position = rest.find(mark)
        if position != -1:
            end = min(end, position)
    at = rest.rfind("@", 0, end)
    if at == -1 and "@" in rest:
        # a password holding an unencoded '/', '?' or '#' ends the authority early: the user part
        # still runs to the first '@' when what precedes it reads user:password
        first = rest.index("@")
        if ":" in rest[:first] and "?" not in rest[:first] and "#" not in rest[:first]:
            at = first
    if at != -1:
        userinfo, rest = rest[:at], rest[at + 1 :]
        user, colon, _ = userinfo.partition(":")
        authority_prefix = f"{user}:{MASK}@" if colon else f"{userinfo}@"
    else:
        authority_prefix = ""
    before_fragment, hash_mark, fragment = rest.partition("#")
    path, question, query = before_fragment.partition("?")
    if question:
        query = "&".join(_redact_parameter(part) for part in query.split("&"))
    return f"{authority_prefix}{path}{question}{query}{hash_mark}{fragment}"


def _redact_parameter(part: str) -> str:
    name, equals, _ = part.partition("=")
    if equals and unquote_plus(name).strip().lower() in _SECRET_PARAMETERS:
        return f"{name}={MASK}"
    return part
