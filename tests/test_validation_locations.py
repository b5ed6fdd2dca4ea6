"""``validate_messages`` names a defect's location only when it finds one: the same
messages pass and the same errors (location and text) are raised as by the check it
replaced, which made both strings for every message (kept below as the reference)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import ROLES, _kind, validate_messages

# --- the reference: the check as it was -------------------------------------------------


def _old_parts(parts: list[Any], where: str) -> None:
    for number, part in enumerate(parts):
        if isinstance(part, str):
            continue
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise InvalidMessagesError(
                where, f"content part {number} must be an object with a string 'type'"
            )


def _old_calls(calls: object, where: str) -> None:
    if not isinstance(calls, list):
        raise InvalidMessagesError(where, f"'tool_calls' must be a list, got {_kind(calls)}")
    for number, call in enumerate(calls):
        label = f"tool call {number}"
        if not isinstance(call, Mapping):
            raise InvalidMessagesError(where, f"{label} must be an object, got {_kind(call)}")
        if not isinstance(call.get("id"), str) or not call.get("id"):
            raise InvalidMessagesError(where, f"{label} has no string 'id'")
        function = call.get("function")
        if not isinstance(function, Mapping):
            raise InvalidMessagesError(where, f"{label} has no 'function' object")
        if not isinstance(function.get("name"), str):
            raise InvalidMessagesError(where, f"{label} function has no string 'name'")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise InvalidMessagesError(
                where, f"{label} arguments must be a JSON string, got {_kind(arguments)}"
            )


def _old_shape(message: dict[str, Any], where: str) -> dict[str, Any]:
    role = message.get("role")
    if not isinstance(role, str):
        raise InvalidMessagesError(where, "message has no string 'role'")
    if role not in ROLES:
        expected = ", ".join(sorted(ROLES))
        raise InvalidMessagesError(where, f"unknown role {role!r} (expected one of: {expected})")
    content = message.get("content")
    if isinstance(content, list):
        _old_parts(content, where)
    elif content is not None and not isinstance(content, str):
        raise InvalidMessagesError(
            where, f"content must be a string, null or a list of parts, got {_kind(content)}"
        )
    tool_call_id = message.get("tool_call_id")
    if role == "tool":
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise InvalidMessagesError(where, "tool message without 'tool_call_id'")
    elif tool_call_id is not None and not isinstance(tool_call_id, str):
        raise InvalidMessagesError(where, "'tool_call_id' must be a string")
    if "tool_calls" in message and message["tool_calls"] is not None:
        if role != "assistant":
            raise InvalidMessagesError(where, f"'tool_calls' on a {role} message")
        _old_calls(message["tool_calls"], where)
    return message


def _old_validate(messages: list[Any], first: int) -> list[Any]:
    checked = []
    for index, message in enumerate(messages, first):
        where = f"message {index}"
        if not isinstance(message, dict):
            raise InvalidMessagesError(where, f"expected a message object, got {_kind(message)}")
        checked.append(_old_shape(message, where))
    return checked


# --- shaped and misshaped messages --------------------------------------------------------

_ANY = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3), st.just([]))


def _mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` about four times in five: a defect late in a list is reached too."""
    return st.integers(0, 4).flatmap(lambda pick: good if pick else bad)


def _mapping(strategy: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """A dict, sometimes a read-only mapping (which takes the ABC check)."""
    return st.integers(0, 2).flatmap(
        lambda pick: strategy if pick else strategy.map(MappingProxyType)
    )


_ID = _mostly(st.sampled_from(["c1", "c2"]), st.one_of(st.just(""), _ANY))
_FUNCTION = _mostly(
    _mapping(
        st.fixed_dictionaries(
            {"name": _mostly(st.just("f"), _ANY), "arguments": _mostly(st.just("{}"), _ANY)}
        )
    ),
    _mapping(st.fixed_dictionaries({}, optional={"name": st.just("f")})),
)
_CALL = _mostly(
    _mapping(st.fixed_dictionaries({"id": _ID, "function": _mostly(_FUNCTION, _ANY)})),
    st.one_of(_ANY, _mapping(st.fixed_dictionaries({}))),
)
_PART = _mostly(
    _mapping(st.fixed_dictionaries({"type": _mostly(st.just("text"), _ANY), "text": st.just("x")})),
    st.one_of(st.text(max_size=2), _ANY),
)
_MESSAGE = _mostly(
    st.fixed_dictionaries(
        {"role": _mostly(st.sampled_from(sorted(ROLES)), _ANY)},
        optional={
            "content": _mostly(
                st.one_of(st.text(max_size=3), st.none(), st.lists(_PART, max_size=3)), _ANY
            ),
            "tool_call_id": _ID,
            "tool_calls": _mostly(st.lists(_CALL, max_size=3), _ANY),
        },
    ),
    _ANY,
)


def _outcome(run: Any) -> tuple[str, Any]:
    try:
        return "ok", run()
    except InvalidMessagesError as exc:
        return "error", (exc.location, exc.defect)


@settings(max_examples=2000, deadline=None)
@given(messages=st.lists(_MESSAGE, max_size=4), first=st.integers(0, 3))
def test_validation_passes_and_refuses_as_the_reference_did(
    messages: list[Any], first: int
) -> None:
    got = _outcome(lambda: validate_messages(messages, bounded_depth=False, first=first))
    expected = _outcome(lambda: _old_validate(messages, first))
    assert got[0] == expected[0]
    if got[0] == "ok":
        assert got[1] is not messages and len(got[1]) == len(messages)
        assert all(new is old for new, old in zip(got[1], messages, strict=True))
    else:
        assert got[1] == expected[1]


def test_a_defect_deep_in_a_list_is_named_where_it_is() -> None:
    calls = [{"id": "c", "function": {"name": "f", "arguments": "{}"}}, {"id": "d"}]
    messages = [{"role": "user", "content": "hi"}] * 3 + [
        {"role": "assistant", "tool_calls": calls}
    ]
    with pytest.raises(InvalidMessagesError) as caught:
        validate_messages(messages, first=10)
    assert (caught.value.location, caught.value.defect) == (
        "message 13",
        "tool call 1 has no 'function' object",
    )
