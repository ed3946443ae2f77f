"""Persistent client state for memoizing mechanisms (RAPPOR).

RAPPOR's permanent randomized response must be identical every time a client
reports the same value, or averaging its reports reveals the value. The
client therefore keeps a 32-byte secret and its cohort; the PRR is derived
from a keyed PRF of (secret, spec fingerprint, value), so nothing grows with
the number of values reported.

The state file is JSON, mode 0600, in a directory created 0700. It is
created *exclusively* (:func:`ldp.atomic.create_private_file`): when two
processes or threads start the same new client at once, exactly one secret
is written and both use it. A path that exists in any form (a corrupt file,
a foreign file, a symbolic link, even a dangling one) is never replaced by a
new secret, because a new secret would break the longitudinal guarantee:
it raises :class:`~ldp.errors.StateError`. So does a state file other users
may read or write (its secret may be known to them).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ldp.atomic import (
    create_private_file,
    create_private_files,
    ensure_private_directory,
    parse_private_json,
    read_private_file,
    remove_stale_temporaries_once,
    write_private_file,
)
from ldp.errors import StateError

__all__ = ["STATE_FORMAT", "ClientState", "is_cohort"]

STATE_FORMAT = "ldp-client-state/1"
_SECRET_BYTES = 32


def is_cohort(cohort: Any, cohorts: int) -> bool:
    """Whether ``cohort`` is one of ``cohorts`` cohorts: an int (not a bool) in [0, cohorts)."""
    return not isinstance(cohort, bool) and isinstance(cohort, int) and 0 <= cohort < cohorts


@dataclasses.dataclass(frozen=True)
class ClientState:
    """A client's secret and cohort for one spec.

    Parameters
    ----------
    spec : str
        Fingerprint of the spec the state belongs to.
    secret : bytes
        32 bytes from the CSPRNG; keys the permanent randomized response.
    cohort : int
        The client's cohort, uniform over the spec's cohorts.
    path : Path or None
        The state file it was read from or written to (:meth:`open`,
        :meth:`load`); None for a state only in memory. It locates the
        client's privacy ledger, beside it
        (:func:`ldp.client.budgeted.client_ledger`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import ldp
    >>> from ldp.client import ClientState
    >>> spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "client.json"
    >>> state = ClientState.open(path, spec)  # created with a new secret
    >>> ClientState.open(path, spec) == state  # the same client after a restart
    True
    >>> 0 <= state.cohort < spec.num_cohorts
    True
    """

    spec: str
    secret: bytes = dataclasses.field(repr=False)
    cohort: int = 0
    path: Path | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.secret, bytes) or len(self.secret) != _SECRET_BYTES:
            raise StateError(f"client secret must be {_SECRET_BYTES} bytes")

    @classmethod
    def new(cls, spec) -> ClientState:
        """Fresh state for ``spec``: CSPRNG secret, uniform cohort."""
        cohorts = getattr(spec, "num_cohorts", 1)
        return cls(
            spec=spec.fingerprint,
            secret=secrets.token_bytes(_SECRET_BYTES),
            cohort=secrets.randbelow(cohorts),
        )

    @classmethod
    def _new_many(cls, spec, paths: Sequence[Path]) -> list[ClientState]:
        """:meth:`new` for each of ``paths``, from two reads of the CSPRNG instead of two or more per client.

        The secrets are consecutive 32-byte slices of one ``os.urandom`` read;
        the cohorts are exact uniform draws over the spec's cohorts
        (:func:`ldp.client.randomness.uniform_below`, rejection sampling),
        distributed as :meth:`new`'s ``secrets.randbelow``.
        """
        if not paths:
            return []
        from ldp.client.randomness import SystemRandomSource, uniform_below

        fingerprint = spec.fingerprint
        blob = os.urandom(_SECRET_BYTES * len(paths))
        cohorts = uniform_below(SystemRandomSource(), getattr(spec, "num_cohorts", 1), len(paths)).tolist()
        return [
            cls(
                spec=fingerprint,
                secret=blob[i * _SECRET_BYTES : (i + 1) * _SECRET_BYTES],
                cohort=cohort,
                path=path,
            )
            for i, (path, cohort) in enumerate(zip(paths, cohorts))
        ]

    def to_json(self) -> str:
        return json.dumps(
            {"format": STATE_FORMAT, "spec": self.spec, "cohort": self.cohort, "secret": self.secret.hex()},
            sort_keys=True,
        )

    def _file_bytes(self) -> bytes:
        return (self.to_json() + "\n").encode("utf-8")

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically (temp file, fsync, rename), mode 0600, replacing what is at ``path``.

        Use :meth:`open` to start a client: it never replaces an existing state.
        """
        write_private_file(path, self._file_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike, spec) -> ClientState:
        """Read a state file and check it belongs to ``spec``.

        Raises
        ------
        StateError
            If the file is unreadable, corrupt, truncated, or for another spec.
        """
        path = Path(path)
        text = read_private_file(path, "client state")
        if text is None:
            raise StateError(f"no client state at {str(path)!r}")
        data = parse_private_json(text, path, "client state", "client state file", STATE_FORMAT)
        try:
            secret = bytes.fromhex(data["secret"])
            cohort = data["cohort"]
            owner = data["spec"]
        except (KeyError, TypeError, ValueError):
            raise StateError(f"client state {str(path)!r} is corrupt: missing or malformed fields") from None
        if owner != spec.fingerprint:
            raise StateError(
                f"client state {str(path)!r} belongs to spec {owner}, not {spec.fingerprint}; "
                "use a separate state for each spec"
            )
        cohorts = getattr(spec, "num_cohorts", 1)
        if not is_cohort(cohort, cohorts):
            raise StateError(f"client state {str(path)!r} has cohort {cohort!r}, outside [0, {cohorts})")
        return cls(spec=owner, secret=secret, cohort=cohort, path=path)

    @classmethod
    def open(cls, path: str | os.PathLike, spec) -> ClientState:
        """Load the state at ``path``, creating it (with a new secret) only when nothing is there.

        Creation is exclusive: of several processes or threads opening the same
        new client at once, one writes its state and every other one loads
        that state. The directory is created with mode 0700 when missing.
        Stale temporary files of killed writers in the directory are removed (once per process).

        Raises
        ------
        StateError
            If something exists at ``path`` that is not a valid, private state
            file of ``spec`` (see :meth:`load`): it is never replaced.
        """
        path = Path(path)
        directory = ensure_private_directory(path.parent if str(path.parent) else ".")
        remove_stale_temporaries_once(directory)
        if os.path.lexists(path):
            return cls.load(path, spec)
        state = dataclasses.replace(cls.new(spec), path=path)
        if create_private_file(path, state._file_bytes()):
            return state
        return cls.load(path, spec)  # another process created it first: use its secret

    @classmethod
    def open_many(cls, paths: Sequence[str | os.PathLike], spec) -> list[ClientState]:
        """:meth:`open` for many clients at once: the new ones are created together, durably, in one pass.

        Each client is loaded, or created exclusively with a new secret, as
        :meth:`open` does; the new state files are written with one
        durability pass and one directory fsync per group
        (:func:`ldp.atomic.create_private_files`) instead of two fsyncs each,
        their secrets and cohorts drawn together (two reads of the CSPRNG for
        all of them). Every state returned is on stable storage, so a report
        may be made from it.

        Returns
        -------
        list of ClientState
            One per path, in order (one state for a path given twice).

        Raises
        ------
        StateError
            As :meth:`open`, for the first path whose existing file is not a
            valid, private state file of ``spec``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> import ldp
        >>> from ldp.client import ClientState
        >>> spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/2", p="1/2", q="3/4")
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> states = ClientState.open_many([folder / "a.json", folder / "b.json"], spec)
        >>> [ClientState.open(folder / name, spec) for name in ("a.json", "b.json")] == states
        True
        """
        targets = [Path(path) for path in paths]
        for directory in dict.fromkeys(path.parent if str(path.parent) else Path(".") for path in targets):
            remove_stale_temporaries_once(ensure_private_directory(directory))
        fresh = [path for path in dict.fromkeys(targets) if not os.path.lexists(path)]
        new = dict(zip(fresh, cls._new_many(spec, fresh)))
        created = create_private_files([(path, state._file_bytes()) for path, state in new.items()])
        ours = {path: new[path] for path, made in zip(new, created) if made}
        # a path that existed, or that another process created first: load it (and use its secret)
        return [ours[path] if path in ours else cls.load(path, spec) for path in targets]
