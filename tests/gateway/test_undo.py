"""``POST /v1/windowkeeper/sessions/{id}/undo`` against a real gateway (uvicorn on loopback)
in front of the loopback upstream, without a store and on SQLite and PostgreSQL: the
newest compaction is taken back and the client's next request goes upstream as the client
sent it; automatic compaction waits until the history no longer fits; the same key
headers as the session GET; 404 for another key's or an unknown session, 409 when there
is nothing to undo, JSON every time (issue 26)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from serving import MODEL, loopback_settings, serving

from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.store import SessionStore, open_store
from windowkeeper.testing.loopback import LoopbackUpstream, Reply

SESSION = "agent-1"
UNDO = f"/v1/windowkeeper/sessions/{SESSION}/undo"
HEADERS = {"X-Windowkeeper-Session": SESSION, "Authorization": "Bearer sk-1"}
TURNS = 40


def _turn(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": f"Step {n} done. " + "detail " * 300},
        {"role": "user", "content": f"Continue with step {n + 1}."},
    ]


START = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "Refactor the billing module step by step."},
]
WINDOW = int(estimate_messages_tokens([*START, *(m for n in range(20) for m in _turn(n))]) / 0.85)
"""The hygiene trigger (0.85 of it) is crossed about half-way through :data:`TURNS`."""


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """No store (the gateway's own memory), or a durable one."""
    if request.param == "memory":
        return None
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@contextmanager
def gateway(upstream: LoopbackUpstream, url: str | None, **settings: Any) -> Iterator[str]:
    with ExitStack() as stack:
        store: SessionStore | None = None
        if url is not None:
            store = stack.enter_context(open_store(url))
        options = {"context_lengths": {MODEL: WINDOW}, **settings}
        yield stack.enter_context(serving(loopback_settings(upstream, **options), store))


def _send(client: httpx.Client, history: list[dict[str, Any]]) -> None:
    response = client.post("/v1/chat/completions", json={"model": MODEL, "messages": history})
    assert response.status_code == 200, response.text


def _last_sent(upstream: LoopbackUpstream) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = upstream.model_requests()[-1].body["messages"]
    return messages


def _until_compacted(client: httpx.Client, upstream: LoopbackUpstream) -> list[dict[str, Any]]:
    """Turns until the upstream receives a compacted history; the client's history then."""
    history = list(START)
    for n in range(TURNS):
        _send(client, history)
        if _last_sent(upstream) != history:
            return history
        history += _turn(n)
    pytest.fail("the gateway never compacted the session")


def test_undo_sends_the_next_request_as_the_client_sent_it(store_url: str | None) -> None:
    with (
        LoopbackUpstream(default=Reply.turn("ok")) as upstream,
        gateway(upstream, store_url) as base,
        httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client,
    ):
        history = _until_compacted(client, upstream)
        assert "windowkeeper handoff" in str(_last_sent(upstream))
        undone = client.post(UNDO)
        assert undone.status_code == 200, undone.text
        answer = undone.json()
        assert answer["undone"] is True and answer["protocol"] == "chat"
        assert answer["session"] == SESSION and answer["compactions"] == 0
        assert answer["restored_messages"] >= len(history) - 2
        status = client.get(f"/v1/windowkeeper/sessions/{SESSION}").json()
        assert status["held_after_undo"] is True and status["covered_messages"] == 0
        # The next turn, still over the trigger, goes upstream exactly as the client sent it.
        history += _turn(TURNS)
        _send(client, history)
        assert _last_sent(upstream) == history
        again = client.post(UNDO)
        assert again.status_code == 409, again.text
        assert again.json()["error"]["code"] == "nothing_to_undo"
        # The hold lasts until the history no longer fits: then it is compacted again.
        history += [{"role": "assistant", "content": "word " * (WINDOW // 4)},
                    {"role": "user", "content": "Go on."}]  # fmt: skip
        _send(client, history)
        assert _last_sent(upstream) != history
        assert estimate_messages_tokens(_last_sent(upstream)) < WINDOW
        status = client.get(f"/v1/windowkeeper/sessions/{SESSION}").json()
        assert status["held_after_undo"] is False


def test_an_undo_through_another_gateway_reaches_the_one_holding_the_session(
    durable_url: str,
) -> None:
    """Gateway B never saw the session; the undo it takes goes through the store, and
    gateway A, which holds the compacted prefix in memory, forwards the history from
    before on the client's next request."""
    with (
        LoopbackUpstream(default=Reply.turn("ok")) as upstream,
        gateway(upstream, durable_url) as first,
        gateway(upstream, durable_url) as second,
        httpx.Client(base_url=first, headers=HEADERS, timeout=60) as client,
    ):
        history = _until_compacted(client, upstream)
        undone = httpx.post(second + UNDO, headers=HEADERS, timeout=60)
        assert undone.status_code == 200, undone.text
        assert undone.json()["store_session_id"]
        history += _turn(TURNS)
        _send(client, history)
        assert _last_sent(upstream) == history


@pytest.mark.parametrize("gateway_keys", [frozenset(), frozenset({"sk-1", "sk-2"})],
                         ids=["no-keys", "keys"])  # fmt: skip
@pytest.mark.parametrize(
    "presented",
    [{"Authorization": "Bearer sk-1"}, {"x-api-key": "sk-1"}, {"X-Windowkeeper-Key": "sk-1"}],
    ids=["bearer", "x-api-key", "x-windowkeeper-key"],
)
def test_undo_takes_the_key_headers_of_the_session_get(
    gateway_keys: frozenset[str], presented: dict[str, str]
) -> None:
    """Each of the three headers reaches the session made with ``Authorization: Bearer``
    (409: found, nothing compacted yet); another key and an unknown id get 404."""
    with (
        LoopbackUpstream(default=Reply.turn("ok")) as upstream,
        gateway(upstream, None, api_keys=gateway_keys) as base,
        httpx.Client(base_url=base, timeout=60) as client,
    ):
        made = client.post("/v1/chat/completions", headers=HEADERS,
                           json={"model": MODEL, "messages": START})  # fmt: skip
        assert made.status_code == 200, made.text
        mine = client.post(UNDO, headers=presented)
        other = client.post(UNDO, headers={"x-api-key": "sk-2"})
        unknown = client.post("/v1/windowkeeper/sessions/nobody/undo", headers=presented)
    assert mine.status_code == 409, mine.text
    assert "no compaction to undo" in mine.json()["error"]["message"]
    for answer in (other, unknown):
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["code"] == "not_found"
        assert "Traceback" not in answer.text


def test_undo_without_a_key_is_401_and_takes_post_only() -> None:
    with (
        LoopbackUpstream(default=Reply.turn("ok")) as upstream,
        gateway(upstream, None, api_keys=frozenset({"sk-1"})) as base,
        httpx.Client(base_url=base, timeout=60) as client,
    ):
        anonymous = client.post(UNDO)
        wrong = client.get(UNDO, headers={"X-Windowkeeper-Key": "sk-1"})
    assert anonymous.status_code == 401 and "gateway key" in anonymous.json()["error"]["message"]
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert wrong.json() == {"detail": "Method Not Allowed"}
