"""Where the protected head ends and the verbatim tail starts (design §4-§5.4).

Both boundaries are only ever placed at safe indices (never inside a tool group). The
tail is chosen by a token budget walked back from the newest message; anchors only move
the tail start backward (the tail only grows), except in a long autonomous run where the
newest user request is restated after the handoff instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.kinds import is_handoff, is_real_user, live_text, user_text
from ..analysis.record import MessageFacts
from ..core.invariants import SYSTEM_ROLES, align_back, align_forward
from ..core.messages import content_text, image_count, tool_calls


@dataclass(frozen=True)
class TailCut:
    """``start``: first tail index. ``restated_user``: a user request left in the middle
    that must be restated verbatim after the handoff (long autonomous run)."""

    start: int
    restated_user: int | None = None


def system_end(messages: Sequence[Mapping[str, Any]]) -> int:
    end = 0
    while end < len(messages) and messages[end].get("role") in SYSTEM_ROLES:
        end += 1
    return end


def head_end(messages: Sequence[Mapping[str, Any]], protect_first_n: int, decayed: bool) -> int:
    """End of the protected head: leading system messages, plus the first
    ``protect_first_n`` others until the first compaction (then the protection decays)."""
    end = system_end(messages)
    if not decayed:
        end = min(len(messages), end + protect_first_n)
    return align_forward(messages, end)


def newest_real_user(
    messages: Sequence[Mapping[str, Any]],
    start: int = 0,
    facts: Sequence[MessageFacts] | None = None,
) -> int | None:
    """Index of the newest real user message at or after ``start`` (``facts``: the
    messages' records, when the caller has them)."""
    if facts is not None:
        for index in range(len(facts) - 1, start - 1, -1):
            if facts[index].real_user:
                return index
        return None
    for index in range(len(messages) - 1, start - 1, -1):
        if is_real_user(messages[index]):
            return index
    return None


def newest_request(
    messages: Sequence[Mapping[str, Any]],
    start: int,
    user: int,
    facts: Sequence[MessageFacts] | None = None,
) -> int | None:
    """The request to restate for the turn that opens at ``user``: that message when the
    user wrote it, else (a harness message: a notification, an interrupt marker, a skill
    document) the newest one before it, at or after ``start``, that the user wrote; a
    harness message is never restated as the request in progress (``facts``: the
    messages' records, which keep what the user wrote, when the caller has them)."""
    for index in range(user, start - 1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        text = facts[index].user_text if facts is not None else user_text(message)
        if text or image_count(message):
            return index
    return None


def _written_request(
    messages: Sequence[Mapping[str, Any]], head: int, user: int | None, cut: int
) -> int | None:
    """The newest written request, to restate, when the newest user send has no text (an
    image alone, an empty parts list), the send is in the tail and that request would
    fall in the middle: the send continues it, and design §9 says the task is never
    dropped. ``None`` otherwise (the send has text or is in the middle itself, or the
    request is in the head or the tail)."""
    if user is None or user < cut or live_text(messages[user]):
        return None  # a send in the middle is restated with its request (restatement())
    for index in range(user - 1, head - 1, -1):
        message = messages[index]
        if message.get("role") == "user" and live_text(message):
            return index if index < cut else None
    return None


def newest_assistant_text(
    messages: Sequence[Mapping[str, Any]],
    start: int,
    facts: Sequence[MessageFacts] | None = None,
) -> int | None:
    for index in range(len(messages) - 1, start - 1, -1):
        if facts is not None:
            record = facts[index]
            if record.role == "assistant" and not record.handoff:
                text = record.text
                if text and not text.isspace():
                    return index
            continue
        message = messages[index]
        if (
            message.get("role") == "assistant"
            and not is_handoff(message)
            and content_text(message.get("content")).strip()
        ):
            return index
    return None


def _walk(costs: Sequence[int], floor: int, ceiling: int, min_count: int) -> int:
    """Walk back from the end while the running total stays within ``ceiling``."""
    if floor < len(costs) and sum(costs[floor:]) <= ceiling:
        # All of it fits (a short session's usual case), so the walk would not stop
        # before ``floor``: what must hold is that no cost is negative (token counts).
        return floor
    total = 0
    cut = len(costs)
    for index in range(len(costs) - 1, floor - 1, -1):
        if total + costs[index] > ceiling and len(costs) - index > min_count:
            break
        total += costs[index]
        cut = index
    return cut


def _has_calls_between(messages: Sequence[Mapping[str, Any]], start: int, end: int) -> bool:
    return any(tool_calls(messages[i]) for i in range(start, end))


def _align_cut(
    messages: Sequence[Mapping[str, Any]],
    costs: Sequence[int],
    cut: int,
    ceiling: int,
    min_tail: int,
) -> int:
    """Move a cut inside a tool group to a group boundary.

    Normally back to the group's assistant message (the group joins the tail). A group
    that alone exceeds the tail ceiling goes forward instead, into the middle, when enough
    tail remains after it: keeping it would blow the tail budget, and in a long autonomous
    run right after a restated request it would leave nothing to compress at all.
    """
    start = align_back(messages, cut)
    if start == cut:
        return cut
    end = align_forward(messages, cut)
    if sum(costs[start:end]) > ceiling and len(messages) - end >= min_tail:
        return end
    return start


def _budget_cut(
    messages: Sequence[Mapping[str, Any]],
    costs: Sequence[int],
    head: int,
    budget: int,
    ceiling: int,
    min_tail: int,
) -> int:
    """Where the tail budget alone puts the cut, at a group boundary (before the anchors
    of :func:`tail_cut` move it)."""
    n = len(messages)
    cut = _walk(costs, head, ceiling, min_tail)
    if cut <= head:
        # Everything fits the soft ceiling: cut on the raw budget so a middle exists.
        cut = _walk(costs, head, budget, min_tail)
    if cut <= head:
        # Even the raw budget holds it all: a compaction (manual, or forced by an
        # overflow) still keeps only the minimum tail. The compressor refuses the result
        # if it would not be smaller.
        cut = max(n - min_tail, head + 1)
    return _align_cut(messages, costs, min(cut, n - min_tail), ceiling, min_tail)


def tail_cut(
    messages: Sequence[Mapping[str, Any]],
    costs: Sequence[int],
    head: int,
    budget: int,
    *,
    soft_ceiling: float = 1.5,
    min_tail: int = 3,
    facts: Sequence[MessageFacts] | None = None,
) -> TailCut:
    """First index of the verbatim tail; ``start <= head`` means nothing to compress."""
    ceiling = int(budget * soft_ceiling)
    cut = _budget_cut(messages, costs, head, budget, ceiling, min_tail)
    user = newest_real_user(messages, head, facts)
    restated = _written_request(messages, head, user, cut)
    if restated is None and user is not None and user < cut:
        user_region = sum(costs[user:])
        # A request that carries an earlier handoff (merged into it) has something to
        # fold into the new one too: restating keeps its own text and drops the rest.
        foldable = _has_calls_between(messages, user, cut) or is_handoff(messages[user])
        # Restating moves the request rather than copying it (the handoff quotes only a
        # short one and points to a long one), so it is worth it whenever the turn's tool
        # rounds overflow the ceiling.
        if user_region > ceiling and foldable and cut > head:
            restated = newest_request(messages, head, user, facts)
        else:
            cut = user
    if restated is None:
        # The newest assistant text joins the tail only when that still fits the ceiling:
        # in a long run after it, anchoring it would leave nothing to compress.
        answer = newest_assistant_text(messages, head, facts)
        if answer is not None and answer < cut:
            start = align_back(messages, answer)
            if sum(costs[start:]) <= ceiling:
                cut = start
    cut = max(cut, align_forward(messages, head))
    if restated is None:
        # The cut may have moved onto a text-less send after the first look (to keep the
        # newest user message): the written request it continues must then be restated.
        restated = _written_request(messages, head, user, cut)
    return TailCut(cut, restated)
