"""Persisting gateway branches in a keyed store (design §7), so several gateways can share one.

Each branch is one keyed store session (lookup key = the branch key, scoped per client):

* every client message is appended once, **by position** with its content digest, so
  two gateways serving one session alternately never duplicate or lose a row;
* a compaction archives the covered rows up to the *position* it covers (not up to the
  newest row another gateway may just have appended) and inserts ``C``; it commits
  against the generation this gateway last saw, so at most one of two racing
  compactions lands and the other gateway reloads;
* the guard state, previous summary and a window learned from an overflow error are the
  session's own fields, so a restart neither re-seeds nor relearns.

Before using a branch it holds in memory, a gateway checks the store's generation and
position count (one indexed read) and reloads when another gateway moved on. Store
failures are logged and never fail a request that the upstream already answered.
"""

from __future__ import annotations

import logging
from typing import Any

from ..core.errors import StoreError
from ..core.messages import Message
from ..store import (
    Compaction,
    KeyedRecord,
    KeyedSessions,
    PreparedCompactions,
    SessionStore,
    restore_state,
)
from ..store.session import archive_records, new_holder
from .history import Seen, common_prefix
from .protocols import Parsed
from .sessions import Branch, GatewaySession, Prefix, Prepared, public_id
from .sharing import StoreSharing

log = logging.getLogger("windowkeeper.gateway")

TITLE_PREFIX = "windowkeeper-gateway:"
DISCOVER_LIMIT = 16


