"""A running count on stderr for long CLI work, shown only when stderr is a terminal.

docs/cli.md: long work shows progress on stderr and stays silent when stderr is
not a terminal (pipes, files, CI logs, click's test runner).
"""

from __future__ import annotations

import sys

import click

__all__ = ["CountProgress", "stderr_is_terminal"]


def stderr_is_terminal() -> bool:
    """True when the process's current stderr is an interactive terminal."""
    stream = sys.stderr
    return hasattr(stream, "isatty") and stream.isatty()


class CountProgress:
    """One line on stderr, ``"  12,345 <unit> read…"``, rewritten in place.

    Parameters
    ----------
    unit : str
        What is counted ("reports", "rows").
    enabled : bool
        Extra condition; the count shows only when this is true and stderr is a terminal.
    """

    def __init__(self, unit: str, enabled: bool = True):
        self.unit = unit
        self.enabled = enabled and stderr_is_terminal()
        self.shown = False

    def update(self, count: int) -> None:
        if self.enabled:
            click.echo(f"\r  {count:,} {self.unit} read…", err=True, nl=False)
            self.shown = True

    def done(self) -> None:
        """Erase the line (if anything was shown)."""
        if self.shown:
            click.echo("\r" + " " * 40 + "\r", err=True, nl=False)
