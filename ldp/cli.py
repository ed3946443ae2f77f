"""The ``ldp`` command line (click). Subcommands are imported lazily.

``ldp`` itself imports nothing from ``ldp.client``, ``ldp.aggregator`` or
``ldp.simulations``: each subcommand names the module that defines it and is
only imported when used (or listed by ``--help``).

User errors (:class:`~ldp.errors.LDPError`) end the command with a one-line
message on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import click

from ldp.errors import LDPError, ParameterError

__all__ = ["main", "cli", "run_guarded", "EXIT_USAGE", "OptionConflict", "check_writable", "check_plot_path"]

#: Exit status for user errors (bad option, bad file, bad parameter).
EXIT_USAGE = 2

#: name -> "module:attribute" of each subcommand.
SUBCOMMANDS = {
    "spec": "ldp.commands.spec:spec",
    "encode": "ldp.client.cli:encode",
    "aggregate": "ldp.aggregator.cli:aggregate",
    "google-rappor": "ldp.aggregator.google_cli:google_rappor",
    "simulate": "ldp.simulations.cli:simulate",
    "privacy": "ldp.commands.privacy:privacy",
}


class OptionConflict(click.UsageError):
    """Options that contradict each other or would be silently ignored: a usage error shown as one line.

    Exit status 2 like every usage error; the message names the options.
    Unlike click's default it prints no usage banner, so the error stays
    the single line DESIGN.md asks for.
    """

    def show(self, file=None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True, file=file)


class LazyGroup(click.Group):
    """A click group whose subcommands load on first use."""

    def list_commands(self, ctx):
        return sorted(name for name in SUBCOMMANDS if self._load(name) is not None)

    def get_command(self, ctx, name):
        return self._load(name)

    @staticmethod
    def _load(name):
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # A subcommand whose module is not built yet is simply absent;
            # a missing dependency inside an existing module is a real error.
            if exc.name and module_name.startswith(exc.name):
                return None
            raise
        return getattr(module, attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ldp")
def cli():
    """Local differential privacy: specs, client encoding, aggregation, simulation, accounting.

    \b
    Example:
      ldp spec grr --epsilon 1 --domain a,b,c -o spec.json
      ldp encode --spec spec.json values.txt -o reports.jsonl
    """


def run_guarded(func, *args, **kwargs):
    """Call ``func``; turn an :class:`LDPError` into a one-line message and exit status 2."""
    try:
        return func(*args, **kwargs)
    except LDPError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)


def check_writable(path: str | Path, option: str) -> None:
    """Refuse an output path whose file could not be created, before any work is done.

    Its directory must exist and be writable, and the path must not be a
    directory. Raises :class:`~ldp.errors.ParameterError` naming ``option``.
    """
    target = Path(path)
    if target.is_dir():
        raise ParameterError(f"{option} {str(path)!r} is a directory; expected a file name")
    parent = target.parent
    if not parent.is_dir():
        raise ParameterError(f"{option} {str(path)!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise ParameterError(f"{option} {str(path)!r}: directory {str(parent)!r} is not writable")


def check_plot_path(path: str | Path, option: str = "--plot") -> None:
    """Refuse a plot path before computing: matplotlib missing, an image format it cannot write, or an unwritable place.

    The format follows the extension, as matplotlib's ``savefig`` does.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        raise ParameterError(f"{option} needs matplotlib: pip install 'ldp[plot]'") from None
    formats = FigureCanvasAgg.get_supported_filetypes()
    extension = Path(path).suffix.lower().lstrip(".")
    if extension not in formats:
        found = f"unknown image extension {'.' + extension!r}" if extension else "no image extension"
        raise ParameterError(
            f"{option} {str(path)!r}: {found}; expected one of {', '.join('.' + name for name in sorted(formats))}"
        )
    check_writable(path, option)


def main(argv=None):
    """Console-script entry point."""
    try:
        cli.main(args=argv, prog_name="ldp", standalone_mode=True)
    except LDPError as exc:  # raised outside run_guarded
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":  # pragma: no cover
    main()
