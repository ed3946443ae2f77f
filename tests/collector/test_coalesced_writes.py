"""CoalescingTransport: the writes of one event-loop step reach the socket's transport as one, in order."""

from __future__ import annotations

import asyncio
from typing import Any

from ldp.collector.coalesced_writes import FLUSH_BYTES, CoalescingTransport


class RecordingTransport:
    """What reached the underlying transport, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.calls.append(("write", data))

    def close(self) -> None:
        self.calls.append(("close", None))

    def abort(self) -> None:
        self.calls.append(("abort", None))

    def write_eof(self) -> None:
        self.calls.append(("write_eof", None))

    def get_write_buffer_size(self) -> int:
        return 7

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def _run(steps: Any) -> list[tuple[str, Any]]:
    async def go() -> list[tuple[str, Any]]:
        inner = RecordingTransport()
        await steps(CoalescingTransport(inner, asyncio.get_running_loop()), inner)  # type: ignore[arg-type]
        await asyncio.sleep(0)
        return inner.calls

    return asyncio.run(go())


def test_the_writes_of_one_step_are_one_write_at_the_next_step():
    async def steps(transport: CoalescingTransport, inner: RecordingTransport) -> None:
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(b"")
        transport.write(memoryview(b"body"))
        assert inner.calls == [] and transport.get_write_buffer_size() == 19 + 4 + 7
        await asyncio.sleep(0)
        assert inner.calls == [("write", b"HTTP/1.1 200 OK\r\n\r\nbody")]
        transport.writelines([b"next", b" reply"])

    assert _run(steps) == [("write", b"HTTP/1.1 200 OK\r\n\r\nbody"), ("write", b"next reply")]


def test_close_and_write_eof_send_what_is_held_first_abort_drops_it():
    async def close(transport: CoalescingTransport, inner: RecordingTransport) -> None:
        transport.write(b"a")
        transport.close()

    async def eof(transport: CoalescingTransport, inner: RecordingTransport) -> None:
        transport.write(b"b")
        transport.write_eof()

    async def abort(transport: CoalescingTransport, inner: RecordingTransport) -> None:
        transport.write(b"c")
        transport.abort()

    assert _run(close) == [("write", b"a"), ("close", None)]
    assert _run(eof) == [("write", b"b"), ("write_eof", None)]
    assert _run(abort) == [("abort", None)]


def test_a_long_write_is_not_held_and_other_calls_go_through():
    async def steps(transport: CoalescingTransport, inner: RecordingTransport) -> None:
        transport.write(b"x")
        transport.write(b"y" * FLUSH_BYTES)
        assert inner.calls == [("write", b"x" + b"y" * FLUSH_BYTES)]
        assert transport.get_extra_info("peername") == "info peername"

    assert _run(steps) == [("write", b"x" + b"y" * FLUSH_BYTES)]
