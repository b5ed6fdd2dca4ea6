"""OpenAI Responses items <-> canonical messages: exact round trips, rebuilt changes, errors."""

from __future__ import annotations

import copy
import json
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factories import long_session
from windowkeeper.adapters.responses import (
    INSTRUCTIONS_KEY,
    ITEMS_KEY,
    OPAQUE_PART,
    from_responses,
    item_count,
    message_items,
    to_responses,
)
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.invariants import pairing_violations
from windowkeeper.core.messages import strip_private_keys, validate_messages
from windowkeeper.engine.compressor import ContextCompressor

REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Need to read the file."}],
    "encrypted_content": "gAAAAB-opaque-ciphertext==",
    "status": "completed",
}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "shell",
    "arguments": '{"command": ["cat", "a.py"]}',
    "status": "completed",
    "namespace": "default",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "print('a')\n"}
ANSWER = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "phase": "final_answer",
    "content": [{"type": "output_text", "text": "It prints a.", "annotations": [], "logprobs": []}],
}
CODEX = (
    "You are Codex, a coding agent.",
    [
        {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions>workspace-write</permissions>"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>/repo</environment_context>"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What does a.py print?"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"}]},
        REASONING, CALL, OUTPUT, ANSWER,
        {"role": "user", "content": "Now patch it."},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "apply_patch",
         "input": "*** Begin Patch\n*** End Patch\n", "status": "completed"},
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done!"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "python print"}},
        {"type": "computer_call", "id": "cu_1", "call_id": "cc_1", "status": "completed",
         "action": {"type": "screenshot"}, "pending_safety_checks": []},
        {"type": "computer_call_output", "call_id": "cc_1",
         "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,BBBB"}},
        {"type": "item_reference", "id": "msg_0"},
        {"type": "message", "role": "developer", "content": "Mid-run note."},
        {"type": "future_tool_call", "id": "ft_1", "payload": {"x": [1, 2.5, None]}},
        {"role": "user", "content": "Thanks.", "x-unknown-field": {"kept": True}},
    ],
)  # fmt: skip
# The shapes the OpenAI Agents SDK keeps in its sessions (model_dump of output items).
AGENTS_SDK: tuple[str | None, list[dict[str, Any]]] = (
    None,
    [
        {"content": "What is 2+2?", "role": "user"},
        {"arguments": '{"a": 2, "b": 2}', "call_id": "call_x", "name": "add",
         "type": "function_call", "id": "fc_x", "status": "completed"},
        {"call_id": "call_x", "output": "4", "type": "function_call_output"},
        {"id": "msg_x", "content": [{"annotations": [], "text": "4.", "type": "output_text"}],
         "role": "assistant", "status": "completed", "type": "message"},
    ],
)  # fmt: skip


@pytest.mark.parametrize("conversation", [CODEX, AGENTS_SDK], ids=["codex", "agents-sdk"])
def test_round_trip_returns_the_original_objects(
    conversation: tuple[str | None, list[dict[str, Any]]],
) -> None:
    instructions, items = conversation
    snapshot = copy.deepcopy(conversation)
    canonical = from_responses(items, instructions)
    validate_messages(canonical)
    assert pairing_violations(canonical) == []
    back_instructions, back = to_responses(canonical)
    assert back_instructions == instructions
    assert len(back) == len(items) and all(a is b for a, b in zip(back, items, strict=True))
    assert (instructions, items) == snapshot  # nothing was modified
    assert sum(item_count(m) for m in canonical) == len(items)


def test_canonical_shape_of_a_codex_request() -> None:
    canonical = from_responses(CODEX[1], CODEX[0])
    assert [m["role"] for m in canonical] == [
        "system", "developer", "user", "user", "assistant", "tool", "assistant", "user",
        "assistant", "tool", "assistant", "user", "user", "user", "assistant", "user",
    ]  # fmt: skip
    assert canonical[0][INSTRUCTIONS_KEY] is True
    assert canonical[3]["content"][0] == {"type": "text", "text": "What does a.py print?"}
    assert canonical[3]["content"][1]["type"] == "input_image"
    turn = canonical[4]
    assert turn["content"] is None and turn[ITEMS_KEY] == [REASONING, CALL]
    assert turn["tool_calls"] == [{"id": "call_1", "type": "function", "function": {
        "name": "shell", "arguments": CALL["arguments"]}}]  # fmt: skip
    assert canonical[5] == {"role": "tool", "tool_call_id": "call_1", "content": "print('a')\n",
                            ITEMS_KEY: [OUTPUT]}  # fmt: skip
    assert canonical[6]["content"] == "It prints a."
    patch = canonical[8]["tool_calls"][0]
    assert patch["function"]["arguments"].startswith("*** Begin Patch")
    web_and_computer = canonical[10]["content"]
    assert [p["type"] for p in web_and_computer] == [OPAQUE_PART, OPAQUE_PART]
    assert canonical[11]["content"][0]["item"]["type"] == "computer_call_output"
    assert canonical[13]["content"] == "Mid-run note."  # a later developer item: a user turn


