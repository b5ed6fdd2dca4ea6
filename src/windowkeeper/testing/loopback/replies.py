"""What the loopback upstream answers: one scripted model turn in each protocol's shape.

A :class:`Reply` is protocol-neutral (text and/or tool calls, or an error); the server
renders it as an OpenAI Chat Completions, OpenAI Responses or Anthropic Messages body, or
as that protocol's own server-sent events when the request asked for a stream. The shapes
follow the providers' documented wire formats closely enough for the official ``openai``
and ``anthropic`` SDKs to parse them, including their stream accumulators.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Protocol = Literal["chat", "responses", "messages"]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any]
    call_id: str


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the classmethods."""

    kind: Literal["turn", "error", "raw", "delay", "close", "dynamic"] = "turn"
    text: str | None = None
    calls: tuple[ToolCall, ...] = ()
    status: int = 200
    body: object = None
    content_type: str = "application/json"
    seconds: float = 0.0
    then: Reply | None = None
    cut_after: int | None = None
    prompt_tokens: int | None = None
    chunks: int = 3
    extra: Mapping[str, Any] = field(default_factory=dict)
    decide: Callable[[Protocol, dict[str, Any]], Reply] | None = None

    @classmethod
    def turn(
        cls,
        text: str | None = None,
        *calls: ToolCall,
        prompt_tokens: int | None = None,
        cut_after: int | None = None,
        chunks: int = 3,
    ) -> Reply:
        """A model turn: text, tool calls or both; ``prompt_tokens`` overrides the usage the
        server reports (default: an estimate of the request); a stream is cut (connection
        closed, no final event) after ``cut_after`` events."""
        return cls(
            "turn",
            text,
            tuple(calls),
            prompt_tokens=prompt_tokens,
            cut_after=cut_after,
            chunks=chunks,
        )

    @classmethod
    def error(cls, status: int, body: object = None) -> Reply:
        """An HTTP error; without ``body``, a generic one in the request's protocol shape."""
        return cls("error", status=status, body=body)

    @classmethod
    def raw(cls, status: int, body: str | bytes, content_type: str = "text/plain") -> Reply:
        return cls("raw", status=status, body=body, content_type=content_type)

    @classmethod
    def delay(cls, seconds: float, then: Reply | None = None) -> Reply:
        return cls("delay", seconds=seconds, then=then or cls.turn("late"))

    @classmethod
    def dynamic(cls, decide: Callable[[Protocol, dict[str, Any]], Reply]) -> Reply:
        """A reply chosen from the request itself: ``decide(protocol, body)``."""
        return cls("dynamic", decide=decide)

    @classmethod
    def close(cls) -> Reply:
        """Close the connection without answering."""
        return cls("close")


_CALL_IDS = itertools.count(1)


def call(name: str, call_id: str | None = None, **arguments: Any) -> ToolCall:
    """A scripted tool call (ids are unique within the process unless given)."""
    return ToolCall(name, arguments, call_id or f"call_{next(_CALL_IDS)}")


_ANTHROPIC_ERRORS = {
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(protocol: Protocol, status: int, message: str, code: str | None = None) -> Any:
    if protocol == "messages":
        fallback = "invalid_request_error" if status < 500 else "api_error"
        kind = _ANTHROPIC_ERRORS.get(status, fallback)
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def overflow_body(protocol: Protocol, tokens: int, window: int) -> Any:
    """What the provider says when a request is over the model's window."""
    if protocol == "messages":
        return error_body(protocol, 400, f"prompt is too long: {tokens} tokens > {window} maximum")
    message = (
        f"This model's maximum context length is {window} tokens. However, your "
        f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
    )
    return error_body(protocol, 400, message, "context_length_exceeded")


# --- whole bodies ---------------------------------------------------------------------------


def usage(protocol: Protocol, prompt: int, completion: int) -> dict[str, Any]:
    if protocol == "chat":
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    if protocol == "responses":
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def body(protocol: Protocol, reply: Reply, model: str, prompt: int, serial: int) -> dict[str, Any]:
    completion = max(1, len(reply.text or "") // 4 + 8 * len(reply.calls))
    if protocol == "chat":
        return _chat_body(reply, model, usage("chat", prompt, completion), serial)
    if protocol == "responses":
        return _responses_body(reply, model, usage("responses", prompt, completion), serial)
    return _messages_body(reply, model, usage("messages", prompt, completion), serial)


def _chat_body(reply: Reply, model: str, use: dict[str, Any], serial: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.calls:
        message["tool_calls"] = [_chat_call(c) for c in reply.calls]
    finish = "tool_calls" if reply.calls else "stop"
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": use,
    }


def _chat_call(c: ToolCall) -> dict[str, Any]:
    return {
        "id": c.call_id,
        "type": "function",
        "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
    }


def output_items(reply: Reply, serial: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for number, c in enumerate(reply.calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{serial}_{number}",
                "call_id": c.call_id,
                "name": c.name,
                "arguments": json.dumps(dict(c.arguments)),
                "status": "completed",
            }
        )
    return items


def _responses_body(reply: Reply, model: str, use: dict[str, Any], serial: int) -> dict[str, Any]:
    return {
        **response_envelope(model, serial, "completed"),
        "output": output_items(reply, serial),
        "usage": use,
    }


def response_envelope(model: str, serial: int, status: str) -> dict[str, Any]:
    return {
        "id": f"resp_{serial}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": None,
    }


def content_blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text is not None:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [
        {"type": "tool_use", "id": c.call_id, "name": c.name, "input": dict(c.arguments)}
        for c in reply.calls
    ]
    return blocks


def _messages_body(reply: Reply, model: str, use: dict[str, Any], serial: int) -> dict[str, Any]:
    return {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content_blocks(reply),
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": use,
    }
