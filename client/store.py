"""A directory of persistent clients, keyed by any client id: what a server embedding the client uses.

A server that encodes on behalf of many users needs each user's state (RAPPOR's
secret and cohort) and privacy ledger to persist, and must never build a path
from the user's id (``f"{user}.json"`` lets the id ``../x`` write anywhere).
:class:`ClientStateStore` maps an id to its files exactly as ``ldp encode
--state DIR`` does (:mod:`ldp.client.state_paths`: a hash of the id's
canonical text, :func:`~ldp.client.identity.canonical_client_id`), so a
directory written by the CLI and by a server is one set of clients.

Thread and process safety
-------------------------
The same as the CLI's, from the same code: a new client's state file is
created exclusively (of several threads or processes opening one new client,
one writes its secret and every other one loads it:
:meth:`ldp.client.ClientState.open`), and every charge to a ledger takes the
ledger's thread lock and an exclusive ``flock`` on its lock file, re-reads,
decides and writes atomically (:class:`ldp.privacy.budget.PrivacyLedger`).

The encoders themselves are safe to share between threads: after
construction an encoder holds only immutable data (its spec, exact
probability expansions and, for RAPPOR, a frozen :class:`ClientState`), and
every coin is drawn from the operating system's CSPRNG (``secrets``,
``os.urandom``), which is thread-safe. A budgeted encoder adds the ledger's
locking above, so concurrent ``encode`` calls on one client never overspend.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ldp.client.encoders import Encoder, make_encoder
from ldp.client.state_paths import ledger_path, state_path
from ldp.specs import Spec

if TYPE_CHECKING:
    from ldp.privacy.budget import Budget

__all__ = ["ClientStateStore", "StoredClient"]


@dataclasses.dataclass(frozen=True)
class StoredClient:
    """One client of a :class:`ClientStateStore`: its encoder and where its files are.

    Attributes
    ----------
    client_id : str
        The id as given.
    encoder : Encoder
        The client's encoder; a :class:`~ldp.client.BudgetedEncoder` when
        the client has a ledger (its ``remaining`` is the ε left).
    state_path : Path
        The client's state file (written for memoizing mechanisms, RAPPOR).
    ledger_path : Path
        The client's privacy ledger file (present once it has a budget).

    Examples
    --------
    >>> import tempfile
    >>> import ldp
    >>> from ldp.client import ClientStateStore
    >>> client = ClientStateStore(tempfile.mkdtemp()).open("alice", ldp.GRR(domain=("a", "b"), epsilon=1.0))
    >>> client.client_id, client.state_path.suffix, client.ledger_path.name.endswith(".ledger.json")
    ('alice', '.json', True)
    """

    client_id: str
    encoder: Encoder
    state_path: Path
    ledger_path: Path


class ClientStateStore:
    """Persistent clients in ``directory``, one per client id, named as ``ldp encode --state`` names them.

    Parameters
    ----------
    directory : str or path
        Where the clients' files live (created with mode 0700 when a state
        is first written).
    budget : Budget, optional
        The budget of every client's ledger, created on first use; a
        client whose ledger exists is charged to it whatever is given here
        (a budget is set once; a different one is a
        :class:`~ldp.errors.StateError`).

    Examples
    --------
    >>> import tempfile
    >>> from ldp import GRR
    >>> from ldp.client import ClientStateStore
    >>> from ldp.privacy import Budget
    >>> folder = tempfile.mkdtemp()
    >>> store = ClientStateStore(folder, budget=Budget(epsilon=2.0))
    >>> client = store.open("../../etc/passwd", GRR(epsilon=1.0, domain=["a", "b"]))
    >>> client.ledger_path.parent == store.directory  # the id never becomes a path
    True
    >>> client.encoder.encode("a").value in ("a", "b")
    True
    >>> client.encoder.remaining
    1.0
    """

    def __init__(self, directory: str | os.PathLike[str], *, budget: Budget | None = None) -> None:
        self.directory = Path(directory)
        self.budget = budget

    def state_path(self, client_id: str | int) -> Path:
        """The state file of ``client_id``: a hash of its canonical text (see :mod:`ldp.client.identity`).

        Raises
        ------
        ParameterError
            If ``client_id`` is not text or an integer, or is empty.
        """
        return state_path(self.directory, client_id)

    def ledger_path(self, client_id: str | int) -> Path:
        """The privacy ledger file of ``client_id``, beside its state file."""
        return ledger_path(self.directory, client_id)

    def open(self, client_id: str | int, spec: Spec) -> StoredClient:
        """The client ``client_id`` of ``spec``: its state opened or created, its ledger charged when it has one.

        Raises
        ------
        ParameterError
            If ``client_id`` is not a valid id.
        StateError
            If its state or ledger file is corrupt, foreign, not private or
            for another spec, or ``budget`` differs from its ledger's.
        """
        path = self.state_path(client_id)
        encoder = make_encoder(spec, state=path, budget=self.budget)
        return StoredClient(str(client_id), encoder, path, self.ledger_path(client_id))
