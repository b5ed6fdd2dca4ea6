"""Adjacent same-role turns merged into one, so user and assistant roles alternate.

Used where a history arrives with two user (or two assistant) turns in a row: agent
transcripts that record several user items per send, and a pairing repair whose removed
orphan result leaves two assistants side by side. Strict providers and
:func:`windowkeeper.core.invariants.violations` want alternating roles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .messages import Message

__all__ = ("merge_adjacent",)

_ROLES = frozenset({"user", "assistant"})


def _as_parts(content: object) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str) and content:
        return [{"type": "text", "text": content}]
    return []


def _joined(first: object, second: object) -> object:
    if first is None or first == "" or first == []:
        return second
    if second is None or second == "" or second == []:
        return first
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return _as_parts(first) + _as_parts(second)


def merge_adjacent(
    messages: list[Message],
    *,
    concat: Sequence[str] = ("tool_calls",),
    drop: Sequence[str] = (),
) -> list[Message]:
    """Adjacent user (or assistant) turns become one; the input itself when none are.

    Texts are joined by a blank line; the list-valued keys ``concat`` names (calls, and
    whatever a reader keeps beside them) are concatenated, and left out when empty
    (``tool_calls: []`` is refused by strict providers); ``drop`` names private keys that
    describe one source message and are wrong for a merged one."""
    out: list[Message] = []
    for message in messages:
        role = message.get("role")
        previous = out[-1] if out else None
        if previous is None or role not in _ROLES or previous.get("role") != role:
            out.append(message)
            continue
        merged = {k: v for k, v in previous.items() if k not in drop and k not in concat}
        merged["content"] = _joined(previous.get("content"), message.get("content"))
        for key in concat:
            values = [*(previous.get(key) or []), *(message.get(key) or [])]
            if values:
                merged[key] = values
        out[-1] = merged
    return out if len(out) < len(messages) else messages
