"""``sessions undo`` / ``sessions diff`` on SQLite and PostgreSQL (issue 26 acceptance):
undo then export gives back the history before the compaction, message for message;
diff names every replaced message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _workers import make_compressor, round_messages
from typer.testing import CliRunner

from windowkeeper.cli import app as cli
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.store import compact_session, compaction_diff, open_store

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli.app, ["sessions", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def url(durable_url: str) -> str:
    return durable_url


def test_undo_then_export_gives_back_the_history(url: str, tmp_path: Path) -> None:
    history = round_messages("a") + round_messages("b") + round_messages("c")
    with open_store(url) as store:
        sid = store.create_session(history).id
        done = compact_session(store, sid, make_compressor(), force=True)
        assert done.result.report.compressed
        later = {"role": "user", "content": "and one more thing"}
        store.append_messages(sid, [later])
        expected_diff = compaction_diff(store, sid)
    code, out, err = run("diff", sid, "--store", url)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("- ")]
    assert len(lines) == len(expected_diff.replaced) == len(history)  # every one named
    for line, item in zip(lines, expected_diff.replaced, strict=True):
        assert line.split()[1] == str(item.seq)
        assert all(handle in line for handle in item.handles)
    assert any(item.handles for item in expected_diff.replaced)
    code, out, err = run("undo", sid, "--store", url)
    assert code == 0 and "restored" in out, err
    code, out, err = run("export", sid, "--store", url)
    assert code == 0, err
    exported = [json.loads(line) for line in out.splitlines()]
    assert exported == [*history, later]
    assert out == dump_jsonl([*history, later])
    code, out, err = run("diff", sid, "--store", url, "--compaction", "1")
    assert code == 0 and "(undone)" in out.splitlines()[0]


def test_undo_and_diff_errors_are_one_line(url: str) -> None:
    with open_store(url) as store:
        sid = store.create_session(round_messages("a")).id
    for args in (("undo", sid), ("diff", sid), ("undo", "no-such-session")):
        code, out, err = run(*args, "--store", url)
        assert code == 2 and out == ""
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
        assert "Traceback" not in err
    code, _, err = run("diff", sid, "--store", url, "--compaction", "3")
    assert code == 2 and "compaction" in err
