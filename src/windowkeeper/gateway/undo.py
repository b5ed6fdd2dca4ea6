"""``POST /v1/windowkeeper/sessions/{id}/undo``: take back a session's newest compaction.

The newest compaction of the caller's session ``id`` (of any protocol, any branch) is
undone and the gateway's memory made to agree, so the client's next request goes
upstream with the history from before it. With a store, the store's undo does it
(``SessionStore.undo``: rows, guard state, previous handoff, a new generation), and every
gateway on that store reloads the branch on its next request, as after any change another
gateway makes; this gateway reloads its copy at once. Without a store, each branch keeps
the state from before its newest compaction (:class:`~.sessions.Before`), so one
compaction can be taken back.

Either way the guard state restored holds automatic compaction (``GuardState.undone``)
until the history no longer fits: its estimate reaches the window, the upstream refuses
it as too long, or it reaches the hard message limit. Else the next request, still over
the threshold, would compact the same history again.

What must hold: only the caller's own sessions are found (their keys carry its scope); a
branch changes only under its session's lock; the store is used from a worker thread;
every outcome is a JSON answer (200, 404 for no such session, 409 for nothing to undo).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..core.errors import StoreError
from ..engine.guard import on_undo
from ..store import KeyedRecord
from ..store.records import undo_record
from .auth import Caller
from .protocols import CHAT
from .sessions import Branch, GatewaySession, public_id

if TYPE_CHECKING:
    from .core import GatewayCore
    from .persist import SessionPersistence

PROTOCOLS = ("chat", "responses", "messages")
STORED_BRANCHES = 64
"""Stored branches of one session looked at for its newest compaction."""
HELD = "automatic compaction waits until the history no longer fits the window"


@dataclass(frozen=True)
class UndoAnswer:
    status: int
    body: dict[str, Any]


async def undo_session(gateway: GatewayCore, session_id: str, caller: Caller) -> UndoAnswer:
    """Undo the newest compaction of the caller's session ``session_id``."""
    keys = [f"{caller.scope}:{name}:{session_id}" for name in PROTOCOLS]
    if gateway.persistence is not None:
        return await _stored(gateway, gateway.persistence, keys, session_id)
    return await _in_memory(gateway, keys, session_id)


def _error(status: int, message: str, code: str) -> UndoAnswer:
    return UndoAnswer(status, CHAT.error_body(status, message, code))


def _unknown(session_id: str) -> UndoAnswer:
    return _error(404, f"no session {session_id!r}", "not_found")


def _nothing(session_id: str, why: str) -> UndoAnswer:
    return _error(409, f"session {session_id!r} has no compaction to undo{why}", "nothing_to_undo")


def _locked(session: GatewaySession | None) -> AbstractAsyncContextManager[Any]:
    return session.lock if session is not None else nullcontext()


# --- without a store ----------------------------------------------------------------------


async def _in_memory(gateway: GatewayCore, keys: list[str], session_id: str) -> UndoAnswer:
    sessions = [s for s in map(gateway.sessions.get, keys) if s is not None]
    if not sessions:
        return _unknown(session_id)
    held = [(b.before.at, s, b) for s in sessions for b in s.branches.values() if b.before]
    if not held:
        why = " (without a store the gateway keeps only the newest one; see --store)"
        return _nothing(session_id, why)
    _, session, branch = max(held, key=lambda item: item[0])
    async with session.lock:
        before = branch.before
        if before is None:  # another undo took it meanwhile
            return _nothing(session_id, "")
        restored = branch.prefix.covered - before.prefix.covered
        branch.prefix = before.prefix
        branch.compressor.guard = on_undo(before.guard)
        branch.compressor.previous_summary = before.previous_summary
        branch.before = None
        branch.compactions = max(0, branch.compactions - 1)
        _changed(session, branch)
    return _done(session, branch, restored, None)


def _changed(session: GatewaySession, branch: Branch) -> None:
    """The branch's prefix was replaced: requests prepared before must not install theirs."""
    branch.version += 1
    session.compactions = max(0, session.compactions - 1)


def _done(
    session: GatewaySession, branch: Branch, restored: int, generation: int | None
) -> UndoAnswer:
    return UndoAnswer(200, {
        "session": public_id(session.key), "protocol": session.protocol.name,
        "undone": True, "restored_messages": restored, "generation": generation,
        "store_session_id": branch.store_id, "compactions": branch.compactions,
        "covered_messages": branch.prefix.covered, "automatic_compaction": HELD,
    })  # fmt: skip


# --- with a store ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    key: str
    record: KeyedRecord
    at: float


def _newest(persistence: SessionPersistence, keys: list[str]) -> tuple[bool, _Target | None]:
    """Whether the store knows the session, and its branch with the newest compaction."""
    known, best = False, None
    for key in keys:
        for record in persistence.keyed.list_keyed(key + "/", limit=STORED_BRANCHES):
            known = True
            target = undo_record(persistence.store.compactions(record.id))
            if target is not None and (best is None or target.created_at > best.at):
                best = _Target(key, record, target.created_at)
    return known, best


def _reload(persistence: SessionPersistence, session: GatewaySession, branch: Branch) -> None:
    """The branch as the store holds it after the undo (prefix, guard state, counts)."""
    try:
        fresh = persistence.keyed.find_keyed(branch.key)
        if fresh is not None:
            persistence.restore(session, branch, fresh)
            return
    except StoreError:
        pass
    branch.generation = -1  # unreadable now: the branch's next request reloads it


async def _stored(
    gateway: GatewayCore, persistence: SessionPersistence, keys: list[str], session_id: str
) -> UndoAnswer:
    try:
        known, target = await anyio.to_thread.run_sync(_newest, persistence, keys)
    except StoreError as exc:
        return _error(503, f"could not read the store: {exc}", "store_unavailable")
    if target is None:
        if known or any(gateway.sessions.get(key) is not None for key in keys):
            return _nothing(session_id, "")
        return _unknown(session_id)
    session = gateway.sessions.get(target.key)
    async with _locked(session):
        try:
            outcome = await anyio.to_thread.run_sync(persistence.store.undo, target.record.id)
        except StoreError as exc:  # another gateway undid it meanwhile, or it ended
            return _error(409, f"session {session_id!r}: {exc}", "nothing_to_undo")
        branch = session.branches.get(target.record.key) if session is not None else None
        if session is not None and branch is not None:
            await anyio.to_thread.run_sync(_reload, persistence, session, branch)
            _changed(session, branch)
            return _done(session, branch, outcome.restored, outcome.generation)
    return UndoAnswer(200, {
        "session": session_id, "protocol": target.key.split(":", 2)[1], "undone": True,
        "restored_messages": outcome.restored, "generation": outcome.generation,
        "store_session_id": target.record.id, "compactions": target.record.record.compactions - 1,
        "covered_messages": None, "automatic_compaction": HELD,
    })  # fmt: skip
