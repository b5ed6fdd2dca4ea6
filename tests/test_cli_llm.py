"""The compress command with the LLM summarizer, against a real loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import long_session
from windowkeeper.cli import app as cli
from windowkeeper.testing import OpenAITestServer, Step

pytestmark = pytest.mark.usefixtures("summary_tier")

GOOD = (
    "## Task\nx\n\n## Work State\nIn progress:\n- Fix the refund bug.\n\n"
    "## Next Step\nRun the tests."
)


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in long_session(30)))
    return path


def _run(
    server: OpenAITestServer, session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str, dict[str, object]]:
    report = tmp_path / "report.json"
    code = cli.main([
        "compress", str(session), "--context-length", "32000", "--report-json", str(report),
        "--summarizer", "llm", "--summary-model", "summ-1", "--summary-base-url", server.base_url,
        "--summary-timeout", "2", "--summary-context-length", "128000",
    ])  # fmt: skip
    captured = capsys.readouterr()
    data = json.loads(report.read_text()) if report.exists() else {}
    return code, captured.out, captured.err, data


def test_llm_summary_is_used(
    session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAITestServer() as server:
        server.script(Step.completion(GOOD))
        code, out, err, report = _run(server, session_file, tmp_path, capsys)
        assert server.chat_requests[0].body["model"] == "summ-1"
    assert code == 0
    assert report["summarizer"] == "llm" and report["fallback_used"] is False
    assert "Fix the refund bug." in out and "## State Ledger" in out
    assert "warning" not in err


def test_auth_failure_aborts_with_exit_3_and_one_line(
    session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAITestServer() as server:
        server.script(Step.error(401))
        code, out, err, report = _run(server, session_file, tmp_path, capsys)
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "nothing was dropped" in err and "Traceback" not in err
    assert report["aborted"] is True and report["failure"] == "auth"


def test_server_error_falls_back_with_a_warning(
    session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAITestServer() as server:
        server.script(Step.error(500))
        code, out, err, report = _run(server, session_file, tmp_path, capsys)
    assert code == 0
    assert report["fallback_used"] is True and report["failure"] == "server_error"
    assert "warning: summary failed (server_error: " in err
    assert "500" in err and "using the extractive fallback" in err
    assert "## Task" in out


def test_llm_summarizer_needs_a_model(
    session_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(
        ["compress", str(session_file), "--context-length", "32000", "--summarizer", "llm"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--summary-model" in err and err.count("\n") == 1
