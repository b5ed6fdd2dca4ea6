"""The gateway's request flow: session, prefix substitution, the manager's turn, upstream.

One chat request runs the :meth:`ContextManager.turn` state machine of its session: the
machine yields the (possibly compacted) messages to send, the gateway forwards them, and
feeds back :class:`~windowkeeper.loop.steps.Answered` (usage) or
:class:`~windowkeeper.loop.steps.Failed` (an upstream error status; the machine classifies it,
compresses with force and yields a retry, at most ``max_attempts`` times). No trigger
logic lives here.

What must hold: a session's lock is held from substitution to settling, also across a
streamed response (released by the response's close hook whatever happens); CPU work on
long histories (digests, compaction) runs in a worker thread, never on the event loop;
errors reach the client in OpenAI's error shape; no message text is ever logged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread
import httpx
from starlette.responses import JSONResponse, Response

from ..core.errors import (
    CompressionExhaustedError,
    InvalidMessagesError,
    StoreError,
    UpstreamError,
)
from ..core.messages import Message, ToolSchema, validate_messages
from ..loop.steps import Failed, Turn, answer
from ..store import SessionStore
from ..summary.feasibility import resolve_context_length, window_from_listing
from .persist import SessionPersistence
from .sessions import SESSION_HEADER, GatewaySession, Prepared, SessionTable, session_key
from .settings import GatewaySettings
from .streaming import ClosingStreamingResponse, UsageTap, sse_error
from .upstream import (
    Upstream,
    UpstreamHTTPError,
    UpstreamUnreachable,
    error_body,
    forward_response_headers,
)

log = logging.getLogger("windowkeeper.gateway")
T = TypeVar("T")

THREAD_MIN_MESSAGES = 64
"""Histories at least this long are digested and compacted in a worker thread."""

TurnError = UpstreamError | CompressionExhaustedError


@dataclass(frozen=True)
class ChatRequest:
    body: dict[str, Any]
    messages: list[Message]
    model: str
    stream: bool
    tools: list[ToolSchema] | None
    wants_usage: bool


def parse_chat(raw: bytes) -> ChatRequest:
    """The chat request in ``raw``; :class:`InvalidMessagesError` when it is unusable."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise InvalidMessagesError(
            "request body", "not valid JSON (or nested too deeply)"
        ) from None
    if not isinstance(body, dict):
        raise InvalidMessagesError("request body", "expected a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidMessagesError("request body", "'model' must be a non-empty string")
    messages = validate_messages(body.get("messages"), label="messages")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise InvalidMessagesError("tools", "expected an array of tool objects")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise InvalidMessagesError("stream_options", "expected an object")
    wants_usage = isinstance(options, dict) and options.get("include_usage") is True
    return ChatRequest(
        body, messages, model, body.get("stream") is True,
        tools if isinstance(tools, list) else None, wants_usage,
    )  # fmt: skip


def upstream_body(chat: ChatRequest, messages: list[Message]) -> dict[str, Any]:
    """The client's body with the (possibly compacted) messages; a stream asks for usage."""
    body = {**chat.body, "messages": messages}
    if chat.stream:
        body["stream_options"] = {**(chat.body.get("stream_options") or {}), "include_usage": True}
    return body


def error_response(exc: TurnError, headers: Mapping[str, str]) -> Response:
    """The client's view of a failed turn (upstream errors pass through unchanged)."""
    if isinstance(exc, UpstreamHTTPError):
        return Response(exc.content, exc.status_code, headers={**exc.headers, **headers})
    if isinstance(exc, UpstreamUnreachable):
        return JSONResponse(exc.body(), exc.status_code, headers=dict(headers))
    cause = exc.__cause__
    status = cause.status_code if isinstance(cause, UpstreamHTTPError) else 400
    exhausted = isinstance(exc, CompressionExhaustedError)
    code = "context_length_exceeded" if exhausted else None
    extra = {"X-Windowkeeper-Error": "compression_exhausted"} if exhausted else {}
    body = error_body(f"windowkeeper gateway: {exc}", "invalid_request_error", code)
    return JSONResponse(body, status, headers={**headers, **extra})


def client_error(message: str, code: str | None = None, status: int = 400) -> JSONResponse:
    return JSONResponse(error_body(message, "invalid_request_error", code), status)


class Exchange:
    """One request's turn on one session; the caller holds the session's lock."""

    def __init__(
        self, session: GatewaySession, chat: ChatRequest, saver: Saver, *, stored: bool
    ) -> None:
        self.session = session
        self.chat = chat
        self._saver = saver
        # Store writes may wait on a lock (another process, a slow database): they must
        # never run on the event loop, where they would stall every other session.
        self._heavy = stored or len(chat.messages) >= THREAD_MIN_MESSAGES
        self.prepared: Prepared | None = None
        self._steps: Turn | None = None
        self.sent: list[Message] = []
        self._settled = False

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._heavy:
            return await anyio.to_thread.run_sync(fn, *args)
        return fn(*args)

    async def start(self) -> list[Message]:
        """Substitute the prefix and run the preflight: the first messages to send."""
        self.prepared = await self._run(self.session.prepare, self.chat.messages, self.chat.tools)
        self._steps = self.session.manager.turn(self.prepared.working)
        self.sent = await self._run(next, self._steps)
        return self.sent

    async def failed(self, error: UpstreamHTTPError) -> list[Message]:
        """Recovery: the messages to retry with, or the error to give the client."""
        assert self._steps is not None
        self.sent = await self._run(self._steps.send, Failed(error))
        return self.sent

    async def answered(self, response: object) -> None:
        """Feed the response (its usage) to the turn, settle the prefix, persist."""
        if not self._settled and self._steps is not None:
            self._settled = True
            await self._run(self._settle, response)

    def _settle(self, response: object) -> None:
        assert self._steps is not None and self.prepared is not None
        final = answer(self._steps, response)
        compacted = self.session.settle(self.prepared, final)
        self._saver(self.session, self.prepared, compacted)

    def abandon(self) -> None:
        if self._steps is not None:
            self._steps.close()

    def headers(self) -> dict[str, str]:
        changed = bool(self.sent) and self.sent is not self.chat.messages
        estimate = self.session.manager.estimate(self.sent) if self.sent else 0
        return {
            "X-Windowkeeper-Session": self.session.key,
            "X-Windowkeeper-Compacted": "true" if changed else "false",
            "X-Windowkeeper-Prompt-Tokens-Estimate": str(estimate),
        }


Saver = Callable[[GatewaySession, Prepared, bool], None]


class Gateway:
    """The transparent gateway (SPEC §9); routes call :meth:`chat`, :meth:`models`, …"""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        upstream_transport: httpx.AsyncBaseTransport | None = None,
        store: SessionStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.upstream = Upstream(settings, upstream_transport)
        self.sessions = SessionTable(settings.max_sessions)
        self.persistence = SessionPersistence(store) if store is not None else None
        self.clock = clock
        self._windows: dict[str, int] = {}

    async def aclose(self) -> None:
        await self.upstream.aclose()

    def _save(self, session: GatewaySession, prepared: Prepared, compacted: bool) -> None:
        if self.persistence is not None:
            self.persistence.save(session, prepared, compacted)

    # --- chat ------------------------------------------------------------------------------

    async def chat(self, raw: bytes, headers: Mapping[str, str]) -> Response:
        try:
            chat = parse_chat(raw)
        except InvalidMessagesError as exc:
            return client_error(f"windowkeeper gateway: {exc}")
        window = await self.window_of(chat.model, headers)
        if window is None:
            return client_error(unknown_window(chat.model), "context_length_unknown")
        key = session_key(chat.messages, headers.get(SESSION_HEADER))
        session = self.sessions.get(key) or self.sessions.add(
            GatewaySession(key, self.settings, window, chat.model, self.clock)
        )
        await session.lock.acquire()
        handed_over = False
        try:
            await self._load(session)
            session.use_model(chat.model, window)
            exchange = Exchange(session, chat, self._save, stored=self.persistence is not None)
            if not chat.stream:
                return await self._complete(exchange, headers)
            response = await self._stream(exchange, headers)
            handed_over = isinstance(response, ClosingStreamingResponse)
            return response
        finally:
            if not handed_over:
                session.lock.release()

    async def _load(self, session: GatewaySession) -> None:
        if self.persistence is not None and not session.loaded:
            await anyio.to_thread.run_sync(self.persistence.restore, session)
        session.loaded = True

    async def _complete(self, exchange: Exchange, headers: Mapping[str, str]) -> Response:
        try:
            request = await exchange.start()
            while True:
                body = upstream_body(exchange.chat, request)
                try:
                    reply = await self.upstream.chat(body, headers)
                    break
                except UpstreamHTTPError as exc:
                    request = await exchange.failed(exc)
        except (UpstreamError, CompressionExhaustedError) as exc:
            exchange.abandon()
            return error_response(exc, exchange.headers())
        await exchange.answered(reply.json())
        merged = {**reply.headers, **exchange.headers()}
        return Response(reply.content, reply.status_code, headers=merged)

    async def _stream(self, exchange: Exchange, headers: Mapping[str, str]) -> Response:
        try:
            request = await exchange.start()
            while True:
                body = upstream_body(exchange.chat, request)
                try:
                    opened = await self.upstream.open_stream(body, headers)
                    break
                except UpstreamHTTPError as exc:  # before the first byte: recover, retry
                    request = await exchange.failed(exc)
        except (UpstreamError, CompressionExhaustedError) as exc:
            exchange.abandon()
            return error_response(exc, exchange.headers())
        tap = UsageTap(exchange.chat.wants_usage)
        events = self._relay(opened, tap)
        lock = exchange.session.lock

        async def on_close() -> None:
            try:
                await events.aclose()
                await opened.aclose()
                await exchange.answered({"usage": tap.usage or {}})
            finally:
                lock.release()

        merged = {**forward_response_headers(opened.headers), **exchange.headers()}
        return ClosingStreamingResponse(
            events, on_close=on_close, status_code=opened.status_code, headers=merged
        )

    async def _relay(self, opened: httpx.Response, tap: UsageTap) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in self.upstream.iter_stream(opened):
                out = tap.feed(chunk)
                if out:
                    yield out
            rest = tap.flush()
            if rest:
                yield rest
        except UpstreamUnreachable as exc:
            yield sse_error(str(exc))

    # --- models, windows, status --------------------------------------------------------

    async def models(self, headers: Mapping[str, str]) -> Response:
        try:
            reply = await self.upstream.models(headers)
        except (UpstreamHTTPError, UpstreamUnreachable) as exc:
            return error_response(exc, {})
        return Response(reply.content, reply.status_code, headers=reply.headers)

    async def window_of(self, model: str, headers: Mapping[str, str]) -> int | None:
        """Configured → the upstream's ``/models`` → installed metadata → None."""
        configured = self.settings.configured_context_length(model)
        if configured is not None:
            return configured
        known = self._windows.get(model)
        if known is not None:
            return known
        found: int | None = None
        if self.settings.models_lookup:
            try:
                reply = await self.upstream.models(headers)
            except UpstreamError as exc:
                log.info("no window for %s from the upstream's /models: %s", model, exc)
            else:
                found = window_from_listing(model, reply.json())
        if found is None:
            found = await anyio.to_thread.run_sync(resolve_context_length, model)
        if found is not None:
            self._windows[model] = found
        return found

    async def status(self, key: str) -> dict[str, Any] | None:
        """A session's counts and thresholds (never message text); None when unknown."""
        session = self.sessions.get(key)
        if session is not None:
            return {**session.status(), "loaded": True}
        if self.persistence is None:
            return None
        return await anyio.to_thread.run_sync(self._stored_status, key)

    def _stored_status(self, key: str) -> dict[str, Any] | None:
        assert self.persistence is not None
        try:
            store_id = self.persistence.find(key)
            record = self.persistence.store.get_session(store_id) if store_id else None
        except StoreError as exc:
            log.warning("session %s: could not read the store: %s", key, exc)
            return None
        if record is None:
            return None
        return {
            "session": key,
            "loaded": False,
            "store_session_id": record.id,
            "compactions": record.compactions,
            "active_messages": record.active_messages,
        }


def unknown_window(model: str) -> str:
    return (
        f"windowkeeper gateway: the context window of model {model!r} is unknown (not "
        "configured, not stated by the upstream's /models listing). Configure it: "
        f"`windowkeeper serve --context-length N` for every model, `--model-context "
        f"{model}=N` for this one, or model.context_length in the config file."
    )
