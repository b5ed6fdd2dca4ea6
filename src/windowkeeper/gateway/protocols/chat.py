"""OpenAI Chat Completions (``/v1/chat/completions``): the canonical format itself.

Units are the messages; a stream asks the upstream for ``stream_options.include_usage``
(real prompt counts are authoritative, design §2) and the usage-only chunk that adds is
dropped when the client did not ask for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.errors import InvalidMessagesError
from ...core.jsonsafe import MAX_JSON_DEPTH, value_depth_exceeds
from ...core.messages import (
    Message,
    ToolSchema,
    content_text,
    validate_message,
    validate_messages,
)
from ...loop.steps import wire
from .base import (
    Parsed,
    Protocol,
    StreamFilter,
    StreamTap,
    envelope,
    history_list,
    optional_stream,
    optional_tools,
)
from .sse import data_json

_USAGE_OPTION = b'{"stream_options":{"include_usage":true},'
_PUBLIC_KEYS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal",
     "audio", "reasoning_content", "reasoning"}
)  # fmt: skip
"""Keys of the Chat format: a message holding only these carries no private ``_`` key."""


def openai_error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def openai_error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "upstream_error"
    if status == 401:
        code = code or "invalid_api_key"
    return openai_error(message, kind, code)


class ChatProtocol(Protocol):
    name = "chat"
    target = "openai"
    path = "/chat/completions"
    history_key = "messages"

    def parse(self, raw: bytes, body: Any) -> Parsed:
        body, model = envelope(body)
        messages = history_list(body, "messages")
        tools = optional_tools(body)
        options = body.get("stream_options")
        if options is not None and not isinstance(options, dict):
            raise InvalidMessagesError("stream_options", "expected an object")
        return Parsed(self, raw, body, model, optional_stream(body), messages, None, tools)

    def system_messages(self, parsed: Parsed) -> list[Message]:
        return []

    def convert(
        self, units: Sequence[Any], start: int, leading: bool
    ) -> tuple[list[Message], list[int]]:
        new = list(units[start:])
        if value_depth_exceeds(new, MAX_JSON_DEPTH + 1):  # the first defect, in order
            messages = [validate_message(m, f"message {i}") for i, m in enumerate(new, start)]
        else:  # one depth walk for the list, not one per message
            messages = validate_messages(new, bounded_depth=False, first=start)
        return messages, list(range(start + 1, len(units) + 1))

    def validated(self, made: list[Message]) -> Sequence[Message]:
        return made  # every message went through validate_messages (convert)

    def has_private(self, messages: Sequence[Message]) -> bool:
        return any(
            not _PUBLIC_KEYS.issuperset(message) and any(key.startswith("_") for key in message)
            for message in messages
        )

    def first_texts(self, parsed: Parsed) -> tuple[str, str]:
        return _first_texts(parsed.units)

    def units_of(self, messages: Sequence[Message]) -> tuple[Any, list[Any], list[int]]:
        return None, list(messages), list(range(1, len(messages) + 1))

    def wire(
        self, messages: Sequence[Message], made: Sequence[Message] = ()
    ) -> tuple[Any, list[Any]]:
        return None, wire(list(messages))

    def body_with(
        self, parsed: Parsed, system: Any, units: list[Any], extra_tools: list[Any]
    ) -> dict[str, Any]:
        body = super().body_with(parsed, system, units, extra_tools)
        if parsed.stream:
            options = parsed.body.get("stream_options") or {}
            body["stream_options"] = {**options, "include_usage": True}
        return body

    def passthrough(self, parsed: Parsed) -> bytes:
        if not parsed.stream or _wants_usage(parsed):
            return parsed.raw
        if "stream_options" not in parsed.body:
            # Splice the option in front: no re-serialization of a long history.
            stripped = parsed.raw.lstrip()
            if stripped.startswith(b"{") and stripped[1:].lstrip()[:1] != b"}":
                return _USAGE_OPTION + stripped[1:]
        from .base import dumps

        return dumps(self.body_with(parsed, None, parsed.units, []))

    def usage(self, reply: object) -> dict[str, Any]:
        usage = reply.get("usage") if isinstance(reply, Mapping) else None
        return dict(usage) if isinstance(usage, Mapping) else {}

    def tap(self, parsed: Parsed) -> StreamTap:
        return _ChatTap(_wants_usage(parsed))

    def error_body(self, status: int, message: str, code: str | None = None) -> dict[str, Any]:
        return openai_error_body(status, message, code)

    def tool_schema(self, schema: ToolSchema) -> dict[str, Any]:
        return dict(schema)

    def reply_turn(self, reply: Mapping[str, Any]) -> Message | None:
        choices = reply.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return None
        message = choices[0].get("message")
        if not isinstance(message, Mapping):
            return None
        turn: Message = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            turn["tool_calls"] = list(message["tool_calls"])
        return turn

    def without_calls(self, reply: dict[str, Any], name: str) -> dict[str, Any]:
        choices = [dict(c) for c in reply.get("choices") or []]
        for choice in choices:
            message = dict(choice.get("message") or {})
            kept = [c for c in message.get("tool_calls") or [] if _call_name(c) != name]
            if kept:
                message["tool_calls"] = kept
            else:
                message.pop("tool_calls", None)
                if choice.get("finish_reason") == "tool_calls":
                    choice["finish_reason"] = "stop"
                message["content"] = message.get("content") or ""
            choice["message"] = message
        return {**reply, "choices": choices}

    def stream_filter(self, name: str) -> StreamFilter:
        from .chat_stream import ChatRecallFilter

        return ChatRecallFilter(name)


def _call_name(call: object) -> str | None:
    function = call.get("function") if isinstance(call, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) else None


def _wants_usage(parsed: Parsed) -> bool:
    options = parsed.body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _first_texts(messages: Sequence[Any]) -> tuple[str, str]:
    system = next(
        (m for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")),
        None,
    )
    first = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    return (
        content_text(system.get("content")) if system else "",
        content_text(first.get("content")) if first else "",
    )


class _ChatTap(StreamTap):
    def __init__(self, forward_usage_chunks: bool) -> None:
        self.forward_usage_chunks = forward_usage_chunks
        self.usage: dict[str, Any] = {}

    def keep(self, event: bytes) -> bool:
        if b'"usage"' not in event:
            return True
        chunk = data_json(event)
        usage = chunk.get("usage") if chunk is not None else None
        if not isinstance(usage, Mapping):
            return True
        self.usage = dict(usage)
        return self.forward_usage_chunks or bool(chunk and chunk.get("choices"))
