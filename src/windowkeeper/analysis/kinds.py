"""What kind of message this is: a handoff, a restated task, a real user turn.

Our own messages are recognized from their text (the handoff markers), never from ``_``
metadata alone, so they are recognized after a reload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.messages import content_text, image_count
from ..core.templates import template

HANDOFF_KEY = "_wk_handoff"

# Read once at import: recognition runs on every message of every compaction.
PREFIX = template("handoff_prefix.txt").strip()
PREFIX_TAG = PREFIX.splitlines()[0]
END_MARKER = template("handoff_end.txt").strip()
IN_PROGRESS_HEADER = template("in_progress.txt").strip()
LIVE_STATE_HEADER = template("live_state.txt").strip()


def prefix() -> str:
    return PREFIX


def end_marker() -> str:
    return END_MARKER


def in_progress_header() -> str:
    return IN_PROGRESS_HEADER


def live_state_header() -> str:
    return LIVE_STATE_HEADER


def prefix_tag() -> str:
    return PREFIX_TAG


def handoff_body(text: str) -> str | None:
    """The body of the handoff contained in ``text``, or ``None`` when there is none."""
    tag = prefix_tag()
    start = text.find(tag)
    if start < 0:
        return None
    after = text[start:]
    head = prefix()
    body = after[len(head) :] if after.startswith(head) else after[len(tag) :]
    end = body.find(end_marker())
    if end >= 0:
        body = body[:end]
    live = body.find(live_state_header())
    if live >= 0:  # re-read live state is current, not summary: never carried forward
        body = body[:live]
    return body.strip()


def _leading_text(content: object) -> str:
    if isinstance(content, str):
        return content.lstrip()[:200]
    if isinstance(content, list):
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) else part
            if isinstance(text, str):
                return text.lstrip()[:200]
    return ""


def is_handoff(message: Mapping[str, Any]) -> bool:
    """True for a standalone handoff or a message carrying a merged one.

    Handoffs are placed at the start of their message, so only its leading text is read
    (tool results, the bulk of a transcript, are never handoffs).
    """
    if message.get(HANDOFF_KEY):
        return True
    role = message.get("role")
    if role != "user" and role != "assistant":
        return False
    content = message.get("content")
    if isinstance(content, str):
        # The common case without copying: most texts do not open with whitespace.
        if content.startswith(PREFIX_TAG):
            return True
        return content[:1].isspace() and content.lstrip().startswith(PREFIX_TAG)
    return _leading_text(content).startswith(PREFIX_TAG)


def is_restated_task(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and content_text(message.get("content")).startswith(
        in_progress_header()
    )


def live_text(message: Mapping[str, Any]) -> str:
    """A message's own text with any merged handoff or restatement header removed."""
    text = content_text(message.get("content"))
    if is_handoff(message):
        marker = end_marker()
        index = text.find(marker)
        text = text[index + len(marker) :] if index >= 0 else ""
    # The header must not survive: a restatement of a restatement would stack another
    # copy on every compaction.
    header = in_progress_header()
    text = text.strip()
    while text.startswith(header):
        text = text[len(header) :].strip()
    return text


def is_real_user(message: Mapping[str, Any]) -> bool:
    """A user message written by the user (not a standalone handoff or empty echo)."""
    if message.get("role") != "user":
        return False
    return bool(live_text(message)) or image_count(message) > 0


def newest_handoff_body(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The body of the newest handoff in the transcript (for resume), if any."""
    for message in reversed(messages):
        if is_handoff(message):
            body = handoff_body(content_text(message.get("content")))
            if body is not None:
                return body
    return None
