"""The gateway end to end: httpx → ASGI app → real HTTP → scripted loopback upstream."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from gwhelpers import MODEL, chat_body, gateway, settings_for

from factories import assistant, long_session, system, user
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.store import MemoryStore, SessionRecord, open_store
from windowkeeper.summary.llm.config import LLMSummarizerConfig
from windowkeeper.testing import OpenAITestServer, Step, unused_port

pytestmark = pytest.mark.anyio


def overflow(status: int = 400, code: str = "context_length_exceeded") -> Step:
    message = "This model's maximum context length is exceeded; reduce the length"
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return Step.error(status, body)


def window_for(history: list[dict[str, Any]], share: float = 0.9) -> int:
    """A context length at which ``history`` fills ``share`` of the window (over 85%)."""
    return int(estimate_messages_tokens(history) / share)


def sent(server: OpenAITestServer, index: int = -1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = server.chat_requests[index].body["messages"]
    return messages


async def test_small_request_passes_through_unchanged(upstream: OpenAITestServer) -> None:
    upstream.script(Step.completion("hi there"))
    body = chat_body([system(), user("Hello")], temperature=0.2, user="u-1")
    async with gateway(settings_for(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "hi there"
    assert upstream.chat_requests[0].body == body
    assert response.headers["x-windowkeeper-compacted"] == "false"
    assert int(response.headers["x-windowkeeper-prompt-tokens-estimate"]) > 0


async def test_long_history_is_compacted_then_the_prefix_is_reused(
    upstream: OpenAITestServer,
) -> None:
    history = long_session(rounds=40)
    settings = settings_for(upstream, context_lengths={MODEL: window_for(history)})
    upstream.script(Step.completion("first"), Step.completion("second"))
    async with gateway(settings) as client:
        first = await client.post("/v1/chat/completions", json=chat_body(history))
        compacted = sent(upstream)
        follow_up = [*history, assistant("refunds.py rounds half up now."), user("Thanks. Now?")]
        second = await client.post("/v1/chat/completions", json=chat_body(follow_up))
        key = first.headers["x-windowkeeper-session"]
        status = (await client.get(f"/v1/windowkeeper/sessions/{key}")).json()
    assert first.status_code == second.status_code == 200
    assert first.headers["x-windowkeeper-compacted"] == "true"
    assert len(compacted) < len(history)
    assert violations(compacted) == []
    assert compacted[-1] == history[-1]  # the newest user message, verbatim
    assert sent(upstream) == [*compacted, *follow_up[-2:]]  # C + the two new messages
    assert second.headers["x-windowkeeper-compacted"] == "true"
    assert status["compactions"] == 1 and status["covered_messages"] == len(history)
    assert status["client_messages"] == len(follow_up)


async def test_an_edited_history_starts_over(upstream: OpenAITestServer) -> None:
    history = long_session(rounds=40)
    settings = settings_for(upstream, context_lengths={MODEL: window_for(history)})
    upstream.script(Step.completion("a"), Step.completion("b"))
    edited = [*history[:2], assistant("A different first answer."), user("Start again?")]
    async with gateway(settings) as client:
        first = await client.post("/v1/chat/completions", json=chat_body(history))
        second = await client.post("/v1/chat/completions", json=chat_body(edited))
        key = first.headers["x-windowkeeper-session"]
        status = (await client.get(f"/v1/windowkeeper/sessions/{key}")).json()
    assert second.headers["x-windowkeeper-session"] == first.headers["x-windowkeeper-session"]
    assert sent(upstream) == edited  # the client's own list, not the old prefix
    assert status["forks"] == 1 and status["covered_messages"] == 0


@pytest.mark.parametrize("error", [overflow(413, "too_large"), overflow(400)])
async def test_overflow_recovers_and_retries(upstream: OpenAITestServer, error: Step) -> None:
    history = long_session(rounds=40)
    upstream.script(error, Step.completion("recovered"))
    async with gateway(settings_for(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=chat_body(history))
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "recovered"
    assert len(sent(upstream, 0)) == len(history)
    smaller = estimate_messages_tokens(sent(upstream, 1)) < estimate_messages_tokens(history)
    assert smaller and violations(sent(upstream, 1)) == []


async def test_repeated_overflows_exhaust_compression(upstream: OpenAITestServer) -> None:
    upstream.script(*[overflow() for _ in range(5)])
    async with gateway(settings_for(upstream)) as client:
        response = await client.post(
            "/v1/chat/completions", json=chat_body(long_session(rounds=40))
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert "compression exhausted" in error["message"]
    assert error["code"] == "context_length_exceeded"
    assert response.headers["x-windowkeeper-error"] == "compression_exhausted"
    assert 2 <= len(upstream.chat_requests) <= 4  # bounded: max 3 recoveries


async def test_upstream_401_passes_through(upstream: OpenAITestServer) -> None:
    body = {"error": {"message": "Incorrect API key provided", "type": "auth", "code": "bad_key"}}
    upstream.script(Step.error(401, body))
    async with gateway(settings_for(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=chat_body([user("hi")]))
    assert response.status_code == 401 and response.json() == body


async def test_connection_refused_is_a_502(upstream: OpenAITestServer) -> None:
    settings = settings_for(upstream, upstream_base_url=f"http://127.0.0.1:{unused_port()}/v1")
    async with gateway(settings) as client:
        response = await client.post("/v1/chat/completions", json=chat_body([user("hi")]))
    assert response.status_code == 502
    assert "cannot reach the upstream" in response.json()["error"]["message"]


def sse_events(text: str) -> list[Any]:
    datas = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return [d if d == "[DONE]" else json.loads(d) for d in datas]


def usage_stream(content: str, prompt_tokens: int) -> Step:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": content}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 2}},
    ]
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Step("raw", status=200, body=text, content_type="text/event-stream")


async def test_streaming_passthrough(upstream: OpenAITestServer) -> None:
    upstream.script(Step.stream("hello streaming world", chunks=4))
    body = chat_body([system(), user("Stream please")], stream=True)
    async with gateway(settings_for(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=body)
    events = sse_events(response.text)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1])
    assert text == "hello streaming world" and events[-1] == "[DONE]"
    assert upstream.chat_requests[0].body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("client_wants_usage", [False, True])
async def test_streaming_usage_is_captured(
    upstream: OpenAITestServer, client_wants_usage: bool
) -> None:
    upstream.script(usage_stream("ok", 4321))
    extra = {"stream_options": {"include_usage": True}} if client_wants_usage else {}
    body = chat_body([user("Stream please")], stream=True, **extra)
    async with gateway(settings_for(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=body)
        key = response.headers["x-windowkeeper-session"]
        status = (await client.get(f"/v1/windowkeeper/sessions/{key}")).json()
    assert status["last_prompt_tokens"] == 4321
    usage_chunks = [e for e in sse_events(response.text) if e != "[DONE]" and "usage" in e]
    assert bool(usage_chunks) is client_wants_usage


async def test_streaming_overflow_before_the_first_byte_recovers(
    upstream: OpenAITestServer,
) -> None:
    history = long_session(rounds=40)
    upstream.script(overflow(), Step.stream("after recovery"))
    async with gateway(settings_for(upstream)) as client:
        response = await client.post("/v1/chat/completions", json=chat_body(history, stream=True))
    assert response.status_code == 200
    assert "after recovery" in "".join(
        e["choices"][0]["delta"].get("content", "") for e in sse_events(response.text)[:-1]
    )
    assert estimate_messages_tokens(sent(upstream, 1)) < estimate_messages_tokens(history)


async def test_models_are_proxied_and_give_the_window(upstream: OpenAITestServer) -> None:
    upstream.script(Step.completion("ok"))
    async with gateway(settings_for(upstream, context_lengths={})) as client:
        models = await client.get("/v1/models")
        ok = await client.post(
            "/v1/chat/completions", json={"model": "listed-model", "messages": [user("x")]}
        )
        unknown = await client.post(
            "/v1/chat/completions", json={"model": "mystery", "messages": [user("x")]}
        )
        key = ok.headers["x-windowkeeper-session"]
        status = (await client.get(f"/v1/windowkeeper/sessions/{key}")).json()
    assert models.status_code == 200
    assert models.json()["data"][0]["id"] == "listed-model"
    assert ok.status_code == 200 and status["context_length"] == 50_000
    assert unknown.status_code == 400
    message = unknown.json()["error"]["message"]
    assert "context window of model 'mystery' is unknown" in message
    assert "--context-length" in message


async def test_healthz_and_unknown_session(upstream: OpenAITestServer) -> None:
    async with gateway(settings_for(upstream)) as client:
        health = await client.get("/healthz")
        missing = await client.get("/v1/windowkeeper/sessions/nope")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert missing.status_code == 404


async def test_status_never_shows_message_text(upstream: OpenAITestServer) -> None:
    upstream.script(Step.completion("ok"))
    secret = "the launch code is 0000-SWORDFISH"
    headers = {"X-Windowkeeper-Session": "agent-7"}
    async with gateway(settings_for(upstream)) as client:
        await client.post("/v1/chat/completions", json=chat_body([user(secret)]), headers=headers)
        response = await client.get("/v1/windowkeeper/sessions/agent-7")
    assert response.status_code == 200
    assert "SWORDFISH" not in response.text
    status = response.json()
    assert status["requests"] == 1 and status["threshold_tokens"] > 0
    assert status["hygiene_threshold"] == 0.85 and status["hard_message_limit"] == 5_000


async def test_header_session_ids_separate_sessions(upstream: OpenAITestServer) -> None:
    upstream.script(*[Step.completion("ok") for _ in range(3)])
    messages = [system(), user("Same opening")]
    async with gateway(settings_for(upstream)) as client:
        a = await client.post("/v1/chat/completions", json=chat_body(messages),
                              headers={"X-Windowkeeper-Session": "a"})  # fmt: skip
        b = await client.post("/v1/chat/completions", json=chat_body(messages),
                              headers={"X-Windowkeeper-Session": "b"})  # fmt: skip
        c = await client.post("/v1/chat/completions", json=chat_body(messages))
    assert [r.headers["x-windowkeeper-session"] for r in (a, b)] == ["a", "b"]
    assert c.headers["x-windowkeeper-session"].startswith("fp-")
    assert all("x-windowkeeper-session" not in r.headers for r in upstream.chat_requests)


async def test_headers_forwarded_without_hop_by_hop(upstream: OpenAITestServer) -> None:
    upstream.script(Step.completion("ok"), Step.completion("ok"))
    headers = {
        "Authorization": "Bearer client-key",
        "OpenAI-Organization": "org-1",
        "Connection": "keep-alive, x-private",
        "X-Private": "hop",
        "TE": "trailers",
    }
    async with gateway(settings_for(upstream)) as client:
        await client.post("/v1/chat/completions", json=chat_body([user("a")]), headers=headers)
    async with gateway(settings_for(upstream, upstream_api_key="gateway-key")) as client:
        await client.post("/v1/chat/completions", json=chat_body([user("b")]), headers=headers)
    passed, replaced = (r.headers for r in upstream.chat_requests)
    assert passed["authorization"] == "Bearer client-key"
    assert passed["openai-organization"] == "org-1"
    assert "x-private" not in passed and "te" not in passed
    assert replaced["authorization"] == "Bearer gateway-key"


async def test_hard_message_limit_compacts(upstream: OpenAITestServer) -> None:
    history = [system(), user("Task: tidy up.")]
    for n in range(40):
        history += [assistant(f"Step {n} done."), user(f"Continue {n}.")]
    upstream.script(Step.completion("ok"))
    async with gateway(settings_for(upstream, hard_message_limit=50)) as client:
        response = await client.post("/v1/chat/completions", json=chat_body(history))
    assert response.headers["x-windowkeeper-compacted"] == "true"
    assert len(sent(upstream)) < len(history) and violations(sent(upstream)) == []


async def test_invalid_request_is_a_400(upstream: OpenAITestServer) -> None:
    async with gateway(settings_for(upstream)) as client:
        bad = await client.post("/v1/chat/completions", content=b"{not json")
        wrong = await client.post("/v1/chat/completions", json={"model": MODEL, "messages": 3})
    assert bad.status_code == wrong.status_code == 400
    assert "messages" in wrong.json()["error"]["message"]
    assert upstream.chat_requests == []


@pytest.mark.parametrize(
    ("extra", "raw", "field"),
    [
        ({"tools": [1]}, None, "tools"),
        ({"tools": ["bash"]}, None, "tools"),
        ({"stream": True, "stream_options": "x"}, None, "stream_options"),
        ({"stream": True, "stream_options": [1]}, None, "stream_options"),
        ({}, b'{"model": "m", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "request body"),
    ],
    ids=["tools-int", "tools-str", "stream-options-str", "stream-options-list", "deep"],
)
async def test_malformed_fields_are_a_400_in_openai_shape(
    upstream: OpenAITestServer, extra: dict[str, Any], raw: bytes | None, field: str
) -> None:
    body = raw or json.dumps(chat_body([user("hi")], **extra)).encode()
    headers = {"Content-Type": "application/json"}
    async with gateway(settings_for(upstream)) as client:
        response = await client.post("/v1/chat/completions", content=body, headers=headers)
    assert response.status_code == 400
    assert field in response.json()["error"]["message"]
    assert upstream.chat_requests == []


async def test_concurrent_requests_of_one_session_serialize(upstream: OpenAITestServer) -> None:
    history = long_session(rounds=40)
    settings = settings_for(upstream, context_lengths={MODEL: window_for(history)})
    upstream.script(Step.delay(0.2, Step.completion("one")), Step.completion("two"))
    headers = {"X-Windowkeeper-Session": "shared"}
    results: list[int] = []
    async with gateway(settings) as client:

        async def post() -> None:
            r = await client.post("/v1/chat/completions", json=chat_body(history), headers=headers)
            results.append(r.status_code)

        async with anyio.create_task_group() as group:
            group.start_soon(post)
            group.start_soon(post)
        status = (await client.get("/v1/windowkeeper/sessions/shared")).json()
    assert results == [200, 200]
    first, second = sent(upstream, 0), sent(upstream, 1)
    assert first == second and len(first) < len(history)  # the second reused the prefix
    assert status["compactions"] == 1 and status["covered_messages"] == len(history)


async def test_sessions_persist_across_gateway_instances(
    upstream: OpenAITestServer, durable_url: str
) -> None:
    history = long_session(rounds=40)
    settings = settings_for(upstream, context_lengths={MODEL: window_for(history)})
    upstream.script(Step.completion("one"), Step.completion("two"))
    headers = {"X-Windowkeeper-Session": "durable"}
    with open_store(durable_url) as store:
        async with gateway(settings, store) as client:
            await client.post("/v1/chat/completions", json=chat_body(history), headers=headers)
    compacted = sent(upstream)
    follow_up = [*history, assistant("Done."), user("And the tests?")]
    with open_store(durable_url) as store:
        async with gateway(settings, store) as client:
            cold = (await client.get("/v1/windowkeeper/sessions/durable")).json()
            response = await client.post(
                "/v1/chat/completions", json=chat_body(follow_up), headers=headers
            )
            status = (await client.get("/v1/windowkeeper/sessions/durable")).json()
        record = store.get_session(status["store_session_id"])
        rows = store.load(record.id, include_archived=True).rows
    assert cold["loaded"] is False and cold["compactions"] == 1
    assert response.status_code == 200
    assert sent(upstream) == [*compacted, *follow_up[-2:]]  # the prefix survived a restart
    assert status["compression_count"] == 1  # the guard state too
    assert [r.message for r in rows if r.origin == "append"] == follow_up


async def test_a_cut_stream_still_settles_and_releases_the_session(
    upstream: OpenAITestServer,
) -> None:
    upstream.script(Step.stream("abcdefghi", chunks=3, cut_after=1), Step.completion("next"))
    headers = {"X-Windowkeeper-Session": "cut"}
    async with gateway(settings_for(upstream)) as client:
        body = chat_body([user("go")], stream=True)
        cut = await client.post("/v1/chat/completions", headers=headers, json=body)
        more = chat_body([user("go"), assistant("abc"), user("more")])
        with anyio.fail_after(5):  # a leaked session lock would hang here
            after = await client.post("/v1/chat/completions", headers=headers, json=more)
    assert cut.status_code == 200 and "abc" in cut.text
    assert after.status_code == 200


async def test_configured_llm_summarizer_writes_the_handoff(upstream: OpenAITestServer) -> None:
    history = long_session(rounds=40)
    upstream.script(Step.completion("answer"))
    with OpenAITestServer() as summary_server:
        summary_server.script(Step.completion("## Next Step\nShip the refund fix (LLM handoff)."))
        settings = settings_for(
            upstream,
            context_lengths={MODEL: window_for(history)},
            # In the foreground: in the background this request, under the window, would
            # go out unchanged (tests/gateway/test_background_gateway.py follows that).
            compression=CompressionConfig(prune_only_ratio=0.01, background=False),
            summary=LLMSummarizerConfig(
                model="summ", base_url=summary_server.base_url, timeout=5.0,
                # One prompt for the whole history (the default cap, 160,000 characters,
                # is about this history's size: chunking is not what this test is about).
                context_length=1_000_000, max_input_chars=400_000,
            ),
        )  # fmt: skip
        async with gateway(settings) as client:
            response = await client.post("/v1/chat/completions", json=chat_body(history))
        summary_request = summary_server.chat_requests[0].body
    assert response.status_code == 200
    assert summary_request["model"] == "summ"
    handoff = json.dumps(sent(upstream))
    assert "Ship the refund fix (LLM handoff)." in handoff


async def test_a_lone_surrogate_is_forwarded_exactly(upstream: OpenAITestServer) -> None:
    upstream.script(Step.completion("ok"))
    body = chat_body([system(), user("the emoji \ud83d was cut")])
    async with gateway(settings_for(upstream)) as client:
        raw = json.dumps(body).encode()  # the surrogate travels as a JSON escape
        headers = {"Content-Type": "application/json"}
        response = await client.post("/v1/chat/completions", content=raw, headers=headers)
    assert response.status_code == 200, response.text
    assert sent(upstream)[-1]["content"] == "the emoji \ud83d was cut"


class ThreadRecordingStore(MemoryStore):
    """A store that notes which thread each write ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []

    def create_session(self, *args: Any, **kwargs: Any) -> SessionRecord:
        self.threads.append(threading.current_thread())
        return super().create_session(*args, **kwargs)

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> int:
        self.threads.append(threading.current_thread())
        return super().append_messages(session_id, messages)

    def save_state(self, session_id: str, **kwargs: Any) -> None:
        self.threads.append(threading.current_thread())
        super().save_state(session_id, **kwargs)


async def test_store_writes_never_run_on_the_event_loop(upstream: OpenAITestServer) -> None:
    # A short history (below the size that moves compaction off the loop) still writes
    # to the store: a store waiting on a lock must not stall every other session.
    upstream.script(Step.completion("one"), Step.completion("two"))
    store = ThreadRecordingStore()
    loop_thread = threading.current_thread()
    history = [system(), user("Hello")]
    async with gateway(settings_for(upstream), store) as client:
        await client.post("/v1/chat/completions", json=chat_body(history))
        history += [assistant("one"), user("And now?")]
        await client.post("/v1/chat/completions", json=chat_body(history))
    assert len(store.threads) >= 2
    assert loop_thread not in store.threads
