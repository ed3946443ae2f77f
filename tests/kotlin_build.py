"""The Kotlin client (kotlin/) packaged once per test session, so ``pytest -m slow`` from a fresh clone runs its tests.

:func:`build_kotlin` runs ``mvn -B -q -Dmaven.test.skip=true package`` in kotlin/ when a library module
(``kotlin/ldp-client-*``) has no JAR in its ``target/`` or one older than any of its sources (the JUnit suite itself
is run by tests/kotlin's own test, not here), and copies the command-line module's JAR and its runtime class path
(``ldp-client-cli/target/lib``: every other ldp-client artifact and their dependencies, which the package phase
fills) to the session's shared temporary directory: the tests run that copy, so a ``mvn verify`` of another test rewriting ``target/``
never changes the classes under a running JVM. Maven runs offline first (``-o``: the dependencies already in
``~/.m2``) and online when offline resolution is what failed.

Under pytest-xdist every worker calls it; the first takes a lock (a directory created atomically in the
session's shared temporary directory), builds, and leaves a result file the others read, as tests/js_build.py
does. Without ``java`` and ``mvn`` the Kotlin tests are skipped with that reason, except under CI (``CI`` set in
the environment), where a missing toolchain fails them. A failing build is always an error, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from session_build import newest_mtime, once_per_session, require_tools

KOTLIN = Path(__file__).resolve().parent.parent / "kotlin"
VERSION = "0.1.0"
#: the command-line encoder's artifact, whose package phase copies its runtime class path to ``LIB``
CLI = KOTLIN / "ldp-client-cli"
JAR = CLI / "target" / f"ldp-client-cli-{VERSION}.jar"
LIB = CLI / "target" / "lib"
#: what a module's package reads: a newer one of these makes its JAR stale
SOURCES = ("src/main", "pom.xml")
LOCK_TIMEOUT_S = 1200
BUILD_TIMEOUT_S = 1200
_COPY = "kotlin-client"
#: Maven's words when a dependency or plugin is missing from ~/.m2 in offline mode
_OFFLINE_MISS = ("offline", "Cannot access", "could not be resolved")


def _module_jars() -> dict[Path, Path]:
    """Each library module (a ``kotlin/ldp-client-*`` folder with main sources) and the JAR its package writes."""
    return {
        module: module / "target" / f"{module.name}-{VERSION}.jar"
        for module in sorted(KOTLIN.glob("ldp-client-*"))
        if (module / "src" / "main").is_dir()
    }


def _needs_build() -> bool:
    if not LIB.is_dir():
        return True
    for module, jar in _module_jars().items():
        sources = [KOTLIN / "pom.xml", *(module / name for name in SOURCES)]
        if not jar.exists() or jar.stat().st_mtime < newest_mtime(sources):
            return True
    return False


def maven(*goals: str, timeout: float = BUILD_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``mvn -B -q GOALS`` in kotlin/: offline first, online when an artifact missing from ~/.m2 is why it failed."""
    done = subprocess.run(
        ["mvn", "-B", "-q", "-o", *goals], cwd=KOTLIN, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0 and any(word in done.stdout + done.stderr for word in _OFFLINE_MISS):
        done = subprocess.run(
            ["mvn", "-B", "-q", *goals], cwd=KOTLIN, capture_output=True, text=True, timeout=timeout
        )
    return done


def _failure(done: subprocess.CompletedProcess) -> str:
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
    return f"`{' '.join(map(str, done.args))}` in kotlin/ failed with exit status {done.returncode}:\n{tail}"


def _build(shared: Path) -> str:
    """Package kotlin/ as needed and copy the JAR and target/lib to ``shared``: "ok", or the error message."""
    if _needs_build():
        done = maven("-Dmaven.test.skip=true", "package")
        if done.returncode != 0:
            return _failure(done)
    copy = shared / _COPY
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(LIB, copy / "lib")
    shutil.copy2(JAR, copy / JAR.name)
    return "ok"


def classpath(copy: Path) -> str:
    """The class path of the packaged client in ``copy``: its JAR, then every runtime dependency."""
    return os.pathsep.join([str(copy / JAR.name), *sorted(str(p) for p in (copy / "lib").glob("*.jar"))])


def build_kotlin(shared: Path) -> str:
    """kotlin/ packaged once for the session whose workers share the directory ``shared``; its class path.

    Skips (or fails under CI) without java and mvn; fails with Maven's output when the build fails.
    """
    require_tools(("java", "mvn"), "the Kotlin client's tests", "install a JDK 11+ and Maven")
    once_per_session(shared, "kotlin", lambda: _build(shared), LOCK_TIMEOUT_S)
    return classpath(shared / _COPY)
