"""Every README snippet runs as written, against fakes.

Each ```python block runs in the namespace of its section (blocks of one section share
it, in order). Names a snippet leaves to the reader are fakes put there first:
``messages`` and ``tools`` (a short conversation), ``session.jsonl`` in the working
directory (a synthetic session), ``chat_model`` (a LangChain chat model
that answers in text), ``model`` (a scripted Agents SDK ``Model`` in the Agents SDK
section, Pydantic AI's ``TestModel`` in the Pydantic AI one); ``OpenAI()`` talks to the
loopback :class:`~windowkeeper.testing.OpenAITestServer`. A module snippet that names its
file (``# my_hooks.py``) is importable under that name, and the YAML next to it must name
a callback that exists. Every ``windowkeeper ...`` command line of a ```bash block is
checked against the CLI: the command exists and takes every option the line uses.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from factories import long_session
from windowkeeper.cli import app as cli
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.testing import OpenAITestServer, Step

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def sections() -> dict[str, list[tuple[str, str]]]:
    """Heading -> its code blocks (language, code), in order."""
    found: dict[str, list[tuple[str, str]]] = {}
    parts = re.split(r"^(#{2,3} .+)$", README.read_text(encoding="utf-8"), flags=re.MULTILINE)
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        found[heading.lstrip("# ").strip()] = [(m[1], m[2]) for m in FENCE.finditer(body)]
    return found


PYTHON = [name for name, blocks in sections().items() if any(k == "python" for k, _ in blocks)]


def _agents_model() -> Any:
    from agents import Model, ModelResponse, Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class Answer(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            text = ResponseOutputText(type="output_text", text="Fixed.", annotations=[])
            message = ResponseOutputMessage(
                id="m1", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return Answer()


def fakes(section: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "Fix the failing test."},
        ],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
    }
    if section == "OpenAI Agents SDK":
        namespace["model"] = _agents_model()
    elif section == "Pydantic AI":
        from pydantic_ai.models.test import TestModel

        namespace["model"] = TestModel()
    return namespace


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAITestServer]:
    monkeypatch.chdir(tmp_path)  # snippets may create files (wk.db, ...)
    (tmp_path / "session.jsonl").write_text(dump_jsonl(long_session(rounds=20)), encoding="utf-8")
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    with OpenAITestServer() as server:  # the conftest gives each test its own event loop
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        server.script(*[Step.completion("Done.")] * 5)
        yield server


def test_the_readme_has_a_section_per_integration() -> None:
    names = set(sections())
    for wanted in ("LangChain", "LiteLLM proxy", "OpenAI Agents SDK", "Pydantic AI"):
        assert wanted in names
    assert any(name.startswith("MCP") for name in names)
    assert any(name.startswith("Transcripts") for name in names)


# The extra (and its module) a section's snippets need; without it the section is skipped
# as the framework's own tests are (conftest.py), except under CI, where nothing is.
# The LangChain snippet builds its own model (langchain-openai, against the loopback
# server through OPENAI_BASE_URL), as a reader's copy does.
NEEDS = {"LangChain": ("langchain", "langchain_openai"), "LiteLLM proxy": ("litellm", "litellm"),
         "OpenAI Agents SDK": ("openai-agents", "agents"),
         "Pydantic AI": ("pydantic-ai", "pydantic_ai"), "MCP": ("mcp", "mcp")}  # fmt: skip


def _missing_extra(section: str) -> str | None:
    need = NEEDS.get(section) or NEEDS.get(section.split(":")[0])
    if need is None or os.environ.get("CI") == "true":
        return None
    return need[0] if importlib.util.find_spec(need[1]) is None else None


@pytest.mark.parametrize("section", PYTHON)
def test_python_snippets_run_as_written(
    section: str, sandbox: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = _missing_extra(section)
    if extra is not None:
        pytest.skip(f"the {section} snippets need the {extra} extra")
    namespace = fakes(section)
    blocks = sections()[section]
    for kind, code in blocks:
        if kind != "python":
            continue
        named = re.match(r"# (\w+)\.py\b", code)
        if named:  # a module the reader saves under that name
            module = types.ModuleType(named[1])
            exec(compile(code, f"README:{section}:{named[1]}.py", "exec"), module.__dict__)
            monkeypatch.setitem(sys.modules, named[1], module)
            continue
        exec(compile(code, f"README:{section}", "exec"), namespace)
    for kind, code in blocks:
        if kind == "yaml":
            _check_callbacks(yaml.safe_load(code))
    if section == "LangChain":  # its own model called the (loopback) provider
        assert sandbox.chat_requests


def _check_callbacks(config: dict[str, Any]) -> None:
    from litellm.integrations.custom_logger import CustomLogger

    callbacks = config["litellm_settings"]["callbacks"]
    for path in [callbacks] if isinstance(callbacks, str) else callbacks:
        module, _, name = path.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), CustomLogger)


def _command_lines() -> list[str]:
    lines = []
    for blocks in sections().values():
        for kind, code in blocks:
            if kind != "bash":
                continue
            for line in code.replace("\\\n", " ").splitlines():
                words = line.split("#")[0].split()
                starts = [i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "windowkeeper"]
                if starts:
                    lines.append(" ".join(words[starts[0] :]))
    return lines


@pytest.mark.parametrize("line", _command_lines())
def test_command_lines_name_real_commands_and_options(line: str) -> None:
    # typer's groups are not click.Group subclasses in every version: look for commands.
    command: Any = typer.main.get_command(cli.app)
    words = line.split()[1:]
    while hasattr(command, "commands") and words and words[0] in command.commands:
        command = command.commands[words.pop(0)]
    assert not hasattr(command, "commands"), f"{line!r}: no such command"
    known = {opt for param in command.params for opt in param.opts}
    used = {w.split("=")[0] for w in words if w.startswith("-") and w != "-"}
    assert used <= known, f"{line!r}: unknown options {sorted(used - known)}"
