"""tests/kotlin_build.py: the Kotlin tests are built for, skipped only without java/mvn, and never silently skipped in CI."""

from __future__ import annotations

import subprocess

import kotlin_build
import pytest
import session_build


@pytest.fixture
def no_java(monkeypatch):
    real = session_build.shutil.which
    monkeypatch.setattr(
        session_build.shutil, "which", lambda name: None if name in ("java", "mvn") else real(name)
    )


def test_without_java_the_kotlin_tests_are_skipped_with_the_reason(no_java, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="java and mvn not on PATH"):
        kotlin_build.build_kotlin(tmp_path)


def test_without_java_under_ci_the_kotlin_tests_fail(no_java, monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run them"):
        kotlin_build.build_kotlin(tmp_path)


def test_a_failed_build_of_another_worker_fails_every_worker(monkeypatch, tmp_path):
    """The worker that did not build reads the builder's outcome: its error, not a skip nor a second build."""
    monkeypatch.setattr(session_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(kotlin_build, "_build", lambda shared: pytest.fail("built twice"))
    (tmp_path / "kotlin-build.lock").mkdir()
    (tmp_path / "kotlin-build-result.txt").write_text(
        "`mvn -B -q -o package` in kotlin/ failed:\nCOMPILATION ERROR"
    )
    with pytest.raises(pytest.fail.Exception, match="COMPILATION ERROR"):
        kotlin_build.build_kotlin(tmp_path)


def test_the_first_worker_builds_once_and_records_the_outcome(monkeypatch, tmp_path):
    monkeypatch.setattr(session_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    builds = []
    monkeypatch.setattr(kotlin_build, "_build", lambda shared: builds.append(1) or "ok")
    first = kotlin_build.build_kotlin(tmp_path)
    assert kotlin_build.build_kotlin(tmp_path) == first  # a second worker: reads the result
    assert builds == [1]
    assert first.split(":")[0].endswith(kotlin_build.JAR.name)
    assert (tmp_path / "kotlin-build-result.txt").read_text() == "ok"


def _done(returncode: int, output: str) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess(["mvn"], returncode, output, "")


def test_maven_goes_online_only_when_offline_resolution_failed(monkeypatch):
    calls = []

    def run(command, **_):
        calls.append(command)
        offline = "-o" in command
        return _done(1, "Cannot access central in offline mode") if offline else _done(0, "")

    monkeypatch.setattr(kotlin_build.subprocess, "run", run)
    assert kotlin_build.maven("package").returncode == 0
    assert ["-o" in c for c in calls] == [True, False]


def test_a_compilation_error_offline_is_not_retried_online(monkeypatch):
    calls = []
    monkeypatch.setattr(
        kotlin_build.subprocess,
        "run",
        lambda command, **_: calls.append(command) or _done(1, "e: Main.kt:3 error"),
    )
    assert kotlin_build.maven("package").returncode == 1
    assert len(calls) == 1
