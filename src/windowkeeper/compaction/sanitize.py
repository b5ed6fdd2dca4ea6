"""Repair of tool-call/result pairing: the logged fallback, never the plan.

Orphan results (their call is gone) are removed; calls that lost their result get a stub
result so strict providers accept the request; a result found elsewhere is moved next
to its call. The newest assistant's calls that are still executing are left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.invariants import group_end, in_flight_index, pairing_violations
from ..core.messages import Message, call_id, tool_calls

log = logging.getLogger("windowkeeper.compaction.sanitize")

STUB_RESULT = "[windowkeeper: this call's result was not kept; see the handoff above]"


@dataclass(frozen=True)
class Repairs:
    removed_results: int = 0
    stubbed_calls: int = 0
    moved_results: int = 0

    @property
    def total(self) -> int:
        return self.removed_results + self.stubbed_calls + self.moved_results


@dataclass(frozen=True)
class SanitizeResult:
    messages: list[Message]
    repairs: Repairs


def sanitize_tool_pairs(messages: list[Message]) -> SanitizeResult:
    """Return a list whose tool pairing is valid; the input itself when it already is."""
    if not pairing_violations(messages):
        return SanitizeResult(messages, Repairs())
    results: dict[str, Message] = {}
    for message in messages:
        if message.get("role") == "tool":
            results.setdefault(str(message.get("tool_call_id")), message)
    flight = in_flight_index(messages)
    out: list[Message] = []
    used: set[str] = set()
    stubbed = moved = 0
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.get("role") == "tool":
            index += 1
            continue
        out.append(message)
        calls = tool_calls(message)
        end = group_end(messages, index)
        local = {str(m.get("tool_call_id")) for m in messages[index + 1 : end]}
        for cid in (call_id(c) for c in calls):
            if cid in used:
                continue
            if cid in results:
                out.append(results[cid])
                used.add(cid)
                moved += cid not in local
            elif index != flight:
                out.append({"role": "tool", "tool_call_id": cid, "content": STUB_RESULT})
                used.add(cid)
                stubbed += 1
        index = end
    total_results = sum(1 for m in messages if m.get("role") == "tool")
    kept = sum(1 for m in out if m.get("role") == "tool") - stubbed
    repairs = Repairs(total_results - kept, stubbed, moved)
    log.warning(
        "repaired tool pairing: %d orphan results removed, %d calls stubbed, %d results moved",
        repairs.removed_results,
        repairs.stubbed_calls,
        repairs.moved_results,
    )
    return SanitizeResult(out, repairs)


def has_valid_pairing(messages: Sequence[Message]) -> bool:
    return not pairing_violations(messages)
