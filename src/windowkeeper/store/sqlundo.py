"""The compaction log of the SQL backends and undo over it, written once (issue 26).

A mixin of :class:`~windowkeeper.store.sqlbase.SQLStore`. Every in-place commit writes
one ``wk_compactions`` row in the commit's transaction: the ``seq`` of the rows it
archived, the range of rows it wrote, its archive handles and the compressor state from
before it. Nothing is deleted, so undo only flips ``active`` back and marks the log row.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Sequence
from typing import Any

from ..core.errors import StoreError
from .base import (
    CompactionRecord,
    SessionRecord,
    UndoOutcome,
)
from .damage import held_after_undo
from .records import nothing_to_undo, undo_record
from .sqlhooks import SQLHooks
from .sqltypes import C

__all__ = ("COMPACTION_LOG", "SQLUndo")

COMPACTION_LOG = (
    "session_id TEXT NOT NULL REFERENCES wk_sessions(id), generation {int} NOT NULL, "
    "replaced TEXT NOT NULL, inserted_from {int} NOT NULL, inserted_to {int} NOT NULL, "
    "handles TEXT NOT NULL, guard_state TEXT, previous_summary TEXT, "
    "created_at {real} NOT NULL, undone_at {real}, PRIMARY KEY (session_id, generation)"
)
"""Columns of ``wk_compactions``; ``{int}`` / ``{real}`` are the dialect's types."""

_COLUMNS = (
    "session_id, generation, replaced, inserted_from, inserted_to, handles, guard_state, "
    "previous_summary, created_at, undone_at"
)


def _log_record(row: Sequence[Any]) -> CompactionRecord:
    sid, gen, replaced, first, last, handles, guard, summary, created, undone = row
    return CompactionRecord(
        str(sid), int(gen), tuple(json.loads(replaced)), tuple(range(int(first), int(last) + 1)),
        tuple(json.loads(handles)), guard, summary, float(created),
        None if undone is None else float(undone),
    )  # fmt: skip


class SQLUndo(SQLHooks[C]):
    """``compactions`` and ``undo`` over the store's transactions and dialect hooks."""

    @abc.abstractmethod
    def _executemany(self, conn: C, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run native ``sql`` once per row of parameters."""

    @abc.abstractmethod
    def _session(self, conn: C, session_id: str, *, lock: bool = False) -> SessionRecord:
        """The session's record (locked for writing when asked)."""

    def _log_compaction(
        self, conn: C, record: SessionRecord, watermark: int, inserted: tuple[int, int],
        handles: Sequence[str],
    ) -> None:  # fmt: skip
        """Log the commit about to archive the active rows up to ``watermark`` (run
        before it, in its transaction)."""
        seqs = self._run(
            conn,
            "SELECT seq FROM wk_messages WHERE session_id = ? AND active{=true} AND seq <= ? "
            "ORDER BY seq",
            (record.id, watermark),
        ).fetchall()
        self._run(
            conn,
            f"INSERT INTO wk_compactions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (record.id, record.generation + 1, json.dumps([int(s[0]) for s in seqs]),
             inserted[0], inserted[1], json.dumps(list(handles)), record.guard_state,
             record.previous_summary, self._clock()),
        )  # fmt: skip

    def _log(self, conn: C, session_id: str) -> list[CompactionRecord]:
        rows = self._run(
            conn,
            f"SELECT {_COLUMNS} FROM wk_compactions WHERE session_id = ? ORDER BY generation",
            (session_id,),
        ).fetchall()
        return [_log_record(row) for row in rows]

    def compactions(self, session_id: str) -> list[CompactionRecord]:
        with self._tx("read") as conn:
            self._session(conn, session_id)
            return self._log(conn, session_id)

    def undo(self, session_id: str) -> UndoOutcome:
        with self._tx() as conn:
            record = self._session(conn, session_id, lock=True)
            if record.ended_at is not None:
                raise StoreError(f"session {session_id!r} has ended; undo in its child")
            target = undo_record(self._log(conn, session_id))
            if target is None:
                return nothing_to_undo(record)
            now = self._clock()
            if target.inserted:
                self._run(
                    conn,
                    "UPDATE wk_messages SET active = {false}, archived_at = ? "
                    "WHERE session_id = ? AND seq >= ? AND seq <= ?",
                    (now, session_id, target.inserted[0], target.inserted[-1]),
                )
            self._executemany(
                conn,
                self._sql(
                    "UPDATE wk_messages SET active = {true}, archived_at = NULL "
                    "WHERE session_id = ? AND seq = ?"
                ),
                [(session_id, seq) for seq in target.replaced],
            )
            self._run(
                conn,
                "UPDATE wk_compactions SET undone_at = ? WHERE session_id = ? AND generation = ?",
                (now, session_id, target.generation),
            )
            self._run(
                conn,
                "UPDATE wk_sessions SET generation = generation + 1, "
                "compactions = compactions - 1, guard_state = ?, previous_summary = ?, "
                "updated_at = ? WHERE id = ?",
                (held_after_undo(target.guard_state), target.previous_summary, now, session_id),
            )
            return UndoOutcome(True, session_id, target.generation, len(target.replaced))
