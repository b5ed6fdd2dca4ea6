"""ContextManager through a real loopback OpenAI-compatible server and the official client.

The scripted server answers 413 / ``context_length_exceeded`` / long-context 429, then
success; the manager's ``run`` / ``arun`` wrap ``client.chat.completions.create``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from factories import long_session
from windowkeeper.core.errors import CompressionExhaustedError
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.events import Event, EventKind
from windowkeeper.loop.manager import ContextManager
from windowkeeper.testing import OpenAITestServer, Step


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def client_for(server: OpenAITestServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=5)


def overflow_body(message: str, code: str = "context_length_exceeded") -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def test_413_then_success(server: OpenAITestServer) -> None:
    server.script(Step.error(413, overflow_body("Request Entity Too Large", "too_large")),
                  Step.completion("done"))  # fmt: skip
    compressor = ContextCompressor(context_length=1_000_000)
    events: list[Event] = []
    manager = ContextManager(compressor, on_event=events.append)
    history = long_session(rounds=40)
    with client_for(server) as client:
        result = manager.run(
            lambda messages: client.chat.completions.create(model="m", messages=messages),
            history,
        )
    assert result.response.choices[0].message.content == "done"
    first, second = (r.body["messages"] for r in server.chat_requests)
    assert len(first) == len(history)
    assert estimate_messages_tokens(second) < estimate_messages_tokens(first)
    assert second == [_json(m) for m in result.messages]  # the retry sends the compacted list
    assert not any(k.startswith("_") for m in second for k in m)
    assert violations(second) == []
    kinds = [e.kind for e in events]
    assert kinds.index(EventKind.OVERFLOW) < kinds.index(EventKind.COMPACTION_FINISHED)


def test_context_length_exceeded_learns_the_limit(server: OpenAITestServer) -> None:
    message = ("This model's maximum context length is 32768 tokens. However, your messages "
               "resulted in 41000 tokens. Please reduce the length of the messages.")  # fmt: skip
    server.script(Step.error(400, overflow_body(message)), Step.completion("ok"))
    compressor = ContextCompressor(context_length=128_000)
    manager = ContextManager(compressor)
    with client_for(server) as client:
        manager.run(lambda m: client.chat.completions.create(model="m", messages=m),
                    long_session(rounds=40))  # fmt: skip
    assert compressor.context_length == 32_768 and compressor.threshold_tokens == 27_852
    assert len(server.chat_requests) == 2
    first, second = (r.body["messages"] for r in server.chat_requests)
    assert estimate_messages_tokens(second) < estimate_messages_tokens(first)


def test_repeated_overflow_ends_with_compression_exhausted(server: OpenAITestServer) -> None:
    server.script(*[Step.error(400, overflow_body("prompt is too long"))] * 6)
    manager = ContextManager(ContextCompressor(context_length=1_000_000), max_attempts=2)
    with client_for(server) as client, pytest.raises(CompressionExhaustedError) as caught:
        manager.run(lambda m: client.chat.completions.create(model="m", messages=m),
                    long_session(rounds=40))  # fmt: skip
    assert isinstance(caught.value.__cause__, openai.BadRequestError)
    assert len(server.chat_requests) <= 3
    assert "new session" in str(caught.value)


def test_unrelated_error_passes_through(server: OpenAITestServer) -> None:
    server.script(Step.error(401, {"error": {"message": "Incorrect API key provided"}}))
    manager = ContextManager(ContextCompressor(context_length=32_000))
    with client_for(server) as client, pytest.raises(openai.AuthenticationError):
        manager.run(lambda m: client.chat.completions.create(model="m", messages=m),
                    long_session(rounds=3))  # fmt: skip
    assert len(server.chat_requests) == 1


def test_arun_with_the_async_client(server: OpenAITestServer) -> None:
    server.script(
        Step.error(429, overflow_body("Extra usage is required for long context requests.",
                                      "rate_limit_error")),
        Step.completion("ok"),
    )  # fmt: skip
    compressor = ContextCompressor(context_length=1_000_000)
    manager = ContextManager(compressor)

    async def main() -> Any:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=0,
                                      timeout=5) as client:  # fmt: skip
            return await manager.arun(
                lambda m: client.chat.completions.create(model="m", messages=m),
                long_session(rounds=40),
            )

    result = asyncio.run(main())
    assert result.response.choices[0].message.content == "ok"
    assert compressor.context_length == 200_000
    assert len(server.chat_requests) == 2


def _json(message: Message) -> dict[str, Any]:
    return {k: v for k, v in message.items() if not k.startswith("_")}
