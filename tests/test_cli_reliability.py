"""The command line says what happened, in one line, and never shows a traceback
(issue 10, Deliver 7 and 8): the last-resort error handler, input warnings (the same in
the library), the note when the 64K minimum trigger overrides the threshold, and the
demo's table at 80 columns."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from factories import assistant, long_session, system, user
from windowkeeper import ContextCompressor, ContextManager
from windowkeeper.cli import app as cli_app
from windowkeeper.cli import demo_view
from windowkeeper.cli.app import main
from windowkeeper.core.config import threshold_override
from windowkeeper.core.messages import Message, conversation_warnings, dump_jsonl
from windowkeeper.loop.events import Event, EventKind, WarningCode


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _file(tmp_path: Path, messages: list[Message]) -> str:
    path = tmp_path / "in.jsonl"
    path.write_text(dump_jsonl(messages), encoding="utf-8")
    return str(path)


# --- the last line of defence ---------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code", "start"),
    [(TypeError("unexpected None"), 1, "error: internal error (TypeError: unexpected None)"),
     (RecursionError("maximum recursion depth exceeded"), 2, "error: the input is too large")],
)  # fmt: skip
def test_any_exception_is_one_line(
    error: BaseException, code: int, start: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    def broken(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(cli_app, "inspect_conversation", broken)
    got, out, err = _run(capsys, "inspect", _file(tmp_path, long_session(3)),
                         "--context-length", "8000")  # fmt: skip
    assert got == code and out == "" and err.count("\n") == 1 and err.startswith(start)
    assert "Traceback" not in err


def test_ctrl_c_exits_130_quietly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_app, "inspect_conversation", interrupted)
    got, _, err = _run(capsys, "inspect", _file(tmp_path, long_session(3)),
                       "--context-length", "8000")  # fmt: skip
    assert got == 130 and "Traceback" not in err and err.count("\n") <= 1


# --- input warnings, the same in the library and the CLI -------------------------------


LATE_SYSTEM = [system(), user("Fix the bug."), assistant("On it."),
               {"role": "system", "content": "Be brief."}, user("Go on.")]  # fmt: skip
NO_USER = [system(), assistant("I start on my own."), assistant("And go on.")]


@pytest.mark.parametrize("messages", [LATE_SYSTEM, NO_USER], ids=["late-system", "no-user"])
def test_input_defects_are_one_warning_line_in_cli_and_library(
    messages: list[Message], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (expected,) = conversation_warnings(messages)
    code, _, err = _run(capsys, "compress", _file(tmp_path, messages), "--context-length",
                        "8000", "-o", str(tmp_path / "out.jsonl"))  # fmt: skip
    assert code == 0 and err.count(f"warning: {expected}") == 1
    events: list[Event] = []
    manager = ContextManager(ContextCompressor(context_length=8_000), on_event=events.append)
    manager.compress(messages)
    manager.compress(messages)  # said once per session, not once per compaction
    said = [e for e in events if e.kind is EventKind.WARNING and e.warning is WarningCode.INPUT]
    assert [e.message for e in said] == [expected]


def test_clean_input_has_no_warning() -> None:
    assert conversation_warnings(long_session(4)) == ()
    assert "message 3: a system message" in conversation_warnings(LATE_SYSTEM)[0]


# --- the 64K minimum trigger ---------------------------------------------------------


def test_the_minimum_trigger_note() -> None:
    small = threshold_override(32_000, 0.5)
    assert small is not None and "27,200 tokens, not at 16,000" in small and "85%" in small
    raised = threshold_override(100_000, 0.3)
    assert raised is not None and "64,000 tokens, not at 30,000" in raised
    assert threshold_override(200_000, 0.5) is None


@pytest.mark.parametrize("command", ["compress", "inspect", "replay"])
def test_commands_say_it_once_and_only_for_an_asked_threshold(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, long_session(10))
    extra = ["-o", str(tmp_path / "out.jsonl")] if command == "compress" else []
    code, _, err = _run(capsys, command, path, "--context-length", "32000", *extra)
    assert code == 0 and "note:" not in err  # the default ratio: nothing to say
    asked = ["--threshold", "0.5"]
    code, _, err = _run(capsys, command, path, "--context-length", "32000", *asked, *extra)
    assert code == 0 and err.count("note: compaction triggers at 27,200 tokens") == 1
    code, _, err = _run(capsys, command, path, "--context-length", "200000", *extra)
    assert code == 0 and "note:" not in err


def test_an_abort_stays_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from windowkeeper.testing import OpenAITestServer, Step

    with OpenAITestServer() as server:
        server.script(Step.error(401))
        code, _, err = _run(
            capsys, "compress", _file(tmp_path, long_session(30)), "--context-length",
            "32000", "--summarizer", "llm", "--summary-model", "m", "--summary-base-url",
            server.base_url, "--summary-api-key", "k", "--summary-context-length", "128000",
            "--focus", "refunds",
        )  # fmt: skip
    assert code == 3 and err.count("\n") == 1 and "note:" not in err


def test_a_summary_fallback_names_its_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from windowkeeper.testing import OpenAITestServer, Step

    body = {"error": {"message": "Unsupported parameter: 'temperature'", "type": "invalid"}}
    with OpenAITestServer() as server:
        server.script(Step.error(400, body), Step.error(400, body))
        code, _, err = _run(
            capsys, "compress", _file(tmp_path, long_session(30)), "--context-length",
            "32000", "--summarizer", "llm", "--summary-model", "m", "--summary-base-url",
            server.base_url, "--summary-api-key", "k", "--summary-context-length", "128000",
            "--focus", "refunds", "-o", str(tmp_path / "out.jsonl"),
        )  # fmt: skip
    assert code == 0 and "extractive fallback used" in err
    assert "400: Unsupported parameter: 'temperature'" in err  # status and the provider's words


# --- the demo at 80 columns ------------------------------------------------------------


def test_the_demo_table_keeps_its_columns_at_80(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = demo_view.run_demo()
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, highlight=False)
    demo_view.render_outcome(console, outcome)
    lines = buffer.getvalue().splitlines()
    table = lines[lines.index(next(line for line in lines if "compacted conversation" in line)) :]
    rows = [line for line in table if line.startswith("│")]
    assert rows and all(len(line) <= 80 for line in table)
    header = next(line for line in table if "role" in line and "tokens" in line)
    assert "#" in header and "content" in header
    first = rows[0].split("│")
    assert first[1].strip() == "0" and first[2].strip() == "system" and first[3].strip()


def test_the_demo_json_is_unchanged_by_width() -> None:
    data = demo_view.run_demo().to_dict()
    assert json.dumps(data)  # serializable as before
