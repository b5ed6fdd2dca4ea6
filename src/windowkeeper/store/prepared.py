"""Compactions prepared in the background, kept with their session (design §4, §7).

A process that prepares a session's compaction off the request path stores it here, so
another process serving the same session (a second gateway, a restarted one) can apply
it instead of summarizing the same turns again. The rules are the compression lease's:

* only the holder of the session's lease may store one (:meth:`put_prepared` checks the
  lease in the write's own transaction), so two processes never prepare and publish the
  same session's compaction at once;
* it is stored against the session's ``generation``; a commit or an undo moves the
  generation on, and a compaction prepared against an older one is never handed out;
* applying or discarding it is settled once (:meth:`settle_prepared` is a
  compare-and-set), whoever does it.

One row per session: a newer preparation replaces the older. The body is the engine's
JSON (:meth:`~windowkeeper.engine.prepared.PreparedCompaction.to_json`); the store
never reads it. The contract is here once; the backends implement it.
"""

from __future__ import annotations

import abc
import enum
import threading
from dataclasses import dataclass, replace

from .base import Clock, Lease, SessionRecord

__all__ = ("PreparedCompactions", "PreparedMemory", "PreparedRecord", "PreparedState")


class PreparedState(enum.StrEnum):
    READY = "ready"
    APPLIED = "applied"
    DISCARDED = "discarded"


@dataclass(frozen=True)
class PreparedRecord:
    """A session's prepared compaction as stored."""

    session_id: str
    generation: int
    """The session generation it was prepared against."""
    holder: str
    """The lease holder that prepared it."""
    body: str
    created_at: float
    state: PreparedState = PreparedState.READY
    reason: str | None = None
    """Why it was discarded (a ``DiscardReason`` value)."""
    settled_at: float | None = None


class PreparedCompactions(abc.ABC):
    """The prepared-compaction part of a store (memory, SQLite and PostgreSQL)."""

    __slots__ = ()

    @abc.abstractmethod
    def put_prepared(self, session_id: str, *, generation: int, holder: str, body: str) -> bool:
        """Store a compaction prepared against ``generation``, replacing the session's
        previous one. Nothing is stored (False) unless ``holder`` holds the session's
        lease, unexpired, and ``generation`` is still the session's."""

    @abc.abstractmethod
    def prepared(self, session_id: str) -> PreparedRecord | None:
        """The session's newest prepared compaction, whatever its state; ``None``."""

    @abc.abstractmethod
    def settle_prepared(
        self, session_id: str, generation: int, *, applied: bool, reason: str | None = None
    ) -> bool:
        """Mark the session's ready compaction of ``generation`` applied (or discarded,
        with ``reason``); True only for the call that changed it."""


def may_put(lease: Lease | None, holder: str, now: float, record: SessionRecord) -> bool:
    """The rule every backend applies before storing (see the module docstring)."""
    held = lease is not None and lease.holder == holder and lease.expires_at > now
    return held and record.ended_at is None


class PreparedMemory(PreparedCompactions):
    """The contract over a memory store's leases, records and lock."""

    _lock: threading.RLock
    _clock: Clock
    _leases: dict[str, Lease]

    @abc.abstractmethod
    def get_session(self, session_id: str) -> SessionRecord: ...

    def _prepared_rows(self) -> dict[str, PreparedRecord]:
        rows: dict[str, PreparedRecord] | None = getattr(self, "_prepared_by_session", None)
        if rows is None:
            rows = {}
            self._prepared_by_session = rows
        return rows

    def put_prepared(self, session_id: str, *, generation: int, holder: str, body: str) -> bool:
        with self._lock:
            record = self.get_session(session_id)
            now = self._clock()
            if record.generation != generation:
                return False
            if not may_put(self._leases.get(session_id), holder, now, record):
                return False
            self._prepared_rows()[session_id] = PreparedRecord(
                session_id, generation, holder, body, now
            )
            return True

    def prepared(self, session_id: str) -> PreparedRecord | None:
        with self._lock:
            self.get_session(session_id)
            return self._prepared_rows().get(session_id)

    def settle_prepared(
        self, session_id: str, generation: int, *, applied: bool, reason: str | None = None
    ) -> bool:
        with self._lock:
            self.get_session(session_id)
            rows = self._prepared_rows()
            row = rows.get(session_id)
            if row is None or row.generation != generation or row.state != PreparedState.READY:
                return False
            state = PreparedState.APPLIED if applied else PreparedState.DISCARDED
            rows[session_id] = replace(row, state=state, reason=reason, settled_at=self._clock())
            return True
