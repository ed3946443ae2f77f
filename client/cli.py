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
from ldp.specs import Rappor, Spec, load_spec
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
    from ldp.client.budgeted import ledger_beside

    return ledger_beside(state_path(directory, client_id))


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


def _chunks(rows, size: int):
    """Lists of at most ``size`` consecutive rows."""
    chunk: list = []
    for item in rows:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _clean_values(spec: Spec, chunk) -> list[Any]:
    """The chunk's values, cleaned row by row (numbers read from text, then checked as the numeric encoders do)."""
    return [_clean_value(spec, value, row) for row, value, _, _ in chunk]


def _clean_value(spec: Spec, value: Any, row: int) -> Any:
    """One row's value: present; for a numeric spec, a finite number (text such as ``12`` parsed)."""
    from ldp.specs.numeric import NumericSpec, parse_numeric_text

    value = _clean(value, row)
    if isinstance(spec, NumericSpec):
        try:
            return parse_numeric_text(value)
        except ParameterError as exc:
            raise ParameterError(f"row {row}: {exc}") from None
    return value


class _BadRow(Exception):
    """Row ``index`` of a chunk (counting from 0) has a bad value; ``error`` says which and why."""

    def __init__(self, index: int, error: ParameterError):
        super().__init__(str(error))
        self.index = index
        self.error = error


def _fresh_batch(spec: Spec, values: list[Any], chunk, source):
    """One secure batch, each row a fresh client; a bad value is reported with its row number.

    The batch encoder checks the distinct values together; when one is bad,
    the rows are checked one by one with the single-report encoder so the
    error (:class:`_BadRow`) names the first bad row and says what the
    single encoder says.
    """
    from ldp.client.batch import encode_batch
    from ldp.client.encoders import make_encoder

    try:
        return encode_batch(spec, values, source)
    except (ParameterError, TypeError) as batch_error:
        encoder = make_encoder(spec)
        for i, ((row, *_rest), value) in enumerate(zip(chunk, values)):
            try:
                encoder.encode(value)
            except ParameterError as exc:
                raise _BadRow(i, ParameterError(f"row {row}: {exc}")) from None
        raise batch_error


