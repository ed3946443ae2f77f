"""Per-client privacy budget and its persistent ledger (docs/accounting.md#budgets).

The ledger records what a client spent, per stream, and refuses (with
:class:`~ldp.errors.BudgetExceededError`, recording nothing) any report that
would take the *committed* total over the budget. What a stream costs, and
why refusals never depend on the values, is in :mod:`ldp.privacy.spending`.
Memoized streams are named by a keyed hash (HMAC-SHA256 with a ledger-own
random key) of the spec fingerprint and the value's memo key (the encoder's,
when the key depends on the client), so the ledger never holds a value. The
key is stored in the ledger file itself: whoever can read the file (mode
0600, like the client state, whose secret already determines every
permanent response) can test candidate values against it; nobody else can.

The ledger file is JSON written atomically (temporary file, fsync, rename,
mode 0600), like the client state. A corrupt, truncated or foreign file, or
one whose budget differs from the one asked for, raises
:class:`~ldp.errors.StateError` and is never overwritten.

**Concurrency.** Any number of processes and threads may charge one ledger
file at once (several ``ldp encode`` runs on one state directory, several
encoders opened on one ledger). Every charge takes an exclusive ``flock`` on
the ledger's lock file (``<ledger>.lock``, beside it, never deleted),
re-reads the ledger under the lock, decides, and writes the new ledger
atomically before the lock is released and before the report is returned.
So the budget holds across all of them together. A new ledger is created
exclusively under the same lock: racing first runs share one key and one
record.

This module imports no SciPy (the client may use it). The accounting and its
references are in :mod:`ldp.privacy.spending`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import os
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ldp.atomic import (
    create_private_file,
    ensure_private_directory,
    exclusive_lock,
    parse_private_json,
    read_private_file,
    remove_stale_temporaries_once,
    write_private_file,
)
from ldp.errors import AccountingError, BudgetExceededError, ParameterError, StateError
from ldp.privacy.spending import (
    COMPOSITION_RULES,
    Budget,
    Stream,
    committed_epsilon,
    first_report_epsilon,
    fits_budget,
    memo_is_linear,
    report_loss,
    spent_epsilon,
    stream_parameters,
    worst_case_memoized_cost,
)

__all__ = [
    "COMPOSITION_RULES",
    "LEDGER_FORMAT",
    "LEDGER_FORMATS",
    "LEDGER_FORMAT_V2",
    "Budget",
    "PrivacyLedger",
    "Stream",
    "worst_case_memoized_cost",
]

#: The format of a ledger that needs nothing beyond version 1 (written so, readable by older ldp).
LEDGER_FORMAT = "ldp-privacy-ledger/1"
#: Version 2 adds the ``exact`` composition rule and GDP ``mu`` budgets and, per stream, ``linear`` (how
#: one memo key's reports add up) and ``loss`` (one report's exact privacy-loss atoms). A ledger is
#: written as version 2 only when it holds one of these, so that an older ldp, which would misread or
#: drop them, refuses it instead.
LEDGER_FORMAT_V2 = "ldp-privacy-ledger/2"
#: The versions this ldp reads. A version-1 file is read as it always was: its memoized streams
#: (RAPPOR's, the only memoized mechanism then) are linear and its fresh streams have no atoms.
LEDGER_FORMATS = (LEDGER_FORMAT, LEDGER_FORMAT_V2)
_KEY_BYTES = 32


class PrivacyLedger:
    """Persistent record of a client's privacy spending, enforcing a :class:`Budget`.

    Use :meth:`load_or_create` for a ledger file, or :meth:`in_memory`.

    Examples
    --------
    >>> ledger = PrivacyLedger.in_memory(Budget(epsilon=3.0))
    >>> import ldp
    >>> spec = ldp.GRR(domain=("a", "b"), epsilon=1.0)
    >>> ledger.charge(spec, "a")
    1.0
    """

    def __init__(
        self,
        budget: Budget,
        *,
        key: bytes,
        streams: dict[str, Stream] | None = None,
        path: str | os.PathLike | None = None,
    ):
        if not isinstance(budget, Budget):
            raise AccountingError(f"budget must be a Budget, got {type(budget).__name__}")
        if not isinstance(key, bytes) or len(key) != _KEY_BYTES:
            raise StateError(f"ledger key must be {_KEY_BYTES} bytes")
        self.budget = budget
        self._key = key
        self._streams: dict[str, Stream] = dict(streams or {})
        self.path = None if path is None else Path(path)
        self._thread_lock = threading.Lock()  # in-memory ledgers; files also take the flock

    # -- construction and persistence -------------------------------------
    @classmethod
    def in_memory(cls, budget: Budget) -> PrivacyLedger:
        """A ledger that is never written to disk."""
        return cls(budget, key=secrets.token_bytes(_KEY_BYTES))

    @classmethod
    def load_or_create(cls, path: str | os.PathLike, budget: Budget | None = None) -> PrivacyLedger:
        """Open the ledger at ``path``; create it (with ``budget``) when nothing exists there.

        Creation is exclusive and happens under the ledger's lock: of several
        processes or threads opening the same new ledger, one creates it and
        the others open that one. The directory is created with mode 0700
        when missing; stale temporary files of killed writers are removed.

        Raises
        ------
        StateError
            If the file is corrupt, truncated, not a ledger, a symbolic link,
            or readable by other users, or if ``budget`` is given and differs
            from the stored one.
        ParameterError
            If the file does not exist and no budget is given.
        """
        path = Path(path)
        directory = ensure_private_directory(path.parent if str(path.parent) else ".")
        remove_stale_temporaries_once(directory)
        with exclusive_lock(_lock_path(path), "privacy ledger"):
            text = read_private_file(path, "privacy ledger")
            if text is None:
                if budget is None:
                    raise AccountingError(f"no ledger at {str(path)!r}; give a Budget to create one")
                ledger = cls(budget, key=secrets.token_bytes(_KEY_BYTES), path=path)
                if create_private_file(path, ledger._file_bytes(ledger._streams)):
                    return ledger
                text = read_private_file(path, "privacy ledger")  # created without the lock by an older ldp
                if text is None:  # pragma: no cover - a dangling link is refused by read_private_file
                    raise StateError(f"cannot create privacy ledger {str(path)!r}")
        ledger = cls._parse(path, text)
        if budget is not None and budget != ledger.budget:
            raise StateError(
                f"privacy ledger {str(path)!r} holds the budget {budget_text(ledger.budget)}, not "
                f"{budget_text(budget)}: a budget is set once, when its ledger is created, and never "
                "changed; give the stored budget or none (it is enforced either way)"
            )
        return ledger

    @classmethod
    def load(cls, path: str | os.PathLike) -> PrivacyLedger:
        """Read an existing ledger file (see :meth:`load_or_create` for errors)."""
        path = Path(path)
        text = read_private_file(path, "privacy ledger")
        if text is None:
            raise StateError(f"no privacy ledger at {str(path)!r}")
        return cls._parse(path, text)

    @classmethod
    def _parse(cls, path: Path, text: str) -> PrivacyLedger:
        data = parse_private_json(text, path, "privacy ledger", "privacy ledger", LEDGER_FORMATS)
        version2 = data["format"] == LEDGER_FORMAT_V2
        try:
            key = bytes.fromhex(data["key"])
            budget = Budget(**data["budget"])
            if budget.composition == "exact" and not version2:
                raise ValueError("budget")
            streams = {}
            for name, item in data["streams"].items():
                values = item.get("values")
                memoized = bool(item.get("memoized", str(name).startswith("value:")))
                stream = Stream(
                    spec=str(item["spec"]),
                    epsilon=float(item["epsilon"]),
                    epsilon_cap=None if item["epsilon_cap"] is None else float(item["epsilon_cap"]),
                    reports=item["reports"],
                    memoized=memoized,
                    values=values,
                    linear=_parse_linear(item, version2),
                    loss=_parse_loss(item.get("loss")) if version2 else None,
                    epsilon_first=_parse_first(item),
                )
                if (
                    isinstance(stream.reports, bool)
                    or not isinstance(stream.reports, int)
                    or stream.reports < 0
                    or not math.isfinite(stream.epsilon)
                    or stream.epsilon < 0
                    or (
                        values is not None
                        and (isinstance(values, bool) or not isinstance(values, int) or values < 1)
                    )
                ):
                    raise ValueError(name)
                streams[str(name)] = stream
        except (KeyError, TypeError, ValueError, AttributeError, ParameterError, StateError):
            raise StateError(
                f"privacy ledger {str(path)!r} is corrupt: missing or malformed fields"
            ) from None
        return cls(budget, key=key, streams=streams, path=path)

    def _current_streams(self) -> dict[str, Stream]:
        """The streams as recorded now: re-read from the file (other processes may have charged it)."""
        if self.path is None:
            return self._streams
        text = read_private_file(self.path, "privacy ledger")
        if text is None:
            raise StateError(
                f"privacy ledger {str(self.path)!r} has disappeared; it is never recreated silently "
                "(that would reset the budget)"
            )
        stored = self._parse(self.path, text)
        if stored._key != self._key or stored.budget != self.budget:
            raise StateError(f"privacy ledger {str(self.path)!r} was replaced by another ledger while open")
        self._streams = stored._streams
        return self._streams

    @contextlib.contextmanager
    def _transaction(self):
        """Exclusive access to the ledger across threads and processes; yields the current streams."""
        with self._thread_lock:
            if self.path is None:
                yield self._streams
                return
            with exclusive_lock(_lock_path(self.path), "privacy ledger"):
                yield self._current_streams()

    def _to_json(self, streams: dict[str, Stream]) -> str:
        version2 = self.budget.composition == "exact" or any(
            not s.linear or s.loss is not None for s in streams.values()
        )
        return json.dumps(
            {
                "format": LEDGER_FORMAT_V2 if version2 else LEDGER_FORMAT,
                "key": self._key.hex(),
                "budget": self.budget.to_dict(),
                "streams": {name: _stream_json(s, version2) for name, s in sorted(streams.items())},
            },
            sort_keys=True,
            indent=1,
        )

    def _file_bytes(self, streams: dict[str, Stream]) -> bytes:
        return (self._to_json(streams) + "\n").encode("utf-8")

    def _write(self, streams: dict[str, Stream]) -> None:
        if self.path is None:
            return
        try:
            write_private_file(self.path, self._file_bytes(streams))
        except OSError as exc:
            raise StateError(f"cannot write privacy ledger {str(self.path)!r}: {exc}") from None

    # -- accounting ---------------------------------------------------------
    def _stream_name(self, spec, value: Any, memo_key: bytes | None = None) -> str:
        _epsilon, _cap, memoized, _ = stream_parameters(spec)
        if not memoized:
            return "fresh:" + spec.fingerprint
        if memo_key is None:
            memo_key = spec.memo_key(value)
        elif not isinstance(memo_key, bytes):
            raise ParameterError(f"a memo key must be bytes, got {type(memo_key).__name__}")
        message = spec.fingerprint.encode("ascii") + b"\x00" + memo_key
        return "value:" + hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def _with_charge(
        self, streams: dict[str, Stream], spec, value: Any, reports: int = 1, memo_key: bytes | None = None
    ) -> dict[str, Stream]:
        """``streams`` with ``reports`` more (or, negative, fewer) reports of ``value`` under ``spec``.

        ``memo_key``: the memo key of ``value`` when the encoder names it (see :meth:`charge`).
        """
        epsilon, cap, memoized, values = stream_parameters(spec)
        name = self._stream_name(spec, value, memo_key)
        streams = dict(streams)
        old = streams.get(name)
        count = reports + (0 if old is None else old.reports)
        if count < 0:
            raise StateError(
                f"cannot refund {-reports} report(s) of spec {spec.fingerprint}: "
                f"the ledger records only {count - reports} for this stream"
            )
        if count == 0:
            streams.pop(name, None)
        else:
            loss = old.loss if old is not None else None
            if loss is None and not memoized and self.budget.composes_curves:
                loss = report_loss(spec)  # the spec's own curve: its reports compose exactly
            streams[name] = Stream(
                spec=spec.fingerprint,
                epsilon=epsilon,
                epsilon_cap=cap,
                reports=count,
                memoized=memoized,
                values=values,
                linear=memo_is_linear(spec) if memoized else True,
                loss=loss,
                epsilon_first=first_report_epsilon(spec) if memoized else None,
            )
        return streams

    @property
    def spent(self) -> float:
        """Total ε (μ for a GDP budget) of what was sent, given the values, under the budget's rule.

        For a memoized spec it credits repeated memo keys (one key costs at
        most ε∞), so it depends on the values: it is reported, never used to
        refuse (see :attr:`committed`). A file ledger is re-read, so charges by
        other processes are included.
        """
        return spent_epsilon(self._current_streams(), self.budget)

    @property
    def committed(self) -> float:
        """The ε (μ for a GDP budget) the budget is enforced on: the largest :attr:`spent` any values could give.

        Depends only on how many reports were sent under each spec (which the
        collector sees anyway), so a refusal reveals nothing about the values.
        Equal to :attr:`spent` for fresh-randomness mechanisms.
        """
        return committed_epsilon(self._current_streams(), self.budget)

    @property
    def remaining(self) -> float:
        """Budget ε (or μ) minus :attr:`committed` (never negative)."""
        return max(0.0, self.budget.limit - self.committed)

    @property
    def streams(self) -> dict[str, Stream]:
        """A copy of the per-stream records (names are keyed hashes, never values)."""
        return dict(self._current_streams())

    def cost_after(self, spec, value: Any = None, *, memo_key: bytes | None = None) -> float:
        """The :attr:`committed` ε after one more report under ``spec`` (``value`` is only validated)."""
        streams = self._with_charge(self._current_streams(), spec, value, memo_key=memo_key)
        return committed_epsilon(streams, self.budget)

    def can_charge(self, spec, value: Any = None, *, memo_key: bytes | None = None) -> bool:
        """True when one more report fits the budget (advisory: only :meth:`charge` decides, under the lock)."""
        return fits_budget(self.cost_after(spec, value, memo_key=memo_key), self.budget)

    def charge(self, spec, value: Any = None, *, memo_key: bytes | None = None) -> float:
        """Record one report of ``value`` under ``spec``, or refuse it.

        Call this before the report leaves the device; if it raises, emit
        nothing. The decision and the record are one transaction under the
        ledger's lock (re-read, decide, write atomically), so concurrent
        charges by other threads or processes are never lost or double-spent.

        Parameters
        ----------
        spec : Spec
            The mechanism that will encode the report.
        value : object
            The value to report (a memoized spec: identifies the memo key's
            stream, by ``spec.memo_key(value)``, which validates it the way
            the encoder does; other specs: ignored).
        memo_key : bytes, optional
            A memoized spec: the memo key of ``value`` as the *encoder* names
            it, when it depends on the client (a hash bucket under a per-user
            seed, a pattern of sampled buckets) rather than on the value
            alone; :class:`~ldp.client.budgeted.BudgetedEncoder` passes
            ``encoder.memo_key(value)`` when the encoder has one. It only names
            the stream: what is refused never depends on it.

        Returns
        -------
        float
            :attr:`spent` after this report.

        Raises
        ------
        BudgetExceededError
            If the report would take :attr:`committed` over the budget (a
            decision that does not depend on ``value``); nothing is recorded.
        ParameterError
            If ``value`` is not valid for ``spec``; nothing is recorded.
        StateError
            If the ledger file cannot be read or written; nothing is recorded.
        """
        with self._transaction() as current:
            streams = self._with_charge(current, spec, value, memo_key=memo_key)
            committed = committed_epsilon(streams, self.budget)
            if not fits_budget(committed, self.budget):
                measure = self.budget.measure
                raise BudgetExceededError(
                    f"this report would bring the privacy committed to {measure}={committed:.6g}, over the budget "
                    f"{measure}={self.budget.limit:.6g} ({self.budget.composition} composition); "
                    f"already committed {committed_epsilon(current, self.budget):.6g}. Nothing was sent or recorded."
                )
            self._write(streams)
            self._streams = streams
        return spent_epsilon(streams, self.budget)

    def refund(self, spec, values: Iterable[Any], *, memo_keys: Iterable[bytes | None] | None = None) -> None:
        """Take back the charges of reports that were made but provably never left the device.

        One report per item of ``values`` (the values they were charged
        with), in one transaction under the ledger's lock. Only for reports
        that were destroyed unseen: ``ldp encode`` refunds the reports of a
        failed run that it never wrote (its temporary output file is deleted).
        Refunding a report that anyone may have seen would understate the
        privacy spent.

        ``memo_keys``: one per value, the memo keys they were charged with
        (see :meth:`charge`), when the encoder named them.

        Raises
        ------
        StateError
            If the ledger records fewer such reports than are refunded, or it
            cannot be read or written; nothing is changed then.
        """
        values = list(values)
        keys: list[bytes | None] = [None] * len(values) if memo_keys is None else list(memo_keys)
        if len(keys) != len(values):
            raise ParameterError(f"refund: {len(values)} values but {len(keys)} memo keys")
        if not values:
            return
        with self._transaction() as current:
            streams = current
            for value, key in zip(values, keys):
                streams = self._with_charge(streams, spec, value, reports=-1, memo_key=key)
            self._write(streams)
            self._streams = streams

    def __repr__(self) -> str:
        where = "in memory" if self.path is None else str(self.path)
        return f"PrivacyLedger({where}, budget={self.budget}, streams={len(self._streams)})"


def _stream_json(stream: Stream, version2: bool) -> dict[str, Any]:
    """A stream's record: version 1 (the fields an older ldp knows) or version 2 (every field)."""
    item = dataclasses.asdict(stream)
    del item["linear"], item["loss"], item["epsilon_first"]
    if (
        stream.epsilon_first is not None
    ):  # an older ldp ignores it and charges the first report ε: more, never less
        item["epsilon_first"] = stream.epsilon_first
    if version2:
        item["linear"] = stream.linear
        if stream.loss is not None:
            item["loss"] = {"log_p": list(stream.loss[0]), "log_q": list(stream.loss[1])}
    return item


