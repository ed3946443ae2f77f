"""A transport that sends what one event-loop step writes in one ``send`` (docs/performance.md#collector-columns).

uvicorn writes a response's status line and headers when the app sends
``http.response.start``, and its body with ``http.response.body``: two
writes, each a ``send`` system call on an idle socket, and on a socket with
``TCP_NODELAY`` (asyncio's default) two segments the client reads apart.
:class:`CoalescingTransport` keeps the writes made before the event loop's
next step and hands them to the socket's transport as one, at that step
(``loop.call_soon``), before a ``close`` or ``write_eof``, or at once when
they reach :data:`FLUSH_BYTES` (a long response is not held in memory). The
bytes and their order are unchanged; every other call goes to the
underlying transport.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["FLUSH_BYTES", "CoalescingTransport"]

#: Bytes held at most before they are written at once, without waiting for the loop's next step.
FLUSH_BYTES = 65_536


class CoalescingTransport:
    """``transport`` with the writes of one event-loop step joined into one.

    Parameters
    ----------
    transport : asyncio.Transport
        The connection's transport (every call but the writes and closes goes to it unchanged).
    loop : asyncio.AbstractEventLoop
        The loop whose next step sends what was written.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._flush_scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hold ``data`` until the loop's next step (or until :data:`FLUSH_BYTES` are held)."""
        if not data:
            return
        self._held.append(bytes(data))
        self._held_bytes += len(data)
        if self._held_bytes >= FLUSH_BYTES:
            self.flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._scheduled_flush)

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        """Write what is held now, as one write."""
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        self._transport.write(data)

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        self.flush()

    def get_write_buffer_size(self) -> int:
        return self._held_bytes + self._transport.get_write_buffer_size()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held.clear()
        self._held_bytes = 0
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
