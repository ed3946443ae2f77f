"""A running count on stderr for long CLI work, shown only when stderr is a terminal.

docs/cli.md: long work shows progress on stderr and stays silent when stderr is
not a terminal (pipes, files, CI logs, click's test runner).

Library functions take a plain callback (``progress(count)``); the commands
pass :meth:`CountProgress.update`. Nothing here imports click: the line is
written to the process's current ``sys.stderr``.
"""

from __future__ import annotations

import sys

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
        """Show ``count`` (a progress callback for the library)."""
        if self.enabled:
            _write(f"\r  {count:,} {self.unit} read…")
            self.shown = True

    def done(self) -> None:
        """Erase the line (if anything was shown)."""
        if self.shown:
            _write("\r" + " " * 40 + "\r")


def _write(text: str) -> None:
    stream = sys.stderr
    stream.write(text)
    stream.flush()
