"""The handoff message: its framing, recognition and unwrapping (SPEC §6).

A handoff is ``PREFIX + body + END_MARKER``. It is either a standalone message or merged
in front of the first tail message when both roles would break alternation. The content
markers, not ``_`` metadata, identify handoffs after a reload, so they are recognized
from text alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from .messages import Message, content_text, image_count

HANDOFF_KEY = "_wk_handoff"
LEDGER_HEADING = "## State Ledger"


@cache
def template(name: str) -> str:
    """A prompt/marker template shipped in ``windowkeeper/templates``."""
    return (resources.files("windowkeeper") / "templates" / name).read_text(encoding="utf-8")


def prefix() -> str:
    return template("handoff_prefix.txt").strip()


def end_marker() -> str:
    return template("handoff_end.txt").strip()


def system_note() -> str:
    return template("system_note.txt").strip()


def in_progress_header() -> str:
    return template("in_progress.txt").strip()


def live_state_header() -> str:
    return template("live_state.txt").strip()


def _prefix_tag() -> str:
    return prefix().splitlines()[0]


def render_handoff(body: str) -> str:
    """The full handoff text for a section body."""
    return f"{prefix()}\n\n{body.strip()}\n\n{end_marker()}"


def handoff_body(text: str) -> str | None:
    """The body of the handoff contained in ``text``, or ``None`` when there is none."""
    tag = _prefix_tag()
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
    if message.get("role") not in ("user", "assistant"):
        return False
    return _leading_text(message.get("content")).startswith(_prefix_tag())


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
        and _prefix_tag() in str(part.get("text"))
    )


def newest_handoff_body(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The body of the newest handoff in the transcript (for resume), if any."""
    for message in reversed(messages):
        if is_handoff(message):
            body = handoff_body(content_text(message.get("content")))
            if body is not None:
                return body
    return None


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
