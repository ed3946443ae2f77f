"""Files that survive crashes, races and hostile paths (docs/architecture.md#concurrency).

Client state (a secret and cohort) and privacy ledgers are shared state: two
processes, or two threads, may open the same client at once, and any of them
may be killed at any moment. This module holds the few file operations that
make that safe; everything that writes shared state goes through it.

- :func:`create_private_file` creates a file *exclusively*: the content is
  written and fsync'ed in a temporary file, then hard-linked to its name,
  which fails if the name exists in any form (a regular file, a directory, a
  symbolic link, even a dangling one). Of two racing creators exactly one
  wins; the loser learns that it lost and reads the winner's file.
  :func:`create_private_files` does the same for many files with one
  durability pass (``syncfs``) and one directory fsync for all of them.
- :func:`write_private_file` replaces a file atomically (temporary file,
  fsync, rename, fsync of the directory): a crash leaves the old content or
  the new one, never a torn file.
- :func:`read_private_file` reads a file that must be private: never through
  a symbolic link, only a regular file, and never one that other users may
  read or write (mode looser than 0600), because its secret may then be
  known to them.
- :func:`ensure_private_directory` creates missing directories with mode
  0700; an existing directory that other users may write is refused (they
  could plant or swap files), one they may only read or list draws a warning.
- :func:`exclusive_lock` takes an ``flock`` on a lock file that is never
  replaced or deleted, so it excludes other processes and other threads
  (each call opens its own file description).
- :func:`atomic_output` writes a command's output file through a temporary
  file renamed into place only on success: a failing command leaves an
  existing output untouched and no partial file. :func:`private_output` does
  the same for a private output (mode 0600, fsync'ed before it is named,
  and by default never replacing an existing file).

Temporary files carry the mark ``.ldp-tmp`` and are held under an ``flock``
by their writer while they exist. A process killed between creating one and
renaming it leaves it behind; :func:`remove_stale_temporaries` deletes those
whose writer is gone (the lock is free) and that are older than a minute, so
a live writer's file is never touched. Temporary directories
(:func:`temporary_directory`, ``.<name>.ldp-tmp-<12 hex digits>``, for an
output that is a whole directory) are held and swept the same way.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ldp.errors import LDPError, LDPWarning, ParameterError, StateError

__all__ = [
    "TEMP_MARK",
    "atomic_output",
    "create_private_file",
    "create_private_files",
    "ensure_private_directory",
    "exclusive_lock",
    "parse_private_json",
    "private_output",
    "read_private_file",
    "remove_stale_temporaries",
    "remove_stale_temporaries_once",
    "temporary_directory",
    "write_private_file",
]

#: Every temporary file written here has this in its name.
TEMP_MARK = ".ldp-tmp"
#: A temporary file younger than this is never treated as stale (seconds).
STALE_AFTER = 60.0
_PRIVATE_FILE = 0o600
_PRIVATE_DIRECTORY = 0o700
_GROUP_OR_OTHER = 0o077
_WRITABLE_BY_OTHERS = 0o022


def _directory_of(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def _fsync_directory(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def ensure_private_directory(directory: str | os.PathLike) -> Path:
    """Create ``directory`` (and missing parents) with mode 0700, or check an existing one.

    Raises
    ------
    StateError
        If the path exists but is not a directory, or if other users may
        write to it (group- or world-writable without the sticky bit).

    Warns
    -----
    LDPWarning
        If other users may read or list it (its files stay private, but their
        names, one per client, are visible).
    """
    path = Path(directory)
    missing = []
    for candidate in [path, *path.parents]:
        if candidate.exists() or str(candidate) in ("", "."):
            break
        missing.append(candidate)
    for candidate in reversed(missing):
        try:
            os.mkdir(candidate, _PRIVATE_DIRECTORY)
        except FileExistsError:
            pass  # made by a concurrent process: checked below like any existing directory
        except OSError as exc:
            raise StateError(f"cannot create state directory {str(candidate)!r}: {exc.strerror}") from None
    try:
        info = os.stat(path)
    except OSError as exc:
        raise StateError(f"cannot use state directory {str(path)!r}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise StateError(f"state directory {str(path)!r} exists and is not a directory")
    mode = stat.S_IMODE(info.st_mode)
    if mode & _WRITABLE_BY_OTHERS and not mode & stat.S_ISVTX:
        raise StateError(
            f"state directory {str(path)!r} has mode {mode:04o}: other users can write to it and could replace "
            f"client state or ledgers; run 'chmod 700 {path}' (or use a private directory)"
        )
    if mode & _GROUP_OR_OTHER and missing == []:
        warnings.warn(
            f"state directory {str(path)!r} has mode {mode:04o}: other users can list its client files "
            f"(the files themselves are private); 'chmod 700 {path}' hides them",
            LDPWarning,
            stacklevel=2,
        )
    return path


@contextlib.contextmanager
def _locked_temporary(
    directory: Path, name: str, mode: int, error: type[LDPError] = StateError
) -> Iterator[tuple[int, Path]]:
    """A new temporary file ``.<name>.<random>.ldp-tmp<suffix>`` in ``directory``, held under flock.

    The file keeps ``name``'s suffixes at its end (``reports.jsonl.gz`` gives
    ``...ldp-tmp.jsonl.gz``), so code that picks a format from the extension
    treats it like the final file. The caller renames or links it; whatever is
    left at the end is deleted.
    """
    suffix = "".join(Path(name).suffixes)
    for _ in range(100):
        temp = directory / f".{name}.{os.urandom(6).hex()}{TEMP_MARK}{suffix}"
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise error(f"cannot write {str(directory / name)!r}: {exc.strerror}") from None
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise error(f"cannot create a temporary file in {str(directory)!r}")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.fchmod(fd, mode)  # the umask may have narrowed it; never widens a private file
        yield fd, temp
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def write_private_file(path: str | os.PathLike, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``, readable by the owner only (mode 0600).

    The directory must exist (see :func:`ensure_private_directory`). A symbolic
    link at ``path`` is replaced by the file, never written through.
    """
    target = Path(path)
    directory = _directory_of(target)
    with _locked_temporary(directory, target.name, _PRIVATE_FILE) as (fd, temp):
        _write_all(fd, data)
        os.replace(temp, target)
    _fsync_directory(directory)


