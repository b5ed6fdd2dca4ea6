"""Agent transcripts read directly: Claude Code session JSONL (and the CLI on them).

Synthetic fixtures always run; the real Claude Code files in ``../shared/data/raw`` run
when that folder is there, each checked against a reference conversion written here
(independently, straight to OpenAI messages) and against the converted session of the
same name in ``../shared/data/sessions``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from realdata import SESSIONS_DIR
from windowkeeper.adapters.anthropic import IS_ERROR_KEY, THINKING_KEY
from windowkeeper.adapters.codex import rollout_items
from windowkeeper.adapters.formats import Format, detect_format, parse_conversation
from windowkeeper.adapters.responses import INSTRUCTIONS_KEY, from_responses, to_responses
from windowkeeper.cli import app as cli
from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import content_text

pytestmark = pytest.mark.usefixtures("summary_tier")

RAW_CLAUDE_CODE = SESSIONS_DIR.parent / "raw" / "claude_code"
runner = CliRunner()


# --- a synthetic Claude Code session ---------------------------------------------------


_uuids = itertools.count()


def _event(kind: str, message: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "uuid": f"u{next(_uuids)}", **extra}
    event.setdefault("sessionId", "s1")
    if message is not None:
        event["message"] = message
    return event


def _assistant(
    mid: str, *blocks: dict[str, Any], model: str = "claude-x", **extra: Any
) -> list[dict[str, Any]]:
    """One streamed response: a line per block, sharing ``message.id``."""
    message = {"id": mid, "role": "assistant", "model": model}
    return [_event("assistant", {**message, "content": [b]}, **extra) for b in blocks]


def _use(tid: str, name: str = "Bash", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": args}


def _result(tid: str, text: str, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tid, "content": text, **extra}
    return _event("user", {"role": "user", "content": [block]})


def _user(text: str, **extra: Any) -> dict[str, Any]:
    return _event("user", {"role": "user", "content": text}, **extra)


def synthetic_events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        _event("progress", data={"type": "hook_progress"}),
        _user("fix the failing test in calc.py"),
        *_assistant(
            "msg_1",
            {"type": "thinking", "thinking": "look first", "signature": "sig"},
            {"type": "text", "text": "\n\n"},
            {"type": "text", "text": "Reading both files."},
            _use("toolu_a", "Read", file_path="calc.py"),
        ),
        _result("toolu_a", "def add(a, b): return a - b"),
        # The same response streams a second, parallel call after the first result.
        *_assistant("msg_1", _use("toolu_b", "Read", file_path="test_calc.py")),
        _result("toolu_b", "assert add(2, 2) == 4"),
        _event("user", {"role": "user", "content": "sub-agent prompt"}, isSidechain=True),
        *_assistant("msg_side", {"type": "text", "text": "sub-agent answer"}, isSidechain=True),
        *_assistant(
            "msg_2",
            _use("toolu_c", command="pytest -q"),
            _use("toolu_d", command="git status"),
        ),
        # Parallel results written as the tools finished: d before c.
        _result("toolu_d", "clean"),
        _result("toolu_c", "1 failed", is_error=True),
        _user("[Request interrupted by user]"),
        _user("<local-command-caveat>Caveat: local commands.</local-command-caveat>", isMeta=True),
        _user("use a - b only in sub()"),
        _event("system", subtype="compact_boundary", content="Conversation compacted"),
        _user(
            "This session is being continued from a previous conversation.", isCompactSummary=True
        ),
        *_assistant("msg_3", {"type": "text", "text": "Fixed add()."}),
        *_assistant("msg_4", {"type": "text", "text": "Tests pass."}, model="<synthetic>"),
        {"type": "summary", "summary": "Fix calc", "leafUuid": "u9"},
    ]
    return events


def _jsonl(events: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def test_synthetic_session_converts_as_the_model_saw_it() -> None:
    text = _jsonl(synthetic_events())
    assert detect_format(text) is Format.CLAUDE_CODE
    conversation = parse_conversation(text)
    messages = conversation.messages
    assert violations(messages) == []
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant", "tool", "tool", "user", "assistant",
    ]  # fmt: skip
    first = messages[1]
    assert first["content"] == "Reading both files."  # whitespace-only block dropped
    assert [c["id"] for c in first["tool_calls"]] == ["toolu_a", "toolu_b"]
    assert first[THINKING_KEY][0]["signature"] == "sig"  # kept in-process only
    assert [m["tool_call_id"] for m in messages[5:7]] == ["toolu_c", "toolu_d"]  # call order
    assert messages[5][IS_ERROR_KEY] is True
    user = messages[7]["content"]
    assert user.startswith("[Request interrupted by user]")
    assert "use a - b only in sub()" in user
    assert user.endswith("This session is being continued from a previous conversation.")
    assert messages[8]["content"] == "Fixed add().\n\nTests pass."
    assert "sub-agent" not in json.dumps(messages)  # the sidechain is another conversation
    assert conversation.model == "claude-x"  # "<synthetic>" is not a model


def test_a_sub_agent_transcript_is_its_own_conversation() -> None:
    events = [
        _user("find the parser", isSidechain=True),
        *_assistant("m1", _use("t1", "Glob", pattern="**/*.py"), isSidechain=True),
        _result("t1", "parser.py") | {"isSidechain": True},
        *_assistant("m2", {"type": "text", "text": "parser.py"}, isSidechain=True),
    ]
    messages = parse_conversation(_jsonl(events), Format.CLAUDE_CODE).messages
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert violations(messages) == []


def test_an_unfinished_last_line_is_skipped_but_a_broken_middle_line_is_an_error() -> None:
    text = _jsonl(synthetic_events())
    assert parse_conversation(text + '{"type": "assistant", "mess').messages
    lines = text.splitlines()
    lines.insert(3, "{not json")
    with pytest.raises(InvalidMessagesError, match="line 4"):
        parse_conversation("\n".join(lines) + "\n", Format.CLAUDE_CODE)


def test_detection_keeps_the_other_shapes() -> None:
    assert detect_format('{"role": "user", "content": "hi"}\n') is Format.JSONL
    assert detect_format('[{"role": "user", "content": "hi"}]') is Format.JSON
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert detect_format(json.dumps(body, indent=2)) is Format.OPENAI
    assert detect_format(json.dumps({**body, "system": "s"})) is Format.ANTHROPIC


# --- the command line on a transcript --------------------------------------------------


def test_cli_reads_a_transcript_auto_detected_and_with_format(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text(_jsonl(synthetic_events()), encoding="utf-8")
    inspected = runner.invoke(
        cli.app, ["inspect", str(path), "--context-length", "10000", "--json"]
    )
    assert inspected.exit_code == 0, inspected.output
    assert json.loads(inspected.stdout)["messages"] == 9
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    imported = runner.invoke(
        cli.app, ["sessions", "import", str(path), "--store", store, "--format", "claude-code"]
    )
    assert imported.exit_code == 0, imported.output
    exported = runner.invoke(
        cli.app, ["sessions", "export", imported.stdout.strip(), "--store", store]
    )
    assert len(exported.stdout.splitlines()) == 9
    replayed = runner.invoke(
        cli.app, ["replay", str(path), "--context-length", "10000", "--json", "--format", "auto"]
    )
    assert replayed.exit_code == 0, replayed.output
    assert json.loads(replayed.stdout)["invalid_requests"] == []
    wrong = runner.invoke(
        cli.app, ["inspect", str(path), "--context-length", "9", "--format", "json"]
    )
    assert wrong.exit_code == 2 and wrong.output.startswith("error:")


# --- real Claude Code transcripts ------------------------------------------------------


def reference_conversion(path: Path) -> list[dict[str, Any]]:
    """An independent, naive conversion straight to OpenAI messages (no adapter code):
    file order, blocks of one ``message.id`` together, sidechains out of a main session,
    thinking and blank text dropped, adjacent same-role turns merged."""
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    events = [e for e in events if e.get("type") in ("user", "assistant") and "message" in e]
    if any(not e.get("isSidechain") for e in events):
        events = [e for e in events if not e.get("isSidechain")]
    out: list[dict[str, Any]] = []
    seen: dict[str, dict[str, Any]] = {}
    for event in events:
        message = event["message"]
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message["role"] == "assistant":
            turn = seen.get(message["id"])
            if turn is None:
                turn = seen[message["id"]] = {"role": "assistant", "texts": [], "calls": []}
                out.append(turn)
            for block in blocks:
                if block["type"] == "text" and block["text"].strip():
                    turn["texts"].append(block["text"])
                elif block["type"] == "tool_use":
                    turn["calls"].append(block["id"])
            continue
        for block in blocks:
            if block["type"] == "tool_result":
                out.append({"role": "tool", "id": block["tool_use_id"]})
            else:
                out.append({"role": "user"})
    merged: list[dict[str, Any]] = []
    for turn in out:
        if merged and turn["role"] != "tool" and merged[-1]["role"] == turn["role"]:
            if turn["role"] == "assistant":
                merged[-1]["calls"] += turn["calls"]
                merged[-1]["texts"] += turn["texts"]
            continue
        merged.append(turn)
    return [t for t in merged if t["role"] != "assistant" or t["texts"] or t["calls"]]


def raw_transcripts() -> list[Path]:
    return sorted(RAW_CLAUDE_CODE.glob("*.jsonl")) if RAW_CLAUDE_CODE.is_dir() else []


@pytest.mark.real_sessions
@pytest.mark.parametrize("path", raw_transcripts(), ids=lambda p: p.stem)
def test_real_transcript_matches_the_reference_conversion(path: Path) -> None:
    messages = parse_conversation(path.read_text(encoding="utf-8")).messages
    reference = reference_conversion(path)
    assert violations(messages) == []
    assert len(messages) == len(reference)
    assert [m["role"] for m in messages] == [t["role"] for t in reference]
    calls = [[c["id"] for c in m.get("tool_calls") or []] for m in messages]
    assert calls == [t.get("calls", []) for t in reference]
    results = sorted(m["tool_call_id"] for m in messages if m["role"] == "tool")
    assert results == sorted(t["id"] for t in reference if t["role"] == "tool")


@pytest.mark.real_sessions
@pytest.mark.parametrize("path", raw_transcripts(), ids=lambda p: p.stem)
def test_real_transcript_matches_the_converted_session(path: Path) -> None:
    """The converted session of the same name was made from this file by another tool.
    Same messages, roles, call ids and result order; one difference, by design: that tool
    prefixed error results with "[tool error] ", we keep ``is_error`` in the in-process
    ``_anthropic_is_error`` key (as the Anthropic adapter does), so the text is the tool's."""
    converted = SESSIONS_DIR / path.name
    if not converted.is_file():
        pytest.skip(f"{converted} not available")
    theirs = [json.loads(line) for line in converted.read_text(encoding="utf-8").splitlines()]
    ours = parse_conversation(path.read_text(encoding="utf-8")).messages
    assert len(ours) == len(theirs)
    for mine, other in zip(ours, theirs, strict=True):
        assert mine["role"] == other["role"]
        assert mine.get("tool_call_id") == other.get("tool_call_id")
        ids = [c["id"] for c in mine.get("tool_calls") or []]
        assert ids == [c["id"] for c in other.get("tool_calls") or []]
        prefix = "[tool error] " if mine.get(IS_ERROR_KEY) else ""
        assert prefix + content_text(mine.get("content")) == content_text(other.get("content"))


