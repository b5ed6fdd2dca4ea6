"""One request/response exchange of the gateway's HTTP/1.1 server: the ASGI ``receive`` and
``send`` of a request (httpserver.py reads the bytes, this writes the answer).

What must hold: the response is framed exactly once — by the app's ``Content-Length`` (a
body of another size closes the connection afterwards), else chunked (HTTP/1.1) or ended
by closing (HTTP/1.0), never a body for HEAD, 1xx, 204 or 304; the head is written with
the first body bytes, so a whole response costs one socket write; header names and values
from the app are checked (no CR, LF or NUL reaches the wire); after the response,
``receive`` answers ``http.disconnect``.
"""

from __future__ import annotations

import asyncio
import logging
from http import HTTPStatus
from typing import Any, Protocol

from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string
from uvicorn.server import ServerState

from .httphead import Head

__all__ = ["Connection", "Cycle"]

log = logging.getLogger("uvicorn.error")
access = logging.getLogger("uvicorn.access")
_PHRASES = {s.value: s.phrase.encode() for s in HTTPStatus}
_NO_BODY = {204, 304}
_FORBIDDEN = (b"\r", b"\n", b"\0")


class Connection(Protocol):
    """What a cycle needs of its connection (httpserver.LeanHTTP)."""

    state: ServerState

    def resume_reading(self) -> None: ...

    def response_done(self, cycle: Cycle, reusable: bool) -> None: ...


class Cycle:
    """See the module docstring."""

    def __init__(self, scope: dict[str, Any], head: Head, transport: asyncio.Transport,
                 writable: asyncio.Event, server: Connection) -> None:  # fmt: skip
        self.scope = scope
        self.head = head
        self.transport = transport
        self.writable = writable
        self.server = server
        self.keep_alive = head.keep_alive
        self.expects_continue = head.expects_continue
        self.body: list[bytes] = []
        self.pending = 0  # body bytes buffered for the app
        self.body_done = False
        self.body_given = False  # the app has received the last body message
        self.event = asyncio.Event()
        self.disconnected = False
        self.started = False
        self.complete = False
        self.bodiless = False  # HEAD, 1xx, 204, 304: no body bytes are sent
        self.pending_head = b""
        self.declared: int | None = None  # the app's Content-Length
        self.chunked = False
        self.sent = 0

    # fed by the server ------------------------------------------------------------------
    def add_body(self, data: bytes, done: bool) -> None:
        if data:
            self.body.append(data)
            self.pending += len(data)
        self.body_done = done
        self.event.set()

    def disconnect(self) -> None:
        self.disconnected = True
        self.event.set()

    # ASGI ---------------------------------------------------------------------------------
    async def run(self, app: Any) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        # The boundary between the app and the wire: a failure is logged with its traceback
        # and becomes a 500 (or a closed connection once the response has started).
        except Exception:
            log.exception("Exception in ASGI application")
            await self._fail()
            return
        if not self.started and not self.disconnected:
            log.error("ASGI callable returned without starting response.")
            await self._fail()
        elif not self.complete and not self.disconnected:
            log.error("ASGI callable returned without completing response.")
            self.transport.close()

    async def _fail(self) -> None:
        if self.started:
            self.transport.close()
            return
        self.keep_alive = False
        headers = [(b"content-type", b"text/plain; charset=utf-8")]
        await self.send({"type": "http.response.start", "status": 500, "headers": headers})
        await self.send({"type": "http.response.body", "body": b"Internal Server Error"})

    async def receive(self) -> dict[str, Any]:
        if self.expects_continue and not self.transport.is_closing():
            self.expects_continue = False
            if not self.body_done:
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        while not (self.disconnected or self.complete):
            if self.body or (self.body_done and not self.body_given):
                break
            self.server.resume_reading()
            self.event.clear()
            await self.event.wait()
        if self.disconnected or self.complete:
            return {"type": "http.disconnect"}
        data = self.body[0] if len(self.body) == 1 else b"".join(self.body)
        self.body.clear()
        self.pending = 0
        self.body_given = self.body_done
        self.server.resume_reading()
        return {"type": "http.request", "body": data, "more_body": not self.body_done}

    async def send(self, message: dict[str, Any]) -> None:
        if not self.writable.is_set() and not self.disconnected:
            await self.writable.wait()
        if self.disconnected:
            return
        kind = message["type"]
        if not self.started:
            if kind != "http.response.start":
                raise RuntimeError(f"expected 'http.response.start', got {kind!r}")
            self._start(message["status"], message.get("headers", ()))
        elif self.complete:
            raise RuntimeError(f"unexpected {kind!r} after the response completed")
        elif kind != "http.response.body":
            raise RuntimeError(f"expected 'http.response.body', got {kind!r}")
        else:
            self._body(message.get("body", b""), message.get("more_body", False))

    # writing ------------------------------------------------------------------------------
    def _start(self, status: int, app_headers: Any) -> None:
        self.pending_head = self._head(status, app_headers)  # raises before anything is sent
        self.started = True
        self.expects_continue = False
        if access.hasHandlers():
            access.info('%s - "%s %s HTTP/%s" %d', get_client_addr(self.scope),  # type: ignore[arg-type]
                        self.scope["method"], get_path_with_query_string(self.scope),  # type: ignore[arg-type]
                        self.scope["http_version"], status)  # fmt: skip

    def _head(self, status: int, app_headers: Any) -> bytes:
        """The status line and headers; decides the framing and whether to keep alive."""
        lines = [b"HTTP/1.1 %d %s\r\n" % (status, _PHRASES.get(status, b""))]
        for name, value in [*self.server.state.default_headers, *app_headers]:
            name = name.lower()
            if any(c in name or c in value for c in _FORBIDDEN) or b":" in name:
                raise RuntimeError(f"invalid response header {name!r}")
            if name == b"content-length":
                self.declared = int(value)
            elif name == b"transfer-encoding":
                continue  # the framing is decided here
            elif name == b"connection" and value.lower() == b"close":
                self.keep_alive = False
                continue  # written once below
            lines.append(b"%s: %s\r\n" % (name, value))
        self.bodiless = self.head.method == "HEAD" or status < 200 or status in _NO_BODY
        if self.declared is None and not self.bodiless:
            if self.head.version == "1.1":
                self.chunked = True
                lines.append(b"transfer-encoding: chunked\r\n")
            else:
                self.keep_alive = False  # HTTP/1.0: the body ends when the connection does
        if not self.keep_alive:
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    def _body(self, data: bytes, more: bool) -> None:
        if self.bodiless:
            data = b""
        self.sent += len(data)
        if self.declared is not None and self.sent > self.declared:
            raise RuntimeError(f"response body over its Content-Length of {self.declared}")
        if self.chunked and data:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        if not more and self.chunked:
            data += b"0\r\n\r\n"
        out = self.pending_head + data if self.pending_head else data
        self.pending_head = b""
        if out:
            self.transport.write(out)
        if not more:
            self._finish()

    def _finish(self) -> None:
        self.complete = True
        self.event.set()
        framed = self.bodiless or self.declared is None or self.sent == self.declared
        if not framed:
            log.error("response body of %d bytes, Content-Length %s", self.sent, self.declared)
        self.server.response_done(self, self.keep_alive and framed)
