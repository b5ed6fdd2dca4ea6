"""The estimate does not check again what the Chat and Messages conversions made (the
first validates its messages, the second builds them checked): a message a conversion made
is skipped by identity, every other message is still checked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gwhelpers import gateway
from serving import MODEL, loopback_settings

from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import Message
from windowkeeper.loop import estimates
from windowkeeper.loop.estimates import EstimateCache
from windowkeeper.store import MemoryStore
from windowkeeper.testing.loopback import LoopbackUpstream, Reply

pytestmark = pytest.mark.anyio
_TURNS = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n}"} for n in range(3)]
BODIES = {
    "/v1/chat/completions": {"model": MODEL, "messages": _TURNS},
    "/v1/messages": {"model": MODEL, "max_tokens": 5, "messages": _TURNS},
    "/v1/responses": {"model": MODEL, "input": _TURNS},
}


@pytest.mark.parametrize(("path", "checks"), [(p, 3 if "responses" in p else 0) for p in BODIES])
async def test_only_the_chat_and_messages_conversions_skip_the_estimate_s_check(
    loopback: LoopbackUpstream, monkeypatch: pytest.MonkeyPatch, path: str, checks: int
) -> None:
    checked: list[str] = []

    def check(message: object, where: str) -> None:
        checked.append(where)

    monkeypatch.setattr(estimates, "check_message", check)
    loopback.script(Reply.turn("ok"))
    async with gateway(loopback_settings(loopback), MemoryStore()) as client:
        response = await client.post(path, content=json.dumps(BODIES[path]).encode(),
                                     headers={"content-type": "application/json"})  # fmt: skip
    assert response.status_code == 200, response.text
    assert len(checked) == checks


def test_a_message_is_skipped_only_as_the_same_object_at_its_index() -> None:
    defective: list[Message] = [
        {"role": "user", "content": "x"},
        {"role": "user", "content": "y", "tool_call_id": 5},  # what validation refuses
    ]
    vouched: Any = defective
    assert EstimateCache(image_tokens=100).total(defective, vouched) > 0
    for other in ([dict(m) for m in defective], defective[:1], defective[::-1], []):
        with pytest.raises(InvalidMessagesError, match="message 1"):
            EstimateCache(image_tokens=100).total(defective, other)
