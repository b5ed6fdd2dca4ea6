"""Anthropic Messages with ``keep_originals``: unchanged messages go back as the same objects."""

from __future__ import annotations

import copy
from typing import Any

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
