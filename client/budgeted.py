"""Encoders that charge a per-client privacy budget before a report leaves.

:class:`BudgetedEncoder` wraps any client encoder with a
:class:`~ldp.privacy.budget.PrivacyLedger`. Each ``encode`` randomizes the
value, charges the ledger by the mechanism's accounting (fresh-randomness
mechanisms cost their ε per report; reports of one memo key of a memoized
mechanism cost ε₁ each up to its permanent ε∞, the key being the encoder's
``memo_key(value)`` when it has one), and only then returns the report. Whether a
report is refused never depends on the value (the ledger enforces its
value-independent ``committed`` total), so a refusal leaks nothing. When the
charge is refused (:class:`~ldp.errors.BudgetExceededError`) or the ledger
cannot be written, the report is discarded: nothing is emitted and nothing is
recorded. An invalid value fails in the encoder, before any charge.

Randomizing before charging is safe: a report that is never returned reveals
nothing, and it lets the encoder validate the value exactly as it always
does, so the ledger is never charged for a report that could not be made.

A persistent client keeps its ledger beside its state file
(:func:`ledger_beside`: ``client.json`` has ``client.ledger.json``). Once
that ledger exists, every report of the client is charged to it and its
stored budget is enforced, whether or not a budget is given
(:func:`client_ledger`): ``make_encoder(spec, state=PATH)`` and ``ldp
encode --state DIR`` without a budget are budgeted all the same. A budget is
set once, when the ledger is created; asking for another one is an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ldp.errors import ParameterError
from ldp.privacy.budget import Budget, PrivacyLedger
from ldp.report import Report

__all__ = ["LEDGER_SUFFIX", "BudgetedEncoder", "client_ledger", "ledger_beside", "open_ledger"]

#: A client's ledger file is its state file with this suffix instead of its own.
LEDGER_SUFFIX = ".ledger.json"


def open_ledger(ledger: PrivacyLedger | str | os.PathLike, budget: Budget | None = None) -> PrivacyLedger:
    """A ledger object from a ledger or a ledger file path (created with ``budget`` when missing)."""
    if isinstance(ledger, PrivacyLedger):
        if budget is not None and budget != ledger.budget:
            raise ParameterError(f"budget {budget} differs from the ledger's own {ledger.budget}")
        return ledger
    if isinstance(ledger, (str, os.PathLike)):
        return PrivacyLedger.load_or_create(ledger, budget)
    raise ParameterError(f"ledger must be a PrivacyLedger or a file path, got {type(ledger).__name__}")


def ledger_beside(state_path: str | os.PathLike) -> Path:
    """The privacy ledger of the client whose state file is ``state_path``: ``client.json`` gives ``client.ledger.json``."""
    return Path(state_path).with_suffix(LEDGER_SUFFIX)


def client_ledger(state_path: str | os.PathLike, budget: Budget | None = None) -> PrivacyLedger | None:
    """The ledger of the client whose state file is ``state_path``, or None when it has none and no ``budget``.

    An existing ledger (:func:`ledger_beside`) is always opened, with or
    without ``budget``: every report of the client must then be charged to
    it and its stored budget holds. Without a ledger, ``budget`` creates
    one (exclusively: racing creators share one); with neither, None (the
    client has no budget).

    Raises
    ------
    StateError
        If the ledger is corrupt, foreign or not private, or ``budget``
        differs from its stored budget (a budget is set once, when the
        ledger is created).
    """
    path = ledger_beside(state_path)
    if budget is None and not os.path.lexists(path):
        return None
    return PrivacyLedger.load_or_create(path, budget)


class BudgetedEncoder:
    """A client encoder whose every report is charged to a privacy ledger.

    Parameters
    ----------
    encoder : Encoder
        The mechanism's encoder (from :func:`ldp.client.make_encoder`).
    ledger : PrivacyLedger
        The client's ledger; persistent when opened from a file.

    References
    ----------
    .. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR". ACM CCS 2014, §3
       (a memoized value's reports never cost more than its PRR's ε∞).
    .. [2] P. Kairouz, S. Oh, P. Viswanath. "The composition theorem for
       differential privacy". IEEE Trans. IT 63(6), 2017 (the ``optimal`` rule).

    Examples
    --------
    >>> import ldp
    >>> from ldp.client import BudgetedEncoder, make_encoder
    >>> from ldp.privacy import Budget, PrivacyLedger
    >>> spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    >>> encoder = BudgetedEncoder(make_encoder(spec), PrivacyLedger.in_memory(Budget(epsilon=1.0)))
    >>> encoder.encode("a").spec == spec.fingerprint, encoder.remaining
    (True, 0.0)
    >>> encoder.encode("b")
    Traceback (most recent call last):
    ...
    ldp.errors.BudgetExceededError: ...
    """

    def __init__(self, encoder: Any, ledger: PrivacyLedger):
        self.encoder = encoder
        self.spec = encoder.spec
        self.ledger = ledger

    def encode(self, value: Any) -> Report:
        """Randomize ``value`` and charge the ledger; return the report only if the charge succeeds.

        Raises
        ------
        BudgetExceededError
            If this report would exceed the budget; nothing is returned or recorded.
        ParameterError
            If ``value`` is invalid for the spec; nothing is charged.
        StateError
            If the ledger file cannot be written; nothing is returned.
        """
        report = self.encoder.encode(value)
        self.charge(value)
        return report

    def memo_key(self, value: Any) -> bytes | None:
        """The memo key the ledger names ``value``'s stream by: the encoder's, when it has one; else None.

        A memoized mechanism whose memo key depends on the client (a hash
        bucket under a per-user seed, a pattern of sampled buckets, a
        randomly rounded grid point) gives its encoder a ``memo_key(value) ->
        bytes``: the key of the permanent response it actually uses. Without
        one the ledger uses ``spec.memo_key(value)`` (a function of the value
        alone). Fresh-randomness specs have no memo key.
        """
        if not self.spec.memoized:
            return None
        keyer = getattr(self.encoder, "memo_key", None)
        return None if keyer is None else keyer(value)

    def charge(self, value: Any) -> float:
        """Charge one report of ``value`` to the ledger (its memo key from :meth:`memo_key`); the spent total.

        For a report made elsewhere by this encoder's mechanism (a batch
        encoder): charge before the report is released, as :meth:`encode` does.
        """
        return self.ledger.charge(self.spec, value, memo_key=self.memo_key(value))

    def refund(self, values: Iterable[Any]) -> None:
        """Refund reports of ``values`` that this encoder made but that were never released.

        See :meth:`ldp.privacy.budget.PrivacyLedger.refund`: only for reports
        destroyed unseen (a failed ``ldp encode`` whose output was discarded).
        """
        values = list(values)
        keys = [self.memo_key(v) for v in values]
        self.ledger.refund(self.spec, values, memo_keys=None if all(k is None for k in keys) else keys)

    @property
    def spent(self) -> float:
        """Total ε of what this client sent, given its values (RAPPOR credits repeats; informational)."""
        return self.ledger.spent

    @property
    def committed(self) -> float:
        """ε the budget is enforced on (independent of the values; see :class:`~ldp.privacy.budget.PrivacyLedger`)."""
        return self.ledger.committed

    @property
    def remaining(self) -> float:
        """ε left in the budget (budget minus :attr:`committed`)."""
        return self.ledger.remaining
