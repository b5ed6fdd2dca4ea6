"""PostgreSQL session store for several agent/gateway processes (the ``postgres`` extra).

Concurrency model: writers of one session serialize on its ``wk_sessions`` row
(``SELECT … FOR UPDATE``), reads run at REPEATABLE READ so a snapshot's record and rows
agree, and a compaction commit is one transaction (a killed client's transaction is
rolled back by the server). Archive search uses a generated ``tsvector`` column with a
GIN index.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import psycopg
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool, PoolTimeout

from ..core.errors import StoreError
from ..core.messages import safe_text
from .base import Clock, Migration, StoreMissingError, StoreOutdatedError, UnknownSessionError
from .sqlbase import Mode
from .sqlkeyed import KEYED_POSTGRES, KeyedSQLStore
from .sqlprepared import prepared_migration
from .sqlundo import COMPACTION_LOG

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
    KEYED_POSTGRES,
    Migration("m007_lease_heartbeat", (
        # When the holder took the lease, its last heartbeat, and the interval it promised
        # (NULL: none promised, only the TTL applies): a dead holder is taken over early.
        """ALTER TABLE wk_locks ADD COLUMN acquired_at DOUBLE PRECISION,
            ADD COLUMN heartbeat_at DOUBLE PRECISION,
            ADD COLUMN heartbeat_every DOUBLE PRECISION""",
    )),
    Migration("m008_compaction_log", (
        # One row per in-place compaction: what it replaced and wrote, for diff and undo.
        "CREATE TABLE wk_compactions ("
        + COMPACTION_LOG.format(int="BIGINT", real="DOUBLE PRECISION") + ")",
    )),
    prepared_migration("BIGINT", "DOUBLE PRECISION"),
)  # fmt: skip


_MIGRATION_LOCK = 0x776B6D67  # advisory lock key: concurrent openers migrate one at a time

Conn = psycopg.Connection[TupleRow]


def _text(value: str) -> str:
    # PostgreSQL text cannot hold NUL; the exact original stays in the JSON body.
    return safe_text(value).replace("\x00", "\ufffd")


def _read_only(conn: Conn) -> None:
    # Every transaction of the pooled connection begins READ ONLY: the server itself
    # refuses a write from a command that only reads.
    conn.read_only = True


class PostgresStore(KeyedSQLStore[Conn]):
    """A store in one PostgreSQL database, over a small connection pool."""

    _MIGRATIONS = MIGRATIONS
    _MIGRATIONS_TABLE = (
        "CREATE TABLE IF NOT EXISTS wk_migrations ("
        "name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
    )
    _ARCHIVE_INSERT = (
        "INSERT INTO wk_archive (session_id, handle, kind, text, body, created_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_id, handle) DO NOTHING"
    )
    _TOKENS: ClassVar[dict[str, str]] = {"true": "true", "false": "false", "=true": ""}
    _PLACEHOLDER = "%s"

    def __init__(
        self, conninfo: str, *, clock: Clock = time.time, max_size: int = 4,
        timeout: float = 30.0, read_only: bool = False,
    ) -> None:  # fmt: skip
        self._clock = clock
        self._pool: ConnectionPool[Conn] | None = None
        try:
            # One direct attempt first: an unreachable server or a missing database fails
            # at once with the server's own words, not after the pool's retries and logs.
            with psycopg.connect(conninfo, connect_timeout=10) as probe:
                ours = probe.execute("SELECT to_regclass('wk_migrations')").fetchone()
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split())
            raise StoreError(f"cannot open PostgreSQL store: {reason}") from exc
        if read_only and (ours is None or ours[0] is None):
            raise StoreMissingError("the PostgreSQL database")
        try:
            self._pool = ConnectionPool(
                conninfo, min_size=1, max_size=max_size, timeout=timeout, open=True,
                kwargs={"connect_timeout": 10}, configure=_read_only if read_only else None,
            )  # fmt: skip
            self._pool.wait(timeout=timeout)
            if read_only:
                self._verify_version("PostgreSQL store")
            else:
                self._migrate()
        except StoreOutdatedError:
            self.close()
            raise
        except (psycopg.Error, PoolTimeout, StoreError) as exc:
            self.close()
            raise StoreError(f"cannot open PostgreSQL store: {exc}") from exc

    # --- the dialect -----------------------------------------------------------------

    @contextmanager
    def _tx(self, mode: Mode = "write") -> Iterator[Conn]:
        """One transaction; psycopg errors become StoreError, anything raised rolls back.

        A ``snapshot`` runs at REPEATABLE READ; writers lock the session row instead.
        """
        if self._pool is None:
            raise StoreError("the store is closed")
        try:
            with self._pool.connection() as conn, conn.transaction():
                if mode == "snapshot":
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"PostgreSQL store: {exc}") from exc

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _before_migrate(self, conn: Conn) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))

    def _lock_session_row(self, conn: Conn, session_id: str) -> None:
        found = conn.execute(
            "SELECT 1 FROM wk_sessions WHERE id = %s FOR UPDATE", (session_id,)
        ).fetchone()
        if found is None:
            raise UnknownSessionError(session_id)

    def _text(self, value: str) -> str:
        return _text(value)

    def _integrity(self, conn: Conn, quick: bool) -> str | None:
        """amcheck's B-tree check of our indexes when the extension is installed (creating
        it needs a superuser); reading every row afterwards touches every heap page."""
        installed = "SELECT 1 FROM pg_extension WHERE extname = 'amcheck'"
        if not quick and conn.execute(installed).fetchone():
            indexes = conn.execute(
                "SELECT c.oid, c.relname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                "JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'btree' "
                "AND c.relname LIKE 'wk\\_%%'"
            ).fetchall()
            for oid, name in indexes:
                try:
                    with conn.transaction():  # a savepoint: a failure leaves the read usable
                        conn.execute("SELECT bt_index_check(%s)", (oid,))
                except psycopg.Error as exc:
                    return f"PostgreSQL's amcheck failed on {name}: {' '.join(str(exc).split())}"
        return None

    def _schema_names(self, conn: Conn) -> set[str]:
        # Relations (tables, indexes) of the schema the store's tables resolve to.
        rows = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() UNION SELECT tgname FROM pg_trigger"
        ).fetchall()
        return {str(row[0]) for row in rows}

    def _iterate(self, conn: Conn, sql: str) -> Iterator[Any]:
        with conn.cursor(name="wk_check") as cursor:  # server-side: streamed, not buffered
            cursor.execute(sql)
            yield from cursor

    def _executemany(self, conn: Conn, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with conn.cursor() as cur:
            cur.executemany(sql, rows)

    def _upsert_lock(self, conn: Conn, sql: str, params: Sequence[Any]) -> bool:
        return conn.execute(sql + " RETURNING holder", params).fetchone() is not None

    def _select_handles(
        self, conn: Conn, sql: str, session_id: str, handles: Sequence[str]
    ) -> list[Any]:
        found = conn.execute(sql + " AND handle = ANY(%s)", (session_id, list(handles))).fetchall()
        by_handle = {row[0]: row for row in found}
        return [by_handle[h] for h in handles if h in by_handle]

    def _search(
        self, conn: Conn, terms: Sequence[str], session_id: str | None, limit: int
    ) -> list[tuple[Any, ...]]:
        # Terms are letters and digits only, so joining them cannot inject tsquery syntax.
        tsquery = " & ".join(terms)
        where = "" if session_id is None else " AND session_id = %s"
        params: tuple[object, ...] = (tsquery,) if session_id is None else (tsquery, session_id)
        return conn.execute(
            "SELECT session_id, handle, kind, text, ts_rank(tsv, q) AS rank "
            "FROM wk_archive, to_tsquery('simple'::regconfig, %s) q "
            f"WHERE tsv @@ q{where} ORDER BY rank DESC, id LIMIT %s",
            (*params, limit),
        ).fetchall()
