"""The gateway's HTTP/1.1 server protocol for uvicorn (``uvicorn.run(app, http=LeanHTTP)``).

Why not uvicorn's h11 protocol: the gateway moves bodies of hundreds of KiB, and h11 (pure
Python) cost about half of the gateway's CPU per request (docs/benchmarks.md). This protocol
does only what an HTTP/1.1 origin server must: heads parsed strictly (httphead.py),
``Content-Length`` and chunked request bodies, ``Expect: 100-continue``, keep-alive with
an idle timeout, pipelined requests answered in order, responses with ``Content-Length``
(head and body in one write), chunked or close-delimited, HEAD, 204 and 304 without a
body. No upgrades (a WebSocket request is answered as plain HTTP). uvicorn still owns the
sockets, TLS, the lifespan, signals and graceful shutdown; this class keeps uvicorn's
protocol contract (``server_state`` connections and tasks, ``shutdown()``, the default
``date``/``server`` headers, the access log, ``limit_concurrency``).

What must hold: one request is served at a time per connection, and its response is
complete before the next pipelined head is read; a connection whose request body was not
read to its end, or whose response broke its own framing, is closed after the response
(its remaining bytes cannot be trusted as the next request); at most ``HIGH_WATER`` bytes
are buffered per connection before reading pauses; an idle connection, or one whose head
does not complete, is closed after the keep-alive timeout, and so is one whose request body
stops arriving for that long while the app waits for it (answered 408 when no response
has started): without it a client that sends half a body holds its connection forever.
"""

from __future__ import annotations

import asyncio
import logging
from http import HTTPStatus
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.utils import get_local_addr, get_remote_addr, is_ssl
from uvicorn.server import ServerState

from .httpcycle import Cycle
from .httphead import BadRequest, ChunkedReader, Head, parse_head

__all__ = ["HIGH_WATER", "LeanHTTP"]

HIGH_WATER = 1024 * 1024  # buffered bytes per connection before reading pauses
_DEFAULT_MAX_HEAD = 64 * 1024
log = logging.getLogger("uvicorn.error")