# --- Codex rollouts ---------------------------------------------------------------------


def _line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-11-30T10:00:00.000Z", "type": kind, "payload": payload}


def _text(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


CODEX_ITEMS: list[dict[str, Any]] = [
    _text("developer", "<permissions>sandbox: workspace-write</permissions>"),
    _text("user", "<environment_context><cwd>/repo</cwd></environment_context>"),
    _text("user", "make the refund test pass; never push to main"),
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-opaque"},
    {"type": "function_call", "id": "fc_1", "name": "shell", "call_id": "call_a",
     "arguments": '{"command":["bash","-lc","pytest -q"]}'},
    {"type": "function_call_output", "call_id": "call_a", "output": "1 failed, 3 passed"},
    {"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_b",
     "name": "apply_patch", "input": "*** Begin Patch\n*** Update File: refunds.py\n*** End Patch"},
    {"type": "custom_tool_call_output", "call_id": "call_b", "output": "Success. Updated"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "refund rounding"}},
    _text("assistant", "Fixed the rounding in refunds.py; tests pass."),
]  # fmt: skip
AFTER_COMPACTION: list[dict[str, Any]] = [
    _text("user", "now add a changelog entry"),
    {
        "type": "function_call",
        "name": "shell",
        "call_id": "call_c",
        "arguments": '{"command":["ls"]}',
    },
    {"type": "function_call_output", "call_id": "call_c", "output": "CHANGELOG.md refunds.py"},
    _text("assistant", "Added it."),
]
SUMMARY = "Summary of earlier work: refunds.py rounding fixed, tests pass."


