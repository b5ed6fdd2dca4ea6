"""Server-sent-events relay: pass events through as they arrive, capture ``usage``.

The gateway asks the upstream for ``stream_options.include_usage`` so it learns the real
prompt count (SPEC §3: authoritative). The usage-only chunk that option adds (``choices``
empty) is dropped when the client did not ask for it, so the client sees the stream it
asked for. Events are forwarded whole and unmodified; bytes after the last complete
event wait for the next chunk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class UsageTap:
    """Splits an SSE byte stream into events, remembers the last ``usage`` object."""

    def __init__(self, forward_usage_chunks: bool) -> None:
        self.forward_usage_chunks = forward_usage_chunks
        self.usage: dict[str, Any] | None = None
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        """The complete events in ``chunk`` (plus what was pending) to forward."""
        data = self._pending + chunk
        ends = list(_EVENT_END.finditer(data))
        if not ends:
            self._pending = data
            return b""
        cut = ends[-1].end()
        self._pending = data[cut:]
        if b'"usage"' not in data[:cut]:
            return data[:cut]  # the common case: no event to inspect
        out, start = [], 0
        for match in ends:
            event = data[start : match.end()]
            start = match.end()
            if self._keep(event):
                out.append(event)
        return b"".join(out)

    def flush(self) -> bytes:
        """Bytes after the last complete event (forwarded as they are)."""
        pending, self._pending = self._pending, b""
        return pending

    def _keep(self, event: bytes) -> bool:
        if b'"usage"' not in event:
            return True
        chunk = _data_json(event)
        usage = chunk.get("usage") if chunk is not None else None
        if not isinstance(usage, Mapping):
            return True
        self.usage = dict(usage)
        return self.forward_usage_chunks or bool(chunk and chunk.get("choices"))


def _data_json(event: bytes) -> dict[str, Any] | None:
    lines = [line[5:].strip() for line in event.splitlines() if line.startswith(b"data:")]
    try:
        value = json.loads(b"\n".join(lines)) if lines else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def sse_error(message: str) -> bytes:
    """An in-band error event (the status line is already sent); OpenAI SDKs raise on it."""
    body = {"error": {"message": message, "type": "upstream_error", "code": "bad_gateway"}}
    return f"data: {json.dumps(body)}\n\n".encode()


class ClosingStreamingResponse(StreamingResponse):
    """A streaming response that always runs ``on_close`` once the exchange is over:
    completed, failed, or the client gone (shielded from cancellation, so the session's
    lock is released and the turn settled even then)."""

    def __init__(
        self,
        content: Any,
        *,
        on_close: Callable[[], Awaitable[None]],
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(content, status_code=status_code, headers=headers)
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._on_close()
