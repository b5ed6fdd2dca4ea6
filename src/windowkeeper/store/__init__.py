"""Durable sessions (design §7): pick a backend by URL with :func:`open_store`.

``memory://`` (in-process), ``sqlite:///sessions.db`` (the default backend; three
slashes: relative to the working directory, four: ``sqlite:////abs/sessions.db``) or
``postgresql://user@host/db`` (needs the ``postgres`` extra). Without a URL the store is
``$WINDOWKEEPER_STORE``, else SQLite at ``$XDG_DATA_HOME/windowkeeper/sessions.db``
(``~/.local/share/windowkeeper/sessions.db`` when XDG_DATA_HOME is unset).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ..core.errors import StoreError
from .base import (
    LOCK_TTL,
    ArchiveEntry,
    Clock,
    CommitOutcome,
    Compaction,
    CompactionRecord,
    Migration,
    SearchHit,
    SessionRecord,
    SessionStore,
    Snapshot,
    StoreCheck,
    StoreDamageError,
    StoredRow,
    StoreMissingError,
    StoreOutdatedError,
    UndoOutcome,
    UnknownSessionError,
)
from .keyed import AppendOutcome, KeyedRecord, KeyedSessions
from .memory import MemoryStore
from .prepared import PreparedCompactions, PreparedRecord, PreparedState
from .recall import RecallTool
from .session import (
    StoredCompaction,
    compact_session,
    compress_stored,
    lineage,
    resolve_handle,
    restore_state,
    save_state,
)
from .sqlite import SQLiteStore
from .undo import CompactionDiff, ReplacedMessage, compaction_diff

__all__ = [
    "LOCK_TTL",
    "AppendOutcome",
    "ArchiveEntry",
    "Clock",
    "CommitOutcome",
    "Compaction",
    "CompactionDiff",
    "CompactionRecord",
    "KeyedRecord",
    "KeyedSessions",
    "MemoryStore",
    "Migration",
    "PreparedCompactions",
    "PreparedRecord",
    "PreparedState",
    "RecallTool",
    "ReplacedMessage",
    "SQLiteStore",
    "SearchHit",
    "SessionRecord",
    "SessionStore",
    "Snapshot",
    "StoreCheck",
    "StoreDamageError",
    "StoreMissingError",
    "StoreOutdatedError",
    "StoredCompaction",
    "StoredRow",
    "UndoOutcome",
    "UnknownSessionError",
    "compact_session",
    "compaction_diff",
    "compress_stored",
    "default_store_url",
    "lineage",
    "open_store",
    "resolve_handle",
    "restore_state",
    "save_state",
    "sqlite_path",
]

STORE_ENV = "WINDOWKEEPER_STORE"


def default_store_url() -> str:
    """``$WINDOWKEEPER_STORE``, else SQLite in the user's data directory."""
    configured = os.environ.get(STORE_ENV, "").strip()
    if configured:
        return configured
    data_home = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(data_home) if data_home else Path.home() / ".local" / "share"
    return f"sqlite:///{base / 'windowkeeper' / 'sessions.db'}"


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite://`` URL names, by SQLAlchemy's convention: ``sqlite:///wk.db``
    is ``wk.db`` in the working directory, ``sqlite:////abs/wk.db`` is ``/abs/wk.db``.

    Raises:
        StoreError: the URL names no file, or a host (``sqlite://host/…``).
    """
    rest = url.removeprefix("sqlite://")
    if not rest.startswith("/") or rest.strip("/") == "":
        raise StoreError(
            f"store URL {url!r} names no file; use sqlite:///wk.db (relative to the working "
            "directory) or sqlite:////absolute/path/wk.db"
        )
    return Path(rest[1:])


def open_store(
    url: str | None = None,
    *,
    clock: Clock = time.time,
    create: bool = True,
    read_only: bool = False,
) -> SessionStore:
    """Open (and migrate) the store named by ``url``; see the module docstring.

    With ``create=False`` (commands that only read) a missing SQLite file is not created:
    :class:`StoreMissingError` instead. An existing file that is not a windowkeeper store
    (0 bytes included) or is truncated is refused with :class:`StoreDamageError`.
    ``read_only`` (implies ``create=False``) opens the database read-only: SQLite with
    ``mode=ro`` (``immutable=1`` on a read-only file system), PostgreSQL in read-only
    transactions; a store that needs a migration is migrated first where it can be written.

    Raises:
        StoreError: unsupported URL, missing driver, or the backend cannot be opened.
    """
    url = url or default_store_url()
    if url.startswith("memory://"):
        return MemoryStore(clock=clock)
    if url.startswith("sqlite://"):
        path = sqlite_path(url)
        if (read_only or not create) and not path.exists():
            raise StoreMissingError(str(path))
        if read_only:
            return _read_only(lambda ro: SQLiteStore(path, clock=clock, create=False, read_only=ro))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {path.parent}: {exc.strerror}") from exc
        return SQLiteStore(path, clock=clock, create=create)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:
            raise StoreError(
                "PostgreSQL stores need the postgres extra: pip install 'windowkeeper[postgres]'"
            ) from exc
        return _read_only(lambda ro: PostgresStore(url, clock=clock, read_only=ro), read_only)
    raise StoreError(
        f"unsupported store URL {url!r}; use memory://, sqlite:///PATH or postgresql://…"
    )


def _read_only(opener: Callable[[bool], SessionStore], read_only: bool = True) -> SessionStore:
    """``opener(read_only)``; a store written by an older version is migrated by one
    writable open first (upgrading is not creating), then opened read-only again."""
    if not read_only:
        return opener(False)
    try:
        return opener(True)
    except StoreOutdatedError:
        opener(False).close()
    return opener(True)
