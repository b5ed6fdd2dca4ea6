"""Compacting a stored session: lease, compress, commit against the watermark.

The flow of :func:`compact_session`:

1. Read a snapshot (active rows, generation, watermark); this is the compaction's input.
2. Take the session's compression lease. Losing it returns the input unchanged with a
   ``skipped: concurrent compaction`` result (not a failure: no strike, no cooldown). If
   the lock subsystem itself fails, proceed without it and log one warning (fail-open).
3. Load the session's guard state and previous summary into the compressor, compress.
4. Commit in one transaction against the snapshot's generation and watermark. A commit
   that finds a newer generation (someone else committed meanwhile, e.g. when the lock
   failed open or a lease expired) changes nothing and also reports the skip, so at most
   one compaction per generation ever lands: the lease saves work, the generation check
   guarantees correctness.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from ..core.errors import StoreError
from ..core.messages import Message, call_id, tool_calls
from ..core.report import ArchivedItem, CompressionReport, CompressionResult, Outcome, Reason
from ..core.tokens import estimate_messages_tokens
from ..engine.compressor import ContextCompressor
from ..engine.guard import GuardState
from .archivetext import render_archived
from .base import (
    LOCK_TTL,
    ArchiveEntry,
    Compaction,
    SessionRecord,
    SessionStore,
    Snapshot,
)
from .damage import decode_guard
from .lease import LEASE_HEARTBEAT, Heartbeat

__all__ = (
    "CONCURRENT_DETAIL",
    "StoredCompaction",
    "archive_records",
    "compact_session",
    "compress_stored",
    "find_archived",
    "lineage",
    "new_holder",
    "resolve_handle",
    "restore_state",
    "save_state",
)

log = logging.getLogger("windowkeeper.store")

CONCURRENT_DETAIL = "compression skipped: another compaction of this session is running"

# Stores whose lock subsystem already failed once: warn once per store, then stay quiet.
_lock_warned: weakref.WeakSet[SessionStore] = weakref.WeakSet()


@dataclass(frozen=True)
class StoredCompaction:
    """The compaction's result and the session now holding it (a child after rotation)."""

    result: CompressionResult
    session_id: str


def new_holder() -> str:
    """A lease holder id that names the process (for operators) and is unique."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def restore_state(compressor: ContextCompressor, record: SessionRecord) -> None:
    """Load the session's persisted guard state and previous summary into ``compressor``.

    A session without stored state starts fresh, so one compressor can serve sessions
    one after another without leaking breakers between them.
    """
    compressor.guard = _guard_state(record)
    compressor.previous_summary = record.previous_summary


def _guard_state(record: SessionRecord) -> GuardState:
    """The session's stored guard state; a damaged one is replaced by a fresh state with
    one warning naming the session (its cooldowns and counters are lost, nothing else)."""
    if not record.guard_state:
        return GuardState()
    state, problem = decode_guard(record.guard_state)
    if problem is not None:
        log.warning(
            "session %r: the stored guard state is damaged (%s); starting from a fresh one "
            "(cooldowns and the compaction count are reset)", record.id, problem,
        )  # fmt: skip
    return state


def save_state(store: SessionStore, session_id: str, compressor: ContextCompressor) -> None:
    """Persist the compressor's guard state and previous summary (call after usage updates)."""
    store.save_state(
        session_id,
        guard_state=compressor.guard.to_json(),
        previous_summary=compressor.previous_summary,
    )


def archive_records(
    messages: Sequence[Message], archived: Sequence[ArchivedItem]
) -> tuple[tuple[str, str, str, Message], ...]:
    """``(handle, kind, text, message)`` for every archived original, text rendered.

    A pruned tool output is rendered with the call that produced it, found by its
    ``tool_call_id`` among the compaction's input messages.
    """
    calls: dict[str, Mapping[str, Any]] = {
        call_id(c): c for m in messages for c in tool_calls(m) if call_id(c)
    }
    records = []
    for item in archived:
        call = calls.get(str(item.message.get("tool_call_id", "")))
        text = render_archived(item.kind, item.message, call)
        records.append((item.handle, item.kind, text, item.message))
    return tuple(records)


def skipped_result(messages: list[Message], detail: str = CONCURRENT_DETAIL) -> CompressionResult:
    tokens = estimate_messages_tokens(messages)
    report = CompressionReport(
        Outcome.SKIPPED, Reason.CONCURRENT_COMPACTION, detail=detail,
        before_tokens=tokens, after_tokens=tokens,
        before_messages=len(messages), after_messages=len(messages),
    )  # fmt: skip
    return CompressionResult(messages, report)


def _acquire(store: SessionStore, session_id: str, holder: str, ttl: float) -> bool | None:
    """True/False from the lease; None when the lock subsystem failed (proceed: fail-open)."""
    try:
        return store.acquire_lock(session_id, holder, ttl=ttl)
    except StoreError as exc:
        if store not in _lock_warned:
            _lock_warned.add(store)
            log.warning("compression lock unavailable, compacting without it: %s", exc)
        return None


def _busy(store: SessionStore, session_id: str) -> str:
    """The skip's detail, naming the live holder and how long it has held the lease."""
    try:
        lease = store.lease(session_id)
    except StoreError:
        lease = None
    return f"{CONCURRENT_DETAIL} ({lease.describe()})" if lease else CONCURRENT_DETAIL


