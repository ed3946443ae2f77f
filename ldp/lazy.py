"""Lazy package exports (PEP 562): a name is imported from its module on first use.

``import ldp``, ``ldp.specs`` and ``ldp.aggregator`` export many names whose
modules pull in NumPy, SciPy or pandas. Importing them all eagerly would make
every command pay for every mechanism, so each package declares where each
exported name lives and installs the module-level ``__getattr__`` and
``__dir__`` this module builds:

- a declared name is imported from its module on first access and cached in
  the package's namespace (later accesses are plain attribute reads);
- any other public name that is a submodule of the package is imported
  (``import ldp; ldp.specs`` works as it would if the package were eager);
- ``dir(package)`` is the public surface, ``__all__``, however many
  submodules happen to be imported already (completion and pydoc's member
  scan see what the package promises, not an accident of import order).

Examples
--------
>>> from ldp.lazy import lazy_exports
>>> namespace = {"__name__": "json"}
>>> getattr_, dir_ = lazy_exports(namespace, {"dumps": "json"}, ["dumps"])
>>> getattr_("dumps")("x")
'"x"'
>>> "dumps" in namespace, dir_()
(True, ['dumps'])
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, Any], lazy: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Build a package's ``__getattr__`` and ``__dir__`` over its lazy names.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()``: its ``__name__`` names the package, and
        each resolved name is cached there.
    lazy : Mapping[str, str]
        Exported name → the module (absolute dotted path) that defines it.
    public : Sequence[str]
        The package's ``__all__``, which ``__dir__`` returns sorted.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__)``, to assign at the package's module level.
    """
    package = namespace["__name__"]
    surface = sorted(public)

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(surface)

    return __getattr__, __dir__
