"""Keyed sessions and positional appends on the SQL backends (:mod:`.keyed` has the contract).

One migration per dialect adds the lookup key, learned window and stored-position count to
``wk_sessions`` and the client position and digest to ``wk_messages`` (unique per
session, so even a bug cannot store a position twice). Writers of one session serialize
as every write does (SQLite's database lock, PostgreSQL's session row lock), so the
"compare, then insert" of :meth:`append_at` cannot interleave with another writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from ..core.errors import StoreError
from ..core.messages import Message
from .base import Migration, SessionRecord, dump_message
from .keyed import AppendOutcome, KeyedRecord, KeyedSessions, check_append
from .sqlbase import Connection, SQLStore

__all__ = ("KEYED_POSTGRES", "KEYED_SQLITE", "KeyedSQLStore")

_COMMON = (
    "ALTER TABLE wk_sessions ADD COLUMN lookup_key TEXT",
    "ALTER TABLE wk_sessions ADD COLUMN learned_window INTEGER",
    "ALTER TABLE wk_sessions ADD COLUMN positions INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE wk_messages ADD COLUMN position INTEGER",
    "ALTER TABLE wk_messages ADD COLUMN digest TEXT",
    "CREATE UNIQUE INDEX wk_sessions_lookup ON wk_sessions(lookup_key)",
    "CREATE UNIQUE INDEX wk_messages_position ON wk_messages(session_id, position)",
)
KEYED_SQLITE = Migration("m006_gateway_keyed", _COMMON)
KEYED_POSTGRES = Migration("m006_gateway_keyed", _COMMON)

C = TypeVar("C", bound=Connection)

_KEYED_COLUMNS = "lookup_key, learned_window, positions"


class KeyedSQLStore(SQLStore[C], KeyedSessions):
    """:class:`SQLStore` plus the keyed-session contract, written once for both dialects."""

    def _keyed(self, conn: C, record: SessionRecord) -> KeyedRecord:
        row = self._run(
            conn, f"SELECT {_KEYED_COLUMNS} FROM wk_sessions WHERE id = ?", (record.id,)
        ).fetchone()
        window = int(row[1]) if row[1] is not None else None
        return KeyedRecord(record, str(row[0] or ""), window, int(row[2]))

    def _by_key(self, conn: C, key: str) -> KeyedRecord | None:
        row = self._run(
            conn, "SELECT id FROM wk_sessions WHERE lookup_key = ? AND ended_at IS NULL", (key,)
        ).fetchone()
        return self._keyed(conn, self._session(conn, str(row[0]))) if row else None

    def open_keyed(self, key: str, *, title: str = "") -> KeyedRecord:
        try:
            return self._open_keyed(key, title)
        except StoreError:
            # A concurrent creator won the unique lookup key; its session is the one.
            found = self.find_keyed(key)
            if found is None:
                raise
            return found

    def _open_keyed(self, key: str, title: str) -> KeyedRecord:
        with self._tx() as conn:
            found = self._by_key(conn, key)
            if found is not None:
                return found
            sid = self._new_session(conn, None, title, self._clock())
            self._run(conn, "UPDATE wk_sessions SET lookup_key = ? WHERE id = ?", (key, sid))
            return self._keyed(conn, self._session(conn, sid))

    def find_keyed(self, key: str) -> KeyedRecord | None:
        with self._tx("read") as conn:
            return self._by_key(conn, key)

    def list_keyed(self, prefix: str, *, limit: int = 100) -> list[KeyedRecord]:
        # substr(), not LIKE or a range: exact and case-sensitive under every collation.
        with self._tx("read") as conn:
            rows = self._run(
                conn,
                "SELECT id FROM wk_sessions WHERE substr(lookup_key, 1, ?) = ? "
                "AND ended_at IS NULL ORDER BY updated_at DESC LIMIT ?",
                (len(prefix), prefix, limit),
            ).fetchall()
            return [self._keyed(conn, self._session(conn, str(r[0]))) for r in rows]

    def append_at(
        self, session_id: str, start: int, messages: Sequence[Message], digests: Sequence[str]
    ) -> AppendOutcome:
        check_append(start, messages, digests)
        with self._tx() as conn:
            record = self._session(conn, session_id, lock=True)
            if record.ended_at is not None:
                raise StoreError(f"session {session_id!r} has ended")
            stored = self._keyed(conn, record).positions
            if start > stored:
                raise StoreError(f"append at position {start} leaves a gap after {stored}")
            end = start + len(messages)
            known = self._digests(conn, session_id, start, min(end, stored))
            for offset, digest in enumerate(known):
                if digest != digests[offset]:
                    return AppendOutcome(stored, None, start + offset)
            fresh = list(range(max(start, stored), end))
            if fresh:
                self._insert_positions(conn, record, fresh, start, messages, digests)
            return AppendOutcome(max(stored, end), self._seq_of(conn, session_id, end - 1))

    def _insert_positions(
        self,
        conn: C,
        record: SessionRecord,
        fresh: list[int],
        start: int,
        messages: Sequence[Message],
        digests: Sequence[str],
    ) -> None:
        now, first = self._clock(), record.last_seq + 1
        rows = [
            (record.id, first + i, dump_message(messages[p - start]), now, p, digests[p - start])
            for i, p in enumerate(fresh)
        ]
        self._executemany(
            conn,
            self._sql(
                "INSERT INTO wk_messages (session_id, seq, active, origin, body, created_at, "
                "position, digest) VALUES (?, ?, {true}, 'append', ?, ?, ?, ?)"
            ),
            rows,
        )
        self._run(
            conn,
            "UPDATE wk_sessions SET last_seq = ?, positions = ?, updated_at = ? WHERE id = ?",
            (first + len(rows) - 1, fresh[-1] + 1, now, record.id),
        )

    def _digests(self, conn: C, session_id: str, start: int, end: int) -> list[str]:
        if end <= start:
            return []
        rows = self._run(
            conn,
            "SELECT digest FROM wk_messages WHERE session_id = ? AND position >= ? "
            "AND position < ? ORDER BY position",
            (session_id, start, end),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def _seq_of(self, conn: C, session_id: str, position: int) -> int | None:
        if position < 0:
            return None
        row: Any = self._run(
            conn,
            "SELECT seq FROM wk_messages WHERE session_id = ? AND position = ?",
            (session_id, position),
        ).fetchone()
        return int(row[0]) if row else None

    def client_digests(self, session_id: str, start: int = 0, end: int | None = None) -> list[str]:
        with self._tx("read") as conn:
            record = self._keyed(conn, self._session(conn, session_id))
            stop = record.positions if end is None else min(end, record.positions)
            return self._digests(conn, session_id, start, stop)

    def set_window(self, session_id: str, window: int | None) -> None:
        with self._tx() as conn:
            self._session(conn, session_id, lock=True)
            self._run(
                conn, "UPDATE wk_sessions SET learned_window = ? WHERE id = ?", (window, session_id)
            )
