"""In-process session store: dicts behind one lock (tests, demos, single-process agents)."""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.errors import StoreError
from ..core.messages import Message
from .archivetext import query_terms, snippet, term_score
from .base import (
    END_REASON_COMPRESSION,
    LOCK_TTL,
    ArchiveEntry,
    Clock,
    CommitOutcome,
    Compaction,
    CompactionRecord,
    Lease,
    Migration,
    SearchHit,
    SessionRecord,
    SessionStore,
    Snapshot,
    StoredRow,
    UndoOutcome,
    UnknownSessionError,
)
from .damage import held_after_undo
from .lease import lease_is_dead
from .memkeyed import KeyedMemory
from .prepared import PreparedMemory
from .records import nothing_to_undo, undo_record

# Nothing to migrate in memory; the list exists so every backend reports the same shape.
MIGRATIONS: tuple[Migration, ...] = (Migration("m001_initial", ()),)


def _copied(value: Any) -> Any:
    """A deep copy of a message: JSON values (dicts, lists, scalars) copied directly, a few
    times faster than ``copy.deepcopy`` (the gateway archives every compaction's originals
    here); any other value, or one that holds itself, is deep-copied as before."""
    try:
        return _json_copy(value)
    except RecursionError:  # a value that holds itself: deepcopy keeps the cycle
        return copy.deepcopy(value)


def _as_given(value: Any) -> Any:
    return value


def _json_copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


@dataclass
class _Session:
    record: SessionRecord
    rows: list[StoredRow] = field(default_factory=list)
    archive: dict[str, ArchiveEntry] = field(default_factory=dict)
    compactions: list[CompactionRecord] = field(default_factory=list)


