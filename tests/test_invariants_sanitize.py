from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper.compaction.sanitize import STUB_RESULT, sanitize_tool_pairs, system_first
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


def test_removing_an_orphan_between_two_assistants_merges_them() -> None:
    # ../shared/repro/cli_adjacent_assistants.jsonl (issue 25 point 2): the orphan's
    # removal left ``assistant(tool_calls=[])`` beside the next assistant.
    messages = [
        system(),
        user("run ls"),
        {"role": "assistant", "content": "running", "tool_calls": []},
        tool("call_1", "a.txt\n" * 50),
        assistant("done: a.txt"),
        user("thanks, next"),
    ]
    result = sanitize_tool_pairs(messages)
    assert violations(result.messages) == []
    assert result.repairs.removed_results == 1 and result.repairs.merged_turns == 1
    merged = result.messages[2]
    assert merged == {"role": "assistant", "content": "running\n\ndone: a.txt"}


def test_a_repeated_assistant_turn_loses_the_calls_its_first_copy_made() -> None:
    turn = assistant(None, call("a", "bash", command="ls"))
    messages = [user("go"), turn, tool("a", "x"), dict(turn), user("interrupted")]
    result = sanitize_tool_pairs(messages)
    assert violations(result.messages) == []
    assert result.messages == [messages[0], turn, messages[2], messages[4]]
    assert result.repairs.repeated_calls == 1


def test_adjacent_turns_alone_are_merged_and_the_pairing_left_alone() -> None:
    messages = [user("first"), user("second"), assistant("ok")]
    result = sanitize_tool_pairs(messages)
    assert result.messages == [user("first\n\nsecond"), messages[2]]
    assert result.repairs.merged_turns == 1 and result.repairs.total == 1


_IDS = st.sampled_from(["a", "b", "c"])
_TURNS = st.one_of(
    st.builds(lambda t: user(t), st.sampled_from(["go", "", "next"])),
    st.builds(lambda t: {"role": "user", "content": t}, st.just([])),
    st.builds(lambda t: {"role": "assistant", "content": t, "tool_calls": []}, st.just("x")),
    st.builds(lambda t: assistant(t), st.sampled_from(["ok", ""])),
    st.builds(
        lambda ids: assistant(None, *(call(i, "bash", command="ls") for i in ids)),
        st.lists(_IDS, min_size=1, max_size=3),
    ),
    st.builds(lambda i: tool(i, "out"), _IDS),
)


@given(st.lists(_TURNS, max_size=14))
@settings(max_examples=400, deadline=None)
def test_sanitized_histories_pass_pairing_and_alternation(messages: list[Any]) -> None:
    """Whatever the order, repetition or loss of turns, the repair's output has valid
    pairing and alternation, and the input is left as it was."""
    snapshot = copy.deepcopy(messages)
    result = sanitize_tool_pairs(messages)
    assert messages == snapshot
    assert pairing_violations(result.messages) == []
    assert alternation_violations(result.messages) == []
    assert (result.messages is messages) == (result.repairs.total == 0)


def test_a_system_message_after_the_start_moves_to_the_start() -> None:
    late = {"role": "developer", "content": "be brief"}
    messages = [system(), user("go"), late, user("more"), assistant("ok")]
    hoisted, moved = system_first(messages)
    assert moved == 1 and hoisted == [messages[0], late, *messages[1:2], *messages[3:]]
    result = sanitize_tool_pairs(hoisted)
    assert violations(result.messages) == []
    assert system_first(result.messages) == (result.messages, 0)


def test_a_sent_request_stubs_the_newest_calls_too() -> None:
    """On its way to a provider nothing is executing: the newest call gets a stub result,
    and an answered request is left as it is."""
    messages = [user("go"), assistant(None, call("a", "bash", command="ls"))]
    assert sanitize_tool_pairs(messages).messages is messages  # in flight: left alone
    sent = sanitize_tool_pairs(messages, sent=True)
    assert violations(sent.messages) == [] and sent.repairs.stubbed_calls == 1
    answered = [*messages, tool("a", "x")]
    assert sanitize_tool_pairs(answered, sent=True).messages is answered