def _rappor_state_batch(spec: Rappor, values: list[Any], chunk, keys: list[str], client, source):
    """Reports of persistent RAPPOR clients: PRR from each client's keyed PRF, IRR from the CSPRNG.

    ``client(key)`` opens (or creates) a client's state, row by row in input
    order. The PRR of each distinct (client, value) of the chunk is derived
    once (the same bits as the client's single-report encoder); the IRR coins
    of every row are drawn together. Returns the batch and each row's encoder;
    a bad value raises :class:`_BadRow`.
    """
    import numpy as np

    from ldp.client.batch import lanes_to_words, rappor_irr_batch
    from ldp.client.budgeted import BudgetedEncoder

    prr_rows: dict[tuple[str, type, Any], int] = {}
    prr_words: list[np.ndarray] = []
    index = np.empty(len(values), dtype=np.int64)
    cohorts = np.empty(len(values), dtype=np.int64)
    encoders = []
    for i, ((row, *_rest), value, key) in enumerate(zip(chunk, values, keys)):
        encoder = client(key)
        encoders.append(encoder)
        inner = encoder.encoder if isinstance(encoder, BudgetedEncoder) else encoder
        pair = (key, type(value), value)
        slot = prr_rows.get(pair)
        if slot is None:
            try:
                lanes = inner.permanent_bits(value)
            except ParameterError as exc:
                raise _BadRow(i, ParameterError(f"row {row}: {exc}")) from None
            slot = prr_rows[pair] = len(prr_words)
            prr_words.append(lanes_to_words(lanes, spec.num_bits))
        index[i] = slot
        cohorts[i] = inner.state.cohort
    table = np.stack(prr_words) if prr_words else np.zeros((0, (spec.num_bits + 63) // 64), dtype=np.uint64)
    return rappor_irr_batch(spec, table[index], cohorts, source), encoders


def _take(batch, keep, groups: list[str] | None):
    """The rows of ``batch`` where ``keep`` (None: all), with their group keys attached."""
    import numpy as np

    from ldp.batch import ReportBatch

    columns = batch.columns()
    keys = None
    if groups is not None:
        keys = np.empty(len(groups), dtype=object)
        keys[:] = groups
    if keep is not None:
        columns = {name: column[keep] for name, column in columns.items()}
        keys = None if keys is None else keys[keep]
    return ReportBatch.from_columns(batch.spec, columns, groups=keys)


def _secure_batches(
    spec: Spec,
    rows,
    state_dir: str | None,
    budget=None,
    refused: list[int] | None = None,
    charges: _Charges | None = None,
    grouped: bool = False,
):
    """CSPRNG report batches, one report per row, in chunks of :data:`_CHUNK` rows (bounded memory).

    Without ``state_dir`` every row is a fresh client (:func:`ldp.client.encode_batch` with
    :class:`~ldp.client.SystemRandomSource`). With it, each row's ``client_id`` selects a
    persistent client: RAPPOR's PRR comes from its keyed PRF, the IRR from the CSPRNG. A client
    with a ledger (:func:`ldp.client.budgeted.client_ledger`: one that exists, whether or not a
    ``budget`` is given, or one the ``budget`` creates) has every report made (its value checked)
    before its ledger is charged, row by row in input order, exactly as
    :class:`~ldp.client.BudgetedEncoder` does; a ledger another process creates during the run
    is found at the next chunk. Rows refused by a budget are left out and listed in
    ``refused``, and each charged report is recorded in ``charges``.
    """
    import numpy as np

    from ldp.client.budgeted import BudgetedEncoder, client_ledger
    from ldp.client.identity import canonical_client_id
    from ldp.client.randomness import SystemRandomSource
    from ldp.errors import BudgetExceededError
    from ldp.plugins import implementation

    source = SystemRandomSource()
    rappor = spec.mechanism == "rappor"
    clients: dict[str, Any] = {}

    def client(key: str) -> Any:
        """The row's client: its RAPPOR encoder (or the spec alone), charging its ledger when it has one."""
        assert state_dir is not None  # only rows of persistent clients have keys
        if key not in clients:
            path = state_path(state_dir, key)
            encoder = implementation(spec, "encoder")(spec, str(path)) if rappor else _SpecOnly(spec)
            ledger = client_ledger(path, budget)
            clients[key] = encoder if ledger is None else BudgetedEncoder(encoder, ledger)
        return clients[key]

    def find_new_ledgers(keys: list[str]) -> None:
        """Charge from now on the clients of ``keys`` whose ledger another process created during the run."""
        assert state_dir is not None
        for key in dict.fromkeys(keys):
            encoder = clients.get(key)
            if encoder is not None and not isinstance(encoder, BudgetedEncoder):
                ledger = client_ledger(state_path(state_dir, key))
                if ledger is not None:
                    clients[key] = BudgetedEncoder(encoder, ledger)

    def charge(chunk, values, keys, encoders) -> Any:
        """Charge each row's client that has a ledger, in input order; the mask of the rows kept."""
        keep = np.ones(len(values), dtype=bool)
        for i, ((row, *_rest), value, key, encoder) in enumerate(zip(chunk, values, keys, encoders)):
            encoder = encoder if encoder is not None else client(key)
            if not isinstance(encoder, BudgetedEncoder):
                continue  # a client without a ledger: no budget
            try:
                encoder.ledger.charge(encoder.spec, value)
            except BudgetExceededError:
                if refused is None:
                    raise
                refused.append(row)
                keep[i] = False
                continue
            if charges is not None:
                charges.add(encoder, value)
        return keep

    for chunk in _chunks(rows, _CHUNK):
        values = _clean_values(spec, chunk)
        groups = [_clean_group(group, row) for row, _, _, group in chunk] if grouped else None
        if state_dir is None:
            try:
                batch = _fresh_batch(spec, values, chunk, source)
            except _BadRow as bad:
                raise bad.error from None
            yield _take(batch, None, groups)
            continue
        keys = []
        for row, _, client_id, _ in chunk:
            try:
                keys.append(canonical_client_id(client_id))
            except ParameterError as exc:
                raise ParameterError(f"row {row}: {exc}") from None
        find_new_ledgers(keys)
        try:
            if rappor:
                batch, encoders = _rappor_state_batch(cast(Rappor, spec), values, chunk, keys, client, source)
            else:
                batch, encoders = _fresh_batch(spec, values, chunk, source), [None] * len(keys)
        except _BadRow as bad:
            # the rows before the bad one were made: charged as the row-by-row encoder charges them
            # (then refunded with the rest of the run's unwritten reports)
            n = bad.index
            charge(chunk[:n], values[:n], keys[:n], [None] * n)
            raise bad.error from None
        keep = charge(chunk, values, keys, encoders)
        yield _take(batch, None if keep.all() else keep, groups)


class _SpecOnly:
    """The spec of a fresh-randomness mechanism, as the encoder a :class:`BudgetedEncoder` charges for.

    Its reports are made by the batch encoder; only the ledger of the wrapper is used.
    """

    def __init__(self, spec: Spec):
        self.spec = spec


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
        chunk.append(_clean_value(spec, value, row))
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
    help="Per-client privacy budget (total epsilon) of clients that have none yet, kept in a ledger beside "
    "each client's state; needs --state. A client's budget is set once: once its ledger exists, every "
    "report of the client is charged to it, with or without --budget, and another --budget is an error. "
    "A row that would exceed its client's budget is not encoded.",
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
        charges = _Charges() if state_dir is not None else None
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
            items = _secure_batches(
                spec, rows, state_dir, budget, refused, charges, grouped=group_column is not None
            )
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
