"""Prepared compactions on the SQL backends (:mod:`.prepared` has the contract).

A mixin of :class:`~windowkeeper.store.sqlbase.SQLStore`: one ``wk_prepared`` row per
session. Storing reads the lease and the session's generation in the write's own
transaction, with the session row locked as every writer of the session locks it, so a
lease taken over or a commit made meanwhile cannot slip between the check and the write.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from .base import Lease, Migration, SessionRecord
from .prepared import PreparedCompactions, PreparedRecord, PreparedState, may_put
from .sqlhooks import SQLHooks
from .sqltypes import C

__all__ = ("SQLPrepared", "prepared_migration")

PREPARED_TABLE = (
    "session_id TEXT PRIMARY KEY REFERENCES wk_sessions(id), generation {int} NOT NULL, "
    "holder TEXT NOT NULL, body TEXT NOT NULL, created_at {real} NOT NULL, "
    "state TEXT NOT NULL, reason TEXT, settled_at {real}"
)
"""Columns of ``wk_prepared``; ``{int}`` / ``{real}`` are the dialect's types."""


def prepared_migration(int_type: str, real_type: str) -> Migration:
    """The dialect's step: one compaction prepared in the background per session (the
    generation it was prepared against, who prepared it, its JSON, what became of it)."""
    table = PREPARED_TABLE.format(int=int_type, real=real_type)
    return Migration("m009_prepared_compactions", (f"CREATE TABLE wk_prepared ({table})",))


_COLUMNS = "session_id, generation, holder, body, created_at, state, reason, settled_at"
_UPSERT = (
    f"INSERT INTO wk_prepared ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL) "
    "ON CONFLICT (session_id) DO UPDATE SET generation = excluded.generation, "
    "holder = excluded.holder, body = excluded.body, created_at = excluded.created_at, "
    "state = excluded.state, reason = NULL, settled_at = NULL"
)


def _prepared(row: Sequence[Any]) -> PreparedRecord:
    sid, generation, holder, body, created, state, reason, settled = row
    return PreparedRecord(
        str(sid), int(generation), str(holder), str(body), float(created),
        PreparedState(str(state)), None if reason is None else str(reason),
        None if settled is None else float(settled),
    )  # fmt: skip


class SQLPrepared(SQLHooks[C], PreparedCompactions):
    """The prepared-compaction contract over the store's transactions and dialect hooks."""

    @abc.abstractmethod
    def _session(self, conn: C, session_id: str, *, lock: bool = False) -> SessionRecord:
        """The session's record (locked for writing when asked)."""

    def _lease_in(self, conn: C, session_id: str) -> Lease | None:
        row = self._run(
            conn, "SELECT holder, expires_at FROM wk_locks WHERE session_id = ?", (session_id,)
        ).fetchone()
        return None if row is None else Lease(str(row[0]), float(row[1]))

    def put_prepared(self, session_id: str, *, generation: int, holder: str, body: str) -> bool:
        with self._tx() as conn:
            record = self._session(conn, session_id, lock=True)
            now = self._clock()
            if record.generation != generation:
                return False
            if not may_put(self._lease_in(conn, session_id), holder, now, record):
                return False
            self._run(
                conn, _UPSERT,
                (session_id, generation, holder, body, now, PreparedState.READY.value),
            )  # fmt: skip
            return True

    def prepared(self, session_id: str) -> PreparedRecord | None:
        with self._tx("read") as conn:
            self._session(conn, session_id)
            row = self._run(
                conn, f"SELECT {_COLUMNS} FROM wk_prepared WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else _prepared(row)

    def settle_prepared(
        self, session_id: str, generation: int, *, applied: bool, reason: str | None = None
    ) -> bool:
        state = PreparedState.APPLIED if applied else PreparedState.DISCARDED
        with self._tx() as conn:
            self._session(conn, session_id)
            cursor = self._run(
                conn,
                "UPDATE wk_prepared SET state = ?, reason = ?, settled_at = ? "
                "WHERE session_id = ? AND generation = ? AND state = ?",
                (state.value, reason, self._clock(), session_id, generation,
                 PreparedState.READY.value),
            )  # fmt: skip
            return cursor.rowcount == 1
