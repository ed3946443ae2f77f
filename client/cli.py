"""``ldp encode``: randomize one value per input row into reports.

Each input row is a different user. Without ``--state`` every row gets a
fresh client (for RAPPOR: a fresh secret and cohort). With ``--state DIR``
the row's ``client_id`` column selects a persistent client whose state file
lives in DIR (named by a hash of the id's canonical text,
:func:`ldp.client.identity.canonical_client_id`: ``1``, ``1.0`` and ``"1"``
are one client in every input format), so a client reporting the same value
again gets the same permanent randomized response. DIR is created with mode
0700; any number of ``ldp encode`` runs may share it at once (state creation
is exclusive, ledger charges are locked transactions).

The output file is written under a temporary name and renamed into place
only when every row succeeded, so a failed run leaves no partial file and an
existing output untouched; the budget charges of the reports it discarded
are refunded. On standard output, the reports already printed when a row
fails stay charged, and the error says how many there were. An output path
that names an input (INPUT, --spec) is refused before anything is written.

``--group-column C`` attaches each row's value of column C to its report as
the ``group`` key (for per-group means, ``ldp aggregate --by-group``). The
group key is NOT privatized: it is sent in the clear beside the randomized
value, so it must not be sensitive or identifying (an app version, a region;
never a user id or anything derived from the private value).

Rows are encoded in chunks of 65,536 by the vectorized batch encoder
(:func:`ldp.client.encode_batch`) with every coin from the OS CSPRNG
(:class:`ldp.client.SystemRandomSource`, large ``os.urandom`` blocks) and
exact probabilities, so memory stays bounded whatever the input size. With
``--state``, RAPPOR's permanent randomized response of each (client, value)
comes from the client's keyed PRF (the bits its single-report encoder
makes) and the instantaneous one from the CSPRNG. ``--budget`` creates the
ledger of each client that has none, beside its state; a client with a
ledger (created by this run or an earlier one, with or without ``--budget``
now) has each report made before its ledger is charged, row by row in input
order, as :class:`ldp.client.BudgetedEncoder` does, and its stored budget
holds: a ledger is never bypassed, and a ``--budget`` other than the stored
one is refused (:func:`ldp.client.budgeted.client_ledger`).

``--seed`` switches the coins to a seeded NumPy generator: reproducible, and
NOT private against anyone who knows or guesses the seed. It is for tests
and demos only, and the command says so on stderr.

This module parses the options and runs the command; the jobs are in
:mod:`ldp.client.encode_input` (the rows read and cleaned),
:mod:`ldp.client.encode_batches` (the reports made, clients and ledgers),
:mod:`ldp.client.encode_output` (the reports written, unwritten charges
refunded) and :mod:`ldp.client.state_paths` (a client's file names).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import click

from ldp.cli import run_guarded
from ldp.cli_options import stacked
from ldp.client.encode_batches import secure_batches, seeded_batches
from ldp.client.encode_input import read_rows, read_values
from ldp.client.encode_output import Charges, write_or_refund
from ldp.client.state_paths import ledger_path, state_path
from ldp.errors import ParameterError
from ldp.progress import CountProgress
from ldp.specs import Spec, load_spec
from ldp.values_file import CHUNK_ROWS

__all__ = ["EXIT_REFUSED", "encode", "ledger_path", "read_rows", "read_values", "state_path"]

#: Rows per chunk (a test may make it small; read at each run).
_CHUNK = CHUNK_ROWS
#: Exit status when some rows were refused by their client's budget.
EXIT_REFUSED = 3


class _Progress(CountProgress):
    """The row count while encoding to a file (only when stderr is a terminal)."""

    every = 10_000

    def __init__(self, enabled: bool):
        super().__init__("rows", enabled)

    def wrap(self, rows):
        """Pass ``rows`` through, showing the count every :attr:`every` rows."""
        for item in rows:
            if item[0] % self.every == 0:
                self.update(item[0])
            yield item


#: The options and argument of ``ldp encode``, in the order of its help.
_ENCODE_OPTIONS = (
    click.option(
        "--spec", "spec_path", required=True, type=click.Path(dir_okay=False), help="Spec JSON (ldp spec)."
    ),
    click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False)),
    click.option("--column", help="Column holding the values (CSV, JSONL, Parquet)."),
    click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        help="Reports file: .jsonl, .csv or .parquet (default: JSON Lines on stdout).",
    ),
    click.option(
        "--state",
        "state_dir",
        type=click.Path(file_okay=False),
        help="Directory of persistent client states, selected by the client_id column.",
    ),
    click.option(
        "--budget",
        "budget_epsilon",
        type=float,
        help="Per-client privacy budget (total epsilon) of clients that have none yet, kept in a ledger beside "
        "each client's state; needs --state. A client's budget is set once: once its ledger exists, every "
        "report of the client is charged to it, with or without --budget, and another --budget is an error. "
        "A row that would exceed its client's budget is not encoded.",
    ),
    click.option(
        "--budget-mu",
        type=float,
        help="Instead of --budget: a per-client Gaussian-DP budget mu, the reports composed by their mechanisms' "
        "exact curves (docs/accounting.md#exact-budgets); needs --state, set once like --budget.",
    ),
    click.option(
        "--budget-delta",
        type=float,
        default=0.0,
        show_default=True,
        help="Delta of the budget (optimal or exact composition).",
    ),
    click.option(
        "--composition",
        type=click.Choice(["basic", "optimal", "exact"]),
        help="How a client's reports compose against its budget: the sum (the default), the optimal composition "
        "of pure epsilon pieces at --budget-delta, or the exact composition of the mechanisms' own curves "
        "(docs/accounting.md#budgets; always, for --budget-mu).",
    ),
    click.option(
        "--group-column",
        metavar="C",
        help="Column whose value becomes each report's group key (for ldp aggregate --by-group, e.g. an app "
        "version). NOT privatized: the group is sent in the clear, so it must not be sensitive.",
    ),
    click.option(
        "--seed", type=int, help="INSECURE: reproducible NumPy randomness, for tests and demos only."
    ),
)


@click.command("encode")
@stacked(*_ENCODE_OPTIONS)
def encode(
    spec_path,
    input_path,
    column,
    output,
    state_dir,
    budget_epsilon,
    budget_mu,
    budget_delta,
    composition,
    group_column,
    seed,
):
    """Randomize each input value (one row = one user) into a report.

    INPUT is CSV, JSON Lines, JSON (an array of objects) or Parquet (by
    extension; .csv.gz, .jsonl.gz accepted), or plain text with one value per
    line.

    --group-column C adds each row's C as the report's group key, for
    per-group means (ldp aggregate --by-group). The group key is NOT
    privatized: it travels in the clear next to the randomized value, so
    use only non-sensitive keys such as an app version.

    \b
    Examples:
      ldp spec grr --epsilon 1 --domain a,b,c -o spec.json
      printf 'a\\nb\\na\\n' > values.txt
      ldp encode --spec spec.json values.txt -o reports.jsonl
      ldp encode --spec rappor.json users.csv --column url --state states/ -o reports.parquet
      ldp encode --spec spec.json users.csv --state states/ --budget 4 -o reports.jsonl
      ldp encode --spec duchi.json sessions.csv --column length --group-column app_version -o reports.jsonl

    Exit status: 0 when every row was encoded; 3 when some rows were refused
    because their client's budget would be exceeded (nothing was emitted for them).
    """

    options = _Options(
        spec_path=spec_path,
        input_path=input_path,
        column=column,
        output=output,
        state_dir=state_dir,
        budget_epsilon=budget_epsilon,
        budget_mu=budget_mu,
        budget_delta=budget_delta,
        composition=composition,
        group_column=group_column,
        seed=seed,
    )
    sys.exit(run_guarded(lambda: _run(options)))


@dataclasses.dataclass(frozen=True)
class _Options:
    """The options of one ``ldp encode`` (as the command line gave them)."""

    spec_path: str
    input_path: str
    column: str | None
    output: str | None
    state_dir: str | None
    budget_epsilon: float | None
    budget_mu: float | None
    budget_delta: float
    composition: str | None
    group_column: str | None
    seed: int | None


def _run(options: _Options) -> int:
    """Encode INPUT into reports; the exit status (0, or :data:`EXIT_REFUSED`)."""
    from ldp.cli import check_outputs_distinct

    spec = load_spec(options.spec_path)
    if not Path(options.input_path).is_file():
        raise ParameterError(f"input file {options.input_path!r} does not exist")
    check_outputs_distinct(
        [("INPUT", options.input_path), ("--spec", options.spec_path)], [("-o", options.output)]
    )
    progress = _Progress(enabled=options.output not in (None, "-"))
    if options.group_column is not None and options.group_column == options.column:
        raise ParameterError("--group-column must differ from --column (the group is sent in the clear)")
    record = getattr(spec, "input_columns", None)
    if record is not None and options.column is not None:
        raise ParameterError(
            f"--column does not apply to {spec.mechanism}: it reads the columns {', '.join(record)}"
        )
    rows = progress.wrap(
        read_rows(
            options.input_path,
            options.column,
            with_client=options.state_dir is not None,
            group_column=options.group_column,
            record=None if record is None else tuple(record),
        )
    )
    budget = _budget(options)
    refused: list[int] = []
    charges = Charges() if options.state_dir is not None else None
    items = _batches(spec, rows, options, budget, refused, charges)
    try:
        count = write_or_refund(items, options.output, spec, charges)
    finally:
        progress.done()
    click.echo(f"encoded {count} values with {spec.mechanism} ({spec.fingerprint})", err=True)
    if refused:
        shown = ", ".join(map(str, refused[:10])) + (" ..." if len(refused) > 10 else "")
        click.echo(
            f"{len(refused)} rows refused: their client's privacy budget would be exceeded "
            f"(rows {shown}); nothing was emitted for them",
            err=True,
        )
        return EXIT_REFUSED
    return 0


def _budget(options: _Options) -> Any:
    """The budget of clients without a ledger (``--budget``), or None."""
    if options.budget_epsilon is None and options.budget_mu is None:
        return None
    from ldp.privacy.budget import Budget

    if options.budget_epsilon is not None and options.budget_mu is not None:
        raise ParameterError("give --budget (epsilon) or --budget-mu, not both")
    if options.state_dir is None:
        raise ParameterError("--budget needs --state (each client's ledger lives beside its state)")
    if options.budget_mu is not None:
        if options.budget_delta or options.composition not in (None, "exact"):
            raise ParameterError(
                "--budget-mu composes the exact curves and has no delta: drop --budget-delta and --composition"
            )
        return Budget(mu=options.budget_mu)
    return Budget(epsilon=options.budget_epsilon, delta=options.budget_delta, composition=options.composition)


def _batches(spec: Spec, rows, options: _Options, budget: Any, refused: list[int], charges: Charges | None):
    """The report batches: CSPRNG (fresh or persistent clients), or seeded NumPy with ``--seed`` (warned)."""
    grouped = options.group_column is not None
    if options.seed is None:
        return secure_batches(
            spec, rows, options.state_dir, budget, refused, charges, grouped=grouped, chunk_rows=_CHUNK
        )
    if options.state_dir is not None:
        raise ParameterError("--seed and --state cannot be combined")
    click.echo(
        "Warning: --seed uses NumPy's non-cryptographic generator; these reports are NOT private. "
        "Use it for tests and demos only.",
        err=True,
    )
    return seeded_batches(spec, rows, options.seed, grouped=grouped, chunk_rows=_CHUNK)
