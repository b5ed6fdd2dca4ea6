"""The "system_and_3" cache-marker layout: placement, idempotence, copy-on-write."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.adapters.caching import MAX_MARKERS, apply_cache_markers, count_cache_markers
from windowkeeper.core.errors import ConfigError

MARK = {"type": "ephemeral"}


def _session() -> list[dict[str, Any]]:
    return [
        system(),
        user("fix the bug"),
        assistant(None, call("c1", "bash", command="pytest")),
        tool("c1", "1 failed"),
        assistant("The refund test fails."),
        user("go on"),
    ]


def test_system_and_last_three() -> None:
    messages = _session()
    snapshot = copy.deepcopy(messages)
    out = apply_cache_markers(messages)
    assert messages == snapshot
    assert count_cache_markers(out) == 4
    assert out[0]["content"] == [
        {"type": "text", "text": system()["content"], "cache_control": MARK}
    ]
    for index in (1, 2):
        assert out[index] is messages[index]  # unmarked messages are the same objects
    assert out[3]["content"] == [{"type": "text", "text": "1 failed", "cache_control": MARK}]
    assert out[4]["content"] == [
        {"type": "text", "text": "The refund test fails.", "cache_control": MARK}
    ]
    assert out[5]["content"][0]["cache_control"] == MARK


def test_idempotent_and_identity_on_second_application() -> None:
    once = apply_cache_markers(_session())
    twice = apply_cache_markers(once)
    assert twice == once
    assert twice is once


def test_rolling_conversation_moves_markers_and_restores_strings() -> None:
    marked = apply_cache_markers(_session())
    grown = [*marked, assistant(None, call("c2", "bash", command="ls")), tool("c2", "a.py")]
    out = apply_cache_markers(grown)
    assert count_cache_markers(out) == 4
    assert out[4]["content"] == "The refund test fails."  # stale marker gone, string again
    assert out[5]["content"][0]["cache_control"] == MARK
    assert out[6]["cache_control"] == MARK  # content None: marker at message level
    assert out[6]["content"] is None
    assert out[7]["content"] == [{"type": "text", "text": "a.py", "cache_control": MARK}]


def test_ttl_and_bad_arguments() -> None:
    out = apply_cache_markers([user("hi")], ttl="1h")
    assert out[0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(ConfigError, match="ttl"):
        apply_cache_markers([user("hi")], ttl="2h")
    with pytest.raises(ConfigError, match="layout"):
        apply_cache_markers([user("hi")], layout="everything")


def test_list_content_marks_the_last_part_and_skips_empty_text() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "see"}, image]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": ""},
    ]
    out = apply_cache_markers(messages)
    assert out[0]["content"][0] == {"type": "text", "text": "see"}
    assert out[0]["content"][1] == {**image, "cache_control": MARK}
    assert out[1]["cache_control"] == MARK and "cache_control" not in out[1]["content"][0]
    assert out[2] == {"role": "assistant", "content": "", "cache_control": MARK}


def test_without_a_system_message_and_short_lists() -> None:
    assert apply_cache_markers([]) == []
    out = apply_cache_markers([user("a"), assistant("b")])
    assert count_cache_markers(out) == 2
    only_system = apply_cache_markers([system()])
    assert count_cache_markers(only_system) == 1


def test_leading_system_run_marks_its_last_message() -> None:
    messages = [system("a"), {"role": "developer", "content": "b"}, user("c")]
    out = apply_cache_markers(messages)
    assert out[0] is messages[0]
    assert out[1]["content"][0]["cache_control"] == MARK


def test_foreign_markers_everywhere_are_cleaned() -> None:
    marked_call = {**call("c1", "bash", command="ls"), "cache_control": MARK}
    messages: list[dict[str, Any]] = [
        {**system(), "cache_control": MARK},
        *[{"role": "user", "content": [{"type": "text", "text": f"m{i}", "cache_control": MARK}]}
          for i in range(6)],
        {"role": "assistant", "content": None, "tool_calls": [marked_call]},
        tool("c1", "ok"),
    ]  # fmt: skip
    assert count_cache_markers(messages) == 8
    out = apply_cache_markers(messages)
    assert count_cache_markers(out) == 4
    assert out[1]["content"] == "m0"
    assert "cache_control" not in out[7]["tool_calls"][0]


def test_markers_survive_the_anthropic_adapter() -> None:
    system_param, out = to_anthropic(apply_cache_markers(_session()))
    assert isinstance(system_param, list) and system_param[0]["cache_control"] == MARK
    total = sum(
        "cache_control" in block
        for message in out
        if isinstance(message["content"], list)
        for block in message["content"]
    )
    assert total == 3


_text = {"type": st.just("text"), "text": st.text(max_size=3)}
_part = st.one_of(
    st.fixed_dictionaries(_text),
    st.fixed_dictionaries({**_text, "cache_control": st.just(MARK)}),
)
_content = st.one_of(st.none(), st.text(max_size=3), st.lists(_part, max_size=3))
_message = st.builds(
    lambda role, content, marked: (
        {"role": role, "content": content, **({"cache_control": MARK} if marked else {})}
    ),
    st.sampled_from(["system", "developer", "user", "assistant", "tool"]),
    _content,
    st.booleans(),
)


@given(st.lists(_message, max_size=12))
def test_property_never_more_than_four_and_idempotent(messages: list[dict[str, Any]]) -> None:
    snapshot = copy.deepcopy(messages)
    once = apply_cache_markers(messages)
    assert messages == snapshot
    assert count_cache_markers(once) <= MAX_MARKERS
    twice = apply_cache_markers(once)
    assert twice == once and twice is once
