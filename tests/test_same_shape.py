"""``compress -`` writes the shape it read: an OpenAI body stays an OpenAI body, an
Anthropic body an Anthropic body, every other field kept; arrays stay arrays."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from factories import long_session
from windowkeeper.adapters.anthropic import from_anthropic
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.adapters.formats import Format, detect_format
from windowkeeper.cli import app as cli
from windowkeeper.core.invariants import violations

pytestmark = pytest.mark.usefixtures("summary_tier")

runner = CliRunner()
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "bash",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        "cache_control": {"type": "ephemeral"},
    }
]


def compress_stdin(body: object) -> Any:
    result = runner.invoke(
        cli.app, ["compress", "-", "--context-length", "16000"], input=json.dumps(body)
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("compressed ")
    return json.loads(result.stdout)


def test_openai_body_in_openai_body_out() -> None:
    messages = long_session(rounds=30)
    body = {
        "model": "gpt-4o-mini",
        "messages": messages,
        "tools": OPENAI_TOOLS,
        "temperature": 0.2,
        "stream": True,
        "metadata": {"run": "r1"},
    }
    out = compress_stdin(body)
    assert list(out) == list(body)  # same fields, same order
    assert {k: v for k, v in out.items() if k != "messages"} == {
        k: v for k, v in body.items() if k != "messages"
    }
    assert len(out["messages"]) < len(messages)
    assert out["messages"][0]["content"].startswith(messages[0]["content"])  # system first
    assert out["messages"][-1] == messages[-1]  # the newest request is kept
    assert violations(out["messages"]) == []
    assert detect_format(json.dumps(out)) is Format.OPENAI


def test_anthropic_body_in_anthropic_body_out() -> None:
    system, turns = to_anthropic(long_session(rounds=30))
    turns[1]["content"].insert(0, {"type": "thinking", "thinking": "plan", "signature": "s1"})
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": system,
        "messages": turns,
        "tools": ANTHROPIC_TOOLS,
        "tool_choice": {"type": "auto"},
    }
    out = compress_stdin(body)
    assert list(out) == list(body)
    for key in ("model", "max_tokens", "tools", "tool_choice"):
        assert out[key] == body[key]  # the Anthropic tool definitions, not OpenAI ones
    assert isinstance(out["system"], str) and out["system"].startswith(system)
    assert len(out["messages"]) < len(turns)
    assert out["messages"][-1] == turns[-1]
    roles = [t["role"] for t in out["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles))  # Anthropic alternation
    assert violations(from_anthropic(out["system"], out["messages"])) == []
    assert detect_format(json.dumps(out)) is Format.ANTHROPIC


def test_json_array_in_json_array_out_and_jsonl_stays_jsonl() -> None:
    messages = long_session(rounds=30)
    out = compress_stdin(messages)
    assert isinstance(out, list) and len(out) < len(messages)
    text = "".join(json.dumps(m) + "\n" for m in messages)
    result = runner.invoke(cli.app, ["compress", "-", "--context-length", "16000"], input=text)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 0 and all("role" in m for m in lines)


def test_if_needed_below_the_threshold_writes_the_body_unchanged_in_its_shape() -> None:
    body = {"model": "m", "messages": long_session(rounds=2), "n": 1}
    result = runner.invoke(
        cli.app,
        ["compress", "-", "--context-length", "200000", "--if-needed"],
        input=json.dumps(body),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == body
