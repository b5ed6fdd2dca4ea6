"""Background compaction in the gateway: prepared off the request path, stored with the
session under its lease, applied by whichever gateway crosses the trigger (a restarted
one too), counted in ``/metrics``."""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

import httpx
import pytest
from gwhelpers import MODEL, chat_body, gateway, settings_for

from bgkit import history, rounds
from windowkeeper.core.config import CompressionConfig
from windowkeeper.store import MemoryStore, PreparedState
from windowkeeper.summary.llm.config import LLMSummarizerConfig
from windowkeeper.testing import OpenAITestServer, Step

pytestmark = pytest.mark.anyio

WINDOW = 16_000  # the gateway triggers at 85% (13,600 tokens), the soft mark is 11,560
HEADERS = {"X-Windowkeeper-Session": "bg"}
SUMMARY = "## Next Step\nRun the refund tests again (LLM handoff)."


def settings(upstream: OpenAITestServer, summaries: OpenAITestServer, **extra: Any) -> Any:
    return settings_for(
        upstream,
        context_lengths={MODEL: WINDOW},
        compression=CompressionConfig(prune_min_chars=10**6, **extra),
        summary=LLMSummarizerConfig(
            model="summ", base_url=summaries.base_url, timeout=10.0, context_length=1_000_000
        ),
    )


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def until(client: httpx.AsyncClient, name: str, value: float) -> str:
    """``/metrics`` once ``name`` reached ``value`` (a background job finished)."""
    deadline = time.monotonic() + 10
    while True:
        text = (await client.get("/metrics")).text
        if metric(text, name) >= value or time.monotonic() > deadline:
            return text
        await _sleep()


async def _sleep() -> None:
    import anyio

    await anyio.sleep(0.05)


async def test_prepared_at_the_soft_mark_and_applied_at_the_trigger(
    upstream: OpenAITestServer,
) -> None:
    upstream.script(Step.completion("one"), Step.completion("two"))
    early = history(11)
    with OpenAITestServer() as summaries:
        summaries.script(Step.completion(SUMMARY))
        async with gateway(settings(upstream, summaries)) as client:
            first = await client.post("/v1/chat/completions", headers=HEADERS,
                                      json=chat_body(early))  # fmt: skip
            text = await until(client, "windowkeeper_gateway_background_prepared_total", 1)
            assert metric(text, "windowkeeper_gateway_background_prepared_total") == 1
            later = [*early, {"role": "assistant", "content": "one"}, *rounds(100, 2)]
            second = await client.post("/v1/chat/completions", headers=HEADERS,
                                       json=chat_body(later))  # fmt: skip
            text = (await client.get("/metrics")).text
        calls = len(summaries.chat_requests)
    assert first.headers["x-windowkeeper-compacted"] == "false"
    assert second.headers["x-windowkeeper-compacted"] == "true"
    assert second.headers["x-windowkeeper-receipt-background"] == "true"
    assert calls == 1
    assert metric(text, "windowkeeper_gateway_background_applied_total") == 1
    assert metric(text, "windowkeeper_gateway_background_saved_seconds_total") >= 0
    assert SUMMARY.split("\n")[1] in str(upstream.chat_requests[-1].body["messages"])


async def test_another_gateway_applies_what_a_stopped_one_prepared(
    upstream: OpenAITestServer,
) -> None:
    upstream.script(Step.completion("one"), Step.completion("two"))
    store = MemoryStore()
    early = history(11)
    later = [*early, {"role": "assistant", "content": "one"}, *rounds(100, 2)]
    with OpenAITestServer() as summaries:
        summaries.script(Step.completion(SUMMARY))
        async with gateway(settings(upstream, summaries), store) as first:
            await first.post("/v1/chat/completions", headers=HEADERS, json=chat_body(early))
            await until(first, "windowkeeper_gateway_background_prepared_total", 1)
        # The first gateway is gone; a new one never saw the session.
        async with gateway(settings(upstream, summaries), store) as second:
            answer = await second.post("/v1/chat/completions", headers=HEADERS,
                                       json=chat_body(later))  # fmt: skip
            text = (await second.get("/metrics")).text
        calls = len(summaries.chat_requests)
    assert answer.headers["x-windowkeeper-receipt-background"] == "true"
    assert calls == 1
    assert metric(text, "windowkeeper_gateway_background_applied_total") == 1
    [record] = store.list_sessions()
    assert record.compactions == 1
    stored = store.prepared(record.id)
    assert stored is not None and stored.state is PreparedState.APPLIED


