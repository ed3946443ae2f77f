"""The dashboard's files (package data ``ldp.collector/static``), served by exact name.

A name from a request is only ever looked up among the package's files,
never used as a path; every reply carries a content security policy that
allows nothing inline and nothing from another origin.
"""

from __future__ import annotations

import functools
from importlib import resources

from starlette.responses import Response

from ldp.collector.problems import problem

__all__ = ["static_reply"]

_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
#: The dashboard needs nothing inline and nothing from another origin.
_PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@functools.cache
def _static_files() -> dict[str, bytes]:
    """The dashboard's files (package data ``ldp.collector/static``) by name, read once."""
    folder = resources.files("ldp.collector").joinpath("static")
    return {
        entry.name: entry.read_bytes()
        for entry in folder.iterdir()
        if entry.is_file() and _suffix(entry.name) in _STATIC_TYPES
    }


def _suffix(name: str) -> str:
    return name[name.rfind(".") :] if "." in name else ""


def static_reply(name: str) -> Response:
    """A file of the dashboard, looked up by exact name among the package's files (never a path from the request)."""
    data = _static_files().get(name)
    if data is None:
        return problem(404, "Not found", "no such file")
    return Response(
        data,
        media_type=_STATIC_TYPES[_suffix(name)],
        headers={"Content-Security-Policy": _PAGE_POLICY, "X-Content-Type-Options": "nosniff"},
    )
