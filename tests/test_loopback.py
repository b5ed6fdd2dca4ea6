"""The loopback upstream speaks each protocol well enough for the official SDKs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from windowkeeper.testing.loopback import LoopbackUpstream, Reply, call


@pytest.fixture
def upstream() -> Iterator[LoopbackUpstream]:
    with LoopbackUpstream(models=[{"id": "m", "context_length": 9_000}]) as server:
        yield server


def test_chat_completions_plain_streamed_and_tool_calls(
    upstream: LoopbackUpstream, request: pytest.FixtureRequest
) -> None:
    upstream.script(
        Reply.turn("hello there"),
        Reply.turn("streamed text", chunks=4),
        Reply.turn(None, call("read", "call_1", path="a.py")),
    )
    client = openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0)
    request.addfinalizer(client.close)
    messages = [{"role": "user", "content": "hi"}]
    plain = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert plain.choices[0].message.content == "hello there"
    assert plain.usage is not None and plain.usage.prompt_tokens > 0
    stream = client.chat.completions.create(
        model="m",
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},  # type: ignore[arg-type]
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed text"
    assert chunks[-1].usage is not None
    tools = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    called = tools.choices[0].message.tool_calls
    assert called and called[0].id == "call_1"
    assert json.loads(called[0].function.arguments) == {"path": "a.py"}  # type: ignore[union-attr]
    assert [r.protocol for r in upstream.model_requests()] == ["chat"] * 3


def test_responses_plain_and_streamed(
    upstream: LoopbackUpstream, request: pytest.FixtureRequest
) -> None:
    upstream.script(Reply.turn("ok", call("shell", "call_9", cmd="ls")), Reply.turn("streamed"))
    client = openai.OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0)
    request.addfinalizer(client.close)
    response = client.responses.create(model="m", input="hi", instructions="be brief")
    assert response.output_text == "ok"
    calls = [item for item in response.output if item.type == "function_call"]
    assert calls[0].call_id == "call_9" and response.usage is not None
    with client.responses.stream(model="m", input=[{"role": "user", "content": "x"}]) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == "streamed" and final.output_text == "streamed"
    assert final.usage is not None and final.usage.input_tokens > 0


def test_anthropic_messages_streamed_tools_and_count_tokens(
    upstream: LoopbackUpstream, request: pytest.FixtureRequest
) -> None:
    upstream.script(Reply.turn("hi"), Reply.turn("let me look", call("read", "toolu_1", p="a")))
    client = anthropic.Anthropic(base_url=upstream.anthropic_url, api_key="k", max_retries=0)
    request.addfinalizer(client.close)
    messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hello"}]
    plain = client.messages.create(model="m", max_tokens=100, messages=messages, system="sys")
    assert plain.content[0].type == "text" and plain.usage.input_tokens > 0
    with client.messages.stream(model="m", max_tokens=100, messages=messages) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[1].input == {"p": "a"}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"
    counted = client.messages.count_tokens(model="m", messages=messages)
    assert counted.input_tokens > 0
    assert len(upstream.model_requests("messages")) == 2  # count_tokens takes no reply


def test_mid_conversation_system_messages_are_accepted_and_counted(
    upstream: LoopbackUpstream, request: pytest.FixtureRequest
) -> None:
    """Anthropic accepts ``system`` turns inside ``messages`` under the beta
    ``mid-conversation-system-*`` (Claude Code sends them), so the loopback does too, and
    counts their tokens like any other turn."""
    upstream.script(Reply.turn("hello"))
    client = anthropic.Anthropic(base_url=upstream.anthropic_url, api_key="k", max_retries=0)
    request.addfinalizer(client.close)
    beta = ["mid-conversation-system-2026-04-07"]
    plain: list[anthropic.types.beta.BetaMessageParam] = [{"role": "user", "content": "hi"}]
    mid: list[Any] = [*plain, {"role": "system", "content": "Reply in French. " * 40},
                      {"role": "user", "content": "Say hello"}]  # fmt: skip
    reply = client.beta.messages.create(model="m", max_tokens=10, betas=beta, messages=mid)
    assert reply.content[0].type == "text" and reply.content[0].text == "hello"
    counted = client.beta.messages.count_tokens(model="m", betas=beta, messages=mid)
    fewer = client.beta.messages.count_tokens(model="m", betas=beta, messages=plain)
    assert counted.input_tokens > fewer.input_tokens + 100  # the system turn is counted
    assert upstream.model_requests("messages")[0].body["messages"] == mid


def test_errors_in_each_protocol_shape_and_the_window(upstream: LoopbackUpstream) -> None:
    upstream.window = 50
    big = [{"role": "user", "content": "word " * 400}]
    chat = httpx.post(upstream.base_url + "/chat/completions", json={"model": "m", "messages": big})
    assert chat.status_code == 400 and chat.json()["error"]["code"] == "context_length_exceeded"
    msg = httpx.post(upstream.anthropic_url + "/v1/messages",
                     json={"model": "m", "max_tokens": 5, "messages": big})  # fmt: skip
    assert msg.status_code == 400 and "prompt is too long" in msg.json()["error"]["message"]
    assert upstream.pending == 0 and all(r.rejected for r in upstream.model_requests())
    missing = httpx.post(upstream.anthropic_url + "/v1/nope", json={})
    assert missing.status_code == 404
    assert httpx.get(upstream.base_url + "/models").json()["data"][0]["id"] == "m"
