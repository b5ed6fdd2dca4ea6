"""Token estimates through orjson equal the standard library's, character for character."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core import tokens
from windowkeeper.core.optional import orjson

ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=40)
TREES = st.recursive(
    st.dictionaries(ASCII, ASCII, max_size=4),
    lambda inner: st.dictionaries(ASCII, st.one_of(ASCII, inner), max_size=4),
    max_leaves=12,
)


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


@settings(max_examples=300, deadline=None)
@given(TREES)
def test_ascii_tree_size_is_the_json_size(tree: dict[str, Any]) -> None:
    assert tokens._ascii_json_size(tree) == _json_size(tree)
    assert tokens._encoded_size(tree) == _json_size(tree)


@pytest.mark.parametrize(
    "value",
    [{"a": "é"}, {"é": "a"}, {"a": 1}, {"a": [1]}, {"a": 1.5e-7}, {"a": None}, ["a"], "a"],
)
def test_other_values_are_left_to_the_encoder(value: object) -> None:
    assert tokens._ascii_json_size(value) is None


def test_every_ascii_character_is_escaped_alike() -> None:
    text = "".join(map(chr, range(128))) * 2
    call = {"id": "c1", "function": {"name": "bash", "arguments": text}}
    assert tokens._ascii_json_size(call) == _json_size(call)
    if orjson is not None:
        expected = json.dumps(call, separators=(",", ":"), ensure_ascii=False).encode()
        assert orjson.dumps(call) == expected


def test_a_str_subclass_key_takes_the_summed_path() -> None:
    class Key(str):
        pass

    call = {Key("id"): "c1", "function": {"name": "x", "arguments": '{"a": "\\n"}'}}
    assert tokens._ascii_json_size(call) == _json_size(call)
