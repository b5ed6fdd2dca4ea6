"""What the gateway answers: a complete body or a stream, and errors in a protocol's shape."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from .protocols import Protocol, dumps

Headers = list[tuple[str, str]]


@dataclass
class Answer:
    status: int
    headers: Headers
    body: bytes


@dataclass
class StreamAnswer:
    """A stream; ``on_close`` runs once the exchange is over (completed, failed, or the
    client gone), shielded from cancellation."""

    status: int
    headers: Headers
    events: AsyncIterator[bytes]
    on_close: Callable[[], Awaitable[None]] = field(default=lambda: _nothing())


async def _nothing() -> None:
    return None


JSON = ("content-type", "application/json")


def error_answer(
    protocol: Protocol,
    status: int,
    message: str,
    code: str | None = None,
    headers: Headers | None = None,
) -> Answer:
    body = dumps(protocol.error_body(status, message, code))
    return Answer(status, [JSON, *(headers or [])], body)


def stream_error(protocol: Protocol, message: str) -> bytes:
    """An in-band error event (the status line is already sent); the SDKs raise on it."""
    if protocol.target == "anthropic":
        body = protocol.error_body(502, message)
        return b"event: error\ndata: " + dumps(body) + b"\n\n"
    if protocol.name == "responses":
        event = {"type": "error", "code": "bad_gateway", "message": message, "param": None}
        return b"event: error\ndata: " + dumps(event) + b"\n\n"
    return b"data: " + dumps(protocol.error_body(502, message, "bad_gateway")) + b"\n\n"
