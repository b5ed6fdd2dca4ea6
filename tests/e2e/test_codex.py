"""Codex (``codex exec``) through ``windowkeeper serve`` with the README's config.

The README's provider block (a custom Responses provider at the gateway) is written to a
throwaway ``CODEX_HOME``; the first request is answered, and a session resumed with
``codex exec resume --last`` until it is too long for the window reaches the upstream
compacted.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from agent_clis import (
    ROOT,
    TURNS,
    agent_cli,
    assert_compacted_at_the_end,
    long_reply,
    prompt,
    run_cli,
    windowkeeper_serve,
)

from windowkeeper.testing.loopback import LoopbackUpstream, Reply

WINDOW = 30_000
"""Codex's instructions and tools are ~6,700 tokens: three long answers take a session
over this window's compaction threshold."""
OFFLINE_ROOT = "check_for_update_on_startup = false\n"
OFFLINE_TABLES = "\n[analytics]\nenabled = false\n\n[features]\nplugins = false\n"
"""What keeps Codex from phoning home: update checks, analytics, the plugin catalog (root
keys must come before the first table)."""


@pytest.fixture
def codex() -> Path:
    return agent_cli("codex", "@openai/codex")


def readme_provider_block(base: str) -> str:
    """The README's Codex ``config.toml`` block, pointed at ``base`` (not a copy: the test
    fails when the README's block stops working)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```toml\n(model_provider = \"windowkeeper\".*?)```", readme, re.DOTALL)
    assert match is not None, "the README has no Codex provider block"
    return match.group(1).replace("http://127.0.0.1:8787", base)


def _codex_home(tmp_path: Path, base: str) -> dict[str, str]:
    home = tmp_path / "codex-home"
    home.mkdir()
    block = readme_provider_block(base)
    config = f'model = "gpt-5.1-codex"\n{OFFLINE_ROOT}{block}{OFFLINE_TABLES}'
    (home / "config.toml").write_text(config, encoding="utf-8")
    return {"HOME": str(tmp_path), "CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-dummy"}


def test_codex_exec_is_answered_through_the_gateway(codex: Path, tmp_path: Path) -> None:
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        upstream.script(Reply.turn("Hello from the loopback upstream."))
        env = _codex_home(tmp_path, base)
        done = run_cli([str(codex), "exec", "--skip-git-repo-check", "Say hello"], env, tmp_path)
        (request,) = upstream.model_requests("responses")
    assert "Hello from the loopback upstream." in done.stdout
    assert request.body["stream"] is True and isinstance(request.body["input"], list)
    assert [r.method for r in upstream.requests] == ["POST"]  # no WebSocket attempt reached it


def test_the_built_in_provider_at_the_gateway_is_answered(codex: Path, tmp_path: Path) -> None:
    """``openai_base_url`` (Codex's own provider, which tries a WebSocket first): the
    gateway's 426 sends it to HTTP, and the request is answered. That provider takes its
    key from ``CODEX_API_KEY`` (or a login), not ``OPENAI_API_KEY``."""
    home = tmp_path / "codex-home"
    home.mkdir()
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        config = f'model = "gpt-5.1-codex"\n{OFFLINE_ROOT}openai_base_url = "{base}/v1"\n'
        (home / "config.toml").write_text(config + OFFLINE_TABLES, encoding="utf-8")
        env = {"HOME": str(tmp_path), "CODEX_HOME": str(home), "CODEX_API_KEY": "sk-dummy"}
        upstream.script(Reply.turn("Hello over HTTP."))
        done = run_cli([str(codex), "exec", "--skip-git-repo-check", "Say hello"], env, tmp_path)
        (request,) = upstream.model_requests("responses")
    assert "Hello over HTTP." in done.stdout
    assert request.headers["authorization"] == "Bearer sk-dummy"


def test_a_resumed_long_session_reaches_the_upstream_compacted(codex: Path, tmp_path: Path) -> None:
    """Four ``codex exec`` runs, each after the first resuming the last session, each
    answered at length: the last request the upstream gets holds less than the client sent
    and carries the handoff."""
    work = tmp_path / "project"
    work.mkdir()
    with LoopbackUpstream() as upstream, windowkeeper_serve(upstream, WINDOW) as base:
        env = _codex_home(tmp_path, base)
        for turn in range(TURNS):
            upstream.script(Reply.turn(long_reply(turn)))
            resume = ["resume", "--last"] if turn else []
            args = [str(codex), "exec", "--skip-git-repo-check", *resume, prompt(turn)]
            done = run_cli(args, env, work)
            assert f"Paragraph {turn}.0:" in done.stdout
        requests = upstream.model_requests("responses")
    assert_compacted_at_the_end(requests, "input")
