"""The real agent CLIs (Claude Code, Codex) against a real ``windowkeeper serve`` process
in front of the loopback upstream: where they are, how they run without the network.

The CLIs come from npm at the versions in ``.ci/agents/package.json`` (``.ci/run``
installs them into ``.ci/agents/node_modules``). Without one a test skips, except under
``CI=true``, where it fails: CI must run them. Each CLI runs with a throwaway ``HOME``,
telemetry and update checks off, and a proxy on a closed loopback port for anything but
loopback, so nothing leaves the machine even if a CLI ignores its switches.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.testing.loopback import LoopbackUpstream, Recorded
from windowkeeper.testing.serve import serve_process

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / ".ci" / "agents"
pytest.importorskip("uvicorn", reason="windowkeeper serve needs the gateway extra")

RUN_TIMEOUT = 120
"""Seconds one CLI run may take (a hang fails the test instead of blocking CI)."""

OFFLINE = {
    # Anything not on loopback goes to a closed port: refused at once, never sent out.
    "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
}  # fmt: skip


def pinned(package: str) -> str:
    manifest = json.loads((AGENTS / "package.json").read_text(encoding="utf-8"))
    return str(manifest["dependencies"][package])


def agent_cli(name: str, package: str) -> Path:
    """The installed CLI ``name`` of npm ``package`` at its pinned version (else a skip,
    or a failure under CI)."""
    binary = AGENTS / "node_modules" / ".bin" / name
    installed = AGENTS / "node_modules" / package / "package.json"
    problem = None
    if not binary.exists() or not installed.exists():
        problem = f"{package} is not installed (npm install --prefix .ci/agents, or .ci/run)"
    else:
        version = json.loads(installed.read_text(encoding="utf-8")).get("version")
        if version != pinned(package):
            problem = f"{package} {version} is installed, the tests pin {pinned(package)}"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true: {problem}", pytrace=False)
        pytest.skip(problem)
    return binary


def run_cli(
    args: list[str], env: dict[str, str], cwd: Path, *, succeeds: bool = True
) -> subprocess.CompletedProcess[str]:
    """One CLI run (exit 0 unless ``succeeds`` is False); its exit status and output are
    in the failure message."""
    full_env = {"PATH": os.environ.get("PATH", ""), **OFFLINE, **env}
    done = subprocess.run(args, capture_output=True, text=True, env=full_env, cwd=cwd,
                          timeout=RUN_TIMEOUT, check=False)  # fmt: skip
    if succeeds:
        assert done.returncode == 0, f"{args[0]} exited {done.returncode}: {done.stderr[-3000:]}"
    return done


@contextmanager
def windowkeeper_serve(upstream: LoopbackUpstream, context_length: int) -> Iterator[str]:
    """``windowkeeper serve`` as a subprocess in front of ``upstream``; its base URL."""
    options = ("--upstream", upstream.base_url, "--anthropic-upstream", upstream.anthropic_url,
               "--context-length", str(context_length))  # fmt: skip
    with serve_process(*options) as base:
        yield base


TURNS = 4
"""CLI runs of a resumed session: three long answers take it over the threshold."""


def prompt(turn: int) -> str:
    return f"Explain part {turn} of the parser."


def long_reply(turn: int) -> str:
    """An answer of ~8,800 tokens: a few of them make a session the window cannot hold."""
    line = "the parser reads tokens one by one and keeps a stack of open brackets."
    return "\n".join(f"Paragraph {turn}.{n}: {line}" for n in range(400))


def assert_compacted_at_the_end(requests: list[Recorded], history_key: str) -> None:
    """The upstream's view of a resumed session of :data:`TURNS` runs that each answered
    :func:`long_reply`: uncompacted while it fitted, then the last request compacted."""
    assert len(requests) == TURNS
    sizes = [len(r.body[history_key]) for r in requests]
    assert sizes[1] < sizes[2]  # uncompacted: the history the client resent grew
    last, before = requests[-1], requests[-2]
    # The client resends its whole history: its last request held all of the one before
    # (which went upstream uncompacted) plus the long answer to it. The upstream got less.
    assert last.tokens is not None and before.tokens is not None
    assert last.tokens < before.tokens + estimate_tokens(long_reply(TURNS - 2))
    assert sizes[-1] < sizes[-2] + 2  # the client added its answer and a prompt to those
    text = json.dumps(last.body[history_key])
    assert "windowkeeper handoff" in text and prompt(TURNS - 1) in text
    assert "windowkeeper handoff" not in json.dumps(before.body[history_key])
    # Of the long answers the client sent, at least one went into the handoff.
    kept = [n for n in range(TURNS - 1) if f"Paragraph {n}.0:" in text]
    assert len(kept) < TURNS - 1
