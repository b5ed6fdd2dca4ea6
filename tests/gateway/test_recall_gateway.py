"""``recall`` in gateway mode: offered once a session has archived content, answered by the
gateway itself (streamed and not, in every protocol), bounded, never seen by the client."""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import openai
import pytest
from serving import MODEL, loopback_settings, serving

from factories import long_session
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.adapters.responses import INSTRUCTIONS_KEY, to_responses
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.testing.loopback import LoopbackUpstream, Reply, call

HISTORY = long_session(rounds=30)
WINDOW = int(estimate_messages_tokens(HISTORY) / 0.9)
HANDLE = re.compile(r"\(ref (wk[0-9a-f]+)\)")


def recall_a_handle(protocol: str, body: dict[str, Any]) -> Reply:
    """The scripted model: recall a handle it was shown (a pruned stub's), else search."""
    history = {k: v for k, v in body.items() if k != "tools"}  # the tool's own example aside
    found = HANDLE.search(json.dumps(history))
    arguments = {"handle": found.group(1)} if found else {"query": "line 7"}
    return Reply.turn(None, call("recall", "call_recall_1", **arguments))


def ask(protocol: str, url: str, stream: bool) -> tuple[str, int]:
    """The client's final text and how many tool calls it was shown."""
    if protocol == "messages":
        system, messages = to_anthropic(HISTORY)
        kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 50, "system": system,
                                  "messages": messages}  # fmt: skip
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        try:
            if stream:
                with client.messages.stream(**kwargs) as s:
                    message = s.get_final_message()
            else:
                message = client.messages.create(**kwargs)
        finally:
            client.close()
        texts = [b.text for b in message.content if b.type == "text"]
        return "".join(texts), sum(b.type == "tool_use" for b in message.content)
    with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        if protocol == "chat":
            history: Any = HISTORY
            if stream:
                chunks = list(client.chat.completions.create(model=MODEL, messages=history,
                                                             stream=True))  # fmt: skip
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                calls = sum(len(c.choices[0].delta.tool_calls or []) for c in chunks if c.choices)
                return text, calls
            reply = client.chat.completions.create(model=MODEL, messages=history)
            return reply.choices[0].message.content or "", len(
                reply.choices[0].message.tool_calls or []
            )
        instructions, items = to_responses([{**HISTORY[0], INSTRUCTIONS_KEY: True}, *HISTORY[1:]])
        kwargs = {"model": MODEL, "instructions": instructions, "input": items}
        if stream:
            with client.responses.stream(**kwargs) as s:
                response = s.get_final_response()
        else:
            response = client.responses.create(**kwargs)
        return response.output_text, sum(i.type == "function_call" for i in response.output)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_the_gateway_answers_recall_and_the_client_sees_only_the_final_reply(
    loopback: LoopbackUpstream, protocol: str, stream: bool
) -> None:
    loopback.script(Reply.dynamic(recall_a_handle), Reply.turn("the fix was in refunds.py"))
    with serving(loopback_settings(loopback, context_lengths={MODEL: WINDOW})) as url:
        text, calls = ask(protocol, url, stream)
    assert (text, calls) == ("the fix was in refunds.py", 0)
    first, second = (r.body for r in loopback.model_requests())
    assert "recall" in json.dumps(first.get("tools"))  # offered: the session has an archive
    answered = json.dumps(second)
    assert "call_recall_1" in answered  # the model's call and the gateway's answer
    assert "[archived wk" in answered or "archived item(s) match" in answered
    assert "x" * 40 in answered  # the original tool output is back


def test_recall_rounds_are_bounded_and_mixed_calls_reach_the_client(
    loopback: LoopbackUpstream,
) -> None:
    loopback.script(*[Reply.dynamic(recall_a_handle) for _ in range(3)])
    settings = loopback_settings(loopback, context_lengths={MODEL: WINDOW}, recall_rounds=2)
    with serving(settings) as url:
        assert ask("chat", url, stream=False) == ("", 0)  # 1 + 2 rounds, then it stops
        assert len(loopback.model_requests()) == 3
        mixed = Reply.turn("reading", call("recall", "call_r", query="refund"),
                           call("read_file", "call_f", path="a.py"))  # fmt: skip
        loopback.script(mixed)
        with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
            reply = client.chat.completions.create(model=MODEL, messages=HISTORY)  # type: ignore[arg-type]
    calls = reply.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["read_file"]  # type: ignore[union-attr]
    assert len(loopback.model_requests()) == 4
