"""RAPPOR decoding, step 2: the Bloom design matrix of a candidate list.

Row ``j·k + i`` of the (m·k, M) 0/1 matrix is 1 in column s where candidate s
sets Bloom bit i in cohort j (docs/mechanisms.md#rappor-decoding). The
positions of the whole list are hashed at once and the matrix is cached per
(hashing parameters, candidate list), so repeated decodes of one list (a
simulation sweep over ε, a dashboard) do not rehash it.

References
----------
.. [1] Ú. Erlingsson, V. Pihur, A. Korolova. "RAPPOR: Randomized Aggregatable
   Privacy-Preserving Ordinal Response". ACM CCS 2014.
.. [2] google/rappor, analysis/R/decode.R (the candidate map).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import scipy.sparse

from ldp.aggregator.rappor.counts import known_size
from ldp.errors import InputError
from ldp.hashing import bloom_positions_batch, value_bytes
from ldp.specs.rappor import Rappor

__all__ = [
    "DESIGN_CACHE",
    "DesignCache",
    "bloom_fingerprint",
    "candidates_digest",
    "design_matrix",
    "positions_matrix",
]


def design_matrix(spec: Rappor, candidates: Sequence[Any]) -> scipy.sparse.csc_matrix:
    """The (m·k, M) 0/1 matrix: row ``j·k + i`` is 1 where candidate s sets bit i in cohort j.

    Positions are those of :meth:`ldp.Rappor.bit_positions`, computed for
    the whole list at once (:func:`ldp.hashing.bloom_positions_batch`); two
    hashes landing on one bit give a single 1. The matrix is cached for the
    spec's hashing parameters (k, h, m, hash: p, q and f do not enter) and
    the candidates' bytes (:data:`DESIGN_CACHE`); the cached matrix is
    read-only, so take a copy before changing it.
    """
    m, k = spec.num_cohorts, known_size(spec.num_bits, "num_bits")
    if spec.encoding != "bloom":
        return _direct_design(spec, candidates, m, k)
    if any(value is None for value in candidates):
        raise InputError("rappor value must not be None")
    data = [value_bytes(value) for value in candidates]
    key = (bloom_fingerprint(spec), candidates_digest(data))
    cached = DESIGN_CACHE.get(key)
    if cached is not None:
        return cached
    positions = bloom_positions_batch(data, range(m), spec.num_hashes, k, spec.hash)  # (M, m, h)
    x = positions_matrix(positions, k)
    DESIGN_CACHE.put(key, x)
    return x


def _direct_design(spec: Rappor, candidates: Sequence[Any], m: int, k: int) -> scipy.sparse.csc_matrix:
    """Design of basic/boolean RAPPOR from :meth:`ldp.Rappor.bit_positions` (not cached)."""
    rows = [
        j * k + pos
        for value in candidates
        for j in range(m)
        for pos in sorted(set(spec.bit_positions(value, j)))
    ]
    cols = [
        s for s, value in enumerate(candidates) for j in range(m) for _ in set(spec.bit_positions(value, j))
    ]
    return scipy.sparse.csc_matrix(
        (np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(m * k, len(candidates)),
    )


def bloom_fingerprint(spec: Rappor) -> tuple[str, int, int, int, str]:
    """What the Bloom positions depend on: ``(encoding, k, h, m, hash)``."""
    return (
        spec.encoding,
        known_size(spec.num_bits, "num_bits"),
        spec.num_hashes,
        spec.num_cohorts,
        spec.hash,
    )


def candidates_digest(data: Sequence[bytes]) -> bytes:
    """SHA-256 of the candidates' bytes, length-prefixed (so the split between values counts)."""
    lengths = np.fromiter((len(d) for d in data), dtype="<i8", count=len(data))
    digest = hashlib.sha256(len(data).to_bytes(8, "little"))
    digest.update(lengths.tobytes())
    digest.update(b"".join(data))
    return digest.digest()


def positions_matrix(positions: np.ndarray, num_bits: int) -> scipy.sparse.csc_matrix:
    """The 0/1 CSC matrix of Bloom positions ``(M, m, h)``: column s, row ``j·k + position``.

    Repeated positions of one value in one cohort give a single 1; row
    indices are sorted within each column (canonical CSC).
    """
    num_values, m, h = positions.shape
    index_type = np.int32 if m * num_bits < 2**31 and positions.size < 2**31 else np.int64
    base = (np.arange(m, dtype=index_type) * num_bits)[None, :]
    rows = np.empty(positions.shape, dtype=index_type)
    if h == 2:  # the common case: order the pair without a sort
        np.minimum(positions[..., 0], positions[..., 1], out=rows[..., 0], casting="unsafe")
        np.maximum(positions[..., 0], positions[..., 1], out=rows[..., 1], casting="unsafe")
    else:
        rows[...] = np.sort(positions, axis=2)
    keep = np.ones(rows.shape, dtype=bool)
    np.not_equal(rows[:, :, 1:], rows[:, :, :-1], out=keep[:, :, 1:])
    rows += base[..., None]
    indices = rows[keep]
    indptr = np.zeros(num_values + 1, dtype=index_type)
    np.cumsum(keep.sum(axis=(1, 2), dtype=index_type), out=indptr[1:])
    x = scipy.sparse.csc_matrix((np.ones(indices.size), indices, indptr), shape=(m * num_bits, num_values))
    x.has_sorted_indices = True
    x.has_canonical_format = True
    for array in (x.data, x.indices, x.indptr):
        array.flags.writeable = False
    return x


class DesignCache:
    """A small in-process LRU of design matrices, bounded by entries and by stored nonzeros.

    A nonzero takes 12 bytes (float64 value, int32 row), so the default bound of
    20 M nonzeros is about 240 MB: one list of 100,000 candidates at 128 bits ×
    64 cohorts, h = 2, holds 12.8 M.
    """

    def __init__(self, max_entries: int = 8, max_nonzeros: int = 20_000_000) -> None:
        self.max_entries = max_entries
        self.max_nonzeros = max_nonzeros
        self._items: OrderedDict[Hashable, scipy.sparse.csc_matrix] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> scipy.sparse.csc_matrix | None:
        """The matrix stored under ``key`` (now the most recent), or None."""
        with self._lock:
            x = self._items.get(key)
            if x is not None:
                self._items.move_to_end(key)
            return x

    def put(self, key: Hashable, x: scipy.sparse.csc_matrix) -> None:
        """Store ``x``, dropping the least recently used entries beyond the bounds."""
        if x.nnz > self.max_nonzeros:
            return
        with self._lock:
            self._items[key] = x
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries or self.nonzeros > self.max_nonzeros:
                self._items.popitem(last=False)

    @property
    def nonzeros(self) -> int:
        """Nonzeros held, over all entries."""
        return sum(x.nnz for x in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()


#: The process's design-matrix cache (:func:`design_matrix`), keyed by
#: :func:`bloom_fingerprint` and :func:`candidates_digest`.
DESIGN_CACHE = DesignCache()
