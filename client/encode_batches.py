"""The report batches of ``ldp encode``: one report per input row, in chunks (bounded memory).

:func:`secure_batches` draws every coin from the OS CSPRNG; with a state
directory each row's ``client_id`` selects a persistent client
(:class:`_Clients`: a memoizing mechanism's permanent response from its keyed PRF, every
ledger charged row by row in input order). :func:`seeded_batches` uses a
seeded, NOT private, NumPy generator (``--seed``: tests and demos only).
"""

from __future__ import annotations

from typing import Any, cast

from ldp.client.encode_input import chunks, clean_group, clean_value, clean_values
from ldp.client.encode_output import Charges
from ldp.client.state_paths import state_path
from ldp.errors import ParameterError
from ldp.specs import Rappor, Spec
from ldp.values_file import CHUNK_ROWS

__all__ = ["secure_batches", "seeded_batches"]


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


def _memo_state_batch(spec: Spec, values: list[Any], chunk, keys: list[str], client):
    """Reports of persistent clients of a memoizing mechanism other than RAPPOR, each by its client's own encoder.

    ``client(key)`` opens (or creates) a client's state, row by row in input
    order; each report is made by that client's encoder (its memoized
    response from its keyed PRF, fresh coins from the CSPRNG) and checked as
    the aggregator checks it. Returns the batch and each row's encoder; a
    bad value raises :class:`_BadRow`.
    """
    from ldp.batch import ReportBatch
    from ldp.client.budgeted import BudgetedEncoder
    from ldp.report_check import check_report
    from ldp.report_schema import report_schema_of

    encoders, checked = [], []
    for i, ((row, *_rest), value, key) in enumerate(zip(chunk, values, keys)):
        encoder = client(key)
        encoders.append(encoder)
        inner = encoder.encoder if isinstance(encoder, BudgetedEncoder) else encoder  # charged by the caller
        try:
            checked.append(check_report(spec, inner.encode(value)))
        except ParameterError as exc:
            raise _BadRow(i, ParameterError(f"row {row}: {exc}")) from None
    columns = {
        f.name: f.from_checked(spec, [c.field(f.name) for c in checked])
        for f in report_schema_of(spec).fields
    }
    return ReportBatch.from_columns(spec.fingerprint, columns), encoders


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


