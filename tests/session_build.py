"""A client toolchain's build done once per test session, shared by the pytest-xdist workers.

Used by tests/js_build.py (the TypeScript client) and tests/kotlin_build.py (the Kotlin client).
:func:`require_tools` skips a test whose toolchain is missing, except under CI (``CI`` set in the
environment), where it fails: CI must not pass with a client's tests silently left out.
:func:`once_per_session` runs a build in the first worker that asks (it takes a lock, a directory created
atomically in the session's shared temporary directory) and leaves a result file the other workers wait for
and read, so the build runs once and never while another worker runs its output. A failing build is always an
error, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest


def newest_mtime(paths: list[Path]) -> float:
    """The newest modification time of the files under ``paths`` (files or directories)."""
    newest = 0.0
    for path in paths:
        files = path.rglob("*") if path.is_dir() else [path]
        newest = max([newest, *(f.stat().st_mtime for f in files if f.is_file())])
    return newest


def require_tools(tools: tuple[str, ...], what: str, install: str) -> None:
    """Skip (fail under CI) unless every command of ``tools`` is on PATH: ``what`` cannot run without them."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not on PATH: {what} cannot run ({install})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run them", pytrace=False)
        pytest.skip(reason)


def once_per_session(shared: Path, name: str, build: Callable[[], str], timeout_s: float) -> None:
    """Run ``build`` (it returns "ok" or an error message) once for the workers sharing ``shared``.

    Every caller then fails with the build's message unless it was "ok". ``name`` names the lock and the
    result file; a worker waits at most ``timeout_s`` for another's build. A build that times out
    (``subprocess.TimeoutExpired``) is reported as such.
    """
    result, lock = shared / f"{name}-build-result.txt", shared / f"{name}-build.lock"
    try:
        lock.mkdir()
    except FileExistsError:  # another worker builds: wait for its result
        deadline = time.monotonic() + timeout_s
        while not result.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"{name}/ was not built within {timeout_s} s by another worker ({lock})")
            time.sleep(0.2)
        time.sleep(0.05)  # the result file is written in one call; let it land
    else:
        try:
            outcome = build()
        except subprocess.TimeoutExpired as exc:
            outcome = f"`{' '.join(map(str, exc.cmd))}` in {name}/ did not finish within {exc.timeout} s"
        temporary = result.with_name(result.name + ".tmp")
        temporary.write_text(outcome)
        temporary.replace(result)
    outcome = result.read_text()
    if outcome != "ok":
        pytest.fail(outcome, pytrace=False)
