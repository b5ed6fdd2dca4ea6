"""Turns of a transcript: adjacent same-role turns merged so roles alternate.

Agent transcripts (Claude Code, Codex) record what the agent sent, and agents send
several user-role items in a row (an interruption note, a command caveat, environment
context, then the user's text). Strict providers and the invariants want alternating
roles, so the readers merge them.
"""

from __future__ import annotations

from ..core.messages import Message
from ..core.turns import merge_adjacent as _merge_adjacent
from .anthropic import THINKING_KEY

__all__ = ("merge_adjacent",)


def merge_adjacent(messages: list[Message], *, drop: tuple[str, ...] = ()) -> list[Message]:
    """Adjacent user (or assistant) turns become one, so roles alternate; calls and
    thinking blocks are concatenated (see :func:`windowkeeper.core.turns.merge_adjacent`)."""
    return _merge_adjacent(messages, concat=("tool_calls", THINKING_KEY), drop=drop)
