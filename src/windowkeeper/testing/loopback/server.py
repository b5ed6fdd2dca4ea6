"""The loopback upstream: a scripted model server on 127.0.0.1 speaking three protocols.

``POST /v1/chat/completions`` (OpenAI Chat Completions), ``POST /v1/responses`` (OpenAI
Responses), ``POST /v1/messages`` and ``/v1/messages/count_tokens`` (Anthropic Messages),
``GET /v1/models``; streamed when the request says ``"stream": true``. HTTP/1.1 with
keep-alive (streams are chunked), served by one asyncio loop in a background thread::

    with LoopbackUpstream(window=8_000) as upstream:
        upstream.script(Reply.turn("hi"), Reply.turn(None, call("read", path="a.py")))
        client = OpenAI(base_url=upstream.base_url, api_key="k")
        ...
        assert upstream.model_requests()[0].protocol == "chat"

What holds: every model request takes one scripted reply in order (an empty script
answers ``default``, else a 500, so nothing loops); a request over ``window`` (estimated
the way windowkeeper estimates) is refused with the provider's own overflow error
without taking a reply; ``count_tokens`` takes none; delays wake up when the server
stops; ``__exit__`` closes every connection and joins the thread.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ...adapters.anthropic import from_anthropic
from ...adapters.responses import from_responses
from ...core.errors import InvalidMessagesError
from ...core.tokens import estimate_request_tokens
from .replies import Protocol, Reply, body, error_body, overflow_body
from .streams import chat_events, messages_events, responses_events

ROUTES: dict[str, Protocol] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}
COUNT_TOKENS = "/v1/messages/count_tokens"


@dataclass(frozen=True)
class Recorded:
    """One request the upstream received."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    protocol: Protocol | None
    tokens: int | None = None
    rejected: bool = False


def request_tokens(protocol: Protocol, request: Mapping[str, Any]) -> int:
    """The windowkeeper estimate of a request body of ``protocol`` (its tools included)."""
    if protocol == "chat":
        messages = request.get("messages") or []
    elif protocol == "responses":
        messages = from_responses(request.get("input"), request.get("instructions"))
    else:
        messages = from_anthropic(request.get("system"), request.get("messages") or [])
    tools = request.get("tools")
    return estimate_request_tokens(messages, tools if isinstance(tools, list) else None)


