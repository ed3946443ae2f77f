"""The collector benchmark's load generator (benchmarks/bench_collector.py) over a server that drops idle connections."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_collector", BENCHMARKS / "bench_collector.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_collector"] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["bench_collector"]


REPLY = b'{"accepted": 1, "replayed": 0, "rejected": []}'


async def _one_reply_per_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer one request, then close the connection (as ldp serve does to a keep-alive connection left idle)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    await reader.readexactly(length)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(REPLY), REPLY))
    await writer.drain()
    writer.close()


def test_open_loop_resends_on_a_new_connection_when_the_server_closed_an_idle_one(bench):
    async def run():
        server = await asyncio.start_server(_one_reply_per_connection, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        task = bench.new_task(bench.spec_of("grr"), window="1h", time_precision="1m", min_batch=1)[0]
        sender = bench.Sender("raw", port, task)
        requests = [sender.prepare(b"[]") for _ in range(6)]
        async with sender:
            load = await bench.open_loop(sender, requests, 1, rate=50.0)
        server.close()
        await server.wait_closed()
        return load

    load = asyncio.run(run())
    assert (load.requests, load.accepted, load.errors) == (6, 6, [])
    load.check(1)
