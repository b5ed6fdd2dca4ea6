"""The branch's pairing check from where it last found a request clean gives what the
whole check gives (``sanitize_tool_pairs(request, sent=True)``), for any sequence of
requests: histories that grow, are cut mid-group, lose or gain tool results, repeat a
turn, or are rewritten at the front."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.compaction.sanitize import sanitize_tool_pairs
from windowkeeper.core.messages import Message
from windowkeeper.gateway.pairs import CleanRequests, needs_no_repair
from windowkeeper.testing.histories import random_history

_STEPS = ("grow", "grow", "cut", "drop_result", "orphan", "repeat_turn", "front", "same")


def _next(rng: random.Random, step: str, full: list[Message], last: list[Message]) -> list[Message]:
    """The next request: a step away from the last one (``full``: the whole history)."""
    if step == "grow":
        return full[: rng.randint(min(len(last), len(full)), len(full))]
    if step == "cut":
        return full[: rng.randint(1, len(full))]
    if step == "same" or not last:
        return list(last) or full[:1]
    at = rng.randrange(len(last))
    if step == "drop_result":
        results = [i for i, m in enumerate(last) if m.get("role") == "tool"]
        at = rng.choice(results) if results else at
        return last[:at] + last[at + 1 :]
    if step == "orphan":
        orphan: Message = {"role": "tool", "tool_call_id": f"gone_{at}", "content": "x"}
        return [*last[:at], orphan, *last[at:]]
    if step == "repeat_turn":
        return [*last[: at + 1], last[at], *last[at + 1 :]]
    return [{"role": "user", "content": "a new start"}, *last[1:]]  # "front"


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**9), steps=st.lists(st.sampled_from(_STEPS), max_size=12))
def test_the_check_from_the_last_clean_request_equals_the_whole_check(
    seed: int, steps: list[str]
) -> None:
    rng = random.Random(seed)
    full = random_history(rng, max_turns=8)
    clean = CleanRequests()
    request: list[Message] = []
    for step in ["grow", *steps]:
        request = _next(rng, step, full, request)
        whole = sanitize_tool_pairs(request, sent=True).messages
        got = clean.sanitized(request)
        assert got == whole
        assert (got is request) == (whole is request)


def test_a_clean_history_that_grows_is_remembered_and_a_broken_one_is_not() -> None:
    def round_(n: int) -> list[Message]:
        call = {"id": f"c{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        return [
            {"role": "user", "content": f"step {n}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "ok"},
            {"role": "assistant", "content": "done"},
        ]

    clean = CleanRequests()
    first = [m for n in range(50) for m in round_(n)]
    assert clean.sanitized(first) is first and clean.last is first
    grown = [*first, *round_(50)]
    assert clean.sanitized(grown) is grown and clean.last is grown
    broken = [*grown, {"role": "tool", "tool_call_id": "nobody", "content": "x"}]
    repaired = clean.sanitized(broken)
    assert repaired is not broken and repaired == sanitize_tool_pairs(broken, sent=True).messages
    assert clean.last == []  # a repaired request is never the starting point
    in_flight = [*grown, {"role": "user", "content": "go"}, round_(51)[1]]  # no result yet
    assert clean.sanitized(in_flight) == sanitize_tool_pairs(in_flight, sent=True).messages


# --- the one-walk check against the library's -------------------------------------------

_IDS = st.sampled_from(["a", "b", "a", "b", "", "None"])
_CALL = st.one_of(
    st.fixed_dictionaries({"id": _IDS, "type": st.just("function")}),
    st.fixed_dictionaries({"id": st.sampled_from([None, 7])}),  # an id that is no string
    st.just({}),
    st.just("not a call"),
)
_CALLS = st.fixed_dictionaries({"role": st.just("assistant"), "tool_calls": st.lists(_CALL)})
_HEAD = st.one_of(
    _CALLS,
    _CALLS,
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant"])}),
    st.fixed_dictionaries({"role": st.just("assistant"), "tool_calls": st.just("calls")}),
    st.fixed_dictionaries({"role": st.just("user"), "tool_calls": st.lists(_CALL, max_size=2)}),
)
_RESULT = st.one_of(
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": _IDS}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": st.none()}),
    st.just({"role": "tool"}),
)


def _answered(ids: list[str]) -> list[Message]:
    calls = [{"id": i, "type": "function"} for i in ids]
    return [
        {"role": "assistant", "tool_calls": calls},
        *({"role": "tool", "tool_call_id": i} for i in ids),
    ]


_GROUP = st.one_of(
    st.tuples(_HEAD, st.lists(_RESULT, max_size=3)).map(lambda g: [g[0], *g[1]]),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True).map(_answered),
    st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=3).map(_answered),
)


@settings(max_examples=1500, deadline=None)
@given(groups=st.lists(_GROUP, max_size=6))
def test_the_one_walk_check_answers_what_the_library_does(groups: list[list[Message]]) -> None:
    """Orphan, duplicate and missing results, calls whose ids repeat or are no strings,
    calls that are no objects, adjacent turns, the newest calls unanswered: the walk finds
    a list clean exactly when the library returns it unrepaired."""
    messages = [message for group in groups for message in group]
    expected = sanitize_tool_pairs(messages, sent=True).messages is messages
    assert needs_no_repair(messages) is expected


def test_the_one_walk_check_refuses_each_defect() -> None:
    call = {"id": "a", "type": "function"}
    ask: Message = {"role": "user"}
    calls: Message = {"role": "assistant", "tool_calls": [call]}
    result: Message = {"role": "tool", "tool_call_id": "a"}
    assert needs_no_repair([ask, calls, result, {"role": "assistant"}])
    assert needs_no_repair([ask, {"role": "assistant", "tool_calls": [call, call]}, result])
    assert not needs_no_repair([ask, calls])  # the newest call unanswered (sent)
    assert not needs_no_repair([ask, calls, result, result])  # answered twice
    assert not needs_no_repair([ask, result])  # an orphan
    assert not needs_no_repair([ask, calls, {**result, "tool_call_id": "b"}])
    assert not needs_no_repair([ask, calls, result, {"role": "user"}, {"role": "user"}])
    assert not needs_no_repair([ask, calls, {"role": "assistant"}, result])
