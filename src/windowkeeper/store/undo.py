"""What a compaction replaced, read from the store's compaction log (issue 26: ``diff``).

Built once over the contract's methods (``compactions``, ``load``, ``archived``), so
every backend answers the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.kinds import is_handoff
from ..core.errors import StoreError
from ..core.messages import Message, message_text
from .base import CompactionRecord, SessionStore

__all__ = ("CompactionDiff", "ReplacedMessage", "compaction_diff")


@dataclass(frozen=True)
class ReplacedMessage:
    """One message of the history a compaction replaced, with the archive handles that
    hold it (empty when the compaction kept it verbatim, e.g. the protected head)."""

    seq: int
    message: Message
    handles: tuple[str, ...]


@dataclass(frozen=True)
class CompactionDiff:
    """Compaction ``number`` (1 = the session's first) of ``session_id``."""

    session_id: str
    number: int
    record: CompactionRecord
    replaced: tuple[ReplacedMessage, ...]
    written: tuple[Message, ...]
    handoff: str | None
    """The text of the handoff the compaction wrote (``None`` for pruning alone)."""


def compaction_diff(
    store: SessionStore, session_id: str, number: int | None = None
) -> CompactionDiff:
    """The diff of compaction ``number`` (1-based; the newest when ``None``)."""
    log = store.compactions(session_id)
    if not log:
        raise StoreError(f"session {session_id!r} has no in-place compaction to show")
    index = len(log) if number is None else number
    if not 1 <= index <= len(log):
        raise StoreError(
            f"session {session_id!r} has compactions 1 to {len(log)}, not {number}; "
            "pass --compaction with one of those"
        )
    record = log[index - 1]
    rows = {row.seq: row.message for row in store.load(session_id, include_archived=True).rows}
    entries = store.archived(session_id, list(record.handles))
    replaced = tuple(
        ReplacedMessage(seq, rows[seq], tuple(e.handle for e in entries if e.message == rows[seq]))
        for seq in record.replaced
        if seq in rows
    )
    written = tuple(rows[seq] for seq in record.inserted if seq in rows)
    handoff = next((message_text(m) for m in written if is_handoff(m)), None)
    return CompactionDiff(session_id, index, record, replaced, written, handoff)
