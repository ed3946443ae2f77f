"""The inputs of the cross-language vectors, one module per mechanism family.

Each module of this package (``tests/vectors/cases/FAMILY.py``; names
starting with ``_`` are skipped) holds ``CASES``, a tuple of :class:`Case`:
a spec as a spec file gives it, the values encoded under it and, for a
client with state, its secret and cohort. ``tests/vectors/make_vectors.py``
finds the modules by listing this folder, so a new family's vectors are a
new module here and no list is edited. This package also holds the inputs
the cases share: the fixed byte streams (:func:`stream_bytes`), the client
secrets (:data:`SECRETS`) and some non-ASCII text (:data:`NON_ASCII`).

A module may also hold ``INVALID``, a tuple of :class:`Invalid`: specs that
Python refuses (one field out of range), which every client must refuse too
(the ``invalid_specs`` section).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any


def stream_bytes(label: str, n: int) -> bytes:
    """The first ``n`` bytes of the fixed input stream called ``label``: SHAKE-256(b"ldp-vectors/" + label)."""
    return hashlib.shake_256(b"ldp-vectors/" + label.encode("utf-8")).digest(n)


#: Text beyond ASCII (two bytes, three, four, combining-free accents) for domains and values.
NON_ASCII = ["é", "日本語", "😀", "naïve café", "Ωmega"]

#: The fixed client secrets (32 bytes each) of the RAPPOR permanent responses and the stateful clients.
SECRETS = [bytes(32), bytes(range(32)), stream_bytes("secret/2", 32)]


@dataclasses.dataclass(frozen=True)
class Case:
    """One spec of the vectors and what is encoded under it.

    Parameters
    ----------
    id : str
        ``"MECHANISM/NAME"``, unique among all the cases (other sections refer to specs by it).
    spec : dict
        The spec as a spec file gives it (built with ``spec_from_dict``); written, in this key order, as the
        case's ``input_json``.
    values : list, optional
        The values encoded under the spec with fixed bytes (the ``encodings`` section), in order; none for a
        spec that only has spec vectors.
    client : tuple of (bytes, int), optional
        The secret (one of :data:`SECRETS`) and cohort of the client, for a mechanism whose client keeps
        state (RAPPOR, the memoizing mechanisms); None for a fresh-randomness client.
    """

    id: str
    spec: dict[str, Any]
    values: list[Any] = dataclasses.field(default_factory=list)
    client: tuple[bytes, int] | None = None

    def __post_init__(self) -> None:
        if self.id.split("/")[0] != self.spec.get("mechanism"):
            raise ValueError(f"vector case {self.id!r}: its id must start with its mechanism and '/'")


@dataclasses.dataclass(frozen=True)
class Invalid:
    """A spec Python refuses: a case's canonical spec with some fields changed.

    Parameters
    ----------
    id : str
        ``"MECHANISM/NAME"``, unique among the invalid cases.
    base : str
        The id of the :class:`Case` whose canonical spec (its probabilities included, so no client needs to
        calibrate) is changed.
    changes : dict
        The fields replaced; an int ``domain`` stands for the domain ``[0, 1, ..., domain - 1]`` (a large
        domain is written as its size, ``domain_size``, in the vectors).
    match : str, optional
        A text the error must contain (default: the first changed field's name), so that the spec is refused
        for the intended reason.
    """

    id: str
    base: str
    changes: dict[str, Any]
    match: str | None = None

    @property
    def expected(self) -> str:
        """The text the error names."""
        return self.match if self.match is not None else next(iter(self.changes))
