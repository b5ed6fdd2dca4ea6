"""Large user messages (issue 24 point 6, SPEC §6 v3): a pasted log is kept verbatim up to
a per-message and a total budget; beyond it the message keeps its head, its tail, the
instruction lines of the part left out and the handle of the whole, so it never blocks a
compaction. The newest user message stays whole unless it alone would not fit; warnings
name what really blocks (issue 23 point 8)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper import CompressionConfig, ContextCompressor, ContextManager
from windowkeeper.analysis.instructions import excerpt, instruction_lines, is_own_line
from windowkeeper.cli import app as cli
from windowkeeper.compaction.usertexts import user_budget
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import content_text, dump_jsonl
from windowkeeper.core.report import Outcome, Reason
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.engine.trigger import detail_of
from windowkeeper.loop.events import Event, EventKind, WarningCode

Message = dict[str, Any]
ASK_FIRST = "Here is the log from staging, can you find why the requests fail?"
ASK_MIDDLE = "Why does the worker restart every five minutes? Please check that too."
ASK_LAST = "Please fix process_item so it never raises on a missing user_id."
HANDLE = re.compile(r"recall (wk[0-9a-f]+) for the whole message")


def log_lines(chars: int, seed: int = 0) -> str:
    """A pasted server log of about ``chars`` characters (no line is the user's own)."""
    rng = random.Random(seed)
    lines: list[str] = []
    size = 0
    while size < chars:
        n = len(lines)
        line = (
            f"2024-05-01T12:{n % 60:02d}:{n % 60:02d}.123Z INFO  worker-{n % 7} request "
            f"id={rng.getrandbits(40):x} path=/api/v1/items/{n} status=200 took={n % 900}ms"
        )
        if n % 97 == 0:
            line = f"2024-05-01T12:00:00Z ERROR worker-3 KeyError: 'user_id' at line {n}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def pasted(chars: int, seed: int, middle: bool = True) -> str:
    """A user message: a request, a pasted log (with a question in its middle), a request."""
    log = log_lines(chars, seed)
    half = len(log) // 2
    cut = log.rfind("\n", 0, half) + 1 if middle else half
    inner = f"{log[:cut]}{ASK_MIDDLE}\n{log[cut:]}" if middle else log
    return f"{ASK_FIRST}\n\n{inner}\n\n{ASK_LAST}"


def two_pastes(first: int, second: int, rounds: int = 0) -> list[Message]:
    """The issue's case: a log pasted, an answer (and some tool rounds), pasted again."""
    messages = [system("You are a careful coding agent."), user(pasted(first, 1))]
    for n in range(rounds):
        messages.append(assistant(None, call(f"c{n}", "bash", command=f"grep -n user_id f{n}.py")))
        messages.append(tool(f"c{n}", f"f{n}.py:{n}: user_id = item['user_id']\n" * 40))
    messages.append(assistant("The errors are KeyError: 'user_id' in process_item."))
    messages.append(user(pasted(second, 2)))
    return messages


def _texts(messages: list[Message]) -> str:
    return "\n".join(content_text(m.get("content")) for m in messages)


# --- the excerpt ---------------------------------------------------------------------


def test_own_lines_are_prose_not_log_records() -> None:
    for line in ["2024-05-01 INFO started", "KeyError: 'user_id'", "  at com.x.Y.run(Y.java:12)",
                 'File "app.py", line 3, in main', "$ make test", '{"level": "info"}',
                 "ERROR worker-3 died", "ok", "a1b2c3 d4e5f6 0x7f3a"]:  # fmt: skip
        assert not is_own_line(line), line
    for line in [ASK_FIRST, ASK_MIDDLE, "- keep the retry logic as it is", "Thanks for that."]:
        assert is_own_line(line), line


def test_the_excerpt_keeps_head_tail_instruction_lines_and_the_handle() -> None:
    text = pasted(45_000, 3)
    short = excerpt(text, 2_400, "wk0123456789")
    assert len(short) <= 2_400
    assert short.startswith(ASK_FIRST) and short.endswith(ASK_LAST)
    assert ASK_MIDDLE in short  # the request in the middle of the log
    assert "recall wk0123456789 for the whole message" in short
    assert excerpt("short text", 2_400, "wk0123456789") == "short text"


def test_code_fences_are_pasted_material() -> None:
    thanks = "Thanks, that would help a lot."
    text = f"Please review this:\n```\nYou must never call this twice please.\n```\n{thanks}"
    assert instruction_lines(text, 1_000) == ["Please review this:", thanks]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=6_000), st.integers(400, 4_000))
