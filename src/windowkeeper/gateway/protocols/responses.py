"""OpenAI Responses (``/v1/responses``, Codex and the OpenAI Agents SDK).

Units are the ``input`` items (a string input is one user item), ``instructions`` the
system; conversion is :mod:`windowkeeper.adapters.responses`, lossless for what is not
compacted. A request with ``previous_response_id`` (or ``conversation``) continues state
stored upstream that the gateway cannot see, so it is passed through uncompacted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...adapters.responses import (
    INSTRUCTIONS_KEY,
    ITEMS_KEY,
    from_items,
    model_turn,
    to_responses,
)
from ...core.errors import InvalidMessagesError
from ...core.messages import Message, ToolSchema, content_text
from .base import (
    Parsed,
    Protocol,
    StreamFilter,
    StreamTap,
    envelope,
    optional_stream,
    optional_tools,
)
from .chat import openai_error_body
from .sse import data_json


class ResponsesProtocol(Protocol):
    name = "responses"
    target = "openai"
    path = "/responses"
    history_key = "input"
    system_key = "instructions"

    def parse(self, raw: bytes, body: Any) -> Parsed:
        body, model = envelope(body)
        value = body.get("input")
        if isinstance(value, str):
            units: list[Any] = [{"role": "user", "content": value}]
        elif isinstance(value, list):
            units = value
        else:
            raise InvalidMessagesError("input", "'input' must be a string or a list of items")
        instructions = body.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise InvalidMessagesError("instructions", "'instructions' must be a string")
        parsed = Parsed(
            self, raw, body, model, optional_stream(body), units, instructions, optional_tools(body)
        )
        for field in ("previous_response_id", "conversation"):
            if body.get(field) is not None:
                parsed.continues = field
        return parsed

    def system_messages(self, parsed: Parsed) -> list[Message]:
        if parsed.system is None:
            return []
        return [{"role": "system", "content": parsed.system, INSTRUCTIONS_KEY: True}]

    def convert(
        self, units: Sequence[Any], start: int, leading: bool
    ) -> tuple[list[Message], list[int]]:
        return from_items(units, start, leading=leading)

    def merges_forward(self, message: Message) -> bool:
        return message.get("role") == "assistant"

    def first_texts(self, parsed: Parsed) -> tuple[str, str]:
        system = parsed.system if isinstance(parsed.system, str) else ""
        first = ""
        for item in parsed.units:
            if not isinstance(item, Mapping) or item.get("type", "message") != "message":
                continue
            role = item.get("role")
            if not system and role in ("system", "developer"):
                system = content_text(item.get("content"))
            elif role == "user":
                first = content_text(item.get("content"))
                break
        return system, first

    def units_of(self, messages: Sequence[Message]) -> tuple[Any, list[Any], list[int]]:
        system: Any = None
        units: list[Any] = []
        ends: list[int] = []
        for message in messages:
            if message.get(INSTRUCTIONS_KEY):
                system = message.get("content")
            units.extend(message.get(ITEMS_KEY) or ())
            ends.append(len(units))
        return system, units, ends

    def wire(
        self, messages: Sequence[Message], made: Sequence[Message] = ()
    ) -> tuple[Any, list[Any]]:
        return to_responses(messages, made)

    def usage(self, reply: object) -> dict[str, Any]:
        usage = reply.get("usage") if isinstance(reply, Mapping) else None
        return responses_usage(usage)

    def tap(self, parsed: Parsed) -> StreamTap:
        return _ResponsesTap()

    def error_body(self, status: int, message: str, code: str | None = None) -> dict[str, Any]:
        return openai_error_body(status, message, code)

    def tool_schema(self, schema: ToolSchema) -> dict[str, Any]:
        function = schema.get("function") or {}
        return {
            "type": "function",
            "name": function.get("name"),
            "description": function.get("description", ""),
            "parameters": function.get("parameters", {}),
            "strict": False,
        }

    def reply_turn(self, reply: Mapping[str, Any]) -> Message | None:
        output = reply.get("output")
        if not isinstance(output, list) or not output:
            return None
        items = [i for i in output if isinstance(i, Mapping)]
        return model_turn(items) if items else None

    def without_calls(self, reply: dict[str, Any], name: str) -> dict[str, Any]:
        output = [
            item
            for item in reply.get("output") or []
            if not (
                isinstance(item, Mapping)
                and item.get("type") == "function_call"
                and item.get("name") == name
            )
        ]
        return {**reply, "output": output}

    def stream_filter(self, name: str) -> StreamFilter:
        from .responses_stream import ResponsesRecallFilter

        return ResponsesRecallFilter(name)


def responses_usage(usage: object) -> dict[str, Any]:
    if not isinstance(usage, Mapping):
        return {}
    out: dict[str, Any] = dict(usage)
    if isinstance(usage.get("input_tokens"), int):
        out["prompt_tokens"] = usage["input_tokens"]
    if isinstance(usage.get("output_tokens"), int):
        out["completion_tokens"] = usage["output_tokens"]
    return out


class _ResponsesTap(StreamTap):
    def __init__(self) -> None:
        self.usage: dict[str, Any] = {}

    def keep(self, event: bytes) -> bool:
        if b'"usage"' in event and b"response." in event:
            data = data_json(event)
            response = data.get("response") if data else None
            usage = responses_usage(
                response.get("usage") if isinstance(response, Mapping) else None
            )
            if usage:
                self.usage = usage
        return True
