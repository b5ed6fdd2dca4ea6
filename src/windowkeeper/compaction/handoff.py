"""The handoff message: its framing, recognition and unwrapping (design §5).

A handoff is ``PREFIX + body + END_MARKER``. It is either a standalone message or merged
in front of the first tail message when both roles would break alternation. The content
markers, not ``_`` metadata, identify handoffs after a reload, so they are recognized
from text alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..analysis.kinds import HANDOFF_KEY, end_marker, is_handoff, prefix, prefix_tag
from ..core.messages import Message
from ..core.templates import template

LEDGER_HEADING = "## State Ledger"


# Read once at import, as the handoff's markers are (analysis.kinds).
SYSTEM_NOTE = template("system_note.txt").strip()


def system_note() -> str:
    return SYSTEM_NOTE


def render_handoff(body: str) -> str:
    """The full handoff text for a section body."""
    return f"{prefix()}\n\n{body.strip()}\n\n{end_marker()}"


def unwrap(message: Message) -> Message | None:
    """The message without its handoff: ``None`` for a standalone handoff.

    A merged carrier gets back the content it had before the handoff was merged in.
    """
    if not is_handoff(message):
        return message
    content = message.get("content")
    marker = end_marker()
    if isinstance(content, str):
        index = content.find(marker)
        rest = content[index + len(marker) :].lstrip("\n") if index >= 0 else ""
        if not rest and not message.get("tool_calls"):
            return None
        restored = {k: v for k, v in message.items() if k != HANDOFF_KEY}
        restored["content"] = rest or None
        return restored
    if isinstance(content, list):
        parts = [p for p in content if not _is_handoff_part(p)]
        if not parts and not message.get("tool_calls"):
            return None
        restored = {k: v for k, v in message.items() if k != HANDOFF_KEY}
        restored["content"] = parts or None
        return restored
    return None


def _is_handoff_part(part: object) -> bool:
    return (
        isinstance(part, Mapping)
        and isinstance(part.get("text"), str)
        and prefix_tag() in str(part.get("text"))
    )


def split_ledger(body: str) -> tuple[str, str]:
    """Split a handoff body into (sections, ledger text); the ledger may be empty."""
    index = body.find(LEDGER_HEADING)
    if index < 0:
        return body.strip(), ""
    return body[:index].strip(), body[index:].strip()


def merge_into(message: Message, handoff_text: str) -> Message:
    """A copy of ``message`` with the handoff placed before its own content."""
    merged = dict(message)
    content = message.get("content")
    if isinstance(content, list):
        merged["content"] = [{"type": "text", "text": handoff_text}, *content]
    elif isinstance(content, str) and content:
        merged["content"] = f"{handoff_text}\n\n{content}"
    else:
        merged["content"] = handoff_text
    merged[HANDOFF_KEY] = True
    return merged
