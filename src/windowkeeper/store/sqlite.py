"""SQLite session store (the default): WAL journal, FTS5 archive search.

Concurrency model: every write is a ``BEGIN IMMEDIATE`` transaction, so writers from any
number of processes are serialized by SQLite's database lock (waiting up to
``busy_timeout``) and a compaction commit is all-or-nothing even if the process is
killed mid-way (the WAL never exposes a half-written transaction). Reads run in a
deferred transaction, so a snapshot's record and rows agree.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, ClassVar

from ..core.errors import StoreError
from .base import Clock, Migration, StoreDamageError, StoreMissingError, StoreOutdatedError
from .sqlbase import Mode
from .sqlkeyed import KEYED_SQLITE, KeyedSQLStore
from .sqlprepared import prepared_migration
from .sqlundo import COMPACTION_LOG

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
    KEYED_SQLITE,
    Migration("m007_lease_heartbeat", (
        # When the holder took the lease, its last heartbeat, and the interval it promised
        # (NULL: none promised, only the TTL applies): a dead holder is taken over early.
        "ALTER TABLE wk_locks ADD COLUMN acquired_at REAL",
        "ALTER TABLE wk_locks ADD COLUMN heartbeat_at REAL",
        "ALTER TABLE wk_locks ADD COLUMN heartbeat_every REAL",
    )),
    Migration("m008_compaction_log", (
        # One row per in-place compaction: what it replaced and wrote, for diff and undo.
        "CREATE TABLE wk_compactions ("
        + COMPACTION_LOG.format(int="INTEGER", real="REAL") + ")",
    )),
    prepared_migration("INTEGER", "REAL"),
)  # fmt: skip


_BEGIN: dict[Mode, str] = {"write": "IMMEDIATE", "read": "DEFERRED", "snapshot": "DEFERRED"}


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch the file to WAL, waiting out openers that hold the lock.

    Changing the journal mode needs an exclusive lock, and SQLite reports a conflict
    with a concurrent first open as "locked" at once instead of calling the busy handler,
    so the wait is done here, bounded by the connection's own timeout.
    """
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            locked = "locked" in str(exc) or "busy" in str(exc)
            if not locked or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


_HEADER = b"SQLite format 3\x00"


