"""ldp.allocator: ``ldp aggregate`` keeps freed memory for reuse (glibc), unless the user tuned malloc."""

from __future__ import annotations

import platform
import sys

import pytest
from click.testing import CliRunner

import ldp
import ldp.allocator
from ldp.cli import cli

_GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not _GLIBC, reason="glibc's mallopt only")
def test_thresholds_are_set_on_glibc(monkeypatch):
    for name in ldp.allocator._USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert ldp.allocator.keep_freed_memory() is True


@pytest.mark.parametrize("name", ["GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"])
def test_a_user_setting_of_malloc_wins(monkeypatch, name):
    monkeypatch.setenv(name, "glibc.malloc.trim_threshold=0" if name == "GLIBC_TUNABLES" else "0")
    assert ldp.allocator.keep_freed_memory() is False


def test_aggregate_keeps_freed_memory(tmp_path, monkeypatch):
    """Every chunk's arrays are freed before the next: ``ldp aggregate`` asks malloc to reuse their pages."""
    calls = []
    monkeypatch.setattr(ldp.allocator, "keep_freed_memory", lambda: calls.append(1) or True)
    spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    (tmp_path / "spec.json").write_text(spec.to_json())
    (tmp_path / "r.csv").write_text(f"v,spec,value\n1,{spec.fingerprint},a\n")
    args = ["aggregate", "--spec", str(tmp_path / "spec.json"), str(tmp_path / "r.csv")]
    result = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "e.csv")])
    assert result.exit_code == 0, result.output
    assert calls == [1]
