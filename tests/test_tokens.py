from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from factories import assistant, call, image_part, tool, user
from windowkeeper.core.tokens import (
    _DENSE_SCRIPT,
    estimate_request_tokens,
    estimate_tokens,
    message_tokens,
    tool_schema_tokens,
)


def test_ascii_is_ceil_len_over_4() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


def test_cjk_counts_one_token_per_character() -> None:
    assert estimate_tokens("漢字かなカナ한글") == 8


def test_other_non_ascii_counts_utf8_bytes() -> None:
    text = "привет"  # 6 Cyrillic letters, 12 bytes
    assert estimate_tokens(text) == 3
    assert estimate_tokens("é" * 4) == 2


def test_mixed_text() -> None:
    assert estimate_tokens("abcd漢字") == 1 + 2


def test_images_cost_a_flat_price_never_their_base64_length() -> None:
    huge = image_part("data:image/png;base64," + "A" * 400_000)
    message = user("look")
    message["content"] = [{"type": "text", "text": "look"}, huge]
    assert message_tokens(message) == 10 + 1 + 1_500
    assert message_tokens(message, image_tokens=100) == 10 + 1 + 100


def test_tool_call_envelope_is_counted() -> None:
    bare = message_tokens(assistant("ok"))
    with_call = message_tokens(assistant("ok", call("c1", "bash", command="ls -la")))
    assert with_call - bare >= 15


def test_none_and_list_content() -> None:
    assert message_tokens(assistant(None)) == 10
    assert message_tokens(tool("c1", [{"type": "text", "text": "abcd"}])) >= 11


def test_tool_schemas_are_counted() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a shell command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ]
    schema = tool_schema_tokens(tools)
    assert schema > 10
    assert estimate_request_tokens([user("hi")], tools) == message_tokens(user("hi")) + schema
    assert tool_schema_tokens(None) == 0


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200))
def test_fast_path_matches_the_definition(text: str) -> None:
    dense = sum(1 for c in text if _DENSE_SCRIPT.match(c))
    rest = "".join(c for c in text if not _DENSE_SCRIPT.match(c))
    expected = dense + math.ceil(len(rest.encode("utf-8")) / 4) if text else 0
    if text.isascii():
        expected = (len(text) + 3) // 4
    assert estimate_tokens(text) == expected
