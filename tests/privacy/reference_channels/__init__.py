"""Reference output distributions of the frequency-oracle families, from first principles, one module each.

Each module of this package (``tests/privacy/reference_channels/FAMILY.py``;
names starting with ``_`` are skipped) holds ``EXACT_RATIO``: spec class ->
``ratio(spec, d)``, the exact worst-case probability ratio over the first d
inputs, computed by enumerating the family's outputs from the spec's own
probabilities, independently of its ``privacy_ratio``.
``tests/privacy/test_specs_privacy.py`` finds the modules by listing this
folder (:func:`exact_ratios`), and fails for a registered frequency oracle
none of them covers: a new family adds its module here and edits no list.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
from collections.abc import Callable
from fractions import Fraction
from typing import Any

Ratio = Callable[[Any, int], Fraction]


def worst_ratio(channels):
    """The largest P[y | x] / P[y | x′] over ordered pairs of the channels (lists or dicts over outputs) and y."""
    best = Fraction(0)
    for a, b in itertools.permutations(channels, 2):
        keys = a.keys() if isinstance(a, dict) else range(len(a))
        for y in keys:
            best = max(best, a[y] / b[y])
    return best


def distribution_ratio(channel: Callable[[Any, int], Any]) -> Ratio:
    """``ratio(spec, d)``: the worst ratio of ``channel(spec, x)`` (P[output | x], a distribution) over x < d."""

    def ratio(spec, d):
        assert sum(channel(spec, 0).values() if isinstance(channel(spec, 0), dict) else channel(spec, 0)) == 1
        return worst_ratio([channel(spec, x) for x in range(d)])

    return ratio


def exact_ratios() -> dict[type, Ratio]:
    """Spec class -> reference ratio, from every module of this package (a class claimed twice is an error)."""
    found: dict[type, Ratio] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for cls, ratio in module.EXACT_RATIO.items():
            if cls in found:
                raise AssertionError(f"{cls.__name__}: two reference channels ({info.name} and another)")
            found[cls] = ratio
    return found
