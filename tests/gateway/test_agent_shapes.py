"""Request shapes the current agents send, through a real gateway on loopback.

Claude Code 2.1 (default model) sends the beta ``mid-conversation-system-2026-04-07``:
``system`` turns between user turns. Codex first tries Responses over WebSocket
(``GET /v1/responses`` with an upgrade) and falls back to HTTP at once only on a 426.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import pytest
from gwhelpers import gateway
from serving import MODEL, loopback_settings, running, serving

from windowkeeper.core.config import CompressionConfig
from windowkeeper.gateway import create_app
from windowkeeper.testing.loopback import LoopbackUpstream, Reply

websockets_client = pytest.importorskip("websockets.sync.client")
from websockets.exceptions import InvalidStatus  # noqa: E402

MID_BETA = "mid-conversation-system-2026-04-07"
UNKNOWN_BETA = "some-beta-nobody-knows-2099-01-01"
INSTRUCTION = "Available agent types: general-purpose, Explore."


def test_claude_codes_mid_conversation_system_message_is_forwarded_as_sent() -> None:
    """The repro of ../shared/repro/claude_code_mid_system.py: a 400 before, now the
    upstream gets the messages and the beta header exactly as the client sent them."""
    messages: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": INSTRUCTION},
        {"role": "user", "content": "Say hello"},
    ]
    with LoopbackUpstream() as upstream:
        upstream.script(Reply.turn("hello"))
        with serving(loopback_settings(upstream)) as base:
            client = anthropic.Anthropic(base_url=base, api_key="sk-ant-dummy", max_retries=0)
            reply = client.beta.messages.create(
                model=MODEL, max_tokens=64, betas=[MID_BETA, UNKNOWN_BETA], messages=messages
            )
        (received,) = upstream.model_requests("messages")
    assert reply.content[0].type == "text" and reply.content[0].text == "hello"
    assert received.body["messages"] == messages
    assert received.headers["anthropic-beta"] == f"{MID_BETA},{UNKNOWN_BETA}"


def _long_claude_code_history(rounds: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "Fix the parser bug in parse.py."}]
    for n in range(rounds):
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
               "input": {"file_path": f"src/f{n}.py"}}  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}",
                  "content": f"def f{n}():\n" + f"    return {n}\n" * 150}  # fmt: skip
        out += [{"role": "assistant", "content": [{"type": "text", "text": f"Reading {n}."}, use]},
                {"role": "user", "content": [result]}]  # fmt: skip
        if n == 3:
            out.append({"role": "system", "content": INSTRUCTION})
    out.append({"role": "user", "content": "Now run the tests."})
    return out


@pytest.mark.anyio
async def test_compaction_keeps_a_mid_conversation_system_message_in_place() -> None:
    """A mid-conversation system message in the compacted middle goes upstream verbatim
    as its own system turn, before the handoff; the handoff does not quote it. The next
    request reuses the compacted prefix, the instruction still in it once."""
    history = _long_claude_code_history(14)
    body = {"model": MODEL, "max_tokens": 64, "system": "You are Claude Code.",
            "messages": history}  # fmt: skip
    grown = {**body, "messages": [*history, {"role": "assistant", "content": "ok"},
                                  {"role": "user", "content": "And the docs?"}]}  # fmt: skip
    with LoopbackUpstream(default=Reply.turn("ok")) as upstream:
        compression = CompressionConfig(prune_only_ratio=0.01)
        window = {MODEL: 6_000}
        settings = loopback_settings(upstream, context_lengths=window, compression=compression)
        async with gateway(settings) as client:
            headers = {"anthropic-version": "2023-06-01", "anthropic-beta": MID_BETA}
            responses = [await client.post("/v1/messages", json=b, headers=headers)
                         for b in (body, grown)]  # fmt: skip
        received = upstream.model_requests("messages")
    assert [r.status_code for r in responses] == [200, 200], responses[-1].text
    assert responses[0].headers["x-windowkeeper-compacted"] == "true"
    for request, client_sent in zip(received, (body, grown), strict=True):
        sent = request.body["messages"]
        assert len(sent) < len(client_sent["messages"])
        systems = [i for i, m in enumerate(sent) if m["role"] == "system"]
        assert [sent[i] for i in systems] == [{"role": "system", "content": INSTRUCTION}]
        texts = [json.dumps(m["content"]) for m in sent]
        (handoff,) = [i for i, text in enumerate(texts) if "windowkeeper handoff" in text]
        assert systems[0] < handoff and INSTRUCTION not in texts[handoff]


@contextmanager
def _gateway_under(server: str, upstream: LoopbackUpstream) -> Iterator[str]:
    if server == "serve":  # the server ``windowkeeper serve`` runs
        with serving(loopback_settings(upstream)) as base:
            yield base
        return
    app = create_app(loopback_settings(upstream))
    with running(app, http="h11", ws="websockets-sansio", lifespan="on") as base:
        yield base


@pytest.mark.parametrize("server", ["serve", "uvicorn-websockets"])
def test_a_websocket_upgrade_is_refused_with_426(server: str) -> None:
    """Codex's Responses-over-WebSocket attempt gets the status it falls back from at once
    (426; a 405 or 403 costs it ~6 s of retries a run), in the OpenAI error shape."""
    with LoopbackUpstream() as upstream, _gateway_under(server, upstream) as base:
        url = base.replace("http://", "ws://") + "/v1/responses"
        with pytest.raises(InvalidStatus) as refused:
            websockets_client.connect(url, additional_headers={"authorization": "Bearer k"})
        assert upstream.requests == []
    response = refused.value.response
    assert response.status_code == 426
    error = json.loads(response.body)["error"]
    assert "WebSocket is not served" in error["message"] and "HTTP" in error["message"]
