"""A throwaway PostgreSQL cluster for the store tests (no server needs to be installed as a service).

:func:`postgres_cluster` finds the PostgreSQL server binaries (``initdb`` and
``pg_ctl``), initializes a cluster in a temporary directory, starts it on a
free loopback port and yields a ``postgresql://`` URL to a fresh database; on
leaving it stops the cluster (``pg_ctl stop -m immediate``) and deletes the
directory, also when the block raised. PostgreSQL refuses to run as root, so
under root the binaries run as the ``postgres`` OS user (``runuser`` or
``su``), which then owns the temporary directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["create_database", "drop_database", "find_binaries", "postgres_cluster"]

_SEARCH_GLOB = "/usr/lib/postgresql/*/bin"
_PREFERRED = "/usr/lib/postgresql/15/bin"
_SERVER_USER = "postgres"
_START_TIMEOUT_S = 60


def _has_binaries(directory: str | Path) -> bool:
    return all(os.access(Path(directory) / name, os.X_OK) for name in ("initdb", "pg_ctl"))


def _version_key(directory: str) -> tuple[int, str]:
    version = Path(directory).parent.name
    return (int(version) if version.isdigit() else -1, version)


def find_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None when PostgreSQL is not installed.

    Looks in ``/usr/lib/postgresql/15/bin`` first, then on ``PATH``, then in
    every other ``/usr/lib/postgresql/*/bin`` (newest first).
    """
    candidates = [_PREFERRED]
    on_path = shutil.which("initdb")
    if on_path is not None:
        candidates.append(str(Path(on_path).resolve().parent))
    candidates.extend(sorted(glob.glob(_SEARCH_GLOB), key=_version_key, reverse=True))
    for directory in candidates:
        if _has_binaries(directory):
            return Path(directory)
    return None


def _as_server_user(command: Sequence[str]) -> list[str]:
    """``command`` run as the ``postgres`` OS user when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return list(command)
    runuser = shutil.which("runuser")
    if runuser is not None:
        return [runuser, "-u", _SERVER_USER, "--", *command]
    return ["su", _SERVER_USER, "-s", "/bin/sh", "-c", shlex.join(command)]


def _run(command: Sequence[str], cwd: Path) -> None:
    """Run ``command`` (as the server user), raising with its output when it fails."""
    done = subprocess.run(
        _as_server_user(command), cwd=cwd, capture_output=True, text=True, timeout=_START_TIMEOUT_S + 30
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}".rstrip()
        )


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _make_directory() -> Path:
    """A new temporary directory the server user owns."""
    directory = Path(tempfile.mkdtemp(prefix="ldp-pg-"))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(_SERVER_USER)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    return directory


def _log_tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def _start(bin_dir: Path, directory: Path, data: Path, log: Path) -> int:
    """Start the cluster on a free port (a few tries, another process may take the port); the port."""
    error: RuntimeError | None = None
    for _ in range(3):
        port = _free_port()
        options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=on"
        command = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w"]
        command += ["-t", str(_START_TIMEOUT_S), "-o", options, "start"]
        try:
            _run(command, directory)
            return port
        except RuntimeError as exc:
            error = RuntimeError(f"{exc}\nserver log:\n{_log_tail(log)}")
    assert error is not None
    raise error


def _admin_url(port: int, database: str = "postgres") -> str:
    return f"postgresql://{_SERVER_USER}@127.0.0.1:{port}/{database}"


def create_database(url: str, name: str) -> str:
    """Create database ``name`` in the cluster of ``url``; the URL of the new database."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return url.rsplit("/", 1)[0] + "/" + name


def drop_database(url: str, name: str) -> None:
    """Drop database ``name`` (closing its connections) in the cluster of ``url``."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextlib.contextmanager
def postgres_cluster(database: str = "ldp_test") -> Iterator[str]:
    """A running throwaway cluster: yields ``postgresql://postgres@127.0.0.1:PORT/DATABASE``.

    Parameters
    ----------
    database : str
        The database created in the new cluster (the one the URL names).

    Raises
    ------
    FileNotFoundError
        No PostgreSQL binaries (see :func:`find_binaries`).
    RuntimeError
        ``initdb`` or ``pg_ctl`` failed (the message holds their output and the server log).
    """
    bin_dir = find_binaries()
    if bin_dir is None:
        raise FileNotFoundError(f"no initdb and pg_ctl in {_PREFERRED}, on PATH or in {_SEARCH_GLOB}")
    directory = _make_directory()
    data, log = directory / "data", directory / "server.log"
    try:
        # --no-sync: initdb's final flush of the new cluster's files to disk (4-5 s here) buys nothing for a
        # cluster deleted at the end of the session; the server itself still runs with fsync=on
        initdb = [str(bin_dir / "initdb"), "--no-sync", "-A", "trust", "-U", _SERVER_USER, "-D", str(data)]
        _run(initdb, directory)
        port = _start(bin_dir, directory, data, log)
        yield create_database(_admin_url(port), database)
    finally:
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], directory)
        shutil.rmtree(directory, ignore_errors=True)
