"""The records the session store contract reads and writes (design §7), all frozen.

:mod:`.base` states the contract over them (and re-exports them); the model they
describe (sessions, rows, archive entries, compactions and their undo) is told there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import StoreError
from ..core.messages import Message

__all__ = (
    "ArchiveEntry",
    "CommitOutcome",
    "Compaction",
    "CompactionRecord",
    "Migration",
    "SearchHit",
    "SessionRecord",
    "Snapshot",
    "StoredRow",
    "UndoOutcome",
    "nothing_to_undo",
    "undo_record",
)


@dataclass(frozen=True)
class Migration:
    """One named schema step; backends apply the missing ones in list order.

    ``statements`` are dialect SQL run in one transaction together with the row that
    records ``name`` in the applied-migrations table, so a step is applied whole or not.
    """

    name: str
    statements: tuple[str, ...]


@dataclass(frozen=True)
class SessionRecord:
    id: str
    parent_id: str | None
    title: str
    created_at: float
    updated_at: float
    ended_at: float | None
    end_reason: str | None
    generation: int
    last_seq: int
    compactions: int
    active_messages: int
    guard_state: str | None
    previous_summary: str | None


@dataclass(frozen=True)
class StoredRow:
    seq: int
    message: Message
    active: bool
    origin: str


@dataclass(frozen=True)
class Snapshot:
    """A consistent read of a session: its record and its rows in ``seq`` order.

    ``watermark`` is the session's ``last_seq`` at the time of the read; a compaction
    commits against it so rows appended later survive (see :meth:`commit_compaction`).
    """

    session: SessionRecord
    rows: tuple[StoredRow, ...]

    @property
    def watermark(self) -> int:
        return self.session.last_seq

    @property
    def messages(self) -> list[Message]:
        return [row.message for row in self.rows if row.active]


@dataclass(frozen=True)
class ArchiveEntry:
    session_id: str
    handle: str
    kind: str
    text: str
    message: Message
    created_at: float


@dataclass(frozen=True)
class SearchHit:
    session_id: str
    handle: str
    kind: str
    snippet: str
    score: float


@dataclass(frozen=True)
class Compaction:
    """What a compaction wants to commit.

    Args:
        generation: the session generation the input was read at (optimistic check).
        watermark: the ``last_seq`` the input was read at.
        messages: the compacted rows that replace the active rows up to ``watermark``.
        archive: ``(handle, kind, text, message)`` originals, text already rendered.
        guard_state / previous_summary: the compressor state after this compaction.
        rotate: end the session and put the result into a new child session instead.
    """

    generation: int
    watermark: int
    messages: tuple[Message, ...]
    archive: tuple[tuple[str, str, str, Message], ...]
    guard_state: str | None
    previous_summary: str | None
    rotate: bool = False


@dataclass(frozen=True)
class CommitOutcome:
    """``committed`` is False when another compaction won (generation changed)."""

    committed: bool
    session_id: str
    generation: int


@dataclass(frozen=True)
class CompactionRecord:
    """What one committed in-place compaction changed, kept so it can be shown and undone.

    ``generation`` is the session's generation the commit produced; ``replaced`` the
    ``seq`` of every row it archived (the history it replaced, oldest first);
    ``inserted`` the ``seq`` of the rows it wrote; ``handles`` its archive entries;
    ``guard_state`` / ``previous_summary`` the compressor state from *before* it.
    """

    session_id: str
    generation: int
    replaced: tuple[int, ...]
    inserted: tuple[int, ...]
    handles: tuple[str, ...]
    guard_state: str | None
    previous_summary: str | None
    created_at: float
    undone_at: float | None = None


@dataclass(frozen=True)
class UndoOutcome:
    """``undone``: the compaction of ``generation`` was taken back in ``session_id``.

    For a session a rotation started (nothing in place to undo), ``undone`` is False and
    ``session_id`` is the parent, which still holds the history from before the rotation.
    """

    undone: bool
    session_id: str
    generation: int
    restored: int = 0
    """Rows active again."""


def undo_record(records: Sequence[CompactionRecord]) -> CompactionRecord | None:
    """The newest compaction not undone yet (the one ``undo`` takes back)."""
    live = [r for r in records if r.undone_at is None]
    return max(live, key=lambda r: r.generation) if live else None


def nothing_to_undo(record: SessionRecord) -> UndoOutcome:
    """The outcome when no in-place compaction is left; raises when there is no parent."""
    if record.parent_id is None:
        raise StoreError(
            f"session {record.id!r} has no compaction to undo; "
            "`windowkeeper sessions show` lists its compactions"
        )
    return UndoOutcome(False, record.parent_id, record.generation)
