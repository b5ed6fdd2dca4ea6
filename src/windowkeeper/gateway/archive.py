"""A branch's recall archive without a durable store, filled when it is first read.

A compaction archives the originals it replaced; recall reads them back by handle or by
search, which needs each original's text rendered (a tool output with the call that made
it, found among the compaction's input messages). Most archived originals are never
recalled, so a compaction only notes what it archived; the texts are rendered and stored
when recall first reads the archive, in the order the compactions came, so every read
sees exactly what an archive filled at once would hold.

What must hold: nothing is read from :attr:`MemoryArchive.store` without :meth:`flush`
first (:class:`ArchiveRecall` does it); the noted inputs are the compactions' own
lists, never edited (design §1), so rendering them later renders the same text.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.messages import Message
from ..core.report import ArchivedItem
from ..store import Compaction, MemoryStore, RecallTool
from ..store.session import archive_records

__all__ = ["ArchiveRecall", "MemoryArchive"]

Noted = Sequence[tuple[Sequence[Message], Sequence[ArchivedItem]]]
"""One request's compactions with archived originals: (inputs, what each archived)."""


class MemoryArchive:
    """The archived originals of a branch's compactions, kept in a private memory store
    (one session) once read; a fork that adopts the branch shares it."""

    def __init__(self) -> None:
        # The originals are the branch's own messages, never edited (design §1): kept as
        # they are, not copied on every compaction (recall reads return copies).
        self.store = MemoryStore(copy_archived=False)
        self.session_id = self.store.create_session(title="recall").id
        self._noted: list[Noted] = []

    def note(self, compactions: Noted) -> None:
        """Keep one request's archived originals (rendered at the next :meth:`flush`)."""
        self._noted.append(compactions)

    def flush(self) -> None:
        """Store every noted original: one commit per request, as they were noted."""
        noted, self._noted = self._noted, []
        for compactions in noted:
            records = tuple(
                entry
                for inputs, archived in compactions
                for entry in archive_records(inputs, archived)
            )
            record = self.store.list_sessions(limit=1)[0]
            self.store.commit_compaction(
                record.id,
                Compaction(
                    generation=record.generation,
                    watermark=0,
                    messages=(),
                    archive=records,
                    guard_state=None,
                    previous_summary=None,
                ),
            )


class ArchiveRecall(RecallTool):
    """The recall tool over a :class:`MemoryArchive`: each read stores what was noted."""

    def __init__(self, archive: MemoryArchive) -> None:
        super().__init__(archive.store, archive.session_id)
        self.archive = archive

    def by_handle(self, handle: str, offset: int = 0, *, reveal: bool = False) -> str:
        self.archive.flush()
        return super().by_handle(handle, offset, reveal=reveal)

    def search(self, query: str, limit: int, *, reveal: bool = False) -> str:
        self.archive.flush()
        return super().search(query, limit, reveal=reveal)
