"""The TypeScript client (js/) built once per test session, so plain ``pytest`` from a fresh clone runs the JS tests.

:func:`build_js` installs js/'s locked dependencies (``npm ci``) when ``js/node_modules`` is missing or older
than ``js/package-lock.json``, and builds ``js/dist`` (``npm run build``: esbuild and tsc, a few seconds) when
it is missing or older than any of its sources. Under pytest-xdist every worker calls it; the first takes a
lock (a directory created atomically in the session's shared temporary directory), builds, and leaves a
result file the others read, so js/ is built once and never while another worker runs ``js/dist/cli.js``.

Without ``node`` and ``npm`` the JS tests are skipped with that reason, except under CI (``CI`` set in the
environment), where a missing toolchain fails them: CI must not pass with the JS tests silently left out.
A failing ``npm ci`` or build is always an error, never a skip.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from session_build import newest_mtime, once_per_session, require_tools

JS = Path(__file__).resolve().parent.parent / "js"
CLI = JS / "dist" / "cli.js"
#: what ``npm run build`` reads: a newer one of these makes js/dist stale
SOURCES = ("src", "package.json", "package-lock.json", "tsconfig.json")
LOCK_TIMEOUT_S = 600


def _needs_install() -> bool:
    marker = JS / "node_modules" / ".package-lock.json"  # written by npm ci / npm install
    return not marker.exists() or marker.stat().st_mtime < (JS / "package-lock.json").stat().st_mtime


def _needs_build() -> bool:
    return not CLI.exists() or CLI.stat().st_mtime < newest_mtime([JS / name for name in SOURCES])


def _run(command: list[str]) -> str | None:
    """Run ``command`` in js/; None when it succeeded, else one message with its output's tail."""
    done = subprocess.run(command, cwd=JS, capture_output=True, text=True)
    if done.returncode == 0:
        return None
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
    return f"`{' '.join(command)}` in js/ failed with exit status {done.returncode}:\n{tail}"


def _build() -> str:
    """Install and build js/ as needed: "ok", or the error message."""
    if _needs_install():
        error = _run(["npm", "ci", "--no-audit", "--no-fund"])
        if error:
            return error
    if _needs_build():
        error = _run(["npm", "run", "--silent", "build"])
        if error:
            return error
    return "ok"


def build_js(shared: Path) -> Path:
    """js/ installed and built once for the session whose workers share the directory ``shared``; js/'s path.

    Skips (or fails under CI) without node and npm; fails with the command's output when npm fails.
    """
    require_tools(("node", "npm"), "the TypeScript client's tests", "install Node.js 20+")
    once_per_session(shared, "js", _build, LOCK_TIMEOUT_S)
    return JS