def test_a_string_input_is_one_user_message() -> None:
    canonical = from_responses("hello", "Be brief.")
    assert [strip_private_keys(m) for m in canonical] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]
    assert to_responses(canonical) == ("Be brief.", [{"role": "user", "content": "hello"}])


def test_a_pruned_tool_output_is_rebuilt_with_its_other_fields() -> None:
    output = {**OUTPUT, "id": "fco_1", "status": "completed"}
    canonical = from_responses([{"role": "user", "content": "go"}, REASONING, CALL, output])
    canonical[2] = {**canonical[2], "content": "[shell] ran `cat a.py` -> 1 line (ref wk1)"}
    _, items = to_responses(canonical)
    assert items[:3] == [{"role": "user", "content": "go"}, REASONING, CALL]
    assert items[3] == {"type": "function_call_output", "call_id": "call_1", "status": "completed",
                        "output": "[shell] ran `cat a.py` -> 1 line (ref wk1)"}  # fmt: skip


def test_a_changed_model_turn_drops_its_reasoning_and_ids() -> None:
    text = {**ANSWER, "id": "msg_2", "phase": "commentary"}
    turn = from_responses([REASONING, text, CALL, OUTPUT])[0]
    shortened = [{**turn["tool_calls"][0], "function": {"name": "shell", "arguments": "{}"}}]
    items = message_items({**turn, "tool_calls": shortened})
    kept_text = {k: v for k, v in text.items() if k != "id"}
    rebuilt_call = {k: v for k, v in CALL.items() if k != "id"} | {"arguments": "{}"}
    assert items == [kept_text, rebuilt_call]


def test_a_handoff_joined_to_a_user_message_keeps_the_original_parts() -> None:
    original = CODEX[1][2]
    message = from_responses([original])[0]
    joined = {**message, "content": [{"type": "text", "text": "[handoff]"}, *message["content"]]}
    items = message_items(joined)
    assert items == [{**original, "content": [{"type": "input_text", "text": "[handoff]"},
                                              *original["content"]]}]  # fmt: skip


def test_opaque_items_survive_a_rewritten_turn_and_new_messages_are_written_anew() -> None:
    web, computer = CODEX[1][10], CODEX[1][11]
    turn = from_responses([web, computer])[0]
    rewritten = {**turn, "content": ["note", *turn["content"]]}
    assert message_items(rewritten) == [
        {"type": "message", "role": "assistant", "content": "note"}, web, computer,
    ]  # fmt: skip
    stub = {"role": "tool", "tool_call_id": "call_2", "content": "result not kept"}
    custom_call = CODEX[1][8]
    _, items = to_responses([from_responses([custom_call])[0], stub])
    assert items == [custom_call, {"type": "custom_tool_call_output", "call_id": "call_2",
                                   "output": "result not kept"}]  # fmt: skip
    image = {"type": "image_url", "image_url": {"url": "u"}}
    handoff = {"role": "user", "content": [{"type": "text", "text": "summary"}, image]}
    assert message_items(handoff) == [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "summary"},
        {"type": "input_image", "image_url": "u", "detail": "auto"}]}]  # fmt: skip
    call = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    plain = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert message_items(plain) == [
        {"type": "function_call", "call_id": "c9", "name": "f", "arguments": "{}"}
    ]


def test_changed_instructions_come_back_as_instructions() -> None:
    canonical = from_responses([{"role": "user", "content": "hi"}], "Rules.")
    canonical[0] = {**canonical[0], "content": "Rules.\n\n[note: compacted once]"}
    assert to_responses(canonical)[0] == "Rules.\n\n[note: compacted once]"
    assert to_responses(from_responses([{"role": "user", "content": "hi"}]))[0] is None


@pytest.mark.parametrize(
    ("value", "instructions", "where"),
    [
        (42, None, "input"),
        ([1], None, "item 0"),
        ([{"type": "message", "role": "robot", "content": "x"}], None, "item 0"),
        ([{"role": "user"}], None, "item 0"),
        ([{"role": "user", "content": [{"text": "no type"}]}], None, "item 0"),
        ([{"type": 7}], None, "item 0"),
        ([{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}], None, "item 0"),
        ([{"type": "function_call", "name": "f", "arguments": "{}"}], None, "item 0"),
        ([{"type": "function_call_output", "call_id": "", "output": "x"}], None, "item 0"),
        ([{"type": "function_call_output", "call_id": "c", "output": 3}], None, "item 0"),
        ([], ["not", "a", "string"], "instructions"),
    ],
)
def test_malformed_input_is_an_invalid_messages_error(
    value: Any, instructions: Any, where: str
) -> None:
    with pytest.raises(InvalidMessagesError) as caught:
        from_responses(value, instructions)
    assert caught.value.location == where


def _as_items(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """A chat transcript as a Responses request (its system prompt as instructions)."""
    return to_responses([{**messages[0], INSTRUCTIONS_KEY: True}, *messages[1:]])


def test_a_real_compaction_round_trips_to_valid_items() -> None:
    instructions, items = _as_items(long_session(rounds=30))
    canonical = from_responses(items, instructions)
    compressor = ContextCompressor(
        CompressionConfig(), context_length=40_000, today=lambda: date(2026, 11, 30)
    )
    result = compressor.compress(canonical, force=True)
    assert result.report.compressed
    back_instructions, sent = to_responses(result.messages)
    assert back_instructions is not None and back_instructions.startswith(instructions or "")
    calls = {i["call_id"] for i in sent if i.get("type") == "function_call"}
    outputs = [i["call_id"] for i in sent if i.get("type") == "function_call_output"]
    assert set(outputs) <= calls and len(outputs) == len(set(outputs))
    kept = [m for m in result.messages if m in canonical]
    assert kept, "the verbatim tail is kept"
    tail_items = {id(i) for m in kept for i in m.get(ITEMS_KEY, [])}
    assert tail_items <= {id(i) for i in sent}  # kept messages send their original objects
    assert json.loads(json.dumps(sent)) == sent  # plain JSON, nothing private


_text = st.text(min_size=0, max_size=12)
_part = st.one_of(
    st.builds(lambda t: {"type": "input_text", "text": t}, _text),
    st.builds(lambda u: {"type": "input_image", "image_url": u, "detail": "auto"}, _text),
    st.builds(lambda t: {"type": "input_file", "file_id": t}, _text),
)
_ids = st.sampled_from(["c1", "c2", "c3"])
_item = st.one_of(
    st.builds(lambda r, c: {"role": r, "content": c},
              st.sampled_from(["user", "system", "developer", "assistant"]),
              st.one_of(_text, st.lists(_part, max_size=3))),
    st.builds(lambda c, n, a: {"type": "function_call", "call_id": c, "name": n, "arguments": a},
              _ids, _text, _text),
    st.builds(lambda c, o: {"type": "function_call_output", "call_id": c, "output": o},
              _ids, st.one_of(_text, st.lists(_part, max_size=2))),
    st.builds(lambda t: {"type": "reasoning", "id": "rs", "summary": [],
                         "encrypted_content": t}, _text),
    st.builds(lambda t: {"type": t, "id": "x", "extra": [1, {"k": None}]},
              st.sampled_from(["web_search_call", "computer_call_output", "item_reference",
                               "mcp_approval_response", "brand_new_item"])),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(_item, max_size=12), st.one_of(st.none(), _text))
def test_any_item_list_round_trips_as_the_same_objects(
    items: list[dict[str, Any]], instructions: str | None
) -> None:
    canonical = from_responses(items, instructions)
    validate_messages(canonical)
    back_instructions, back = to_responses(canonical)
    assert back_instructions == instructions
    assert len(back) == len(items) and all(a is b for a, b in zip(back, items, strict=True))
