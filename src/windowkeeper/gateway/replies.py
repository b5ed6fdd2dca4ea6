"""What the gateway answers: a complete body or a stream, and errors in a protocol's shape."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from ..core.report import Receipt
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


def failure_answer(protocol: Protocol, exc: Exception, own: Headers) -> tuple[Answer, str]:
    """The client's view of a failed turn and its outcome label: upstream errors pass
    through unchanged, a transport failure is a 502/504, exhausted compaction says so."""
    from ..core.errors import CompressionExhaustedError
    from .upstream import UpstreamHTTPError, UpstreamUnreachable, error_headers

    if isinstance(exc, UpstreamHTTPError):
        return Answer(exc.status_code, [*error_headers(exc), *own], exc.content), "upstream_error"
    if isinstance(exc, UpstreamUnreachable):
        return error_answer(protocol, exc.status_code, str(exc), "bad_gateway", own), "unreachable"
    cause = exc.__cause__
    status = cause.status_code if isinstance(cause, UpstreamHTTPError) else 400
    exhausted = isinstance(exc, CompressionExhaustedError)
    extra = [("x-windowkeeper-error", "compression_exhausted")] if exhausted else []
    code = "context_length_exceeded" if exhausted else None
    answer = error_answer(protocol, status, f"windowkeeper gateway: {exc}", code, [*own, *extra])
    return answer, "exhausted" if exhausted else "upstream_error"


def receipt_headers(receipt: Receipt | None) -> list[tuple[str, str]]:
    """The receipt of the request's compaction as ``x-windowkeeper-receipt-*`` headers."""
    if receipt is None:
        return []
    even = receipt.break_even_requests
    return [
        ("x-windowkeeper-receipt-tier", receipt.tier.value),
        ("x-windowkeeper-receipt-tokens", f"{receipt.tokens_before}->{receipt.tokens_after}"),
        ("x-windowkeeper-receipt-cache-invalidated", str(receipt.invalidated_tokens)),
        ("x-windowkeeper-receipt-break-even", "never" if even is None else str(even)),
        ("x-windowkeeper-receipt-waited-ms", f"{receipt.waited_ms:.0f}"),
        ("x-windowkeeper-receipt-background", "true" if receipt.background else "false"),
        ("x-windowkeeper-receipt-deferred-requests", str(receipt.deferred_requests)),
    ]
