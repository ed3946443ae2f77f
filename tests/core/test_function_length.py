"""No function in the collector or the client packages is longer than 80 lines (issue 25: short layers).

A function's length is counted with :mod:`ast`, from its first decorator
(or its ``def``) to its last line, docstring and nested functions included:
the strictest reading, so a command cannot hide its length in a wall of
option decorators. Long jobs are split into functions and modules with one
job each instead (docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ldp.client
import ldp.collector

#: The most lines one function may have.
MAX_FUNCTION_LINES = 80

#: Compiled numba kernels exempt from the limit, each because splitting it cost measurable speed: the one-hot
#: and marked-coins kernel's lane loop (117 lines) split into three inlined helpers ran 5–7 % slower in three
#: paired runs (OUE, d = 1,024, 200,000 reports), and RAPPOR's secure batch is only just no slower than the
#: path it replaced.
EXEMPT = {"onehot_kernel.py:_kernel"}


def function_lengths(source: str) -> list[tuple[int, int, str]]:
    """``(lines, first line, name)`` of every function and method in ``source``, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            assert node.end_lineno is not None
            found.append((node.end_lineno - first + 1, first, node.name))
    return found


def test_function_lengths_are_counted_from_the_first_decorator_to_the_last_line():
    source = "@decorate(\n    1,\n)\ndef f():\n    def g():\n        pass\n\n    return g\n"
    assert sorted(function_lengths(source)) == [(2, 5, "g"), (8, 1, "f")]


@pytest.mark.parametrize("package", [ldp.collector, ldp.client], ids=lambda p: p.__name__)
def test_no_function_is_longer_than_80_lines(package):
    folder = Path(package.__file__).parent
    files = sorted(folder.rglob("*.py"))
    assert files, folder
    too_long = [
        f"{path.relative_to(folder.parent)}:{line} {name} ({lines} lines)"
        for path in files
        for lines, line, name in function_lengths(path.read_text(encoding="utf-8"))
        if lines > MAX_FUNCTION_LINES and f"{path.name}:{name}" not in EXEMPT
    ]
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: " + "; ".join(too_long)
