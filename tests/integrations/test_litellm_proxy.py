"""The real LiteLLM proxy (``litellm --config``) with windowkeeper's hook, set up from the
README's LiteLLM section (its ``my_hooks.py`` and ``config.yaml``, with this test's window
and upstream; a master key in ``LITELLM_MASTER_KEY``). The proxy routes
to the loopback upstream; an agent loop through the ``openai`` SDK re-sends its growing
history every turn; the upstream receives it compacted once it passes the threshold, and
the compaction is kept for the turns after it.

Needs the ``litellm-proxy`` extra: without it (or without the ``litellm`` command) the
test skips, except under ``CI=true``, where that is a failure (CI installs the extra).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from test_readme import sections

from windowkeeper.analysis.gist import is_stub
from windowkeeper.testing import unused_port
from windowkeeper.testing.loopback import LoopbackUpstream, Recorded, Reply, call

ROOT = Path(__file__).resolve().parents[2]
PROXY_MODULES = ("litellm", "backoff", "fastapi", "uvicorn", "yaml", "orjson", "apscheduler",
                 "multipart", "cryptography", "jwt", "rq", "websockets", "semver",
                 "expression", "fastapi_sso", "mcp", "soundfile")  # fmt: skip
"""What ``litellm --config`` imports at start (the ``litellm-proxy`` extra installs them)."""
START_SECONDS = 180
"""The proxy imports a lot; on a busy 2-core machine its start has taken ~20 s."""
WINDOW = 16_000
TURNS = 5

README_WINDOW = "128_000"
"""The window the README's hook gives ``my-gpt`` (this test uses :data:`WINDOW`)."""


def readme_files(upstream: str) -> tuple[str, str]:
    """``my_hooks.py`` and ``config.yaml`` as the README's LiteLLM section writes them, with
    the window and the upstream of this test."""
    blocks = dict(sections()["LiteLLM proxy"][:2])
    hooks, config = blocks["python"], yaml.safe_load(blocks["yaml"])
    assert hooks.startswith("# my_hooks.py") and README_WINDOW in hooks
    [model] = config["model_list"]
    assert model["litellm_params"]["api_key"] == "os.environ/OPENAI_API_KEY"
    model["litellm_params"]["api_base"] = upstream
    return hooks.replace(README_WINDOW, str(WINDOW)), yaml.safe_dump(config)


def _unavailable(problem: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {problem} (pip install 'windowkeeper[litellm-proxy]')")
    pytest.skip(problem)


def _litellm_command() -> Path:
    missing = [name for name in PROXY_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        _unavailable(f"the LiteLLM proxy cannot start: {', '.join(missing)} not installed")
    command = Path(sys.executable).parent / "litellm"
    if not command.exists():
        _unavailable(f"no litellm command next to {sys.executable}")
    return command


@contextmanager
def litellm_proxy(folder: Path, key: str) -> Iterator[str]:
    """``litellm --config config.yaml`` started in ``folder``; its base URL once it is up."""
    port = unused_port()
    env = {
        **os.environ, "LITELLM_MASTER_KEY": key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # its bundled map: no fetch from GitHub
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
        "OPENAI_API_KEY": "sk-upstream",  # the README's config reads the upstream key here
    }  # fmt: skip
    command = [str(_litellm_command()), "--config", "config.yaml", "--host", "127.0.0.1",
               "--port", str(port)]  # fmt: skip
    log = folder / "proxy.log"
    with (
        log.open("wb") as out,
        subprocess.Popen(
            command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT
        ) as process,
    ):
        try:
            _wait_up(f"http://127.0.0.1:{port}", process, log)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_up(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            text = log.read_text(errors="replace")
            if "ModuleNotFoundError" in text or "is not installed" in text:
                _unavailable(f"the LiteLLM proxy cannot start: {text[-600:]}")
            pytest.fail(f"litellm exited {process.returncode}: {text[-3000:]}")
        try:
            if httpx.get(base + "/health/liveliness", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the LiteLLM proxy did not answer in {START_SECONDS} s: "
                f"{log.read_text(errors='replace')[-3000:]}")  # fmt: skip


def _output(turn: int) -> str:
    """A file the agent read: ~4,000 tokens, different every turn (never deduplicated)."""
    return "\n".join(f"def f{turn}_{n}(x):  # step {n} of part {turn}" for n in range(400))


def _agent(base: str, key: str, upstream: LoopbackUpstream) -> list[dict[str, Any]]:
    """An agent loop over the proxy: each turn the model calls ``shell``, the agent runs it
    and sends the result, the model answers; the client keeps its whole history."""
    import openai

    client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=120)
    tools = [{"type": "function", "function": {"name": "shell", "parameters": {
        "type": "object", "properties": {"cmd": {"type": "string"}}}}}]  # fmt: skip
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the parser bug in src/parse.py."},
    ]
    for turn in range(TURNS):
        upstream.script(Reply.turn(None, call("shell", cmd=f"cat src/part{turn}.py")),
                        Reply.turn(f"Part {turn} read."))  # fmt: skip
        if turn:
            history.append({"role": "user", "content": f"Now part {turn}."})
        for _ in range(2):
            reply = client.chat.completions.create(
                model="my-gpt",
                messages=history,
                tools=tools,  # type: ignore[arg-type]
            )
            message = reply.choices[0].message.model_dump(exclude_none=True)
            history.append(message)
            for tool_call in message.get("tool_calls") or []:
                history.append(
                    {"role": "tool", "tool_call_id": tool_call["id"], "content": _output(turn)}
                )
    return history


def _size(request: Recorded) -> int:
    return len(json.dumps(request.body["messages"]))


def test_the_litellm_proxy_with_the_hook_sends_a_compacted_history(tmp_path: Path) -> None:
    _litellm_command()
    key = "sk-" + secrets.token_hex(32)  # the proxy refuses well-known keys (sk-1234)
    with LoopbackUpstream() as upstream:
        hooks, config = readme_files(upstream.base_url)
        (tmp_path / "my_hooks.py").write_text(hooks, encoding="utf-8")
        (tmp_path / "config.yaml").write_text(config, encoding="utf-8")
        with litellm_proxy(tmp_path, key) as base:
            history = _agent(base, key, upstream)
        sent = upstream.model_requests("chat")
    assert len(sent) == 2 * TURNS
    client_sizes = [len(json.dumps(m)) for m in history]
    first, last = sent[0], sent[-1]
    # Below the threshold the request went through as the client sent it.
    assert first.body["messages"] == history[:2]
    # The last request: the client's whole history, less the turn's answer, went
    # upstream compacted: old tool outputs pruned to stubs, the task and the newest
    # result verbatim.
    received = last.body["messages"]
    contents = [str(m.get("content") or "") for m in received]
    assert sum(client_sizes[:-1]) > 2 * _size(last)
    assert any(is_stub(text) for text in contents)
    assert received[:2] == history[:2]
    assert contents[-1] == _output(TURNS - 1)
    # Kept across turns: once compacted, every later request is compacted too.
    compacted = [any(is_stub(str(m.get("content") or "")) for m in r.body["messages"])
                 for r in sent]  # fmt: skip
    assert compacted[0] is False and compacted[-1] is True
    assert compacted == sorted(compacted)
