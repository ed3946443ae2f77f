"""tests/js_build.py: the JS tests are built for, skipped only without node, and never silently skipped in CI."""

from __future__ import annotations

import shutil

import js_build
import pytest
import session_build


@pytest.fixture
def no_node(monkeypatch):
    real = shutil.which
    monkeypatch.setattr(
        session_build.shutil, "which", lambda name: None if name in ("node", "npm") else real(name)
    )


def test_without_node_the_js_tests_are_skipped_with_the_reason(no_node, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="node and npm not on PATH"):
        js_build.build_js(tmp_path)


def test_without_node_under_ci_the_js_tests_fail(no_node, monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run them"):
        js_build.build_js(tmp_path)


def test_a_failed_build_of_another_worker_fails_every_worker(monkeypatch, tmp_path):
    """The worker that did not build reads the builder's outcome: its error, not a skip nor a second build."""
    monkeypatch.setattr(session_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(js_build, "_build", lambda: pytest.fail("built twice"))
    (tmp_path / "js-build.lock").mkdir()
    (tmp_path / "js-build-result.txt").write_text("`npm ci` in js/ failed with exit status 1:\nE404")
    with pytest.raises(pytest.fail.Exception, match="npm ci` in js/ failed"):
        js_build.build_js(tmp_path)


def test_the_first_worker_builds_once_and_records_the_outcome(monkeypatch, tmp_path):
    monkeypatch.setattr(session_build.shutil, "which", lambda name: f"/usr/bin/{name}")
    builds = []
    monkeypatch.setattr(js_build, "_build", lambda: builds.append(1) or "ok")
    assert js_build.build_js(tmp_path) == js_build.JS
    assert js_build.build_js(tmp_path) == js_build.JS  # a second worker: reads the result
    assert builds == [1]
    assert (tmp_path / "js-build-result.txt").read_text() == "ok"
