"""Claude Code (``claude -p``, its default model) through ``windowkeeper serve``.

What the README's Claude Code section promises: ``ANTHROPIC_BASE_URL`` at the gateway is
all it takes; the first request is answered (Claude Code 2.1 sends ``system`` turns
inside ``messages``, beta ``mid-conversation-system-*``), and a resumed session too long
for the window reaches the upstream compacted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_clis import (
    TURNS,
    agent_cli,
    assert_compacted_at_the_end,
    long_reply,
    prompt,
    run_cli,
    windowkeeper_serve,
)

from windowkeeper.testing.loopback import LoopbackUpstream, Reply, call

WINDOW = 30_000
"""Claude Code's own system prompt and tools are ~11,900 tokens: three long answers
take a session over this window's compaction threshold."""


@pytest.fixture
def claude() -> Path:
    return agent_cli("claude", "@anthropic-ai/claude-code")


def _env(base: str, home: Path) -> dict[str, str]:
    return {
        "HOME": str(home), "ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }  # fmt: skip


def test_claude_p_is_answered_through_the_gateway(claude: Path, tmp_path: Path) -> None:
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        upstream.script(Reply.turn("Hello from the loopback upstream."))
        done = run_cli([str(claude), "-p", "Say hello"], _env(base, tmp_path), tmp_path)
        (request,) = upstream.model_requests("messages")
    assert done.stdout.strip() == "Hello from the loopback upstream."
    roles = [m["role"] for m in request.body["messages"]]
    assert roles[0] == "user" and "system" in roles  # the shape that was a 400 before


def test_a_gateway_key_in_custom_headers_is_accepted_and_kept_from_the_upstream(
    claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's line for gateway keys: ``ANTHROPIC_CUSTOM_HEADERS`` carries the key,
    which the gateway checks and does not forward; Claude Code's own key goes upstream."""
    monkeypatch.setenv("WINDOWKEEPER_GATEWAY_KEYS", "gw-key-1")  # serve inherits it
    env = {**_env("", tmp_path), "ANTHROPIC_CUSTOM_HEADERS": "X-Windowkeeper-Key: gw-key-1"}
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        upstream.script(Reply.turn("Hello with a key."))
        done = run_cli([str(claude), "-p", "Say hello"], {**env, "ANTHROPIC_BASE_URL": base},
                       tmp_path)  # fmt: skip
        (request,) = upstream.model_requests("messages")
    assert done.stdout.strip() == "Hello with a key."
    assert request.headers["x-api-key"] == "sk-ant-dummy"
    assert "x-windowkeeper-key" not in request.headers


def test_without_the_gateway_key_claude_code_stops_at_the_first_401(
    claude: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway's 401 carries ``x-should-retry: false``: Claude Code then gives up at
    once and says the key is wrong. Without the header it retries with backoff for about
    three minutes (177 s measured), longer than :data:`~agent_clis.RUN_TIMEOUT`, so this
    run would fail on that guard."""
    monkeypatch.setenv("WINDOWKEEPER_GATEWAY_KEYS", "gw-key-1")  # serve inherits it
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        done = run_cli([str(claude), "-p", "Say hello", "--output-format", "json"],
                       _env(base, tmp_path), tmp_path, succeeds=False)  # fmt: skip
        assert upstream.model_requests() == []
    result = json.loads(done.stdout)
    assert done.returncode == 1 and result["is_error"] is True
    assert result["api_error_status"] == 401 and "API key" in result["result"]


def test_a_tool_round_trip_goes_through(claude: Path, tmp_path: Path) -> None:
    """A streamed ``tool_use`` from the upstream reaches Claude Code, which runs the tool
    (Read) and sends its ``tool_result`` back through the gateway."""
    notes = tmp_path / "notes.txt"
    notes.write_text("the secret word is pelican\n", encoding="utf-8")
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        upstream.script(Reply.turn("Let me read it.", call("Read", file_path=str(notes))),
                        Reply.turn("The word is pelican."))  # fmt: skip
        done = run_cli([str(claude), "-p", "What is in notes.txt?"], _env(base, tmp_path),
                       tmp_path)  # fmt: skip
        first, second = upstream.model_requests("messages")
    assert done.stdout.strip() == "The word is pelican."
    call_turn, result_turn = second.body["messages"][-2:]
    (use,) = [b for b in call_turn["content"] if b["type"] == "tool_use"]
    (result,) = result_turn["content"]
    assert use["name"] == "Read" and result["type"] == "tool_result"
    assert result["tool_use_id"] == use["id"] and "pelican" in json.dumps(result["content"])
    assert len(second.body["messages"]) == len(first.body["messages"]) + 2


def test_a_resumed_long_session_reaches_the_upstream_compacted(
    claude: Path, tmp_path: Path
) -> None:
    """Four ``claude -p`` runs, each after the first resuming the session (``--continue``)
    and each answered at length: the client's history only grows, the last request
    the upstream gets holds less than the client sent and carries the handoff."""
    work = tmp_path / "project"
    work.mkdir()
    env = _env("", tmp_path)
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        env["ANTHROPIC_BASE_URL"] = base
        for turn in range(TURNS):
            upstream.script(Reply.turn(long_reply(turn)))
            resume = ["--continue"] if turn else []
            done = run_cli([str(claude), "-p", *resume, prompt(turn)], env, work)
            assert done.stdout.startswith(f"Paragraph {turn}.0:")
        requests = upstream.model_requests("messages")
    assert_compacted_at_the_end(requests, "messages")
    assert requests[-1].body["messages"][0] == requests[0].body["messages"][0]  # the task
