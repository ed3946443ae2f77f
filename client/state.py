"""Persistent client state for memoizing mechanisms (RAPPOR).

RAPPOR's permanent randomized response must be identical every time a client
reports the same value, or averaging its reports reveals the value. The
client therefore keeps a 32-byte secret and its cohort; the PRR is derived
from a keyed PRF of (secret, spec fingerprint, value), so nothing grows with
the number of values reported.

The state file is JSON, written atomically with mode 0600. A missing file is
created; a corrupt, truncated or foreign one (another spec, or not a state
file) raises :class:`~ldp.errors.StateError` and is never overwritten,
because a new secret would break the longitudinal guarantee.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
from pathlib import Path

from ldp.atomic import write_private_file
from ldp.errors import StateError

__all__ = ["ClientState", "STATE_FORMAT"]

STATE_FORMAT = "ldp-client-state/1"
_SECRET_BYTES = 32


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
    """

    spec: str
    secret: bytes = dataclasses.field(repr=False)
    cohort: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.secret, bytes) or len(self.secret) != _SECRET_BYTES:
            raise StateError(f"client secret must be {_SECRET_BYTES} bytes")

    @classmethod
    def new(cls, spec) -> "ClientState":
        """Fresh state for ``spec``: CSPRNG secret, uniform cohort."""
        cohorts = getattr(spec, "num_cohorts", 1)
        return cls(spec=spec.fingerprint, secret=secrets.token_bytes(_SECRET_BYTES), cohort=secrets.randbelow(cohorts))

    def to_json(self) -> str:
        return json.dumps(
            {"format": STATE_FORMAT, "spec": self.spec, "cohort": self.cohort, "secret": self.secret.hex()},
            sort_keys=True,
        )

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically (temp file, fsync, rename), mode 0600."""
        write_private_file(path, (self.to_json() + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike, spec) -> "ClientState":
        """Read a state file and check it belongs to ``spec``.

        Raises
        ------
        StateError
            If the file is unreadable, corrupt, truncated, or for another spec.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StateError(f"cannot read client state {str(path)!r}: {exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise StateError(f"client state {str(path)!r} is corrupt or truncated (not valid JSON); "
                             "it was left untouched") from None
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise StateError(f"{str(path)!r} is not an ldp client state file (format {STATE_FORMAT})")
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
        if isinstance(cohort, bool) or not isinstance(cohort, int) or not 0 <= cohort < cohorts:
            raise StateError(f"client state {str(path)!r} has cohort {cohort!r}, outside [0, {cohorts})")
        return cls(spec=owner, secret=secret, cohort=cohort)

    @classmethod
    def open(cls, path: str | os.PathLike, spec) -> "ClientState":
        """Load the state at ``path``, creating it when the file does not exist."""
        path = Path(path)
        if path.exists():
            return cls.load(path, spec)
        state = cls.new(spec)
        state.save(path)
        return state
