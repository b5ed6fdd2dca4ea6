"""Requests the gateway forwards without compacting them: a Responses request that
continues upstream state (``previous_response_id``, ``conversation``), and Anthropic's
``count_tokens`` (answered for the messages as the gateway would send them)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import loads_or_none
from .auth import Caller
from .protocols import Parsed, Protocol
from .replies import Answer, StreamAnswer, error_answer, failure_answer, stream_error
from .selection import counted_body
from .sessions import SESSION_HEADER, GatewaySession, session_key
from .upstream import (
    Opened,
    Reply,
    UpstreamHTTPError,
    UpstreamUnreachable,
)

if TYPE_CHECKING:
    from .core import GatewayCore


async def passthrough(
    gateway: GatewayCore,
    protocol: Protocol,
    parsed: Parsed,
    headers: Mapping[str, str],
    caller: Caller,
) -> Answer | StreamAnswer:
    """Forward a request that continues upstream state, as the client sent it."""
    key = session_key(caller.scope, protocol.name, protocol.first_texts(parsed),
                      headers.get(SESSION_HEADER))  # fmt: skip
    session = gateway.sessions.get(key)
    if session is not None:
        session.passthrough += 1
    own = [("x-windowkeeper-passthrough", str(parsed.continues))]
    upstream = gateway.upstream
    gateway.metrics.count_request(protocol.name, "passthrough")
    try:
        if not parsed.stream:
            reply = await upstream.call(protocol.target, "POST", parsed.upstream_path(), headers,
                                        parsed.raw, caller.drop)  # fmt: skip
            return Answer(reply.status_code, [*reply.headers, *own], reply.content)
        response = await upstream.open(protocol.target, "POST", parsed.upstream_path(), headers,
                                       parsed.raw, caller.drop)  # fmt: skip
    except (UpstreamHTTPError, UpstreamUnreachable) as exc:
        gateway.metrics.error(type(exc).__name__)
        return failure_answer(protocol, exc, own)[0]
    events = _relay(gateway, protocol, response)

    async def on_close() -> None:
        await events.aclose()
        await response.aclose()

    return StreamAnswer(response.status_code, [*response.headers, *own],
                        events, on_close)  # fmt: skip


async def _relay(
    gateway: GatewayCore, protocol: Protocol, response: Opened
) -> AsyncGenerator[bytes, None]:
    try:
        async for chunk in gateway.upstream.iter_stream(protocol.target, response):
            yield chunk
    except UpstreamUnreachable as exc:
        yield stream_error(protocol, str(exc))


CLIENT_TOKENS_HEADER = "x-windowkeeper-client-input-tokens"


async def count_tokens(
    gateway: GatewayCore,
    protocol: Protocol,
    parsed: Parsed,
    headers: Mapping[str, str],
    caller: Caller,
    session: GatewaySession | None,
) -> Answer:
    """``count_tokens`` for the messages as the gateway would send them now: the branch's
    compacted prefix substituted when it applies (``x-windowkeeper-compacted``), with the
    upstream's count of the client's own body in ``x-windowkeeper-client-input-tokens``.

    A compaction the request itself would trigger is not run: it may call a summary model
    and it changes the session, and counting must do neither. Over the threshold the
    answer is what would be sent before that compaction, which the next model request
    makes."""
    counted = None
    if session is not None:
        async with session.lock:
            try:
                counted = await gateway.run(True, counted_body, session, parsed)
            except InvalidMessagesError as exc:
                return error_answer(protocol, 400, f"windowkeeper gateway: {exc}")
    try:
        reply = await _count(gateway, protocol, parsed, headers, caller, counted or parsed.raw)
        client = reply
        if counted is not None and reply.status_code == 200:
            client = await _count(gateway, protocol, parsed, headers, caller, parsed.raw)
    except (UpstreamHTTPError, UpstreamUnreachable) as exc:
        return failure_answer(protocol, exc, [])[0]
    own = [("x-windowkeeper-compacted", "true" if counted is not None else "false")]
    tokens = _input_tokens(client.content) if client.status_code == 200 else None
    if tokens is not None:
        own.append((CLIENT_TOKENS_HEADER, str(tokens)))
    return Answer(reply.status_code, [*reply.headers, *own], reply.content)


async def _count(
    gateway: GatewayCore,
    protocol: Protocol,
    parsed: Parsed,
    headers: Mapping[str, str],
    caller: Caller,
    payload: bytes,
) -> Reply:
    return await gateway.upstream.call(protocol.target, "POST",
                                       parsed.upstream_path("/count_tokens"), headers, payload,
                                       caller.drop)  # fmt: skip


def _input_tokens(content: bytes) -> int | None:
    value = loads_or_none(content.decode("utf-8", "replace"))
    tokens = value.get("input_tokens") if isinstance(value, dict) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
