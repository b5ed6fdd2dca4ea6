"""Anthropic Messages (``/v1/messages``, Claude Code) and ``/v1/messages/count_tokens``.

Units are the ``messages``, ``system`` the system; conversion is
:mod:`windowkeeper.adapters.anthropic` with the originals kept, so untouched messages
(``cache_control``, thinking blocks and their signatures, unknown blocks) go upstream as
the client sent them. Usage: ``input_tokens`` plus both cache counts (what the window
holds), from the body or from ``message_start`` in a stream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...adapters.anthropic import SOURCE_KEY, from_anthropic, message_from_anthropic
from ...adapters.anthropic_write import to_anthropic
from ...core.errors import InvalidMessagesError
from ...core.messages import Message, ToolSchema, content_text, is_in_place_instruction
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

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def anthropic_error_body(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


class MessagesProtocol(Protocol):
    name = "messages"
    target = "anthropic"
    path = "/v1/messages"
    history_key = "messages"
    system_key = "system"

    def parse(self, raw: bytes, body: Any) -> Parsed:
        body, model = envelope(body)
        messages = history_list(body, "messages")
        system = body.get("system")
        if system is not None and not isinstance(system, str | list):
            raise InvalidMessagesError("system", "'system' must be a string or a list of blocks")
        return Parsed(
            self, raw, body, model, optional_stream(body), messages, system, optional_tools(body)
        )

    def system_messages(self, parsed: Parsed) -> list[Message]:
        if parsed.system is None:
            return []
        return from_anthropic(parsed.system, [], keep_originals=True)

    def convert(
        self, units: Sequence[Any], start: int, leading: bool
    ) -> tuple[list[Message], list[int]]:
        out: list[Message] = []
        ends: list[int] = []
        for index in range(start, len(units)):
            derived = message_from_anthropic(units[index], f"message {index}")
            if derived:
                derived[0][SOURCE_KEY] = {"message": units[index], "span": len(derived)}
            out.extend(derived)
            ends.extend([index + 1] * len(derived))
        return out, ends

    def validated(self, made: list[Message]) -> Sequence[Message]:
        # The conversion builds every message itself from blocks it checked: dicts with a
        # string role, content a string, None or a list of dicts, calls a list of dicts,
        # a non-empty string tool_call_id (tests/test_anthropic_checked.py).
        return made

    def first_texts(self, parsed: Parsed) -> tuple[str, str]:
        system = parsed.system
        text = system if isinstance(system, str) else content_text(system)
        first = next(
            (m for m in parsed.units if isinstance(m, Mapping) and m.get("role") == "user"), None
        )
        return text, content_text(first.get("content")) if first else ""

    def units_of(self, messages: Sequence[Message]) -> tuple[Any, list[Any], list[int]]:
        system: Any = None
        units: list[Any] = []
        ends: list[int] = []
        for message in messages:
            source = message.get(SOURCE_KEY)
            if isinstance(source, Mapping) and "system" in source:
                system = source["system"]
            elif isinstance(source, Mapping) and "message" in source:
                units.append(source["message"])
            top = message.get("role") == "system" and not is_in_place_instruction(message)
            ends.append(0 if top else len(units))
        return system, units, ends

    def wire(
        self, messages: Sequence[Message], made: Sequence[Message] = ()
    ) -> tuple[Any, list[Any]]:
        return to_anthropic(messages, made)

    def usage(self, reply: object) -> dict[str, Any]:
        usage = reply.get("usage") if isinstance(reply, Mapping) else None
        return anthropic_usage(usage)

    def tap(self, parsed: Parsed) -> StreamTap:
        return _MessagesTap()

    def error_body(self, status: int, message: str, code: str | None = None) -> dict[str, Any]:
        return anthropic_error_body(status, message)

    def tool_schema(self, schema: ToolSchema) -> dict[str, Any]:
        function = schema.get("function") or {}
        return {
            "name": function.get("name"),
            "description": function.get("description", ""),
            "input_schema": function.get("parameters", {"type": "object"}),
        }

    def reply_turn(self, reply: Mapping[str, Any]) -> Message | None:
        content = reply.get("content")
        if not isinstance(content, list):
            return None
        turns = message_from_anthropic({"role": "assistant", "content": content}, "reply")
        return turns[0] if turns else None

    def without_calls(self, reply: dict[str, Any], name: str) -> dict[str, Any]:
        content = [
            block
            for block in reply.get("content") or []
            if not (
                isinstance(block, Mapping)
                and block.get("type") == "tool_use"
                and block.get("name") == name
            )
        ]
        out = {**reply, "content": content}
        calls = any(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in content)
        if not calls and out.get("stop_reason") == "tool_use":
            out["stop_reason"] = "end_turn"
        return out

    def stream_filter(self, name: str) -> StreamFilter:
        from .messages_stream import MessagesRecallFilter

        return MessagesRecallFilter(name)


def anthropic_usage(usage: object) -> dict[str, Any]:
    if not isinstance(usage, Mapping):
        return {}
    out: dict[str, Any] = dict(usage)
    prompt = sum(
        v
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        if isinstance(v := usage.get(k), int) and not isinstance(v, bool)
    )
    if "input_tokens" in usage:
        out["prompt_tokens"] = prompt
    if isinstance(usage.get("output_tokens"), int):
        out["completion_tokens"] = usage["output_tokens"]
    return out


class _MessagesTap(StreamTap):
    def __init__(self) -> None:
        self.usage: dict[str, Any] = {}

    def keep(self, event: bytes) -> bool:
        if b'"usage"' not in event:
            return True
        data = data_json(event)
        if data is None:
            return True
        if data.get("type") == "message_start":
            message = data.get("message")
            usage = anthropic_usage(message.get("usage") if isinstance(message, Mapping) else None)
            if usage:
                self.usage = usage
        elif data.get("type") == "message_delta":
            delta = data.get("usage")
            if isinstance(delta, Mapping) and isinstance(delta.get("output_tokens"), int):
                self.usage = {**self.usage, "completion_tokens": delta["output_tokens"]}
        return True
