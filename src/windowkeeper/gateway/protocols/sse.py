"""Server-sent events: splitting a byte stream into whole events, reading their data."""

from __future__ import annotations

import json
import re
from typing import Any

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class EventSplitter:
    """Whole events out of arbitrary chunks; bytes after the last event wait for more."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._pending + chunk
        ends = list(_EVENT_END.finditer(data))
        if not ends:
            self._pending = data
            return []
        out, start = [], 0
        for match in ends:
            out.append(data[start : match.end()])
            start = match.end()
        self._pending = data[start:]
        return out

    def flush(self) -> bytes:
        pending, self._pending = self._pending, b""
        return pending


def data_json(event: bytes) -> dict[str, Any] | None:
    """The JSON object in an event's ``data:`` lines, or None."""
    lines = [line[5:].strip() for line in event.splitlines() if line.startswith(b"data:")]
    if not lines or lines == [b"[DONE]"]:
        return None
    try:
        value = json.loads(b"\n".join(lines))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def event_type(event: bytes) -> bytes:
    """The ``event:`` name of an event (empty when it has none)."""
    for line in event.splitlines():
        if line.startswith(b"event:"):
            return line[6:].strip()
    return b""


def encode(name: str | None, value: object) -> bytes:
    """One event: an optional ``event:`` line and one ``data:`` line."""
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(value, ensure_ascii=False)}\n\n".encode()