def test_an_excerpt_is_never_longer_than_its_limit(text: str, limit: int) -> None:
    short = excerpt(text, limit, "wkabcdef0123")
    assert short == text if len(text) <= limit else len(short) <= limit


# --- compaction ------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.integers(2_000, 120_000),
    second=st.integers(2_000, 120_000),
    rounds=st.integers(0, 4),
    window=st.sampled_from([8_000, 16_000, 32_000, 128_000]),
    force=st.booleans(),
)
def test_a_pasted_log_never_blocks_compaction(
    first: int, second: int, rounds: int, window: int, force: bool
) -> None:
    messages = two_pastes(first, second, rounds)
    config = CompressionConfig()
    comp = ContextCompressor(config, context_length=window)
    before = estimate_messages_tokens(messages)
    result = comp.compress(messages, force=force)
    out = result.messages
    assert violations(out) == []
    budget = user_budget(config, window)
    older = estimate_messages_tokens([messages[1]])
    if older > budget.message_tokens:
        # The older paste is over its budget: it can never block a compaction.
        assert result.report.outcome is Outcome.COMPRESSED, result.report.detail
        assert result.report.after_tokens < before
        assert pasted(first, 1) not in _texts(out)
    archived = {item.handle: item for item in result.archived}
    for message in out:
        text = content_text(message.get("content"))
        for handle in HANDLE.findall(text):  # every excerpt names an archived original
            original = content_text(archived[handle].message.get("content"))
            assert ASK_FIRST in text and ASK_LAST in text and ASK_MIDDLE in text
            assert text.splitlines()[0] == original.splitlines()[0]
    newest = pasted(second, 2)
    floor = estimate_messages_tokens([messages[0], messages[-1]]) + 650
    if result.report.outcome is Outcome.COMPRESSED and (not force or floor <= window):
        assert newest in _texts(out)  # what the agent must answer stays whole
    if force and result.report.outcome is Outcome.COMPRESSED:
        assert ASK_LAST in _texts(out) and ASK_MIDDLE in _texts(out)
        assert result.report.after_tokens <= max(window, floor)


def test_user_messages_within_their_budget_stay_verbatim() -> None:
    task = "Fix the flaky test in tests/test_api.py. " + "Keep the public API unchanged. " * 200
    messages = [system(), user(task), assistant("ok")]
    for n in range(30):
        messages.append(assistant(None, call(f"c{n}", "bash", command=f"cat f{n}.py")))
        messages.append(tool(f"c{n}", "x = 1\n" * 400))
    messages.append(user("Now run the whole suite."))
    result = ContextCompressor(context_length=16_000).compress(messages, force=True)
    assert result.report.outcome is Outcome.COMPRESSED
    assert not any(item.kind == "user_message" for item in result.archived)