def secure_batches(
    spec: Spec,
    rows,
    state_dir: str | None,
    budget=None,
    refused: list[int] | None = None,
    charges: Charges | None = None,
    grouped: bool = False,
    chunk_rows: int = CHUNK_ROWS,
):
    """CSPRNG report batches, one report per row, in chunks of ``chunk_rows`` rows (bounded memory).

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
    from ldp.client.randomness import SystemRandomSource

    source = SystemRandomSource()
    clients = None if state_dir is None else _Clients(spec, state_dir, budget, refused, charges)
    for chunk in chunks(rows, chunk_rows):
        values = clean_values(spec, chunk)
        groups = [clean_group(group, row) for row, _, _, group in chunk] if grouped else None
        if clients is not None:
            yield clients.batch(chunk, values, groups, source)
            continue
        try:
            batch = _fresh_batch(spec, values, chunk, source)
        except _BadRow as bad:
            raise bad.error from None
        yield _take(batch, None, groups)


class _Clients:
    """The persistent clients of one ``ldp encode --state`` run, by canonical client id.

    Each is its encoder with its state in the directory, for a memoizing
    mechanism (``spec.memoized``: RAPPOR, the longitudinal chains, 1BitMean with α-point rounding), or,
    for a fresh-randomness mechanism, the spec alone (:class:`_SpecOnly`),
    wrapped in a :class:`~ldp.client.BudgetedEncoder` when it has a ledger.
    """

    def __init__(
        self,
        spec: Spec,
        state_dir: str,
        budget: Any,
        refused: list[int] | None,
        charges: Charges | None,
    ) -> None:
        self.spec = spec
        self.state_dir = state_dir
        self.budget = budget
        self.refused = refused
        self.charges = charges
        self.rappor = spec.mechanism == "rappor"
        self.stateful = bool(spec.memoized)
        self.clients: dict[str, Any] = {}

    def client(self, key: str, state: Any = None) -> Any:
        """The row's client: its stateful encoder (or the spec alone), charging its ledger when it has one.

        ``state``: the client's :class:`~ldp.client.ClientState` when already
        opened (:meth:`open_new`); by default the encoder opens its state file.
        """
        from ldp.client.budgeted import BudgetedEncoder, client_ledger
        from ldp.plugins import implementation

        if key not in self.clients:
            spec = self.spec
            path = state_path(self.state_dir, key) if state is None else state.path
            state = str(path) if state is None else state
            encoder = implementation(spec, "encoder")(spec, state) if self.stateful else _SpecOnly(spec)
            ledger = client_ledger(path, self.budget)
            self.clients[key] = encoder if ledger is None else BudgetedEncoder(encoder, ledger)
        return self.clients[key]

    def open_new(self, keys: list[str]) -> None:
        """Open the clients of ``keys`` not open yet, their new state files created together.

        For every memoizing mechanism (its encoder factory takes the opened
        :class:`~ldp.client.ClientState`, as ``make_encoder`` gives it), the
        states are opened with :meth:`ClientState.open_many`: the chunk's new
        clients are written with one durability pass instead of two fsyncs
        each, and every one is on stable storage before any report of the
        chunk is made.
        """
        from ldp.client.state import ClientState

        if not self.stateful:
            return
        new = [key for key in dict.fromkeys(keys) if key not in self.clients]
        states = ClientState.open_many([state_path(self.state_dir, key) for key in new], self.spec)
        for key, state in zip(new, states):
            self.client(key, state)

    def find_new_ledgers(self, keys: list[str]) -> None:
        """Charge from now on the clients of ``keys`` whose ledger another process created during the run."""
        from ldp.client.budgeted import BudgetedEncoder, client_ledger

        for key in dict.fromkeys(keys):
            encoder = self.clients.get(key)
            if encoder is not None and not isinstance(encoder, BudgetedEncoder):
                ledger = client_ledger(state_path(self.state_dir, key))
                if ledger is not None:
                    self.clients[key] = BudgetedEncoder(encoder, ledger)

    def charge(self, chunk, values, keys, encoders) -> Any:
        """Charge each row's client that has a ledger, in input order; the mask of the rows kept."""
        import numpy as np

        from ldp.client.budgeted import BudgetedEncoder
        from ldp.errors import BudgetExceededError

        keep = np.ones(len(values), dtype=bool)
        for i, ((row, *_rest), value, key, encoder) in enumerate(zip(chunk, values, keys, encoders)):
            encoder = encoder if encoder is not None else self.client(key)
            if not isinstance(encoder, BudgetedEncoder):
                continue  # a client without a ledger: no budget
            try:
                encoder.charge(value)
            except BudgetExceededError:
                if self.refused is None:
                    raise
                self.refused.append(row)
                keep[i] = False
                continue
            if self.charges is not None:
                self.charges.add(encoder, value)
        return keep

    def batch(self, chunk, values: list[Any], groups: list[str] | None, source):
        """The reports of one chunk of rows, each row's client charged; rows refused by a budget left out."""
        from ldp.client.identity import canonical_client_id

        keys = []
        for row, _, client_id, _ in chunk:
            try:
                keys.append(canonical_client_id(client_id))
            except ParameterError as exc:
                raise ParameterError(f"row {row}: {exc}") from None
        self.find_new_ledgers(keys)
        self.open_new(keys)
        spec = self.spec
        try:
            if self.rappor:
                batch, encoders = _rappor_state_batch(
                    cast(Rappor, spec), values, chunk, keys, self.client, source
                )
            elif self.stateful:
                batch, encoders = _memo_state_batch(spec, values, chunk, keys, self.client)
            else:
                batch, encoders = _fresh_batch(spec, values, chunk, source), [None] * len(keys)
        except _BadRow as bad:
            # the rows before the bad one were made: charged as the row-by-row encoder charges them
            # (then refunded with the rest of the run's unwritten reports)
            n = bad.index
            self.charge(chunk[:n], values[:n], keys[:n], [None] * n)
            raise bad.error from None
        keep = self.charge(chunk, values, keys, encoders)
        return _take(batch, None if keep.all() else keep, groups)


class _SpecOnly:
    """The spec of a fresh-randomness mechanism, as the encoder a :class:`BudgetedEncoder` charges for.

    Its reports are made by the batch encoder; only the ledger of the wrapper is used.
    """

    def __init__(self, spec: Spec):
        self.spec = spec


def seeded_batches(spec: Spec, rows, seed: int, grouped: bool = False, chunk_rows: int = CHUNK_ROWS):
    """INSECURE report batches from NumPy seeded with ``seed`` (``--seed``: tests and demos only)."""
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
        chunk.append(clean_value(spec, value, row))
        if grouped:
            groups.append(clean_group(group, row))
        if len(chunk) == chunk_rows:
            yield batch()
            chunk, groups = [], []
    if chunk:
        yield batch()
