"""Agents move their cache markers every turn (Claude Code marks the newest message; the
one marked before loses its marker). The gateway must read that as the same history
continued — no fork, no compaction again, every message stored once — while what it
sends upstream carries this request's markers and no stale one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
from serving import MODEL, loopback_settings, serving

from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.gateway.history import agreeing_prefix, digest_of, unmarked, without_markers
from windowkeeper.store import open_store
from windowkeeper.testing.loopback import LoopbackUpstream, Reply

MARK = {"type": "ephemeral"}
TURNS = 16


def _turns() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Refactor billing, step by step."}
    ]
    for n in range(TURNS):
        messages.append({"role": "assistant", "content": f"Step {n} done. " + "detail " * 250})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"Go on {n}."}]})
    return messages


def _marked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request as Claude Code sends it: a marker on the newest message only."""
    out = copy.deepcopy(messages)
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = MARK
    return out


def _replay(marked: bool, store_url: str | None) -> tuple[dict[str, Any], list[Any]]:
    turns = _turns()
    window = int(estimate_messages_tokens(turns[: len(turns) // 2]) / 0.85)
    headers = {"X-Windowkeeper-Session": "cc", "anthropic-version": "2023-06-01"}
    with LoopbackUpstream(window=window, default=Reply.turn("ok")) as upstream:
        settings = loopback_settings(upstream, context_lengths={MODEL: window})
        store = open_store(store_url) if store_url else None
        with serving(settings, store) as url, httpx.Client(base_url=url, timeout=60) as client:
            for end in range(1, len(turns) + 1, 2):  # each request ends with a user turn
                history = turns[:end]
                body = {"model": MODEL, "max_tokens": 64,
                        "messages": _marked(history) if marked else history}  # fmt: skip
                response = client.post("/v1/messages", json=body, headers=headers)
                assert response.status_code == 200, response.text
            session = response.headers["x-windowkeeper-session"]
            status = client.get(f"/v1/windowkeeper/sessions/{session}").json()
        if store is not None:
            store.close()
        return status, [r.body for r in upstream.model_requests("messages")]


def _markers(body: dict[str, Any]) -> list[int]:
    """Indexes of the messages that carry a marker in an upstream request."""
    return [i for i, m in enumerate(body["messages"]) if "cache_control" in json.dumps(m)]


def test_moving_markers_continue_the_same_history(tmp_path: Path) -> None:
    plain, _ = _replay(marked=False, store_url=None)
    status, sent = _replay(marked=True, store_url=f"sqlite:///{tmp_path / 'wk.db'}")
    assert plain["compactions"] >= 1  # the history outgrows the window mid-way
    assert status["forks"] == 0 and status["branches"] == 1
    assert status["compactions"] == plain["compactions"]
    for body in sent:  # this request's marker, on its newest message, and no stale one
        assert _markers(body) == [len(body["messages"]) - 1]
    with open_store(f"sqlite:///{tmp_path / 'wk.db'}") as store:
        (session,) = [s for s in store.list_sessions() if "cc" in s.title]
        rows = store.load(session.id, include_archived=True).rows
    appended = [r for r in rows if r.origin == "append"]
    assert len(appended) == len(_turns())  # every client message stored exactly once


def test_markers_are_ignored_when_histories_are_compared_and_never_edited_in_place() -> None:
    plain = {"role": "user", "content": "Go on."}
    marked = {
        "role": "user",
        "content": [{"type": "text", "text": "Go on.", "cache_control": MARK}],
    }
    before = copy.deepcopy(marked)
    assert unmarked(marked) == unmarked(plain) and digest_of(marked) == digest_of(plain)
    assert agreeing_prefix([plain, plain], [marked, {"role": "user", "content": "x"}]) == 1
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
              "content": [{"type": "text", "text": "ok", "cache_control": MARK}]}]}  # fmt: skip
    assert "cache_control" not in json.dumps(without_markers(result))
    assert without_markers(plain) is plain  # nothing to remove: the same object
    assert marked == before and "cache_control" in json.dumps(result)  # inputs untouched
