"""The session store contract (design §7): one small ABC, frozen records, shared helpers.

Every backend (memory, SQLite, PostgreSQL) keeps the same model:

* A **session** has an id, an optional parent (rotation lineage), a ``generation`` that
  every committed compaction bumps, a ``last_seq`` high-water mark, and the compressor's
  persisted state (guard JSON and previous summary).
* A **row** is one message with a per-session ``seq`` (its position), an ``active`` flag
  and an ``origin`` (``"append"`` for messages written by the agent, ``"compaction"`` for
  rows a compaction inserted). Nothing is ever deleted: compaction only flips rows to
  archived, so every appended message exists exactly once, forever.
* An **archive entry** is an original that a compaction replaced (pruned tool output,
  shortened arguments, summarized message), keyed by its short handle and full-text
  searchable.
* A **lease** is the per-session compression lock: holder id + expiry, renewable and
  released only by its holder.

The contract is documented here once; backends do not repeat it. Its records are
defined in :mod:`.records` and its faults in :mod:`.faults`; both are re-exported here.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from ..core.errors import StoreError
from ..core.messages import (
    Message,
    to_json,
)
from .faults import (
    DAMAGE_ADVICE,
    Lease,
    StoreCheck,
    StoreDamageError,
    StoreMissingError,
    StoreOutdatedError,
)
from .records import (
    ArchiveEntry,
    CommitOutcome,
    Compaction,
    CompactionRecord,
    Migration,
    SearchHit,
    SessionRecord,
    Snapshot,
    StoredRow,
    UndoOutcome,
)

__all__ = (
    "DAMAGE_ADVICE",
    "ArchiveEntry",
    "Clock",
    "CommitOutcome",
    "Compaction",
    "CompactionRecord",
    "Lease",
    "Migration",
    "SearchHit",
    "SessionRecord",
    "SessionStore",
    "Snapshot",
    "StoreCheck",
    "StoreDamageError",
    "StoreMissingError",
    "StoreOutdatedError",
    "StoredRow",
    "UndoOutcome",
    "UnknownSessionError",
)

Clock = Callable[[], float]

LOCK_TTL = 300.0
"""Seconds a compression lease lasts unless renewed (design §7)."""

END_REASON_COMPRESSION = "compression"


class UnknownSessionError(StoreError):
    """No session has the given id."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"unknown session {session_id!r}")


