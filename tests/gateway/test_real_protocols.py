"""Long real sessions replayed turn by turn through each protocol (Chat Completions,
Responses, Anthropic Messages) against a real uvicorn gateway: the upstream — which
refuses anything over its window, as a provider does — never gets such a request, and
the client always gets a normal answer.

Each transcript is converted to the protocol once, as a whole (an agent's history only
grows), and every request is a prefix of it that ends before a model turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from serving import MODEL, loopback_settings, serving

from realdata import real_session_paths
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.adapters.responses import INSTRUCTIONS_KEY, to_responses
from windowkeeper.core.messages import Message, ToolSchema
from windowkeeper.testing.loopback import LoopbackUpstream, Reply, request_tokens

CASES = {"cc_spotter_4d5611e5": 8_000, "msa_dschat_django__django-11910": 16_000}
PATHS = [p for p in real_session_paths() if p.stem in CASES]

pytestmark = [
    pytest.mark.real_sessions,
    pytest.mark.skipif(not PATHS, reason="../shared/data/sessions is not available"),
]


def _functions(tools: list[ToolSchema] | None) -> list[dict[str, Any]]:
    return [t["function"] for t in tools or [] if isinstance(t.get("function"), dict)]


def chat_requests(messages: list[Message], tools: list[ToolSchema] | None) -> list[Any]:
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0]
    extra = {"tools": tools} if tools else {}
    return [{"model": MODEL, "messages": messages[:i], **extra} for i in turns]


def responses_requests(messages: list[Message], tools: list[ToolSchema] | None) -> list[Any]:
    instructions, items = to_responses([{**messages[0], INSTRUCTIONS_KEY: True}, *messages[1:]])
    schemas = [{"type": "function", "name": f["name"], "description": f.get("description", ""),
                "parameters": f.get("parameters", {})} for f in _functions(tools)]  # fmt: skip
    extra = {"tools": schemas} if schemas else {}
    model = [i for i, item in enumerate(items) if _is_model_item(item)]
    starts = [i for i in model if i > 0 and not _is_model_item(items[i - 1])]
    return [{"model": MODEL, "instructions": instructions, "input": items[:i], **extra}
            for i in starts]  # fmt: skip


def _is_model_item(item: dict[str, Any]) -> bool:
    return item.get("role") == "assistant" or item.get("type") in ("function_call", "reasoning")


def messages_requests(messages: list[Message], tools: list[ToolSchema] | None) -> list[Any]:
    system, turns = to_anthropic(messages)
    schemas = [{"name": f["name"], "description": f.get("description", ""),
                "input_schema": f.get("parameters", {"type": "object"})}
               for f in _functions(tools)]  # fmt: skip
    extra: dict[str, Any] = {"tools": schemas} if schemas else {}
    if system is not None:
        extra["system"] = system
    ends = [i for i, m in enumerate(turns) if m["role"] == "assistant" and i > 0]
    return [{"model": MODEL, "max_tokens": 1024, "messages": turns[:i], **extra} for i in ends]


BUILD = {"chat": chat_requests, "responses": responses_requests, "messages": messages_requests}
PATH = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


@pytest.mark.parametrize("protocol", list(BUILD))
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_a_real_session_never_overflows_the_upstream(path: Path, protocol: str) -> None:
    window = CASES[path.stem]
    conversation = load_conversation(path)
    bodies = BUILD[protocol](conversation.messages, conversation.tools)
    headers = {"X-Windowkeeper-Session": path.stem, "anthropic-version": "2023-06-01"}
    with LoopbackUpstream(window=window, default=Reply.turn("ok")) as upstream:
        settings = loopback_settings(upstream, context_lengths={MODEL: window})
        with serving(settings) as url, httpx.Client(base_url=url, timeout=60) as client:
            compacted = 0
            for number, body in enumerate(bodies):
                response = client.post(PATH[protocol], json=body, headers=headers)
                assert response.status_code == 200, f"turn {number}: {response.text[:300]}"
                compacted += response.headers["x-windowkeeper-compacted"] == "true"
        received = upstream.model_requests(protocol)  # type: ignore[arg-type]
    assert len(received) == len(bodies) and compacted > 0
    sizes = [request_tokens(protocol, r.body) for r in received]  # type: ignore[arg-type]
    assert not any(r.rejected for r in received)
    assert max(sizes) < window, f"largest request {max(sizes):,} tokens"
    private = (b'"_responses_items"', b'"_anthropic_source"', b'"_anthropic_thinking"')
    assert not any(key in r.raw for r in received for key in private)  # design §1
