"""Ordered, named migrations: fresh databases reach head, re-running is a no-op."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from windowkeeper.store import SQLiteStore, open_store
from windowkeeper.store import memory as memory_backend
from windowkeeper.store import sqlite as sqlite_backend


def test_sqlite_fresh_then_reapplied(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    names = [m.name for m in sqlite_backend.MIGRATIONS]
    assert names == sorted(names) and len(set(names)) == len(names)
    with SQLiteStore(path) as store:
        assert store.applied_migrations() == names
        sid = store.create_session([{"role": "user", "content": "kept"}]).id
    with SQLiteStore(path) as store:  # re-applying changes nothing and keeps data
        assert store.applied_migrations() == names
        assert store.load(sid).messages == [{"role": "user", "content": "kept"}]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM wk_migrations").fetchone()[0] == len(names)
    finally:
        conn.close()


def test_sqlite_upgrade_from_an_older_schema_backfills_search(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("CREATE TABLE wk_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        for migration in sqlite_backend.MIGRATIONS[:3]:  # a store from before archive search
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute("INSERT INTO wk_migrations VALUES (?, 0)", (migration.name,))
        conn.execute("INSERT INTO wk_sessions (id, created_at, updated_at) VALUES ('s', 0, 0)")
        conn.execute(
            "INSERT INTO wk_archive (session_id, handle, kind, text, body, created_at) "
            "VALUES ('s', 'wk00000000c1', 'message', 'legacy needle text', '{}', 0)"
        )
    finally:
        conn.close()
    with SQLiteStore(path) as store:
        later = [m.name for m in sqlite_backend.MIGRATIONS[3:]]  # search, locks and after
        assert store.applied_migrations()[3:] == later and "m004_archive_fts" in later
        assert [h.handle for h in store.search_archive("needle")] == ["wk00000000c1"]


def test_sqlite_concurrent_first_open(tmp_path: Path) -> None:
    # A lost race shows up in a few percent of single rounds, so run many fresh files.
    for round_ in range(40):
        path = tmp_path / f"race{round_}.db"
        errors: list[BaseException] = []

        def open_once(path: Path = path, errors: list[BaseException] = errors) -> None:
            try:
                SQLiteStore(path).close()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_once) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], f"round {round_}"
        with SQLiteStore(path) as store:
            assert store.applied_migrations() == [m.name for m in sqlite_backend.MIGRATIONS]


def test_postgres_fresh_then_reapplied(postgres_url: str) -> None:
    from windowkeeper.store import postgres as postgres_backend

    names = [m.name for m in postgres_backend.MIGRATIONS]
    assert names == sorted(names)
    with postgres_backend.PostgresStore(postgres_url) as store:
        assert store.applied_migrations() == names
        sid = store.create_session([{"role": "user", "content": "kept"}]).id
    with postgres_backend.PostgresStore(postgres_url) as store:
        assert store.applied_migrations() == names
        assert store.load(sid).messages == [{"role": "user", "content": "kept"}]


def test_postgres_upgrade_from_an_older_schema(postgres_url: str) -> None:
    import psycopg

    from windowkeeper.store import postgres as postgres_backend

    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE TABLE wk_migrations (name TEXT PRIMARY KEY, applied_at FLOAT8)")
        for migration in postgres_backend.MIGRATIONS[:3]:
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute("INSERT INTO wk_migrations VALUES (%s, 0)", (migration.name,))
        conn.execute("INSERT INTO wk_sessions (id, created_at, updated_at) VALUES ('s', 0, 0)")
        conn.execute(
            "INSERT INTO wk_archive (session_id, handle, kind, text, body, created_at) "
            "VALUES ('s', 'wk00000000c1', 'message', 'legacy needle text', '{}', 0)"
        )
    with postgres_backend.PostgresStore(postgres_url) as store:
        later = [m.name for m in postgres_backend.MIGRATIONS[3:]]  # search, locks and after
        assert store.applied_migrations()[3:] == later and "m004_archive_search" in later
        assert [h.handle for h in store.search_archive("needle")] == ["wk00000000c1"]


def test_memory_reports_its_trivial_migration() -> None:
    assert [m.name for m in memory_backend.MIGRATIONS] == ["m001_initial"]


@pytest.mark.parametrize("url", ["ftp://x", "sqlite://", "nonsense"])
def test_bad_urls_are_store_errors(url: str) -> None:
    from windowkeeper.core.errors import StoreError

    with pytest.raises(StoreError, match=r"sqlite|URL"):
        open_store(url)


def test_default_url_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from windowkeeper.store import default_store_url

    monkeypatch.delenv("WINDOWKEEPER_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_url() == f"sqlite:///{tmp_path}/windowkeeper/sessions.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_store_url().endswith("home/.local/share/windowkeeper/sessions.db")
    monkeypatch.setenv("WINDOWKEEPER_STORE", "memory://")
    assert default_store_url() == "memory://"
    with open_store() as store:
        assert store.list_sessions() == []
