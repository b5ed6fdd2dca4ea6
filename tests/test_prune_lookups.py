"""Pruning parses only the calls it reads, and answers as when it parsed them all.

A stub's call is found by id among the calls made before the pruned region's end (the
later call when an id repeats); pass 3 parses a message's calls only when one of them has
arguments over the limit. Both are compared with the eager forms they replaced.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.analysis.gist import DUPLICATE_TAG
from windowkeeper.analysis.record import Analyzer, CallFacts
from windowkeeper.compaction import prune as prune_module
from windowkeeper.compaction.prune import (
    PruneSettings,
    _calls_by_id,
    _long_arguments,
    _shortened_calls,
    content_handle,
    dedupe_tool_outputs,
    make_handle,
    truncate_tool_arguments,
)
from windowkeeper.core.messages import Message

_IDS = st.sampled_from(["a", "b", "c", ""])
_ARGUMENTS = st.one_of(
    st.sampled_from(["", "{}", "not json", "[1]"]),
    st.builds(lambda text: json.dumps({"command": text}), st.text(max_size=30)),
    st.builds(lambda n: json.dumps({"content": "x" * n, "path": "/a"}), st.integers(0, 700)),
)
_CALL = st.one_of(
    st.builds(
        lambda i, name, args: {"id": i, "type": "function",
                               "function": {"name": name, "arguments": args}},
        _IDS | st.just(7), st.sampled_from(["bash", "Write", "todo"]), _ARGUMENTS,
    ),
    # A mapping that is no dict: the engine takes it and reads no call from it.
    st.just(MappingProxyType({"id": "a", "function": {"name": "bash", "arguments": "{}"}})),
    st.just({"type": "function"}),
)  # fmt: skip


def _message(role: str, calls: list[Any], output: str) -> Message:
    if role == "assistant":
        return {"role": "assistant", "content": None, "tool_calls": calls}
    if role == "tool":
        return {"role": "tool", "tool_call_id": output[:1], "content": output}
    return {"role": role, "content": output, "tool_calls": calls}  # a stray list: ignored


_MESSAGES = st.lists(
    st.builds(
        _message,
        st.sampled_from(["assistant", "assistant", "tool", "user"]),
        st.lists(_CALL, max_size=3),
        st.text(alphabet="abc", max_size=4),
    ),
    max_size=8,
)


def _eager(messages: list[Message], analyzer: Analyzer, end: int) -> dict[str, CallFacts]:
    """The lookup as it was: every call before ``end`` parsed, by id."""
    return {
        call.id: call
        for m in messages[:end]
        if m.get("tool_calls")
        for call in analyzer.facts(m).calls
    }


@given(_MESSAGES, st.integers(0, 9), st.lists(_IDS | st.just("7"), max_size=5))
def test_a_call_found_by_id_is_the_one_the_eager_lookup_found(
    messages: list[Message], end: int, wanted: list[str]
) -> None:
    analyzer = Analyzer()
    analyzer.analyze(messages)
    eager = _eager(messages, analyzer, end)
    find = _calls_by_id(messages, analyzer, end)
    for key in [*wanted, *eager]:
        assert find(key) == eager.get(key)


@given(_MESSAGES, st.integers(0, 600))
def test_pass_three_skips_only_messages_it_would_leave_alone(
    messages: list[Message], over: int
) -> None:
    settings = PruneSettings(0, len(messages), args_over=over, args_head=50)
    analyzer = Analyzer()
    for message in messages:
        if message.get("tool_calls") and not _long_arguments(message, over):
            assert _shortened_calls(message, settings) is None
    # And the pass as a whole: what it shortens is what the ungated calls shorten.
    result = truncate_tool_arguments(messages, PruneSettings(0, len(messages), 0, over, 50))
    for index, message in enumerate(messages):
        eager = (
            _shortened_calls(message, settings)
            if message.get("tool_calls") and message.get("role") == "assistant"
            else None
        )
        expected = message if eager is None else {**message, "tool_calls": eager}
        assert result.messages[index] == expected
    # Each archived original's handle: the hash of its calls' arguments as the records
    # hold them (the pass reads them without parsing the calls).
    for item in result.archived:
        calls = analyzer.facts(messages[item.index]).calls
        assert item.handle == make_handle("\x00".join(call.raw_arguments for call in calls))


def test_an_id_made_twice_is_the_later_call() -> None:
    def made(name: str) -> dict[str, Any]:
        return {"id": "a", "type": "function", "function": {"name": name, "arguments": "{}"}}

    messages: list[Message] = [
        {"role": "assistant", "content": None, "tool_calls": [made("first"), made("second")]},
        {"role": "assistant", "content": None, "tool_calls": [made("third")]},
    ]
    analyzer = Analyzer()
    for end, name in ((1, "second"), (2, "third")):
        found = _calls_by_id(messages, analyzer, end)("a")
        assert found is not None and found.name == name
        assert found == _eager(messages, analyzer, end)["a"]


@given(st.lists(st.sampled_from(["x" * 300, "y" * 300, "z" * 250, "short"]), max_size=6))
def test_dedupe_names_a_copy_by_its_records_handle(outputs: list[str]) -> None:
    messages: list[Message] = [{"role": "user", "content": "task"}]
    messages += [{"role": "tool", "tool_call_id": f"c{n}", "content": text}
                 for n, text in enumerate(outputs)]  # fmt: skip
    analyzer = Analyzer()
    with_records = dedupe_tool_outputs(messages, PruneSettings(0, len(messages), analyzer=analyzer))
    alone = dedupe_tool_outputs(messages, PruneSettings(0, len(messages)))
    assert with_records.messages == alone.messages
    assert [(a.handle, a.index) for a in with_records.archived] == [
        (a.handle, a.index) for a in alone.archived
    ]
    for item in with_records.archived:  # the handle pass 2 and the archive read is the same
        assert content_handle(analyzer.facts(item.message)) == item.handle


def _deduped_as_it_was(messages: list[Message], start: int, end: int) -> list[tuple[int, str]]:
    """Pass 1 as it was: every output whose length another shares hashed, latest first;
    the (index, handle) of each copy replaced, in order."""
    lengths = [
        len(m["content"]) if m.get("role") == "tool" and len(m["content"]) >= 200 else -1
        for m in messages
    ]
    seen: set[str] = set()
    replaced: list[tuple[int, str]] = []
    for index in reversed(range(len(messages))):
        if lengths[index] < 0 or lengths.count(lengths[index]) < 2:
            continue
        handle = make_handle(messages[index]["content"])
        if handle not in seen:
            seen.add(handle)
        elif start <= index < end:
            replaced.append((index, handle))
    return replaced[::-1]


@given(
    st.lists(st.sampled_from(["x" * 300, "y" * 300, "z" * 250, "w" * 250, "short"]), max_size=9),
    st.integers(0, 10),
    st.integers(0, 10),
)
def test_dedupe_hashes_only_what_can_decide_and_replaces_what_it_did(
    outputs: list[str], start: int, end: int
) -> None:
    messages: list[Message] = [
        {"role": "tool", "tool_call_id": f"c{n}", "content": text} for n, text in enumerate(outputs)
    ]
    analyzer = Analyzer()
    result = dedupe_tool_outputs(messages, PruneSettings(start, end, analyzer=analyzer))
    assert [(a.index, a.handle) for a in result.archived] == _deduped_as_it_was(
        messages, start, end
    )
    for index, message in enumerate(result.messages):
        replaced = index in {a.index for a in result.archived}
        assert (message is messages[index]) != replaced
        assert not replaced or message["content"].startswith(DUPLICATE_TAG)
    # An output before the region's first of its length, or with no later one of it, is
    # never hashed (its record holds no handle).
    for index, message in enumerate(messages):
        size = len(message["content"])
        same = [i for i, m in enumerate(messages) if len(m["content"]) == size]
        in_region = [i for i in same if start <= i < end]
        needed = bool(in_region) and index >= in_region[0] and same[-1] > in_region[0]
        if not needed and len(message["content"]) >= 200:
            assert "content_handle" not in analyzer.facts(message).memo


def test_outputs_sharing_a_handle_but_not_a_text_are_both_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A handle is a 40-bit digest: two different outputs of one length may share one.
    Pass 1 replaces an output only by an equal text, never by a handle alone."""
    monkeypatch.setattr(prune_module, "make_handle", lambda *parts: "wk0000000000")
    first, second = "a" * 400, "b" * 400
    messages: list[Message] = [
        {"role": "tool", "tool_call_id": "1", "content": first},
        {"role": "tool", "tool_call_id": "2", "content": second},
        {"role": "tool", "tool_call_id": "3", "content": first},
    ]
    result = dedupe_tool_outputs(messages, PruneSettings(0, len(messages), min_chars=100))
    assert [m["content"] for m in result.messages[1:]] == [second, first]
    assert result.messages[0]["content"].startswith(DUPLICATE_TAG)
    assert len(result.archived) == 1
