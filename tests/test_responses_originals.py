"""OpenAI Responses with ``made``: the conversion's own messages go back as their items
without being converted again, and nothing else changes (the wire form, which items are
sent as the client's own objects)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_responses_adapter import AGENTS_SDK, CODEX
from windowkeeper.adapters import responses
from windowkeeper.adapters.responses import ITEMS_KEY, from_responses, to_responses

INSTRUCTIONS, CODEX_ITEMS = CODEX
ITEMS: list[dict[str, Any]] = [*CODEX_ITEMS, *AGENTS_SDK[1]]

EDITS = ["change", "copy", "drop", "insert", "strip", "role", "items"]


def _edit(canonical: list[dict[str, Any]], edits: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``canonical`` with each edit applied in turn (what compaction passes do to a list:
    replace messages by changed or equal copies, drop them, add their own), plus a copy
    whose role changed (it decides how a system item converts) and one whose items list
    is an equal copy (not the conversion's)."""
    out = list(canonical)
    for kind, at in edits:
        index = at % (len(out) + 1 if kind == "insert" else len(out))
        message = out[index] if index < len(out) else {}
        if kind == "insert":
            out.insert(index, {"role": "user", "content": f"note {at}"})
        elif kind == "drop":
            del out[index]
        elif kind == "copy":
            out[index] = dict(message)
        elif kind == "strip":
            out[index] = {k: v for k, v in message.items() if k != ITEMS_KEY}
        elif kind == "role":
            role = "developer" if message.get("role") == "user" else "user"
            out[index] = {**message, "role": role}
        elif kind == "items" and isinstance(message.get(ITEMS_KEY), list):
            out[index] = {**message, ITEMS_KEY: list(message[ITEMS_KEY])}
        elif kind == "change":  # a changed copy keeps the items list of the one it copies
            out[index] = {**message, "content": f"changed {at}"}
        if not out:
            break
    return out


def _originals_in(items: list[Any]) -> list[bool]:
    return [any(item is original for original in ITEMS) for item in items]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 60)), max_size=5))
def test_made_changes_nothing_but_the_work(edits: list[tuple[str, int]]) -> None:
    """With the conversion's output as ``made``, the same instructions and items, the
    same items sent as the client's own objects, for any edit of the list."""
    canonical = from_responses(ITEMS, INSTRUCTIONS)
    edited = _edit(canonical, edits)
    plain = to_responses(edited)
    fast = to_responses(edited, canonical)
    assert fast == plain
    assert _originals_in(fast[1]) == _originals_in(plain[1])


def test_made_messages_are_not_converted_again(monkeypatch: pytest.MonkeyPatch) -> None:
    canonical = from_responses(ITEMS, INSTRUCTIONS)
    snapshot = copy.deepcopy(ITEMS)

    def converted(*_: object, **__: object) -> None:
        raise AssertionError("a made message was converted again")

    monkeypatch.setattr(responses, "_message_from", converted)
    monkeypatch.setattr(responses, "model_turn", converted)
    instructions, items = to_responses(canonical, canonical)
    assert instructions == INSTRUCTIONS
    assert len(items) == len(ITEMS) and all(a is b for a, b in zip(items, ITEMS, strict=True))
    # A changed copy is compared with what the conversion made, not a new conversion:
    # the pruned output is rebuilt, the rest are still the client's objects.
    output = next(i for i, m in enumerate(canonical) if m["role"] == "tool")
    changed = [*canonical]
    changed[output] = {**changed[output], "content": "[pruned]"}
    _, items = to_responses(changed, canonical)
    assert [item["output"] for item in items if item.get("output") == "[pruned]"] == ["[pruned]"]
    assert _originals_in(items).count(False) == 1
    assert snapshot == ITEMS
    # Without ``made`` the same lists are converted again to compare.
    with pytest.raises(AssertionError, match="converted again"):
        to_responses(canonical)


def test_a_made_list_of_other_objects_only_falls_back_to_the_comparison() -> None:
    canonical = from_responses(ITEMS, INSTRUCTIONS)
    other = copy.deepcopy(canonical)  # e.g. restored from a store: equal, not the same
    changed = [{**m, "content": "x"} if m["role"] == "tool" else m for m in canonical]
    assert to_responses(changed, other) == to_responses(changed)
    assert _originals_in(to_responses(canonical, other)[1]) == [True] * len(ITEMS)
    for end in range(len(canonical)):
        assert to_responses(changed, canonical[:end]) == to_responses(changed)
