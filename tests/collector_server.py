"""A real collector for tests: ``ldp serve`` in a subprocess on 127.0.0.1, a free port, stopped at the end."""

from __future__ import annotations

import base64
import contextlib
import functools
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from ldp.collector.store import open_store
from ldp.collector.tasks import Task, new_task

STARTUP_SECONDS = 30.0


@functools.cache
def http_client() -> httpx.Client:
    """One HTTP client per test process, for the one-call ``httpx.get``/``post``/… of the tests.

    Each of those functions builds a client and an SSL context on every call, loading certifi's CA file (about
    30 ms of CPU) even for an http:// URL: 130 calls cost the fast set about 4 s. Nothing is kept alive, so
    each request still opens its own connection, as the one-call functions did.
    """
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One ``ldp serve`` process; ``url`` is its base URL; ``log`` its standard error once stopped."""

    def __init__(self, store: str, *extra: str, port: int | None = None) -> None:
        self.store = store
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "ldp", "serve", "--store", store, "--port", str(self.port), *extra]
        self.log = ""
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ldp serve exited: {self.process.stderr.read().decode()[-2000:]}")
            try:
                if http_client().get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("ldp serve did not answer /healthz in time")

    def kill(self) -> None:
        """``kill -9``: no shutdown, no last commit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process.stderr and not self.process.stderr.closed:
            self.log = self.process.stderr.read().decode(errors="replace")
            self.process.stderr.close()


@contextlib.contextmanager
def running(store: str, *extra: str) -> Iterator[Server]:
    server = Server(store, *extra)
    try:
        yield server
    finally:
        server.stop()


def create_task(store: str, spec: Any, **options: Any) -> tuple[Task, str]:
    task, token = new_task(spec, **options)
    with open_store(store) as opened:
        opened.create_task(task)
    return task, token


def estimates(server: Server, task: Task, token: str, **params: Any) -> httpx.Response:
    """GET a task's estimates from ``server`` with its collector token (``params``: the query, e.g. by=window)."""
    return http_client().get(
        f"{server.url}/v1/tasks/{task.task_id}/estimates",
        params=params,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )


def envelope_id() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode("ascii")


def envelopes(reports: Sequence[Any], t: int | Sequence[int]) -> list[dict[str, Any]]:
    """Envelopes of reports (Report objects or their dicts), one fresh id each."""
    times = [t] * len(reports) if isinstance(t, int) else list(t)
    return [
        {"id": envelope_id(), "t": when, "report": r if isinstance(r, dict) else r.to_dict()}
        for r, when in zip(reports, times)
    ]


def upload(server: Server, task: Task, items: Any, **kwargs: Any) -> httpx.Response:
    return http_client().post(
        f"{server.url}/v1/tasks/{task.task_id}/reports", json=items, timeout=30, **kwargs
    )


def now_truncated(task: Task) -> int:
    now = int(time.time())
    return now - now % task.time_precision


def stop_rate_clock(app: Any) -> None:
    """Stop the rate limiter's clock in a running app's collector: its buckets refill only if a test says so.

    A rate-limit test counts admissions and refusals over a burst; on the real clock, a machine slow
    enough between two requests refills a bucket and turns a refusal into an admission.
    """
    app.state.service.ingestion.limiter.clock = lambda: 0.0


def store_path(tmp_path: Path) -> str:
    return str(tmp_path / "collector.db")
