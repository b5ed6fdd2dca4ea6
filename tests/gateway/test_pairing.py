"""Valid pairing for strict providers (issue 25 point 9, design §1): wrong-typed bodies
that parse — an orphan ``tool_result`` (Messages), an orphan ``function_call_output``
(Responses), a call without its result in a single-message request (Chat) — reach the
upstream repaired, by the library's own pairing repair, through a real gateway and a
loopback upstream."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gwhelpers import gateway
from serving import MODEL, loopback_settings

from windowkeeper.testing.loopback import LoopbackUpstream, Reply

HEADERS = {"anthropic-version": "2023-06-01"}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "ls"}'}}  # fmt: skip

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "messages": ("/v1/messages", {"model": MODEL, "max_tokens": 64, "messages": [
        {"role": "user", "content": "run ls"},
        {"role": "assistant", "content": "running"},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "a.txt"},
            {"type": "text", "text": "and now?"}]},
    ]}),
    "responses": ("/v1/responses", {"model": MODEL, "input": [
        {"role": "user", "content": "run ls"},
        {"type": "function_call_output", "call_id": "call_gone", "output": "a.txt"},
        {"role": "user", "content": "and now?"},
    ]}),
    "chat": ("/v1/chat/completions", {"model": MODEL, "messages": [
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
    ]}),
}  # fmt: skip


def _orphans_and_unanswered(protocol: str, body: dict[str, Any]) -> list[str]:
    """What a strict provider refuses in ``body``: results without a call, calls
    without a result."""
    calls: list[str] = []
    results: list[str] = []
    if protocol == "messages":
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use":
                    calls.append(block["id"])
                if block.get("type") == "tool_result":
                    results.append(block["tool_use_id"])
    elif protocol == "responses":
        for item in body["input"] if isinstance(body["input"], list) else []:
            if item.get("type") == "function_call":
                calls.append(item["call_id"])
            if item.get("type") == "function_call_output":
                results.append(item["call_id"])
    else:
        for message in body["messages"]:
            calls += [c["id"] for c in message.get("tool_calls") or []]
            if message["role"] == "tool":
                results.append(message["tool_call_id"])
    return [f"result {r} without a call" for r in results if r not in calls] + [
        f"call {c} without a result" for c in calls if c not in results
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", list(CASES))
async def test_a_broken_pairing_reaches_the_upstream_repaired(protocol: str) -> None:
    path, body = CASES[protocol]
    assert _orphans_and_unanswered(protocol, body)  # the body is broken as sent
    with LoopbackUpstream(window=100_000, default=Reply.turn("ok")) as upstream:
        async with gateway(loopback_settings(upstream)) as client:
            response = await client.post(path, json=body, headers=HEADERS)
            assert response.status_code == 200, response.text[:300]
        (received,) = upstream.model_requests(protocol)  # type: ignore[arg-type]
    assert _orphans_and_unanswered(protocol, received.body) == []


@pytest.mark.anyio
async def test_a_valid_request_is_forwarded_byte_for_byte() -> None:
    body = {"model": MODEL, "messages": [
        {"role": "user", "content": "run ls"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
    ]}  # fmt: skip
    sent = json.dumps(body).encode()
    with LoopbackUpstream(window=100_000, default=Reply.turn("ok")) as upstream:
        async with gateway(loopback_settings(upstream)) as client:
            response = await client.post(
                "/v1/chat/completions", content=sent, headers={"content-type": "application/json"}
            )
            assert response.status_code == 200, response.text[:300]
        (received,) = upstream.model_requests("chat")
    assert received.raw == sent