async def test_while_another_gateway_prepares_the_request_goes_as_it_is(
    upstream: OpenAITestServer,
) -> None:
    upstream.script(*(Step.completion(f"r{n}") for n in range(3)))
    store = MemoryStore()
    early = history(11)
    later = [*early, {"role": "assistant", "content": "r0"}, *rounds(100, 2)]
    latest = [*later, {"role": "assistant", "content": "r1"}, *rounds(200, 1)]
    with OpenAITestServer() as summaries:
        summaries.script(Step.delay(1.5, Step.completion(SUMMARY)))
        async with (
            gateway(settings(upstream, summaries), store) as one,
            gateway(settings(upstream, summaries), store) as two,
        ):
            await one.post("/v1/chat/completions", headers=HEADERS, json=chat_body(early))
            busy = await two.post("/v1/chat/completions", headers=HEADERS,
                                  json=chat_body(later))  # fmt: skip
            await until(one, "windowkeeper_gateway_background_prepared_total", 1)
            done = await two.post("/v1/chat/completions", headers=HEADERS,
                                  json=chat_body(latest))  # fmt: skip
        calls = len(summaries.chat_requests)
    assert busy.headers["x-windowkeeper-compacted"] == "false"  # not summarized twice
    assert done.headers["x-windowkeeper-receipt-background"] == "true"
    assert calls == 1
    [record] = store.list_sessions()
    assert record.compactions == 1


async def test_the_switch_turns_it_off(upstream: OpenAITestServer) -> None:
    upstream.script(Step.completion("one"))
    with OpenAITestServer() as summaries:
        async with gateway(settings(upstream, summaries, background=False)) as client:
            await client.post("/v1/chat/completions", headers=HEADERS,
                              json=chat_body(history(11)))  # fmt: skip
            text = (await client.get("/metrics")).text
        calls = len(summaries.chat_requests)
    assert calls == 0
    assert metric(text, "windowkeeper_gateway_background_prepared_total") == 0


async def test_a_model_switch_discards_it_and_metrics_say_why(
    upstream: OpenAITestServer,
) -> None:
    upstream.script(*(Step.completion(f"r{n}") for n in range(3)))
    early = history(11)
    later = [*early, {"role": "assistant", "content": "r0"}, *rounds(100, 2)]
    latest = [*later, {"role": "assistant", "content": "r1"}, *rounds(200, 1)]
    with OpenAITestServer() as summaries:
        summaries.script(Step.completion(SUMMARY), Step.completion(SUMMARY))
        chosen = settings(upstream, summaries)
        lengths = {MODEL: WINDOW, "smaller-model": 15_500}
        async with gateway(replace(chosen, context_lengths=lengths)) as client:
            await client.post("/v1/chat/completions", headers=HEADERS, json=chat_body(early))
            await until(client, "windowkeeper_gateway_background_prepared_total", 1)
            body = {**chat_body(later), "model": "smaller-model"}  # another window
            switched = await client.post("/v1/chat/completions", headers=HEADERS, json=body)
            # Past the new trigger, under its window: sent as it is while a compaction for
            # the new window is prepared, applied at the next request.
            text = await until(client, "windowkeeper_gateway_background_prepared_total", 2)
            body = {**chat_body(latest), "model": "smaller-model"}
            applied = await client.post("/v1/chat/completions", headers=HEADERS, json=body)
            text = (await client.get("/metrics")).text
        calls = len(summaries.chat_requests)
    assert switched.headers["x-windowkeeper-compacted"] == "false"
    assert applied.headers["x-windowkeeper-compacted"] == "true"
    assert applied.headers["x-windowkeeper-receipt-background"] == "true"
    assert int(applied.headers["x-windowkeeper-receipt-deferred-requests"]) >= 1
    assert calls == 2  # prepared for the old window, then for the new one
    discarded = 'windowkeeper_gateway_background_discarded_total{reason="model"}'
    assert metric(text, discarded) == 1
    assert metric(text, "windowkeeper_gateway_background_deferred_total") >= 1
