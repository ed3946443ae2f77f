"""Packaging: the wheel holds every subpackage; the client stays light to import.

The package-dir layout of docs/architecture.md#layout maps ``client/`` to ``ldp.client`` and so
on; a subpackage missing from pyproject's ``packages`` list is silently left
out of the wheel, which an editable install would never show.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def source_packages() -> dict[str, Path]:
    """Every importable package of the source tree, by dotted name (from the package-dir mapping)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = config["package-dir"]
    packages = {}
    for top, directory in roots.items():
        base = ROOT / directory
        for init in base.rglob("__init__.py"):
            relative = init.parent.relative_to(base).parts
            packages[".".join((top, *relative))] = init.parent
    return packages


def test_every_source_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    missing = set(source_packages()) - listed
    assert not missing, f"packages not listed in pyproject.toml [tool.setuptools] packages: {sorted(missing)}"


def build_wheel(outdir: Path) -> Path:
    """Build the project's wheel into ``outdir`` and return its path.

    The wheel is built from the source distribution, in a clean directory: a
    wheel built in the checkout would also take whatever an earlier build
    left in ``build/lib`` (a file deleted or no longer packaged would pass).
    """
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = outdir.glob("ldp_telemetry-*.whl")
    return wheel


@pytest.mark.slow
def test_wheel_contains_every_subpackage_and_module(tmp_path):
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    for dotted, directory in source_packages().items():
        prefix = dotted.replace(".", "/")
        for module in directory.glob("*.py"):
            assert f"{prefix}/{module.name}" in names, f"{dotted}.{module.stem} missing from {wheel.name}"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "ldp = ldp.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_importing_the_client_does_not_import_heavy_libraries():
    code = (
        "import sys, ldp.client\n"
        "heavy = sorted(m for m in ('pandas', 'scipy', 'matplotlib', 'pyarrow') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert result.stdout.strip() == "", f"importing ldp.client imported {result.stdout.strip()}"


def test_the_version_is_written_once():
    import importlib.metadata

    import ldp

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert importlib.metadata.version(project["name"]) == ldp.__version__


def test_a_broken_subcommand_import_is_an_error_not_a_missing_command(monkeypatch):
    from click.testing import CliRunner

    import ldp.cli

    monkeypatch.setitem(ldp.cli.SUBCOMMANDS, "google-rappor", "ldp.aggregator.no_such_module:google_rappor")
    result = CliRunner().invoke(ldp.cli.cli, ["google-rappor", "--help"])
    assert isinstance(result.exception, ModuleNotFoundError)
    assert "no_such_module" in str(result.exception)


def test_the_ci_lock_pins_every_declared_dependency_within_its_range():
    """requirements/ci.txt (written by .ci/lock) is not stale: every dependency pyproject.toml declares for
    CI (the core ones, the test extra with serve inside it, the docs, lint and fast extras) is pinned there at a version its range accepts."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [Requirement(text) for text in project["dependencies"]]
    for extra in ("serve", "test", "docs", "lint", "fast"):
        declared += [Requirement(text) for text in project["optional-dependencies"][extra]]
    pins = {}
    for line in (ROOT / "requirements" / "ci.txt").read_text().splitlines():
        pin = line.split("#", 1)[0].strip()
        if pin:
            name, version = pin.split("==")
            pins[canonicalize_name(name)] = version.strip()
    self_name = canonicalize_name(project["name"])
    problems = [
        f"{req} (pinned: {pins.get(canonicalize_name(req.name))})"
        for req in declared
        if canonicalize_name(req.name) != self_name
        and not (
            canonicalize_name(req.name) in pins
            and req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True)
        )
    ]
    assert not problems, f"requirements/ci.txt is stale; run .ci/lock: {problems}"
