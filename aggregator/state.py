"""An accumulator's saved state as bytes, and back (what the collector keeps of a pruned window).

:meth:`Accumulator.state <ldp.aggregator.accumulators.Accumulator.state>`
names an accumulator's sufficient statistics (the fields its ``==``
compares, for most families); :meth:`Accumulator.from_state
<ldp.aggregator.accumulators.Accumulator.from_state>` rebuilds it through the
family's validated ``from_*`` constructor. :func:`dump_state` writes a state
as one NumPy ``.npz`` archive (never a pickle): the member ``state`` is a
JSON document naming the format, the accumulator class, the spec's
fingerprint and the state's tree, in which each array is replaced by
``{"$array": "a3"}``, the name of the member holding it. :func:`load_state`
reads it back with ``allow_pickle=False``, refuses a state of another spec
or accumulator, and returns an accumulator equal to the one dumped: the
same counts, so the same estimates.

The arrays are compressed; a state costs about what its counts compress to,
whatever the number of reports it holds (except PEM and TreeHist, whose
state is each report's (seed, bucket) pair: 16 bytes a report).
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np

from ldp.aggregator.accumulators import Accumulator, make_aggregator
from ldp.errors import InputError

__all__ = ["STATE_FORMAT", "dump_state", "load_state"]

#: The version of the byte format :func:`dump_state` writes (a reader refuses any other).
STATE_FORMAT = 1


def _flatten(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """``value`` as JSON, its arrays moved into ``arrays`` (numbered in the order met)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise InputError(f"an accumulator state array must be numeric, got dtype {value.dtype}")
        name = f"a{len(arrays)}"
        arrays[name] = np.ascontiguousarray(value)
        return {"$array": name}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        if not all(isinstance(key, str) and key != "$array" for key in value):
            raise InputError("an accumulator state's mappings must have text keys")
        return {key: _flatten(item, arrays) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_flatten(item, arrays) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise InputError(f"an accumulator state cannot hold a {type(value).__name__}")


def _restore(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$array"}:
            name = value["$array"]
            if name not in arrays:
                raise InputError(f"the saved accumulator state names a missing array {name!r}")
            return arrays[name]
        return {key: _restore(item, arrays) for key, item in value.items()}
    if isinstance(value, list):
        return [_restore(item, arrays) for item in value]
    return value


def dump_state(accumulator: Accumulator) -> bytes:
    """The accumulator's :meth:`~ldp.aggregator.accumulators.Accumulator.state` as bytes (:func:`load_state` reads them).

    Raises
    ------
    ParameterError
        When the accumulator's class has no saved state (it defines no ``from_state``).
    """
    arrays: dict[str, np.ndarray] = {}
    tree = _flatten(accumulator.state(), arrays)
    header = {
        "format": STATE_FORMAT,
        "accumulator": type(accumulator).__name__,
        "fingerprint": accumulator.spec.fingerprint,
        "n": int(accumulator.n),
        "state": tree,
    }
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    buffer = io.BytesIO()
    members: dict[str, Any] = {"state": np.frombuffer(text, dtype=np.uint8), **arrays}
    np.savez_compressed(buffer, **members)
    return buffer.getvalue()


def load_state(spec: Any, data: bytes) -> Accumulator:
    """The accumulator of ``spec`` that :func:`dump_state` wrote as ``data``.

    Raises
    ------
    InputError
        When ``data`` is not a saved state, is of another format version,
        spec or accumulator, or its counts do not pass the family's checks.
    """
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            members = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a saved accumulator state ({type(exc).__name__}: {exc})") from None
    text = members.pop("state", None)
    try:
        header = json.loads(bytes(text).decode("utf-8")) if text is not None else None
    except (ValueError, UnicodeDecodeError):
        header = None
    if not isinstance(header, dict):
        raise InputError("not a saved accumulator state (no readable header)")
    if header.get("format") != STATE_FORMAT:
        raise InputError(
            f"saved accumulator state of format {header.get('format')!r}; this ldp reads format {STATE_FORMAT}"
        )
    if header.get("fingerprint") != spec.fingerprint:
        raise InputError(
            f"saved accumulator state is of spec {header.get('fingerprint')!r}, not {spec.fingerprint!r}"
        )
    kind = type(make_aggregator(spec))
    if header.get("accumulator") != kind.__name__:
        raise InputError(f"saved accumulator state is a {header.get('accumulator')!r}, not a {kind.__name__}")
    accumulator = kind.from_state(spec, _restore(header.get("state"), members))
    if accumulator.n != header.get("n"):
        raise InputError(
            f"saved accumulator state holds {accumulator.n} reports, its header says {header.get('n')}"
        )
    return accumulator
