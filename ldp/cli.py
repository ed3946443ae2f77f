"""The ``ldp`` command line (click). Subcommands are imported lazily.

``ldp`` itself imports nothing from ``ldp.client``, ``ldp.aggregator`` or
``ldp.simulations``: each subcommand names the module that defines it and is
only imported when used (or listed by ``--help``).

User errors (:class:`~ldp.errors.LDPError`) end the command with a one-line
message on stderr and exit status 2, never a traceback. A value echoed in a
message (a bad option value, a bad cell) is cut to its first and last
characters and its length (:func:`ldp.shorten.shorten_values`), so a megabyte-long argument never floods
the terminal. Library warnings (:class:`~ldp.errors.LDPWarning`) print as one
``Warning: ...`` line.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path

import click

from ldp.errors import LDPError, LDPWarning, ParameterError
from ldp.shorten import shorten_values

__all__ = [
    "EXIT_USAGE",
    "OptionConflict",
    "check_outputs_distinct",
    "check_plot_path",
    "check_writable",
    "cli",
    "main",
    "run_guarded",
    "shorten_values",
]

#: The distribution name on the package index (the import name is ``ldp``).
DISTRIBUTION = "ldp-telemetry"

#: Exit status for user errors (bad option, bad file, bad parameter).
EXIT_USAGE = 2

#: name -> "module:attribute" of each subcommand.
SUBCOMMANDS = {
    "spec": "ldp.commands.spec:spec",
    "audit": "ldp.commands.audit:audit",
    "encode": "ldp.client.cli:encode",
    "aggregate": "ldp.aggregator.cli:aggregate",
    "google-rappor": "ldp.aggregator.google_cli:google_rappor",
    "simulate": "ldp.simulations.cli:simulate",
    "privacy": "ldp.commands.privacy:privacy",
    "serve": "ldp.collector.serve_cli:serve",
    "store": "ldp.collector.store_cli:store",
    "task": "ldp.collector.cli:task",
    "upload": "ldp.client.upload_cli:upload",
}

#: name -> the one-line summary ``ldp --help`` lists, so listing imports no subcommand
#: (each module pulls in its own dependencies: pandas, scipy, pyarrow). A test checks that
#: each is the summary click takes from the command's own help.
SUMMARIES = {
    "aggregate": "Estimate frequencies (with standard errors and confidence intervals) from report files.",
    "audit": "Bound a client's epsilon from below by running it on neighbouring inputs.",
    "encode": "Randomize each input value (one row = one user) into a report.",
    "google-rappor": "Read and write Google RAPPOR's CSV formats (params, map, counts).",
    "privacy": "Privacy accounting across reports: f-DP, Gaussian DP, exact composition, shuffling.",
    "serve": "Receive reports over HTTP into a durable store and serve live estimates.",
    "simulate": "Accuracy versus epsilon: which mechanism and epsilon for my domain?",
    "spec": "Write a mechanism spec (JSON) and print its privacy on stderr.",
    "store": "Back up and restore the collector's SQLite store, also while ldp serve runs.",
    "task": "Create, list, show, delete and export the collector's tasks (the store ldp serve fills).",
    "upload": "Send the reports of REPORTS (JSON Lines, from ldp encode) to a collector's task.",
}


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Print an LDPWarning as one ``Warning: ...`` line; other warnings as Python prints them."""
    if issubclass(category, LDPWarning):
        click.echo(f"Warning: {shorten_values(str(message))}", err=True)
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


class OptionConflict(click.UsageError):
    """Options that contradict each other or would be silently ignored: a usage error shown as one line.

    Exit status 2 like every usage error; the message names the options.
    Unlike click's default it prints no usage banner, so the error stays
    the single line of docs/cli.md#exit-statuses.
    """

    def show(self, file=None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True, file=file)


class LazyGroup(click.Group):
    """A click group whose subcommands load on first use."""

    def list_commands(self, ctx):
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx, name):
        return self._load(name)

    def format_commands(self, ctx, formatter):
        """The command list of ``ldp --help`` from :data:`SUMMARIES`, without importing any subcommand."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        # a bare command holding only the summary: click shortens it exactly as it would the real one's help
        rows = [(name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def make_context(self, *args, **kwargs):
        with _shortened_click_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx):
        with _shortened_click_errors():
            return super().invoke(ctx)

    @staticmethod
    def _load(name):
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        # Every listed subcommand exists: an import error (a typo, a missing dependency) must be
        # seen, never turn into a subcommand that silently vanishes from the CLI.
        return getattr(importlib.import_module(module_name), attr)


class _ShortenedShow:
    """Shows a click error exactly as the original would, with its long echoed values cut.

    Click declares ``ClickException.message`` final, so the original is never
    modified: its whole output (usage banner, hint and ``Error:`` line) is
    rendered into a buffer and printed with :func:`shorten_values` applied
    line by line.
    """

    original: click.ClickException

    def show(self, file=None) -> None:
        rendered = io.StringIO()
        self.original.show(file=rendered)
        lines = rendered.getvalue().splitlines()
        click.echo("\n".join(shorten_values(line) for line in lines), err=file is None, file=file)


class _ShortenedUsageError(_ShortenedShow, click.UsageError):
    """A usage error (exit status 2) with its long echoed values cut."""

    def __init__(self, original: click.UsageError) -> None:
        super().__init__(shorten_values(original.format_message()), ctx=original.ctx)
        self.original = original


class _ShortenedClickError(_ShortenedShow, click.ClickException):
    """Any other click error (exit status 1) with its long echoed values cut."""

    def __init__(self, original: click.ClickException) -> None:
        super().__init__(shorten_values(original.format_message()))
        self.original = original


def _shortened(exc: click.ClickException) -> click.ClickException | None:
    """``exc`` as an error of the same exit status with long values cut; None when nothing is long."""
    message = exc.format_message()
    if shorten_values(message) == message:
        return None
    if isinstance(exc, click.UsageError) and exc.exit_code == click.UsageError.exit_code:
        return _ShortenedUsageError(exc)
    if exc.exit_code == click.ClickException.exit_code:
        return _ShortenedClickError(exc)
    return None  # a custom exit status: shown as it is rather than changing the status


@contextlib.contextmanager
def _shortened_click_errors():
    """Cut long values echoed by click's own errors (a bad option value, an unknown option)."""
    try:
        yield
    except click.ClickException as exc:
        replacement = _shortened(exc)
        if replacement is None:
            raise
        raise replacement from exc


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION)
def cli():
    """Local differential privacy: specs, client encoding, aggregation, simulation, accounting.

    \b
    Example:
      ldp spec grr --epsilon 1 --domain a,b,c -o spec.json
      ldp encode --spec spec.json values.txt -o reports.jsonl
    """