class LoopbackUpstream:
    """See the module docstring. ``fast`` skips the token estimate (usage = bytes / 4)."""

    def __init__(
        self,
        *,
        models: Iterable[Mapping[str, Any]] | None = None,
        window: int | None = None,
        default: Reply | None = None,
        record: bool = True,
        fast: bool = False,
    ) -> None:
        self.models = list(models) if models is not None else None
        self.window = window
        self.default = default
        self.record = record
        self.fast = fast
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._serial = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._stopping: asyncio.Event | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._port = 0
        self.in_flight = 0
        self.max_in_flight = 0
        """Model requests being answered at once (a delayed reply counts while it waits)."""

    # --- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> LoopbackUpstream:
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self._thread.start()
        if not started.wait(10) or not self._port:
            raise RuntimeError("the loopback upstream did not start")
        return self

    def _run(self, started: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(started))
        finally:
            loop.close()

    async def _serve(self, started: threading.Event) -> None:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self._port = int(self._server.sockets[0].getsockname()[1])
        started.set()
        await self._stopping.wait()
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._thread = self._loop = None

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("LoopbackUpstream is not running; use it as a context manager")
        return self._port

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (with ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        """The Anthropic-style base URL (without ``/v1``, as the Anthropic SDK takes it)."""
        return f"http://127.0.0.1:{self.port}"

    # --- the script ----------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next model requests, in order."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def _next(self) -> tuple[Reply | None, int]:
        with self._lock:
            self._serial += 1
            reply = self._replies.popleft() if self._replies else self.default
            return reply, self._serial

    def _record(self, recorded: Recorded) -> None:
        if self.record:
            with self._lock:
                self.requests.append(recorded)

    def model_requests(self, protocol: Protocol | None = None) -> list[Recorded]:
        """The model requests received (count_tokens and listings excluded)."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.protocol is not None
                and not r.path.startswith(COUNT_TOKENS)
                and (protocol is None or r.protocol == protocol)
            ]

    # --- HTTP ----------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, version = [*lines[0].split(" "), "", ""][:3]
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length") or 0))
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        return await self._dispatch(writer, method, path, headers, raw) and keep

    async def _dispatch(
        self,
        writer: asyncio.StreamWriter,
        method: str,
        path: str,
        headers: dict[str, str],
        raw: bytes,
    ) -> bool:
        """Answer one request; False when the connection must close. ``target`` is the
        path with its query string (recorded as it came)."""
        target, path = path, path.split("?")[0]
        protocol = ROUTES.get(path) or ("messages" if path == COUNT_TOKENS else None)
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        if method == "GET" and path.rstrip("/").endswith("/models") and self.models is not None:
            self._record(Recorded(method, target, headers, raw, parsed, None))
            return await _send_json(writer, 200, {"object": "list", "data": self.models})
        if method != "POST" or protocol is None or not isinstance(parsed, dict):
            self._record(Recorded(method, target, headers, raw, parsed, protocol))
            answer = error_body(protocol or "chat", 404, f"no route {method} {path}")
            return await _send_json(writer, 404, answer)
        tokens = self._tokens(protocol, parsed, raw)
        over = self.window is not None and tokens > self.window
        self._record(Recorded(method, target, headers, raw, parsed, protocol, tokens, over))
        if path == COUNT_TOKENS:
            return await _send_json(writer, 200, {"input_tokens": tokens})
        if over and self.window is not None:
            return await _send_json(writer, 400, overflow_body(protocol, tokens, self.window))
        reply, serial = self._next()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(writer, protocol, parsed, reply, tokens, serial)
        finally:
            self.in_flight -= 1

    def _tokens(self, protocol: Protocol, parsed: dict[str, Any], raw: bytes) -> int:
        if self.fast:
            return len(raw) // 4
        try:
            return request_tokens(protocol, parsed)
        except (InvalidMessagesError, TypeError, AttributeError):
            return len(raw) // 4

    async def _answer(
        self,
        writer: asyncio.StreamWriter,
        protocol: Protocol,
        request: dict[str, Any],
        reply: Reply | None,
        tokens: int,
        serial: int,
    ) -> bool:
        if reply is None:
            answer = error_body(protocol, 500, "the test script has no reply left")
            return await _send_json(writer, 500, answer)
        if reply.kind == "delay":
            assert self._stopping is not None
            try:
                await asyncio.wait_for(self._stopping.wait(), reply.seconds)
                return False  # stopping
            except TimeoutError:
                return await self._answer(writer, protocol, request, reply.then, tokens, serial)
        if reply.kind == "close":
            return False
        if reply.kind == "dynamic" and reply.decide is not None:
            chosen = reply.decide(protocol, request)
            return await self._answer(writer, protocol, request, chosen, tokens, serial)
        if reply.kind == "error":
            answer = reply.body or error_body(protocol, reply.status, f"scripted {reply.status}")
            return await _send_json(writer, reply.status, answer)
        if reply.kind == "raw":
            data = reply.body if isinstance(reply.body, bytes) else str(reply.body).encode()
            return await _send(writer, reply.status, data, reply.content_type)
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else tokens
        model = str(request.get("model", "loopback-model"))
        if request.get("stream") is True:
            events = _events(protocol, reply, model, prompt, request, serial)
            return await _stream(writer, events, reply.cut_after)
        return await _send_json(writer, 200, body(protocol, reply, model, prompt, serial))


def _events(
    protocol: Protocol, reply: Reply, model: str, prompt: int, request: dict[str, Any], serial: int
) -> Iterator[bytes]:
    if protocol == "chat":
        options = request.get("stream_options")
        include = isinstance(options, dict) and options.get("include_usage") is True
        return chat_events(reply, model, prompt, include, serial)
    if protocol == "responses":
        return responses_events(reply, model, prompt, serial)
    return messages_events(reply, model, prompt, serial)


async def _send(writer: asyncio.StreamWriter, status: int, data: bytes, content_type: str) -> bool:
    writer.write(
        f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(data)}\r\nrequest-id: req_loopback\r\n\r\n".encode()
        + data
    )
    await writer.drain()
    return True


async def _send_json(writer: asyncio.StreamWriter, status: int, value: object) -> bool:
    return await _send(writer, status, json.dumps(value).encode(), "application/json")


async def _stream(writer: asyncio.StreamWriter, events: Iterator[bytes], cut: int | None) -> bool:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n"
    )
    for number, event in enumerate(events):
        if cut is not None and number >= cut:
            await writer.drain()
            return False  # the connection is dropped mid-stream
        writer.write(b"%x\r\n%s\r\n" % (len(event), event))
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True
