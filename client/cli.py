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

``--seed`` switches to the vectorized NumPy path: reproducible, fast, and
NOT private against anyone who knows or guesses the seed. It is for tests
and demos only, and the command says so on stderr.
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import click

from ldp.cli import run_guarded
from ldp.errors import ParameterError
from ldp.progress import CountProgress
from ldp.specs import Spec, load_spec
from ldp.values_file import CHUNK_ROWS, check_column, input_kind, read_lines, read_table

__all__ = ["encode", "read_rows", "read_values", "state_path"]

_CHUNK = CHUNK_ROWS
_CLIENT_COLUMN = "client_id"
#: Exit status when some rows were refused by their client's budget.
EXIT_REFUSED = 3


def state_path(directory: str | Path, client_id: Any) -> Path:
    """State file of ``client_id`` in ``directory``: a hash of its canonical text (ids never become paths).

    Raises
    ------
    ParameterError
        If ``client_id`` is not a valid client id (see :func:`canonical_client_id`).
    """
    from ldp.client.identity import canonical_client_id

    digest = hashlib.sha256(canonical_client_id(client_id).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Path(directory) / f"{digest}.json"


def _pick_column(columns: list[str], column: str | None, path: str, group_column: str | None = None) -> str:
    if column is not None:
        check_column(path, column, columns)
        return column
    candidates = [c for c in columns if c not in (_CLIENT_COLUMN, group_column)]
    if len(candidates) == 1:
        return candidates[0]
    if "value" in candidates:
        return "value"
    raise ParameterError(f"{path!r} has several columns ({', '.join(columns)}); choose one with --column")


def read_values(path: str, column: str | None, with_client: bool) -> Iterator[tuple[int, Any, Any]]:
    """Yield (row number, value, client id or None) from CSV/JSONL/JSON/Parquet or plain text."""
    for row, value, client, _ in read_rows(path, column, with_client):
        yield row, value, client


def read_rows(
    path: str, column: str | None, with_client: bool, group_column: str | None = None
) -> Iterator[tuple[int, Any, Any, Any]]:
    """Yield (row number, value, client id or None, group cell or None) of each row of INPUT.

    The file is read by :mod:`ldp.values_file` (its rules: kinds by
    extension, UTF-8, gzip, CSV rows as wide as the header, errors naming
    the file and line). Here: which columns ``ldp encode`` reads. The value
    column is ``column``, else the only column besides ``client_id`` and
    the group column, else ``value``; ``with_client`` needs a ``client_id``
    cell in every row; ``group_column`` names the column of group keys
    (tables only), sent in the clear, see the module docstring.
    """
    if input_kind(path) == "text":
        if group_column is not None:
            raise ParameterError("--group-column needs a table input (CSV, JSONL or Parquet)")
        if with_client:
            raise ParameterError(
                "--state needs a table input (CSV, JSONL or Parquet) with a client_id column"
            )
        if column is not None:
            raise ParameterError("--column applies to CSV, JSONL and Parquet inputs only")
        for row, line in read_lines(path):
            yield row, line, None, None
        return

    def select(names: list[str]) -> tuple[str, str | None, str | None]:
        """The (value, client id, group) columns among ``names``, checked."""
        if group_column is not None and group_column not in names:
            raise ParameterError(
                f"--group-column {group_column!r} is not in {path!r} (columns: {', '.join(names)})"
            )
        chosen = _pick_column(names, column, path, group_column)
        if with_client and _CLIENT_COLUMN not in names:
            raise ParameterError(f"--state needs a {_CLIENT_COLUMN!r} column in {path!r}")
        return chosen, (_CLIENT_COLUMN if with_client else None), group_column

    for row, (value, client, group) in enumerate(read_table(path, select), start=1):
        if with_client and _missing(client):
            raise ParameterError(f"row {row} of {path!r}: the {_CLIENT_COLUMN} is missing")
        yield row, value, client, group


def _missing(cell: Any) -> bool:
    return cell is None or (isinstance(cell, float) and math.isnan(cell)) or cell == ""


def _clean_group(group: Any, row: int) -> str:
    """A row's group cell as a valid group key (sent in the clear), or a ParameterError naming the row."""
    from ldp.errors import ReportError
    from ldp.report import check_group

    if _missing(group):
        raise ParameterError(f"row {row}: the group is missing")
    if isinstance(group, float) and group.is_integer():
        group = int(group)
    try:
        return check_group(group if isinstance(group, str) else str(group))
    except ReportError as exc:
        raise ParameterError(f"row {row}: {str(exc).replace('report ', '', 1)}") from None


def _clean(value: Any, row: int) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ParameterError(f"row {row}: the value is missing")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def ledger_path(directory: str | Path, client_id: str) -> Path:
    """Privacy ledger of ``client_id`` in ``directory``, beside its state file."""
    return state_path(directory, client_id).with_suffix(".ledger.json")


class _Charges:
    """Reports charged to client budgets, in output order, until they are known to be written.

    When ``ldp encode`` fails, the reports it made but never wrote were seen
    by nobody; :meth:`refund_unwritten` gives their charges back.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Any, Any]] = []  # (budgeted encoder, value), oldest first
        self._written = 0  # reports of the run known to be written (pending[0] is report number _written)

    def add(self, encoder: Any, value: Any) -> None:
        self._pending.append((encoder, value))

    def written(self, count: int) -> None:
        """The first ``count`` reports of the run are out: their charges stand."""
        del self._pending[: max(0, count - self._written)]
        self._written = max(self._written, count)

    def refund_unwritten(self) -> int:
        """Refund every pending charge, one ledger transaction per client; return how many."""
        by_encoder: dict[int, tuple[Any, list]] = {}
        for encoder, value in self._pending:
            by_encoder.setdefault(id(encoder), (encoder, []))[1].append(value)
        for encoder, values in by_encoder.values():
            encoder.refund(values)
        refunded, self._pending = len(self._pending), []
        return refunded


def _secure_reports(
    spec: Spec,
    rows,
    state_dir: str | None,
    budget=None,
    refused: list[int] | None = None,
    charges: _Charges | None = None,
):
    """CSPRNG reports, one per row; rows refused by a client's budget are skipped and listed in ``refused``.

    Each budgeted report is recorded in ``charges`` as it is yielded.
    """
    from ldp.client.budgeted import BudgetedEncoder, open_ledger
    from ldp.client.encoders import make_encoder
    from ldp.client.identity import canonical_client_id
    from ldp.errors import BudgetExceededError

    shared = None if spec.mechanism == "rappor" else make_encoder(spec)
    clients: dict[str, Any] = {}
    for row, value, client, group in rows:
        value = _clean(value, row)
        group = None if group is None else _clean_group(group, row)
        if state_dir is None:
            encoder = shared if shared is not None else make_encoder(spec)  # a fresh client per row
        else:
            try:
                key = canonical_client_id(client)
            except ParameterError as exc:
                raise ParameterError(f"row {row}: {exc}") from None
            cached = clients.get(key)
            if cached is None:
                cached = (
                    shared
                    if shared is not None
                    else make_encoder(spec, state=str(state_path(state_dir, key)))
                )
                if budget is not None:
                    cached = BudgetedEncoder(cached, open_ledger(ledger_path(state_dir, key), budget))
                clients[key] = cached
            encoder = cached
        try:
            report = encoder.encode(value)
        except BudgetExceededError:
            if refused is None:
                raise
            refused.append(row)
            continue
        except ParameterError as exc:
            raise ParameterError(f"row {row}: {exc}") from None
        if charges is not None and isinstance(encoder, BudgetedEncoder):
            charges.add(encoder, value)
        yield report if group is None else report.with_group(group)


class _CountingStream:
    """A text stream that counts the report lines handed to it (for standard output).

    Each write tells ``charges`` how many reports are out, so their charges
    stand and are forgotten: only the unwritten ones are kept for a refund.
    """

    def __init__(self, stream: IO[str], charges: _Charges | None):
        self.stream = stream
        self.charges = charges
        self.lines = 0

    def write(self, text: str) -> int:
        written = self.stream.write(text)
        self.lines += text.count("\n")
        if self.charges is not None:
            self.charges.written(self.lines)
        return written


def _write_or_refund(items, output: str | None, spec: Spec, charges: _Charges | None) -> int:
    """Write the reports; if that fails, discard what was not released and refund its charges.

    A file is written under a temporary name and renamed into place only on
    success (:func:`ldp.atomic.atomic_output`); on failure nothing of it is
    released, so every charge of the run is refunded. On standard output the
    reports already printed stay charged. The error is re-raised with what
    happened appended.
    """
    from ldp.aggregator.writers import write_reports
    from ldp.atomic import atomic_output
    from ldp.errors import LDPError

    to_stdout = output in (None, "-")
    stream = _CountingStream(sys.stdout, charges) if to_stdout else None
    try:
        if stream is not None:
            return write_reports(items, cast(IO[str], stream), spec)  # it has the write() they use
        assert output is not None  # not standard output
        with atomic_output(output) as temporary:
            return write_reports(items, temporary, spec)
    except BaseException as exc:
        notes = []
        if stream is not None:
            notes.append(f"{stream.lines} reports had been written to standard output before the failure")
        else:
            notes.append(f"nothing was written to {output!r}")
        if charges is not None:
            try:
                refunded = charges.refund_unwritten()
                if refunded:
                    notes.append(
                        f"the budget charges of the {refunded} reports made but not written were refunded"
                    )
            except LDPError as refund_error:
                notes.append(
                    f"refunding the budget charges of the reports not written failed ({refund_error})"
                )
        if isinstance(exc, LDPError):
            raise type(exc)(f"{exc}; " + "; ".join(notes)) from None
        click.echo("ldp encode stopped: " + "; ".join(notes), err=True)
        raise


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


def _seeded_batches(spec: Spec, rows, seed: int, grouped: bool = False):
    import dataclasses

    import numpy as np

    from ldp.client.batch import encode_batch

    rng = np.random.default_rng(seed)  # insecure-ok: explicit --seed, warned on stderr
    chunk: list[Any] = []
    groups: list[str] = []

    def batch():
        out = encode_batch(spec, chunk, rng)
        if grouped:
            keys = np.empty(len(groups), dtype=object)
            keys[:] = groups
            out = dataclasses.replace(out, groups=keys)
        return out

    for row, value, _, group in rows:
        chunk.append(_clean(value, row))
        if grouped:
            groups.append(_clean_group(group, row))
        if len(chunk) == _CHUNK:
            yield batch()
            chunk, groups = [], []
    if chunk:
        yield batch()


@click.command("encode")
@click.option(
    "--spec", "spec_path", required=True, type=click.Path(dir_okay=False), help="Spec JSON (ldp spec)."
)
@click.argument("input_path", metavar="INPUT", type=click.Path(dir_okay=False))
@click.option("--column", help="Column holding the values (CSV, JSONL, Parquet).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Reports file: .jsonl, .csv or .parquet (default: JSON Lines on stdout).",
)
@click.option(
    "--state",
    "state_dir",
    type=click.Path(file_okay=False),
    help="Directory of persistent client states, selected by the client_id column.",
)
@click.option(
    "--budget",
    "budget_epsilon",
    type=float,
    help="Per-client privacy budget (total epsilon), kept in a ledger beside each client's state; "
    "needs --state. A row that would exceed its client's budget is not encoded.",
)
@click.option(
    "--budget-delta",
    type=float,
    default=0.0,
    show_default=True,
    help="Delta of the budget (optimal composition).",
)
@click.option(
    "--composition",
    type=click.Choice(["basic", "optimal"]),
    default="basic",
    show_default=True,
    help="How a client's reports compose against its budget.",
)
@click.option(
    "--group-column",
    metavar="C",
    help="Column whose value becomes each report's group key (for ldp aggregate --by-group, e.g. an app "
    "version). NOT privatized: the group is sent in the clear, so it must not be sensitive.",
)
@click.option("--seed", type=int, help="INSECURE: reproducible NumPy randomness, for tests and demos only.")
def encode(
    spec_path,
    input_path,
    column,
    output,
    state_dir,
    budget_epsilon,
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

    def body():
        from ldp.cli import check_outputs_distinct

        spec = load_spec(spec_path)
        if not Path(input_path).is_file():
            raise ParameterError(f"input file {input_path!r} does not exist")
        check_outputs_distinct([("INPUT", input_path), ("--spec", spec_path)], [("-o", output)])
        progress = _Progress(enabled=output not in (None, "-"))
        if group_column is not None and column is not None and group_column == column:
            raise ParameterError("--group-column must differ from --column (the group is sent in the clear)")
        rows = progress.wrap(
            read_rows(input_path, column, with_client=state_dir is not None, group_column=group_column)
        )
        budget = None
        if budget_epsilon is not None:
            from ldp.privacy.budget import Budget

            if state_dir is None:
                raise ParameterError("--budget needs --state (each client's ledger lives beside its state)")
            budget = Budget(epsilon=budget_epsilon, delta=budget_delta, composition=composition)
        refused: list[int] = []
        charges = _Charges() if budget is not None else None
        if seed is not None:
            if state_dir is not None:
                raise ParameterError("--seed and --state cannot be combined")
            click.echo(
                "Warning: --seed uses NumPy's non-cryptographic generator; these reports are NOT private. "
                "Use it for tests and demos only.",
                err=True,
            )
            items = _seeded_batches(spec, rows, seed, grouped=group_column is not None)
        else:
            items = _secure_reports(spec, rows, state_dir, budget, refused, charges)
        try:
            count = _write_or_refund(items, output, spec, charges)
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

    sys.exit(run_guarded(body))
