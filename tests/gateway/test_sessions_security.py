"""Sessions that must not interfere, keys that must not leak, state that must survive:
fingerprint-sharing clients, per-key scoping, the upstream key, ``previous_response_id``,
the learned window, concurrency without the lock across the upstream call, metrics."""

from __future__ import annotations

import json
import logging
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import httpx
import pytest
from gwhelpers import gateway
from serving import MODEL, loopback_settings

from factories import assistant, long_session, user
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.store import SessionStore, open_store
from windowkeeper.testing.loopback import LoopbackUpstream, Reply, request_tokens

pytestmark = pytest.mark.anyio
HISTORY = long_session(rounds=30)
WINDOW = int(estimate_messages_tokens(HISTORY) / 0.9)


def client_of(
    loopback: LoopbackUpstream, store: SessionStore | None = None, **overrides: Any
) -> AbstractAsyncContextManager[httpx.AsyncClient]:
    return gateway(loopback_settings(loopback, **overrides), store)


def chat(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": messages, **extra}


async def test_clients_sharing_a_fingerprint_never_reset_each_other(
    loopback: LoopbackUpstream,
) -> None:
    loopback.default = Reply.turn("ok")
    a = [*HISTORY]
    b = [*HISTORY[:2], assistant("A different plan."), *HISTORY[3:]]  # same system + task
    async with client_of(loopback, context_lengths={MODEL: WINDOW}) as client:
        for turn in range(6):  # six alternating requests, each history growing
            history = a if turn % 2 == 0 else b
            history += [assistant(f"answer {turn}"), user(f"next {turn}")]
            response = await client.post("/v1/chat/completions", json=chat(history))
            assert response.status_code == 200
        key = response.headers["x-windowkeeper-session"]
        status = (await client.get(f"/v1/windowkeeper/sessions/{key}")).json()
    sizes = [request_tokens("chat", r.body) for r in loopback.model_requests()]
    assert status["compactions"] == 2 and status["branches"] == 2  # one per conversation
    assert all(n < WINDOW * 0.85 for n in sizes), sizes  # each reused its own prefix


async def test_sessions_are_scoped_per_client_key(loopback: LoopbackUpstream) -> None:
    loopback.default = Reply.turn("ok")
    keys = frozenset({"key-a", "key-b"})
    session = {"X-Windowkeeper-Session": "same-id"}
    async with client_of(loopback, api_keys=keys, context_lengths={MODEL: WINDOW}) as client:
        as_a = {**session, "Authorization": "Bearer key-a"}
        as_b = {**session, "Authorization": "Bearer key-b"}
        await client.post("/v1/chat/completions", json=chat(HISTORY), headers=as_a)
        seen_by_a = await client.get("/v1/windowkeeper/sessions/same-id", headers=as_a)
        seen_by_b = await client.get("/v1/windowkeeper/sessions/same-id", headers=as_b)
        await client.post("/v1/chat/completions", json=chat(HISTORY), headers=as_b)
        after = (await client.get("/v1/windowkeeper/sessions/same-id", headers=as_a)).json()
    assert seen_by_a.status_code == 200 and seen_by_a.json()["compactions"] == 1
    assert seen_by_b.status_code == 404  # b cannot see a's session
    assert after["requests"] == 1 and after["compactions"] == 1  # b did not touch it


async def test_the_upstream_key_never_reaches_a_response_or_a_log(
    loopback: LoopbackUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-upstream-SECRET-123"
    loopback.script(Reply.error(401), Reply.turn("fine"))
    caplog.set_level(logging.DEBUG, logger="windowkeeper")
    async with client_of(loopback, upstream_api_key=secret) as client:
        denied = await client.post("/v1/chat/completions", json=chat([user("hi")]))
        fine = await client.post("/v1/chat/completions", json=chat([user("hi")]))
    async with client_of(loopback, upstream_api_key=secret,
                         upstream_base_url="http://127.0.0.1:9/v1") as client:  # fmt: skip
        unreachable = await client.post("/v1/chat/completions", json=chat([user("hi")]))
    assert denied.status_code == 401 and fine.status_code == 200
    assert unreachable.status_code == 502
    for response in (denied, fine, unreachable):
        assert secret not in response.text and secret not in json.dumps(dict(response.headers))
    assert secret not in caplog.text
    assert loopback.model_requests()[0].headers["authorization"] == f"Bearer {secret}"


async def test_previous_response_id_is_passed_through_and_counted(
    loopback: LoopbackUpstream,
) -> None:
    loopback.script(Reply.turn("continued"))
    body = {"model": MODEL, "previous_response_id": "resp_abc", "input": HISTORY[-1]["content"]}
    raw = json.dumps(body).encode()
    async with client_of(loopback, context_lengths={MODEL: 100}) as client:  # tiny window
        response = await client.post("/v1/responses", content=raw)
        health = (await client.get("/healthz")).json()
        metrics = (await client.get("/metrics")).text
    assert response.status_code == 200
    assert response.headers["x-windowkeeper-passthrough"] == "previous_response_id"
    assert loopback.model_requests()[0].raw == raw  # byte for byte, nothing compacted
    assert health["passthrough_requests"] == 1
    assert 'windowkeeper_gateway_passthrough_total{reason="previous_response_id"} 1.0' in metrics


async def test_a_learned_window_is_kept_across_a_restart(
    loopback: LoopbackUpstream, tmp_path: Any
) -> None:
    limit = int(WINDOW * 0.7)
    message = f"This model's maximum context length is {limit} tokens. Reduce the length."
    overflow = {"error": {"message": message, "type": "invalid_request_error",
                          "code": "context_length_exceeded"}}  # fmt: skip
    loopback.script(Reply.error(400, overflow), Reply.turn("recovered"), Reply.turn("again"))
    url = f"sqlite:///{tmp_path / 'wk.db'}"
    headers = {"X-Windowkeeper-Session": "learner"}
    big = HISTORY[: len(HISTORY) * 3 // 4]
    with open_store(url) as store:
        async with client_of(loopback, store, context_lengths={MODEL: WINDOW * 2}) as client:
            first = await client.post("/v1/chat/completions", json=chat(big), headers=headers)
    with open_store(url) as store:
        async with client_of(loopback, store, context_lengths={MODEL: WINDOW * 2}) as client:
            more = [*big, assistant("done"), user("and?")]
            again = await client.post("/v1/chat/completions", json=chat(more), headers=headers)
            status = (await client.get("/v1/windowkeeper/sessions/learner")).json()
    assert first.status_code == again.status_code == 200
    assert status["context_length"] == limit  # restored, not relearned by overflowing
    assert len(loopback.model_requests()) == 3  # no second overflow


async def test_the_session_lock_is_not_held_across_the_upstream_call(
    loopback: LoopbackUpstream,
) -> None:
    loopback.script(*[Reply.delay(0.3, Reply.turn("ok")) for _ in range(6)])
    headers = {"X-Windowkeeper-Session": "busy"}
    results: list[int] = []
    async with client_of(loopback) as client:

        async def post() -> None:
            response = await client.post("/v1/chat/completions", json=chat(HISTORY),
                                         headers=headers)  # fmt: skip
            results.append(response.status_code)

        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(post)
    assert results == [200] * 6
    assert loopback.max_in_flight > 1  # requests of one session reached the upstream together


async def test_one_info_line_per_compaction_and_metrics(
    loopback: LoopbackUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    loopback.default = Reply.turn("ok")
    caplog.set_level(logging.INFO, logger="windowkeeper.gateway")
    async with client_of(loopback, context_lengths={MODEL: WINDOW}) as client:
        await client.post("/v1/chat/completions", json=chat(HISTORY))
        await client.post("/v1/chat/completions", json=chat([*HISTORY, assistant("x"), user("y")]))
        metrics = (await client.get("/metrics")).text
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compaction ")]
    assert len(lines) == 1, lines
    assert "trigger=preflight" in lines[0] and "->" in lines[0]
    tier = lines[0].split("tier=")[1].split()[0]
    assert tier in ("prune", "summary")
    assert "refund" not in caplog.text.lower()  # no message text in any log line
    assert 'windowkeeper_gateway_requests_total{outcome="ok",protocol="chat"} 2.0' in metrics
    assert (
        f'windowkeeper_gateway_compactions_total{{tier="{tier}",trigger="preflight"}} 1.0'
        in metrics
    )
    assert "windowkeeper_gateway_upstream_seconds_bucket" in metrics
    assert "windowkeeper_gateway_tokens_saved_total" in metrics
