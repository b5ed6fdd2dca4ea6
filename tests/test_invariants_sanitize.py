from __future__ import annotations

import copy

from factories import assistant, call, system, tool, user
from windowkeeper.compaction.sanitize import STUB_RESULT, sanitize_tool_pairs
from windowkeeper.core.invariants import (
    align_back,
    align_forward,
    alternation_violations,
    in_flight_index,
    pairing_violations,
    system_first_violations,
    violations,
)


def _valid() -> list[dict[str, object]]:
    return [
        system(),
        user("go"),
        assistant(None, call("a", "bash", command="ls"), call("b", "bash", command="pwd")),
        tool("a", "x"),
        tool("b", "/"),
        assistant("done"),
    ]


def test_valid_conversation_has_no_violations() -> None:
    assert violations(_valid()) == []


def test_pairing_detects_orphans_and_missing_results() -> None:
    messages = _valid()
    del messages[3]
    assert pairing_violations(messages) == ["message 2: call 'a' has no result"]
    orphan = [user("go"), tool("zz", "x"), assistant("ok")]
    assert pairing_violations(orphan) == ["message 1: tool result without a preceding call"]


def test_in_flight_call_is_not_a_violation() -> None:
    messages = [user("go"), assistant(None, call("a", "bash", command="sleep 100"))]
    assert in_flight_index(messages) == 1
    assert pairing_violations(messages) == []
    partially = [*_valid()[:4]]  # parallel calls still executing: only 'a' answered so far
    assert pairing_violations(partially) == []


def test_alternation_and_system_first() -> None:
    assert alternation_violations([user("a"), user("b")]) == [
        "messages 0-1: two adjacent user messages"
    ]
    assert system_first_violations([user("a"), system()]) == [
        "message 1: system message after the start"
    ]


def test_alignment_never_splits_a_group() -> None:
    messages = _valid()
    assert align_back(messages, 4) == 2
    assert align_back(messages, 3) == 2
    assert align_forward(messages, 3) == 5
    assert align_forward(messages, 5) == 5


def test_sanitizer_is_identity_on_valid_input() -> None:
    messages = _valid()
    result = sanitize_tool_pairs(messages)
    assert result.messages is messages
    assert result.repairs.total == 0


def test_sanitizer_stubs_lost_results_and_drops_orphans() -> None:
    messages = [
        user("go"),
        assistant(None, call("a", "bash", command="ls"), call("b", "bash", command="pwd")),
        tool("a", "x"),
        tool("zz", "orphan"),
        assistant("done"),
        user("and?"),
    ]
    snapshot = copy.deepcopy(messages)
    result = sanitize_tool_pairs(messages)
    assert messages == snapshot
    assert pairing_violations(result.messages) == []
    assert [m.get("tool_call_id") for m in result.messages if m["role"] == "tool"] == ["a", "b"]
    assert result.messages[3]["content"] == STUB_RESULT
    assert result.repairs.removed_results == 1 and result.repairs.stubbed_calls == 1


def test_sanitizer_moves_a_misplaced_result_next_to_its_call() -> None:
    messages = [
        user("go"),
        assistant(None, call("a", "bash", command="ls")),
        tool("b", "late"),
        assistant(None, call("b", "bash", command="pwd")),
        tool("a", "x"),
        assistant("done"),
    ]
    result = sanitize_tool_pairs(messages)
    assert pairing_violations(result.messages) == []
    assert result.messages[2]["content"] == "late" or result.messages[2]["tool_call_id"] == "a"


def test_sanitizer_leaves_the_in_flight_call_alone() -> None:
    messages = [user("go"), tool("orphan", "x"), assistant(None, call("a", "bash", command="ls"))]
    result = sanitize_tool_pairs(messages)
    assert result.messages == [messages[0], messages[2]]
