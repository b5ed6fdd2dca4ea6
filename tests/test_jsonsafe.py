"""JSON that can never blow the stack (issue 10, Deliver 1): bounded parsing, iterative
depth checks and dumps; the limit is documented and named in every refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import InvalidMessagesError, parse_conversation, validate_messages
from windowkeeper.core.jsonsafe import (
    MAX_JSON_DEPTH,
    dumps,
    loads,
    loads_or_none,
    value_depth_exceeds,
)
from windowkeeper.core.messages import parsed_arguments, to_json
from windowkeeper.core.tokens import message_tokens


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_loads_refuses_in_one_line_naming_where_and_the_limit() -> None:
    with pytest.raises(InvalidMessagesError, match=r"^line 3: nested deeper than 100 levels"):
        loads("[" * 100_000 + "]" * 100_000, "line 3")
    with pytest.raises(InvalidMessagesError, match=r"^line 3: nested deeper than 100"):
        loads(json.dumps(_deep(MAX_JSON_DEPTH + 1)), "line 3")
    assert loads(json.dumps(_deep(MAX_JSON_DEPTH - 1)), "x") == _deep(MAX_JSON_DEPTH - 1)
    with pytest.raises(InvalidMessagesError, match=r"^line 9: a number literal longer than 4,300"):
        loads('{"n": ' + "1" * 5_000 + "}", "line 9")
    with pytest.raises(InvalidMessagesError, match=r"^line 2: bad JSON"):
        loads('{"a": 1,\n oops}')  # a whole document: the line of the defect


def test_a_deep_document_names_the_line_where_it_goes_too_deep() -> None:
    text = '[\n{"role": "user", "content": "hi"},\n' + "[" * 5_000 + "]" * 5_000 + "\n]"
    with pytest.raises(InvalidMessagesError) as caught:
        parse_conversation(text)
    assert str(caught.value).startswith("line 3: nested deeper than 100 levels")


def test_loads_or_none_treats_the_unparseable_as_text() -> None:
    assert loads_or_none("[" * 5_000 + "]" * 5_000) is None
    assert loads_or_none(json.dumps(_deep(500))) is None  # parses, but deeper than the limit
    assert loads_or_none('{"n": ' + "9" * 5_000 + "}") is None
    assert loads_or_none('{"a": [1]}') == {"a": [1]}
    call = {"id": "c", "function": {"name": "f", "arguments": "[" * 2_000 + "]" * 2_000}}
    assert parsed_arguments(call) == {}


def test_depth_checks_are_iterative() -> None:
    deep = _deep(100_000)
    assert value_depth_exceeds(deep) and not value_depth_exceeds(_deep(MAX_JSON_DEPTH - 1))
    with pytest.raises(InvalidMessagesError, match=r"^message 1: nested deeper than 100"):
        validate_messages([{"role": "user", "content": "a"},
                           {"role": "user", "content": [{"type": "text", "text": "b",
                                                         "meta": deep}]}])  # fmt: skip


def test_dumps_serializes_beyond_the_c_encoders_reach() -> None:
    deep = _deep(50_000)
    text = dumps(deep, separators=(",", ":"))
    assert text == "[" * 50_000 + '"leaf"' + "]" * 50_000
    message = {"role": "user", "content": [{"type": "custom", "meta": deep}]}
    assert message_tokens(message) > 25_000  # counted, not crashed
    assert to_json({"a": _deep(3_000)}).startswith('{"a": [[[')


JSONABLE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=JSONABLE, compact=st.booleans(), ascii_only=st.booleans())
def test_the_iterative_encoder_writes_what_json_dumps_writes(
    value: Any, compact: bool, ascii_only: bool
) -> None:
    from windowkeeper.core.jsonsafe import _dumps_iterative

    separators = (",", ":") if compact else (", ", ": ")
    expected = json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    assert _dumps_iterative(value, ascii_only, separators, None) == expected
