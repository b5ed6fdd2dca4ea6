"""The algorithms the SQL backends (SQLite, PostgreSQL) share, written once.

Statements here are *canonical* SQL: ``?`` placeholders, ``{true}``/``{false}`` for a
boolean literal and ``{=true}`` after a boolean column to test it. :meth:`SQLStore._sql`
rewrites them into the dialect; a backend supplies only its transactions (``_tx``), that
rewriting, ``executemany``, its row locking, archive search and value adaptation. The
dialect hooks receive and run *native* SQL (already rewritten).
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from ..core.errors import StoreError
from ..core.messages import Message, safe_text
from .archivetext import query_terms, snippet
from .base import (
    END_REASON_COMPRESSION,
    ArchiveEntry,
    Clock,
    CommitOutcome,
    Compaction,
    SearchHit,
    SessionRecord,
    SessionStore,
    Snapshot,
    StoredRow,
    StoreOutdatedError,
    UnknownSessionError,
    dump_message,
    load_message,
)
from .sqlmaint import SQLMaintenance
from .sqlprepared import SQLPrepared
from .sqltypes import C, Connection, Cursor, Mode
from .sqlundo import SQLUndo

__all__ = ("Connection", "Cursor", "Mode", "SQLStore")

_SESSION_COLUMNS = """id, parent_id, title, created_at, updated_at, ended_at, end_reason,
    generation, last_seq, compactions,
    (SELECT count(*) FROM wk_messages m WHERE m.session_id = s.id AND m.active{=true}),
    guard_state, previous_summary"""


def _record(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(*row)


def _row(session_id: str, seq: object) -> str:
    return f"session {session_id!r}, row {seq}"


class SQLStore(SQLMaintenance[C], SQLUndo[C], SQLPrepared[C], SessionStore):
    """A :class:`SessionStore` over SQL tables; subclasses are the dialects."""

    _clock: Clock

    _MIGRATIONS_TABLE: ClassVar[str]
    """Native DDL creating ``wk_migrations`` if it is missing."""
    _ARCHIVE_INSERT: ClassVar[str]
    """Native insert of one archive row that skips an existing ``(session_id, handle)``."""
    _TOKENS: ClassVar[Mapping[str, str]]
    """Replacement of each ``{token}`` of canonical SQL."""
    _PLACEHOLDER: ClassVar[str] = "?"

    # --- the dialect ------------------------------------------------------------------

    @abc.abstractmethod
    def _tx(self, mode: Mode = "write") -> AbstractContextManager[C]:
        """One transaction; driver errors become StoreError, anything raised rolls back."""

    @abc.abstractmethod
    def _executemany(self, conn: C, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run native ``sql`` once per row of parameters."""

    @abc.abstractmethod
    def _search(
        self, conn: C, terms: Sequence[str], session_id: str | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """``(session_id, handle, kind, text, score)`` rows matching every term, best first."""

    @abc.abstractmethod
    def _select_handles(
        self, conn: C, sql: str, session_id: str, handles: Sequence[str]
    ) -> list[Any]:
        """Rows of native ``sql`` (which selects by ``session_id``) for ``handles``, in order."""

    def _lock_session_row(self, conn: C, session_id: str) -> None:
        """Serialize writers of the session; nothing where the transaction already does."""

    def _before_migrate(self, conn: C) -> None:
        """Run first in the migration transaction (e.g. take a lock concurrent openers share)."""

    def _text(self, value: str) -> str:
        """A string as the database can store it in a text column (the JSON body is exact)."""
        return safe_text(value)

    def _sql(self, text: str) -> str:
        """Canonical SQL rewritten into the dialect."""
        for token, replacement in self._TOKENS.items():
            text = text.replace("{" + token + "}", replacement)
        return text if self._PLACEHOLDER == "?" else text.replace("?", self._PLACEHOLDER)

    # --- plumbing ---------------------------------------------------------------------

    def _run(self, conn: C, sql: str, params: Sequence[Any]) -> Cursor:
        return conn.execute(self._sql(sql), params)

    def _opt(self, value: str | None) -> str | None:
        return None if value is None else self._text(value)

    def _migrate(self) -> None:
        with self._tx() as conn:
            self._before_migrate(conn)
            conn.execute(self._MIGRATIONS_TABLE)
            done = {row[0] for row in conn.execute("SELECT name FROM wk_migrations").fetchall()}
            for migration in self._MIGRATIONS:
                if migration.name in done:
                    continue
                for statement in migration.statements:
                    conn.execute(statement)
                self._run(
                    conn,
                    "INSERT INTO wk_migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, self._clock()),
                )

    def _verify_version(self, where: str) -> None:
        """For a read-only open, in place of :meth:`_migrate`: the store is ours and has
        every migration (else :class:`StoreOutdatedError`)."""
        with self._tx("read") as conn:
            self._before_migrate(conn)
            done = {row[0] for row in conn.execute("SELECT name FROM wk_migrations").fetchall()}
        pending = [m.name for m in self._MIGRATIONS if m.name not in done]
        if pending:
            raise StoreOutdatedError(where, pending)

    def applied_migrations(self) -> list[str]:
        with self._tx("read") as conn:
            sql = "SELECT name FROM wk_migrations ORDER BY applied_at, name"
            return [str(row[0]) for row in conn.execute(sql).fetchall()]

    def _session(self, conn: C, session_id: str, *, lock: bool = False) -> SessionRecord:
        if lock:
            self._lock_session_row(conn, session_id)
        row = self._run(
            conn, f"SELECT {_SESSION_COLUMNS} FROM wk_sessions s WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return _record(row)

    def _insert_rows(
        self, conn: C, sid: str, first_seq: int, messages: Sequence[Message], origin: str
    ) -> int:
        now = self._clock()
        rows = [(sid, first_seq + i, origin, dump_message(m), now) for i, m in enumerate(messages)]
        self._executemany(
            conn,
            self._sql(
                "INSERT INTO wk_messages (session_id, seq, active, origin, body, created_at) "
                "VALUES (?, ?, {true}, ?, ?, ?)"
            ),
            rows,
        )
        return first_seq + len(rows) - 1

    def _new_session(self, conn: C, parent_id: str | None, title: str, now: float) -> str:
        sid = uuid.uuid4().hex
        self._run(
            conn,
            "INSERT INTO wk_sessions (id, parent_id, title, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (sid, parent_id, self._text(title), now, now),
        )
        return sid

    def _insert_archive(self, conn: C, session_id: str, compaction: Compaction, now: float) -> None:
        self._executemany(
            conn,
            self._ARCHIVE_INSERT,
            [
                (session_id, handle, kind, self._text(text), dump_message(message), now)
                for handle, kind, text, message in compaction.archive
            ],
        )

    # --- the contract -----------------------------------------------------------------

    def create_session(
        self, messages: Sequence[Message] = (), *, parent_id: str | None = None, title: str = ""
    ) -> SessionRecord:
        with self._tx() as conn:
            if parent_id is not None:
                self._session(conn, parent_id)
            sid = self._new_session(conn, parent_id, title, self._clock())
            last = self._insert_rows(conn, sid, 1, messages, "append")
            self._run(conn, "UPDATE wk_sessions SET last_seq = ? WHERE id = ?", (last, sid))
            return self._session(conn, sid)

    def get_session(self, session_id: str) -> SessionRecord:
        with self._tx("read") as conn:
            return self._session(conn, session_id)

    def list_sessions(self, *, limit: int = 100) -> list[SessionRecord]:
        with self._tx("read") as conn:
            rows = self._run(
                conn,
                f"SELECT {_SESSION_COLUMNS} FROM wk_sessions s "
                "ORDER BY updated_at DESC, created_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
            return [_record(row) for row in rows]

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> int:
        with self._tx() as conn:
            record = self._session(conn, session_id, lock=True)
            if record.ended_at is not None:
                raise StoreError(f"session {session_id!r} has ended; append to its child")
            last = max(
                record.last_seq,
                self._insert_rows(conn, session_id, record.last_seq + 1, messages, "append"),
            )
            self._run(
                conn,
                "UPDATE wk_sessions SET last_seq = ?, updated_at = ? WHERE id = ?",
                (last, self._clock(), session_id),
            )
            return last

    def load(self, session_id: str, *, include_archived: bool = False) -> Snapshot:
        with self._tx("snapshot") as conn:
            record = self._session(conn, session_id)
            where = "" if include_archived else " AND active{=true}"
            rows = self._run(
                conn,
                "SELECT seq, body, active, origin FROM wk_messages "
                f"WHERE session_id = ?{where} ORDER BY seq",
                (session_id,),
            ).fetchall()
        stored = [
            StoredRow(int(seq), load_message(str(body), _row(session_id, seq)), bool(active),
                      str(origin))
            for seq, body, active, origin in rows
        ]  # fmt: skip
        return Snapshot(record, tuple(stored))

    def commit_compaction(self, session_id: str, compaction: Compaction) -> CommitOutcome:
        with self._tx() as conn:
            record = self._session(conn, session_id, lock=True)
            if record.generation != compaction.generation or record.ended_at is not None:
                return CommitOutcome(False, session_id, record.generation)
            if compaction.rotate:
                return self._rotate(conn, record, compaction)
            now, w, last = self._clock(), compaction.watermark, record.last_seq
            inserted = (last + 1, last + len(compaction.messages))
            self._log_compaction(conn, record, w, inserted, [a[0] for a in compaction.archive])
            self._run(
                conn,
                "UPDATE wk_messages SET active = {false}, archived_at = ? "
                "WHERE session_id = ? AND active{=true} AND seq <= ?",
                (now, session_id, w),
            )
            # Move rows appended after the watermark behind the compacted ones, keeping
            # their order; every new seq is above `last`, so no key collides mid-update.
            shift = last + len(compaction.messages) - w
            self._run(
                conn,
                "UPDATE wk_messages SET seq = seq + ? "
                "WHERE session_id = ? AND active{=true} AND seq > ?",
                (shift, session_id, w),
            )
            self._insert_rows(conn, session_id, last + 1, compaction.messages, "compaction")
            self._insert_archive(conn, session_id, compaction, now)
            self._run(
                conn,
                "UPDATE wk_sessions SET last_seq = ?, generation = generation + 1, "
                "compactions = compactions + 1, guard_state = ?, previous_summary = ?, "
                "updated_at = ? WHERE id = ?",
                (last + shift, compaction.guard_state, self._opt(compaction.previous_summary),
                 now, session_id),
            )  # fmt: skip
            return CommitOutcome(True, session_id, record.generation + 1)

    def _rotate(self, conn: C, record: SessionRecord, compaction: Compaction) -> CommitOutcome:
        now = self._clock()
        self._run(
            conn,
            "UPDATE wk_sessions SET ended_at = ?, end_reason = ?, updated_at = ?, "
            "generation = generation + 1 WHERE id = ?",
            (now, END_REASON_COMPRESSION, now, record.id),
        )
        newer = self._run(
            conn,
            "SELECT seq, body FROM wk_messages WHERE session_id = ? AND active{=true} "
            "AND seq > ? ORDER BY seq",
            (record.id, compaction.watermark),
        ).fetchall()
        messages = [
            *compaction.messages,
            *(load_message(str(b), _row(record.id, seq)) for seq, b in newer),
        ]
        child = self._new_session(conn, record.id, record.title, now)
        last = self._insert_rows(conn, child, 1, messages, "compaction")
        self._insert_archive(conn, child, compaction, now)
        self._run(
            conn,
            "UPDATE wk_sessions SET last_seq = ?, guard_state = ?, previous_summary = ? "
            "WHERE id = ?",
            (last, compaction.guard_state, self._opt(compaction.previous_summary), child),
        )
        return CommitOutcome(True, child, 0)

    def save_state(
        self, session_id: str, *, guard_state: str | None, previous_summary: str | None
    ) -> None:
        with self._tx() as conn:
            self._session(conn, session_id, lock=True)
            self._run(
                conn,
                "UPDATE wk_sessions SET guard_state = ?, previous_summary = ?, updated_at = ? "
                "WHERE id = ?",
                (guard_state, self._opt(previous_summary), self._clock(), session_id),
            )

    def archived(self, session_id: str, handles: Sequence[str] | None = None) -> list[ArchiveEntry]:
        sql = self._sql(
            "SELECT handle, kind, text, body, created_at FROM wk_archive WHERE session_id = ?"
        )
        with self._tx("read") as conn:
            self._session(conn, session_id)
            if handles is None:
                rows = conn.execute(sql + " ORDER BY id", (session_id,)).fetchall()
            else:
                wanted = list(dict.fromkeys(handles))
                rows = self._select_handles(conn, sql, session_id, wanted)
        where = f"session {session_id!r}, archive entry"
        return [
            ArchiveEntry(
                session_id, str(h), str(k), str(t), load_message(str(b), f"{where} {h}"), float(c)
            )
            for h, k, t, b, c in rows
        ]

    def search_archive(
        self, query: str, *, session_id: str | None = None, limit: int = 10, reveal: bool = False
    ) -> list[SearchHit]:
        terms = query_terms(query)
        if not terms:
            return []
        with self._tx("read") as conn:
            if session_id is not None:
                self._session(conn, session_id)
            rows = self._search(conn, terms, session_id, limit)
        return [
            SearchHit(str(s), str(h), str(k), snippet(str(t), terms, reveal=reveal), float(score))
            for s, h, k, t, score in rows
        ]
