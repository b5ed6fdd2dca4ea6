"""Turns of a transcript: adjacent same-role turns merged so roles alternate.

Agent transcripts (Claude Code, Codex) record what the agent sent, and agents send
several user-role items in a row (an interruption note, a command caveat, environment
context, then the user's text). Strict providers and the invariants want alternating
roles, so the readers merge them.
"""

from __future__ import annotations

from typing import Any

from ..core.messages import Message
from .anthropic import THINKING_KEY

__all__ = ("merge_adjacent",)

_ROLES = frozenset({"user", "assistant"})


def _as_parts(content: object) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str) and content:
        return [{"type": "text", "text": content}]
    return []


def _joined(first: object, second: object) -> object:
    if first is None or first == "":
        return second
    if second is None or second == "":
        return first
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return _as_parts(first) + _as_parts(second)


def merge_adjacent(messages: list[Message], *, drop: tuple[str, ...] = ()) -> list[Message]:
    """Adjacent user (or assistant) turns become one, so roles alternate. Texts are joined
    by a blank line, calls and thinking concatenated; ``drop`` names private keys that
    describe one source message and are wrong for a merged one."""
    out: list[Message] = []
    for message in messages:
        role = message.get("role")
        previous = out[-1] if out else None
        if previous is None or role not in _ROLES or previous.get("role") != role:
            out.append(message)
            continue
        merged = {k: v for k, v in previous.items() if k not in drop}
        merged["content"] = _joined(previous.get("content"), message.get("content"))
        for key in ("tool_calls", THINKING_KEY):
            values = [*(previous.get(key) or []), *(message.get(key) or [])]
            if values:
                merged[key] = values
        out[-1] = merged
    return out
