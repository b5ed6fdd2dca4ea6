"""The session GET (every protocol's session under one id, every key header the README
lists) and ``count_tokens`` (what would go upstream, and the client's own count)."""

from __future__ import annotations

from typing import Any

import pytest
from gwhelpers import gateway
from serving import MODEL, loopback_settings

from windowkeeper.core.config import CompressionConfig
from windowkeeper.gateway.auth import authenticate
from windowkeeper.testing.loopback import LoopbackUpstream, Reply, request_tokens

pytestmark = pytest.mark.anyio

SESSION = {"X-Windowkeeper-Session": "agent-1"}


def _messages_history(rounds: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "Fix the parser bug."}]
    for n in range(rounds):
        out += [
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"n": n}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"{n} " * 1200}]},
        ]  # fmt: skip
    return [*out, {"role": "assistant", "content": "Read them all."}, {"role": "user",
            "content": "Now fix it."}]  # fmt: skip


async def test_the_session_get_shows_every_protocols_session(loopback: LoopbackUpstream) -> None:
    loopback.default = Reply.turn("ok")
    headers = {**SESSION, "Authorization": "Bearer sk-1", "anthropic-version": "2023-06-01"}
    user = [{"role": "user", "content": "hi"}]
    async with gateway(loopback_settings(loopback)) as client:
        for path, body in (
            ("/v1/chat/completions", {"model": MODEL, "messages": user}),
            ("/v1/responses", {"model": MODEL, "input": user}),
            ("/v1/messages", {"model": MODEL, "max_tokens": 8, "messages": user}),
        ):
            assert (await client.post(path, json=body, headers=headers)).status_code == 200
        status = (await client.get("/v1/windowkeeper/sessions/agent-1", headers=headers)).json()
    protocols = status["protocols"]
    assert sorted(protocols) == ["chat", "messages", "responses"]
    assert all(protocols[name]["protocol"] == name for name in protocols)
    assert all(protocols[name]["requests"] == 1 for name in protocols)
    assert status["protocol"] == "chat"  # the first is the top level, as before


@pytest.mark.parametrize(
    "gateway_keys", [frozenset(), frozenset({"sk-1"})], ids=["no-keys", "keys"]
)
@pytest.mark.parametrize(
    "presented",
    [{"Authorization": "Bearer sk-1"}, {"x-api-key": "sk-1"}, {"X-Windowkeeper-Key": "sk-1"}],
    ids=["bearer", "x-api-key", "x-windowkeeper-key"],
)
async def test_the_session_get_accepts_every_key_header(
    loopback: LoopbackUpstream, gateway_keys: frozenset[str], presented: dict[str, str]
) -> None:
    """The README lists three headers for a key: each one reaches the session a client
    made with ``Authorization: Bearer`` (with gateway keys and without), another key
    does not."""
    loopback.default = Reply.turn("ok")
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    # With gateway keys, sk-2 is another valid key; without, another client's credential.
    keys = gateway_keys | {"sk-2"} if gateway_keys else gateway_keys
    settings = loopback_settings(loopback, api_keys=keys)
    async with gateway(settings) as client:
        made = await client.post("/v1/chat/completions", json=body,
                                 headers={**SESSION, "Authorization": "Bearer sk-1"})  # fmt: skip
        assert made.status_code == 200
        mine = await client.get("/v1/windowkeeper/sessions/agent-1", headers=presented)
        other = await client.get("/v1/windowkeeper/sessions/agent-1", headers={"x-api-key": "sk-2"})
    assert mine.status_code == 200, mine.text
    assert mine.json()["requests"] == 1
    assert other.status_code == 404


def test_clients_of_other_auth_schemes_keep_their_own_scope() -> None:
    basic = [authenticate({"authorization": f"Basic {v}"}, frozenset()) for v in ("YQ==", "Yg==")]
    assert basic[0] is not None and basic[1] is not None
    assert basic[0].scope != basic[1].scope


async def test_count_tokens_counts_what_would_be_sent(loopback: LoopbackUpstream) -> None:
    """After a compaction, ``count_tokens`` answers the upstream's count of the compacted
    request the gateway would send; the client's own count rides in a header."""
    loopback.default = Reply.turn("ok")
    history = _messages_history(12)
    headers = {"anthropic-version": "2023-06-01", "x-api-key": "sk-1"}
    compression = CompressionConfig(prune_only_ratio=0.01)
    settings = loopback_settings(loopback, context_lengths={MODEL: 6_000}, compression=compression)
    body = {"model": MODEL, "max_tokens": 8, "system": "You fix bugs.", "messages": history}
    grown = {**body, "messages": [*history, {"role": "assistant", "content": "Done."},
                                  {"role": "user", "content": "Thanks."}]}  # fmt: skip
    async with gateway(settings) as client:
        fresh = await client.post("/v1/messages/count_tokens", json=body, headers=headers)
        sent = await client.post("/v1/messages", json=body, headers=headers)
        assert sent.headers["x-windowkeeper-compacted"] == "true"
        counted = await client.post("/v1/messages/count_tokens", json=grown, headers=headers)
    requests = loopback.requests
    counts = [r for r in requests if r.path.startswith("/v1/messages/count_tokens")]
    assert fresh.headers["x-windowkeeper-compacted"] == "false"
    assert int(fresh.headers["x-windowkeeper-client-input-tokens"]) == fresh.json()["input_tokens"]
    assert counted.headers["x-windowkeeper-compacted"] == "true"
    answer = counted.json()["input_tokens"]
    client_own = int(counted.headers["x-windowkeeper-client-input-tokens"])
    assert client_own == request_tokens("messages", grown)
    assert answer == request_tokens("messages", counts[1].body) < client_own / 2
    assert "windowkeeper handoff" in str(counts[1].body["messages"])