def file_problem(path: str) -> StoreDamageError | None:
    """Why the file at ``path`` is not a usable SQLite database, read from its header
    (cheap: 100 bytes and the size), or ``None``. Catches a 0-byte file, a file of
    another kind and a truncated database; damage inside pages needs :meth:`check`."""
    where = f"SQLite store {path}"
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        return StoreDamageError(f"{where}: cannot read it: {exc.strerror}", advice=False)
    if size == 0:
        return StoreDamageError(
            f"{where}: it is empty (0 bytes), not a windowkeeper store: remove it or use "
            "another path",
            advice=False,
        )
    if not header.startswith(_HEADER):
        return StoreDamageError(
            f"{where}: it is not a windowkeeper store (not an SQLite database): use another path",
            advice=False,
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65_536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count is valid when its "version-valid-for" matches the change counter.
    # A process killed while it checkpoints may leave page 1 (with the new count) written
    # and the file not yet grown; the write-ahead log (or a hot journal) beside it still
    # holds those pages, and SQLite finishes the job on the next open: not damage.
    counted = header[92:96] == header[24:28] and not _has_log(path)
    short = len(header) < 100 or (counted and size < pages * page_size)
    if short or page_size < 512 or size % page_size:
        return StoreDamageError(f"{where}: it is truncated or damaged ({size:,} bytes)")
    return None


def _has_log(path: str) -> bool:
    """Whether a non-empty write-ahead log or rollback journal lies beside ``path``."""
    for suffix in ("-wal", "-journal"):
        with suppress(OSError):
            if os.path.getsize(path + suffix) > 0:
                return True
    return False


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with suppress(FileNotFoundError):
            os.unlink(path + suffix)


def _create_atomically(path: str, clock: Clock, timeout: float) -> None:
    """Create a migrated store at ``path`` without ever showing a half-made file there.

    The store is built under a temporary name and hard-linked into place, so a process
    that finds ``path`` finds a whole store (and an empty file there is always damage);
    a racing creator that links first wins and this one uses its store.
    """
    temporary = f"{path}.{uuid.uuid4().hex[:8]}.creating"
    try:
        SQLiteStore(temporary, clock=clock, timeout=timeout, _fresh=True).close()
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process created it first: use theirs
        except OSError:
            # No hard links on this filesystem: a rename, which only races with another
            # creator of the same new file (both stores are empty and whole).
            if not os.path.exists(path):
                os.replace(temporary, path)
    finally:
        _remove(temporary)


def _read_only_uri(path: str) -> str:
    """A ``file:`` URI opening ``path`` read-only (``mode=ro``).

    On a read-only file system SQLite cannot create the WAL's shared-memory file a
    read-only reader otherwise needs, so the file is opened ``immutable=1`` there: no
    locks, no log. That holds because nothing can write a file on such a file system.
    """
    query = "mode=ro"
    with suppress(OSError):
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            query += "&immutable=1"
    return f"{Path(os.path.abspath(path)).as_uri()}?{query}"


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite may already have rolled back (e.g. on SQLITE_FULL); a second ROLLBACK fails.
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _mapped(path: str, exc: sqlite3.Error, what: str = "SQLite store") -> StoreError:
    """A driver error as our StoreError; a damaged file says so and what to do."""
    text = " ".join(str(exc).split())
    if isinstance(exc, sqlite3.DatabaseError) and (
        "malformed" in text or "not a database" in text or "corrupt" in text
    ):
        return StoreDamageError(f"{what} {path}: {text}")
    return StoreError(f"{what} {path}: {text}")


class SQLiteStore(KeyedSQLStore[sqlite3.Connection]):
    """A store in one SQLite file; safe to share between threads and processes."""

    _MIGRATIONS = MIGRATIONS
    _MIGRATIONS_TABLE = (
        "CREATE TABLE IF NOT EXISTS wk_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    _ARCHIVE_INSERT = (
        "INSERT OR IGNORE INTO wk_archive "
        "(session_id, handle, kind, text, body, created_at) VALUES (?, ?, ?, ?, ?, ?)"
    )
    _TOKENS: ClassVar[dict[str, str]] = {"true": "1", "false": "0", "=true": " = 1"}

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock = time.time,
        timeout: float = 30.0,
        create: bool = True,
        read_only: bool = False,
        _fresh: bool = False,
    ) -> None:
        self.path = str(path)
        self.read_only = read_only
        self._clock = clock
        self._mutex = threading.RLock()
        self._closed = True
        if not _fresh and self.path != ":memory:":
            if not os.path.exists(self.path):
                if not create or read_only:
                    raise StoreMissingError(self.path)
                _create_atomically(self.path, clock, timeout)
            problem = file_problem(self.path)
            if problem is not None:
                raise problem
        self._fresh = _fresh
        target, uri = (_read_only_uri(self.path), True) if read_only else (self.path, False)
        try:
            self._conn = sqlite3.connect(
                target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store {self.path}: {exc}") from exc
        self._closed = False
        try:
            self._prepare(timeout)
        except (StoreDamageError, StoreOutdatedError):
            self.close()
            raise
        except (sqlite3.Error, StoreError) as exc:
            self.close()
            if isinstance(exc, sqlite3.Error):
                raise _mapped(self.path, exc, "cannot open SQLite store") from exc
            raise StoreError(f"cannot open SQLite store {self.path}: {exc}") from exc

    def _prepare(self, timeout: float) -> None:
        if self.read_only:  # nothing may be written: no journal switch, no migration
            self._verify_version(f"SQLite store {self.path}")
            return
        _enable_wal(self._conn, timeout)
        # NORMAL is crash-safe in WAL mode (a killed process never corrupts the file;
        # only an OS crash may lose the last commits).
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    # --- the dialect -----------------------------------------------------------------

    @contextmanager
    def _tx(self, mode: Mode = "write") -> Iterator[sqlite3.Connection]:
        """One transaction; sqlite3 errors become StoreError, anything raised rolls back.

        Writes begin IMMEDIATE: the database lock serializes every writer (so no row lock
        is needed), reads begin DEFERRED.
        """
        with self._mutex:
            if self._closed:
                raise StoreError("the store is closed")
            conn = self._conn
            try:
                conn.execute(f"BEGIN {_BEGIN[mode]}")
            except sqlite3.Error as exc:
                raise _mapped(self.path, exc) from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise _mapped(self.path, exc) from exc
            except BaseException:
                _rollback(conn)
                raise

    def _before_migrate(self, conn: sqlite3.Connection) -> None:
        """Refuse a database that is not a windowkeeper store (unless creating one)."""
        if self._fresh:
            return
        found = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'wk_migrations'"
        ).fetchone()[0]
        if not found:
            raise StoreDamageError(
                f"SQLite store {self.path}: it is an SQLite database but not a windowkeeper "
                "store (no wk_migrations table): use another path",
                advice=False,
            )

    def _integrity(self, conn: sqlite3.Connection, quick: bool) -> str | None:
        rows = conn.execute(f"PRAGMA {'quick_check' if quick else 'integrity_check'}").fetchall()
        found = [str(row[0]) for row in rows if str(row[0]) != "ok"]
        if not found:
            return None
        more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
        return f"SQLite's integrity check failed: {' '.join(found[0].split())[:160]}{more}"

    def _schema_names(self, conn: sqlite3.Connection) -> set[str]:
        return {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}

    def _iterate(self, conn: sqlite3.Connection, sql: str) -> Iterator[Any]:
        yield from conn.execute(sql)  # sqlite3 cursors stream

    def close(self) -> None:
        with self._mutex:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def _executemany(
        self, conn: sqlite3.Connection, sql: str, rows: Sequence[Sequence[Any]]
    ) -> None:
        conn.executemany(sql, rows)

    def _select_handles(
        self, conn: sqlite3.Connection, sql: str, session_id: str, handles: Sequence[str]
    ) -> list[Any]:
        return [
            row
            for handle in handles
            for row in conn.execute(sql + " AND handle = ?", (session_id, handle))
        ]

    def _search(
        self, conn: sqlite3.Connection, terms: Sequence[str], session_id: str | None, limit: int
    ) -> list[tuple[Any, ...]]:
        match = " ".join(f'"{term}"' for term in terms)
        where = "" if session_id is None else " AND a.session_id = ?"
        params: tuple[object, ...] = (match,) if session_id is None else (match, session_id)
        rows = conn.execute(
            "SELECT a.session_id, a.handle, a.kind, a.text, bm25(wk_archive_fts) "
            "FROM wk_archive_fts JOIN wk_archive a ON a.id = wk_archive_fts.rowid "
            f"WHERE wk_archive_fts MATCH ?{where} ORDER BY 5 LIMIT ?",
            (*params, limit),
        ).fetchall()
        # bm25() is lower for better matches; hits score higher for better ones.
        return [(s, h, k, t, -rank) for s, h, k, t, rank in rows]
