"""The command line: compress, inspect, demo, exit codes and one-line errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factories import assistant, long_session, system, user
from windowkeeper.cli import app as cli
from windowkeeper.cli import load as cli_load
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.core.report import CompressionReport, FailureKind, Outcome, Reason
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.summary.protocol import SummaryFailure, SummaryOutcome, SummaryRequest

pytestmark = pytest.mark.usefixtures("summary_tier")

runner = CliRunner()
REPORT_KEYS = {
    "compressed", "aborted", "fallback_used", "before_tokens", "after_tokens",
    "before_messages", "after_messages", "pruned", "summary_tokens", "elapsed_ms",
    "threshold_tokens", "context_length",
}  # fmt: skip


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text(dump_jsonl(long_session(rounds=40)), encoding="utf-8")
    return path


def run(*args: str, input: str | None = None) -> Any:
    return runner.invoke(cli.app, list(args), input=input)


def run_main(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- compress --------------------------------------------------------------------------


def test_compress_to_stdout_with_report(session_file: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = run(
        "compress", str(session_file), "--context-length", "32000", "--report-json", str(report)
    )
    assert result.exit_code == 0, result.stderr
    out = _messages(result.stdout)
    data = json.loads(report.read_text())
    assert data.keys() >= REPORT_KEYS
    assert data["compressed"] is True
    assert data["after_messages"] == len(out) < data["before_messages"]
    assert data["after_tokens"] < data["before_tokens"]
    assert data["context_length"] == 32_000
    assert data["threshold_tokens"] == 27_200
    assert result.stderr.startswith("compressed ")
    assert "% saved" in result.stderr


def test_compress_to_output_file(session_file: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    result = run("compress", str(session_file), "-o", str(target), "--context-length", "32000")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert len(_messages(target.read_text())) < len(_messages(session_file.read_text()))


def test_if_needed_below_threshold_writes_input_unchanged(session_file: Path) -> None:
    result = run("compress", str(session_file), "--context-length", "1000000", "--if-needed")
    assert result.exit_code == 0
    assert result.stdout == session_file.read_text()
    assert "below the threshold" in result.stderr


def test_if_needed_above_threshold_compresses(session_file: Path) -> None:
    result = run("compress", str(session_file), "--context-length", "32000", "--if-needed")
    assert result.exit_code == 0
    assert len(_messages(result.stdout)) < len(_messages(session_file.read_text()))


def test_stdin_and_focus(session_file: Path) -> None:
    text = session_file.read_text()
    result = run("compress", "-", "--context-length", "32000", "--focus", "refunds", input=text)
    assert result.exit_code == 0, result.stderr
    assert len(_messages(result.stdout)) < len(_messages(text))


def test_json_array_and_request_body_inputs(tmp_path: Path) -> None:
    messages = long_session(rounds=40)
    array = tmp_path / "array.json"
    array.write_text(json.dumps(messages))
    body = tmp_path / "body.json"
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
    body.write_text(json.dumps({"model": "m", "messages": messages, "tools": tools}))
    for path in (array, body):
        result = run("compress", str(path), "--context-length", "32000")
        assert result.exit_code == 0, result.stderr
        assert len(_messages(result.stdout)) < len(messages)


def test_tools_file_counts_in_inspect(session_file: Path, tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "bash", "description": "d" * 400}}]
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps(tools))
    args = ("inspect", str(session_file), "--context-length", "32000", "--json")
    without = json.loads(run(*args).stdout)
    with_tools = json.loads(run(*args, "--tools", str(tools_file)).stdout)
    assert without["breakdown"]["tool_schemas"] == 0
    assert with_tools["breakdown"]["tool_schemas"] == 101
    assert with_tools["total_tokens"] == without["total_tokens"] + 101
    compressed = run(
        "compress", str(session_file), "--context-length", "32000", "--tools", str(tools_file)
    )
    assert compressed.exit_code == 0


# --- malformed input: exit 2, one line, no traceback ----------------------------------

GOOD = '{"role": "user", "content": "hi"}'
BAD_INPUTS = [
    (f"{GOOD}\n{{not json\n", "line 2: bad JSON"),
    (f'{GOOD}\n{{"role": "robot", "content": "x"}}\n', "line 2: unknown role 'robot'"),
    (f'{GOOD}\n{{"role": "user", "content": 5}}\n', "line 2: content must be a string"),
    (f'{GOOD}\n{GOOD}\n{{"role": "tool", "content": "x"}}\n', "line 3: tool message without"),
    (
        '{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", '
        '"function": {"name": "f", "arguments": {"x": 1}}}]}\n',
        "line 1: tool call 0 arguments must be a JSON string",
    ),
    ('{"role": "assistant", "tool_calls": {"id": "a"}}\n', "line 1: 'tool_calls' must be a list"),
    ("", "empty input"),
    ("  \n\n", "empty input"),
    ('[{"role": "user", "content": "a"}, {"role": "x"}]', "message 1: unknown role"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_INPUTS)
def test_malformed_input_is_one_line_exit_2(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    for command in ("compress", "inspect"):
        code, out, err = run_main([command, str(path), "--context-length", "32000"], capsys)
        assert code == 2
        assert out == ""
        assert err.count("\n") == 1, err
        assert err.startswith("error: ")
        assert expected in err
        assert "Traceback" not in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    code, _, err = run_main(["compress", str(missing), "--context-length", "100"], capsys)
    assert code == 2
    assert err == f"error: {missing}: cannot read file: No such file or directory\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--context-length", "0"], "--context-length must be a positive integer, got 0"),
        (["--context-length", "-5"], "--context-length must be a positive integer, got -5"),
        (["--context-length", "1000", "--threshold", "1.5"], "threshold must be in (0, 1]"),
        (["--context-length", "1000", "--max-tokens", "-1"], "--max-tokens must be >= 0"),
        (["--context-length", "many"], "Invalid value for '--context-length'"),
        ([], "the context window is unknown: pass --context-length N"),
        (["--context-length", "10", "--bogus"], "No such option: --bogus"),
    ],
)
def test_bad_options_are_one_line_exit_2(
    args: list[str], expected: str, session_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main(["compress", str(session_file), *args], capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1, err
    assert err.startswith("error: ") and expected in err, err


def test_stdin_via_main(
    session_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(session_file.read_text()))
    code, out, err = run_main(["compress", "-", "--context-length", "32000"], capsys)
    assert code == 0, err
    assert _messages(out)


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "tool", "content": "x"}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "windowkeeper", "compress", str(bad), "--context-length", "9"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == "error: line 1: tool message without 'tool_call_id'\n"
    help_proc = subprocess.run(
        [sys.executable, "-m", "windowkeeper", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert help_proc.returncode == 0
    assert "compress" in help_proc.stdout and "inspect" in help_proc.stdout


# --- aborts: exit 3 -------------------------------------------------------------------


class FailingSummarizer:
    name = "failing"

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        failure = SummaryFailure(FailureKind.NETWORK, "connection refused")
        return SummaryOutcome(failure=failure, summarizer=self.name)


def _failing_compressor(config: CompressionConfig, **kwargs: Any) -> ContextCompressor:
    kwargs.pop("summarizer", None)
    return ContextCompressor(config, summarizer=FailingSummarizer(), **kwargs)


def test_aborted_compaction_exits_3(
    session_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(cli_load, "build_compressor", _failing_compressor)
    report = tmp_path / "r.json"
    argv = [
        "compress",
        str(session_file),
        "--context-length",
        "32000",
        "--report-json",
        str(report),
    ]
    code, out, err = run_main(argv, capsys)
    assert (code, out) == (3, "")
    assert err.count("\n") == 1, err
    assert err.startswith("error: compression aborted, nothing was dropped")
    assert "connection refused" in err
    assert json.loads(report.read_text())["aborted"] is True


def test_exit_code_mapping() -> None:
    assert cli.exit_code_for(CompressionReport(Outcome.ABORTED, Reason.SUMMARY_FAILED)) == 3
    assert cli.exit_code_for(CompressionReport(Outcome.COMPRESSED)) == 0
    assert cli.exit_code_for(CompressionReport(Outcome.NOOP, Reason.NOTHING_TO_COMPRESS)) == 0


def test_nothing_to_compress_is_a_noop(tmp_path: Path) -> None:
    path = tmp_path / "short.jsonl"
    path.write_text(dump_jsonl([system(), user("hi")]))
    result = run("compress", str(path), "--context-length", "32000")
    assert result.exit_code == 0
    assert result.stdout == path.read_text()
    assert "nothing" in result.stderr


def test_output_still_over_the_window_is_warned(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text(dump_jsonl([system("Follow the rules. " * 8_000), user("hi")]))
    result = run("compress", str(path), "--context-length", "8000")
    assert result.exit_code == 0
    assert result.stdout == path.read_text()
    assert "still over the 8,000-token window" in result.stderr
    fits = run("compress", str(path), "--context-length", "64000")
    assert "still over" not in fits.stderr


def test_a_newest_user_message_that_alone_cannot_fit_keeps_its_excerpt(tmp_path: Path) -> None:
    """Issue 24 point 6: it keeps its head, tail and a handle rather than overflowing."""
    path = tmp_path / "huge.jsonl"
    path.write_text(dump_jsonl([system(), user("Summarize this. " + "word " * 20_000)]))
    result = run("compress", str(path), "--context-length", "8000")
    assert result.exit_code == 0
    (kept,) = [m for m in _messages(result.stdout) if m["role"] == "user"]
    assert kept["content"].startswith("Summarize this. word")
    assert "for the whole message" in kept["content"] and len(kept["content"]) < 3_000
    assert "still over" not in result.stderr


# --- inspect ---------------------------------------------------------------------------


def test_inspect_json_figures_add_up(session_file: Path) -> None:
    result = run("inspect", str(session_file), "--context-length", "32000", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert sum(data["breakdown"].values()) == data["total_tokens"]
    plan = data["plan"]
    assert sum(plan[s]["messages"] for s in ("head", "middle", "tail")) == data["messages"]
    assert (
        sum(plan[s]["tokens"] for s in ("head", "middle", "tail"))
        + data["breakdown"]["tool_schemas"]
        == data["total_tokens"]
    )
    assert (
        sum(t["tokens"] for t in data["tool_results_by_tool"]) == data["breakdown"]["tool_results"]
    )
    assert data["threshold_tokens"] == 27_200
    assert data["over_threshold"] is (data["total_tokens"] >= 27_200)
    assert plan["compressible"] is True
    assert plan["middle"]["pruned_outputs"] > 0


def test_inspect_human_output(session_file: Path) -> None:
    result = run("inspect", str(session_file), "--context-length", "32000")
    assert result.exit_code == 0, result.stderr
    data = json.loads(
        run("inspect", str(session_file), "--context-length", "32000", "--json").stdout
    )
    for text in ("Where the tokens go", "tool results", "What a compaction would do", "bash"):
        assert text in result.stdout
    assert f"{data['total_tokens']:,}" in result.stdout


# --- demo ------------------------------------------------------------------------------


def test_demo_json_shows_a_compaction() -> None:
    result = run("demo", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    report = data["report"]
    assert report["compressed"] is True
    assert report["after_tokens"] < report["before_tokens"]
    assert report["after_messages"] < report["before_messages"]
    assert report["pruned"] > 0
    assert data["triggered"] is True
    assert data["after"]["fits_window"] is True
    assert 150 <= data["session"]["messages"] <= 250
    assert 60_000 <= data["inspection"]["total_tokens"] <= 120_000
    assert "PAY-1423" in data["handoff"]


def test_demo_human_output() -> None:
    result = run("demo")
    assert result.exit_code == 0, result.stderr
    for text in ("windowkeeper demo", "The handoff message", "Before and after", "saved"):
        assert text in result.stdout


def test_demo_session_is_reproducible(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[1] / "scripts" / "make_demo_session.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_repairable_input_is_repaired_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "ghost", "content": "orphan result"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "assistant", "content": "listed"},
        {"role": "user", "content": "thanks"},
    ]
    path = tmp_path / "broken.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    code, out, err = run_main(["compress", str(path), "--context-length", "32000"], capsys)
    assert code == 0
    assert "warning: repaired tool pairing in the input: 1 orphan results removed" in err
    written = [json.loads(line) for line in out.splitlines()]
    assert violations(written) == []
    assert all(m.get("tool_call_id") != "ghost" for m in written)


def test_config_file_supplies_window_and_settings(
    session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "wk.yaml"
    config.write_text(
        "model:\n  context_length: 64000\ncompression:\n  threshold: 0.6\n  protect_first_n: 1\n"
    )
    code, out, _ = run_main(
        ["inspect", str(session_file), "--config", str(config), "--json"], capsys
    )
    data = json.loads(out)
    assert code == 0
    assert data["context_length"] == 64_000 and data["threshold"] == 0.6
    code, out, _ = run_main(
        ["inspect", str(session_file), "--config", str(config), "--threshold", "0.7", "--json"],
        capsys,
    )
    assert json.loads(out)["threshold"] == 0.7  # the command line wins over the file


def test_bad_config_file_is_one_line_exit_2(
    session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "wk.yaml"
    config.write_text("compression:\n  threshold: 7\n")
    code, _, err = run_main(
        ["compress", str(session_file), "--context-length", "32000", "--config", str(config)],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1 and "compression.threshold" in err


def test_lone_surrogate_in_input_is_written_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "half.jsonl"
    # An assistant turn between the two user ones: adjacent user turns would be merged.
    messages = [*long_session(rounds=40), assistant("The rounding."),
                user("and the emoji \ud83d got cut")]  # fmt: skip
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    out = tmp_path / "out.jsonl"
    result = run("compress", str(path), "--context-length", "8000", "-o", str(out))
    assert result.exit_code == 0, result.output
    written = _messages(out.read_text(encoding="utf-8"))
    assert written[-1] == messages[-1]


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    found = []
    for name, command in sorted(group.commands.items()):
        found.append((prefix + name, command))
        if hasattr(command, "commands"):
            found.extend(_commands(command, prefix + name + " "))
    return found


def test_every_command_summary_is_one_line() -> None:
    """The help lists each command's first paragraph as written, line breaks included: a
    summary wrapped in the source would show broken mid-sentence."""
    import typer.main

    commands = _commands(typer.main.get_command(cli.app))
    assert len(commands) >= 15  # the sessions and config subcommands are walked too
    for name, command in commands:
        summary = (command.help or "").strip().split("\n\n")[0]
        assert summary and "\n" not in summary, (name, summary)


# --- help text ---------------------------------------------------------------------------

_COMMANDS = [["compress"], ["inspect"], ["replay"], ["eval"], ["demo"], ["mcp"],
             ["sessions", "list"], ["sessions", "search"], ["sessions", "check"]]  # fmt: skip


@pytest.mark.parametrize("command", _COMMANDS, ids=" ".join)
def test_help_has_no_type_labels_and_reflows_its_paragraphs(command: list[str]) -> None:
    from typer.testing import CliRunner

    from windowkeeper.cli.app import app

    result = CliRunner().invoke(app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    options = [line for line in result.output.splitlines() if line.lstrip().startswith("-")]
    assert options and not [line for line in options if "<bool>" in line or "<str>" in line]
    # At 200 columns no paragraph of the description breaks before the width: a line
    # ends where the source docstring broke it only when the next one starts a paragraph.
    text = result.output.split("Options:")[0]
    for paragraph in text.split("\n\n")[1:]:
        if paragraph.strip() and not paragraph.lstrip().startswith(("Arguments:", "Usage:")):
            assert paragraph.strip().count("\n") == 0 or len(paragraph) > 190, paragraph
