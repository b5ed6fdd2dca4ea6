"""PostgreSQL session store for several agent/gateway processes (the ``postgres`` extra).

Concurrency model: writers of one session serialize on its ``wk_sessions`` row
(``SELECT … FOR UPDATE``), reads run at REPEATABLE READ so a snapshot's record and rows
agree, and a compaction commit is one transaction (a killed client's transaction is
rolled back by the server). Archive search uses a generated ``tsvector`` column with a
GIN index.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

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
            title TEXT NOT NULL DEFAULT '', created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL, ended_at DOUBLE PRECISION, end_reason TEXT,
            generation BIGINT NOT NULL DEFAULT 0, last_seq BIGINT NOT NULL DEFAULT 0,
            compactions INTEGER NOT NULL DEFAULT 0, guard_state TEXT, previous_summary TEXT)""",
        "CREATE INDEX wk_sessions_parent ON wk_sessions(parent_id)",
        "CREATE INDEX wk_sessions_updated ON wk_sessions(updated_at)",
    )),
    Migration("m002_messages", (
        # TEXT, not JSONB: JSONB rejects \u0000 (tool output may hold NULs) and reorders keys.
        """CREATE TABLE wk_messages (
            session_id TEXT NOT NULL REFERENCES wk_sessions(id), seq BIGINT NOT NULL,
            active BOOLEAN NOT NULL, origin TEXT NOT NULL, body TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL, archived_at DOUBLE PRECISION,
            PRIMARY KEY (session_id, seq))""",
        "CREATE INDEX wk_messages_active ON wk_messages(session_id, active, seq)",
    )),
    Migration("m003_archive", (
        """CREATE TABLE wk_archive (
            id BIGSERIAL PRIMARY KEY, session_id TEXT NOT NULL REFERENCES wk_sessions(id),
            handle TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, body TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL, UNIQUE (session_id, handle))""",
    )),
    Migration("m004_archive_search", (
        # Split on non-alphanumerics like FTS5's unicode61 (the default parser would keep
        # paths and hosts as one token); cap the input so tsvector's 1 MB limit holds.
        """ALTER TABLE wk_archive ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
            to_tsvector('simple'::regconfig,
                        regexp_replace(left(text, 262144), '[^[:alnum:]]+', ' ', 'g'))
            ) STORED""",
        "CREATE INDEX wk_archive_tsv ON wk_archive USING GIN (tsv)",
    )),
    Migration("m005_locks", (
        """CREATE TABLE wk_locks (session_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
    )),
)  # fmt: skip

_MIGRATION_LOCK = 0x776B6D67  # advisory lock key: concurrent openers migrate one at a time

_SESSION_COLUMNS = """id, parent_id, title, created_at, updated_at, ended_at, end_reason,
    generation, last_seq, compactions,
    (SELECT count(*) FROM wk_messages m WHERE m.session_id = s.id AND m.active),
    guard_state, previous_summary"""

Conn = psycopg.Connection[TupleRow]


def _record(row: TupleRow) -> SessionRecord:
    return SessionRecord(*row)


def _text(value: str) -> str:
    # PostgreSQL text cannot hold NUL; the exact original stays in the JSON body.
    return value.replace("\x00", "\ufffd")


class PostgresStore(SessionStore):
    """A store in one PostgreSQL database, over a small connection pool."""

    def __init__(
        self, conninfo: str, *, clock: Clock = time.time, max_size: int = 4,
        timeout: float = 30.0,
    ) -> None:  # fmt: skip
        self._clock = clock
        self._pool: ConnectionPool[Conn] | None = None
        try:
            self._pool = ConnectionPool(
                conninfo, min_size=1, max_size=max_size, timeout=timeout, open=True,
                kwargs={"connect_timeout": 10},
            )  # fmt: skip
            self._pool.wait(timeout=timeout)
            self._migrate()
        except (psycopg.Error, PoolTimeout, StoreError) as exc:
            self.close()
            raise StoreError(f"cannot open PostgreSQL store: {exc}") from exc

    @contextmanager
    def _tx(self, *, snapshot: bool = False) -> Iterator[Conn]:
        """One transaction; psycopg errors become StoreError, anything raised rolls back."""
        if self._pool is None:
            raise StoreError("the store is closed")
        try:
            with self._pool.connection() as conn, conn.transaction():
                if snapshot:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"PostgreSQL store: {exc}") from exc

    def _migrate(self) -> None:
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS wk_migrations ("
                "name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            done = {row[0] for row in conn.execute("SELECT name FROM wk_migrations")}
            for migration in MIGRATIONS:
                if migration.name in done:
                    continue
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO wk_migrations (name, applied_at) VALUES (%s, %s)",
                    (migration.name, self._clock()),
                )

    def applied_migrations(self) -> list[str]:
        with self._tx() as conn:
            rows = conn.execute("SELECT name FROM wk_migrations ORDER BY applied_at, name")
            return [str(row[0]) for row in rows]

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    @staticmethod
    def _session(conn: Conn, session_id: str, *, lock: bool = False) -> SessionRecord:
        if lock:
            found = conn.execute(
                "SELECT 1 FROM wk_sessions WHERE id = %s FOR UPDATE", (session_id,)
            ).fetchone()
            if found is None:
                raise UnknownSessionError(session_id)
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM wk_sessions s WHERE id = %s", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSessionError(session_id)
        return _record(row)

    def _insert_rows(
        self, conn: Conn, sid: str, first_seq: int, messages: Sequence[Message], origin: str
    ) -> int:
        now = self._clock()
        rows = [(sid, first_seq + i, origin, dump_message(m), now) for i, m in enumerate(messages)]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO wk_messages (session_id, seq, active, origin, body, created_at) "
                "VALUES (%s, %s, true, %s, %s, %s)",
                rows,
            )
        return first_seq + len(rows) - 1

    @staticmethod
    def _new_session(conn: Conn, parent_id: str | None, title: str, now: float) -> str:
        sid = uuid.uuid4().hex
        conn.execute(
            "INSERT INTO wk_sessions (id, parent_id, title, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s)",
            (sid, parent_id, _text(title), now, now),
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
            conn.execute("UPDATE wk_sessions SET last_seq = %s WHERE id = %s", (last, sid))
            return self._session(conn, sid)

    def get_session(self, session_id: str) -> SessionRecord:
        with self._tx() as conn:
            return self._session(conn, session_id)

    def list_sessions(self, *, limit: int = 100) -> list[SessionRecord]:
        with self._tx() as conn:
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM wk_sessions s "
                "ORDER BY updated_at DESC, created_at DESC LIMIT %s",
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
            conn.execute(
                "UPDATE wk_sessions SET last_seq = %s, updated_at = %s WHERE id = %s",
                (last, self._clock(), session_id),
            )
            return last

    def load(self, session_id: str, *, include_archived: bool = False) -> Snapshot:
        with self._tx(snapshot=True) as conn:
            record = self._session(conn, session_id)
            where = "" if include_archived else " AND active"
            rows = conn.execute(
                "SELECT seq, body, active, origin FROM wk_messages "
                f"WHERE session_id = %s{where} ORDER BY seq",
                (session_id,),
            ).fetchall()
        stored = [
            StoredRow(int(seq), load_message(str(body)), bool(active), str(origin))
            for seq, body, active, origin in rows
        ]
        return Snapshot(record, tuple(stored))

    def commit_compaction(self, session_id: str, compaction: Compaction) -> CommitOutcome:
        with self._tx() as conn:
            record = self._session(conn, session_id, lock=True)
            if record.generation != compaction.generation or record.ended_at is not None:
                return CommitOutcome(False, session_id, record.generation)
            if compaction.rotate:
                return self._rotate(conn, record, compaction)
            now, w, last = self._clock(), compaction.watermark, record.last_seq
            conn.execute(
                "UPDATE wk_messages SET active = false, archived_at = %s "
                "WHERE session_id = %s AND active AND seq <= %s",
                (now, session_id, w),
            )
            # Move rows appended after the watermark behind the compacted ones, keeping
            # their order; every new seq is above `last`, so no key collides mid-update.
            shift = last + len(compaction.messages) - w
            conn.execute(
                "UPDATE wk_messages SET seq = seq + %s "
                "WHERE session_id = %s AND active AND seq > %s",
                (shift, session_id, w),
            )
            self._insert_rows(conn, session_id, last + 1, compaction.messages, "compaction")
            self._insert_archive(conn, session_id, compaction, now)
            conn.execute(
                "UPDATE wk_sessions SET last_seq = %s, generation = generation + 1, "
                "compactions = compactions + 1, guard_state = %s, previous_summary = %s, "
                "updated_at = %s WHERE id = %s",
                (last + shift, compaction.guard_state, _opt(compaction.previous_summary),
                 now, session_id),
            )  # fmt: skip
            return CommitOutcome(True, session_id, record.generation + 1)

    def _rotate(self, conn: Conn, record: SessionRecord, compaction: Compaction) -> CommitOutcome:
        now = self._clock()
        conn.execute(
            "UPDATE wk_sessions SET ended_at = %s, end_reason = %s, updated_at = %s, "
            "generation = generation + 1 WHERE id = %s",
            (now, END_REASON_COMPRESSION, now, record.id),
        )
        newer = conn.execute(
            "SELECT body FROM wk_messages WHERE session_id = %s AND active AND seq > %s "
            "ORDER BY seq",
            (record.id, compaction.watermark),
        ).fetchall()
        messages = [*compaction.messages, *(load_message(str(b)) for (b,) in newer)]
        child = self._new_session(conn, record.id, record.title, now)
        last = self._insert_rows(conn, child, 1, messages, "compaction")
        self._insert_archive(conn, child, compaction, now)
        conn.execute(
            "UPDATE wk_sessions SET last_seq = %s, guard_state = %s, previous_summary = %s "
            "WHERE id = %s",
            (last, compaction.guard_state, _opt(compaction.previous_summary), child),
        )
        return CommitOutcome(True, child, 0)

    @staticmethod
    def _insert_archive(conn: Conn, session_id: str, compaction: Compaction, now: float) -> None:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO wk_archive (session_id, handle, kind, text, body, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_id, handle) DO NOTHING",
                [
                    (session_id, handle, kind, _text(text), dump_message(message), now)
                    for handle, kind, text, message in compaction.archive
                ],
            )

    def save_state(
        self, session_id: str, *, guard_state: str | None, previous_summary: str | None
    ) -> None:
        with self._tx() as conn:
            self._session(conn, session_id, lock=True)
            conn.execute(
                "UPDATE wk_sessions SET guard_state = %s, previous_summary = %s, "
                "updated_at = %s WHERE id = %s",
                (guard_state, _opt(previous_summary), self._clock(), session_id),
            )

    def archived(self, session_id: str, handles: Sequence[str] | None = None) -> list[ArchiveEntry]:
        sql = "SELECT handle, kind, text, body, created_at FROM wk_archive WHERE session_id = %s"
        with self._tx() as conn:
            self._session(conn, session_id)
            if handles is None:
                rows = conn.execute(sql + " ORDER BY id", (session_id,)).fetchall()
            else:
                wanted = list(dict.fromkeys(handles))
                found = conn.execute(sql + " AND handle = ANY(%s)", (session_id, wanted)).fetchall()
                by_handle = {row[0]: row for row in found}
                rows = [by_handle[h] for h in wanted if h in by_handle]
        return [
            ArchiveEntry(session_id, str(h), str(k), str(t), load_message(str(b)), float(c))
            for h, k, t, b, c in rows
        ]

    def search_archive(
        self, query: str, *, session_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        terms = query_terms(query)
        if not terms:
            return []
        # Terms are letters and digits only, so joining them cannot inject tsquery syntax.
        tsquery = " & ".join(terms)
        where = "" if session_id is None else " AND session_id = %s"
        params: tuple[object, ...] = (tsquery,) if session_id is None else (tsquery, session_id)
        with self._tx() as conn:
            if session_id is not None:
                self._session(conn, session_id)
            rows = conn.execute(
                "SELECT session_id, handle, kind, text, ts_rank(tsv, q) AS rank "
                "FROM wk_archive, to_tsquery('simple'::regconfig, %s) q "
                f"WHERE tsv @@ q{where} ORDER BY rank DESC, id LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [
            SearchHit(str(s), str(h), str(k), snippet(str(t), terms), float(r))
            for s, h, k, t, r in rows
        ]

    def acquire_lock(self, session_id: str, holder: str, *, ttl: float = LOCK_TTL) -> bool:
        now = self._clock()
        with self._tx() as conn:
            row = conn.execute(
                "INSERT INTO wk_locks (session_id, holder, expires_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, "
                "expires_at = EXCLUDED.expires_at "
                "WHERE wk_locks.expires_at <= %s OR wk_locks.holder = EXCLUDED.holder "
                "RETURNING holder",
                (session_id, holder, now + ttl, now),
            ).fetchone()
            return row is not None

    def release_lock(self, session_id: str, holder: str) -> bool:
        with self._tx() as conn:
            cursor = conn.execute(
                "DELETE FROM wk_locks WHERE session_id = %s AND holder = %s",
                (session_id, holder),
            )
            return cursor.rowcount == 1


def _opt(text: str | None) -> str | None:
    return None if text is None else _text(text)
