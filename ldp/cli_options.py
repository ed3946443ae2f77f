"""Click options kept apart from the command they decorate.

A command with many options reads better, and its function stays short,
when its options are a list beside it: ``@stacked(*OPTIONS)`` applies them
as if each were written above the function, in the same order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["stacked"]

F = TypeVar("F", bound=Callable[..., Any])


def stacked(*decorators: Callable[[Any], Any]) -> Callable[[F], F]:
    """One decorator applying ``decorators`` as if stacked in this order above a function.

    Examples
    --------
    >>> import click
    >>> @click.command()
    ... @stacked(click.option("--a"), click.option("--b"))
    ... def hello(a, b):
    ...     pass
    >>> [p.name for p in hello.params]
    ['a', 'b']
    """

    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply
