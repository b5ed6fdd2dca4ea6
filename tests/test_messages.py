from __future__ import annotations

import json

import pytest

from windowkeeper.adapters.formats import parse_conversation
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import content_text, dump_jsonl, strip_private_keys

GOOD = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
]


def test_jsonl_array_and_request_body_are_read() -> None:
    jsonl = "".join(json.dumps(m) + "\n" for m in GOOD)
    assert parse_conversation(jsonl).messages == GOOD
    assert parse_conversation(json.dumps(GOOD)).messages == GOOD
    body = {"model": "gpt-x", "messages": GOOD, "tools": [{"type": "function"}], "temperature": 0}
    conversation = parse_conversation(json.dumps(body, indent=2))
    assert conversation.messages == GOOD
    assert conversation.model == "gpt-x"
    assert conversation.tools == [{"type": "function"}]
    assert conversation.extra == {"temperature": 0}


def test_single_message_jsonl_is_not_mistaken_for_a_body() -> None:
    text = json.dumps({"role": "user", "content": "hi", "messages": 1}) + "\n"
    assert parse_conversation(text).messages[0]["content"] == "hi"


@pytest.mark.parametrize(
    ("line", "location", "defect"),
    [
        ('{"role": "user", "content": "x"', "line 2", "bad JSON"),
        ('{"role": "wizard", "content": "x"}', "line 2", "unknown role 'wizard'"),
        ('{"role": "user", "content": 5}', "line 2", "content must be a string, null or a list"),
        ('{"role": "tool", "content": "x"}', "line 2", "tool message without 'tool_call_id'"),
        (
            '{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function",'
            ' "function": {"name": "f", "arguments": {"x": 1}}}]}',
            "line 2",
            "arguments must be a JSON string, got object",
        ),
        (
            '{"role": "assistant", "tool_calls": {"id": "a"}}',
            "line 2",
            "'tool_calls' must be a list",
        ),
        ('["not", "a", "message"]', "line 2", "expected a message object, got array"),
        ('{"content": "x"}', "line 2", "no string 'role'"),
        ('{"role": "user", "content": [{"text": "x"}]}', "line 2", "content part 0"),
    ],
)
def test_defects_name_the_line_and_the_defect(line: str, location: str, defect: str) -> None:
    text = '{"role": "user", "content": "ok"}\n' + line + "\n"
    with pytest.raises(InvalidMessagesError) as info:
        parse_conversation(text)
    assert info.value.location == location
    assert defect in info.value.defect
    assert "\n" not in str(info.value)


def test_array_defects_name_the_index() -> None:
    with pytest.raises(InvalidMessagesError, match=r"^message 1: unknown role"):
        parse_conversation(json.dumps([{"role": "user", "content": "x"}, {"role": "bot"}]))


def test_empty_input_and_bad_body() -> None:
    with pytest.raises(InvalidMessagesError, match="empty input"):
        parse_conversation("  \n")
    with pytest.raises(InvalidMessagesError, match="'messages' must be a list"):
        parse_conversation('{"model": "m", "messages": "nope"}')


def test_private_keys_are_stripped_on_output() -> None:
    text = dump_jsonl([{"role": "user", "content": "x", "_wk_handoff": True}])
    assert json.loads(text) == {"role": "user", "content": "x"}
    assert strip_private_keys({"_a": 1, "b": 2}) == {"b": 2}


def test_content_text() -> None:
    assert content_text(None) == ""
    assert content_text("a") == "a"
    assert content_text([{"type": "text", "text": "a"}, {"type": "image_url"}, "b"]) == "a\nb"


def test_anthropic_messages_body_is_converted() -> None:
    body = {
        "model": "claude-x",
        "system": "You are careful.",
        "tools": [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Listing."},
                    {"type": "tool_use", "id": "tu1", "name": "bash", "input": {"command": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "a.py"}],
            },
        ],
    }
    conversation = parse_conversation(json.dumps(body))
    roles = [m["role"] for m in conversation.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    call = conversation.messages[2]["tool_calls"][0]
    assert call["id"] == "tu1" and json.loads(call["function"]["arguments"]) == {"command": "ls"}
    assert conversation.messages[3] == {"role": "tool", "tool_call_id": "tu1", "content": "a.py"}
    assert conversation.tools is not None
    assert conversation.tools[0]["function"]["parameters"] == {"type": "object"}
    assert conversation.model == "claude-x"


def test_dump_jsonl_survives_a_lone_surrogate() -> None:
    messages = [{"role": "user", "content": "half an emoji \ud83d, then 日本語"}]
    text = dump_jsonl(messages)
    text.encode("utf-8")  # writable as UTF-8
    assert [json.loads(line) for line in text.splitlines()] == messages
    assert "日本語" in dump_jsonl([{"role": "user", "content": "日本語"}])  # readable otherwise
