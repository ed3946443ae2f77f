"""Atomic, private file writes for client state (DESIGN.md "Client state").

The file is written to a temporary file in the same directory (created with
mode 0600), flushed and fsync'ed, then renamed over the target, and the
directory is fsync'ed: a crash leaves either the old file or the new one,
never a torn one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_private_file"]


def write_private_file(path: str | os.PathLike, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``, readable by the owner only."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
