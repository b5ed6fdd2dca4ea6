"""Pass 1's candidates (equal-length large outputs) and pass 2's call look-up give what the
code they replaced gave (issue 27): compared on generated lists rich in equal lengths,
stubs and repeated call ids."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.gist import is_stub
from windowkeeper.analysis.record import Analyzer
from windowkeeper.compaction.prune import (
    PruneSettings,
    _calls_by_id,
    _dedupe_candidates,
    _long_arguments,
)
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.messages import Message, call_arguments, call_id, tool_calls

# Texts of a few lengths around the 200-character floor; some are stubs of those lengths
# (a stub is never a candidate, even when an output of its length is).
_TEXTS = st.sampled_from([
    "a" * 199, "b" * 199, "a" * 200, "b" * 200, "c" * 200, "a" * 260, "d" * 260,
    "[duplicate output" + "x" * 183, "[bash] ran" + "y" * 174 + " (ref wk0123456789)",
    "[" + "z" * 199, "x" * 12,
])  # fmt: skip
_MESSAGES = st.lists(
    st.one_of(
        st.builds(lambda t: {"role": "tool", "tool_call_id": "c", "content": t}, _TEXTS),
        st.builds(lambda t: {"role": "user", "content": t}, _TEXTS),
        st.just({"role": "tool", "tool_call_id": "c", "content": [{"type": "text"}]}),
    ),
    max_size=24,
)


def _old_candidates(messages: list[Message], start: int, end: int, least: int) -> set[int]:
    """The candidates as the code before this one found them."""
    by_length: dict[int, list[int]] = {}
    for index, message in enumerate(messages):
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        if isinstance(content, str) and len(content) >= least and not is_stub(content):
            by_length.setdefault(len(content), []).append(index)
    found: set[int] = set()
    for group in by_length.values():
        first = next((n for n, i in enumerate(group) if start <= i < end), len(group))
        if len(group) - first > 1:
            found.update(group[first:])
    return found


@settings(max_examples=1_500, deadline=None)
@given(_MESSAGES, st.integers(0, 25), st.integers(0, 25))
def test_candidates_are_those_the_old_scan_found(
    messages: list[Message], start: int, end: int
) -> None:
    settings_ = PruneSettings(start, end)
    expected = _old_candidates(messages, start, end, settings_.min_chars)
    assert _dedupe_candidates(messages, settings_) == expected


_IDS = st.sampled_from(["a", "b", "c", ""])
# Calls as sent, well formed or not: the look-ups read what ``tool_calls``, ``call_id``
# and ``call_arguments`` read.
_ODD_CALLS = st.one_of(
    st.builds(
        lambda i, a: {"id": i, "function": {"name": "t", "arguments": a}},
        st.one_of(_IDS, st.just(7), st.none()),
        st.one_of(st.sampled_from(["", "{}", "x" * 40, "y" * 41]), st.none(), st.just(3)),
    ),
    st.sampled_from([{"id": "a"}, {"id": "b", "function": "f"}, "call", None, {"function": None}]),
)
_CALL_MESSAGES = st.builds(
    lambda role, calls: {"role": role, "content": "", "tool_calls": calls},
    st.sampled_from(["assistant", "tool", "user"]),
    st.one_of(st.lists(_ODD_CALLS, max_size=4), st.none(), st.just("calls"), st.just({})),
)


@settings(max_examples=1_500, deadline=None)
@given(_CALL_MESSAGES, st.integers(0, 45))
def test_long_arguments_as_the_generic_readers_tell(message: Message, over: int) -> None:
    expected = any(len(call_arguments(call)) > over for call in tool_calls(message))
    assert _long_arguments(message, over) is expected


@settings(max_examples=1_500, deadline=None)
@given(st.lists(_CALL_MESSAGES, max_size=6), _IDS, st.integers(0, 7))
def test_the_owner_of_an_id_as_the_generic_readers_tell(
    messages: list[Message], wanted: str, end: int
) -> None:
    owners = {
        call_id(call): index
        for index, message in enumerate(messages[:end])
        if message.get("tool_calls")
        for call in tool_calls(message)
    }
    analyzer = Analyzer()
    try:
        analyzer.analyze(messages)  # as in a compaction: the messages were checked
    except InvalidMessagesError:
        assume(False)
    found = _calls_by_id(messages, analyzer, end)(wanted)
    if wanted not in owners:
        assert found is None
        return
    calls = analyzer.facts(messages[owners[wanted]]).calls
    assert found is [made for made in calls if made.id == wanted][-1]


def _assistant(ids: list[str]) -> Message:
    calls: list[dict[str, Any]] = [
        {"id": i, "type": "function", "function": {"name": f"t{n}", "arguments": "{}"}}
        for n, i in enumerate(ids)
    ]
    return {"role": "assistant", "content": "", "tool_calls": calls}


@settings(max_examples=800, deadline=None)
@given(st.lists(st.lists(_IDS, max_size=4), max_size=6), _IDS, st.integers(0, 7))
def test_the_call_of_an_id_is_the_last_made_before_the_end(
    owners: list[list[str]], wanted: str, end: int
) -> None:
    messages = [_assistant(ids) for ids in owners]
    analyzer = Analyzer()
    found = _calls_by_id(messages, analyzer, end)(wanted)
    made = [(m, n) for m, ids in enumerate(owners[:end]) for n, i in enumerate(ids) if i == wanted]
    if not made:
        assert found is None
        return
    # the last message making it; within that message, its last call of the id
    index = made[-1][0]
    number = max(n for m, n in made if m == index)
    assert found is not None
    assert found.name == f"t{number}" and found.id == wanted
