"""The quick pairing check answers as the full one does (issue 27, the rest stage):
``is_paired`` is ``not pairing_violations`` on any history, clean or not."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.core.invariants import is_paired, pairing_violations

# Few ids, so results meet their calls, repeat, and miss; odd ids the full check reads
# its own way (a call id that is not a string counts as "", a result's id as its str).
IDS = st.sampled_from(["a", "b", "c", "", "None", None, 5])


def _call() -> st.SearchStrategy[Any]:
    dict_call = st.fixed_dictionaries({"id": IDS, "type": st.just("function")})
    return st.one_of(dict_call, dict_call, st.just("not a call"), st.fixed_dictionaries({}))


MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"])}),
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["assistant", "user"]),
            "tool_calls": st.lists(_call(), max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "tool_calls": st.sampled_from([None, (), "x", {}])}
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": IDS}),
    st.fixed_dictionaries({"role": st.just("tool")}),
)


@given(st.lists(MESSAGE, max_size=14))
def test_the_quick_check_is_the_full_one(messages: list[dict[str, Any]]) -> None:
    assert is_paired(messages) == (not pairing_violations(messages))


def _paired_history(groups: list[tuple[int, bool]]) -> list[dict[str, Any]]:
    """Turns of calls with all their results; the last group may be in flight."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number, (size, answered) in enumerate(groups):
        ids = [f"call_{number}_{i}" for i in range(size)]
        calls = [{"id": cid, "type": "function"} for cid in ids]
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        if answered or number < len(groups) - 1:
            messages += [{"role": "tool", "tool_call_id": cid} for cid in reversed(ids)]
    return messages


@given(st.lists(st.tuples(st.integers(1, 4), st.booleans()), max_size=8))
def test_a_clean_history_is_paired_and_one_lost_result_is_not(
    groups: list[tuple[int, bool]],
) -> None:
    messages = _paired_history(groups)
    assert is_paired(messages) and not pairing_violations(messages)
    results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    if results and len(groups) > 1:
        # A result lost before the newest group: its call is left unanswered.
        first = results[0]
        broken = messages[:first] + messages[first + 1 :]
        assert not is_paired(broken) and pairing_violations(broken)
    if results:
        # A result sent twice, every call still answered.
        twice = messages[: results[0] + 1] + messages[results[0] :]
        assert not is_paired(twice) and pairing_violations(twice)
        # A result whose call is another's (its id taken by no call of the group).
        stray = [*messages]
        stray[results[0]] = {"role": "tool", "tool_call_id": "other"}
        assert not is_paired(stray) and pairing_violations(stray)
