"""Replay: transcripts through the manager's triggers; the CLI command; real sessions at 32K."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from factories import long_session
from realdata import real_session_paths
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.cli import app as cli
from windowkeeper.cli.replay import replay_command
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.loop.replay import replay
from windowkeeper.testing import OpenAITestServer, Step

PATHS = real_session_paths()


def app() -> typer.Typer:
    mounted = typer.Typer()
    mounted.command("replay")(replay_command)

    @mounted.callback()
    def root() -> None:  # keeps "replay" a subcommand, as in the real CLI
        """windowkeeper"""

    return mounted


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text(dump_jsonl(long_session(rounds=60)), encoding="utf-8")
    return path


def test_replay_compacts_and_saves_prompt_tokens() -> None:
    report = replay(long_session(rounds=60), context_length=32_000)
    assert report.compactions and not report.overflows and not report.invalid_requests
    assert report.peak_tokens < 32_000
    assert report.cumulative_tokens < report.cumulative_baseline_tokens
    assert all(c.after_tokens < c.before_tokens for c in report.compactions)
    # Each compaction says which tier ran: big tool outputs prune away first.
    assert {c.tier for c in report.compactions} <= {"prune", "summary"}
    assert report.compactions[0].tier == "prune"
    prose = replay(long_session(rounds=150, output_chars=150), context_length=16_000)
    assert "summary" in {c.tier for c in prose.compactions}  # little to prune: summaries


def test_replay_without_pressure_changes_nothing() -> None:
    report = replay(long_session(rounds=3), context_length=1_000_000)
    assert not report.compactions and report.cumulative_tokens == report.cumulative_baseline_tokens


def test_cli_json(transcript: Path) -> None:
    result = CliRunner().invoke(app(), ["replay", str(transcript), "--context-length", "32000",
                                        "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["compactions"] and data["overflows"] == []
    assert data["cumulative_prompt_tokens"] < data["cumulative_prompt_tokens_without_compression"]


def test_cli_human_output(transcript: Path) -> None:
    result = CliRunner().invoke(app(), ["replay", str(transcript), "--context-length", "32000",
                                        "--threshold", "0.6", "--max-tokens", "2000"])  # fmt: skip
    assert result.exit_code == 0, result.output
    for needle in ("peak context", "requests over the window: 0", "cumulative prompt tokens"):
        assert needle in result.stdout


def test_cli_human_output_names_the_compaction_count_once(transcript: Path) -> None:
    data = json.loads(CliRunner().invoke(app(), ["replay", str(transcript), "--context-length",
                                                 "8000", "--json"]).stdout)  # fmt: skip
    many = [w for w in data["warnings"] if w.startswith("session compressed ")]
    assert len(many) >= 2  # the report keeps every one
    result = CliRunner().invoke(app(), ["replay", str(transcript), "--context-length", "8000"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert text.count("session compressed ") == 1
    assert many[-1] in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--context-length", "0"], "--context-length must be a positive integer"),
        (["--context-length", "32000", "--summarizer", "llm"], "llm needs --summary-model"),
        (["--context-length", "32000", "--max-tokens", "-1"], "--max-tokens must be >= 0"),
    ],
)
def test_cli_invalid_options(transcript: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app(), ["replay", str(transcript), *args])
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_invalid_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\nnot json\n', encoding="utf-8")
    result = CliRunner().invoke(app(), ["replay", str(bad), "--context-length", "32000"])
    assert result.exit_code == 2 and "line 2" in result.stderr


def test_cli_plot(transcript: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "context.png"
    result = CliRunner().invoke(app(), ["replay", str(transcript), "--context-length", "32000",
                                        "--json", "--plot", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_plot_without_matplotlib(
    transcript: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    result = CliRunner().invoke(app(), ["replay", str(transcript), "--context-length", "32000",
                                        "--json", "--plot", str(tmp_path / "x.png")])  # fmt: skip
    assert result.exit_code == 2 and "windowkeeper[plot]" in result.stderr


@pytest.mark.real_sessions
@pytest.mark.skipif(not PATHS, reason="../shared/data/sessions is not available")
@pytest.mark.parametrize("window", [8_000, 16_000, 32_000])
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_real_session_replays_within_the_window(path: Path, window: int) -> None:
    # 8K is the hard case: some sessions' newest user request alone is ~3.6K tokens, so
    # only restating it after the handoff, a minimum tail and the truncation rungs fit.
    conversation = load_conversation(path)
    report = replay(conversation.messages, context_length=window, tools=conversation.tools,
                    model=conversation.model)  # fmt: skip
    assert report.overflows == ()
    assert report.invalid_requests == ()
    assert report.cumulative_tokens <= report.cumulative_baseline_tokens


@pytest.mark.usefixtures("summary_tier")
def test_replay_with_the_llm_summarizer_through_a_loopback_server(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in long_session(rounds=40)))
    body = "## Work State\nIn progress:\n- keep going\n"
    with OpenAITestServer() as server:
        server.script(Step.completion(body))
        result = CliRunner().invoke(
            cli.app,
            [
                "replay", str(path), "--context-length", "16000", "--json",
                "--summarizer", "llm", "--summary-model", "summ", "--summary-base-url",
                server.base_url, "--summary-context-length", "128000",
            ],
        )  # fmt: skip
        assert server.chat_requests, "the summary model was never called"
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["compactions"]
