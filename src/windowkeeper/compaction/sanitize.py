"""Repair of tool-call/result pairing: the logged fallback, never the plan.

Orphan results (their call is gone) are removed; calls that lost their result get a stub
result so strict providers accept the request; a result found elsewhere is moved next
to its call. The newest assistant's calls that are still executing are left alone.
A call whose id an earlier call already took (a repeated turn) is removed from the later
message. Turns of one role left side by side (an orphan removed from between two assistants, or
a history that arrived so) are merged, so the output passes every check of
:func:`windowkeeper.core.invariants.violations` that pairing affects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.invariants import (
    SYSTEM_ROLES,
    alternation_violations,
    group_end,
    in_flight_index,
    is_paired,
)
from ..core.messages import Message, call_id, content_text, image_count, tool_calls
from ..core.turns import merge_adjacent

log = logging.getLogger("windowkeeper.compaction.sanitize")

STUB_RESULT = "[windowkeeper: this call's result was not kept; see the handoff above]"


@dataclass(frozen=True)
class Repairs:
    removed_results: int = 0
    stubbed_calls: int = 0
    moved_results: int = 0
    merged_turns: int = 0
    repeated_calls: int = 0

    @property
    def total(self) -> int:
        return (
            self.removed_results
            + self.stubbed_calls
            + self.moved_results
            + self.merged_turns
            + self.repeated_calls
        )


@dataclass(frozen=True)
class SanitizeResult:
    messages: list[Message]
    repairs: Repairs


def sanitize_tool_pairs(messages: list[Message], *, sent: bool = False) -> SanitizeResult:
    """Return a list whose tool pairing and alternation are valid; the input itself when
    they already are. ``sent``: the list is a request on its way to a provider, where no
    call is still executing, so the newest calls without results get stubs too (strict
    providers refuse a call without its result)."""
    if sent and _unanswered_in_flight(messages):
        return _repaired(messages, None)
    if is_paired(messages):
        if not alternation_violations(messages):
            return SanitizeResult(messages, Repairs())
        merged = merge_adjacent(messages)
        repairs = Repairs(merged_turns=len(messages) - len(merged))
        log.warning("repaired alternation: %d adjacent turns merged", repairs.merged_turns)
        return SanitizeResult(merged, repairs)
    return _repaired(messages, in_flight_index(messages))


def _unanswered_in_flight(messages: list[Message]) -> bool:
    """Whether the newest assistant's calls lack a result (fine while they execute)."""
    flight = in_flight_index(messages)
    if flight is None:
        return False
    answered = {str(m.get("tool_call_id")) for m in messages[flight + 1 :]}
    return any(call_id(c) not in answered for c in tool_calls(messages[flight]))


def _repaired(messages: list[Message], flight: int | None) -> SanitizeResult:
    """The pairing repair itself; ``flight``: the assistant whose calls are left alone."""
    results: dict[str, Message] = {}
    for message in messages:
        if message.get("role") == "tool":
            results.setdefault(str(message.get("tool_call_id")), message)
    out: list[Message] = []
    used: set[str] = set()
    stubbed = moved = dropped = 0
    index = 0
    while index < len(messages):
        end = group_end(messages, index)
        turn, lost = _without_answered_calls(messages[index], used)
        dropped += lost
        if turn is None or turn.get("role") == "tool":
            index = end if turn is None else index + 1
            continue
        message = turn
        out.append(message)
        local = {str(m.get("tool_call_id")) for m in messages[index + 1 : end]}
        for cid in (call_id(c) for c in tool_calls(message)):
            if cid in results:
                out.append(results[cid])
                moved += cid not in local
            elif index != flight:
                out.append({"role": "tool", "tool_call_id": cid, "content": STUB_RESULT})
                stubbed += 1
            used.add(cid)
        index = end
    total_results = sum(1 for m in messages if m.get("role") == "tool")
    kept = sum(1 for m in out if m.get("role") == "tool") - stubbed
    merged = merge_adjacent(out)
    repairs = Repairs(total_results - kept, stubbed, moved, len(out) - len(merged), dropped)
    log.warning(
        "repaired tool pairing: %d orphan results removed, %d calls stubbed, %d results "
        "moved, %d adjacent turns merged, %d repeated calls removed",
        repairs.removed_results,
        repairs.stubbed_calls,
        repairs.moved_results,
        repairs.merged_turns,
        repairs.repeated_calls,
    )
    return SanitizeResult(merged, repairs)


def _without_answered_calls(message: Message, used: set[str]) -> tuple[Message | None, int]:
    """The message without the calls whose id an earlier call already took (a repeated
    turn, or one id twice in a message: its result belongs to the first), and how many
    went; ``None`` when nothing else is left of it. One result can answer only one call."""
    calls = tool_calls(message)
    seen = set(used)
    fresh = []
    for call in calls:
        if call_id(call) not in seen:
            seen.add(call_id(call))
            fresh.append(call)
    if len(fresh) == len(calls):
        return message, 0
    kept = {k: v for k, v in message.items() if k != "tool_calls"}
    if fresh:
        kept["tool_calls"] = fresh
    elif not content_text(message.get("content")).strip() and not image_count(message):
        return None, len(calls)
    return kept, len(calls) - len(fresh)


def system_first(messages: list[Message]) -> tuple[list[Message], int]:
    """System/developer messages found after the start moved to the leading block (their
    order kept), and how many moved; the input itself when none are misplaced.

    For input whose system message landed mid-history (a file edited or concatenated by
    hand): every provider reads instructions at the start, and the invariants require it.
    Run it before :func:`sanitize_tool_pairs`, which merges the turns a move made adjacent.
    """
    leading = 0
    while leading < len(messages) and messages[leading].get("role") in SYSTEM_ROLES:
        leading += 1
    late = [m for m in messages[leading:] if m.get("role") in SYSTEM_ROLES]
    if not late:
        return messages, 0
    rest = [m for m in messages[leading:] if m.get("role") not in SYSTEM_ROLES]
    return [*messages[:leading], *late, *rest], len(late)


def has_valid_pairing(messages: Sequence[Message]) -> bool:
    return is_paired(messages)