def _parse_linear(item: dict[str, Any], version2: bool) -> bool:
    """A stream's ``linear``: stored in version 2; in version 1 every memoized stream was RAPPOR's (linear)."""
    if not version2:
        return True
    linear = item["linear"]
    if not isinstance(linear, bool):
        raise ValueError("linear")
    return linear


def _parse_first(item: dict[str, Any]) -> float | None:
    """A memoized stream's ``epsilon_first`` (ε₁ of a key's first report, below ``epsilon``); absent: None."""
    first = item.get("epsilon_first")
    if first is None:
        return None
    if isinstance(first, bool) or not isinstance(first, int | float):
        raise ValueError("epsilon_first")
    first = float(first)
    if not math.isfinite(first) or not 0 <= first <= float(item["epsilon"]):
        raise ValueError("epsilon_first")
    return first


def _parse_loss(item: Any) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """One report's privacy-loss atoms as stored: finite log-masses, as many of P as of Q, each side summing to 1."""
    if item is None:
        return None
    sides = item["log_p"], item["log_q"]
    if any(not isinstance(side, list) or not side for side in sides) or len(sides[0]) != len(sides[1]):
        raise ValueError("loss")
    for side in sides:
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) for x in side):
            raise ValueError("loss")
        if abs(math.fsum(math.exp(min(x, 0.0)) for x in side) - 1.0) > 1e-9:
            raise ValueError("loss")
    return tuple(float(x) for x in sides[0]), tuple(float(x) for x in sides[1])


def budget_text(budget: Budget) -> str:
    """``epsilon=3.0``, ``epsilon=1.0, delta=1e-06, optimal composition`` or ``mu=1.0`` (shortest exact floats)."""
    if budget.mu is not None:
        return f"mu={budget.mu!r}"
    text = f"epsilon={budget.epsilon!r}"
    if budget.delta:
        text += f", delta={budget.delta!r}"
    return text + (f", {budget.composition} composition" if budget.composition != "basic" else "")


def _lock_path(path: Path) -> Path:
    """The lock file of the ledger at ``path`` (beside it; never replaced or deleted)."""
    return path.with_name(path.name + ".lock")
