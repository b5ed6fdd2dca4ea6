"""Keyed sessions and positional appends in memory (:mod:`.keyed` has the contract).

The memory store's own rows stay as they are; the lookup keys, windows and the digest of
each stored client position live beside them, under the store's lock.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.errors import StoreError
from ..core.messages import Message
from .base import SessionRecord, Snapshot
from .keyed import AppendOutcome, KeyedRecord, KeyedSessions, check_append

__all__ = ("KeyedMemory",)


@dataclass
class _Keyed:
    key: str = ""
    window: int | None = None
    digests: list[str] = field(default_factory=list)


class KeyedMemory(KeyedSessions):
    """The keyed-session contract over a memory store's public methods and its lock."""

    _lock: threading.RLock

    @abc.abstractmethod
    def create_session(
        self, messages: Sequence[Message] = (), *, parent_id: str | None = None, title: str = ""
    ) -> SessionRecord: ...

    @abc.abstractmethod
    def get_session(self, session_id: str) -> SessionRecord: ...

    @abc.abstractmethod
    def list_sessions(self, *, limit: int = 100) -> list[SessionRecord]: ...

    @abc.abstractmethod
    def append_messages(self, session_id: str, messages: Sequence[Message]) -> int: ...

    @abc.abstractmethod
    def load(self, session_id: str, *, include_archived: bool = False) -> Snapshot: ...

    def _keyed_state(self) -> dict[str, _Keyed]:
        state: dict[str, _Keyed] | None = getattr(self, "_keyed_sessions", None)
        if state is None:
            state = {}
            self._keyed_sessions = state
        return state

    def _record(self, record: SessionRecord) -> KeyedRecord:
        entry = self._keyed_state().get(record.id) or _Keyed()
        return KeyedRecord(record, entry.key, entry.window, len(entry.digests))

    def _entry(self, session_id: str) -> _Keyed:
        self.get_session(session_id)  # UnknownSessionError for an unknown id
        return self._keyed_state().setdefault(session_id, _Keyed())

    def open_keyed(self, key: str, *, title: str = "") -> KeyedRecord:
        with self._lock:
            found = self.find_keyed(key)
            if found is not None:
                return found
            record = self.create_session(title=title)
            self._entry(record.id).key = key
            return self._record(record)

    def find_keyed(self, key: str) -> KeyedRecord | None:
        with self._lock:
            for session_id, entry in self._keyed_state().items():
                if entry.key == key:
                    record = self.get_session(session_id)
                    if record.ended_at is None:
                        return self._record(record)
            return None

    def list_keyed(self, prefix: str, *, limit: int = 100) -> list[KeyedRecord]:
        with self._lock:
            found = [
                self._record(self.get_session(sid))
                for sid, entry in self._keyed_state().items()
                if entry.key and entry.key.startswith(prefix)
            ]
        live = [k for k in found if k.record.ended_at is None]
        live.sort(key=lambda k: (k.record.updated_at, k.record.created_at), reverse=True)
        return live[:limit]

    def append_at(
        self, session_id: str, start: int, messages: Sequence[Message], digests: Sequence[str]
    ) -> AppendOutcome:
        check_append(start, messages, digests)
        with self._lock:
            entry = self._entry(session_id)
            stored = len(entry.digests)
            if start > stored:
                raise StoreError(f"append at position {start} leaves a gap after {stored}")
            end = start + len(messages)
            for position in range(start, min(end, stored)):
                if entry.digests[position] != digests[position - start]:
                    return AppendOutcome(stored, None, position)
            if end > stored:
                self.append_messages(session_id, messages[stored - start :])
                entry.digests.extend(digests[stored - start :])
            return AppendOutcome(len(entry.digests), self._seq_of(session_id, end - 1))

    def _seq_of(self, session_id: str, position: int) -> int | None:
        """Append rows keep their relative order through compactions, so the n-th one in
        ``seq`` order is client position n."""
        if position < 0:
            return None
        rows = [
            r for r in self.load(session_id, include_archived=True).rows if r.origin == "append"
        ]
        return rows[position].seq if position < len(rows) else None

    def client_digests(self, session_id: str, start: int = 0, end: int | None = None) -> list[str]:
        with self._lock:
            digests = self._entry(session_id).digests
            return list(digests[start:end])

    def set_window(self, session_id: str, window: int | None) -> None:
        with self._lock:
            self._entry(session_id).window = window
