"""Real sessions through the gateway: every request the upstream receives fits the window.

The client is an unmodified agent: each assistant turn of the transcript is one request
carrying the whole history before it. The gateway substitutes its compacted prefix, so the
upstream (a real loopback server) must only ever see valid requests within the window.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gwhelpers import MODEL, chat_body, gateway, settings_for

from realdata import real_session_paths
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.core.invariants import violations
from windowkeeper.core.tokens import estimate_request_tokens
from windowkeeper.testing import OpenAITestServer, Step

CASES = {
    "cc_spotter_4d5611e5": 8_000,  # a 3.6K-token newest request: the tightest floor
    "msa_dschat_django__django-11910": 16_000,
    "openhands_sonnet35_django__django-11292": 16_000,
}
PATHS = [p for p in real_session_paths() if p.stem in CASES]

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.real_sessions,
    pytest.mark.skipif(not PATHS, reason="../shared/data/sessions is not available"),
]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
async def test_real_session_through_the_gateway_stays_within_the_window(
    upstream: OpenAITestServer, path: Path
) -> None:
    window = CASES[path.stem]
    conversation = load_conversation(path)
    messages = conversation.messages
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant" and i > 0]
    settings = settings_for(upstream, context_lengths={MODEL: window})
    headers = {"X-Windowkeeper-Session": path.stem}
    compacted = 0
    async with gateway(settings) as client:
        for index in turns:
            upstream.script(Step.completion("ok"))
            body = chat_body(messages[:index])
            if conversation.tools:
                body["tools"] = conversation.tools
            response = await client.post("/v1/chat/completions", json=body, headers=headers)
            assert response.status_code == 200, response.text
            compacted += response.headers["x-windowkeeper-compacted"] == "true"
            received = upstream.chat_requests[-1].body
            assert violations(received["messages"]) == [], f"turn {index}"
            tokens = estimate_request_tokens(received["messages"], received.get("tools"))
            assert tokens < window, f"turn {index}: {tokens:,} tokens"
    assert len(upstream.chat_requests) == len(turns)
    assert compacted > 0
