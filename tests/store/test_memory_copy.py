"""The in-memory store keeps copies of what it is given, JSON values and others alike."""

from __future__ import annotations

from typing import Any

from windowkeeper.store import MemoryStore


def test_stored_messages_are_copies() -> None:
    store = MemoryStore()
    message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    record = store.create_session(messages=[message])
    message["content"][0]["text"] = "changed"
    loaded = store.load(record.id).rows[0].message
    assert loaded == {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    loaded["content"].append("mutated")
    assert store.load(record.id).rows[0].message["content"] == [{"type": "text", "text": "hi"}]


def test_a_message_that_holds_itself_is_copied_too() -> None:
    store = MemoryStore()
    odd: dict[str, Any] = {"role": "user", "content": "x"}
    odd["self"] = odd
    record = store.create_session(messages=[odd])
    stored = store.load(record.id).rows[0].message
    assert stored is not odd and stored["self"] is stored
