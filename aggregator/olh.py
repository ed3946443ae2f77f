"""Vectorized support counting for local hashing (OLH, BLH).

A local-hashing report ⟨seed, y⟩ supports every domain value v whose hash
lands in the reported bucket: H_seed(v) = y. The aggregator needs, for each
domain index v, C_v = #{reports i : H_{seed_i}(v) = y_i}, which is O(n·d)
hash evaluations; this module does them in NumPy without a Python loop over
reports.

The hash family is the one of :mod:`ldp.hashing`: h(v) = (a·v + b) mod P with
P = 2^31 − 1, a = seed // P + 1, b = seed mod P, and bucket ⌊h·g/P⌋. Two
observations make the inner loop cheap:

* bucket(h) = y ⇔ lo_y ≤ h < hi_y with lo_y = ⌈y·P/g⌉, hi_y = ⌈(y+1)·P/g⌉,
  so with w = (h − lo_y) mod P the test is the single comparison
  w < width_y = hi_y − lo_y;
* walking v = 0, 1, 2, … the residue advances by a: w ← (w + a) mod P, and
  since w + a < 2P < 2^32 this is an add and a conditional subtract in
  ``uint32`` (``min(w, w − P)`` with wrap-around picks the reduced value).

So the loop runs over domain values, and each step is four ufunc passes over
a cache-resident chunk of reports. Chunks can be split over threads (NumPy
releases the GIL inside ufuncs).

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha. "Locally Differentially Private
   Protocols for Frequency Estimation". USENIX Security 2017, §4.4.
.. [2] J. L. Carter, M. N. Wegman. "Universal classes of hash functions".
   JCSS 18(2), 1979.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ldp.errors import ParameterError, ReportError
from ldp.hashing import LH_PRIME, LH_SEED_SPACE

__all__ = ["DEFAULT_CHUNK", "bucket_bounds", "support_counts"]

#: Reports per chunk: four uint32 work arrays of this length stay in L2 cache.
DEFAULT_CHUNK = 1 << 15

_P64 = np.uint64(LH_PRIME)
_P32 = np.uint32(LH_PRIME)


def bucket_bounds(buckets, g: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, width) of each bucket y: residues h with ⌊h·g/P⌋ = y are lo_y ≤ h < lo_y + width_y.

    lo_y = ⌈y·P/g⌉, computed exactly in uint64 (y·P < 2^62), as uint32.
    """
    y = np.asarray(buckets).astype(np.uint64)
    big_g = np.uint64(g)
    lo = (y * _P64 + (big_g - np.uint64(1))) // big_g
    hi = ((y + np.uint64(1)) * _P64 + (big_g - np.uint64(1))) // big_g
    return lo.astype(np.uint32), (hi - lo).astype(np.uint32)


def _count_chunk(a: np.ndarray, w: np.ndarray, width: np.ndarray, d: int) -> np.ndarray:
    """Support counts of one chunk: w holds (h(0) − lo_y) mod P and is advanced in place."""
    counts = np.empty(d, dtype=np.int64)
    tmp = np.empty_like(w)
    hit = np.empty(w.shape, dtype=bool)
    for v in range(d):
        np.less(w, width, out=hit)
        counts[v] = np.count_nonzero(hit)
        np.add(w, a, out=w)
        np.subtract(w, _P32, out=tmp)
        np.minimum(w, tmp, out=w)
    return counts


def _prepare(seeds: np.ndarray, buckets: np.ndarray, g: int):
    seeds = seeds.astype(np.uint64, copy=False)
    a = (seeds // _P64 + np.uint64(1)).astype(np.uint32)
    b = (seeds % _P64).astype(np.uint32)
    lo_y, width = bucket_bounds(buckets, g)
    # (b − lo) mod P, both < P: add P when b < lo (uint32 wrap-around, then the same min trick)
    w = b - lo_y
    np.minimum(w, w + _P32, out=w)
    return a, w, width


def support_counts(
    seeds: np.ndarray,
    buckets: np.ndarray,
    g: int,
    d: int,
    *,
    threads: int | None = 1,
    chunk: int = DEFAULT_CHUNK,
) -> np.ndarray:
    """C_v for v = 0…d−1: how many reports ⟨seed, bucket⟩ support each domain index.

    Parameters
    ----------
    seeds : array of uint64, shape (n,)
        Hash seeds, each in [0, (P − 1)·P).
    buckets : array of int, shape (n,)
        Reported buckets, each in [0, g).
    g : int
        Hash range.
    d : int
        Domain size.
    threads : int or None, default 1
        Worker threads over report chunks; ``None`` uses every CPU.
    chunk : int
        Reports per chunk (cache-sized).

    Returns
    -------
    numpy.ndarray of int64, shape (d,)

    Raises
    ------
    ReportError
        When a seed or bucket is out of range.
    """
    seeds = np.asarray(seeds)
    buckets = np.asarray(buckets)
    if seeds.shape != buckets.shape or seeds.ndim != 1:
        raise ReportError(
            f"seeds and buckets must be 1-D of equal length, got {seeds.shape} and {buckets.shape}"
        )
    if not 2 <= g < LH_PRIME:
        raise ParameterError(f"g must be in [2, 2^31 - 1), got {g}")
    if d < 1 or d > LH_PRIME:
        raise ParameterError(f"domain size must be in [1, 2^31 - 1], got {d}")
    if chunk < 1:
        raise ParameterError(f"chunk must be positive, got {chunk}")
    n = seeds.shape[0]
    if n == 0:
        return np.zeros(d, dtype=np.int64)
    if seeds.dtype.kind not in "iu" or buckets.dtype.kind not in "iu":
        raise ReportError(f"seeds and buckets must be integers, got {seeds.dtype} and {buckets.dtype}")
    if (seeds.dtype.kind == "i" and seeds.min() < 0) or seeds.astype(
        np.uint64, copy=False
    ).max() >= LH_SEED_SPACE:
        raise ReportError(f"seeds must be in [0, {LH_SEED_SPACE})")
    if buckets.min() < 0 or buckets.max() >= g:
        raise ReportError(f"buckets must be in [0, {g})")
    starts = range(0, n, chunk)

    def work(start: int) -> np.ndarray:
        stop = min(start + chunk, n)
        a, w, wid = _prepare(seeds[start:stop], buckets[start:stop], g)
        return _count_chunk(a, w, wid, d)

    workers = (os.cpu_count() or 1) if threads is None else int(threads)
    if workers < 1:
        raise ParameterError(f"threads must be at least 1, got {threads}")
    total = np.zeros(d, dtype=np.int64)
    if workers == 1 or len(starts) == 1:
        for start in starts:
            total += work(start)
        return total
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for counts in pool.map(work, starts):
            total += counts
    return total
