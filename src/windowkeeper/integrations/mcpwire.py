"""The JSON-RPC layer in front of the MCP SDK's stdio transport: every line gets a verdict.

The SDK drops a line it cannot validate without a word, so a client waits forever on a
request with an id that is malformed (``params`` not an object, no ``method``, a lone
surrogate the SDK's JSON parser refuses). JSON-RPC 2.0 asks for an error reply instead:
-32700 for text that is not JSON, -32600 for JSON that is not a valid message (with the
request's id when it has a usable one, else ``null``). Notifications never get a reply,
even malformed ones. What passes is handed on to the SDK (lone surrogates replaced, so
the SDK's strict parser accepts what Python's accepts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

import mcp_types
from pydantic import ValidationError

from ..core.jsonsafe import MAX_JSON_DEPTH, loads_or_none
from ..core.messages import safe_text

__all__ = ("INVALID_REQUEST", "PARSE_ERROR", "Triage", "Verdict", "triage")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class Verdict(Enum):
    FORWARD = "forward"
    """A valid message: ``line`` is what the SDK reads."""
    REPLY = "reply"
    """Malformed, and a reply is owed: ``line`` is the JSON-RPC error to write."""
    IGNORE = "ignore"
    """Blank, or a malformed notification (which gets no reply)."""


@dataclass(frozen=True)
class Triage:
    verdict: Verdict
    line: str = ""


def _error(code: int, message: str, request_id: object = None) -> Triage:
    reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return Triage(Verdict.REPLY, json.dumps(reply, separators=(",", ":")))


def _scrubbed(value: Any) -> Any:
    """``value`` with every string (keys too) valid UTF-8; depth is bounded already."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    if isinstance(value, dict):
        return {safe_text(str(k)): _scrubbed(v) for k, v in value.items()}
    return value


def _usable_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def triage(line: str) -> Triage:
    """What to do with one line read from the client."""
    text = line.strip()
    if not text:
        return Triage(Verdict.IGNORE)
    parsed = loads_or_none(text)
    if parsed is None and text != "null":
        return _error(PARSE_ERROR, f"parse error: not JSON, or nested deeper than "
                      f"{MAX_JSON_DEPTH} levels")  # fmt: skip
    if not isinstance(parsed, dict):
        return _error(INVALID_REQUEST, "invalid request: a message is one JSON object "
                      "(batches are not supported)")  # fmt: skip
    message = _scrubbed(parsed)
    if "method" in message and "id" in message and not _usable_id(message["id"]):
        # The SDK would read this as a notification (an extra field) and never answer.
        return _error(INVALID_REQUEST, "invalid request: id must be a string or an integer")
    try:
        mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        return _invalid(message, exc)
    return Triage(Verdict.FORWARD, json.dumps(message, ensure_ascii=False))


def _invalid(message: dict[str, Any], exc: ValidationError) -> Triage:
    if "id" not in message and "method" in message:
        return Triage(Verdict.IGNORE)  # a notification: JSON-RPC forbids replying
    first = exc.errors()[0] if exc.errors() else {"msg": "invalid", "loc": ()}
    where = ".".join(str(part) for part in first.get("loc", ())[1:]) or "message"
    detail = f"invalid request: {where}: {first.get('msg', 'invalid')}"
    request_id = message.get("id")
    return _error(INVALID_REQUEST, detail[:300], request_id if _usable_id(request_id) else None)
