"""``windowkeeper sessions …`` in-process: output, round trips and one-line errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from _workers import make_compressor, round_messages
from typer.testing import CliRunner

from windowkeeper.cli import app as cli
from windowkeeper.cli.sessions import compress_session, sessions_app
from windowkeeper.compaction.sanitize import sanitize_tool_pairs
from windowkeeper.core.errors import StoreError
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.core.report import Outcome
from windowkeeper.store import MemoryStore, SessionStore, compact_session, open_store
from windowkeeper.store import session as session_module
from windowkeeper.testing import unused_port

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(sessions_app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def url(durable_url: str) -> str:
    return durable_url


def _import(url: str, tmp_path: Path) -> str:
    source = tmp_path / "in.jsonl"
    # A valid history (the rounds' text and call turns merged): import stores it as is.
    valid = sanitize_tool_pairs(round_messages("a") + round_messages("b")).messages
    source.write_text(dump_jsonl(valid), encoding="utf-8")
    code, out, err = run("import", str(source), "--store", url, "--title", "demo")
    assert code == 0, err
    return out.strip()


def test_import_list_show_export_round_trip(url: str, tmp_path: Path) -> None:
    sid = _import(url, tmp_path)
    code, out, _ = run("list", "--store", url)
    assert code == 0 and sid in out and "demo" in out and "active" in out
    code, out, _ = run("list", "--store", url, "--json")
    assert json.loads(out)[0]["id"] == sid
    code, out, _ = run("show", sid, "--store", url)
    assert code == 0 and f"session {sid}" in out and "bash" in out
    exported = tmp_path / "out.jsonl"
    assert run("export", sid, "--store", url, "-o", str(exported))[0] == 0
    assert exported.read_text(encoding="utf-8") == (tmp_path / "in.jsonl").read_text("utf-8")


def test_search_show_archived_and_full_export(url: str, tmp_path: Path) -> None:
    sid = _import(url, tmp_path)
    with open_store(url) as store:
        compact_session(store, sid, make_compressor(), force=True)
    code, out, _ = run("search", "tokenax1", "--store", url)
    assert code == 0 and sid in out and "tool_output" in out
    code, out, _ = run("search", "tokenax1", "--store", url, "--session", sid, "--limit", "1")
    assert code == 0 and len(out.strip().splitlines()) == 1
    assert "no archived item" in run("search", "absentword", "--store", url)[1]
    code, out, _ = run("show", sid, "--store", url, "--archived")
    assert "[archived]" in out and "archive wk" in out
    code, out, _ = run("export", sid, "--store", url, "--archived")
    data = json.loads(out)
    assert data["session"]["id"] == sid and data["archive"] and data["rows"]
    assert any(not row["active"] for row in data["rows"])


def test_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    for args in (
        ("show", "nope", "--store", url),
        ("export", "nope", "--store", url),
        ("search", "x", "--session", "nope", "--store", url),
        ("list", "--store", "ftp://nowhere"),
        ("import", str(tmp_path / "missing.jsonl"), "--store", url),
    ):
        code, _, err = run(*args)
        assert code == 2, args
        assert err.startswith("error: ") and err.count("\n") == 1, (args, err)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "ok"}\n{"role": 5}\n', encoding="utf-8")
    code, _, err = run("import", str(bad), "--store", url)
    assert code == 2 and "line 2" in err


@pytest.mark.parametrize("args", [["list", "--limit", "-5"], ["search", "x", "--limit", "0"]])
def test_limits_must_be_positive(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["sessions", *args, "--store", "memory://"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "--limit" in err and err.count("\n") == 1


def test_unreachable_postgres_is_one_prompt_line(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://127.0.0.1:{unused_port()}/nowhere"
    code, out, err = run("list", "--store", url)
    assert code == 2 and out == ""
    assert err.startswith("error: cannot open PostgreSQL store") and err.count("\n") == 1
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]  # no pool noise


def test_default_store_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WINDOWKEEPER_STORE", f"sqlite:///{tmp_path / 'env.db'}")
    source = tmp_path / "one.jsonl"
    source.write_text('{"role": "user", "content": "hi"}\n', encoding="utf-8")
    code, out, _ = run("import", str(source))
    assert code == 0
    assert (tmp_path / "env.db").exists() and out.strip() in run("list")[1]


def test_compress_session_for_the_compress_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    sid = _import(url, tmp_path)
    result = compress_session(url, sid, make_compressor(), force=True)
    assert result.report.outcome is Outcome.COMPRESSED
    with open_store(url) as store:
        assert store.load(sid).messages == result.messages
    with pytest.raises(StoreError, match="unknown session"):
        compress_session(url, "nope", make_compressor())


class _BrokenLock(MemoryStore):
    def acquire_lock(self, session_id: str, holder: str, *, ttl: float = 300.0) -> bool:
        raise StoreError("lock table unavailable")


def test_lock_failure_fails_open_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    store: SessionStore = _BrokenLock()
    sid = store.create_session(round_messages("a") + round_messages("b")).id
    with caplog.at_level(logging.WARNING, logger="windowkeeper.store"):
        first = compact_session(store, sid, make_compressor(), force=True).result
        store.append_messages(sid, round_messages("c"))
        second = compact_session(store, sid, make_compressor(), force=True).result
    assert first.report.compressed and second.report.compressed
    warnings = [r for r in caplog.records if "compression lock unavailable" in r.message]
    assert len(warnings) == 1
    assert store in session_module._lock_warned