def create_private_file(path: str | os.PathLike, data: bytes) -> bool:
    """Create ``path`` holding ``data`` (mode 0600) only if nothing exists at that name.

    Returns
    -------
    bool
        True if this call created the file; False if the name already
        existed, in any form (a file, a directory, a symbolic link, dangling or
        not). The file appears complete or not at all.
    """
    target = Path(path)
    directory = _directory_of(target)
    with _locked_temporary(directory, target.name, _PRIVATE_FILE) as (fd, temp):
        _write_all(fd, data)
        try:
            os.link(temp, target, follow_symlinks=False)
        except FileExistsError:
            return False
    _fsync_directory(directory)
    return True


#: Files created per durability pass of :func:`create_private_files` (each holds a descriptor meanwhile;
#: fewer when the process may open few files).
CREATE_GROUP = 1024


def create_private_files(files: Sequence[tuple[str | os.PathLike, bytes]]) -> list[bool]:
    """:func:`create_private_file` for many files, with the durability work done once per group.

    Each file is created exclusively, exactly as by :func:`create_private_file`
    (a name that exists in any form is left alone and reported False), but
    instead of two fsyncs per file, each group of up to :data:`CREATE_GROUP`
    files takes these steps in this order:

    1. every content is written to its own unnamed file (``O_TMPFILE``,
       Linux; where a file system has none, a temporary file, flock'ed, never
       visible under the final name);
    2. one durability pass makes all the contents stable: ``syncfs`` of
       their filesystem (Linux; elsewhere an fsync of each file);
    3. each file is hard-linked to its name (fails if the name exists);
    4. each directory is fsync'ed once.

    A process killed (or a machine losing power) at any point leaves every
    name absent or complete: a name only ever points at content already on
    stable storage. An unnamed file not yet linked vanishes with the
    process; stale temporaries (where unnamed files are missing) are swept
    later. One link per file is the only change to its directory (a
    temporary file costs three: its creation, the link, its removal). When this
    returns, every created name is durable, so a caller may now act on the
    files (emit a report derived from a secret in them).

    Parameters
    ----------
    files : sequence of (path, bytes)
        Each file and its content; the directories must exist.

    Returns
    -------
    list of bool
        Per file, True if this call created it; False if the name already
        existed (also for a path given twice: its second occurrence).

    Raises
    ------
    StateError
        If the durability pass fails (the group's names are then not created).
    """
    created: list[bool] = []
    group = _group_size()
    for start in range(0, len(files), group):
        created.extend(_create_group(files[start : start + group]))
    return created


