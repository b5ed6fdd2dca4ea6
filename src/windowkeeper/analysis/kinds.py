"""What kind of message this is: a handoff, a restated task, a real user turn.

Our own messages are recognized from their text (the handoff markers), never from ``_``
metadata alone, so they are recognized after a reload.
"""

from __future__ import annotations

import re
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
    """A user turn with content (not a standalone handoff or empty echo).

    Synthetic user-role messages (see :func:`user_text`) are user turns too: they anchor
    the verbatim tail like any other, they are only kept out of what the handoff says
    the user asked.
    """
    if message.get("role") != "user":
        return False
    return bool(live_text(message)) or image_count(message) > 0


# Blocks that agents and harnesses inject into user-role messages: notifications,
# reminders, local command output, environment reports, injected instructions. Their
# content is not something the user said.
_SYNTHETIC_TAGS = (
    "system-reminder", "task-notification", "local-command-caveat", "local-command-stdout",
    "local-command-stderr", "bash-stdout", "bash-stderr", "environment_details",
    "environment_context", "user_instructions", "command-message", "command-name",
    "function_results", "tool_result", "ide_opened_file", "ide_selection", "system",
)  # fmt: skip
# A block runs from its opening tag to the first closing tag of the same name, or to the
# end of the text where it is not closed: the opening tag is matched here and the closing
# one found with ``str.find`` (a lazy ``.*?(?:</\1>|\Z)`` tried both at every character).
_SYNTHETIC_OPEN = re.compile(r"<(" + "|".join(map(re.escape, _SYNTHETIC_TAGS)) + r")(?:\s[^>]*)?>")
# A slash command's arguments are what the user typed: the wrapper goes, the text stays.
_KEPT_TAG = re.compile(r"</?command-args>")
_INTERRUPTED = re.compile(r"^\s*\[Request interrupted by user[^\]\n]*\]\s*")
# Whole messages written by a harness, recognized by how they open: pasted compaction
# summaries, hook feedback, automatic "keep going" turns, injected skill documents.
_SYNTHETIC_OPENERS = re.compile(
    r"\s*(?:This session is being continued from a previous conversation"
    r"|Stop hook feedback:|PreToolUse:|PostToolUse:|UserPromptSubmit hook"
    r"|Caveat: The messages below were generated by the user while running local commands"
    r"|Base directory for this skill:"
    r"|Please continue working on the task on whatever approach you think is suitable"
    r"|Continue the conversation from where it left off"
    r"|Read the output file to retrieve the result:"
    r"|\[(?:SYSTEM|System) (?:NOTE|NOTICE|MESSAGE)[^\]\n]*\])",
)


def user_text(message: Mapping[str, Any]) -> str:
    """What the user wrote in a user-role message: its own text without our markers and
    without blocks a harness injected; ``""`` for a message no user wrote (a notification,
    an interrupt marker, a pasted summary, hook feedback, an environment report)."""
    if message.get("role") != "user":
        return ""
    text = live_text(message)
    if not text or ("<" not in text and "[" not in text and not _may_open_synthetic(text)):
        return text
    if "<" in text:
        text = _KEPT_TAG.sub("", _without_blocks(text)).strip()
    text = _INTERRUPTED.sub("", text)
    if _SYNTHETIC_OPENERS.match(text):
        return ""
    return text.strip()


def _without_blocks(text: str) -> str:
    """``text`` without the blocks a harness injected (see :data:`_SYNTHETIC_OPEN`)."""
    search = _SYNTHETIC_OPEN.search
    found = search(text)
    if found is None:
        return text
    parts = []
    kept = 0
    while found is not None:
        parts.append(text[kept : found.start()])
        tag = found[1]
        close = text.find(f"</{tag}>", found.end())
        if close < 0:  # not closed: the block runs to the end
            return "".join(parts)
        kept = close + len(tag) + 3
        found = search(text, kept)
    parts.append(text[kept:])
    return "".join(parts)


def _may_open_synthetic(text: str) -> bool:
    head = text[:200].lstrip()
    return head[:1] in "TSPUCBR[" and _SYNTHETIC_OPENERS.match(head) is not None


def newest_handoff_body(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The body of the newest handoff in the transcript (for resume), if any."""
    for message in reversed(messages):
        if is_handoff(message):
            body = handoff_body(content_text(message.get("content")))
            if body is not None:
                return body
    return None