class MemoryStore(SessionStore, KeyedMemory, PreparedMemory):
    """Everything lives in this object; deep copies keep callers from mutating stored rows.

    ``copy_archived=False`` keeps archived originals as they are given, for a writer that
    never edits a message it handed over (the gateway: its messages are replaced, never
    edited, and shared with later requests already); what is read is still a copy.
    """

    def __init__(self, *, clock: Clock = time.time, copy_archived: bool = True) -> None:
        self._clock = clock
        self._copy_archived = copy_archived
        self._lock = threading.RLock()
        self._sessions: dict[str, _Session] = {}
        self._leases: dict[str, Lease] = {}
        self.applied_migrations = [m.name for m in MIGRATIONS]

    def _get(self, session_id: str) -> _Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise UnknownSessionError(session_id) from None

    def _touch(self, entry: _Session, **changes: Any) -> None:
        active = sum(1 for row in entry.rows if row.active)
        entry.record = replace(
            entry.record, updated_at=self._clock(), active_messages=active, **changes
        )

    def create_session(
        self, messages: Sequence[Message] = (), *, parent_id: str | None = None, title: str = ""
    ) -> SessionRecord:
        with self._lock:
            if parent_id is not None:
                self._get(parent_id)
            now = self._clock()
            sid = uuid.uuid4().hex
            record = SessionRecord(
                sid, parent_id, title, now, now, None, None, 0, 0, 0, 0, None, None
            )
            self._sessions[sid] = _Session(record)
            self._append(self._sessions[sid], messages, "append")
            return self._sessions[sid].record

    def _append(self, entry: _Session, messages: Sequence[Message], origin: str) -> None:
        seq = entry.record.last_seq
        for message in messages:
            seq += 1
            entry.rows.append(StoredRow(seq, _copied(message), True, origin))
        self._touch(entry, last_seq=seq)

    def get_session(self, session_id: str) -> SessionRecord:
        with self._lock:
            return self._get(session_id).record

    def list_sessions(self, *, limit: int = 100) -> list[SessionRecord]:
        with self._lock:
            records = [s.record for s in self._sessions.values()]
        records.sort(key=lambda r: (r.updated_at, r.created_at), reverse=True)
        return records[:limit]

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> int:
        with self._lock:
            entry = self._get(session_id)
            if entry.record.ended_at is not None:
                raise StoreError(f"session {session_id!r} has ended; append to its child")
            self._append(entry, messages, "append")
            return entry.record.last_seq

    def load(self, session_id: str, *, include_archived: bool = False) -> Snapshot:
        with self._lock:
            entry = self._get(session_id)
            rows = [r for r in entry.rows if include_archived or r.active]
            rows.sort(key=lambda r: r.seq)
            return Snapshot(entry.record, tuple(copy.deepcopy(rows)))

    def commit_compaction(self, session_id: str, compaction: Compaction) -> CommitOutcome:
        with self._lock:
            entry = self._get(session_id)
            record = entry.record
            if record.generation != compaction.generation or record.ended_at is not None:
                return CommitOutcome(False, session_id, record.generation)
            newer = [r for r in entry.rows if r.active and r.seq > compaction.watermark]
            compacted = [_copied(m) for m in compaction.messages]
            if compaction.rotate:
                return self._rotate(entry, compaction, compacted + [r.message for r in newer])
            # Rows newer than the watermark are moved (not copied) behind the compacted
            # rows, so every appended row still exists exactly once.
            moved = {r.seq for r in newer}
            replaced = tuple(r.seq for r in entry.rows if r.active and r.seq not in moved)
            entry.rows = [
                replace(r, active=False) if r.active else r
                for r in entry.rows
                if r.seq not in moved
            ]
            first = entry.record.last_seq + 1
            self._append(entry, compacted, "compaction")
            seq = entry.record.last_seq
            entry.compactions.append(CompactionRecord(
                session_id, record.generation + 1, replaced, tuple(range(first, seq + 1)),
                tuple(a[0] for a in compaction.archive), record.guard_state,
                record.previous_summary, self._clock(),
            ))  # fmt: skip
            for row in newer:
                seq += 1
                entry.rows.append(replace(row, seq=seq))
            self._store_archive(entry, compaction)
            self._touch(
                entry, last_seq=seq, generation=record.generation + 1,
                compactions=record.compactions + 1, guard_state=compaction.guard_state,
                previous_summary=compaction.previous_summary,
            )  # fmt: skip
            return CommitOutcome(True, session_id, entry.record.generation)

    def _store_archive(self, entry: _Session, compaction: Compaction) -> None:
        now = self._clock()
        copied = _copied if self._copy_archived else _as_given
        for handle, kind, text, message in compaction.archive:
            if handle not in entry.archive:
                entry.archive[handle] = ArchiveEntry(
                    entry.record.id, handle, kind, text, copied(message), now
                )

    def _rotate(
        self, entry: _Session, compaction: Compaction, messages: list[Message]
    ) -> CommitOutcome:
        self._touch(entry, ended_at=self._clock(), end_reason=END_REASON_COMPRESSION)
        child = self.create_session(parent_id=entry.record.id, title=entry.record.title)
        child_entry = self._sessions[child.id]
        self._append(child_entry, messages, "compaction")
        self._store_archive(child_entry, compaction)
        self._touch(
            child_entry, guard_state=compaction.guard_state,
            previous_summary=compaction.previous_summary,
        )  # fmt: skip
        self._touch(entry, generation=entry.record.generation + 1)
        return CommitOutcome(True, child.id, child_entry.record.generation)

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        with self._lock:
            return list(self._get(session_id).compactions)

    def undo(self, session_id: str) -> UndoOutcome:
        with self._lock:
            entry = self._get(session_id)
            record = entry.record
            if record.ended_at is not None:
                raise StoreError(f"session {session_id!r} has ended; undo in its child")
            target = undo_record(entry.compactions)
            if target is None:
                return nothing_to_undo(record)
            back, out = set(target.replaced), set(target.inserted)
            entry.rows = [
                replace(r, active=True) if r.seq in back
                else replace(r, active=False) if r.seq in out else r
                for r in entry.rows
            ]  # fmt: skip
            entry.compactions = [
                replace(c, undone_at=self._clock()) if c is target else c for c in entry.compactions
            ]
            self._touch(
                entry, generation=record.generation + 1, compactions=record.compactions - 1,
                guard_state=held_after_undo(target.guard_state),
                previous_summary=target.previous_summary,
            )  # fmt: skip
            return UndoOutcome(True, session_id, target.generation, len(back))

    def save_state(
        self, session_id: str, *, guard_state: str | None, previous_summary: str | None
    ) -> None:
        with self._lock:
            entry = self._get(session_id)
            self._touch(entry, guard_state=guard_state, previous_summary=previous_summary)

    def archived(self, session_id: str, handles: Sequence[str] | None = None) -> list[ArchiveEntry]:
        with self._lock:
            archive = self._get(session_id).archive
            if handles is None:
                found = list(archive.values())
            else:
                found = [archive[h] for h in dict.fromkeys(handles) if h in archive]
            found.sort(key=lambda e: e.created_at)
            return copy.deepcopy(found)

    def search_archive(
        self, query: str, *, session_id: str | None = None, limit: int = 10, reveal: bool = False
    ) -> list[SearchHit]:
        terms = query_terms(query)
        with self._lock:
            if session_id is not None:
                self._get(session_id)
            entries = [
                e
                for s in self._sessions.values()
                if session_id is None or s.record.id == session_id
                for e in s.archive.values()
            ]
        scored = [(term_score(e.text, terms), e) for e in entries]
        hits = [
            SearchHit(e.session_id, e.handle, e.kind, snippet(e.text, terms, reveal=reveal), score)
            for score, e in scored
            if score > 0
        ]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    def acquire_lock(self, session_id: str, holder: str, *, ttl: float = LOCK_TTL) -> bool:
        with self._lock:
            now = self._clock()
            current = self._leases.get(session_id)
            if current is not None and current.holder == holder:
                self._leases[session_id] = replace(current, expires_at=now + ttl, heartbeat_at=now)
                return True
            if current is None or lease_is_dead(current, now):
                self._leases[session_id] = Lease(holder, now + ttl, now, now)
                return True
            return False

    def heartbeat(self, session_id: str, holder: str, *, every: float) -> bool:
        with self._lock:
            current = self._leases.get(session_id)
            if current is None or current.holder != holder:
                return False
            self._leases[session_id] = replace(
                current, heartbeat_at=self._clock(), heartbeat_every=every
            )
            return True

    def lease(self, session_id: str) -> Lease | None:
        with self._lock:
            current = self._leases.get(session_id)
            return None if current is None else replace(current, read_at=self._clock())

    def release_lock(self, session_id: str, holder: str) -> bool:
        with self._lock:
            current = self._leases.get(session_id)
            if current is None or current.holder != holder:
                return False
            del self._leases[session_id]
            return True
