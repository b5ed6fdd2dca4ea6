"""Store damage is reported, never propagated (issue 10, Deliver 4 and 7).

One table of damage (an invalid JSON row, a bad or wrong-shape guard state, garbage in a
middle page, a truncated file, a 0-byte file, a file that is no store at all), each
through every command that reads the store: one line each, no traceback, and no silent
success (an error line with exit 2, or, for a guard state, a fresh state with a warning).
``sessions check`` runs the backend's integrity check and reports in one line. Commands
that only read never create a store.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from _workers import make_compressor, round_messages

from windowkeeper.cli.app import main
from windowkeeper.store import SessionStore, StoreDamageError, compact_session, open_store
from windowkeeper.store.sqlite import file_problem

Damage = Callable[[Path, str], None]


def _sql(path: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(statement, params)
        conn.commit()
    finally:
        conn.close()


def invalid_json_row(path: Path, sid: str) -> None:
    newest = "(SELECT max(seq) FROM wk_messages WHERE session_id = ? AND active = 1)"
    statement = (
        f'UPDATE wk_messages SET body = \'{{"role": "us\' WHERE session_id = ? AND seq = {newest}'
    )
    _sql(path, statement, sid, sid)


def not_an_object_row(path: Path, sid: str) -> None:
    _sql(path, "UPDATE wk_messages SET body = '[1, 2]' WHERE session_id = ? AND active = 1", sid)


def bad_guard_state(path: Path, sid: str) -> None:
    _sql(path, "UPDATE wk_sessions SET guard_state = 'not json' WHERE id = ?", sid)


def wrong_shape_guard_state(path: Path, sid: str) -> None:
    _sql(path, 'UPDATE wk_sessions SET guard_state = \'{"strikes": "many"}\' WHERE id = ?', sid)


def garbage_page(path: Path, sid: str) -> None:
    size = path.stat().st_size
    page = 4096
    with path.open("r+b") as handle:
        handle.seek((size // page // 2) * page)
        handle.write(bytes(random.Random(1).randrange(256) for _ in range(page)))


def truncated(path: Path, sid: str) -> None:
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2 + 100)


def zero_bytes(path: Path, sid: str) -> None:
    path.write_bytes(b"")


def not_a_store(path: Path, sid: str) -> None:
    path.write_text("these are my notes, not a database\n", encoding="utf-8")


def foreign_database(path: Path, sid: str) -> None:
    path.unlink()
    _sql(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")


DAMAGE: dict[str, Damage] = {
    f.__name__: f
    for f in (invalid_json_row, not_an_object_row, bad_guard_state, wrong_shape_guard_state,
              garbage_page, truncated, zero_bytes, not_a_store, foreign_database)
}  # fmt: skip


def _store(path: Path) -> str:
    """A store with a few compacted sessions; the id of the one in the middle."""
    with open_store(f"sqlite:///{path}") as store:
        ids = []
        for n in range(5):
            sid = store.create_session(round_messages(f"s{n}", rounds=6)).id
            compact_session(store, sid, make_compressor(), force=True)
            store.append_messages(sid, round_messages(f"t{n}", rounds=2))
            ids.append(sid)
    return ids[2]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _commands(url: str, sid: str) -> list[list[str]]:
    return [
        ["sessions", "check", "--store", url],
        ["sessions", "list", "--store", url],
        ["sessions", "show", sid, "--store", url],
        ["sessions", "export", sid, "--store", url],
        ["sessions", "search", "line", "--store", url],
        ["compress", "--session", sid, "--store", url, "--context-length", "12000"],
        ["sessions", "check", "--store", url],
    ]


ROW = ("invalid_json_row", "not_an_object_row")
GUARD = ("bad_guard_state", "wrong_shape_guard_state")


def _expected(damage: str, args: list[str], step: int) -> str:
    """``error`` (exit 2, one line), ``warning`` (exit 0 with one warning) or ``ok``."""
    command = args[1] if args[0] == "sessions" else args[0]
    if damage in GUARD:
        # Only check and compress read the guard state; compress repairs it with a warning.
        if command == "check":
            return "error" if step == 0 else "ok"
        return "warning" if command == "compress" else "ok"
    if damage in ROW:
        # list and search read no message body: they succeed, and say nothing false.
        return "ok" if command in ("list", "search") else "error"
    return "error"  # the file itself is damaged: every command refuses it


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damage_is_one_line_never_a_traceback_never_silent(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.db"
    sid = _store(path)
    DAMAGE[damage](path, sid)
    url = f"sqlite:///{path}"
    for step, args in enumerate(_commands(url, sid)):
        code, out, err = _run(capsys, *args)
        assert "Traceback" not in err + out, (args, err)
        lines = err.splitlines()
        expected = _expected(damage, args, step)
        if expected == "error":
            assert code == 2, (args, code, out, err)
            assert len(lines) == 1 and lines[0].startswith("error: "), (args, err)
            assert "damaged" in err or "not a windowkeeper store" in err, (args, err)
        elif expected == "warning":
            assert code == 0, err
            warned = [line for line in lines if "guard state is damaged" in line]
            assert len(warned) == 1 and sid in warned[0], err
        else:
            assert code == 0 and "error" not in err, (args, err)


@pytest.mark.parametrize("damage", ["invalid_json_row", "not_an_object_row"])
def test_an_undecodable_row_names_its_session_and_row(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.db"
    sid = _store(path)
    DAMAGE[damage](path, sid)
    code, _, err = _run(capsys, "sessions", "show", sid, "--store", f"sqlite:///{path}")
    assert code == 2 and f"session {sid!r}, row " in err
    code, out, err = _run(capsys, "sessions", "check", "--store", f"sqlite:///{path}")
    assert code == 2 and out == "" and f"session {sid!r}, row " in err and err.count("\n") == 1


def test_check_reports_a_whole_store_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.db"
    _store(path)
    code, out, err = _run(capsys, "sessions", "check", "--store", f"sqlite:///{path}")
    assert code == 0 and err == "" and out.count("\n") == 1
    assert out.startswith("ok: 5 sessions, ") and "archive entries decoded" in out


def test_check_on_every_backend(store: SessionStore) -> None:
    sid = store.create_session(round_messages("a")).id
    compact_session(store, sid, make_compressor(), force=True)
    result = store.check()
    assert result.ok and result.sessions == 1 and result.rows > 0, result
    assert store.check(quick=True).ok


def test_read_only_commands_never_create_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "new" / "sessions.db"
    url = f"sqlite:///{path}"
    code, out, _ = _run(capsys, "sessions", "list", "--store", url)
    assert code == 0 and out.startswith("no sessions (no store at ")
    code, out, _ = _run(capsys, "sessions", "search", "refund", "--store", url)
    assert code == 0 and "no archived item matches" in out
    for args in (["sessions", "show", "x"], ["sessions", "export", "x"], ["sessions", "check"],
                 ["sessions", "recall", "wk0123456789"]):  # fmt: skip
        code, _, err = _run(capsys, *args, "--store", url)
        assert code == 2 and err.startswith("error: no store at ") and err.count("\n") == 1
    code, _, err = _run(capsys, "compress", "--session", "x", "--store", url,
                        "--context-length", "8000")  # fmt: skip
    assert code == 2 and "no store at" in err
    assert not path.exists() and not path.parent.exists()


def test_a_zero_byte_file_is_refused_by_the_library(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with pytest.raises(StoreDamageError, match="empty \\(0 bytes\\)"):
        open_store(f"sqlite:///{path}")
    assert path.stat().st_size == 0  # left as it was


def test_a_new_store_appears_whole(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    with open_store(f"sqlite:///{path}") as store:
        assert store.check().ok
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.db"]  # no temporary left


def test_a_checkpoint_cut_short_is_not_damage_while_its_log_is_there(tmp_path: Path) -> None:
    """Killed mid-checkpoint, SQLite may have written page 1 (the new page count) before
    growing the file; the write-ahead log still holds the pages and the next open
    finishes the checkpoint. Without a log, the same file is truncated."""
    path = tmp_path / "sessions.db"
    _store(path)
    header = bytearray(path.read_bytes()[:100])
    pages = int.from_bytes(header[28:32], "big")
    assert header[92:96] == header[24:28]  # the page count is in force
    with path.open("r+b") as handle:
        handle.seek(28)
        handle.write((pages + 8).to_bytes(4, "big"))  # 8 pages more than the file holds
    assert isinstance(file_problem(str(path)), StoreDamageError)
    (tmp_path / "sessions.db-wal").write_bytes(b"\x37\x7f\x06\x82" + bytes(28))
    assert file_problem(str(path)) is None
