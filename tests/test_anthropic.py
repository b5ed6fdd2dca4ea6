"""Anthropic Messages <-> canonical OpenAI messages: round trips and OpenAI-origin input."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.adapters.anthropic import IS_ERROR_KEY, THINKING_KEY, from_anthropic
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import (
    conversation_warnings,
    is_in_place_instruction,
    validate_messages,
)

PNG = "iVBORw0KGgo="
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
URL_IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}

PLAIN = (
    "You are terse.",
    [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ],
)

MULTIMODAL = (
    [
        {"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "More rules."},
    ],
    [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                IMAGE,
                URL_IMAGE,
                {"type": "text", "text": "and this"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
    ],
)

PARALLEL_TOOLS = (
    None,
    [
        {"role": "user", "content": "read both files"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print('a')"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "no such file"}, IMAGE],
                    "is_error": True,
                },
                {"type": "text", "text": "also check c.py"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_3", "name": "read", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_3",
                    "is_error": False,
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
    ],
)

THINKING = (
    "sys",
    [
        {"role": "user", "content": "compute"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "let me see", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "toolu_9", "name": "calc", "input": {"x": [1, 2]}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "3"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "It is 3."}]},
    ],
)


@pytest.mark.parametrize(
    "conversation",
    [PLAIN, MULTIMODAL, PARALLEL_TOOLS, THINKING],
    ids=["plain", "multimodal", "parallel-tools", "thinking"],
)
def test_round_trip_is_exact(conversation: tuple[Any, list[dict[str, Any]]]) -> None:
    system, messages = conversation
    snapshot = copy.deepcopy(conversation)
    canonical = from_anthropic(system, messages)
    validate_messages(canonical)  # the canonical side is valid OpenAI-format input
    assert to_anthropic(canonical) == (system, messages)
    assert (system, messages) == snapshot


def test_parallel_tools_canonical_shape() -> None:
    canonical = from_anthropic(*PARALLEL_TOOLS)
    assert [m["role"] for m in canonical] == [
        "user", "assistant", "tool", "tool", "user", "assistant", "tool",
    ]  # fmt: skip
    calls = canonical[1]["tool_calls"]
    assert [c["id"] for c in calls] == ["toolu_1", "toolu_2"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "a.py"}
    assert canonical[1]["content"] == [{"type": "text", "text": "Reading."}]
    assert canonical[2] == {"role": "tool", "tool_call_id": "toolu_1", "content": "print('a')"}
    assert canonical[3][IS_ERROR_KEY] is True
    assert canonical[3]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    assert canonical[4] == {
        "role": "user",
        "content": [{"type": "text", "text": "also check c.py"}],
    }
    assert canonical[5]["content"] is None
    assert canonical[6]["content"] is None
    assert canonical[6]["cache_control"] == {"type": "ephemeral"}


def test_thinking_is_kept_in_a_private_key() -> None:
    canonical = from_anthropic(*THINKING)
    assert [b["type"] for b in canonical[2][THINKING_KEY]] == ["thinking", "redacted_thinking"]
    assert canonical[2]["content"] is None


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_openai_origin_conversation() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "one"},
        {"role": "developer", "content": [{"type": "text", "text": "two"}]},
        {"role": "user", "content": "first"},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "functions.bash:0",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "bash", "arguments": "not json"},
                },
                {"id": "call_3", "type": "function", "function": {"name": "noop", "arguments": ""}},
            ],
            "_wk_meta": 1,
        },
        {"role": "tool", "tool_call_id": "functions.bash:0", "content": "a\nb"},
        {"role": "tool", "tool_call_id": "call_2", "content": "error"},
        {"role": "system", "content": "a late note"},
        {"role": "tool", "tool_call_id": "call_3", "content": "done"},
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": "finished", "reasoning_content": "hidden"},
    ]
    snapshot = copy.deepcopy(messages)
    system, out = to_anthropic(messages)
    assert messages == snapshot
    assert system == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
    assert out[0]["content"] == [
        {"type": "text", "text": "first"},
        {"type": "text", "text": "second"},
    ]
    uses = out[1]["content"]
    assert [b["type"] for b in uses] == ["tool_use"] * 3  # the empty text is not sent
    assert uses[0]["id"] == "functions_bash_0" and uses[0]["input"] == {"cmd": "ls"}
    assert uses[1]["input"] == {"raw_arguments": "not json"}
    assert uses[2]["input"] == {}
    results = out[2]["content"]
    # Tool results lead the turn; the late system note follows them as text.
    assert [b["type"] for b in results] == ["tool_result"] * 3 + ["text"]
    assert results[0]["tool_use_id"] == "functions_bash_0"
    assert results[3]["text"] == "a late note"
    assert out[3] == {"role": "assistant", "content": "finished"}
    assert not any(key.startswith("_") for key in _keys(out))


def test_no_system_and_images_back_to_blocks() -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
                },
                {"type": "input_image", "image_url": "https://example.com/a.png"},
                {"type": "input_text", "text": "describe"},
            ],
        }
    ]
    system, out = to_anthropic(messages)
    assert system is None
    assert out[0]["content"] == [IMAGE, URL_IMAGE, {"type": "text", "text": "describe"}]


def test_message_level_and_part_cache_markers() -> None:
    marker = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
            "cache_control": marker,
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "text", "text": "out", "cache_control": marker}],
        },
    ]
    _, out = to_anthropic(messages)
    assert out[1]["content"][-1]["cache_control"] == marker
    assert out[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "out",
        "cache_control": marker,
    }


def test_thinking_moves_first_when_assistant_turns_merge() -> None:
    thinking = {"type": "thinking", "thinking": "t", "signature": "s"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "first"},
        {"role": "assistant", "content": "second", THINKING_KEY: [thinking]},
    ]
    _, out = to_anthropic(messages)
    assert out[1]["content"] == [
        thinking,
        {"type": "text", "text": "first"},
        {"type": "text", "text": "second"},
    ]


@pytest.mark.parametrize(
    ("system", "messages", "match"),
    [
        (None, [{"role": "tool", "content": "x"}], "user, assistant or system"),
        (None, [{"role": "user", "content": 3}], "content must be"),
        (None, [{"role": "user", "content": [{"type": "tool_result"}]}], "tool_use_id"),
        (None, [{"role": "assistant", "content": [{"type": "tool_use", "id": "x"}]}], "'name'"),
        (None, [{"role": "user", "content": ["bare"]}], "block 0"),
        (None, ["not a message"], "message object"),
        (5, [], "system"),
    ],
)
def test_invalid_anthropic_input(system: Any, messages: Any, match: str) -> None:
    with pytest.raises(InvalidMessagesError, match=match):
        from_anthropic(system, messages)


MID_SYSTEM = (
    "You are Claude Code.",
    [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "Available agent types: general-purpose."},
        {"role": "system", "content": [{"type": "text", "text": "Today is Thursday."}]},
        {"role": "user", "content": "Say hello"},
    ],
)


def test_mid_conversation_system_messages_round_trip_as_their_own_turns() -> None:
    """Claude Code's beta ``mid-conversation-system-*``: system turns between user turns
    are instructions in place (canonical system messages marked so), valid canonical
    input, and come back as separate system turns, never merged into the user turns."""
    system, messages = MID_SYSTEM
    canonical = from_anthropic(system, messages)
    assert [m["role"] for m in canonical] == ["system", "user", "system", "system", "user"]
    assert all(is_in_place_instruction(m) for m in canonical[2:4])
    assert not is_in_place_instruction(canonical[0])
    assert violations(canonical) == [] and conversation_warnings(canonical) == ()
    validate_messages(canonical)
    assert to_anthropic(canonical) == (system, messages)
    # Leading the messages (no top-level system) it stays a turn, not the system prompt.
    assert to_anthropic(from_anthropic(None, messages[1:])) == (None, messages[1:])


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _JSON, max_size=5))
def test_tool_use_arguments_are_json_dumps_of_the_input(value: dict[str, Any]) -> None:
    """A tool call's arguments are ``json.dumps(input, ensure_ascii=False)`` exactly (what
    the model sees of its own call; the adapter keeps one encoder for every call)."""
    turn = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "run", "input": value},
    ]}  # fmt: skip
    messages = from_anthropic(None, [{"role": "user", "content": "go"}, turn])
    arguments = messages[-1]["tool_calls"][0]["function"]["arguments"]
    assert arguments == json.dumps(value, ensure_ascii=False)