def _release(store: SessionStore, session_id: str, holder: str) -> None:
    try:
        store.release_lock(session_id, holder)
    except StoreError as exc:
        # The lease expires on its own after its TTL; nothing else to do.
        log.debug("could not release the compression lock: %s", exc)


def compact_session(
    store: SessionStore,
    session_id: str,
    compressor: ContextCompressor,
    *,
    force: bool = False,
    focus_topic: str | None = None,
    rotate: bool = False,
    holder: str | None = None,
    ttl: float = LOCK_TTL,
    snapshot: Snapshot | None = None,
    heartbeat: float = LEASE_HEARTBEAT,
) -> StoredCompaction:
    """Compact the stored session under its lease; see the module docstring.

    ``snapshot`` is the input when the caller already read the session (it must come
    from ``store.load(session_id)``); otherwise the session is read here. While the
    compaction runs, a thread renews the lease's heartbeat every ``heartbeat`` seconds,
    so a live holder keeps its lease and a killed one loses it within two intervals.
    """
    if snapshot is None:
        snapshot = store.load(session_id)
    if snapshot.session.ended_at is not None:
        raise StoreError(
            f"session {session_id!r} has ended ({snapshot.session.end_reason}); "
            "compact its newest child instead"
        )
    holder = holder or new_holder()
    locked = _acquire(store, session_id, holder, ttl)
    if locked is False:
        return StoredCompaction(skipped_result(snapshot.messages, _busy(store, session_id)),
                                session_id)  # fmt: skip
    try:
        if locked and store.get_session(session_id).generation != snapshot.session.generation:
            # Someone committed between our read and our lease: our input is stale.
            return StoredCompaction(skipped_result(snapshot.messages), session_id)

        def renew() -> None:
            if locked:
                _acquire(store, session_id, holder, ttl)

        beating = Heartbeat(store, session_id, holder, heartbeat) if locked else nullcontext()
        with beating:
            return _compact(
                store, snapshot, compressor, renew, force=force, focus_topic=focus_topic,
                rotate=rotate,
            )  # fmt: skip
    finally:
        if locked:
            _release(store, session_id, holder)


def _compact(
    store: SessionStore,
    snapshot: Snapshot,
    compressor: ContextCompressor,
    renew: Callable[[], None],
    *,
    force: bool,
    focus_topic: str | None,
    rotate: bool,
) -> StoredCompaction:
    """Compress the snapshot with the session's state and commit against its generation."""
    session_id, messages = snapshot.session.id, snapshot.messages
    restore_state(compressor, snapshot.session)
    before = (compressor.guard, compressor.previous_summary)
    result = compressor.compress(messages, force=force, focus_topic=focus_topic)
    if not result.report.compressed:
        # Cooldowns and backoffs armed by this attempt must survive a restart.
        save_state(store, session_id, compressor)
        return StoredCompaction(result, session_id)
    renew()  # the summarizer may have taken a while; extend the lease before committing
    compaction = Compaction(
        generation=snapshot.session.generation, watermark=snapshot.watermark,
        messages=tuple(result.messages), archive=archive_records(messages, result.archived),
        guard_state=compressor.guard.to_json(), previous_summary=compressor.previous_summary,
        rotate=rotate,
    )  # fmt: skip
    outcome = store.commit_compaction(session_id, compaction)
    if not outcome.committed:
        compressor.guard, compressor.previous_summary = before
        return StoredCompaction(skipped_result(messages), session_id)
    return StoredCompaction(result, outcome.session_id)


def compress_stored(
    store: SessionStore,
    session_id: str,
    compressor: ContextCompressor,
    *,
    force: bool = False,
    focus_topic: str | None = None,
    rotate: bool = False,
) -> CompressionResult:
    """:func:`compact_session` for callers that only need the result."""
    return compact_session(
        store, session_id, compressor, force=force, focus_topic=focus_topic, rotate=rotate
    ).result


def lineage(store: SessionStore, session_id: str) -> list[SessionRecord]:
    """The session and its ancestors (rotation parents), newest first."""
    chain = [store.get_session(session_id)]
    seen = {session_id}
    while chain[-1].parent_id is not None and chain[-1].parent_id not in seen:
        seen.add(chain[-1].parent_id)
        chain.append(store.get_session(chain[-1].parent_id))
    return chain


def resolve_handle(store: SessionStore, session_id: str, handle: str) -> ArchiveEntry | None:
    """The archived original behind ``handle`` in the session or, after rotation, an ancestor."""
    for record in lineage(store, session_id):
        found = store.archived(record.id, [handle])
        if found:
            return found[0]
    return None


def find_archived(
    store: SessionStore, handle: str, session_id: str | None = None
) -> ArchiveEntry | None:
    """The archived original behind ``handle``: in the session's lineage when a session is
    named, else in any session of the store (newest first; handles are digests, so one
    handle names one original)."""
    if session_id is not None:
        return resolve_handle(store, session_id, handle)
    for record in store.list_sessions(limit=_ALL_SESSIONS):
        found = store.archived(record.id, [handle])
        if found:
            return found[0]
    return None


_ALL_SESSIONS = 1_000_000