def run_guarded(func, *args, **kwargs):
    """Call ``func``; turn an :class:`LDPError` into a one-line message and exit status 2.

    :class:`~ldp.errors.LDPWarning` warnings raised meanwhile print as one
    ``Warning: ...`` line each.
    """
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return func(*args, **kwargs)
    except LDPError as exc:
        click.echo(f"Error: {shorten_values(str(exc))}", err=True)
        sys.exit(EXIT_USAGE)
    finally:
        warnings.showwarning = previous


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


def _same_file(a: str, b: str) -> bool:
    """True when paths ``a`` and ``b`` name one file (through links too), or the same place if absent."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: str, directory: str) -> bool:
    """True when ``path`` (existing or not) lies beneath ``directory``, links resolved."""
    real, folder = os.path.realpath(path), os.path.realpath(directory)
    return real != folder and os.path.commonpath([real, folder]) == folder


def check_outputs_distinct(
    inputs: Iterable[tuple[str, str | os.PathLike | None]],
    outputs: Iterable[tuple[str, str | os.PathLike | None]],
) -> None:
    """Refuse, before anything is opened for writing, an output that is an input, inside one, or another output.

    Parameters
    ----------
    inputs, outputs : iterable of (what, path)
        ``what`` names the argument or option (``"INPUT"``, ``"--spec"``,
        ``"-o"``); ``None`` and ``-`` (standard streams) are skipped. Paths are
        compared as files: the same file reached through a symbolic or hard
        link, or a relative and an absolute spelling, is the same file. An
        input that is a directory (a dataset read as its files) may not
        hold an output anywhere beneath it: the next run would read the
        output back as input.

    Raises
    ------
    ParameterError
        Naming the output option, the path and the input it would destroy or be read back from.
    """

    def real(items: Iterable[tuple[str, str | os.PathLike | None]]) -> list[tuple[str, str]]:
        return [(what, str(path)) for what, path in items if path is not None and str(path) != "-"]

    sources, targets = real(inputs), real(outputs)
    for index, (option, path) in enumerate(targets):
        for what, source in sources:
            if _same_file(path, source):
                raise ParameterError(
                    f"{option} {path!r} is the same file as the input {what} {source!r}; writing it would destroy "
                    "the input. Choose another output path"
                )
            if os.path.isdir(source) and _inside(path, source):
                raise ParameterError(
                    f"{option} {path!r} is inside the input directory {what} {source!r}; it would be read back "
                    "as input next time. Choose an output path outside it"
                )
        for other, earlier in targets[:index]:
            if _same_file(path, earlier):
                raise ParameterError(
                    f"{option} {path!r} and {other} {earlier!r} are the same file; give each output its own path"
                )


def check_plot_path(path: str | Path, option: str = "--plot") -> None:
    """Refuse a plot path before computing: matplotlib missing, an image format it cannot write, or an unwritable place.

    The format follows the extension, as matplotlib's ``savefig`` does.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        raise ParameterError(f"{option} needs matplotlib: pip install 'ldp-telemetry[plot]'") from None
    formats = FigureCanvasAgg.get_supported_filetypes()
    extension = Path(path).suffix.lower().lstrip(".")
    if extension not in formats:
        found = f"unknown image extension {'.' + extension!r}" if extension else "no image extension"
        raise ParameterError(
            f"{option} {str(path)!r}: {found}; expected one of {', '.join('.' + name for name in sorted(formats))}"
        )
    check_writable(path, option)


#: OpenBLAS's worker threads busy-wait for work 2^28 cycles (about 0.1 s) after they start, and after each
#: BLAS call, before they sleep: some 0.06 s of CPU in every command that imports NumPy, whether it calls
#: BLAS or not (`ldp aggregate` of a frequency oracle does not). 2^20 cycles (well under a millisecond)
#: still keeps them awake between the back-to-back calls of a decode. Set unless the user set it.
OPENBLAS_THREAD_TIMEOUT = "20"


def main(argv=None):
    """Console-script entry point."""
    # before NumPy loads OpenBLAS, which reads it once (other BLAS libraries ignore it)
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", OPENBLAS_THREAD_TIMEOUT)
    try:
        cli.main(args=argv, prog_name="ldp", standalone_mode=True)
    except LDPError as exc:  # raised outside run_guarded
        click.echo(f"Error: {shorten_values(str(exc))}", err=True)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":  # pragma: no cover
    main()
