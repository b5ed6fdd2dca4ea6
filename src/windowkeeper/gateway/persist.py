"""Persisting gateway sessions in a :class:`~windowkeeper.store.SessionStore` (SPEC §8).

The store's own model carries the prefix, so nothing gateway-specific is stored:

* every client message is appended once (origin ``append``), in the client's order;
* a compaction archives the active rows and inserts ``C`` (origin ``compaction``);
* hence, on restore, the archived ``append`` rows are exactly the covered client
  messages ``[0, L)``, the active ``compaction`` rows are ``C``, and all ``append`` rows
  are the client messages stored so far. The guard state and previous summary are the
  session's own fields; the archive keeps the compacted originals for recall.

A gateway session is found by its title (``windowkeeper-gateway:<key>``; the most recently
updated one wins). When the client's history diverges from what is stored (an edit, a
new conversation under the same key) a new store session is seeded from the current
state, with the old one as its parent when the prefix still held. Store failures are
logged and never fail a request that the upstream already answered.
"""

from __future__ import annotations

import logging

from ..core.errors import StoreError
from ..core.messages import Message
from ..store import Compaction, SessionStore, restore_state, save_state
from ..store.session import archive_records
from .sessions import GatewaySession, Prefix, Prepared, prefix_digests

log = logging.getLogger("windowkeeper.gateway")

TITLE_PREFIX = "windowkeeper-gateway:"
SCAN_LIMIT = 100_000


class SessionPersistence:
    """Reads and writes gateway sessions through the store's public API (blocking: call
    it from a worker thread, under the session's lock)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._ids: dict[str, str] = {}

    def find(self, key: str) -> str | None:
        """The store session of ``key`` (cached; a miss rescans, as another gateway
        process sharing the store may have created it)."""
        known = self._ids.get(key)
        if known is not None:
            return known
        title = TITLE_PREFIX + key
        for record in self.store.list_sessions(limit=SCAN_LIMIT):
            if record.title == title and record.ended_at is None:
                self._ids[key] = record.id
                return record.id
        return None

    def restore(self, session: GatewaySession) -> None:
        """Load the prefix, the stored client messages and the guard state of ``session``."""
        try:
            store_id = self.find(session.key)
            if store_id is None:
                return
            snapshot = self.store.load(store_id, include_archived=True)
        except StoreError as exc:
            log.warning("session %s: could not restore from the store: %s", session.key, exc)
            return
        client = [row.message for row in snapshot.rows if row.origin == "append"]
        covered = sum(1 for row in snapshot.rows if row.origin == "append" and not row.active)
        compacted = [r.message for r in snapshot.rows if r.origin == "compaction" and r.active]
        digests = prefix_digests(client, (covered, len(client)))
        if covered:
            session.prefix = Prefix(covered, digests[covered], tuple(compacted))
        session.store_id, session.stored = store_id, len(client)
        session.stored_digest = digests[len(client)]
        restore_state(session.compressor, snapshot.session)

    def save(self, session: GatewaySession, prepared: Prepared, compacted: bool) -> None:
        """Append the client's new messages and commit this request's compaction."""
        client = prepared.client
        stored = session.stored
        digests = prepared.digest(stored, len(client)) if stored <= len(client) else {}
        extends = (
            session.store_id is not None
            and stored <= len(client)
            and digests.get(stored) == session.stored_digest
        )
        try:
            if extends and session.store_id is not None:
                extended = self._extend(session, session.store_id, client, compacted)
                if not extended:
                    self._seed(session, client, parent=session.store_id)
            else:
                self._seed(session, client, parent=session.store_id)
        except StoreError as exc:
            log.warning("session %s: could not save to the store: %s", session.key, exc)
            session.store_id = None  # the next request seeds a fresh copy
            return
        session.stored = len(client)
        session.stored_digest = prepared.digest(len(client))[len(client)]

    def _extend(
        self, session: GatewaySession, store_id: str, client: list[Message], compacted: bool
    ) -> bool:
        """Append and commit on the existing store session; False when another writer
        committed a compaction meanwhile (the caller then seeds a new session)."""
        if len(client) > session.stored:
            self.store.append_messages(store_id, client[session.stored :])
        if not compacted:
            save_state(self.store, store_id, session.compressor)
            return True
        return self._commit(session, store_id)

    def _seed(self, session: GatewaySession, client: list[Message], parent: str | None) -> None:
        """A new store session holding the client's messages and the current prefix."""
        covered = session.prefix.covered
        first = client[:covered] if covered else client
        record = self.store.create_session(
            first, parent_id=parent, title=TITLE_PREFIX + session.key
        )
        session.store_id = record.id
        self._ids[session.key] = record.id
        if not covered:
            save_state(self.store, record.id, session.compressor)
            return
        if not self._commit(session, record.id):
            raise StoreError("a new session was compacted by another writer")
        if len(client) > covered:
            self.store.append_messages(record.id, client[covered:])

    def _commit(self, session: GatewaySession, store_id: str) -> bool:
        record = self.store.get_session(store_id)
        compressor = session.compressor
        archive = tuple(
            entry
            for inputs, result in compressor.compacted
            for entry in archive_records(inputs, result.archived)
        )
        compaction = Compaction(
            generation=record.generation,
            watermark=record.last_seq,
            messages=session.prefix.messages,
            archive=archive,
            guard_state=compressor.guard.to_json(),
            previous_summary=compressor.previous_summary,
        )
        return self.store.commit_compaction(store_id, compaction).committed
