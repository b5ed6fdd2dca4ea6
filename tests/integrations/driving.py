"""Driving a recorded session through a framework's own agent loop, turn by turn.

A recorded session (synthetic, or a real one from ``../shared/data/sessions``) is split
into user turns. Each framework test runs its real agent loop once per user turn, with a
scripted model that answers with the recorded assistant messages and tools that answer
with the recorded results (by tool-call id). :class:`Watch` sees every request the model
receives, converted to canonical messages, and checks it:

- it is under the window (estimate of messages + system prompt + tool schemas);
- its tool pairs are valid (``windowkeeper.core.invariants.violations``);
- the compaction persists: a request either extends the previous one (the previous
  request, the model's answer, new results/user text) or follows a new compaction. So
  the number of "prefix breaks" equals the number of compactions, and the early
  originals never come back once compacted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from factories import long_session
from realdata import SESSIONS_DIR
from windowkeeper.analysis.kinds import is_handoff
from windowkeeper.core.config import usable_window
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import call_id, call_name, message_text, tool_calls
from windowkeeper.core.tokens import estimate_request_tokens

Message = dict[str, Any]
REAL_SESSIONS = ("cc_spotter_258c7280", "openhands_sonnet35_django__django-11299")
SYNTHETIC_WINDOW = 16_000
REAL_WINDOW = 32_000
DONE = "Done with this step."


@dataclass
class UserTurn:
    user: Message
    responses: list[Message]


@dataclass
class Recorded:
    """A session ready to be replayed by a framework."""

    name: str
    system: str | None
    turns: list[UserTurn]
    results: dict[str, str]
    tools: list[dict[str, Any]]
    context_length: int

    @property
    def tool_names(self) -> list[str]:
        return [str(t["function"]["name"]) for t in self.tools]


def _schema(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }


def recorded(name: str, messages: Sequence[Message], tools: Any, window: int) -> Recorded:
    system = None
    rest = list(messages)
    if rest and rest[0]["role"] == "system":
        system = message_text(rest.pop(0))
    turns: list[UserTurn] = []
    results: dict[str, str] = {}
    for message in rest:
        if message["role"] == "user":
            turns.append(UserTurn(message, []))
        elif message["role"] == "assistant" and turns:
            turns[-1].responses.append(message)
        elif message["role"] == "tool":
            results[str(message["tool_call_id"])] = message_text(message)
    names = sorted({call_name(c) for t in turns for m in t.responses for c in tool_calls(m)})
    known = {t["function"]["name"] for t in tools or []}
    schemas = [t for t in tools or [] if t["function"]["name"] in names]
    schemas += [_schema(n) for n in names if n not in known]
    return Recorded(name, system, turns, results, schemas, window)


def synthetic() -> Recorded:
    return recorded("synthetic", long_session(rounds=40), None, SYNTHETIC_WINDOW)


def real(name: str) -> Recorded:
    path = SESSIONS_DIR / f"{name}.jsonl"
    if not path.is_file():
        pytest.skip(f"real session {path} not available")
    messages = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    meta_path = path.with_suffix("").with_suffix(".meta.json")
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    return recorded(name, messages, meta.get("tools"), REAL_WINDOW)


SESSION_PARAMS = [
    "synthetic",
    *(pytest.param(n, marks=pytest.mark.real_sessions) for n in REAL_SESSIONS),
]


def load(name: str) -> Recorded:
    return synthetic() if name == "synthetic" else real(name)


@dataclass
class Script:
    """The scripted model's answers for one user turn, then ``DONE`` text."""

    responses: list[Message]
    position: int = 0

    def next(self) -> Message:
        if self.position < len(self.responses):
            self.position += 1
            return self.responses[self.position - 1]
        return {"role": "assistant", "content": DONE}


def _key(message: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        message.get("role"),
        message_text(message).strip(),
        tuple(call_id(c) for c in tool_calls(message)),
        message.get("tool_call_id"),
    )


@dataclass
class Watch:
    """Checks every request a scripted model receives (see the module docstring)."""

    context_length: int
    tools: list[dict[str, Any]] | None
    max_tokens: int | None = None
    requests: list[list[Message]] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    @property
    def window(self) -> int:
        return usable_window(self.context_length, self.max_tokens)

    def estimate(self, request: Sequence[Message]) -> int:
        return estimate_request_tokens(list(request), self.tools)

    def see(self, request: list[Message]) -> None:
        tokens = self.estimate(request)
        assert tokens < self.window, f"request {len(self.requests)}: {tokens} tokens"
        assert violations(request) == [], f"request {len(self.requests)}: {violations(request)}"
        self.requests.append(request)
        self.tokens.append(tokens)

    def prefix_breaks(self) -> list[int]:
        """Indices of the requests that do not extend the previous request."""
        breaks = []
        for index in range(1, len(self.requests)):
            old = [_key(m) for m in self.requests[index - 1]]
            new = [_key(m) for m in self.requests[index]]
            if new[: len(old)] != old:
                breaks.append(index)
        return breaks

    def assert_compacted_and_persistent(self, compactions: int) -> None:
        """At least one compaction; each one is exactly one prefix break; and what a
        compaction replaced (tool calls and results, by id and text) never comes back."""
        assert compactions >= 1, "the session never needed a compaction: window too large"
        breaks = self.prefix_breaks()
        assert len(breaks) == compactions, f"{len(breaks)} prefix breaks, {compactions} compactions"
        dropped: set[tuple[Any, ...]] = set()
        for index, request in enumerate(self.requests):
            keys = {_key(m) for m in request}
            assert not keys & dropped, f"request {index} brings back compacted messages"
            if index + 1 in breaks:
                after = {_key(m) for m in self.requests[index + 1]}
                dropped |= {k for k in keys - after if k[2] or k[3]}


def arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(call["function"]["arguments"] or "{}")
    except ValueError:
        return {"raw": call["function"]["arguments"]}
    return value if isinstance(value, dict) else {"raw": value}


def session_path(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sessions.db'}"


def args_key(name: str, args: Mapping[str, Any]) -> tuple[str, str]:
    return name, json.dumps(dict(args), sort_keys=True, default=str)


@dataclass
class Replayer:
    """The scripted model's side (``respond``) and the tools' side (``result``).

    Tools receive a call's name and arguments, not its id: the ids of the calls the model
    just made are queued per (name, arguments), so each tool answers with the recorded
    result of its own call, whatever order the framework runs them in.
    """

    session: Recorded
    script: Script = field(default_factory=lambda: Script([]))
    pending: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def start(self, turn: UserTurn) -> None:
        self.script = Script(turn.responses)

    def respond(self) -> Message:
        response = self.script.next()
        for call in tool_calls(response):
            key = args_key(call_name(call), arguments(call))
            self.pending.setdefault(key, []).append(call_id(call))
        return response

    def result(self, name: str, args: Mapping[str, Any]) -> str:
        ids = self.pending.get(args_key(name, args))
        assert ids, f"the model made no pending call {name}({dict(args)})"
        return self.session.results.get(ids.pop(0), "(no recorded result)")


def holds_a_compaction(messages: Sequence[Mapping[str, Any]]) -> bool:
    """A handoff (a summary compaction) or a pruned tool output (a prune-only one)."""
    return any(
        is_handoff(m) or (m.get("role") == "tool" and "(ref wk" in str(m.get("content")))
        for m in messages
    )
