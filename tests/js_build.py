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

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parent.parent / "js"
CLI = JS / "dist" / "cli.js"
#: what ``npm run build`` reads: a newer one of these makes js/dist stale
SOURCES = ("src", "package.json", "package-lock.json", "tsconfig.json")
LOCK_TIMEOUT_S = 600
_RESULT = "js-build-result.txt"


def _newest_mtime(paths: list[Path]) -> float:
    newest = 0.0
    for path in paths:
        files = path.rglob("*") if path.is_dir() else [path]
        newest = max([newest, *(f.stat().st_mtime for f in files if f.is_file())])
    return newest


def _needs_install() -> bool:
    marker = JS / "node_modules" / ".package-lock.json"  # written by npm ci / npm install
    return not marker.exists() or marker.stat().st_mtime < (JS / "package-lock.json").stat().st_mtime


def _needs_build() -> bool:
    return not CLI.exists() or CLI.stat().st_mtime < _newest_mtime([JS / name for name in SOURCES])


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
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not on PATH: the TypeScript client's tests cannot run (install Node.js 20+)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run them", pytrace=False)
        pytest.skip(reason)
    result, lock = shared / _RESULT, shared / "js-build.lock"
    try:
        lock.mkdir()
    except FileExistsError:  # another worker builds: wait for its result
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while not result.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"js/ was not built within {LOCK_TIMEOUT_S} s by another worker ({lock})")
            time.sleep(0.2)
        time.sleep(0.05)  # the result file is written in one call; let it land
    else:
        outcome = _build()
        (shared / (_RESULT + ".tmp")).write_text(outcome)
        (shared / (_RESULT + ".tmp")).replace(result)
    outcome = result.read_text()
    if outcome != "ok":
        pytest.fail(outcome, pytrace=False)
    return JS
