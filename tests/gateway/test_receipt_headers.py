"""The receipt of the request's compaction in the gateway's response headers and log."""

from __future__ import annotations

import logging

import pytest
from gwhelpers import MODEL, chat_body, gateway, settings_for

from factories import long_session
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.testing import OpenAITestServer, Step

pytestmark = pytest.mark.anyio


async def test_a_compacting_request_answers_with_its_receipt(
    upstream: OpenAITestServer, caplog: pytest.LogCaptureFixture
) -> None:
    history = long_session(rounds=40)
    window = int(estimate_messages_tokens(history) / 0.9)
    settings = settings_for(upstream, context_lengths={MODEL: window})
    upstream.script(Step.completion("first"), Step.completion("second"))
    caplog.set_level(logging.INFO, logger="windowkeeper.gateway")
    async with gateway(settings) as client:
        first = await client.post("/v1/chat/completions", json=chat_body(history))
        second = await client.post("/v1/chat/completions", json=chat_body(history))
    head = first.headers
    assert head["x-windowkeeper-compacted"] == "true"
    assert head["x-windowkeeper-receipt-tier"] in {"prune", "summary"}
    before, after = (int(n) for n in head["x-windowkeeper-receipt-tokens"].split("->"))
    assert after < before
    invalidated = int(head["x-windowkeeper-receipt-cache-invalidated"])
    assert 0 < invalidated <= before
    even = head["x-windowkeeper-receipt-break-even"]
    assert even == "never" or int(even) >= 1
    assert int(head["x-windowkeeper-receipt-waited-ms"]) >= 0
    assert head["x-windowkeeper-receipt-background"] == "false"
    # The second request reuses the installed compaction: no new receipt.
    assert "x-windowkeeper-receipt-tier" not in second.headers
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compaction ")]
    assert len(lines) == 1 and f"cache_invalidated={invalidated}" in lines[0]