class SessionPersistence:
    """Blocking store access for the gateway: call it from a worker thread, under the
    session's lock."""

    def __init__(self, store: SessionStore) -> None:
        if not isinstance(store, KeyedSessions):
            raise StoreError(f"{type(store).__name__} cannot serve the gateway (no keyed sessions)")
        self.store = store
        self.keyed: KeyedSessions = store
        self.holder = new_holder()
        """This gateway's name as a lease holder (its background compactions)."""

    def share(self, branch: Branch, clients: int) -> None:
        """Let the branch's background compaction go through the store: its jobs run
        under the session's lease, so the session is stored from its first request on
        (``clients``: the request's client messages)."""
        store = self.store
        if not isinstance(store, PreparedCompactions):
            return
        if not branch.compressor.background_enabled():
            return
        if branch.manager.background.sharing is None:
            branch.manager.background.sharing = StoreSharing(store, branch, self.holder)
        if branch.store_id is None:
            try:
                self._open(branch, clients)
            except StoreError as exc:
                log.warning("session %s: could not open it in the store: %s", _name(branch), exc)

    # --- reading -------------------------------------------------------------------------

    def refresh(self, session: GatewaySession, branch: Branch) -> bool:
        """Reload ``branch`` when another gateway changed it in the store; True if it did."""
        try:
            record = self.keyed.find_keyed(branch.key)
            if record is None or _current(branch, record):
                return False
            self.restore(session, branch, record)
        except StoreError as exc:
            log.warning("session %s: could not read the store: %s", _name(branch), exc)
            return False
        return True

    def discover(self, session: GatewaySession, parsed: Parsed, history: Seen) -> None:
        """Load the stored branch of ``session`` that agrees longest with this request,
        when it agrees longer than every branch in memory."""
        try:
            records = self.keyed.list_keyed(session.key + "/", limit=DISCOVER_LIMIT)
        except StoreError as exc:
            log.warning(
                "session %s: could not list stored branches: %s", public_id(session.key), exc
            )
            return
        best: tuple[int, KeyedRecord] | None = None
        for record in records:
            known = session.branches.get(record.key)
            if known is not None and _current(known, record):
                continue
            agreed = self._agreement(record, history)
            if agreed and (best is None or agreed > best[0]):
                best = (agreed, record)
        if best is None:
            return
        _, record = best
        branch = session.branches.get(record.key) or Branch(
            record.key, session, session.default_window, parsed.model
        )
        try:
            self.restore(session, branch, record)
        except StoreError as exc:
            log.warning("session %s: could not restore: %s", public_id(session.key), exc)
            return
        session.add(branch)

    def _agreement(self, record: KeyedRecord, history: Seen) -> int:
        """How many leading client messages the stored branch shares with ``history``."""
        try:
            stored = self.keyed.client_digests(record.id)
        except StoreError:
            return 0
        n = min(len(stored), len(history.messages))
        return common_prefix(stored[:n], [history.digest(i) for i in range(n)])

    def restore(self, session: GatewaySession, branch: Branch, record: KeyedRecord) -> None:
        """Load a branch's client history, prefix, guard state and learned window."""
        if record.record.generation != branch.generation:
            # Compacted (or undone) elsewhere: a job of this gateway is for a history
            # that is gone; the store's prepared compaction, if any, is found at the
            # trigger.
            branch.manager.background.forget()
        snapshot = self.store.load(record.id, include_archived=True)
        rows = snapshot.rows
        client = [row.message for row in rows if row.origin == "append"]
        covered = sum(1 for row in rows if row.origin == "append" and not row.active)
        compacted = tuple(r.message for r in rows if r.origin == "compaction" and r.active)
        branch.prefix = Prefix(covered, compacted) if covered else Prefix()
        system, units, ends = session.protocol.units_of(client)
        branch.seen = Seen(system, units, client, ends, made=False)
        restore_state(branch.compressor, record.record)
        if record.window is not None and record.window != branch.compressor.context_length:
            branch.compressor.update_model(context_length=record.window)
        branch.store_id, branch.stored = record.id, record.positions
        branch.generation, branch.committed = record.record.generation, covered
        branch.saved_guard, branch.saved_window = record.record.guard_state, record.window
        branch.has_archive = covered > 0 and bool(self.store.archived(record.id))
        branch.compactions = record.record.compactions
        branch.before = None  # with a store, undo is the store's (gateway/undo.py)

    # --- writing -------------------------------------------------------------------------

    def save(self, branch: Branch, prepared: Prepared) -> None:
        """Append this request's new client messages and commit its compaction."""
        try:
            self._save(branch, prepared)
        except StoreError as exc:
            log.warning("session %s: could not save to the store: %s", _name(branch), exc)
            branch.generation = -1  # the next request reloads from the store

    def _save(self, branch: Branch, prepared: Prepared) -> None:
        history = branch.seen
        if history is None:
            return
        client = prepared.client
        if branch.store_id is None:
            self._open(branch, len(client))
        store_id = branch.store_id
        assert store_id is not None
        covered = branch.prefix.covered
        if branch.committed != covered and covered <= len(client):
            seq = self._append(branch, history, client, covered)
            if seq is None or not self._commit(branch, prepared, store_id, seq):
                return
        self._append(branch, history, client, len(client))
        self._save_state(branch, store_id)

    def _open(self, branch: Branch, clients: int) -> None:
        """The branch's keyed store session, created if it is new."""
        record = self.keyed.open_keyed(branch.key, title=TITLE_PREFIX + _name(branch))
        branch.store_id, branch.generation = record.id, record.record.generation
        branch.stored = min(record.positions, clients)

    def _append(self, branch: Branch, history: Seen, client: list[Message], end: int) -> int | None:
        """Store client positions ``[stored, end)``; the row seq of position ``end - 1``."""
        assert branch.store_id is not None
        start = min(branch.stored, end)
        digests = [history.digest(i) for i in range(start, end)]
        outcome = self.keyed.append_at(branch.store_id, start, client[start:end], digests)
        if not outcome.ok:
            log.warning(
                "session %s: the client history differs from the stored one at "
                "message %s; not stored",
                _name(branch),
                outcome.conflict,
            )
            branch.generation = -1
            return None
        branch.stored = max(branch.stored, outcome.positions)
        return outcome.last_seq

    def _commit(self, branch: Branch, prepared: Prepared, store_id: str, watermark: int) -> bool:
        compressor = branch.compressor
        archive: tuple[tuple[str, str, str, Message], ...] = tuple(
            entry
            for inputs, result in prepared.compactions
            for entry in archive_records(inputs, result.archived)
        )
        compaction = Compaction(
            generation=branch.generation,
            watermark=watermark,
            messages=branch.prefix.messages,
            archive=(*self._inherited(branch), *archive),
            guard_state=compressor.guard.to_json(),
            previous_summary=compressor.previous_summary,
        )
        outcome = self.store.commit_compaction(store_id, compaction)
        if not outcome.committed:
            log.info("session %s: another gateway compacted first; reloading", _name(branch))
            branch.generation = -1
            return False
        branch.generation, branch.committed = outcome.generation, branch.prefix.covered
        branch.saved_guard = compaction.guard_state
        branch.archive_from = None  # the inherited entries are the branch's own now
        return True

    def _inherited(self, branch: Branch) -> tuple[tuple[str, str, str, Message], ...]:
        """A fork's parent archive (what its adopted prefix refers to), for its first
        commit; a store that duplicates a handle keeps the first."""
        if branch.archive_from is None:
            return ()
        entries = self.store.archived(branch.archive_from)
        return tuple((e.handle, e.kind, e.text, e.message) for e in entries)

    def _save_state(self, branch: Branch, store_id: str) -> None:
        compressor = branch.compressor
        guard = compressor.guard.to_json()
        if guard != branch.saved_guard:
            self.store.save_state(
                store_id, guard_state=guard, previous_summary=compressor.previous_summary
            )
            branch.saved_guard = guard
        learned = compressor.context_length if compressor.context_length != branch.window else None
        if learned != branch.saved_window:
            self.keyed.set_window(store_id, learned)
            branch.saved_window = learned

    def status(self, key: str) -> dict[str, Any] | None:
        """A stored session's counts (its newest branch), or None."""
        try:
            records = self.keyed.list_keyed(key + "/", limit=1)
        except StoreError as exc:
            log.warning("could not read the store: %s", exc)
            return None
        if not records:
            return None
        record = records[0].record
        return {
            "session": public_id(key),
            "loaded": False,
            "store_session_id": record.id,
            "compactions": record.compactions,
            "active_messages": record.active_messages,
        }


def _current(branch: Branch, record: KeyedRecord) -> bool:
    return (
        branch.store_id == record.id
        and branch.generation == record.record.generation
        and branch.stored == record.positions
    )


def _name(branch: Branch) -> str:
    return public_id(branch.key)
