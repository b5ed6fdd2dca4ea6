"""Structural invariants every request must satisfy, as code.

* Tool pairing: every tool result directly follows (inside its group) the assistant
  message that made the call, and every call has exactly one result — except the newest
  assistant's calls while they are still being executed (in flight).
* Alternation: no two adjacent ``user`` messages and no two adjacent ``assistant``
  messages.
* System first: system/developer messages appear only at the start, except in-place
  instructions (:data:`~windowkeeper.core.messages.IN_PLACE_KEY`), which stand between
  turns where the client sent them.

Boundaries between kept and summarized regions are chosen only at *safe* indices (never
inside a tool group); the sanitizer is the logged fallback, not the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .messages import call_id, is_in_place_instruction, tool_calls

SYSTEM_ROLES = frozenset({"system", "developer"})


def in_flight_index(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the newest assistant whose calls may still be executing, if any.

    That is the last assistant-with-calls message when only tool results follow it.
    """
    for index in range(len(messages) - 1, -1, -1):
        role = messages[index].get("role")
        if role == "tool":
            continue
        if role == "assistant" and tool_calls(messages[index]):
            return index
        return None
    return None


def group_end(messages: Sequence[Mapping[str, Any]], start: int) -> int:
    """Index after the tool results that directly follow ``messages[start]``."""
    end = start + 1
    while end < len(messages) and messages[end].get("role") == "tool":
        end += 1
    return end


def pairing_violations(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Tool-pairing defects, one readable string each (empty when valid)."""
    problems: list[str] = []
    flight = in_flight_index(messages)
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.get("role") == "tool":
            problems.append(f"message {index}: tool result without a preceding call")
            index += 1
            continue
        calls = tool_calls(message)
        if not calls:
            index += 1
            continue
        end = group_end(messages, index)
        wanted = [call_id(c) for c in calls]
        seen = [str(m.get("tool_call_id")) for m in messages[index + 1 : end]]
        for result_index, result_id in enumerate(seen, start=index + 1):
            if result_id not in wanted:
                problems.append(f"message {result_index}: result {result_id!r} has no call")
            elif seen.count(result_id) > 1 and seen.index(result_id) != result_index - index - 1:
                problems.append(f"message {result_index}: duplicate result {result_id!r}")
        if index != flight:
            problems.extend(
                f"message {index}: call {cid!r} has no result" for cid in wanted if cid not in seen
            )
        index = end
    return problems


def is_paired(messages: Sequence[Mapping[str, Any]], *, in_flight: bool = True) -> bool:
    """``not pairing_violations(messages)`` in one walk that stops at the first defect and
    builds no defect text, no list of calls and no list of results: a clean history (the
    usual case) is checked whole on every compaction's output and every gateway request.
    ``in_flight=False``: the newest calls need their results too (a request about to be
    sent, where ``sanitize_tool_pairs(..., sent=True)`` repairs calls still in flight).

    What must hold to agree with :func:`pairing_violations`: a group is an assistant
    message with dict calls and the tool results right after it; each result's id is one
    of the calls' (as ``str``), none twice; every call has its result unless the group
    ends the list (the calls in flight). Ids compare as the full check compares them
    (:func:`call_id`, ``str`` of ``tool_call_id``); a repeated call id needs one result."""
    count = len(messages)
    index = 0
    while index < count:
        message = messages[index]
        role = message.get("role")
        if role == "tool":
            return False  # a result without a preceding call
        index += 1
        calls = message.get("tool_calls") if role == "assistant" else None
        if not calls or not isinstance(calls, list):
            continue
        wanted = {call_id(call) for call in calls if isinstance(call, dict)}
        if not wanted:
            continue  # no call to answer: a result after it is an orphan, found above
        start = index
        while index < count and messages[index].get("role") == "tool":
            index += 1
        seen = {str(result.get("tool_call_id")) for result in messages[start:index]}
        if len(seen) != index - start or not seen <= wanted:
            return False  # a duplicate result, or one whose call is not here
        if len(seen) != len(wanted) and (index < count or not in_flight):
            return False  # a call without its result, and not in flight
    return True


def alternation_violations(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    for index in range(1, len(messages)):
        role = messages[index].get("role")
        if role in {"user", "assistant"} and role == messages[index - 1].get("role"):
            problems.append(f"messages {index - 1}-{index}: two adjacent {role} messages")
    return problems


def system_first_violations(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    leading = 0
    while leading < len(messages) and messages[leading].get("role") in SYSTEM_ROLES:
        leading += 1
    return [
        f"message {i}: system message after the start"
        for i in range(leading, len(messages))
        if messages[i].get("role") in SYSTEM_ROLES and not is_in_place_instruction(messages[i])
    ]


def violations(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """All invariant violations of a message list."""
    return (
        pairing_violations(messages)
        + alternation_violations(messages)
        + system_first_violations(messages)
    )


def is_safe_cut(messages: Sequence[Mapping[str, Any]], index: int) -> bool:
    """A boundary before ``index`` never separates a call from its results."""
    return index >= len(messages) or messages[index].get("role") != "tool"


def align_back(messages: Sequence[Mapping[str, Any]], index: int) -> int:
    """Move a boundary back to the start of the tool group it falls in."""
    while 0 < index < len(messages) and messages[index].get("role") == "tool":
        index -= 1
    return index


def align_forward(messages: Sequence[Mapping[str, Any]], index: int) -> int:
    """Move a boundary forward past the tool results of the group it falls in."""
    while index < len(messages) and messages[index].get("role") == "tool":
        index += 1
    return index
