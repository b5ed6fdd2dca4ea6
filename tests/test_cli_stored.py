"""``compress`` and ``replay`` on stored sessions (``--store URL --session ID``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import long_session
from windowkeeper.analysis.kinds import is_handoff
from windowkeeper.cli import app as cli
from windowkeeper.core.messages import strip_private_keys
from windowkeeper.store import open_store

pytestmark = pytest.mark.usefixtures("summary_tier")


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path / 'wk.db'}"
    with open_store(url) as store:
        record = store.create_session(long_session(30), title="refunds")
    return url, record.id


def test_compress_a_stored_session_in_place(
    stored: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, session = stored
    report = tmp_path / "r.json"
    code = cli.main([
        "compress", "--context-length", "32000", "--store", url, "--session", session,
        "--report-json", str(report),
    ])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(report.read_text())["compressed"] is True
    with open_store(url) as store:
        snapshot = store.load(session)
        assert sum(1 for m in snapshot.messages if is_handoff(m)) == 1
        assert len(snapshot.messages) < len(long_session(30))
        assert store.archived(session)  # nothing lost: the originals are archived
    # Without -o, one line on stdout, not the session (the store holds it).
    assert captured.out == (
        f"session {session}: compacted in the store, {len(snapshot.messages):,} active "
        f"messages (-o FILE writes them, as does `windowkeeper sessions export {session}`)\n"
    )
    out = tmp_path / "out.jsonl"
    again = ["compress", "--context-length", "32000", "--store", url, "--session", session]
    assert cli.main([*again, "--if-needed"]) == 0
    assert "unchanged (below the threshold)" in capsys.readouterr().out
    assert cli.main([*again, "-o", str(out)]) == 0
    capsys.readouterr()
    with open_store(url) as store:
        snapshot = store.load(session)
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written == [strip_private_keys(m) for m in snapshot.messages]  # -o: the messages


def test_compress_with_rotation_starts_a_child(
    stored: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, session = stored
    argv = ["compress", "--context-length", "32000", "--store", url, "--session", session]
    assert cli.main([*argv, "--rotate"]) == 0
    capsys.readouterr()
    with open_store(url) as store:
        parent = store.get_session(session)
        children = [s for s in store.list_sessions() if s.parent_id == session]
    assert parent.end_reason == "compression" and len(children) == 1


def test_unknown_session_and_conflicting_inputs_are_one_line_errors(
    stored: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = stored
    argv = ["compress", "--context-length", "32000", "--store", url]
    assert cli.main([*argv, "--session", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err
    assert cli.main([*argv]) == 2
    assert "either an input file IN or --session" in capsys.readouterr().err


def test_replay_a_stored_session(
    stored: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    url, session = stored
    code = cli.main([
        "replay", "--context-length", "16000", "--store", url, "--session", session, "--json",
    ])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["compactions"]
