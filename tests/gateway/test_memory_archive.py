"""The in-memory recall archive renders nothing when a compaction is noted, and a read
sees what an archive filled at once holds: the same entries, texts and search hits."""

from __future__ import annotations

import pytest

from windowkeeper.core.messages import Message
from windowkeeper.core.report import ArchivedItem
from windowkeeper.gateway import archive as archive_module
from windowkeeper.gateway.archive import ArchiveRecall, MemoryArchive
from windowkeeper.store import Compaction, MemoryStore, RecallTool
from windowkeeper.store.session import archive_records


def _compaction(n: int) -> tuple[list[Message], list[ArchivedItem]]:
    call = {"id": f"c{n}", "type": "function",
            "function": {"name": "run", "arguments": f'{{"cmd": "make {n}"}}'}}  # fmt: skip
    result: Message = {"role": "tool", "tool_call_id": f"c{n}", "content": f"output {n} zebra"}
    turn: Message = {"role": "assistant", "content": f"turn {n}"}
    inputs: list[Message] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        result,
        turn,
    ]
    return inputs, [ArchivedItem(f"wk{n}a", "tool_output", 2, result),
                    ArchivedItem(f"wk{n}b", "message", 3, turn)]  # fmt: skip


def _eager(requests: list[list[tuple[list[Message], list[ArchivedItem]]]]) -> RecallTool:
    store = MemoryStore(copy_archived=False)
    session = store.create_session(title="recall")
    for compactions in requests:
        records = tuple(e for inputs, items in compactions for e in archive_records(inputs, items))
        record = store.list_sessions(limit=1)[0]
        store.commit_compaction(record.id, Compaction(
            generation=record.generation, watermark=0, messages=(), archive=records,
            guard_state=None, previous_summary=None))  # fmt: skip
    return RecallTool(store, session.id)


def test_noting_renders_nothing_and_a_read_sees_every_noted_original(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = [[_compaction(1), _compaction(2)], [_compaction(3)]]
    rendered: list[int] = []

    def counting(messages: list[Message], archived: list[ArchivedItem]) -> object:
        rendered.append(len(archived))
        return archive_records(messages, archived)

    monkeypatch.setattr(archive_module, "archive_records", counting)
    archive = MemoryArchive()
    for compactions in requests:
        archive.note(compactions)
    assert rendered == []
    assert archive.store.archived(archive.session_id) == []
    lazy, eager = ArchiveRecall(archive), _eager(requests)
    for handle in ("wk1a", "wk2b", "wk3a", "wk9z"):
        assert lazy.by_handle(handle) == eager.by_handle(handle)
    assert rendered == [2, 2, 2]  # every noted compaction, once
    assert "make 3" in lazy.by_handle("wk3a")
    archive.note([_compaction(4)])
    for arguments in ({"query": "zebra"}, {"query": "zebra", "limit": 2}, {"handle": "wk4a"}):
        assert lazy.call("recall", arguments) == _eager([*requests, [_compaction(4)]]).call(
            "recall", arguments
        )
