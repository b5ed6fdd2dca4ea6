"""Store URLs (SQLAlchemy convention), read-only opening, and the schema part of ``check``."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from _workers import round_messages
from typer.testing import CliRunner

from windowkeeper.cli.sessions import sessions_app
from windowkeeper.core.errors import StoreError
from windowkeeper.store import StoreMissingError, open_store, sqlite_path

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(sessions_app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _stored(url: str) -> str:
    with open_store(url) as store:
        return store.create_session(round_messages("a"), title="t").id


# --- URLs -------------------------------------------------------------------------------


def test_three_slashes_are_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _stored("sqlite:///wk.db")
    assert (tmp_path / "wk.db").is_file()
    assert sqlite_path("sqlite:///wk.db") == Path("wk.db")
    assert sqlite_path("sqlite:///sub/wk.db") == Path("sub/wk.db")


def test_four_slashes_are_absolute(tmp_path: Path) -> None:
    target = tmp_path / "abs.db"
    assert sqlite_path(f"sqlite:///{target}") == target  # the absolute path's own slash
    _stored(f"sqlite:///{target}")
    assert target.is_file()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite://host/wk.db"])
def test_a_url_naming_no_file_says_both_forms(url: str) -> None:
    with pytest.raises(StoreError) as raised:
        open_store(url)
    text = str(raised.value)
    assert repr(url) in text and "sqlite:///wk.db" in text and "sqlite:////absolute" in text


def test_errors_show_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run("show", "x", "--store", "sqlite:///missing.db")
    assert code == 2 and err.count("\n") == 1
    assert "no store at missing.db" in err and "//" not in err
    code, _, err = run("show", "x", "--store", f"sqlite:///{tmp_path}/gone.db")
    assert code == 2 and f"no store at {tmp_path}/gone.db " in err


# --- read-only commands -----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["show", "x"],
        ["search", "needle"],
        ["recall", "wk00000000c1"],
        ["export", "x"],
        ["check"],
    ],
)
def test_read_only_commands_create_nothing(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(*args, "--store", "sqlite:///missing.db")
    assert list(tmp_path.iterdir()) == []
    assert code == (0 if args[0] in ("list", "search") else 2)  # nothing to list is no error
    assert "no store at missing.db" in out + err
    assert (out + err).count("\n") == 1


def test_read_only_open_refuses_writes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wk.db'}"
    _stored(url)
    with open_store(url, read_only=True) as store:
        assert len(store.list_sessions()) == 1
        with pytest.raises(StoreError, match="readonly"):
            store.create_session(round_messages("b"))
    with pytest.raises(StoreMissingError):
        open_store(f"sqlite:///{tmp_path / 'none.db'}", read_only=True)
    assert not (tmp_path / "none.db").exists()


def test_read_only_open_of_an_older_store_upgrades_it_once(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _stored(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM wk_migrations WHERE name = 'm007_lease_heartbeat'")
        conn.execute("DROP TABLE wk_locks")
        conn.execute("CREATE TABLE wk_locks (session_id TEXT PRIMARY KEY, holder TEXT NOT NULL, "
                     "expires_at REAL NOT NULL)")  # fmt: skip
    with open_store(f"sqlite:///{path}", read_only=True) as store:
        assert store.applied_migrations()[-1] == "m007_lease_heartbeat"
        assert len(store.list_sessions()) == 1


def test_postgres_read_only_refuses_an_empty_database_and_writes(postgres_url: str) -> None:
    with pytest.raises(StoreMissingError, match="PostgreSQL"):
        open_store(postgres_url, read_only=True)
    with psycopg.connect(postgres_url) as conn:  # the read-only open created nothing
        assert conn.execute("SELECT to_regclass('wk_migrations')").fetchone() == (None,)
    _stored(postgres_url)
    with open_store(postgres_url, read_only=True) as store:
        assert len(store.list_sessions()) == 1
        with pytest.raises(StoreError, match="read-only transaction"):
            store.create_session(round_messages("b"))


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs remounted read-only (needs root and ``mount``; skipped otherwise)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a read-only file system needs root and mount(8)")
    mount = tmp_path / "ro"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_store_on_a_read_only_file_system_is_listed_and_checked(read_only_mount: Path) -> None:
    url = f"sqlite:///{read_only_mount / 'wk.db'}"
    sid = _stored(url)
    subprocess.run(["mount", "-o", "remount,ro", str(read_only_mount)], check=True)
    code, out, err = run("list", "--store", url)
    assert code == 0 and sid in out, err
    code, out, err = run("check", "--store", url)
    assert code == 0 and out.startswith("ok: 1 sessions"), err
    code, out, err = run("show", sid, "--store", url)
    assert code == 0 and sid in out, err


# --- check: every table and index -------------------------------------------------------


@pytest.mark.parametrize(
    "drop", ["DROP TABLE wk_archive_fts", "DROP INDEX wk_messages_active",
             "DROP TRIGGER wk_archive_fts_insert"],
)  # fmt: skip
def test_check_names_a_missing_sqlite_object(drop: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'wk.db'}"
    _stored(url)
    with sqlite3.connect(tmp_path / "wk.db") as conn:
        conn.execute(drop)
    name = drop.split()[-1]
    code, _, err = run("check", "--store", url)
    assert code == 2 and err.count("\n") == 1
    assert f"{drop.split()[1].lower()} {name}" in err and "sessions export" in err


def test_check_names_a_missing_postgres_index(postgres_url: str) -> None:
    _stored(postgres_url)
    code, out, _ = run("check", "--store", postgres_url)
    assert code == 0 and out.startswith("ok:")
    with psycopg.connect(postgres_url) as conn:
        conn.execute("DROP INDEX wk_archive_tsv")
    code, _, err = run("check", "--store", postgres_url)
    assert code == 2 and "index wk_archive_tsv" in err and "backup" in err
