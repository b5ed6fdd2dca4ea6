"""Anthropic Messages with ``keep_originals``: unchanged messages go back as the same objects."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.adapters.anthropic import SOURCE_KEY, from_anthropic
from windowkeeper.adapters.anthropic_write import to_anthropic
from windowkeeper.core.messages import strip_private_keys, validate_messages

SYSTEM = [
    {"type": "text", "text": "Be exact.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
]
MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": "read a.py", "citations": None}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "c2ln"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"},
             "caller": {"type": "direct"}},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
             "input": {"query": "x"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)",
             "future_field": [1, 2]},
            {"type": "text", "text": "and now?"},
        ],
        "unknown_message_field": True,
    },
]  # fmt: skip


def test_unchanged_messages_go_back_as_the_same_objects() -> None:
    snapshot = copy.deepcopy((SYSTEM, MESSAGES))
    canonical = from_anthropic(SYSTEM, MESSAGES, keep_originals=True)
    validate_messages(canonical)
    system, out = to_anthropic(canonical)
    assert system is SYSTEM
    assert len(out) == len(MESSAGES) and all(a is b for a, b in zip(out, MESSAGES, strict=True))
    assert snapshot == (SYSTEM, MESSAGES)
    # Without keep_originals the canonical messages carry no source (the old contract).
    assert not any(SOURCE_KEY in m for m in from_anthropic(SYSTEM, MESSAGES))


def test_a_changed_message_is_converted_and_its_neighbours_stay_originals() -> None:
    canonical = from_anthropic(SYSTEM, MESSAGES, keep_originals=True)
    tool_index = next(i for i, m in enumerate(canonical) if m["role"] == "tool")
    canonical[tool_index] = {**canonical[tool_index], "content": "[read] a.py (1 line)"}
    _, out = to_anthropic(canonical)
    assert out[0] is MESSAGES[0] and out[1] is MESSAGES[1]
    rebuilt = out[2]
    assert rebuilt is not MESSAGES[2] and rebuilt["role"] == "user"
    assert rebuilt["content"][0]["content"] == "[read] a.py (1 line)"
    assert rebuilt["content"][1] == {"type": "text", "text": "and now?"}
    changed_system = [{**canonical[0], "content": "Be exact. (compacted)"}, *canonical[1:]]
    assert to_anthropic(changed_system)[0] == "Be exact. (compacted)"


def test_sources_do_not_leak_to_other_formats() -> None:
    canonical = from_anthropic("sys", MESSAGES, keep_originals=True)
    assert all(SOURCE_KEY not in strip_private_keys(m) for m in canonical)


# --- ``made``: the conversion's own objects go back without being converted again -------

TOOLS_TURNS: list[dict[str, Any]] = [
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_2", "name": "run", "input": {"cmd": "ls"}},
        {"type": "tool_use", "id": "toolu_3", "name": "run", "input": {"cmd": "pwd"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "a.py"},
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "/w"}]},
    {"role": "assistant", "content": "done", "cache_control": {"type": "ephemeral"}},
]  # fmt: skip
ORIGINALS = [*MESSAGES, *TOOLS_TURNS]


def _edit(canonical: list[dict[str, Any]], edits: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``canonical`` with each edit applied in turn (what compaction passes do to a list:
    replace messages by changed or equal copies, drop them, add their own)."""
    out = list(canonical)
    for kind, at in edits:
        index = at % (len(out) + 1 if kind == "insert" else len(out))
        if kind == "insert":
            out.insert(index, {"role": "user", "content": f"note {at}"})
        elif kind == "drop":
            del out[index]
        elif kind == "copy":
            out[index] = dict(out[index])
        elif kind == "strip":
            out[index] = {k: v for k, v in out[index].items() if k != SOURCE_KEY}
        else:  # a changed copy keeps the source record (and its span) of the one it copies
            out[index] = {**out[index], "content": f"changed {at}"}
        if not out:
            break
    return out


def _originals_in(units: list[Any]) -> list[bool]:
    return [any(unit is original for original in ORIGINALS) for unit in units]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["change", "copy", "drop", "insert", "strip"]),
                  st.integers(0, 50)),
        max_size=5,
    )
)  # fmt: skip
def test_made_changes_nothing_but_the_work(edits: list[tuple[str, int]]) -> None:
    """With the conversion's output as ``made``, the same wire form, the same originals
    sent as themselves, for any edit of the list: only the comparison is skipped, and
    only for the conversion's own objects (a changed copy shares their source record)."""
    canonical = from_anthropic(SYSTEM, ORIGINALS, keep_originals=True)
    edited = _edit(canonical, edits)
    plain = to_anthropic(edited)
    fast = to_anthropic(edited, canonical)
    assert fast == plain
    assert fast[0] is plain[0] or fast[0] == plain[0]
    assert _originals_in(fast[1]) == _originals_in(plain[1])


def test_made_sends_untouched_runs_as_originals_and_converts_changed_ones() -> None:
    canonical = from_anthropic(SYSTEM, ORIGINALS, keep_originals=True)
    assert to_anthropic(canonical, canonical)[1] == ORIGINALS
    assert _originals_in(to_anthropic(canonical, canonical)[1]) == [True] * len(ORIGINALS)
    # The second of two tool results made from one user message, changed: that message is
    # converted anew, its source record shared by the untouched first result.
    second = max(i for i, m in enumerate(canonical) if m["role"] == "tool")
    changed = [*canonical]
    changed[second] = {**changed[second], "content": "[pruned]"}
    _, out = to_anthropic(changed, canonical)
    assert _originals_in(out) == [True, True, True, True, False, True]
    assert out[4]["content"][1]["content"] == "[pruned]"
    # A made list of other objects (e.g. restored from a store) only ever falls back to
    # the comparison.
    other = copy.deepcopy(canonical)
    assert to_anthropic(changed, other) == to_anthropic(changed)
    # Part of a conversion (cut inside a source's run) is as good as none for that run.
    for end in range(len(canonical)):
        assert to_anthropic(canonical, canonical[:end]) == to_anthropic(canonical)
