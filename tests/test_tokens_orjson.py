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


def _estimate(value: Any) -> int:
    """What message_tokens counted a call as before orjson: its compact JSON, estimated."""
    return tokens.estimate_tokens(tokens._compact(value))


@settings(max_examples=300, deadline=None)
@given(TREES)
def test_ascii_tree_size_is_the_json_size(tree: dict[str, Any]) -> None:
    assert tokens._json_tokens(tree) == _estimate(tree)
    assert tokens._encoded_size(tree) == _json_size(tree)


# Any text: other scripts, dense ones (counted a token a character), lone surrogates.
TEXT = st.text(max_size=40)
UNICODE_TREES = st.recursive(
    st.dictionaries(TEXT, TEXT, max_size=4),
    lambda inner: st.dictionaries(TEXT, st.one_of(TEXT, inner), max_size=4),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(UNICODE_TREES)
def test_a_tree_of_any_text_is_estimated_as_its_json_or_left_to_the_encoder(
    tree: dict[str, Any],
) -> None:
    found = tokens._json_tokens(tree)
    assert found is None or found == _estimate(tree)
    if orjson is not None and found is None:  # only text orjson refuses, or may be dense
        text = tokens._compact(tree)
        surrogate = any("\ud800" <= char <= "\udfff" for char in text)
        assert surrogate or not tokens._sparse(text.encode())


@pytest.mark.parametrize(
    "value", [{"a": 1}, {"a": [1]}, {"a": 1.5e-7}, {"a": None}, ["a"], "a", {1: "a"}]
)
def test_other_values_are_left_to_the_encoder(value: object) -> None:
    assert tokens._json_tokens(value) is None


def test_without_orjson_only_ascii_trees_are_summed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "orjson", None)
    call = {"id": "c1", "function": {"name": "bash", "arguments": '{"cmd": "ls\\n"}'}}
    assert tokens._json_tokens(call) == _estimate(call)
    assert tokens._json_tokens({"a": "é"}) is None


def test_every_character_is_escaped_alike() -> None:
    text = "".join(map(chr, range(128))) * 2 + "é\u2028\u2029\u00a0"
    call = {"id": "c1", "function": {"name": "bash", "arguments": text}}
    assert tokens._json_tokens(call) == (_estimate(call) if orjson is not None else None)
    if orjson is not None:
        expected = json.dumps(call, separators=(",", ":"), ensure_ascii=False).encode()
        assert orjson.dumps(call) == expected


def test_a_str_subclass_key_takes_the_encoder() -> None:
    class Key(str):
        pass

    call = {Key("id"): "c1", "function": {"name": "x", "arguments": '{"a": "\\n"}'}}
    assert tokens._json_tokens(call) in (None, _estimate(call))
    assert tokens.message_tokens({"role": "assistant", "tool_calls": [call]}) == (
        tokens.MESSAGE_OVERHEAD_TOKENS + _estimate(call)
    )
