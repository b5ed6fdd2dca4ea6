"""The gateway's lean upstream HTTP client against raw loopback servers: body framings,
keep-alive reuse, a stale pooled connection, timeouts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest

from windowkeeper.gateway.client import Pool, ReadTimeout, TransportError

pytestmark = pytest.mark.anyio
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n")
         if line.lower().startswith(b"content-length:")), 0,
    )  # fmt: skip
    return head + await reader.readexactly(length)


class Served:
    """A raw server whose connections are all closed at the end (no socket left over)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.writers: list[asyncio.StreamWriter] = []

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await self.handler(reader, writer)

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        for writer in self.writers:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        await self.server.wait_closed()


async def test_framings_and_keep_alive() -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        request = await read_request(reader)
        assert request.startswith(b"POST /v1/a HTTP/1.1\r\nHost: 127.0.0.1:")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        await read_request(reader)
        chunked = b"3\r\nabc\r\n2;x=1\r\nde\r\n0\r\nT: 1\r\n\r\n"
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + chunked)  # fmt: skip
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close")
        await writer.drain()
        writer.close()

    async with Served(handler) as base:
        pool = Pool(base, timeout=5, connect_timeout=5)
        bodies = []
        for _ in range(3):
            response = await pool.request("POST", pool.path("/a"), [("x", "1")], b"{}")
            bodies.append(await response.read())
        await pool.aclose()
    assert bodies == [b"hello", b"abcde", b"until close"]
    assert connections == 1  # one connection reused for all three


async def test_a_stale_pooled_connection_is_retried_once() -> None:
    served = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        await read_request(reader)
        served += 1
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        if served == 1:
            writer.close()  # closes while the client keeps the connection in its pool

    async with Served(handler) as base:
        pool = Pool(base, timeout=5, connect_timeout=5)
        first = await (await pool.request("POST", "/v1/x", [], b"")).read()
        await asyncio.sleep(0.05)
        second = await (await pool.request("POST", "/v1/x", [], b"")).read()
        await pool.aclose()
    assert first == second == b"ok" and served == 2


async def test_timeouts_and_broken_bodies_are_transport_errors() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()  # never answers; returns when the client hangs up

    async def short(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        await writer.drain()
        writer.close()

    async with Served(silent) as base:
        pool = Pool(base, timeout=0.2, connect_timeout=1)
        with pytest.raises(ReadTimeout):
            await pool.request("POST", "/v1/x", [], b"")
        await pool.aclose()
    async with Served(short) as base:
        pool = Pool(base, timeout=2, connect_timeout=1)
        response = await pool.request("POST", "/v1/x", [], b"")
        with pytest.raises(TransportError, match="mid-body"):
            await response.read()
        await pool.aclose()
    refused = Pool("http://127.0.0.1:9/v1", timeout=1, connect_timeout=1)
    with pytest.raises(TransportError):
        await refused.request("POST", "/v1/x", [], b"")
    await refused.aclose()