def test_the_cli_compacts_a_45_kb_log_pasted_twice(tmp_path: Path) -> None:
    """The issue's repro: before, `structural_backoff` / "nothing left to compress"."""
    messages = two_pastes(45_000, 45_000)
    source = tmp_path / "pasted.jsonl"
    source.write_text(dump_jsonl(messages), encoding="utf-8")
    for window in ("16000", "32000", "8000"):
        out_path = tmp_path / f"out-{window}.jsonl"
        report = tmp_path / f"report-{window}.json"
        code = cli.main(["compress", str(source), "--context-length", window,
                         "-o", str(out_path), "--report-json", str(report)])  # fmt: skip
        assert code == 0
        data = json.loads(report.read_text(encoding="utf-8"))
        assert data["compressed"] is True and data["after_tokens"] < data["before_tokens"] * 0.6
        out = [json.loads(line) for line in out_path.read_text(encoding="utf-8").splitlines()]
        text = _texts(out)
        assert text.count(ASK_FIRST) == 2 and text.count(ASK_LAST) == 2
        if window != "8000":  # the newest fits the window: whole
            assert pasted(45_000, 2) in text
        else:  # it alone would not fit 8K: its instruction lines and a handle
            assert data["after_tokens"] <= 8_000 and len(HANDLE.findall(text)) == 2


def test_the_manager_compacts_two_pasted_logs_instead_of_backing_off() -> None:
    events: list[Event] = []
    manager = ContextManager(ContextCompressor(context_length=24_000), on_event=events.append)
    messages = two_pastes(45_000, 45_000, rounds=2)
    assert manager.estimate(messages) >= manager.threshold
    out = manager.preflight(messages)
    assert out is not messages
    assert any(e.kind is EventKind.COMPACTION_FINISHED for e in events)
    assert not any(e.warning is WarningCode.BLOCKED for e in events)


# --- warnings that name the real cause --------------------------------------------------


def test_a_skip_names_the_newest_user_message_that_blocks() -> None:
    """Nothing to compress: two messages, the newest a paste near the window. The skip,
    the backoff that follows and the manager's warning all name that message."""
    messages = [system(), user(pasted(90_000, 5))]
    comp = ContextCompressor(context_length=32_000)
    first = comp.compress(messages)
    assert first.report.reason is Reason.NOTHING_TO_COMPRESS
    assert "the largest is message 1 (the newest user message" in first.report.detail
    assert "the agent must answer it" in first.report.detail
    again = comp.compress(messages)
    assert again.report.reason is Reason.STRUCTURAL_BACKOFF
    assert again.report.detail.startswith(detail_of(Reason.STRUCTURAL_BACKOFF))
    assert "the largest is message 1 (the newest user message" in again.report.detail
    events: list[Event] = []
    manager = ContextManager(comp, on_event=events.append)
    manager.after_response({"prompt_tokens": 30_000}, messages)
    (warning,) = [e for e in events if e.warning is WarningCode.BLOCKED]
    assert "structural_backoff" in warning.message
    assert "message 1 (the newest user message" in warning.message
    assert "system prompt and tool schemas alone" not in warning.message


def test_the_handoff_quotes_a_long_user_message_by_its_excerpt() -> None:
    """A paste summarized with the middle turns is quoted by its head, its instruction
    lines and its tail, labelled with the handle that recalls the whole."""
    paste = pasted(30_000, 7)
    messages = [system(), user("Fix the worker."), assistant("Looking.")]
    messages += [user(paste), assistant("Checking the log.")]
    for n in range(30):
        messages.append(assistant(None, call(f"c{n}", "bash", command=f"cat f{n}.py")))
        messages.append(tool(f"c{n}", f"line {n}\n" * 300))
    messages += [assistant("Found it."), user("go on")]
    config = CompressionConfig(prune_only_ratio=0.01, protect_first_n=1)
    result = ContextCompressor(config, context_length=32_000).compress(messages, force=True)
    summary = result.summary or ""
    quote = summary[summary.index("## User Messages") :]
    assert ASK_FIRST in quote and ASK_MIDDLE in quote and ASK_LAST in quote
    assert "(shortened)" in quote and paste not in summary
    (handle,) = [i.handle for i in result.archived if content_text(i.message["content"]) == paste]
    assert f"- {handle} (shortened):" in quote
