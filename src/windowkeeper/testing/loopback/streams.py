"""The loopback upstream's server-sent events, one generator per protocol.

Each yields complete SSE events (bytes); the server writes them one by one, so a client
sees a real stream. Text is split into ``reply.chunks`` deltas; tool-call arguments into
two. Usage comes where each provider puts it: Chat Completions in a final chunk with
empty ``choices`` (only with ``stream_options.include_usage``), Responses in
``response.completed``, Anthropic in ``message_start`` and ``message_delta``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .replies import (
    Reply,
    content_blocks,
    output_items,
    response_envelope,
    usage,
)


def _split(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, parts)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _data(value: object) -> bytes:
    return f"data: {json.dumps(value)}\n\n".encode()


def _event(kind: str, value: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(value)}\n\n".encode()


def chat_events(
    reply: Reply, model: str, prompt: int, include_usage: bool, serial: int
) -> Iterator[bytes]:
    base = {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _data({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.text:
        for piece in _split(reply.text, reply.chunks):
            yield chunk({"content": piece})
    for index, c in enumerate(reply.calls):
        arguments = json.dumps(dict(c.arguments))
        half = len(arguments) // 2
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": arguments[:half]},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    if include_usage:
        completion = max(1, len(reply.text or "") // 4)
        yield _data({**base, "choices": [], "usage": usage("chat", prompt, completion)})
    yield b"data: [DONE]\n\n"


def responses_events(reply: Reply, model: str, prompt: int, serial: int) -> Iterator[bytes]:
    sequence = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        return _event(kind, {"type": kind, "sequence_number": next(sequence), **fields})

    yield event("response.created", response=response_envelope(model, serial, "in_progress"))
    yield event("response.in_progress", response=response_envelope(model, serial, "in_progress"))
    items = output_items(reply, serial)
    for index, item in enumerate(items):
        yield from _responses_item_events(event, index, item, reply.chunks)
    completion = max(1, len(reply.text or "") // 4)
    done = {
        **response_envelope(model, serial, "completed"),
        "output": items,
        "usage": usage("responses", prompt, completion),
    }
    yield event("response.completed", response=done)


def _responses_item_events(
    event: Any, index: int, item: dict[str, Any], chunks: int
) -> Iterator[bytes]:
    if item["type"] == "message":
        text = item["content"][0]["text"]
        yield event(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "content": []},
        )
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        yield event("response.content_part.added", **where, part=part)
        for piece in _split(text, chunks):
            yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
        yield event("response.output_text.done", **where, text=text, logprobs=[])
        yield event("response.content_part.done", **where, part={**part, "text": text})
    else:
        yield event(
            "response.output_item.added",
            output_index=index,
            item={**item, "arguments": "", "status": "in_progress"},
        )
        arguments = item["arguments"]
        half = len(arguments) // 2
        for piece in (arguments[:half], arguments[half:]):
            yield event(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=piece,
            )
        yield event(
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=index,
            arguments=arguments,
        )
    yield event("response.output_item.done", output_index=index, item=item)


def messages_events(reply: Reply, model: str, prompt: int, serial: int) -> Iterator[bytes]:
    message: dict[str, Any] = {
        "id": f"msg_{serial}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": usage("messages", prompt, 1),
    }  # fmt: skip
    yield _event("message_start", {"type": "message_start", "message": message})
    yield _event("ping", {"type": "ping"})
    for index, block in enumerate(content_blocks(reply)):
        yield from _block_events(index, block, reply.chunks)
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    stop = "tool_use" if reply.calls else "end_turn"
    delta = {"stop_reason": stop, "stop_sequence": None}
    output = {"output_tokens": max(1, len(reply.text or "") // 4)}
    yield _event("message_delta", {"type": "message_delta", "delta": delta, "usage": output})
    yield _event("message_stop", {"type": "message_stop"})


def _block_events(index: int, block: dict[str, Any], chunks: int) -> Iterator[bytes]:
    def start(opened: dict[str, Any]) -> bytes:
        body = {"type": "content_block_start", "index": index, "content_block": opened}
        return _event("content_block_start", body)

    def delta(value: dict[str, Any]) -> bytes:
        body = {"type": "content_block_delta", "index": index, "delta": value}
        return _event("content_block_delta", body)

    if block["type"] == "text":
        yield start({"type": "text", "text": ""})
        for piece in _split(block["text"], chunks):
            yield delta({"type": "text_delta", "text": piece})
        return
    yield start({**block, "input": {}})
    partial = json.dumps(block["input"])
    half = len(partial) // 2
    for piece in (partial[:half], partial[half:]):
        yield delta({"type": "input_json_delta", "partial_json": piece})
