"""Two gateway processes on one store (PostgreSQL and SQLite) serving one session
alternately: every client message stored exactly once, no re-seeding, the compacted
prefix shared."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx

from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.store import open_store
from windowkeeper.testing.loopback import LoopbackUpstream, Reply
from windowkeeper.testing.serve import serve_process

MODEL = "test-model"
TURNS = 14


@contextmanager
def gateway_process(upstream: str, store_url: str, window: int) -> Iterator[str]:
    options = ("--upstream", upstream, "--context-length", str(window), "--store", store_url)
    with serve_process(*options, check_exit=True) as url:
        yield url


def turn_messages(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": f"Step {n} done. " + "detail " * 300},
        {"role": "user", "content": f"Continue with step {n + 1}."},
    ]


def test_two_gateways_share_one_session(durable_url: str) -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Refactor the billing module step by step."},
    ]
    full = [*history, *(m for n in range(TURNS) for m in turn_messages(n))]
    window = int(estimate_messages_tokens(full[: len(full) // 2]) / 0.85)  # compacts mid-way
    with (
        LoopbackUpstream(window=window, default=Reply.turn("ok")) as upstream,
        ExitStack() as stack,
    ):
        urls = [stack.enter_context(gateway_process(upstream.base_url, durable_url, window))
                for _ in range(2)]  # fmt: skip
        headers = {"X-Windowkeeper-Session": "shared", "Authorization": "Bearer sk-test"}
        with httpx.Client(timeout=60) as client:
            for n in range(TURNS):
                url = urls[n % 2] + "/v1/chat/completions"
                response = client.post(url, json={"model": MODEL, "messages": history},
                                       headers=headers)  # fmt: skip
                assert response.status_code == 200, response.text
                history += turn_messages(n)
    sent = [len(r.body["messages"]) for r in upstream.model_requests()]
    assert not any(r.rejected for r in upstream.model_requests())
    with open_store(durable_url) as store:
        mine = [
            s for s in store.list_sessions() if s.title.startswith("windowkeeper-gateway:shared")
        ]
        assert len(mine) == 1, [s.title for s in mine]  # no re-seed, no fork
        rows = store.load(mine[0].id, include_archived=True).rows
        record = store.get_session(mine[0].id)
    appended = [r.message for r in rows if r.origin == "append"]
    client_messages = history[:-2]  # the last turn's reply and follow-up were never sent
    assert appended == client_messages  # row count == distinct client messages, in order
    assert record.compactions >= 1, sent
    first = next(i for i, n in enumerate(sent) if n < 2 + 2 * i)  # the first compacted request
    # From there on both gateways send the shared compacted prefix, never the whole history.
    assert all(n < 2 + 2 * i for i, n in enumerate(sent) if i >= first), sent
