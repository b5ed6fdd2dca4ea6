"""``recall`` in gateway mode: the gateway offers the tool and answers it itself (design §8).

When a branch has archived content (pruned tool output, summarized turns), the request
gets the ``recall`` tool. If the model calls it — and nothing the client must run — the
gateway answers from the archive, appends the call and the answers to the request and
asks the upstream again, at most ``recall_rounds`` times, so the client sees only the
final answer (streams included, see the protocols' stream filters). When the model mixes
``recall`` with the client's own tools, the ``recall`` calls are dropped from what the
client sees: the client runs its tools and the model can ask again next turn.

Without a durable store the archive lives in memory with the branch (a private memory
store holding only the archive entries, filled when recall first reads it: :mod:`.archive`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.messages import Message, ToolSchema
from ..store import MemoryStore, RecallTool, SessionStore
from ..store.recall import RECALL_TOOL
from .archive import ArchiveRecall, MemoryArchive
from .protocols import Protocol, RecallCall
from .sessions import Branch, Prepared

__all__ = [
    "RECALL_SCHEMA",
    "RECALL_TOOL",
    "archive_in_memory",
    "recall_answers",
    "recall_schema",
    "tool_for",
]

RECALL_SCHEMA: ToolSchema = RecallTool(MemoryStore(), "schema").schemas()[0]
"""The ``recall`` tool as a chat-style function schema."""


def recall_schema(protocol: Protocol) -> dict[str, Any]:
    """The ``recall`` tool in ``protocol``'s tool format."""
    return protocol.tool_schema(RECALL_SCHEMA)


def archive_in_memory(branch: Branch, prepared: Prepared) -> None:
    """Keep this request's archived originals with the branch (no durable store); their
    texts are rendered when recall first reads them (:mod:`.archive`)."""
    fresh = prepared.compactions[prepared.archived :]
    prepared.archived = len(prepared.compactions)
    noted = [(inputs, result.archived) for inputs, result in fresh if result.archived]
    if not noted:
        return
    if branch.archive is None:
        branch.archive = MemoryArchive()
    branch.archive.note(noted)


def tool_for(branch: Branch, store: SessionStore | None) -> RecallTool | None:
    """The recall tool over the branch's archive, or None when it has none."""
    if not branch.has_archive:
        return None
    if store is not None:
        held = branch.store_id if branch.archive_from is None else branch.archive_from
        return RecallTool(store, held) if held is not None else None
    if branch.archive is not None:
        return ArchiveRecall(branch.archive)
    return None


def recall_answers(tool: RecallTool, turn: Message, calls: Sequence[RecallCall]) -> list[Message]:
    """The model's turn and one tool result per recall call (blocking: store reads)."""
    answers: list[Message] = [turn]
    for call in calls:
        text = tool.call(RECALL_TOOL, call.arguments) or "error: recall is unavailable"
        answers.append({"role": "tool", "tool_call_id": call.call_id, "content": text})
    return answers
