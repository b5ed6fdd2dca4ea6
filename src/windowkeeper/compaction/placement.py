"""Assembling head + handoff + tail without breaking alternation (design §4).

The handoff takes whichever of ``user``/``assistant`` differs from both neighbours. If
both roles collide it is merged in front of the first tail message. When it would be
the first message after the system prompt it is a ``user`` message, and a session always
keeps at least one user message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.kinds import (
    HANDOFF_KEY,
    in_progress_header,
    is_handoff,
    is_real_user,
    is_restated_task,
    live_text,
)
from ..core.invariants import SYSTEM_ROLES
from ..core.messages import Message, message_text
from .handoff import merge_into, system_note

_TURN_ROLES = ("user", "assistant")


def with_system_note(head: list[Message]) -> list[Message]:
    """Append the one-time compaction note to the leading system message (once)."""
    if not head or head[0].get("role") not in SYSTEM_ROLES:
        return head
    note = system_note()
    content = head[0].get("content")
    if isinstance(content, list):
        if any(isinstance(p, Mapping) and p.get("text") == note for p in content):
            return head
        new_content: object = [*content, {"type": "text", "text": note}]
    else:
        text = content if isinstance(content, str) else ""
        if note in text:
            return head
        new_content = f"{text}\n\n{note}" if text else note
    return [{**head[0], "content": new_content}, *head[1:]]


def _role(message: Mapping[str, Any] | None) -> str | None:
    return None if message is None else str(message.get("role"))


def _pick_role(before: str | None, after: str | None, need_user: bool) -> str | None:
    """A handoff role legal between ``before`` and ``after``; ``None`` if both collide."""
    first_turn = before is None or before in SYSTEM_ROLES
    candidates = ("user",) if first_turn or need_user else ("assistant", "user")
    if before == "tool" and not need_user:
        candidates = ("user", "assistant")
    for role in candidates:
        if role != before and role != after:
            return role
    if need_user and not first_turn and "assistant" not in (before, after):
        # A user handoff would sit beside a user message (one without text, as no real
        # user message is left): that neighbour keeps the session's user turn.
        return "assistant"
    return None


def place_handoff(
    head: list[Message],
    handoff_text: str,
    tail: list[Message],
    restated: Message | None = None,
) -> list[Message]:
    """Head, then the handoff (and a restated in-progress request), then the tail."""
    before = _role(head[-1]) if head else None
    after = _role(tail[0]) if tail else None
    if restated is not None:
        return _with_restated(head, handoff_text, tail, restated, before, after)
    need_user = not any(is_real_user(m) for m in (*head, *tail))
    role = _pick_role(before, after, need_user)
    if role is not None:
        return [*head, _handoff_message(role, handoff_text), *tail]
    if tail:
        return [*head, merge_into(tail[0], handoff_text), *tail[1:]]
    return [*head, _handoff_message("user", handoff_text)]


def _with_restated(
    head: list[Message],
    handoff_text: str,
    tail: list[Message],
    restated: Message,
    before: str | None,
    after: str | None,
) -> list[Message]:
    """Head, the handoff, the restated request, the tail, alternating. A tail that opens
    with a user message (one without text: the request itself is restated) takes the
    restated request, and the handoff too when the head ends with an assistant turn."""
    wrapped = is_handoff(restated) or is_restated_task(restated)
    request = live_text(restated) if wrapped else message_text(restated)
    task = f"{in_progress_header()}\n\n{request}"
    if after == "user":
        opener = _with_parts(tail[0], extra_parts(restated))
        if before == "user":
            handoff = _handoff_message("assistant", handoff_text)
            return [*head, handoff, _prepend(opener, task), *tail[1:]]
        return [*head, merge_into(opener, f"{handoff_text}\n\n{task}"), *tail[1:]]
    if before == "user":
        middle = [_handoff_message("assistant", handoff_text), _user(task, restated)]
    else:
        middle = [_user(f"{handoff_text}\n\n{task}", restated, handoff=True)]
    return [*head, *middle, *tail]


def extra_parts(message: Mapping[str, Any]) -> list[Any]:
    """The non-text parts (images, files) of a message's content."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [p for p in content if not (isinstance(p, Mapping) and "text" in p)]


def _with_parts(message: Message, parts: list[Any]) -> Message:
    """``message`` with ``parts`` added before its own content parts."""
    if not parts:
        return message
    content = message.get("content")
    own = content if isinstance(content, list) else []
    if isinstance(content, str) and content.strip():
        own = [{"type": "text", "text": content}]
    return {**message, "content": [*parts, *own]}


def _prepend(message: Message, text: str) -> Message:
    """A copy of ``message`` with ``text`` before its own content."""
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [{"type": "text", "text": text}, *content]}
    own = content.strip() if isinstance(content, str) else ""
    return {**message, "content": f"{text}\n\n{own}" if own else text}


def _handoff_message(role: str, text: str) -> Message:
    return {"role": role, "content": text, HANDOFF_KEY: True}


def _user(text: str, original: Mapping[str, Any], *, handoff: bool = False) -> Message:
    """A restated request; image parts of the original are carried over."""
    message: Message = {"role": "user", "content": text}
    extra = extra_parts(original)
    if extra:
        message["content"] = [{"type": "text", "text": text}, *extra]
    if handoff:
        message[HANDOFF_KEY] = True
    return message


def turn_roles(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(m.get("role")) for m in messages if m.get("role") in _TURN_ROLES]
