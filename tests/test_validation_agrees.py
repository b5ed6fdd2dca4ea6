"""What validation accepts, the engine takes: every message ``validate_message`` passes
has no ``input_defect`` (a gateway request whose user message carried a numeric
``tool_call_id`` once passed validation and failed later inside the estimate, a 500)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import input_defect, validate_message

_PART = st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=3)})
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=5),
    st.lists(st.one_of(st.text(max_size=3), st.integers(), _PART), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)  # fmt: skip
_CALL = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=3), "type": st.just("function"),
     "function": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=3),
                                        "arguments": st.just("{}")})}
)  # fmt: skip
_MESSAGES = st.fixed_dictionaries(
    {"role": st.one_of(st.sampled_from(["system", "user", "assistant", "tool"]), _VALUES)},
    optional={"content": _VALUES, "tool_call_id": _VALUES,
              "tool_calls": st.one_of(_VALUES, st.lists(_CALL, max_size=2))},
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(message=_MESSAGES)
def test_a_message_validation_accepts_has_no_input_defect(message: dict[str, Any]) -> None:
    try:
        validate_message(message, "message 0")
    except InvalidMessagesError:
        return
    assert input_defect(message) is None


@pytest.mark.parametrize("role", ["user", "assistant", "system"])
def test_a_tool_call_id_that_is_not_a_string_is_refused_on_any_role(role: str) -> None:
    with pytest.raises(InvalidMessagesError, match="'tool_call_id' must be a string"):
        validate_message({"role": role, "content": "x", "tool_call_id": 5}, "message 0")
    validate_message({"role": role, "content": "x", "tool_call_id": "c1"}, "message 0")
