"""Any JSON value anywhere in a transcript, a body or a message list: the readers and the
engine either take it or refuse it with a windowkeeper error, and compaction of what they
took never fails.

A list or an object where a reader expects a name ("type", "role") once escaped as
``TypeError: unhashable type`` from the Claude Code, Codex and Responses readers (found
by fuzzing the readers with mutated transcripts).
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import ContextCompressor, ContextManager, parse_conversation
from windowkeeper.adapters.responses import from_items
from windowkeeper.core.errors import InvalidMessagesError, WindowkeeperError
from windowkeeper.core.jsonsafe import one_of

Path = tuple[str | int, ...]

_CLAUDE_CODE: list[dict[str, Any]] = [
    {"type": "user", "uuid": "u1", "sessionId": "s",
     "message": {"role": "user", "content": "Fix the failing test in app.py"}},
    {"type": "assistant", "uuid": "a1", "sessionId": "s",
     "message": {"id": "m1", "role": "assistant", "content": [
         {"type": "thinking", "thinking": "look first", "signature": "sig"},
         {"type": "text", "text": "Reading it."},
         {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "app.py"}},
     ]}},
    {"type": "user", "uuid": "u2", "sessionId": "s", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def f():\n    return 1\n"},
    ]}},
    {"type": "assistant", "uuid": "a2", "sessionId": "s",
     "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
]  # fmt: skip
_ITEMS: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {"type": "message", "role": "user",
     "content": [{"type": "input_text", "text": "List the files"}]},
    {"type": "reasoning", "summary": [], "encrypted_content": "opaque"},
    {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"ls"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "a.py\nb.py"},
    {"type": "message", "role": "assistant",
     "content": [{"type": "output_text", "text": "Two files."}]},
]  # fmt: skip
_CODEX: list[dict[str, Any]] = [
    {"type": "session_meta", "payload": {"id": "x", "cwd": "/repo", "instructions": "Be brief."}},
    {"type": "turn_context", "payload": {"model": "gpt-test"}},
    *({"type": "response_item", "payload": item} for item in _ITEMS[1:]),
]
_ANTHROPIC: dict[str, Any] = {
    "model": "m", "max_tokens": 5, "system": [{"type": "text", "text": "sys"}],
    "messages": [
        {"role": "user", "content": "Run the tests"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Running."},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "pytest"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 failed"},
            {"type": "text", "text": "fix it", "cache_control": {"type": "ephemeral"}},
        ]},
    ],
}  # fmt: skip
_CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": [{"type": "text", "text": "Run the tests"}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
]  # fmt: skip


def _lines(values: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(v) for v in values)


DOCUMENTS: dict[str, tuple[Any, Callable[[Any], str]]] = {
    "claude-code": (_CLAUDE_CODE, _lines),
    "codex": (_CODEX, _lines),
    "anthropic": (_ANTHROPIC, json.dumps),
    "jsonl": (_CHAT, _lines),
}

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.sampled_from(["user", "assistant", "tool_use", "tool_result", "message", "text"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)  # fmt: skip


def _paths(value: Any, prefix: Path = ()) -> list[Path]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*prefix, index))
    return found


def _replaced(document: Any, path: Path, value: Any) -> Any:
    changed = copy.deepcopy(document)
    parent = changed
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return changed


def _read_and_compress(text: str, fmt: str) -> None:
    try:
        conversation = parse_conversation(text, fmt)
    except WindowkeeperError:
        return  # refused, with a message that names the defect
    for window in (2_000, 32_000):
        ContextCompressor(context_length=window).compress(conversation.messages, force=True)


@pytest.mark.parametrize("fmt", list(DOCUMENTS))
def test_the_unchanged_documents_are_read(fmt: str) -> None:
    document, render = DOCUMENTS[fmt]
    assert parse_conversation(render(document), fmt).messages


@pytest.mark.parametrize("fmt", list(DOCUMENTS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_value_anywhere_is_taken_or_refused(fmt: str, data: st.DataObject) -> None:
    document, render = DOCUMENTS[fmt]
    path = data.draw(st.sampled_from([p for p in _paths(document) if p]))
    _read_and_compress(render(_replaced(document, path, data.draw(JSON_VALUES))), fmt)


@pytest.mark.parametrize("fmt", list(DOCUMENTS))
@pytest.mark.parametrize("value", [["user"], {"type": "text"}], ids=["list", "object"])
def test_a_list_or_object_as_any_name_is_taken_or_refused(fmt: str, value: Any) -> None:
    """Every "type" and "role" in turn: the shapes that once raised ``TypeError``."""
    document, render = DOCUMENTS[fmt]
    named = [p for p in _paths(document) if p and p[-1] in ("type", "role")]
    assert named
    for path in named:
        _read_and_compress(render(_replaced(document, path, value)), fmt)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_responses_items_with_any_value_anywhere(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from([p for p in _paths(_ITEMS) if p]))
    items = _replaced(_ITEMS, path, data.draw(JSON_VALUES))
    with contextlib.suppress(WindowkeeperError):  # refused: fine; any other error: a bug
        messages, _ = from_items(items, 0)
        ContextCompressor(context_length=2_000).compress(messages, force=True)


def test_a_text_part_without_text_is_kept_as_a_part() -> None:
    """It once raised ``KeyError: 'text'`` while the turn's content was simplified."""
    item = {"type": "message", "role": "assistant", "content": [{"type": "text"}]}
    messages, _ = from_items([{"role": "user", "content": "hi"}, item], 0)
    assert messages[1]["content"] == [{"type": "text"}]


