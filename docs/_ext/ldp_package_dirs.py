"""Griffe extension for the docs build: attach ``client/``, ``aggregator/``, ``simulations/`` and ``collector/`` to ``ldp``.

setuptools installs those directories as ``ldp.client``, ``ldp.aggregator`` and
``ldp.simulations`` (``[tool.setuptools.package-dir]`` in pyproject.toml);
griffe's static finder only sees ``ldp/``. This loads each directory and makes
it a submodule of ``ldp`` under its installed name.
"""

from __future__ import annotations

from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parents[2]
SUBPACKAGES = {
    "client": "client",
    "aggregator": "aggregator",
    "simulations": "simulations",
    "collector": "collector",
}


class LdpPackageDirs(griffe.Extension):
    """Make the package-dir mapped subpackages members of ``ldp``."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs) -> None:
        if pkg.name != "ldp":
            return
        for name, directory in SUBPACKAGES.items():
            if name in pkg.members:
                continue
            sub = griffe.GriffeLoader(docstring_parser=loader.docstring_parser).load(ROOT / directory)
            sub.name = name
            pkg.set_member(name, sub)
