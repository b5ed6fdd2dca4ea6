"""The compression lease and the integrity check of the SQL backends, written once.

A mixin of :class:`~windowkeeper.store.sqlbase.SQLStore` (which supplies transactions and
the canonical-SQL rewriting); the liveness rules are :mod:`windowkeeper.store.lease`'s.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from .base import LOCK_TTL, Lease, Migration, StoreCheck, StoreDamageError
from .damage import check_values
from .lease import holder_alive
from .sqlhooks import SQLHooks
from .sqltypes import C

__all__ = ("SQLMaintenance",)

# Taken when free, expired, renewed by its holder, stale (two promised heartbeats missed)
# or held by the holder given last, one known to be dead. A new holder starts with no
# heartbeat promise; a renewal keeps its promise and when it was acquired.
_LOCK_UPSERT = (
    "INSERT INTO wk_locks (session_id, holder, expires_at, acquired_at, heartbeat_at) "
    "VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, "
    "expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at, "
    "acquired_at = CASE WHEN wk_locks.holder = excluded.holder "
    "THEN wk_locks.acquired_at ELSE excluded.acquired_at END, "
    "heartbeat_every = CASE WHEN wk_locks.holder = excluded.holder "
    "THEN wk_locks.heartbeat_every ELSE NULL END "
    "WHERE wk_locks.expires_at <= ? OR wk_locks.holder = excluded.holder "
    "OR (wk_locks.heartbeat_every IS NOT NULL "
    "AND wk_locks.heartbeat_at + 2 * wk_locks.heartbeat_every <= ?) "
    "OR wk_locks.holder = ?"
)


# The name of every table, index and trigger a migration creates: what the store needs.
_CREATED = re.compile(
    r"CREATE\s+(?:UNIQUE\s+|VIRTUAL\s+)?(TABLE|INDEX|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
    re.IGNORECASE,
)


def required_objects(migrations: Sequence[Migration]) -> dict[str, str]:
    """``{name: "table" | "index" | "trigger"}`` of everything ``migrations`` create,
    read from their DDL so the check cannot drift from the schema."""
    return {
        match[2]: match[1].lower()
        for migration in migrations
        for statement in migration.statements
        for match in _CREATED.finditer(statement)
    }


def _missing_detail(missing: dict[str, str]) -> str:
    listed = ", ".join(f"{kind} {name}" for name, kind in sorted(missing.items()))
    return (
        f"the store lacks {listed}, which windowkeeper needs (archive search and compaction "
        "fail without it): restore the store from a backup, or export its sessions with "
        "`windowkeeper sessions export` and import them into a new store"
    )


def _float(value: object) -> float | None:
    return None if not isinstance(value, int | float) else float(value)


class SQLMaintenance(SQLHooks[C]):
    """Lease and check methods over the store's transactions and dialect hooks."""

    _MIGRATIONS: ClassVar[tuple[Migration, ...]]
    """The dialect's schema steps, applied in order (see ``SQLStore._migrate``)."""

    def _upsert_lock(self, conn: C, sql: str, params: Sequence[Any]) -> bool:
        """Run the native lease upsert; True when it inserted or updated the row."""
        return conn.execute(sql, params).rowcount == 1

    def _integrity(self, conn: C, quick: bool) -> str | None:
        """The backend's own integrity check: a one-line problem, or ``None``."""
        return None

    @abc.abstractmethod
    def _schema_names(self, conn: C) -> set[str]:
        """Names of the tables, indexes and triggers the database holds."""

    def _iterate(self, conn: C, sql: str) -> Iterator[Any]:
        """Rows of native ``sql``, streamed where the driver would otherwise buffer them."""
        yield from conn.execute(sql).fetchall()

    def check(self, *, quick: bool = False) -> StoreCheck:
        """The backend's integrity check, then every stored value decoded, in one read
        (``quick``: the backend's quick check alone)."""
        try:
            return self._check(quick)
        except StoreDamageError as exc:  # the check itself hit the damage
            return StoreCheck(False, exc.reason)

    def _check(self, quick: bool) -> StoreCheck:
        with self._tx("read") as conn:
            problem = self._integrity(conn, quick)
            if problem is not None:
                return StoreCheck(False, problem)
            if quick:
                return StoreCheck(True, "the quick check passed")
            present = self._schema_names(conn)
            required = required_objects(self._MIGRATIONS)
            missing = {name: kind for name, kind in required.items() if name not in present}
            if missing:
                return StoreCheck(False, _missing_detail(missing))
            return check_values(
                self._iterate(conn, "SELECT id, guard_state FROM wk_sessions ORDER BY id"),
                self._iterate(conn, "SELECT session_id, seq, body FROM wk_messages "
                              "ORDER BY session_id, seq"),
                self._iterate(conn, "SELECT session_id, handle, body FROM wk_archive ORDER BY id"),
            )  # fmt: skip

    def acquire_lock(self, session_id: str, holder: str, *, ttl: float = LOCK_TTL) -> bool:
        now = self._clock()
        with self._tx() as conn:
            current = self._run(
                conn, "SELECT holder FROM wk_locks WHERE session_id = ?", (session_id,)
            ).fetchone()
            other = str(current[0]) if current is not None else holder
            dead = other if other != holder and holder_alive(other) is False else ""
            return self._upsert_lock(
                conn,
                self._sql(_LOCK_UPSERT),
                (session_id, holder, now + ttl, now, now, now, now, dead),
            )

    def heartbeat(self, session_id: str, holder: str, *, every: float) -> bool:
        with self._tx() as conn:
            cursor = self._run(
                conn,
                "UPDATE wk_locks SET heartbeat_at = ?, heartbeat_every = ? "
                "WHERE session_id = ? AND holder = ?",
                (self._clock(), every, session_id, holder),
            )
            return cursor.rowcount == 1

    def lease(self, session_id: str) -> Lease | None:
        with self._tx("read") as conn:
            row = self._run(
                conn,
                "SELECT holder, expires_at, acquired_at, heartbeat_at, heartbeat_every "
                "FROM wk_locks WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            return None
        expires, acquired, beat, every = (_float(v) for v in row[1:])
        return Lease(str(row[0]), expires or 0.0, acquired, beat, every, self._clock())

    def release_lock(self, session_id: str, holder: str) -> bool:
        with self._tx() as conn:
            cursor = self._run(
                conn,
                "DELETE FROM wk_locks WHERE session_id = ? AND holder = ?",
                (session_id, holder),
            )
            return cursor.rowcount == 1
