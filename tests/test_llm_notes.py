"""LLM notes kept whole (issue 24 point 7, SPEC §6 v3), against the loopback OpenAI server:
the budget is asked for up front, every record is labelled with its archive handle, notes
over the budget lose whole items (oldest first, their handles named), never a cut line;
headings are read tolerantly, content under headings of the model's own is kept, and a
reply with none of the requested headings is a reported ``format`` failure."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factories import long_session, user
from windowkeeper import CompressionConfig, ContextCompressor, LLMSummarizer, LLMSummarizerConfig
from windowkeeper.analysis.kinds import handoff_body, is_handoff
from windowkeeper.cli import app as cli
from windowkeeper.compaction.plan import CompactionPlan
from windowkeeper.core.messages import Message, content_text
from windowkeeper.core.report import CompressionResult, FailureKind
from windowkeeper.summary.handoff.parse import parse_state, split_sections
from windowkeeper.summary.handoff.text import NOTES_BESIDE, Shown, section_text
from windowkeeper.summary.handoff.worktext import AS_OF
from windowkeeper.summary.llm.output import written_part
from windowkeeper.summary.llm.prompt import (
    DATA_CLOSE,
    DATA_OPEN,
    KEPT_CLOSE,
    KEPT_OPEN,
    KEPT_SHARE,
    InputCap,
    kept_records,
)
from windowkeeper.summary.protocol import SummaryRequest, written_budget
from windowkeeper.summary.request import LABEL_TOKENS, notes_on_top
from windowkeeper.summary.trim import trim_sections
from windowkeeper.testing import OpenAITestServer, Step

HANDLE = re.compile(r"\bwk[0-9a-f]{10}\b")


def compress(
    server: OpenAITestServer, reply: str, session: list[Message] | None = None
) -> CompressionResult:
    server.script(Step.completion(reply))
    summarizer = LLMSummarizer(
        LLMSummarizerConfig(model="summ", base_url=server.base_url, timeout=2, total_timeout=8)
    )
    compressor = ContextCompressor(
        CompressionConfig(prune_only_ratio=0.01), context_length=32_000,
        summarizer=summarizer, today=lambda: date(2026, 12, 1),
    )  # fmt: skip
    return compressor.compress(session or long_session(30), force=True)


def written(result: CompressionResult) -> dict[str, str]:
    handoff = next(m for m in result.messages if is_handoff(m))
    body = handoff_body(content_text(handoff["content"])) or ""
    return {title: "\n".join(lines) for title, lines in split_sections(body).items()}


def test_the_budget_is_asked_up_front_and_records_carry_their_handles() -> None:
    with OpenAITestServer() as server:
        result = compress(server, "## Work State\n- Fixed it.\n\n## Next Step\nShip it.")
        prompt = server.chat_requests[0].prompt
    rule = re.search(r"Keep them within about ([\d,]+) tokens in all", prompt)
    assert rule is not None and prompt.index(rule.group(0)) < prompt.index(DATA_OPEN)
    assert f"Stay within the {rule.group(1)} tokens" in prompt
    labelled = set(HANDLE.findall(prompt.split(DATA_OPEN, 1)[1]))
    archived = {item.handle for item in result.archived}
    assert len(labelled) >= 20 and labelled <= archived  # each recalls its record


def test_notes_over_the_budget_lose_whole_items_oldest_first() -> None:
    done = [
        f"- Step {n}: edited module_{n}.py and the tests passed (wk{n:010x})" for n in range(400)
    ]
    reply = "\n".join([
        "## Work State", "Done (with evidence):", *done, "In progress:",
        "- Wiring the exporter into the CLI (wkffffffffff)",
        "## Key Decisions", "- Kept SQLite because the host has no Redis.",
        "### Risks (the model's own heading)", "- The CSV may exceed 1 GB for big months.",
        "## Next Step", "Run the whole suite, then commit.",
    ])  # fmt: skip
    with OpenAITestServer() as server:
        result = compress(server, reply)
    sections = written(result)
    work = sections["Work State"]
    assert "[…]" not in "\n".join(sections.values())
    kept = [line for line in work.split("\n") if line.startswith("- Step ")]
    assert kept and all(line in done for line in kept)  # whole lines only
    assert kept == done[len(done) - len(kept) :]  # the newest stayed
    marker = next(line for line in work.split("\n") if "left out for space" in line)
    assert marker.startswith(f"- ({len(done) - len(kept)} older items left out for space")
    trimmed = [HANDLE.findall(line)[0] for line in done[: len(done) - len(kept)]]
    assert f"recall {', '.join(trimmed[-12:])}, the newest 12 of {len(trimmed)} handles" in marker
    assert "- Wiring the exporter into the CLI (wkffffffffff)" in work  # in progress kept
    assert (
        sections["Next Step"].split(NOTES_BESIDE)[1].strip() == "Run the whole suite, then commit."
    )
    assert "### Risks" in work and "- The CSV may exceed 1 GB" in work  # own heading kept
    assert "- Kept SQLite because the host has no Redis." in sections["Key Decisions"]


def test_model_notes_sit_below_the_state_at_compaction_time_and_round_trip() -> None:
    """A model writes from the summarized turns: its Work State and Next Step are labelled
    as of the cut, below the state extracted at compaction time, never in its place."""
    reply = (
        "## Work State\nIn progress:\n- Wiring the exporter into the CLI (wk00000000aa)\n\n"
        "## Key Decisions\n- Kept SQLite because the host has no Redis.\n\n"
        "## Next Step\nWire the exporter, then run the suite."
    )
    with OpenAITestServer() as server:
        result = compress(server, reply)
    sections = written(result)
    state_part, notes = sections["Work State"].split(NOTES_BESIDE)
    assert state_part.startswith(AS_OF) and "Done" in state_part  # extracted, tail included
    assert notes.strip() == "In progress:\n- Wiring the exporter into the CLI (wk00000000aa)"
    last, next_notes = sections["Next Step"].split(NOTES_BESIDE)
    assert last.startswith("Last action: ran `pytest tests/test_29.py`")
    assert next_notes.strip() == "Wire the exporter, then run the suite."
    body = handoff_body(content_text(next(m for m in result.messages if is_handoff(m))["content"]))
    assert body is not None
    parsed = parse_state(body)
    assert parsed is not None
    for title in ("Work State", "Key Decisions", "Next Step"):  # carried exactly
        assert section_text(title, parsed, Shown()) == f"## {title}\n{sections[title]}".strip()
    assert dict(parsed.written)["Next Step"] == "Wire the exporter, then run the suite."
    assert dict(parsed.written)["Key Decisions"] == "- Kept SQLite because the host has no Redis."
    again = written_part(body)  # what the model is given to update next time
    assert AS_OF not in again and "Wiring the exporter into the CLI" in again


def test_model_notes_come_on_top_of_the_extracted_state() -> None:
    """The notes add to the handoff budget as far as the window allows: the extracted
    state (work, files, ledger) stays as the extractive handoff shows it, not traded for
    the notes."""
    finding = (
        "- Finding {n}: refunds round half-even in payments/refunds.py because {n} (wk{n:010x})"
    )
    reply = "\n".join([
        "## Work State", *(finding.format(n=n) for n in range(80)),
        "## Key Decisions", "- Kept Decimal because floats lose cents.",
        "## Next Step", "Ship it.",
    ])  # fmt: skip
    session = long_session(160, 300)  # its extractive handoff fills the budget
    with OpenAITestServer() as server:
        llm = written(compress(server, reply, session))
    extractive = ContextCompressor(
        CompressionConfig(prune_only_ratio=0.01), context_length=32_000,
        today=lambda: date(2026, 12, 1),
    ).compress(session, force=True)  # fmt: skip
    alone = written(extractive)
    assert "Earlier commands (counted, not listed)" in alone["State Ledger"]  # it was fitted
    assert "Finding 79" in llm["Work State"]  # the newest notes are there
    assert llm["Work State"].split(NOTES_BESIDE)[0].strip() == alone["Work State"].strip()
    for title in ("Files", "Open Errors"):
        assert llm.get(title) == alone.get(title), title

    def commands(ledger: str) -> set[str]:
        return {line for line in ledger.split("\n") if line.startswith("- `")}

    # The ledger, the first to give way, lists at least the commands it lists alone.
    assert commands(alone["State Ledger"]) <= commands(llm["State Ledger"])
    extracted = llm["Key Decisions"].split(NOTES_BESIDE)[0].strip()
    assert extracted == alone.get("Key Decisions", "").strip()  # the agent's own, kept


def test_notes_share_the_budget_when_the_window_has_no_room() -> None:
    plan = CompactionPlan(0, 5, (), None, True, 2_000, 50_000, None)
    labels = 3 * LABEL_TOKENS  # the notes' label lines in their three sections
    assert notes_on_top(plan) == written_budget(2_000) + labels  # the window has room
    assert notes_on_top(replace(plan, notes_room=300)) == 300
    assert notes_on_top(replace(plan, notes_room=0)) == 0


def test_the_model_reads_the_kept_turns_to_write_as_of_their_end() -> None:
    """The summary prompt carries the tail (masked, after the excerpt, marked as kept) so
    the notes never call open what the tail finished."""
    session = long_session(30)
    secret = "sk-proj-" + "Q7" * 24
    session[-1] = user(f"What changed in refunds.py? My key is {secret}")
    with OpenAITestServer() as server:
        compress(server, "## Work State\n- Done.\n\n## Next Step\nShip it.", session)
        prompt = server.chat_requests[0].prompt
    assert prompt.index(DATA_CLOSE) < prompt.index(KEPT_OPEN) < prompt.index(KEPT_CLOSE)
    kept = prompt[prompt.index(KEPT_OPEN) : prompt.index(KEPT_CLOSE)]
    excerpt = prompt[prompt.index(DATA_OPEN) : prompt.index(DATA_CLOSE)]
    assert "What changed in refunds.py?" in kept and "What changed in refunds.py?" not in excerpt
    assert secret not in prompt


def test_kept_turns_take_at_most_their_share_newest_first() -> None:
    turns = [user(f"turn {n} " + "x" * 900) for n in range(40)]
    request = SummaryRequest(
        turns=[], previous_summary=None, focus_topic=None, budget_tokens=2_000,
        today=date(2026, 12, 1), task_snapshot=None, has_user_turn=True, kept_after=turns,
    )  # fmt: skip
    cap = InputCap(chars=20_000)
    kept = kept_records(request, cap)
    assert 0 < len(kept) < len(turns) and sum(len(r) + 2 for r in kept) <= 20_000 * KEPT_SHARE
    assert "turn 39 " in kept[-1] and "turn 0 " not in "".join(kept)  # the newest stay


@pytest.mark.usefixtures("summary_tier")
def test_a_reply_with_none_of_the_requested_headings_is_a_reported_format_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in long_session(30)))
    report = tmp_path / "report.json"
    with OpenAITestServer() as server:
        server.script(Step.completion("## Goal\nFix refunds.\n\n## Critical Context\nrounding"))
        code = cli.main([
            "compress", str(session), "--context-length", "32000", "--report-json", str(report),
            "--summarizer", "llm", "--summary-model", "summ-1", "--summary-base-url",
            server.base_url, "--summary-timeout", "2", "--summary-context-length", "128000",
        ])  # fmt: skip
    out, err = capsys.readouterr()
    data = json.loads(report.read_text())
    assert code == 0 and data["failure"] == FailureKind.FORMAT.value
    assert data["fallback_used"] is True and "## Work State" in out
    assert "none of the requested headings" in err and "extractive" in err


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text("abc wk0123456789 -:#\n", max_size=60), max_size=40),
    st.lists(st.text("xyz -", max_size=40), max_size=10),
    st.integers(0, 400),
)
def test_trimming_keeps_whole_lines_and_never_trims_the_next_step(
    work: list[str], nexts: list[str], budget: int
) -> None:
    sections = [("Work State", "\n".join(work)), ("Next Step", "\n".join(nexts))]
    trimmed = dict(trim_sections(sections, budget))
    assert trimmed["Next Step"] == sections[1][1]
    source = sections[0][1].split("\n")
    for line in trimmed["Work State"].split("\n"):
        assert line in source or "left out for space" in line
