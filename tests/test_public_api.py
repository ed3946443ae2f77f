"""The public surface is ``__all__``: every class and function it exports has a docstring example.

The examples themselves run as doctests in :mod:`tests.test_doctests` (in the
module that defines each name). ``NOT_YET`` lists the exported names still
without an example; it may only shrink: a name added to ``__all__`` without
an example, or a name listed here that has gained one, fails.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

PUBLIC_PACKAGES = ("ldp", "ldp.client", "ldp.aggregator", "ldp.simulations")

#: Exported names without an example yet (data such as ``__version__`` has no docstring and is not listed).
NOT_YET = {
    "ldp": set(),
    "ldp.client": set(),
    "ldp.aggregator": set(),
    "ldp.simulations": set(),
}  # fmt: skip


def _documented(package: str) -> dict[str, bool]:
    """Each exported class or function of ``package``: whether its docstring has an example."""
    module = importlib.import_module(package)
    found = {}
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            found[name] = ">>>" in (inspect.getdoc(obj) or "")
    return found


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_exported_class_and_function_has_an_example(package):
    documented = _documented(package)
    missing = {name for name, has in documented.items() if not has} - NOT_YET[package]
    assert not missing, f"{package}.__all__ exports {sorted(missing)} without a docstring example"
    gained = NOT_YET[package] & {name for name, has in documented.items() if has}
    assert not gained, f"{sorted(gained)} have examples now: remove them from NOT_YET"


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_all_names_only_what_the_package_offers(package):
    module = importlib.import_module(package)
    assert sorted(set(module.__all__)) == sorted(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.__all__ names {name}, which it does not define"
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            pytest.fail(f"{package}.__all__ exports the module {name}: export its functions instead")
