"""The public surface is ``__all__``: every class and function it exports has a docstring example.

The examples themselves run as doctests in :mod:`tests.docs.test_doctests` (in the
module that defines each name). ``NOT_YET`` lists the exported names still
without an example; it may only shrink: a name added to ``__all__`` without
an example, or a name listed here that has gained one, fails.
"""

from __future__ import annotations

import importlib
import inspect
import re

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


def _names_in_the_map(doc: str) -> set[str]:
    """The names the package docstring lists: the first column of its indented rows (``A, B`` lists two)."""
    names = set()
    for line in doc.splitlines():
        row = re.match(r"^    ([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*)(?:\s{2,}|$)", line)
        if row:
            names.update(row.group(1).split(", "))
    return names


def test_help_opens_with_the_public_surface():
    """``help(ldp)`` opens with a map of exactly ``__all__`` (pydoc prints the package docstring first)."""
    import pydoc

    import ldp
    import ldp.client  # an imported subpackage is an attribute: pydoc listed it under SUBMODULES

    assert _names_in_the_map(ldp.__doc__ or "") == set(ldp.__all__) - {"__version__"}
    text = pydoc.render_doc(ldp, renderer=pydoc.plaintext)
    assert text.index("load_spec ") < text.index("\nPACKAGE CONTENTS\n")
    assert "\nSUBMODULES\n" not in text


def test_dir_is_the_public_surface():
    """``dir(ldp)`` (completion, pydoc's member scan) is ``__all__``, however many submodules are imported."""
    import ldp
    import ldp.aggregator
    import ldp.client  # imported submodules become attributes of the package

    assert dir(ldp) == sorted(ldp.__all__)
