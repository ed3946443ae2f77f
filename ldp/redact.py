"""URLs as they may be shown: without passwords, tokens or other secrets.

A URL given on a command line may carry credentials: ``ldp upload --to
http://user:PASSWORD@host``, ``ldp serve --store
postgresql://user:PASSWORD@host/db``, ``...?token=...``. Every message,
log line, status page or error that shows such a URL shows
:func:`redact_url` of it instead, so a secret never reaches a terminal, a
log file or a bug report.

This module imports only the standard library: every part of ``ldp`` (the
client, the collector) may use it.
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["MASK", "SECRET_PARAMETERS", "redact_url", "url_secrets"]

#: What a secret is replaced with.
MASK = "***"
#: A query (or fragment) parameter whose name ends in one of these words, in any case, holds a secret:
#: ``password``, ``sslpassword``, ``token``, ``access_token``, ``secret``, ``client_secret``, ``key``, ``api_key``.
SECRET_PARAMETERS = ("password", "passwd", "pwd", "token", "secret", "key")

#: The fallback for a string :func:`urllib.parse.urlsplit` refuses (an unclosed ``[`` in the host):
#: ``scheme://user:PASSWORD@`` and ``name=VALUE`` of a secret parameter.
_USERINFO_PASSWORD = re.compile(r"(//[^/?#@:]*:)[^@]*@")
_SECRET_PAIR = re.compile(r"(?i)([?&#;](?:[^=&#;]*(?:" + "|".join(SECRET_PARAMETERS) + r"))=)[^&#;]*")


def redact_url(url: str) -> str:
    """``url`` with its password and the values of its secret query parameters replaced by ``***``.

    The password of the user part (``scheme://user:PASSWORD@host``) becomes
    ``***``; so does the value of every query or fragment parameter whose
    name ends in ``password``, ``passwd``, ``pwd``, ``token``, ``secret`` or
    ``key`` (any case: ``password``, ``sslpassword``, ``Token``,
    ``access_token``, ``api_key``, ``client_secret``). Everything else is
    kept as written. A string that is not a URL (no ``//host`` part) is
    returned unchanged, except ``user:PASSWORD@host`` (a URL whose
    ``scheme://`` was left out); a malformed URL is masked as well as it can
    be read. Never raises.

    Parameters
    ----------
    url : str
        A URL, as the user gave it.

    Returns
    -------
    str
        The URL to show in messages.

    Examples
    --------
    >>> redact_url("postgresql://ldp:s3cret@db.example:5432/ldp")
    'postgresql://ldp:***@db.example:5432/ldp'
    >>> redact_url("https://collector.example/v1?Token=abc&task=t1")
    'https://collector.example/v1?Token=***&task=t1'
    >>> redact_url("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'
    >>> redact_url("reports.jsonl")
    'reports.jsonl'
    """
    try:
        if isinstance(url, (bytes, bytearray)):
            text = bytes(url).decode("utf-8", "replace")
        else:
            text = url if isinstance(url, str) else str(url)
    except Exception:  # a str() that fails: nothing of it can be shown safely
        return MASK
    try:
        return _redact(text)
    except Exception:  # urlsplit refuses it (e.g. an unclosed "[" in the host): mask by pattern
        try:
            return _SECRET_PAIR.sub(lambda m: m[1] + MASK, _USERINFO_PASSWORD.sub(r"\1" + MASK + "@", text))
        except Exception:
            return MASK


#: ``user:password@host...`` without ``scheme://``.
_BARE_CREDENTIALS = re.compile(r"([^\s:/?#@]+):[^\s/?#]*@([^\s@/?#]+.*)", re.DOTALL)
#: The scheme and ``//`` that open a URL with a host.
_OPENING = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//")


def _redact(url: str) -> str:
    if not urllib.parse.urlsplit(url).netloc:
        bare = _BARE_CREDENTIALS.match(url)  # user:password@host, the scheme left out
        return f"{bare[1]}:{MASK}@{bare[2]}" if bare else url  # else a file name, a plain word
    opening = _OPENING.match(url)
    if opening is None:
        raise ValueError(url)  # urlsplit read past leading blanks or control characters: the fallback
    authority, rest = _authority(url[opening.end() :])
    userinfo, at, host = authority.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        authority = f"{user}:{MASK}@{host}" if colon and password else authority
    before_fragment, hash_mark, fragment = rest.partition("#")
    path, question_mark, query = before_fragment.partition("?")
    return (
        url[: opening.end()]
        + authority
        + path
        + question_mark
        + _redact_pairs(query)
        + hash_mark
        + _redact_pairs(fragment)
    )


def _authority(after_slashes: str) -> tuple[str, str]:
    """``(user@host:port, the rest)`` of what follows ``scheme://``.

    The authority ends at the first ``/``, ``?`` or ``#``. But a password
    holding one of them unencoded (``user:pa/ss@host``) would end it early,
    leaving a "port" that is not a number, with an ``@`` further on: then the
    authority runs to the last ``@`` and the host after it, so the whole
    password is masked.
    """
    end = next((i for i, c in enumerate(after_slashes) if c in "/?#"), len(after_slashes))
    authority, rest = after_slashes[:end], after_slashes[end:]
    if "@" in authority or "@" not in rest:
        return authority, rest
    port = authority.rpartition(":")[2] if ":" in authority and not authority.endswith("]") else ""
    if not port or port.isdigit():
        return authority, rest
    at = after_slashes.rindex("@")
    host_end = next(
        (i for i in range(at + 1, len(after_slashes)) if after_slashes[i] in "/?#"), len(after_slashes)
    )
    return after_slashes[:host_end], after_slashes[host_end:]


def _redact_pairs(query: str) -> str:
    """``name=value&...`` with the value of each secret parameter masked, the rest as written."""
    if not query:
        return query
    pairs = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if equals and value and _is_secret(name):
            value = MASK
        pairs.append(name + equals + value)
    return "&".join(pairs)


def _is_secret(name: str) -> bool:
    return urllib.parse.unquote_plus(name).strip().lower().endswith(SECRET_PARAMETERS)


def url_secrets(url: str) -> list[str]:
    """The secrets :func:`redact_url` masks in ``url``, as written and percent-decoded, longest first.

    For masking them wherever else they may appear (a log record, a
    traceback, a driver's error message), by the same reading of the URL as
    :func:`redact_url`. Never raises: a URL it cannot read gives ``[]``.

    Examples
    --------
    >>> url_secrets("postgresql://ldp:s%40cret@db/ldp?sslmode=require&api_key=K1")
    ['s%40cret', 's@cret', 'K1']
    >>> url_secrets("reports.jsonl")
    []
    """
    try:
        found = _secrets(url)
    except Exception:
        return []
    decoded = [urllib.parse.unquote(s) for s in found] + [urllib.parse.unquote_plus(s) for s in found]
    return sorted(dict.fromkeys(s for s in found + decoded if s), key=len, reverse=True)


def _secrets(url: str) -> list[str]:
    """The user-part password and secret parameter values of ``url``, as written (the parts :func:`_redact` masks)."""
    opening = _OPENING.match(url)
    if not urllib.parse.urlsplit(url).netloc or opening is None:
        bare = _BARE_CREDENTIALS.match(url)  # user:password@host, the scheme left out
        return [url[len(bare[1]) + 1 : bare.start(2) - 1]] if bare else []
    authority, rest = _authority(url[opening.end() :])
    userinfo, at, _ = authority.rpartition("@")
    found = [userinfo.partition(":")[2]] if at else []
    before_fragment, _, fragment = rest.partition("#")
    for pairs in (before_fragment.partition("?")[2], fragment):
        for pair in pairs.split("&") if pairs else ():
            name, equals, value = pair.partition("=")
            if equals and value and _is_secret(name):
                found.append(value)
    return found
