"""Keep freed memory for reuse in a batch command, instead of handing it back to the kernel at once.

``ldp aggregate`` turns every chunk of reports into NumPy arrays of a few
megabytes and frees them before the next chunk. glibc's malloc serves
blocks of that size with fresh pages (``mmap``) or trims the freed top of
its heap back to the kernel, by thresholds it moves as blocks come and go;
so, depending on the order of earlier allocations, every chunk may fault
all its pages in again. On 10 M RAPPOR reports that was 12 k to 114 k page
faults, 0.05-0.25 s of system CPU, from one run of the same command to the
next. :func:`keep_freed_memory` fixes both thresholds once: blocks under
:data:`MMAP_THRESHOLD` come from the heap, and up to :data:`TRIM_THRESHOLD`
of free heap is kept. Only glibc has these knobs (elsewhere, or when the
user tuned malloc through its environment, nothing is changed).
"""

from __future__ import annotations

import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

#: Blocks below this size come from the heap, where freed ones are reused (glibc's M_MMAP_THRESHOLD).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the top of the heap kept for reuse, up to this size (glibc's M_TRIM_THRESHOLD).
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3
#: The environment through which a user tunes glibc's malloc: set, it wins.
_USER_SETTINGS = ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_memory() -> bool:
    """Set glibc malloc's mmap and trim thresholds for a batch command; whether they were set.

    False (nothing done) off Linux, without glibc's ``mallopt``, or when the
    user set one of :data:`_USER_SETTINGS`.
    """
    if not sys.platform.startswith("linux") or any(name in os.environ for name in _USER_SETTINGS):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; musl's stub returns 0 and changes nothing
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
