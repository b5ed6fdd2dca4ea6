"""Reading conversations: JSONL, JSON arrays and request bodies (OpenAI, Anthropic).

Validation of each message is :mod:`windowkeeper.core.messages`; this module only finds
the messages in whatever shape the input has.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import DOCUMENT_DEPTH, loads, loads_or_none
from ..core.messages import Conversation, Message, ToolSchema, validate_message, validate_messages
from .anthropic import from_anthropic


def parse_conversation(text: str) -> Conversation:
    """Read JSONL (one message a line), a JSON array, or a request body: OpenAI's, or an
    Anthropic Messages body (converted to the canonical format with its tools)."""
    stripped = text.lstrip()
    if not stripped:
        raise InvalidMessagesError("input", "empty input: expected JSONL, a JSON array or a body")
    if stripped.startswith("["):
        return Conversation(validate_messages(_load_whole(text)))
    if stripped.startswith("{"):
        first = _try_load(stripped.split("\n", 1)[0])
        # A first line that is no JSON text of its own starts one multi-line document:
        # its errors are the document's (with their line), not "line 1: bad JSON".
        whole = _try_load(text) if first is not None else _load_whole(text)
        is_message_line = isinstance(first, dict) and "role" in first
        if isinstance(whole, dict) and "messages" in whole and not is_message_line:
            return _from_body(whole)
    return Conversation(_parse_jsonl(text))


def _try_load(text: str) -> Any:
    return loads_or_none(text, limit=DOCUMENT_DEPTH)


def _load_whole(text: str) -> Any:
    """A whole JSON document; bad JSON, over-deep nesting or a huge number is one line."""
    return loads(text, limit=DOCUMENT_DEPTH)


_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def _is_anthropic_body(body: dict[str, Any]) -> bool:
    """An Anthropic Messages request: a top-level ``system`` or Anthropic-only blocks."""
    if "system" in body:
        return True
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    return any(
        isinstance(block, Mapping) and block.get("type") in _ANTHROPIC_BLOCKS
        for message in messages
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def _from_body(body: dict[str, Any]) -> Conversation:
    if _is_anthropic_body(body):
        converted = from_anthropic(body.get("system"), body.get("messages") or [])
        body = {**body, "messages": converted, "tools": _anthropic_tools(body.get("tools"))}
        body.pop("system", None)
    messages = validate_messages(body.get("messages"))
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise InvalidMessagesError("input", "'tools' must be a list of objects")
    model = body.get("model")
    extra = {k: v for k, v in body.items() if k not in {"messages", "tools", "model"}}
    return Conversation(messages, tools, model if isinstance(model, str) else None, extra)


def _anthropic_tools(tools: object) -> list[ToolSchema] | None:
    """Anthropic tool definitions in the OpenAI function-tool shape."""
    if not isinstance(tools, list):
        return None
    return [
        {
            "type": "function",
            "function": {
                "name": tool.get("name", ""),
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema", {}),
            },
        }
        for tool in tools
        if isinstance(tool, Mapping)
    ]


def _parse_jsonl(text: str) -> list[Message]:
    messages: list[Message] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        value = loads(line, f"line {number}")
        messages.append(validate_message(value, f"line {number}"))
    return messages


def read_text(source: str | Path) -> str:
    """Read a file's text; ``-`` means standard input."""
    if str(source) == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidMessagesError(str(source), f"cannot read file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidMessagesError(str(source), "file is not UTF-8 text") from exc


def load_conversation(source: str | Path) -> Conversation:
    """Read a conversation from a path (``-`` for stdin)."""
    return parse_conversation(read_text(source))


def load_tools(source: str | Path) -> list[ToolSchema]:
    """Read tool schemas: a JSON array, or a request body / meta file with a ``tools`` key."""
    value = _load_whole(read_text(source))
    if isinstance(value, dict):
        value = value.get("tools")
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise InvalidMessagesError(str(source), "expected a JSON array of tool schemas")
    return value
