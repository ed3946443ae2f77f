"""Where a persistent client's files live in a ``--state`` directory (named by a hash, never by the id).

A client's state file is named by a hash of its id's canonical text
(:func:`ldp.client.identity.canonical_client_id`: ``1``, ``1.0`` and ``"1"``
are one client in every input format), so an id never becomes a path; its
privacy ledger lives beside it (:func:`ldp.client.budgeted.ledger_beside`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["ledger_path", "state_path"]


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


def ledger_path(directory: str | Path, client_id: Any) -> Path:
    """Privacy ledger of ``client_id`` in ``directory``, beside its state file."""
    from ldp.client.budgeted import ledger_beside

    return ledger_beside(state_path(directory, client_id))
