"""SQLite session store (the default): WAL journal, FTS5 archive search.

Concurrency model: every write is a ``BEGIN IMMEDIATE`` transaction, so writers from any
number of processes are serialized by SQLite's database lock (waiting up to
``busy_timeout``) and a compaction commit is all-or-nothing even if the process is
killed mid-way (the WAL never exposes a half-written transaction). Reads run in a
deferred transaction, so a snapshot's record and rows agree.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..messages import Message
from .base import (
    END_REASON_COMPRESSION,
    LOCK_TTL,
    ArchiveEntry,
    Clock,
    CommitOutcome,
    Compaction,
    Migration,
    SearchHit,
    SessionRecord,
    SessionStore,
    Snapshot,
    StoredRow,
    UnknownSessionError,
    dump_message,
    load_message,
    query_terms,
    snippet,
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration("m001_sessions", (
        """CREATE TABLE wk_sessions (
            id TEXT PRIMARY KEY, parent_id TEXT REFERENCES wk_sessions(id),
            title TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, updated_at REAL NOT NULL,
            ended_at REAL, end_reason TEXT, generation INTEGER NOT NULL DEFAULT 0,
            last_seq INTEGER NOT NULL DEFAULT 0, compactions INTEGER NOT NULL DEFAULT 0,
            guard_state TEXT, previous_summary TEXT)""",
        "CREATE INDEX wk_sessions_parent ON wk_sessions(parent_id)",
        "CREATE INDEX wk_sessions_updated ON wk_sessions(updated_at)",
    )),
    Migration("m002_messages", (
        """CREATE TABLE wk_messages (
            session_id TEXT NOT NULL REFERENCES wk_sessions(id), seq INTEGER NOT NULL,
            active INTEGER NOT NULL, origin TEXT NOT NULL, body TEXT NOT NULL,
            created_at REAL NOT NULL, archived_at REAL, PRIMARY KEY (session_id, seq))""",
        "CREATE INDEX wk_messages_active ON wk_messages(session_id, active, seq)",
    )),
    Migration("m003_archive", (
        """CREATE TABLE wk_archive (
            id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES wk_sessions(id),
            handle TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, body TEXT NOT NULL,
            created_at REAL NOT NULL, UNIQUE (session_id, handle))""",
    )),
    Migration("m004_archive_fts", (
        # External-content index over wk_archive; archive rows are insert-only, so one
        # trigger keeps it in step, and 'rebuild' indexes rows written before this step.
        """CREATE VIRTUAL TABLE wk_archive_fts USING fts5(
            text, content='wk_archive', content_rowid='id', tokenize='unicode61')""",
        """CREATE TRIGGER wk_archive_fts_insert AFTER INSERT ON wk_archive BEGIN
            INSERT INTO wk_archive_fts(rowid, text) VALUES (new.id, new.text); END""",
        "INSERT INTO wk_archive_fts(wk_archive_fts) VALUES ('rebuild')",
    )),
    Migration("m005_locks", (
        """CREATE TABLE wk_locks (
            session_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at REAL NOT NULL)""",
    )),
)  # fmt: skip

_SESSION_COLUMNS = """id, parent_id, title, created_at, updated_at, ended_at, end_reason,
    generation, last_seq, compactions,
    (SELECT count(*) FROM wk_messages m WHERE m.session_id = s.id AND m.active = 1),
    guard_state, previous_summary"""


def _record(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(*row)


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite may already have rolled back (e.g. on SQLITE_FULL); a second ROLLBACK fails.
    if conn.in_transaction:
        conn.execute("ROLLBACK")


class SQLiteStore(SessionStore):
    """A store in one SQLite file; safe to share between threads and processes."""

    def __init__(
        self, path: str | Path, *, clock: Clock = time.time, timeout: float = 30.0
    ) -> None:
        self.path = str(path)
        self._clock = clock
        self._mutex = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.path}: {exc}") from exc
        self._closed = False
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is crash-safe in WAL mode (a killed process never corrupts the file;
            # only an OS crash may lose the last commits).
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except (sqlite3.Error, StoreError) as exc:
            self.close()
            raise StoreError(f"cannot open SQLite store {self.path}: {exc}") from exc

    # --- plumbing ------------------------------------------------------------------

    @contextmanager
    def _tx(self, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Connection]:
        """One transaction; sqlite3 errors become StoreError, anything raised rolls back."""
        with self._mutex:
            if self._closed:
                raise StoreError("the store is closed")
            conn = self._conn
            try:
                conn.execute(f"BEGIN {mode}")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self.path}: {exc}") from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise StoreError(f"SQLite store {self.path}: {exc}") from exc
            except BaseException:
                _rollback(conn)
                raise

    def _migrate(self) -> None:
        with self._tx() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS wk_migrations ("
                "name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            done = {row[0] for row in conn.execute("SELECT name FROM wk_migrations")}
            for migration in MIGRATIONS:
                if migration.name in done:
                    continue
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO wk_migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, self._clock()),
                )

    def applied_migrations(self) -> list[str]:
        with self._tx("DEFERRED") as conn:
            rows = conn.execute("SELECT name FROM wk_migrations ORDER BY applied_at, name")
            return [row[0] for row in rows]

    def close(self) -> None:
        with self._mutex:
            if not self._closed:
                self._closed = True
                self._conn.close()

    @staticmethod
    def _session(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM wk_sessions s WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return _record(row)

    def _insert_rows(
        self, conn: sqlite3.Connection, sid: str, first_seq: int,
        messages: Sequence[Message], origin: str,
    ) -> int:  # fmt: skip
        now = self._clock()
        rows = [(sid, first_seq + i, origin, dump_message(m), now) for i, m in enumerate(messages)]
        conn.executemany(
            "INSERT INTO wk_messages (session_id, seq, active, origin, body, created_at) "
            "VALUES (?, ?, 1, ?, ?, ?)",
            rows,
        )
        return first_seq + len(rows) - 1

    def _new_session(
        self, conn: sqlite3.Connection, parent_id: str | None, title: str, now: float
    ) -> str:
        sid = uuid.uuid4().hex
        conn.execute(
            "INSERT INTO wk_sessions (id, parent_id, title, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (sid, parent_id, title, now, now),
        )
        return sid

    # --- the contract ----------------------------------------------------------------

    def create_session(
        self, messages: Sequence[Message] = (), *, parent_id: str | None = None, title: str = ""
    ) -> SessionRecord:
        with self._tx() as conn:
            if parent_id is not None:
                self._session(conn, parent_id)
            sid = self._new_session(conn, parent_id, title, self._clock())
            last = self._insert_rows(conn, sid, 1, messages, "append")
            conn.execute("UPDATE wk_sessions SET last_seq = ? WHERE id = ?", (last, sid))
            return self._session(conn, sid)

    def get_session(self, session_id: str) -> SessionRecord:
        with self._tx("DEFERRED") as conn:
            return self._session(conn, session_id)

    def list_sessions(self, *, limit: int = 100) -> list[SessionRecord]:
        with self._tx("DEFERRED") as conn:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM wk_sessions s "
                "ORDER BY updated_at DESC, created_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
            return [_record(row) for row in rows]

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> int:
        with self._tx() as conn:
            record = self._session(conn, session_id)
            if record.ended_at is not None:
                raise StoreError(f"session {session_id!r} has ended; append to its child")
            last = self._insert_rows(conn, session_id, record.last_seq + 1, messages, "append")
            conn.execute(
                "UPDATE wk_sessions SET last_seq = ?, updated_at = ? WHERE id = ?",
                (max(last, record.last_seq), self._clock(), session_id),
            )
            return max(last, record.last_seq)

    def load(self, session_id: str, *, include_archived: bool = False) -> Snapshot:
        with self._tx("DEFERRED") as conn:
            record = self._session(conn, session_id)
            where = "" if include_archived else " AND active = 1"
            rows = conn.execute(
                "SELECT seq, body, active, origin FROM wk_messages "
                f"WHERE session_id = ?{where} ORDER BY seq",
                (session_id,),
            ).fetchall()
        stored = [StoredRow(seq, load_message(body), bool(a), o) for seq, body, a, o in rows]
        return Snapshot(record, tuple(stored))

    def commit_compaction(self, session_id: str, compaction: Compaction) -> CommitOutcome:
        with self._tx() as conn:
            record = self._session(conn, session_id)
            if record.generation != compaction.generation or record.ended_at is not None:
                return CommitOutcome(False, session_id, record.generation)
            if compaction.rotate:
                return self._rotate(conn, record, compaction)
            now, w, last = self._clock(), compaction.watermark, record.last_seq
            compacted = len(compaction.messages)
            conn.execute(
                "UPDATE wk_messages SET active = 0, archived_at = ? "
                "WHERE session_id = ? AND active = 1 AND seq <= ?",
                (now, session_id, w),
            )
            # Move rows appended after the watermark behind the compacted ones, keeping
            # their order; every new seq is above `last`, so no key collides mid-update.
            shift = last + compacted - w
            conn.execute(
                "UPDATE wk_messages SET seq = seq + ? "
                "WHERE session_id = ? AND active = 1 AND seq > ?",
                (shift, session_id, w),
            )
            self._insert_rows(conn, session_id, last + 1, compaction.messages, "compaction")
            self._insert_archive(conn, session_id, compaction, now)
            conn.execute(
                "UPDATE wk_sessions SET last_seq = ?, generation = generation + 1, "
                "compactions = compactions + 1, guard_state = ?, previous_summary = ?, "
                "updated_at = ? WHERE id = ?",
                (last + shift, compaction.guard_state, compaction.previous_summary, now,
                 session_id),
            )  # fmt: skip
            return CommitOutcome(True, session_id, record.generation + 1)

    def _rotate(
        self, conn: sqlite3.Connection, record: SessionRecord, compaction: Compaction
    ) -> CommitOutcome:
        now = self._clock()
        conn.execute(
            "UPDATE wk_sessions SET ended_at = ?, end_reason = ?, updated_at = ?, "
            "generation = generation + 1 WHERE id = ?",
            (now, END_REASON_COMPRESSION, now, record.id),
        )
        newer = conn.execute(
            "SELECT body FROM wk_messages WHERE session_id = ? AND active = 1 AND seq > ? "
            "ORDER BY seq",
            (record.id, compaction.watermark),
        ).fetchall()
        messages = [*compaction.messages, *(load_message(b) for (b,) in newer)]
        child = self._new_session(conn, record.id, record.title, now)
        last = self._insert_rows(conn, child, 1, messages, "compaction")
        self._insert_archive(conn, child, compaction, now)
        conn.execute(
            "UPDATE wk_sessions SET last_seq = ?, guard_state = ?, previous_summary = ? "
            "WHERE id = ?",
            (last, compaction.guard_state, compaction.previous_summary, child),
        )
        return CommitOutcome(True, child, 0)

    @staticmethod
    def _insert_archive(
        conn: sqlite3.Connection, session_id: str, compaction: Compaction, now: float
    ) -> None:
        conn.executemany(
            "INSERT OR IGNORE INTO wk_archive "
            "(session_id, handle, kind, text, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (session_id, handle, kind, text, dump_message(message), now)
                for handle, kind, text, message in compaction.archive
            ],
        )

    def save_state(
        self, session_id: str, *, guard_state: str | None, previous_summary: str | None
    ) -> None:
        with self._tx() as conn:
            self._session(conn, session_id)
            conn.execute(
                "UPDATE wk_sessions SET guard_state = ?, previous_summary = ?, updated_at = ? "
                "WHERE id = ?",
                (guard_state, previous_summary, self._clock(), session_id),
            )

    def archived(self, session_id: str, handles: Sequence[str] | None = None) -> list[ArchiveEntry]:
        wanted = None if handles is None else list(dict.fromkeys(handles))
        with self._tx("DEFERRED") as conn:
            self._session(conn, session_id)
            sql = "SELECT handle, kind, text, body, created_at FROM wk_archive WHERE session_id = ?"
            if wanted is None:
                rows = conn.execute(sql + " ORDER BY id", (session_id,)).fetchall()
            else:
                rows = [
                    row
                    for handle in wanted
                    for row in conn.execute(sql + " AND handle = ?", (session_id, handle))
                ]
        return [ArchiveEntry(session_id, h, k, t, load_message(b), c) for h, k, t, b, c in rows]

    def search_archive(
        self, query: str, *, session_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        terms = query_terms(query)
        if not terms:
            return []
        match = " ".join(f'"{term}"' for term in terms)
        where = "" if session_id is None else " AND a.session_id = ?"
        params: tuple[object, ...] = (match,) if session_id is None else (match, session_id)
        with self._tx("DEFERRED") as conn:
            if session_id is not None:
                self._session(conn, session_id)
            rows = conn.execute(
                "SELECT a.session_id, a.handle, a.kind, a.text, bm25(wk_archive_fts) "
                "FROM wk_archive_fts JOIN wk_archive a ON a.id = wk_archive_fts.rowid "
                f"WHERE wk_archive_fts MATCH ?{where} ORDER BY 5 LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [SearchHit(s, h, k, snippet(t, terms), -rank) for s, h, k, t, rank in rows]

    def acquire_lock(self, session_id: str, holder: str, *, ttl: float = LOCK_TTL) -> bool:
        now = self._clock()
        with self._tx() as conn:
            cursor = conn.execute(
                "INSERT INTO wk_locks (session_id, holder, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, "
                "expires_at = excluded.expires_at "
                "WHERE wk_locks.expires_at <= ? OR wk_locks.holder = excluded.holder",
                (session_id, holder, now + ttl, now),
            )
            return cursor.rowcount == 1

    def release_lock(self, session_id: str, holder: str) -> bool:
        with self._tx() as conn:
            cursor = conn.execute(
                "DELETE FROM wk_locks WHERE session_id = ? AND holder = ?", (session_id, holder)
            )
            return cursor.rowcount == 1