def _group_size() -> int:
    """:data:`CREATE_GROUP`, or a quarter of the open-file limit when that is lower (at least 16)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return CREATE_GROUP
    return max(16, min(CREATE_GROUP, soft // 4))


def _create_group(files: Sequence[tuple[str | os.PathLike, bytes]]) -> list[bool]:
    """Steps 1-4 of :func:`create_private_files` for one group: unnamed files where the system has them."""
    targets = [path if isinstance(path, Path) else Path(path) for path, _ in files]
    parents = [
        str(_directory_of(target)) for target in targets
    ]  # str: hashed once per directory, not per file
    directories = [Path(directory) for directory in dict.fromkeys(parents)]
    with contextlib.ExitStack() as stack:
        handles = {str(directory): _unnamed_files(directory, stack) for directory in directories}
        if all(handle is not None for handle in handles.values()):
            places = [(target.name, handles[parent]) for target, parent in zip(targets, parents)]
            return _create_unnamed(targets, files, places, directories, stack)
    return _create_named(targets, files, directories)


#: ``open(2)`` errors that say a file system cannot make unnamed files (``O_TMPFILE``).
_NO_UNNAMED = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOTSUP}


def _unnamed_files(directory: Path, stack: contextlib.ExitStack) -> int | None:
    """A descriptor of ``directory`` for :func:`_create_unnamed`, or None where it cannot make unnamed files.

    Unnamed files need ``O_TMPFILE`` (Linux, on most local file systems) and
    ``/proc/self/fd`` to link them by name without privileges.
    """
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        probe = os.open(directory, flag | os.O_RDWR | os.O_CLOEXEC, _PRIVATE_FILE)
    except OSError as exc:
        if exc.errno in _NO_UNNAMED:
            return None
        raise StateError(f"cannot write new files in {str(directory)!r}: {exc.strerror}") from None
    os.close(probe)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    stack.callback(os.close, fd)
    return fd


def _create_unnamed(
    targets: list[Path],
    files: Sequence[tuple[str | os.PathLike, bytes]],
    places: list[tuple[str, int | None]],
    directories: list[Path],
    stack: contextlib.ExitStack,
) -> list[bool]:
    """Steps 1-4 with each content in an unnamed file (``O_TMPFILE``) that its name links to.

    ``places`` holds each target's name and a descriptor of its directory.

    An unnamed file has no name to clash with, lock or sweep: a process killed
    before the link leaves nothing behind (the file system frees it), and one
    link per file is the only change to the directory. Each file costs five
    system calls (open relative to its directory's descriptor, fchmod, write,
    link, close); nothing else is done per file.
    """
    fds: list[int] = []
    stack.callback(_close_all, fds)
    for target, (_, dir_fd), (_, data) in zip(targets, places, files):
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, _PRIVATE_FILE, dir_fd=dir_fd)
        except OSError as exc:
            raise StateError(f"cannot write {str(target)!r}: {exc.strerror}") from None
        fds.append(fd)
        os.fchmod(fd, _PRIVATE_FILE)  # the umask may have narrowed it; never widens a private file
        _write_bytes(fd, data)
    _sync_contents(fds, directories)
    created = []
    for (name, dir_fd), fd in zip(places, fds):
        try:  # linkat(AT_SYMLINK_FOLLOW) of the descriptor: fails if the name exists in any form
            os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dir_fd, follow_symlinks=True)
        except FileExistsError:
            created.append(False)
        else:
            created.append(True)
    for directory in directories:
        _fsync_directory(directory)
    return created


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _write_bytes(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _create_named(
    targets: list[Path], files: Sequence[tuple[str | os.PathLike, bytes]], directories: list[Path]
) -> list[bool]:
    """Steps 1-4 with named temporary files (flock'ed, swept once stale): where unnamed files are missing."""
    created = []
    with contextlib.ExitStack() as stack:
        temps = []
        for target, (_, data) in zip(targets, files):
            fd, temp = stack.enter_context(
                _locked_temporary(_directory_of(target), target.name, _PRIVATE_FILE)
            )
            _write_bytes(fd, data)
            temps.append((fd, temp))
        _sync_contents([fd for fd, _ in temps], directories)
        for target, (_, temp) in zip(targets, temps):
            try:
                os.link(temp, target, follow_symlinks=False)
            except FileExistsError:
                created.append(False)
            else:
                created.append(True)
    for directory in directories:
        _fsync_directory(directory)
    return created


def _sync_contents(fds: list[int], directories: list[Path]) -> None:
    """Make the written contents of ``fds`` (files in ``directories``) stable: one ``syncfs`` per file system.

    A new file lives on its directory's file system, so the directories name
    the file systems to sync: nothing is asked per file. Where ``syncfs`` is
    missing, each file is fsync'ed.
    """
    syncfs = _syncfs()
    if syncfs is None:
        for fd in fds:
            os.fsync(fd)
        return
    done = set()
    for directory in directories:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            device = os.fstat(dir_fd).st_dev
            if device in done:
                continue
            done.add(device)
            if syncfs(dir_fd) != 0:
                import ctypes

                code = ctypes.get_errno()
                places = ", ".join(repr(str(directory)) for directory in directories)
                raise StateError(f"cannot make new client files in {places} durable: {os.strerror(code)}")
        finally:
            os.close(dir_fd)


@cache
def _syncfs():
    """The C library's ``syncfs`` (Linux), or None where it is missing."""
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def read_private_file(path: str | os.PathLike, what: str) -> str | None:
    """The UTF-8 text of the private file ``path``, or None when nothing exists at that name.

    Parameters
    ----------
    path : path
        The file.
    what : str
        What the file is, for messages ("client state", "privacy ledger").

    Raises
    ------
    StateError
        If ``path`` is a symbolic link (dangling or not), not a regular file,
        readable or writable by other users (mode looser than 0600: a secret
        in it may be known), unreadable, or not UTF-8.
    """
    target = Path(path)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        if os.path.lexists(target):  # pragma: no cover - removed between the two calls
            raise StateError(f"{what} {str(target)!r} vanished while being opened") from None
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateError(
                f"{what} {str(target)!r} is a symbolic link; ldp never reads or replaces client state through "
                "a link (it could point anywhere). Move the real file to this path."
            ) from None
        raise StateError(f"cannot read {what} {str(target)!r}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StateError(f"{what} {str(target)!r} is not a regular file")
        mode = stat.S_IMODE(info.st_mode)
        if mode & _GROUP_OR_OTHER:
            raise StateError(
                f"{what} {str(target)!r} has mode {mode:04o}: other users can read or change it, so its secret may "
                f"be known. If you are sure it was not, run 'chmod 600 {target}'; otherwise move it away "
                "(a new client starts with a new secret)"
            )
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read()
    except OSError as exc:
        raise StateError(f"cannot read {what} {str(target)!r}: {exc.strerror}") from None
    finally:
        os.close(fd)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StateError(
            f"cannot read {what} {str(target)!r}: not UTF-8 text (corrupt); it was left untouched"
        ) from None


def parse_private_json(
    text: str, path: str | os.PathLike, what: str, kind: str, fmt: str | tuple[str, ...]
) -> dict[str, Any]:
    """The JSON object of a private file's ``text`` (from :func:`read_private_file`), of format ``fmt``.

    Parameters
    ----------
    text : str
        The file's text.
    path : path
        The file, for messages.
    what : str
        What the file is ("client state", "privacy ledger").
    kind : str
        What an ldp file of this kind is called ("client state file", "privacy ledger").
    fmt : str or tuple of str
        The ``format`` the object must declare (one of them, for a tuple:
        the versions this ldp reads).

    Raises
    ------
    StateError
        If the text is not JSON (a corrupt or truncated file) or not an object of format ``fmt``.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise StateError(
            f"{what} {str(path)!r} is corrupt or truncated (not valid JSON); it was left untouched"
        ) from None
    formats = (fmt,) if isinstance(fmt, str) else fmt
    if not isinstance(data, dict) or data.get("format") not in formats:
        raise StateError(f"{str(path)!r} is not an ldp {kind} (format {' or '.join(formats)})")
    return data


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike, what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the lock file ``path`` (created 0600, never deleted).

    Excludes other processes and other threads alike: every call opens the
    file anew, and flock locks belong to the open file description. The lock
    is released when the block ends or the process dies (``kill -9``
    included), so a crash never leaves it held.
    """
    target = Path(path)
    try:
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, _PRIVATE_FILE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateError(
                f"lock file of the {what} {str(target)!r} is a symbolic link; refusing it"
            ) from None
        raise StateError(f"cannot open the lock file of the {what} {str(target)!r}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _temporary_directory_pattern(name: str | None) -> re.Pattern[str]:
    """The exact names of :func:`temporary_directory`'s directories (for ``name``, or for any target).

    Also matched: the 8-character names (``[a-z0-9_]``) that ``tempfile.mkdtemp``
    gave them in earlier versions of ``ldp task export --out``.
    """
    target = ".+" if name is None else re.escape(name)
    return re.compile(rf"\.{target}{re.escape(TEMP_MARK)}-(?:[0-9a-f]{{12}}|[a-z0-9_]{{8}})")


def remove_stale_temporaries(directory: str | os.PathLike[str], name: str | None = None) -> int:
    """Delete temporary files and directories in ``directory`` left behind by killed writers; return how many.

    A temporary is stale when its writer no longer holds its flock and it is
    older than :data:`STALE_AFTER` seconds. ``name`` limits the sweep to the
    temporaries of one target. Files that are not ldp temporaries are never
    touched, and a directory only when its name is exactly one that
    :func:`temporary_directory` gives (never a symbolic link); errors (an
    entry vanishing, a permission) are ignored.
    """
    prefix = "." if name is None else f".{name}."
    folders = _temporary_directory_pattern(name)
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    now = time.time()
    for entry in entries:
        if not (entry.name.startswith(prefix) and TEMP_MARK in entry.name):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if not folders.fullmatch(entry.name):
                    continue
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            elif entry.is_file(follow_symlinks=False):
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            else:
                continue
            if now - entry.stat(follow_symlinks=False).st_mtime < STALE_AFTER:
                continue
            fd = os.open(entry.path, flags)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if flags & os.O_DIRECTORY:
                held, named = os.fstat(fd), os.stat(entry.path, follow_symlinks=False)
                if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
                    continue  # renamed away by its finished writer: no longer a temporary
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed += 1
        except OSError:
            pass  # held by a live writer, or already gone
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def temporary_directory(
    parent: str | os.PathLike[str], name: str, error: type[LDPError] = ParameterError
) -> Iterator[Path]:
    """A new directory ``.<name>.ldp-tmp-<random>`` (mode 0700) in ``parent``, held under flock while the block runs.

    For an output that is a whole directory: the caller fills it and renames
    it to ``name`` inside the block. Stale temporary directories of earlier,
    killed runs for the same ``name`` are removed first
    (:func:`remove_stale_temporaries`); on an exception the directory is
    deleted. A directory still there when the block ends (not renamed) is
    deleted too.

    Raises
    ------
    LDPError
        ``error`` (default :class:`ParameterError`) if the directory cannot be created.
    """
    directory = Path(parent)
    remove_stale_temporaries(directory, name)
    for _ in range(100):
        temp = directory / f".{name}{TEMP_MARK}-{os.urandom(6).hex()}"
        try:
            os.mkdir(temp, _PRIVATE_DIRECTORY)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise error(f"cannot create a directory in {str(directory)!r}: {exc.strerror}") from None
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise error(f"cannot create a temporary directory in {str(directory)!r}")
    try:
        fd = os.open(temp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:  # pragma: no cover - just made by this process
        shutil.rmtree(temp, ignore_errors=True)
        raise error(f"cannot open the directory {str(temp)!r}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield temp
    finally:
        shutil.rmtree(temp, ignore_errors=True)  # nothing there once renamed
        os.close(fd)


_SWEPT: set[str] = set()
_SWEPT_LOCK = threading.Lock()


def remove_stale_temporaries_once(directory: str | os.PathLike) -> None:
    """:func:`remove_stale_temporaries` for ``directory``, at most once per process.

    Opening a client sweeps its state directory; a run that opens many
    clients of one directory must not list the directory once per client
    (quadratic in the number of clients).
    """
    key = os.path.realpath(directory)
    with _SWEPT_LOCK:
        if key in _SWEPT:
            return
        _SWEPT.add(key)
    remove_stale_temporaries(directory)


def _creation_mode(target: Path) -> int:
    """Mode for a new output file: an existing target's mode, else 0666 minus the umask."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary path to write an output to; rename it to ``path`` only if the block succeeds.

    The temporary file is in the same directory and ends with ``path``'s own
    suffixes, so writers choosing a format by extension treat it alike. On an
    exception the temporary file is deleted and an existing ``path`` is left
    untouched. Stale temporaries of earlier, killed runs for the same output
    are removed first.

    Raises
    ------
    ParameterError
        If the output cannot be created there (missing or unwritable
        directory, a directory at ``path``).
    """
    target = Path(path)
    directory = _directory_of(target)
    if os.path.isdir(target):
        raise ParameterError(f"cannot write {str(target)!r}: it is a directory")
    remove_stale_temporaries(directory, target.name)
    with _locked_temporary(directory, target.name, _creation_mode(target), ParameterError) as (_, temp):
        yield str(temp)
        try:
            os.replace(temp, target)
        except OSError as exc:
            raise ParameterError(f"cannot write {str(target)!r}: {exc.strerror}") from None
    _fsync_directory(directory)


@contextlib.contextmanager
def private_output(path: str | os.PathLike, *, replace: bool = False) -> Iterator[str]:
    """Yield a temporary path (mode 0600) to write a private output to; name it ``path`` only if the block succeeds.

    Like :func:`atomic_output`, but the file is readable by the owner only from
    its creation, its content is fsync'ed before it gets its name, and unless
    ``replace`` an existing ``path`` (in any form) is never replaced: the file is
    hard-linked to its name, which fails if the name exists. A process killed
    inside the block leaves only its temporary file, which later calls sweep
    (:func:`remove_stale_temporaries`).

    Raises
    ------
    ParameterError
        If ``path`` exists (without ``replace``) or the output cannot be created
        there (missing or unwritable directory, a directory at ``path``).
    """
    target = Path(path)
    directory = _directory_of(target)
    if os.path.isdir(target):
        raise ParameterError(f"cannot write {str(target)!r}: it is a directory")
    remove_stale_temporaries(directory, target.name)
    with _locked_temporary(directory, target.name, _PRIVATE_FILE, ParameterError) as (fd, temp):
        yield str(temp)
        os.fsync(fd)  # what the caller wrote through its own descriptors is on stable storage first
        try:
            if replace:
                os.replace(temp, target)
            else:
                os.link(temp, target, follow_symlinks=False)
        except FileExistsError:
            raise ParameterError(f"{str(target)!r} already exists; refusing to replace it") from None
        except OSError as exc:
            raise ParameterError(f"cannot write {str(target)!r}: {exc.strerror}") from None
    _fsync_directory(directory)
