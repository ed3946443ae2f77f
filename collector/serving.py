"""How ``ldp serve`` runs the collector on uvicorn: bounded reads, a bounded stop, no secret in a log line.

- **Reads.** :class:`BoundedReadProtocol` gives every request ``read_timeout``
  seconds from its connection's first byte (or the end of the previous
  response) to the last byte of its body. A client that trickles its headers
  or its body gets ``408`` and the connection is closed; an upload the app was
  already reading ends as a client disconnect of reason ``read_timeout``
  (:data:`ldp.collector.app.READ_TIMED_OUT`).
- **Writes.** What one step of the event loop writes to a connection goes
  out in one ``send`` (:class:`~ldp.collector.coalesced_writes.CoalescingTransport`):
  a response's head and body, two writes in uvicorn, are one segment.
- **Signals.** SIGTERM and SIGINT stop gracefully (uvicorn: no new
  connections, requests in flight finish, the last group commit is made);
  :class:`CollectorServer` makes SIGHUP do the same instead of killing the
  process, and ``timeout_graceful_shutdown`` bounds the wait for requests.
- **Garbage collection.** Once started (the store open, its tasks and
  windows loaded), :class:`CollectorServer` freezes what the process holds
  (:func:`gc.freeze`: the cyclic collector no longer walks the modules, the
  app and the windows) and collects the youngest generation after
  :data:`GC_YOUNG_THRESHOLD` new container objects instead of 700: an upload
  of 100 reports makes several hundred (records, their tuples), and the
  collections that followed were a third of the event loop's CPU per report.
- **Logs.** :class:`RedactingFilter` masks the store URL's secrets in every
  record the process logs, tracebacks included (:func:`ldp.redact.redact_url`
  is for URLs; the filter also catches a password quoted alone, as a driver's
  error may do).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import socket
from collections.abc import Generator, Iterable
from types import FrameType
from typing import Any, cast

import orjson
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ldp.collector.app import READ_TIMED_OUT
from ldp.collector.coalesced_writes import CoalescingTransport
from ldp.redact import MASK, url_secrets  # url_secrets: read here by ldp serve and its tests

__all__ = [
    "DEFAULT_READ_TIMEOUT",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "GC_OLDER_THRESHOLD",
    "GC_YOUNG_THRESHOLD",
    "BoundedReadProtocol",
    "CollectorServer",
    "RedactingFilter",
    "bounded_read_protocol",
    "url_secrets",
]

#: Seconds a request has from its first byte to the end of its body (``ldp serve --read-timeout``).
DEFAULT_READ_TIMEOUT = 15.0
#: Seconds a graceful stop waits for requests in flight before cancelling them (``--shutdown-timeout``).
DEFAULT_SHUTDOWN_TIMEOUT = 10.0

_log = logging.getLogger("ldp.collector")


def _raw_problem(status: int, reason: str, title: str, detail: str) -> bytes:
    """A whole HTTP/1.1 reply carrying a problem document, closing the connection (for the protocol's own replies)."""
    body = orjson.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail})
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "content-type: application/problem+json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class BoundedReadProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on reading each request (headers and body).

    Its own replies (``408``, and ``400`` for bytes that are not HTTP) are
    problem documents, as the app's are.

    The deadline is armed when the connection opens and when a response
    completes (the next request may start), and disarmed when a request's
    body is complete; while the app works on a request, nothing is armed.
    """

    read_timeout: float = DEFAULT_READ_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        if self._read_deadline is None:
            self._read_deadline = self.loop.call_later(self.read_timeout, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # a response's head and body (two writes by uvicorn) go out in one send
        super().connection_made(cast(asyncio.Transport, CoalescingTransport(transport, self.loop)))
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()
        if self.cycle is not None and self.cycle.response_complete:
            self._arm()  # answered before its body ended (404, 413...): the next request's clock starts

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # (still armed when the body has not ended: the same clock runs on)

    def _count_refusal(self, status: int, reason: str) -> None:
        """Count a reply of the protocol's own in ``ldp_http_errors_total`` (the app never saw the request)."""
        service = getattr(getattr(getattr(self.config, "app", None), "state", None), "service", None)
        if service is not None:
            service.metrics.count_refusal(status, reason)

    def _read_timed_out(self) -> None:
        self._read_deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # the app is waiting for the body: it sees a disconnect, marked as this timeout (and counts it)
            self.cycle.scope[READ_TIMED_OUT] = True  # type: ignore[literal-required]
        else:  # headers that never ended: no request reached the app
            self._count_refusal(408, "read_timeout")
        if self.cycle is None or not self.cycle.response_started or self.cycle.response_complete:
            detail = f"the request did not arrive whole within {self.read_timeout:g} s"
            self.transport.write(_raw_problem(408, "Request Timeout", "Request timeout", detail))
        self.transport.close()  # (mid-reply, a 408 would corrupt the reply: only close)

    def send_400_response(self, msg: str) -> None:
        """A request that is not HTTP/1.1 gets a problem document too (uvicorn's own reply is plain text)."""
        self._count_refusal(400, "unreadable_http")
        self.transport.write(_raw_problem(400, "Bad Request", "Bad request", msg))
        self.transport.close()


def bounded_read_protocol(read_timeout: float) -> type[BoundedReadProtocol]:
    """:class:`BoundedReadProtocol` with its deadline set to ``read_timeout`` seconds."""
    if not read_timeout > 0:
        raise ValueError(f"read_timeout must be > 0, got {read_timeout}")
    return type("BoundedReadProtocol", (BoundedReadProtocol,), {"read_timeout": float(read_timeout)})


#: Container objects allocated between two collections of the youngest generation (Python's default: 700),
#: and how many of those collections between two of the next generation (default 10).
GC_YOUNG_THRESHOLD = 50_000
GC_OLDER_THRESHOLD = 20


class CollectorServer(uvicorn.Server):
    """uvicorn's server, with SIGHUP as a graceful stop (like SIGTERM) instead of an immediate exit.

    Once started it tunes the cyclic garbage collector for serving (see the module's docstring).
    """

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        gc.freeze()  # what start-up made lives as long as the server: never walked again
        gc.set_threshold(GC_YOUNG_THRESHOLD, GC_OLDER_THRESHOLD, GC_OLDER_THRESHOLD)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        previous = signal.signal(signal.SIGHUP, self._hang_up)
        try:
            with super().capture_signals():
                yield
        finally:
            signal.signal(signal.SIGHUP, previous)

    def _hang_up(self, sig: int, frame: FrameType | None) -> None:
        _log.warning("SIGHUP: stopping gracefully (restart ldp serve to serve again)")
        self.should_exit = True


class RedactingFilter(logging.Filter):
    """Masks the given secrets in each record's message and traceback (a handler filter: it sees every record)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        scrubbed = self.scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        return True
