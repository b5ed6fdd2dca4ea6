"""Reading conversations: JSONL, JSON arrays, request bodies (OpenAI, Anthropic) and
agent transcripts (Claude Code, Codex).

Validation of each message is :mod:`windowkeeper.core.messages`; this module only finds
the messages in whatever shape the input has. :func:`detect_format` names the shape;
``parse_conversation(text, fmt)`` reads it (``Format.AUTO`` detects).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import DOCUMENT_DEPTH, loads, loads_or_none, one_of
from ..core.messages import Conversation, Message, ToolSchema, validate_message, validate_messages
from .anthropic import from_anthropic
from .claude_code import looks_like_claude_code, parse_claude_code
from .codex import looks_like_codex, parse_codex


class Format(StrEnum):
    """The shapes a conversation can be read from (``--format`` on the command line)."""

    AUTO = "auto"
    JSONL = "jsonl"  # one OpenAI chat message a line
    JSON = "json"  # a JSON array of messages
    OPENAI = "openai"  # a Chat Completions request body
    ANTHROPIC = "anthropic"  # a Messages request body
    CLAUDE_CODE = "claude-code"  # a Claude Code session transcript
    CODEX = "codex"  # a Codex rollout transcript


def detect_format(text: str) -> Format:
    """The shape of ``text`` (never ``AUTO``); JSONL when nothing else fits."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return Format.JSON
    first_line = stripped.split("\n", 1)[0]
    if stripped.startswith("{") and not _is_message_line(first_line):
        whole = _try_load(text)
        if isinstance(whole, dict) and "messages" in whole:
            return Format.ANTHROPIC if _is_anthropic_body(whole) else Format.OPENAI
        if whole is None and _try_load(first_line) is None and "\n" in stripped.rstrip():
            # One multi-line document that does not parse: reading it as a body reports
            # its own defect (with its line), not "line 1: bad JSON".
            return Format.OPENAI
    # Transcripts may open with bookkeeping events: the first line that names a shape wins.
    for line in stripped.splitlines()[:_SNIFF_LINES]:
        value = _try_load(line)
        if isinstance(value, dict) and "role" in value:
            return Format.JSONL
        if looks_like_claude_code(value):
            return Format.CLAUDE_CODE
        if looks_like_codex(value):
            return Format.CODEX
    return Format.JSONL


_SNIFF_LINES = 50


def parse_conversation(text: str, fmt: Format | str = Format.AUTO) -> Conversation:
    """Read a conversation in the shape ``fmt`` names (``auto``: detected): JSONL (one
    message a line), a JSON array, a request body (OpenAI's, or an Anthropic Messages body
    converted to the canonical format with its tools), or a Claude Code / Codex transcript."""
    if not text.strip():
        raise InvalidMessagesError("input", "empty input: expected JSONL, a JSON array or a body")
    fmt = Format(fmt)
    if fmt is Format.AUTO:
        fmt = detect_format(text)
    if fmt is Format.JSON:
        return Conversation(validate_messages(_load_whole(text)))
    if fmt in (Format.OPENAI, Format.ANTHROPIC):
        body = _load_whole(text)
        if not isinstance(body, dict) or "messages" not in body:
            raise InvalidMessagesError("input", f"expected a {fmt.value} request body object")
        return _from_body(body, anthropic=fmt is Format.ANTHROPIC)
    if fmt in (Format.CLAUDE_CODE, Format.CODEX):
        read = parse_claude_code(text) if fmt is Format.CLAUDE_CODE else parse_codex(text)
        # What a transcript's events convert to is held to the same rules as a message
        # line (a defect the conversion let through is named here, not inside a pass).
        validate_messages(read.messages, label="converted message", bounded_depth=False)
        if not any(m.get("role") in ("user", "assistant") for m in read.messages):
            # Tool results alone (their calls not in the file) are no conversation either:
            # pairing repair would drop every one of them.
            raise InvalidMessagesError(
                "input", f"no conversation in this {fmt.value} transcript: none of its lines "
                "is a user or assistant message it can read",
            )  # fmt: skip
        return read
    return Conversation(_parse_jsonl(text))


def _is_message_line(line: str) -> bool:
    value = _try_load(line)
    return isinstance(value, dict) and "role" in value


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
        isinstance(block, Mapping) and one_of(block.get("type"), _ANTHROPIC_BLOCKS)
        for message in messages
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def _from_body(body: dict[str, Any], *, anthropic: bool) -> Conversation:
    if anthropic:
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


def load_conversation(source: str | Path, fmt: Format | str = Format.AUTO) -> Conversation:
    """Read a conversation from a path (``-`` for stdin) in the shape ``fmt`` names."""
    return parse_conversation(read_text(source), fmt)


def load_tools(source: str | Path) -> list[ToolSchema]:
    """Read tool schemas: a JSON array, or a request body / meta file with a ``tools`` key."""
    value = _load_whole(read_text(source))
    if isinstance(value, dict):
        value = value.get("tools")
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise InvalidMessagesError(str(source), "expected a JSON array of tool schemas")
    return value
