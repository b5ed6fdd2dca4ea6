"""The in-memory store's archived originals: copied by default, kept as given for a writer
that never edits them (the gateway), read back as copies either way."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.store import MemoryStore
from windowkeeper.store.base import Compaction


def _archive(store: MemoryStore, message: dict[str, Any]) -> str:
    session = store.create_session(title="recall")
    archive = (("h1", "tool_output", "rendered", message),)
    outcome = store.commit_compaction(
        session.id,
        Compaction(
            generation=session.generation,
            watermark=0,
            messages=(),
            archive=archive,
            guard_state=None,
            previous_summary=None,
        ),
    )
    assert outcome.committed
    return session.id


@pytest.mark.parametrize("copy_archived", [True, False])
def test_archived_originals_read_back_equal_and_as_copies(copy_archived: bool) -> None:
    message = {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "x"}]}
    store = MemoryStore(copy_archived=copy_archived)
    sid = _archive(store, message)
    (entry,) = store.archived(sid)
    assert entry.message == message
    assert entry.message is not message  # a reader never gets the stored object
    entry.message["content"].append("edited by the reader")
    assert store.archived(sid)[0].message == message


def test_only_the_writer_that_asks_shares_its_originals() -> None:
    message = {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "x"}]}
    copied, shared = MemoryStore(), MemoryStore(copy_archived=False)
    held_copy = copied._sessions[_archive(copied, message)].archive["h1"].message
    held_shared = shared._sessions[_archive(shared, message)].archive["h1"].message
    assert held_copy == message and held_copy is not message
    assert held_shared is message