# A tool result whose call is not in the file: pairing repair would drop it.
_RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
_RESULT_ONLY = {"type": "user", "uuid": "u", "message": {"role": "user", "content": [_RESULT]}}


@pytest.mark.parametrize(
    ("fmt", "lines"),
    [
        ("claude-code", [{"type": "summary", "uuid": "u", "summary": "s"}]),
        (
            "claude-code",
            [{"type": "user", "uuid": "u", "message": {"role": "user", "content": {}}}],
        ),
        ("codex", [{"type": "session_meta", "payload": {"id": "x"}}]),
        ("claude-code", [_RESULT_ONLY]),
    ],
    ids=["bookkeeping-only", "unreadable-message", "meta-only", "tool-results-only"],
)
def test_a_transcript_without_a_conversation_is_refused(
    fmt: str, lines: list[dict[str, Any]]
) -> None:
    with pytest.raises(InvalidMessagesError, match="no conversation in this"):
        parse_conversation(_lines(lines), fmt)


def test_one_of_takes_values_a_set_cannot_hash() -> None:
    names = frozenset({"user", "assistant"})
    assert one_of("user", names)
    assert not one_of("tool", names)
    assert not one_of(["user"], names) and not one_of({"user": 1}, names)
    assert not one_of(None, names)


# --- the library API: what a caller passes straight to the engine ---------------------

CANONICAL = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": [{"type": "text", "text": "Run the tests " + "w " * 300}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok " * 400},
    {"role": "assistant", "content": "Done " * 100},
    {"role": "user", "content": "Next?"},
]  # fmt: skip


def _engine_calls(messages: Any) -> None:
    ContextCompressor(context_length=1_500).compress(messages, force=True)
    manager = ContextManager(ContextCompressor(context_length=1_500))
    manager.after_response({"prompt_tokens": 1_400}, manager.preflight(messages))
    manager.compress(messages)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_engine_takes_any_list_or_refuses_it(data: st.DataObject) -> None:
    """Only :class:`InvalidMessagesError` escapes, whatever sits wherever in the list."""
    path = data.draw(st.sampled_from([p for p in _paths(CANONICAL) if p]))
    messages = _replaced(CANONICAL, path, data.draw(JSON_VALUES))
    with contextlib.suppress(InvalidMessagesError):
        _engine_calls(messages)


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        (5, "input: messages must be a list, got int"),
        ([*CANONICAL[:2], 7], "message 2: expected a message object, got int"),
        ([{"role": ["user"], "content": "x"}], "message 0: message has no string 'role'"),
        ([{"role": "user", "content": {"a": 1}}], "message 0: content must be a string"),
        ([{"role": "user", "content": [3]}], "message 0: content parts must be objects"),
        ([{"role": "assistant", "tool_calls": {}}], "message 0: 'tool_calls' must be a list"),
        ([{"role": "tool", "tool_call_id": 3, "content": "x"}], "message 0: 'tool_call_id'"),
    ],
    ids=["not-a-list", "not-an-object", "role", "content", "part", "tool-calls", "call-id"],
)
def test_what_the_engine_refuses_is_named(messages: Any, said: str) -> None:
    for call in (
        lambda: ContextCompressor(context_length=1_500).compress(messages, force=True),
        lambda: ContextManager(ContextCompressor(context_length=1_500)).preflight(messages),
        lambda: ContextManager(ContextCompressor(context_length=1_500)).compress(messages),
    ):
        with pytest.raises(InvalidMessagesError) as caught:
            call()
        assert str(caught.value).startswith(said), caught.value
        assert "validate_messages" in str(caught.value) or "input" in said


def test_a_valid_list_is_checked_once_per_message() -> None:
    """The check rides on the records and estimates: a message already seen is not
    checked again (a compaction costs no second pass over its input)."""
    compressor = ContextCompressor(context_length=1_500)
    messages = [dict(m) for m in CANONICAL]
    compressor.analyzer.analyze(messages)
    messages[3]["content"] = 5  # replaced in place: a new content object, checked again
    with pytest.raises(InvalidMessagesError, match="message 3"):
        compressor.analyzer.analyze(messages)
