"""Type information as a user's type checker meets it: ``py.typed`` shipped, entry points typed.

``tests/typing/user_script.py`` is a user's script; mypy checks it against the
source layout (linked as installed) and against the built wheel installed on
its own, where a missing ``py.typed`` makes every ``import ldp`` an error. Both
are slow: the source-layout check costs 8 to 11 s whenever the package changed
since the last mypy run, and ``.ci/typecheck`` runs the same check (same
layout, configuration and cache) right after checking the package, where it
costs under a second. The fast set keeps the package-data check.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from test_packaging import ROOT, build_wheel

SCRIPT = ROOT / "tests" / "typing" / "user_script.py"


def _mypy(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


def test_py_typed_is_package_data():
    assert (ROOT / "ldp" / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["ldp"]


@pytest.mark.slow  # fast equivalent: the second mypy call of .ci/typecheck (same script, layout and config)
def test_user_script_type_checks_against_the_source_layout(tmp_path):
    tree = tmp_path / "tree"
    (tree / "ldp").mkdir(parents=True)
    for entry in (ROOT / "ldp").iterdir():
        (tree / "ldp" / entry.name).symlink_to(entry)
    for sub in ("client", "aggregator", "simulations", "collector"):
        (tree / "ldp" / sub).symlink_to(ROOT / sub)
    result = _mypy(
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(ROOT / ".mypy_cache"),
        str(SCRIPT),
        cwd=tree,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_user_script_type_checks_against_the_built_wheel(tmp_path):
    wheel = build_wheel(tmp_path / "dist")
    assert "ldp/py.typed" in zipfile.ZipFile(wheel).namelist()
    venv = tmp_path / "venv"  # a bare environment: only the wheel provides ldp (no editable install)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", site, str(wheel)],
        check=True,
        capture_output=True,
    )
    config = tmp_path / "mypy.ini"  # a user's configuration, not the project's
    config.write_text("[mypy]\n")
    result = _mypy(
        "--config-file",
        str(config),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--python-executable",
        str(python),
        str(SCRIPT),
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")},
    )
    assert result.returncode == 0, result.stdout + result.stderr
