"""The gateway's ASGI application: a lean path for model requests, FastAPI for the rest.

Model requests (``POST /v1/chat/completions``, ``/v1/responses``, ``/v1/messages``,
``/v1/messages/count_tokens``) and ``GET /v1/models`` are served here without a
framework in between (the per-request cost is measured in docs/benchmarks.md): the
caller is authenticated, the body read up to the limit, the gateway answers. The admin
endpoints (``/healthz``, ``/metrics``, ``/v1/windowkeeper/sessions/{id}`` and its
``POST …/undo``) go to the FastAPI app, with the authenticated caller in the request
state. Anything else is a 404 in the shape of the protocol the client speaks.

WebSocket upgrades (Codex tries Responses over WebSocket first) are refused with
``426 Upgrade Required``: the status Codex falls back from to HTTP at once, for the rest
of the session, where any other refusal costs it retries with backoff (~6 s a run).

A request body that stops arriving for ``body_timeout`` seconds while the gateway waits
for it is answered ``408`` in the protocol's error shape and the connection closed
(uvicorn times out idle keep-alive connections only). The clock runs only while the
gateway waits in ``receive()``: while it is busy elsewhere uvicorn stops reading past its
buffer, so the client cannot send and its silence then is not held against it.

What must hold: no traceback and no credential ever reaches a client; a body over the
limit is refused before it is buffered whole; a stream's close hook runs exactly once,
also when the client hangs up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

import anyio
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from .auth import Caller, authenticate
from .protocols import CHAT, MESSAGES, RESPONSES, Protocol
from .replies import Answer, StreamAnswer, error_answer
from .service import Gateway

log = logging.getLogger("windowkeeper.gateway")

_MODEL_ROUTES: dict[str, Protocol] = {
    "/v1/chat/completions": CHAT,
    "/v1/responses": RESPONSES,
    "/v1/messages": MESSAGES,
}
_COUNT_TOKENS = "/v1/messages/count_tokens"
_ADMIN = ("/healthz", "/metrics")
_SESSIONS = "/v1/windowkeeper/sessions/"


class TooLarge(Exception):
    """The request body is over the limit."""


class ClientGone(Exception):
    """The client disconnected before its body arrived."""


class BodyStalled(Exception):
    """The request body stopped arriving for the body timeout."""


def _is_undo(path: str, method: str) -> bool:
    return method == "POST" and path.endswith("/undo")


def protocol_for(path: str, headers: Mapping[str, str]) -> Protocol:
    """The protocol whose error shape a client expects (for unknown paths too)."""
    if path in _MODEL_ROUTES:
        return _MODEL_ROUTES[path]
    anthropic = "anthropic-version" in headers or (
        "x-api-key" in headers and "authorization" not in headers
    )
    return MESSAGES if path.startswith("/v1/messages") or anthropic else CHAT


def header_map(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())}


class GatewayApp:
    """See the module docstring."""

    def __init__(self, gateway: Gateway, admin: FastAPI) -> None:
        self.gateway = gateway
        self.admin = admin

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Startup and shutdown without a server (tests, embedding)."""
        return cast(
            "AbstractAsyncContextManager[None]", self.admin.router.lifespan_context(self.admin)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await _refuse_websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.admin(scope, receive, send)  # lifespan (closes the gateway)
            return
        path, method = scope["path"], scope["method"]
        headers = header_map(scope)
        protocol = protocol_for(path, headers)
        if headers.get("upgrade", "").lower() == "websocket":  # a server that does not
            await _send_answer(send, receive, _upgrade_refused(protocol))  # upgrade itself
            return
        if path in _ADMIN:
            await self.admin(scope, receive, send)
            return
        caller = authenticate(headers, self.gateway.settings.api_keys)
        if caller is None:
            await _send_answer(send, receive, _no_key(protocol))
            return
        if path.startswith(_SESSIONS) and (method == "GET" or _is_undo(path, method)):
            await self.admin({**scope, "state": {"caller": caller}}, receive, send)
            return
        try:
            answer = await self._route(scope, receive, protocol, headers, caller)
        except TooLarge:
            limit = self.gateway.settings.max_body_bytes
            answer = error_answer(protocol, 413, f"windowkeeper gateway: the request body is "
                                  f"over the {limit:,}-byte limit")  # fmt: skip
        except ClientGone:
            return
        except BodyStalled:
            answer = _stalled(protocol, self.gateway.settings.body_timeout)
        except RecursionError:
            answer = error_answer(protocol, 400, "windowkeeper gateway: JSON nested too deeply")
        # The boundary to the client: a bug must become a 500 in the protocol's shape with
        # its traceback in the log, never a traceback in the response.
        except Exception:
            log.exception("internal error answering %s %s", method, path)
            self.gateway.metrics.error("internal")
            answer = error_answer(protocol, 500, "windowkeeper gateway: internal error (see "
                                  "the gateway's log)")  # fmt: skip
        await _send_answer(send, receive, answer)

    async def _route(
        self,
        scope: Scope,
        receive: Receive,
        protocol: Protocol,
        headers: Mapping[str, str],
        caller: Caller,
    ) -> Answer | StreamAnswer:
        path, method = scope["path"], scope["method"]
        known = path in _MODEL_ROUTES or path == _COUNT_TOKENS
        if method == "GET" and path == "/v1/models":
            target = MESSAGES if protocol is MESSAGES else CHAT
            if not self.gateway.upstream.serves(target.target):
                target = MESSAGES if target is CHAT else CHAT
            return await self.gateway.models(target, headers, caller)
        if not known:
            return error_answer(protocol, 404, f"windowkeeper gateway: no route {method} {path}")
        if method != "POST":
            return error_answer(protocol, 405, f"windowkeeper gateway: {path} takes POST")
        settings = self.gateway.settings
        raw = await _read_body(receive, headers, settings.max_body_bytes, settings.body_timeout)
        query = scope.get("query_string", b"").decode("latin-1")
        if path == _COUNT_TOKENS:
            return await self.gateway.count_tokens(MESSAGES, raw, headers, caller, query)
        return await self.gateway.handle(protocol, raw, headers, caller, query)


def _no_key(protocol: Protocol) -> Answer:
    """401 with ``x-should-retry: false``: a wrong key does not fix itself, and without the
    header Claude Code retries a 401 with backoff for about three minutes before it says
    so (its bundled gateway protocol, Errors table); the Anthropic and OpenAI SDKs also
    read the header, and retry no 401 anyway."""
    message = ("windowkeeper gateway: missing or wrong gateway key; send it as "
               "Authorization: Bearer, x-api-key or X-Windowkeeper-Key")  # fmt: skip
    return error_answer(protocol, 401, message, headers=[("x-should-retry", "false")])


_NO_WEBSOCKET = ("windowkeeper gateway: WebSocket is not served; send the request over "
                 "HTTP (POST with SSE streaming)")  # fmt: skip


def _upgrade_refused(protocol: Protocol) -> Answer:
    return error_answer(protocol, 426, _NO_WEBSOCKET, headers=[("connection", "close")])


async def _refuse_websocket(scope: Scope, receive: Receive, send: Send) -> None:
    """Refuse an upgrade before accepting it: a 426 in the protocol's error shape where the
    server can send a denial response (ASGI ``websocket.http.response``), else a close,
    which the server answers with a 403."""
    if (await receive())["type"] != "websocket.connect":
        return
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    answer = _upgrade_refused(protocol_for(scope["path"], header_map(scope)))
    await send({"type": "websocket.http.response.start", "status": answer.status,
                "headers": _encode(answer.headers, len(answer.body))})  # fmt: skip
    await send({"type": "websocket.http.response.body", "body": answer.body})


def _stalled(protocol: Protocol, timeout: float) -> Answer:
    message = (f"windowkeeper gateway: the request body stopped arriving (nothing for "
               f"{timeout:g} s); send the whole body without pausing, or raise "
               "gateway.body_timeout_seconds")  # fmt: skip
    return error_answer(protocol, 408, message, "request_timeout", [("connection", "close")])


async def _read_body(
    receive: Receive, headers: Mapping[str, str], limit: int, timeout: float
) -> bytes:
    """The whole body; :class:`BodyStalled` when one ``receive()`` waits ``timeout`` s."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge
    chunks: list[bytes] = []
    size = 0
    while True:
        with anyio.move_on_after(timeout) as waited:
            message = await receive()
        if waited.cancelled_caught:
            raise BodyStalled
        if message["type"] == "http.disconnect":
            raise ClientGone
        body = message.get("body", b"")
        size += len(body)
        if size > limit:
            raise TooLarge
        chunks.append(body)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _encode(headers: list[tuple[str, str]], length: int | None) -> list[tuple[bytes, bytes]]:
    out = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if length is not None:
        out.append((b"content-length", str(length).encode()))
    return out


async def _send_answer(send: Send, receive: Receive, answer: Answer | StreamAnswer) -> None:
    if isinstance(answer, Answer):
        await send({"type": "http.response.start", "status": answer.status,
                    "headers": _encode(answer.headers, len(answer.body))})  # fmt: skip
        await send({"type": "http.response.body", "body": answer.body})
        return
    try:
        await send({"type": "http.response.start", "status": answer.status,
                    "headers": _encode(answer.headers, None)})  # fmt: skip
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()  # the client is gone: stop reading upstream

            group.start_soon(watch)
            async for chunk in answer.events:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await answer.on_close()


def state_caller(state: Any) -> Caller:
    """The caller the lean layer authenticated (admin routes behind it)."""
    caller = getattr(state, "caller", None)
    return caller if isinstance(caller, Caller) else Caller("anonymous")
