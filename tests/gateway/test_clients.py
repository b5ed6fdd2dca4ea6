"""The official ``openai`` and ``anthropic`` SDKs as the agents, through a real uvicorn
gateway to the three-protocol loopback upstream: plain, streamed, tool rounds, and a
history long enough that the gateway compacts it (the client still sees normal answers)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest
from serving import MODEL, loopback_settings, serving

from factories import long_session
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.adapters.responses import INSTRUCTIONS_KEY, to_responses
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.testing.loopback import LoopbackUpstream, Reply, call, request_tokens

HISTORY = long_session(rounds=30)
WINDOW = int(estimate_messages_tokens(HISTORY) / 0.9)  # the history fills 90%: compaction


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-client", max_retries=0)


def test_openai_chat_completions_plain_streamed_and_a_tool_round(
    loopback: LoopbackUpstream,
) -> None:
    loopback.script(
        Reply.turn(None, call("read_file", "call_a", path="a.py")),
        Reply.turn("a.py prints 1"),
        Reply.turn("streamed answer", chunks=5),
    )
    with serving(loopback_settings(loopback)) as url, _client(url) as client:
        messages: list[Any] = [{"role": "user", "content": "what does a.py print?"}]
        first = client.chat.completions.create(model=MODEL, messages=messages)
        calls = first.choices[0].message.tool_calls
        assert calls and calls[0].function.name == "read_file"  # type: ignore[union-attr]
        result = {"role": "tool", "tool_call_id": calls[0].id, "content": "print(1)"}
        messages += [first.choices[0].message.model_dump(exclude_none=True), result]
        second = client.chat.completions.create(model=MODEL, messages=messages)
        assert second.choices[0].message.content == "a.py prints 1"
        stream = client.chat.completions.create(model=MODEL, messages=messages, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "streamed answer"
    bodies = [r.body for r in loopback.model_requests("chat")]
    assert bodies[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_a",
                                         "content": "print(1)"}  # fmt: skip
    assert bodies[2]["stream_options"] == {"include_usage": True}  # usage captured


def test_openai_responses_plain_streamed_and_a_tool_round(loopback: LoopbackUpstream) -> None:
    loopback.script(
        Reply.turn(None, call("shell", "call_r", command="ls")),
        Reply.turn("two files"),
        Reply.turn("streamed reply"),
    )
    with serving(loopback_settings(loopback)) as url, _client(url) as client:
        first = client.responses.create(model=MODEL, instructions="Be brief.", input="list files")
        call_item = next(i for i in first.output if i.type == "function_call")
        items: list[Any] = [{"role": "user", "content": "list files"},
                            *[i.model_dump(exclude_none=True) for i in first.output],
                            {"type": "function_call_output", "call_id": call_item.call_id,
                             "output": "a.py b.py"}]  # fmt: skip
        second = client.responses.create(model=MODEL, instructions="Be brief.", input=items)
        assert second.output_text == "two files"
        with client.responses.stream(model=MODEL, input=items) as stream:
            final = stream.get_final_response()
    assert final.output_text == "streamed reply"
    sent = loopback.model_requests("responses")[1].body
    assert sent["instructions"] == "Be brief." and sent["input"] == items  # unchanged


def test_anthropic_messages_plain_streamed_tool_use_and_count_tokens(
    loopback: LoopbackUpstream,
) -> None:
    loopback.script(
        Reply.turn("Let me read it.", call("read", "toolu_1", path="a.py")),
        Reply.turn("It prints 1."),
        Reply.turn("Streamed."),
    )
    with serving(loopback_settings(loopback)) as url:
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-client", max_retries=0)
        try:
            messages: list[Any] = [{"role": "user", "content": "what does a.py print?"}]
            first = client.messages.create(model=MODEL, max_tokens=100, system="Be exact.",
                                           messages=messages)  # fmt: skip
            use = next(b for b in first.content if b.type == "tool_use")
            result = {"type": "tool_result", "tool_use_id": use.id, "content": "1"}
            messages += [
                {"role": "assistant", "content": [b.model_dump() for b in first.content]},
                {"role": "user", "content": [result]},
            ]
            second = client.messages.create(model=MODEL, max_tokens=100, messages=messages)
            assert second.content[0].text == "It prints 1."  # type: ignore[union-attr]
            with client.messages.stream(model=MODEL, max_tokens=100, messages=messages) as s:
                final = s.get_final_message()
            counted = client.messages.count_tokens(model=MODEL, messages=messages)
        finally:
            client.close()
    assert final.content[0].text == "Streamed."  # type: ignore[union-attr]
    assert counted.input_tokens > 0
    sent = loopback.model_requests("messages")[1].body
    assert sent["messages"] == json.loads(json.dumps(messages))  # the client's own blocks
    assert loopback.requests[-1].path == "/v1/messages/count_tokens"


def _ask_anthropic(url: str) -> tuple[str, str]:
    system, messages = to_anthropic(HISTORY)
    kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 50, "system": system,
                              "messages": messages}  # fmt: skip
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    try:
        reply = client.messages.create(**kwargs)
        with client.messages.stream(**kwargs) as stream:
            streamed = stream.get_final_message()
    finally:
        client.close()
    return reply.content[0].text, streamed.content[0].text  # type: ignore[union-attr]


def _ask_chat(url: str) -> tuple[str, str]:
    history: Any = HISTORY
    with _client(url) as client:
        reply = client.chat.completions.create(model=MODEL, messages=history)
        chunks = client.chat.completions.create(model=MODEL, messages=history, stream=True)
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return reply.choices[0].message.content or "", streamed


def _ask_responses(url: str) -> tuple[str, str]:
    instructions, items = to_responses([{**HISTORY[0], INSTRUCTIONS_KEY: True}, *HISTORY[1:]])
    kwargs: dict[str, Any] = {"model": MODEL, "instructions": instructions, "input": items}
    with _client(url) as client:
        text = client.responses.create(**kwargs).output_text
        with client.responses.stream(**kwargs) as stream:
            streamed = stream.get_final_response().output_text
    return text, streamed


ASK = {"chat": _ask_chat, "responses": _ask_responses, "messages": _ask_anthropic}
HISTORY_KEY = {"chat": "messages", "responses": "input", "messages": "messages"}


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_a_long_history_is_compacted_and_the_client_sees_a_normal_answer(
    loopback: LoopbackUpstream, protocol: str
) -> None:
    loopback.script(Reply.turn("compacted fine"), Reply.turn("streamed fine"))
    settings = loopback_settings(loopback, context_lengths={MODEL: WINDOW})
    with serving(settings) as url:
        answers = ASK[protocol](url)
    assert answers == ("compacted fine", "streamed fine")
    first, second = (r.body for r in loopback.model_requests())
    key = HISTORY_KEY[protocol]
    assert request_tokens(protocol, first) < 0.6 * WINDOW  # type: ignore[arg-type]
    assert first[key] == second[key]  # compacted once; the second request reused the prefix
    assert not any(r.rejected for r in loopback.model_requests())


def test_the_query_string_is_forwarded_as_claude_code_sends_it(loopback: LoopbackUpstream) -> None:
    loopback.script(Reply.turn("beta ok"))
    body = {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"anthropic-version": "2023-06-01", "anthropic-beta": "context-1m-2025-08-07"}
    with serving(loopback_settings(loopback)) as url:
        reply = httpx.post(url + "/v1/messages?beta=true", json=body, headers=headers)
        counted = httpx.post(url + "/v1/messages/count_tokens?beta=true", json=body,
                             headers=headers)  # fmt: skip
    assert reply.status_code == counted.status_code == 200
    paths = [r.path for r in loopback.requests]
    assert paths == ["/v1/messages?beta=true", "/v1/messages/count_tokens?beta=true"]
    assert loopback.requests[0].headers["anthropic-beta"] == "context-1m-2025-08-07"
