"""Faithful path: every user through the real client encoder and the real aggregator.

Users are encoded with :func:`ldp.client.encode_batch` (vectorized, seeded,
insecure: simulation only) in chunks, the reports are added to
:func:`ldp.aggregator.make_aggregator` accumulators with ``add_batch``, and
the estimates come from the accumulator (frequency oracles) or from RAPPOR
candidate decoding. Optionally the first ``client_sample`` users go through
the on-device encoder ``make_encoder(spec).encode`` (CSPRNG, one report at a
time, *not* reproducible from the seed) and ``add``, to exercise that path
end to end too.

This path exists to cross-check :mod:`ldp.simulations.fast`; it costs
O(n·D) for unary encodings and OLH/BLH decoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldp.errors import ParameterError

__all__ = ["CHUNK_USERS", "collect", "expand_users", "frequency_estimates"]

#: Users encoded per chunk (bounds memory: OUE over 1,024 values is 128 bytes a report).
CHUNK_USERS = 1 << 17


def expand_users(true_counts: Any, rng: np.random.Generator) -> np.ndarray:
    """One domain index per user (shuffled), from the count of users per value."""
    counts = np.asarray(true_counts, dtype=np.int64)
    users = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    rng.shuffle(users)
    return users


def collect(
    spec: Any,
    values: Sequence[Any],
    true_counts: Any,
    rng: np.random.Generator,
    *,
    client_sample: int = 0,
    chunk_users: int = CHUNK_USERS,
):
    """Encode every user and aggregate; return the accumulator.

    Parameters
    ----------
    spec : Spec
        A frequency spec or a RAPPOR spec.
    values : sequence
        The domain values (``spec.domain`` for frequency oracles; the true
        values for RAPPOR).
    true_counts : array_like of int
        Users holding each of ``values``.
    rng : numpy.random.Generator
        Seeded generator for :func:`ldp.client.encode_batch`.
    client_sample : int
        Number of users to encode one by one with the CSPRNG client instead.
    chunk_users : int
        Users per ``encode_batch`` call.
    """
    from ldp.aggregator import make_aggregator
    from ldp.client import encode_batch, make_encoder

    if client_sample < 0:
        raise ParameterError(f"client_sample must be >= 0, got {client_sample}")
    users = expand_users(true_counts, rng)
    accumulator = make_aggregator(spec)
    # Users are indices into the domain; a spec without one (Bloom RAPPOR's candidates) encodes the values.
    by_index = getattr(spec, "domain", None) is not None
    values = list(values)
    head = min(int(client_sample), users.size)
    if head:
        shared = None if spec.memoized else make_encoder(spec)
        for index in users[:head].tolist():
            # A memoizing client's state (RAPPOR's secret and cohort) is per user.
            encoder = make_encoder(spec) if shared is None else shared
            accumulator.add(encoder.encode(values[index]))
    for start in range(head, users.size, chunk_users):
        chunk = users[start : start + chunk_users]
        if by_index:
            batch = encode_batch(spec, chunk, rng, indices=True)
        else:
            batch = encode_batch(spec, [values[i] for i in chunk.tolist()], rng)
        accumulator.add_batch(batch)
    return accumulator


def frequency_estimates(spec: Any, accumulator: Any) -> np.ndarray:
    """Estimated frequencies, in ``spec.domain`` order, from a frequency accumulator's estimate."""
    frame = accumulator.estimate()
    by_value = dict(zip((str(v) for v in frame["value"]), frame["proportion"].to_numpy(dtype=float)))
    try:
        return np.array([by_value[str(v)] for v in spec.domain], dtype=float)
    except KeyError as exc:
        raise ParameterError(f"aggregator estimate has no row for value {exc.args[0]!r}") from None