def codex_rollout() -> str:
    lines = [
        _line("session_meta", {"id": "0199", "cwd": "/repo", "cli_version": "0.60.0",
                               "instructions": "Follow AGENTS.md."}),
        _line("turn_context", {"cwd": "/repo", "model": "gpt-5-codex"}),
        *[_line("response_item", item) for item in CODEX_ITEMS[:3]],
        _line("event_msg", {"type": "user_message", "message": "make the refund test pass"}),
        *[_line("response_item", item) for item in CODEX_ITEMS[3:]],
        _line("response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        _line("event_msg", {"type": "token_count", "info": None}),
        _line("compacted", {"message": SUMMARY}),
        *[_line("response_item", item) for item in AFTER_COMPACTION],
    ]  # fmt: skip
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_codex_rollout_converts_with_pairs_and_ids() -> None:
    text = codex_rollout()
    assert detect_format(text) is Format.CODEX
    conversation = parse_conversation(text)
    messages = conversation.messages
    assert conversation.model == "gpt-5-codex"
    assert violations(messages) == []  # environment context and prompt are one user turn
    assert messages[0] == {"role": "system", "content": "Follow AGENTS.md.", INSTRUCTIONS_KEY: True}
    assert messages[1]["role"] == "developer"  # leading: a system-role message
    assert message_text_of(messages[2]).startswith("<environment_context>")
    assert message_text_of(messages[2]).endswith("never push to main")
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert calls == ["call_a", "call_b", "call_c"]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == calls
    assert any(message_text_of(m).startswith(SUMMARY) for m in messages)  # then the next ask


def test_codex_items_round_trip_as_the_very_objects() -> None:
    items, instructions, _ = rollout_items(codex_rollout())
    assert items == [*CODEX_ITEMS, _text("user", SUMMARY), *AFTER_COMPACTION]
    back_instructions, back = to_responses(from_responses(items, instructions))
    assert back_instructions == "Follow AGENTS.md."
    assert len(back) == len(items) and all(a is b for a, b in zip(back, items, strict=True))
    # The reader merges adjacent user turns; every other item comes back as it was.
    _, written = to_responses(parse_conversation(codex_rollout()).messages)
    originals = [i for i in items if i["type"] != "message" or i["role"] != "user"]
    assert [i for i in written if i in originals] == originals


def test_the_older_codex_layout_round_trips() -> None:
    lines = [
        {"id": "0198", "timestamp": "2025-06-01T00:00:00Z", "instructions": None},
        {"record_type": "state"},
        *CODEX_ITEMS[2:6],
        {"record_type": "state"},
        CODEX_ITEMS[-1],
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    assert detect_format(text) is Format.CODEX
    messages = parse_conversation(text).messages
    assert violations(messages) == []
    instructions, items = to_responses(messages)
    assert instructions is None
    assert items == [*CODEX_ITEMS[2:6], CODEX_ITEMS[-1]]  # parsed anew: equal, field by field


def test_cli_compresses_a_codex_rollout(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-11-30T10-00-00-0199.jsonl"
    lines = [json.loads(line) for line in codex_rollout().splitlines()]
    big = [
        _line("response_item", item)
        for n in range(30)
        for item in (
            {
                "type": "function_call",
                "name": "shell",
                "call_id": f"c{n}",
                "arguments": '{"command":["cat","f"]}',
            },
            {
                "type": "function_call_output",
                "call_id": f"c{n}",
                "output": f"row {n}\n" + "x" * 3000,
            },
        )
    ]
    path.write_text(
        "".join(json.dumps(x) + "\n" for x in [*lines, *big, lines[-1]]), encoding="utf-8"
    )
    result = runner.invoke(cli.app, ["compress", str(path), "--context-length", "8000"])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert violations(out) == [] and len(out) < 40 and all("role" in m for m in out)


def message_text_of(message: dict[str, Any]) -> str:
    return content_text(message.get("content"))
