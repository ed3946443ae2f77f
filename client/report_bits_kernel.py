"""The run walks of one report's lanes as one loop that numba can compile (:func:`walk_runs`).

The same walks as :func:`ldp.client.report_bits._walk_runs`, on a buffer
of the reader's bits: each run is one Knuth–Yao walk of a run table, its
first :data:`LOOKUP_BITS` levels by one lookup and the rest level by
level, and the run's lanes go straight to the lanes of the group's mask.
It reads exactly the bits the plain walks read and returns how many.

Importing this module does not import numba: the fast tests run
:func:`walk_runs` as plain Python. :func:`compiled_walk` compiles it with
numba (the optional extra ``ldp-telemetry[fast]``), cached on disk
(``cache=True``), when :data:`COMPILED_WALKS` asks for it: by default once
a run table has drawn :data:`KERNEL_AFTER` runs in Python; a long-running
process that wants the compiled speed from its first report sets it to
``"always"`` (``benchmarks/bench_report_speed.py`` does). Without numba (or
without a writable cache) the Python walks serve, on the same bits.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ldp.errors import LDPWarning, ParameterError

if TYPE_CHECKING:
    from ldp.client.report_bits import RunTable

__all__ = [
    "COMPILED_WALKS",
    "DONE",
    "KERNEL_AFTER",
    "LOOKUP_BITS",
    "SHORT",
    "TOO_DEEP",
    "compiled_walk",
    "lookup_entry",
    "walk_layout",
    "walk_runs",
]

#: Levels of a walk done by one lookup when the buffer has that many bits left.
LOOKUP_BITS = 12

#: :func:`walk_runs`'s status: the lanes are filled.
DONE = 0
#: The buffer ended before the lanes were filled: call again with more bits (nothing was spent).
SHORT = 1
#: A walk went past the levels given: call again with more levels (nothing was spent).
TOO_DEEP = 2


def lookup_entry(used: int, run: int, node: int) -> int:
    """A lookup entry of :func:`walk_runs`: ``used`` bits, then ``run`` (−1: undecided) or else its ``node``."""
    return used | (run + 1) << 4 | node << 13


#: Longest run of the likelier symbol (:data:`ldp.client.report_bits.RUN_CAP`).
_RUN_CAP = 255


def walk_runs(buf: bytearray, size: int, start: int, want: int, walk: np.ndarray) -> tuple[int, int]:
    """Fill the lanes of groups of run tables in order, one walk a run; ``(status, bits spent)``.

    Parameters
    ----------
    buf : bytearray
        The lanes: ``size`` bytes, zeros on entry, where each group's lanes
        are written to its mask's bits (lane i at bit i % 8 of byte i // 8);
        then each group's mask (``size`` bytes); then from bit ``start`` the
        reader's next bits, most significant first: ``want`` bits and at
        least 24 more that are looked at but not used.
    walk : int64 array
        The groups' laws and their tables' walks (:func:`walk_layout`):
        G groups, D levels and T tables; each group's (table, 1 if its
        rarer symbol is 1 else 0); for each table, where each of its first
        D + 1 levels' leaves start in ``walk`` (a leaf is its run); each
        table's lookup (:func:`lookup_entry`) of its first LOOKUP_BITS
        levels; the leaves.

    Returns
    -------
    tuple of int
        (DONE, bits spent), or (SHORT or TOO_DEEP, 0) with the lanes partly
        written.
    """
    pos, stop, width = start, start + want, size
    groups, levels, tables = walk[0], walk[1], walk[2]
    starts = 3 + 2 * groups
    lookups = starts + tables * (levels + 1)
    lanes = np.empty(8 * width, dtype=np.int64)  # a group's lanes in order
    for g in range(groups):
        table, rare, count = walk[3 + 2 * g], walk[4 + 2 * g], 0
        for b in range(width):
            m = int(buf[(g + 1) * width + b])
            if m and rare == 0:  # the likelier symbol is 1: every lane 1, then the rarer lanes cleared
                buf[b] |= m
            if m == 255:
                for j in range(8):
                    lanes[count + j] = 8 * b + j
                count += 8
            elif m:
                for j in range(8):
                    lanes[count] = 8 * b + j
                    count += (m >> j) & 1
        lookup, level = lookups + (table << LOOKUP_BITS), starts + table * (levels + 1)
        at = 0  # the group's lanes filled
        while at < count:
            run, d, depth = -1, 0, 0
            if pos + LOOKUP_BITS <= stop:
                i = pos >> 3
                v = (int(buf[i]) << 16 | int(buf[i + 1]) << 8 | int(buf[i + 2])) >> (12 - (pos & 7))
                entry = walk[lookup + (v & ((1 << LOOKUP_BITS) - 1))]
                pos += entry & 15
                run, d, depth = ((entry >> 4) & 511) - 1, entry >> 13, LOOKUP_BITS
            while run < 0:
                if pos >= stop:
                    return SHORT, 0
                if depth >= levels:
                    return TOO_DEEP, 0
                d = 2 * d + ((int(buf[pos >> 3]) >> (7 - (pos & 7))) & 1)
                pos += 1
                first, total = walk[level + depth], walk[level + depth + 1] - walk[level + depth]
                if d < total:
                    run = walk[first + d]
                else:
                    d -= total
                    depth += 1
            at += run
            if run < _RUN_CAP:
                if at < count:  # lane ``at`` of the group takes the rarer symbol
                    lane = lanes[at]
                    if rare == 1:
                        buf[lane >> 3] |= 1 << (lane & 7)
                    else:
                        buf[lane >> 3] &= 255 ^ (1 << (lane & 7))
                at += 1
    return DONE, pos - start


#: When :func:`ldp.client.report_bits.sample_lanes` fills a busy group of lanes by the compiled walk (numba
#: installed, a reader that may read ahead): ``"auto"`` once a run table has drawn :data:`KERNEL_AFTER` runs,
#: ``"always"`` from the first group (loading the kernel then), ``"never"`` (the Python walks and decoder).
#: Every choice reads the same bits and gives the same lanes.
COMPILED_WALKS = "auto"

#: Runs a table draws in Python before the kernel is loaded under ``"auto"``: about 0.45 s of the Python walks
#: (some 15,000 reports of OUE at d = 1,024), what loading numba and the cached kernel costs a process (0.45 s
#: of CPU; a first compile 0.9 s): the ski-rental rule, a process never pays much more than twice the better
#: choice, and a long run gets the kernel's speed.
KERNEL_AFTER = 1 << 22

_LOCK = threading.Lock()


def _new_lock() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # another thread of the parent may have held it (loading the kernel) at the fork


os.register_at_fork(after_in_child=_new_lock)
_KERNEL: list[
    Callable[..., tuple[int, int]] | None
] = []  # the compiled walk once loaded, None if it cannot be
_WHY: list[str] = []  # why it cannot be


def compiled_walk(tables: Sequence[RunTable]) -> Callable[..., tuple[int, int]] | None:
    """The compiled :func:`walk_runs` under :data:`COMPILED_WALKS` for lanes of ``tables``.

    None when the policy keeps the Python walks (under ``"auto"``, until one
    of ``tables`` has drawn :data:`KERNEL_AFTER` runs) or numba cannot be
    loaded. The first call that wants it loads it (compiled on first use,
    then from numba's disk cache).
    """
    policy = COMPILED_WALKS
    if _KERNEL and policy != "never":
        return _KERNEL[0]
    if policy not in ("auto", "always", "never"):
        raise ParameterError(
            f"report_bits_kernel.COMPILED_WALKS is 'auto', 'always' or 'never', got {policy!r}"
        )
    if policy == "never" or (policy == "auto" and max(table.runs_drawn for table in tables) < KERNEL_AFTER):
        return None
    with _LOCK:
        if not _KERNEL:
            _KERNEL.append(_load())
    return _KERNEL[0]


def _load() -> Callable[..., tuple[int, int]] | None:
    """:func:`walk_runs` compiled and called once (so that a failure shows here), or None (why in ``_WHY``)."""
    try:
        import numba
    except ImportError:  # numba is an optional extra (ldp-telemetry[fast])
        _WHY.append("numba is not installed: pip install 'ldp-telemetry[fast]'")
        return None
    try:
        kernel = numba.njit(cache=True, nogil=True)(walk_runs)
        _call_empty(kernel)
    except (RuntimeError, OSError) as exc:  # numba found no writable cache (a read-only install and HOME)
        _WHY.append(f"the numba run walk could not be loaded: {exc}")
        warnings.warn(
            f"{_WHY[-1]}; report lanes are walked without it (set NUMBA_CACHE_DIR to a writable folder)",
            LDPWarning,
            stacklevel=4,
        )
        return None
    return kernel


def _call_empty(kernel: Callable[..., tuple[int, int]]) -> None:
    """Call ``kernel`` on no groups, with the argument types of every real call (it compiles for them once)."""
    kernel(bytearray(3), 0, 0, 0, walk_layout([], []))


def walk_layout(
    laws: Sequence[tuple[int, int]], tables: Sequence[tuple[list[tuple[int, ...]], list[int]]]
) -> np.ndarray:
    """The ``walk`` array of :func:`walk_runs`.

    Parameters
    ----------
    laws : sequence of (table, rarer is 1)
        Each group's.
    tables : sequence of (levels, lookup)
        Each table's first D levels, each level its leaves (runs) in order,
        and its lookup entries (:func:`lookup_entry`), 2^LOOKUP_BITS of them.
    """
    depth = len(tables[0][0]) if tables else 0
    head = [len(laws), depth, len(tables)]
    for law in laws:
        head.extend(law)
    leaves_at = len(head) + len(tables) * (depth + 1 + (1 << LOOKUP_BITS))
    starts: list[int] = []
    lookups: list[int] = []
    leaves: list[int] = []
    for levels, lookup in tables:
        for level in levels:
            starts.append(leaves_at + len(leaves))
            leaves.extend(level)
        starts.append(leaves_at + len(leaves))
        lookups.extend(lookup)
    return np.array(head + starts + lookups + leaves, dtype=np.int64)