class SessionStore(abc.ABC):
    """Durable sessions, compaction commits, the archive and the compression lease.

    Every method raises :class:`UnknownSessionError` for an unknown session id and
    :class:`~windowkeeper.core.errors.StoreError` for backend failures. Stores are context
    managers; :meth:`close` releases connections and is idempotent.
    """

    __slots__ = ()

    @abc.abstractmethod
    def create_session(
        self, messages: Sequence[Message] = (), *, parent_id: str | None = None, title: str = ""
    ) -> SessionRecord:
        """Start a session holding ``messages`` as its first active rows."""

    @abc.abstractmethod
    def get_session(self, session_id: str) -> SessionRecord:
        """The session's record (no messages)."""

    @abc.abstractmethod
    def list_sessions(self, *, limit: int = 100) -> list[SessionRecord]:
        """Sessions, most recently updated first."""

    @abc.abstractmethod
    def append_messages(self, session_id: str, messages: Sequence[Message]) -> int:
        """Append active rows after the current ones; returns the new ``last_seq``.

        Appending to an ended (rotated) session raises :class:`StoreError`.
        """

    @abc.abstractmethod
    def load(self, session_id: str, *, include_archived: bool = False) -> Snapshot:
        """Active rows (and archived ones when asked) in ``seq`` order, read consistently."""

    @abc.abstractmethod
    def commit_compaction(self, session_id: str, compaction: Compaction) -> CommitOutcome:
        """Atomically replace the active rows up to ``compaction.watermark``.

        In one transaction: if the session's generation is no longer
        ``compaction.generation`` (another compaction committed) or it has ended, nothing
        changes and ``committed`` is False. Otherwise the active rows with
        ``seq <= watermark`` become archived, the compacted messages become the new
        active rows, active rows appended after the watermark move behind them in their
        order, archive entries are inserted (an existing handle is kept), the state is
        saved and the generation is bumped. With ``rotate`` the session instead ends with
        reason ``"compression"`` and a child session (parent = this one) receives the
        compacted messages, the newer rows, the archive entries and the state.
        """

    @abc.abstractmethod
    def save_state(
        self, session_id: str, *, guard_state: str | None, previous_summary: str | None
    ) -> None:
        """Persist the compressor's guard state and previous summary for the session."""

    @abc.abstractmethod
    def archived(self, session_id: str, handles: Sequence[str] | None = None) -> list[ArchiveEntry]:
        """The session's archive entries with these handles (all when ``None``), oldest first.

        Unknown handles are skipped, so an empty list means none is archived here.
        """

    @abc.abstractmethod
    def search_archive(
        self, query: str, *, session_id: str | None = None, limit: int = 10, reveal: bool = False
    ) -> list[SearchHit]:
        """Archive entries containing every term of ``query``, best first.

        Snippets have secrets masked (:func:`~windowkeeper.summary.redact.redact`) unless
        ``reveal``; the archive itself keeps the originals.
        """

    @abc.abstractmethod
    def compactions(self, session_id: str) -> list[CompactionRecord]:
        """The session's committed in-place compactions, oldest first (undone ones too)."""

    @abc.abstractmethod
    def undo(self, session_id: str) -> UndoOutcome:
        """Take back the newest compaction not undone yet, in one transaction.

        The rows it archived are active again, the rows it wrote are archived, rows
        appended since stay after them in their order, the compressor state from before
        it is restored holding automatic compaction until the history no longer fits
        (``GuardState.undone``), ``compactions`` drops by one and the generation is bumped (a
        compaction prepared against the compacted history can no longer commit). A
        session a rotation started has nothing in place to undo: the outcome names its
        parent. :class:`StoreError` when the session has ended or has nothing to undo.
        """

    @abc.abstractmethod
    def acquire_lock(self, session_id: str, holder: str, *, ttl: float = LOCK_TTL) -> bool:
        """Take or renew the session's compression lease for ``ttl`` seconds.

        True when ``holder`` now holds it: it was free, expired, already ``holder``'s
        (renewal, which also counts as a heartbeat), or its holder is dead: a process
        gone on this host (see :func:`~windowkeeper.store.lease.holder_alive`), or a
        holder that promised heartbeats and missed two. The session need not exist.
        """

    def heartbeat(self, session_id: str, holder: str, *, every: float) -> bool:
        """Record a sign of life of ``holder``'s lease and promise the next within
        ``every`` seconds (two missed ones let another process take the lease over).

        True when ``holder`` still holds the lease. Backends without heartbeats: False.
        """
        return False

    def lease(self, session_id: str) -> Lease | None:
        """The session's lease as stored (possibly expired), or ``None``."""
        return None

    @abc.abstractmethod
    def release_lock(self, session_id: str, holder: str) -> bool:
        """Release the lease if ``holder`` holds it; True when it did."""

    def check(self, *, quick: bool = False) -> StoreCheck:
        """The backend's integrity check, then every stored value decoded (read-only);
        ``quick``: only the backend's cheap structural check.

        A backend without one reports its sessions as readable; SQL backends override it.
        """
        if quick:
            return StoreCheck(True, "nothing to check quickly")
        sessions = self.list_sessions(limit=1_000_000_000)
        rows = 0
        for record in sessions:
            rows += len(self.load(record.id, include_archived=True).rows)
        return StoreCheck(True, f"{len(sessions):,} sessions, {rows:,} rows readable",
                          len(sessions), rows)  # fmt: skip

    def close(self) -> None:  # noqa: B027 - stores without resources need no cleanup
        """Release connections; safe to call twice."""

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# --- helpers shared by every backend ----------------------------------------------------


def dump_message(message: Mapping[str, Any]) -> str:
    # Key order is kept, so an export reproduces the imported file byte for byte.
    return to_json(message)


def load_message(text: str, where: str = "a stored message") -> Message:
    """Decode one stored message body; :class:`StoreDamageError` naming ``where``
    (e.g. ``session 'ab12', row 7``) when it is not a JSON object."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = " ".join(str(exc).split())[:80]
        raise StoreDamageError(f"{where}: not valid JSON ({reason})") from None
    if not isinstance(value, dict):
        raise StoreDamageError(f"{where}: not a JSON object")
    return value