class LeanHTTP(asyncio.Protocol):
    """See the module docstring."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        if not config.loaded:
            config.load()
        self.config = config
        self.app = config.loaded_app
        self.loop = _loop or asyncio.get_event_loop()
        self.state = server_state
        self.app_state = app_state
        self.max_head = config.h11_max_incomplete_event_size or _DEFAULT_MAX_HEAD
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.cycle: Cycle | None = None
        self.length = 0  # body bytes still to come (Content-Length framing)
        self.chunked: ChunkedReader | None = None
        self.paused = False
        self.writable = asyncio.Event()
        self.writable.set()
        self.timer: asyncio.TimerHandle | None = None  # the idle or the stalled-body timer
        self.last_read = 0.0  # loop time of the newest bytes from the client
        self.where: dict[str, Any] = {}

    # asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.state.connections.add(self)  # type: ignore[arg-type]  # uvicorn types its own
        scheme = "https" if is_ssl(transport) else "http"
        self.where = {"server": get_local_addr(transport), "client": get_remote_addr(transport),
                      "scheme": scheme}  # fmt: skip
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.state.connections.discard(self)
        self._disarm_idle()
        self.writable.set()  # release a sender waiting to drain
        if self.cycle is not None:
            self.cycle.disconnect()

    def data_received(self, data: bytes) -> None:
        self.last_read = self.loop.time()
        try:
            if not self.buffer:
                data = self._unbuffered(data)
            if data:
                self.buffer += data
                self._advance()
        except BadRequest as bad:
            self._refuse(bad)
        else:
            self._watch_body()

    def _unbuffered(self, data: bytes) -> bytes:
        """Serve the common cases without copying ``data`` through the buffer (a head that
        arrives whole, the next piece of a Content-Length body); what is left goes to the
        buffered path."""
        if self.cycle is None:
            end = data.find(b"\r\n\r\n", 0, self.max_head + 4)
            if end <= 0 or data[:2] == b"\r\n":
                return data
            self._begin(parse_head(data[:end]))
            data = data[end + 4 :]
        cycle = self.cycle
        if cycle is not None and self.chunked is None and 0 < len(data) <= self.length:
            self._length_piece(cycle, data)
            self._limit(cycle)
            return b""
        return data

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself; a running cycle sees a disconnect

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: close when idle, else after the current response."""
        if self.cycle is None or self.cycle.complete:
            self._close()
        else:
            self.cycle.keep_alive = False

    # reading ---------------------------------------------------------------------------
    def _advance(self) -> None:
        """Feed the current request's body, or read the next head when none is running."""
        while True:
            cycle = self.cycle
            if cycle is None:
                if not self._next_head():
                    return
                continue
            if not cycle.body_done:
                self._feed_body(cycle)
            self._limit(cycle)
            return

    def _next_head(self) -> bool:
        while self.buffer[:2] == b"\r\n":  # blank lines before a request are ignored
            del self.buffer[:2]
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > self.max_head:
                raise BadRequest(431, "request head too large")
            return False
        if end > self.max_head:
            raise BadRequest(431, "request head too large")
        head = parse_head(bytes(self.buffer[:end]))
        del self.buffer[: end + 4]
        self._begin(head)
        return True

    def _begin(self, head: Head) -> None:
        self._disarm_idle()
        self.length = head.length or 0
        self.chunked = ChunkedReader() if head.length is None else None
        scope = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": head.version, **self.where, "method": head.method,
            "root_path": self.config.root_path, "path": self.config.root_path + head.path,
            "raw_path": self.config.root_path.encode("ascii") + head.raw_path,
            "query_string": head.query, "headers": head.headers, "state": self.app_state.copy(),
        }  # fmt: skip
        assert self.transport is not None
        cycle = Cycle(scope, head, self.transport, self.writable, self)
        self.cycle = cycle
        if head.length == 0:
            cycle.add_body(b"", done=True)
        limit = self.config.limit_concurrency
        busy = limit is not None and (
            len(self.state.connections) >= limit or len(self.state.tasks) >= limit
        )
        task = self.loop.create_task(cycle.run(service_unavailable if busy else self.app))
        task.add_done_callback(self.state.tasks.discard)
        self.state.tasks.add(task)

    def _feed_body(self, cycle: Cycle) -> None:
        if self.chunked is None:
            take = min(self.length, len(self.buffer))
            if take:
                piece = bytes(self.buffer[:take])
                del self.buffer[:take]
                self._length_piece(cycle, piece)
            return
        pieces = self.chunked.feed(self.buffer)
        if pieces or self.chunked.done:
            cycle.add_body(b"".join(pieces), done=self.chunked.done)

    def _length_piece(self, cycle: Cycle, data: bytes) -> None:
        """The next ``data`` of a Content-Length body (at most what is still to come)."""
        self.length -= len(data)
        cycle.add_body(data, done=self.length == 0)

    def _limit(self, cycle: Cycle) -> None:
        """Pause reading while more than ``HIGH_WATER`` bytes wait for the app."""
        if len(self.buffer) + cycle.pending > HIGH_WATER:
            self._pause()

    def resume_reading(self) -> None:
        """A receiver wants more body (called by the cycle)."""
        if self.paused and self.transport is not None:
            self.paused = False
            self.last_read = self.loop.time()  # the client's silence counts from now
            self.transport.resume_reading()

    def _pause(self) -> None:
        if not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()

    # after a response ------------------------------------------------------------------
    def response_done(self, cycle: Cycle, reusable: bool) -> None:
        """The cycle's response is complete: keep the connection for the next request, or
        close it when the request body was not read to its end or the response says so."""
        self.state.total_requests += 1
        self.cycle = None
        if not (reusable and cycle.body_done) or self.transport is None:
            self._close()
            return
        self._arm_idle()
        self.resume_reading()
        try:
            self._advance()  # a pipelined request may be waiting in the buffer
        except BadRequest as bad:
            self._refuse(bad)
        else:
            self._watch_body()

    def _refuse(self, bad: BadRequest) -> None:
        """Answer a request that cannot be read (plain text), then close."""
        log.warning("invalid HTTP request: %s", bad.reason)
        self._answer_and_close(bad.status, bad.reason)

    def _answer_and_close(self, status: int, reason: str) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        body = f"{reason}\n".encode()
        phrase = HTTPStatus(status).phrase
        self.transport.write(
            f"HTTP/1.1 {status} {phrase}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
            + body
        )
        self._close()

    def _close(self) -> None:
        self._disarm_idle()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _arm_idle(self) -> None:
        self._disarm_idle()
        self.timer = self.loop.call_later(self.config.timeout_keep_alive, self._idle_timeout)

    def _disarm_idle(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _idle_timeout(self) -> None:
        self.timer = None
        if self.cycle is None:  # idle, or a head that never completed
            self._close()

    def _watch_body(self) -> None:
        """Start the stalled-body timer when a request's body has yet to arrive in full."""
        cycle = self.cycle
        if cycle is not None and not cycle.body_done and self.timer is None:
            self.timer = self.loop.call_later(self.config.timeout_keep_alive, self._body_check)

    def _body_check(self) -> None:
        """Close a connection whose request body stalled (see the module docstring); while
        reading is paused the app is the one behind, so the client's clock is stopped."""
        self.timer = None
        cycle, timeout = self.cycle, self.config.timeout_keep_alive
        if cycle is None or cycle.body_done or self.transport is None:
            return
        silent = self.loop.time() - self.last_read
        if self.paused or silent < timeout:
            wait = timeout if self.paused else timeout - silent
            self.timer = self.loop.call_later(wait, self._body_check)
            return
        log.warning("request body stalled for %s s: closing the connection", timeout)
        cycle.disconnect()  # the app hears the client is gone; what it sends is dropped
        if cycle.started:
            self._close()
        else:
            reason = f"the request body stopped arriving for {timeout} s; send it without pauses"
            self._answer_and_close(408, reason)
