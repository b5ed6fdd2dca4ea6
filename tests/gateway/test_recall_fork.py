"""Recall on a fork: a branch that keeps its parent's compacted prefix also keeps the
archive behind the handles in it, with a durable store as without one."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from gwhelpers import gateway
from serving import MODEL, loopback_settings
from test_recall_gateway import HANDLE, HISTORY, WINDOW

from windowkeeper.store import MemoryStore, SessionStore, open_store
from windowkeeper.testing.loopback import LoopbackUpstream, Reply, call

pytestmark = pytest.mark.anyio
SESSION = {"x-windowkeeper-session": "forked"}


def recall_from_the_prefix(protocol: str, body: dict[str, Any]) -> Reply:
    """The scripted model recalls the first handle its prefix shows."""
    history = {k: v for k, v in body.items() if k != "tools"}
    found = HANDLE.search(json.dumps(history))
    assert found, "the compacted prefix shows no handle"
    return Reply.turn(None, call("recall", "call_recall_1", handle=found.group(1)))


@pytest.mark.parametrize("durable", [True, False], ids=["store", "memory-only"])
async def test_a_fork_recalls_what_its_parent_archived(
    loopback: LoopbackUpstream, durable: bool
) -> None:
    store: SessionStore | None = MemoryStore() if durable else None
    settings = loopback_settings(loopback, context_lengths={MODEL: WINDOW})
    first = [*HISTORY, {"role": "assistant", "content": "ok"}]
    loopback.script(Reply.turn("ok"), Reply.turn("fine"),
                    Reply.dynamic(recall_from_the_prefix), Reply.turn("done"))  # fmt: skip
    async with gateway(settings, store) as client:
        for history in (HISTORY, [*first, {"role": "user", "content": "Then run the linter."}]):
            reply = await client.post("/v1/chat/completions", headers=SESSION,
                                      json={"model": MODEL, "messages": history})  # fmt: skip
            assert reply.status_code == 200, reply.text
        # Another answer to the same turn: the history diverges after the compacted prefix.
        fork = [*first, {"role": "user", "content": "Rather run the type checker."}]
        reply = await client.post("/v1/chat/completions", headers=SESSION,
                                  json={"model": MODEL, "messages": fork})  # fmt: skip
        status = (await client.get("/v1/windowkeeper/sessions/forked")).json()
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "done"
    assert status["forks"] == 1 and status["compactions"] == 1
    answered = json.dumps(loopback.model_requests()[-1].body)
    assert "call_recall_1" in answered
    assert "x" * 40 in answered  # the parent's archived tool output, recalled on the fork


async def test_a_fork_keeps_its_inherited_archive_after_a_restart(
    loopback: LoopbackUpstream, durable_url: str
) -> None:
    """The fork's first commit copies the parent's entries into its own store session: a
    later turn, and a gateway that never saw the fork, still recall them (SQLite and
    PostgreSQL)."""
    with open_store(durable_url) as store:
        await _fork_then_recall(loopback, store)


async def _fork_then_recall(loopback: LoopbackUpstream, store: SessionStore) -> None:
    settings = loopback_settings(loopback, context_lengths={MODEL: WINDOW})
    first = [*HISTORY, {"role": "assistant", "content": "ok"}]
    fork = [*first, {"role": "user", "content": "Rather run the type checker."}]
    later = [*fork, {"role": "assistant", "content": "typed"}, {"role": "user", "content": "Go."}]
    loopback.script(Reply.turn("ok"), Reply.turn("fine"), Reply.turn("typed"))
    async with gateway(settings, store) as client:
        for history in (HISTORY, [*first, {"role": "user", "content": "Lint."}], fork):
            reply = await client.post("/v1/chat/completions", headers=SESSION,
                                      json={"model": MODEL, "messages": history})  # fmt: skip
            assert reply.status_code == 200, reply.text
        await _recalled_on(client, loopback, later)  # the fork's next turn, same gateway
    async with gateway(settings, store) as client:
        await _recalled_on(client, loopback, later)  # a gateway that never saw the fork


async def _recalled_on(
    client: httpx.AsyncClient, loopback: LoopbackUpstream, history: list[dict[str, Any]]
) -> None:
    loopback.script(Reply.dynamic(recall_from_the_prefix), Reply.turn("done"))
    reply = await client.post("/v1/chat/completions", headers=SESSION,
                              json={"model": MODEL, "messages": history})  # fmt: skip
    assert reply.json()["choices"][0]["message"]["content"] == "done", reply.text
    assert "x" * 40 in json.dumps(loopback.model_requests()[-1].body)
