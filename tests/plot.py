"""Keeping the plot: replaying a transcript through the manager while watching what the
agent still sees after every compaction (shared by the plot tests and benchmarks).

A replay sends each assistant turn as a request carrying everything before it, exactly as
``windowkeeper.replay`` does; here every compaction is followed by a check of the
working context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from windowkeeper import CompressionConfig, ContextCompressor, ContextManager
from windowkeeper.analysis.kinds import live_text, user_text
from windowkeeper.core.messages import content_text

Message = dict[str, Any]

KINDS = ("preference", "value", "ban", "decision")


def planted_fact(kind: str, tag: str) -> str:
    """A user-stated fact of one kind, unique by ``tag`` (our own wording and values)."""
    number = sum(ord(c) for c in tag) * 37 % 90_000 + 10_000
    return {
        "preference": f"For this work I prefer early returns over nested if blocks ({tag}).",
        "value": f"The staging service for {tag} listens on port {number}.",
        "ban": f"Never edit anything under vendor/{tag}/ while doing this.",
        "decision": f"We will keep SQLite for the {tag} cache because the host has no Redis.",
    }[kind]


def plant(messages: Sequence[Message], tag: str) -> tuple[list[Message], list[Message]]:
    """``messages`` with one user message per fact kind planted early, mid and late (at
    turn boundaries: after an assistant text or a complete tool group), and the planted
    messages themselves."""
    spots = _boundaries(messages)
    if len(spots) < 3:
        return list(messages), []
    chosen = [spots[len(spots) // 8], spots[len(spots) // 2], spots[len(spots) * 7 // 8]]
    planted: list[Message] = []
    out: list[Message] = []
    for index, message in enumerate(messages):
        out.append(message)
        if index in chosen:
            where = ("early", "mid", "late")[chosen.index(index)]
            text = " ".join(planted_fact(kind, f"{tag}-{where}") for kind in KINDS)
            fact: Message = {"role": "user", "content": text}
            out.append(fact)
            planted.append(fact)
    return out, planted


def _boundaries(messages: Sequence[Message]) -> list[int]:
    """Indices after which a user message keeps the conversation valid."""
    found = []
    for index in range(1, len(messages) - 1):
        here, after = messages[index], messages[index + 1]
        if after.get("role") == "tool" or after.get("role") == "user":
            continue
        if here.get("role") == "tool" or (
            here.get("role") == "assistant" and not here.get("tool_calls")
        ):
            found.append(index)
    return found


@dataclass
class Watched:
    """What a replay saw: the compaction count, and per compaction the context text."""

    compactions: int = 0
    final: str = ""
    """The text of the working context at the end of the replay."""


def replay_watching(
    messages: Sequence[Message],
    window: int,
    config: CompressionConfig | None = None,
    check: Callable[[int, list[Message], str], None] | None = None,
    appended: Callable[[Message], None] | None = None,
) -> Watched:
    """Replay ``messages`` at ``window``; after each compaction call ``check(ordinal,
    context, text)`` with the working list and its text; ``appended(message)`` as each
    message joins the working list."""
    engine = ContextCompressor(config, context_length=window)
    manager = ContextManager(engine)
    watched = Watched()
    working: list[Message] = []
    for message in messages:
        if message.get("role") == "assistant" and working:
            sent = manager.preflight(working)
            _note(engine, watched, sent, check)
            working = manager.after_response({"prompt_tokens": manager.estimate(sent)}, sent)
            _note(engine, watched, working, check)
        working.append(message)
        if appended is not None:
            appended(message)
    watched.final = "\n".join(content_text(m.get("content")) for m in working)
    return watched


def _note(
    engine: ContextCompressor,
    watched: Watched,
    context: list[Message],
    check: Callable[[int, list[Message], str], None] | None,
) -> None:
    while watched.compactions < engine.compression_count:
        watched.compactions += 1
        text = "\n".join(content_text(m.get("content")) for m in context)
        if check is not None:
            check(watched.compactions, context, text)


def first_task(messages: Sequence[Message]) -> str | None:
    """The text of the session's first message a user wrote (verbatim)."""
    for message in messages:
        if message.get("role") == "user" and user_text(message):
            return live_text(message)
    return None
