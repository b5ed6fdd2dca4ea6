"""The extractive summarizer: sections, verbatim snapshot, iteration, budget, determinism."""

from __future__ import annotations

import copy
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from windowkeeper.adapters.formats import load_conversation
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.summary.extractive.summarizer import ExtractiveSummarizer
from windowkeeper.summary.protocol import (
    NO_USER_SNAPSHOT,
    SECTION_TITLES,
    Summarizer,
    SummaryRequest,
)
from windowkeeper.summary.sections import parse_sections

Message = dict[str, Any]
TODAY = date(2025, 3, 14)
SESSIONS = Path("../shared/data/sessions")


def user(text: Any) -> Message:
    return {"role": "user", "content": text}


def say(text: str | None) -> Message:
    return {"role": "assistant", "content": text}


def tool_round(cid: str, name: str, args: dict[str, Any] | str, output: Any) -> list[Message]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    function = {"name": name, "arguments": arguments}
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "function": function}]},
        {"role": "tool", "tool_call_id": cid, "content": output},
    ]


def request(
    turns: list[Message],
    *,
    snapshot: str | None = None,
    previous: str | None = None,
    budget: int = 4_000,
    focus: str | None = None,
) -> SummaryRequest:
    has_user = any(m["role"] == "user" for m in turns) or snapshot is not None
    return SummaryRequest(turns, previous, focus, budget, TODAY, snapshot, has_user)


def summarize(turns: list[Message], **kwargs: Any) -> str:
    outcome = ExtractiveSummarizer().summarize(request(turns, **kwargs))
    assert outcome.failure is None and outcome.body is not None
    assert outcome.summarizer == "extractive"
    return outcome.body


def section(body: str, title: str) -> str:
    return parse_sections(body)[title]


def coding_session() -> list[Message]:
    return [
        user(
            "Fix the failing refund test in payments/refunds.py. Never push to main. "
            "Use port 8080 and Python 3.11, set REFUND_API_KEY from https://example.com/docs."
        ),
        say("I'll use the existing fixtures because they already mock the gateway."),
        *tool_round("c1", "bash", {"command": "cd /srv/app && git checkout -b fix/refunds"}, ""),
        *tool_round("c2", "Read", {"file_path": "payments/refunds.py"}, "1→def refund(): ..."),
        *tool_round("c3", "Read", {"file_path": "payments/refunds.py"}, "1→def refund(): ..."),
        *tool_round(
            "c4",
            "bash",
            {"command": "pytest -x tests/test_refunds.py"},
            "<returncode>1</returncode>\n<output>\nE       assert 10 == 12\n"
            "FAILED tests/test_refunds.py::test_partial - assert 10 == 12\n"
            "1 failed, 4 passed in 0.2s\n</output>",
        ),
        *tool_round("c5", "Edit", {"file_path": "payments/refunds.py"}, "ok"),
        *tool_round(
            "c6",
            "bash",
            {"command": "pytest -x tests/test_refunds.py"},
            "<returncode>0</returncode>\n<output>\n5 passed in 0.2s\n</output>",
        ),
        *tool_round("c7", "bash", {"command": "npm run dev &"}, "started"),
        *tool_round(
            "c8",
            "bash",
            {"command": "flake8 payments"},
            "<returncode>1</returncode>\n"
            "<output>\npayments/refunds.py:3:1: error: E302 expected 2 blank lines\n</output>",
        ),
        user("Does the refund path handle currency rounding?"),
        say("Yes. It rounds half-even before storing the amount. See refunds.py line 40."),
    ]


def test_is_a_summarizer() -> None:
    summarizer = ExtractiveSummarizer()
    assert isinstance(summarizer, Summarizer)
    assert summarizer.name == "extractive"


def test_sections_present_in_order() -> None:
    body = summarize(coding_session(), snapshot="Does the refund path handle rounding?")
    headings = re.findall(r"^## (.+)$", body, flags=re.MULTILINE)
    assert headings == list(SECTION_TITLES)


def test_sections_filled_mechanically() -> None:
    body = summarize(coding_session(), snapshot="Does the refund path handle rounding?")
    assert section(body, "Goal").startswith("Fix the failing refund test in payments/refunds.py.")
    assert "- Never push to main." in section(body, "Constraints & Preferences")
    actions = section(body, "Completed Actions").splitlines()
    assert actions[0] == "1. Ran `cd /srv/app && git checkout -b fix/refunds` [bash]"
    assert actions[1] == "2. Read payments/refunds.py ×2 [Read]"
    assert actions[2] == (
        "3. Ran `pytest -x tests/test_refunds.py` — exit 1 (1 failed, 4 passed in 0.2s) [bash]"
    )
    assert actions[3] == "4. Edited payments/refunds.py [Edit]"
    state = section(body, "Active State")
    assert "- Working directory: /srv/app" in state
    assert "- Git branch: fix/refunds" in state
    assert "- Last test run: `pytest -x tests/test_refunds.py` — exit 0 (5 passed in 0.2s)" in state
    assert "- Background processes: `npm run dev &`" in state
    assert "- Modified files: payments/refunds.py" in state
    blocked = section(body, "Blocked")
    assert "flake8 payments" in blocked
    assert "payments/refunds.py:3:1: error: E302 expected 2 blank lines" in blocked
    assert "assert 10 == 12" not in blocked  # the failing pytest was followed by a pass
    assert "because they already mock the gateway" in section(body, "Key Decisions")
    assert section(body, "Resolved Questions") == (
        "- Q: Does the refund path handle currency rounding? → A: Yes."
    )
    assert "- payments/refunds.py — modified (1), read (2)" in section(body, "Relevant Files")
    context = section(body, "Critical Context")
    assert context.splitlines()[0] == "- Compacted on 2025-03-14"
    for value in ("port: 8080", "version: Python 3.11", "env: REFUND_API_KEY"):
        assert f"- {value}" in context
    assert "- url: https://example.com/docs" in context.splitlines()


def test_snapshot_is_verbatim_even_with_heading_lines() -> None:
    snapshot = "Please do X.\n\n## Goal\nnot a real heading\n  indented `code`"
    body = summarize(coding_session(), snapshot=snapshot)
    assert body.startswith(f"## Historical Task Snapshot\n{snapshot}\n\n## Goal\n")
    assert section(body, "Historical Task Snapshot") == snapshot
    assert section(body, "Goal").startswith("Fix the failing refund test")


def test_huge_snapshot_is_capped_with_marker() -> None:
    snapshot = "A" * 1_000 + "B" * 5_000 + "C" * 400
    text = section(summarize([user(snapshot)], snapshot=snapshot), "Historical Task Snapshot")
    assert text.startswith("A" * 1_000 + "\n[... 5,000 chars omitted ...]\n")
    assert text.endswith("C" * 400)


def test_no_fabricated_user_ask() -> None:
    turns = [
        say("User asked: deploy everything to production. You must never test."),
        *tool_round("a1", "bash", {"command": "ls"}, "x"),
    ]
    outcome = ExtractiveSummarizer().summarize(
        SummaryRequest(turns, None, None, 2_000, TODAY, None, False)
    )
    assert outcome.body is not None
    assert section(outcome.body, "Historical Task Snapshot") == NO_USER_SNAPSHOT
    assert "deploy" not in section(outcome.body, "Goal")
    assert section(outcome.body, "Goal").startswith("None recorded")
    assert section(outcome.body, "Constraints & Preferences") == "None recorded"


def test_iterative_merge_continues_numbering_and_keeps_constraints() -> None:
    first = summarize(coding_session(), snapshot="Does the refund path handle rounding?")
    later = [
        user("Now add a changelog entry. Always keep entries under 80 chars."),
        *tool_round("d1", "Write", {"file_path": "CHANGELOG.md", "content": "x"}, "ok"),
        *tool_round(
            "d2", "bash", {"command": "git commit -am 'refunds'"}, "[fix/refunds 1a2b3c4] x"
        ),
    ]
    second = summarize(later, previous=first, snapshot="Now add a changelog entry.")
    old_actions = section(first, "Completed Actions").splitlines()
    new_actions = section(second, "Completed Actions").splitlines()
    assert new_actions[: len(old_actions)] == old_actions
    count = len(old_actions)
    assert new_actions[count] == f"{count + 1}. Wrote CHANGELOG.md [Write]"
    assert new_actions[count + 1].startswith(f"{count + 2}. Ran `git commit -am 'refunds'`")
    constraints = section(second, "Constraints & Preferences")
    assert "- Never push to main." in constraints
    assert "- Always keep entries under 80 chars." in constraints
    assert section(second, "Goal") == section(first, "Goal")
    assert "currency rounding" in section(second, "Resolved Questions")
    files = section(second, "Relevant Files")
    assert "payments/refunds.py — modified (1), read (2)" in files
    assert "CHANGELOG.md — modified (1)" in files
    state = section(second, "Active State")
    assert "Git branch: fix/refunds" in state and "Working directory: /srv/app" in state
    assert "payments/refunds.py, CHANGELOG.md" in state
    assert "(carried from the previous summary; may since be resolved)" in section(
        second, "Blocked"
    )
    context = section(second, "Critical Context")
    assert "- Previously compacted on 2025-03-14" in context
    assert "- port: 8080" in context


def test_previous_summary_from_another_summarizer_is_kept() -> None:
    body = summarize([user("go on")], previous="The agent fixed bug #12 in api.py.")
    assert "The agent fixed bug #12 in api.py." in section(body, "Critical Context")


def long_session(rounds: int = 250, output_chars: int = 2_000) -> list[Message]:
    turns: list[Message] = [user("Migrate the billing service. You must keep the API stable.")]
    for n in range(rounds):
        output = f"line {n}\n" + ("x" * 79 + "\n") * (output_chars // 80)
        turns += tool_round(f"r{n}", "bash", {"command": f"pytest tests/test_{n}.py"}, output)
        if n % 50 == 0:
            turns.append(say(f"I'll use approach {n} because it keeps the billing API stable."))
    return turns


def test_budget_respected_for_large_input() -> None:
    # Speed is measured in benchmarks/bench_compress.py, never asserted in tests.
    turns = long_session()
    assert sum(len(str(m.get("content"))) for m in turns) >= 500_000
    assert len(turns) >= 500
    body = summarize(turns, budget=2_000, snapshot="Migrate the billing service.")
    assert estimate_tokens(body) <= 2_000
    actions = section(body, "Completed Actions")
    assert re.match(r"1–\d+: condensed — ran \d+ commands", actions)
    assert actions.splitlines()[-1].startswith("250. Ran `pytest tests/test_249.py`")
    assert "- You must keep the API stable." in section(body, "Constraints & Preferences")


def test_condensed_actions_stay_condensed_across_compactions() -> None:
    first = summarize(long_session(60, 100), budget=500)
    assert re.match(r"1–\d+: condensed", section(first, "Completed Actions"))
    second = summarize(long_session(3, 100)[1:], previous=first, budget=4_000)
    lines = section(second, "Completed Actions").splitlines()
    assert lines[0] == section(first, "Completed Actions").splitlines()[0]
    assert lines[-1].startswith("63. Ran `pytest tests/test_2.py`")


@pytest.mark.parametrize("budget", [0, 10, 60, 300, 800])
def test_tiny_budgets_are_respected(budget: int) -> None:
    body = summarize(coding_session(), budget=budget, snapshot="x" * 2_000)
    assert estimate_tokens(body) <= budget


def test_focus_topic_items_kept_first() -> None:
    turns = long_session(120, 100)
    turns += tool_round("f1", "Read", {"file_path": "src/ledger_rules.py"}, "x")
    turns += tool_round("f2", "bash", {"command": "ls"}, "x")
    turns[:0] = tool_round("f0", "Read", {"file_path": "src/invoice_tax.py"}, "x")
    focused = summarize(turns, budget=700, focus="invoice tax")
    assert "Read src/invoice_tax.py" in section(focused, "Completed Actions")
    unfocused = summarize(turns, budget=700)
    assert "Read src/invoice_tax.py" not in section(unfocused, "Completed Actions")


def test_deterministic_and_input_not_mutated() -> None:
    turns = [*coding_session(), user([{"type": "text", "text": "see"}, {"type": "image_url"}])]
    before = copy.deepcopy(turns)
    bodies = {summarize(turns, budget=700, snapshot="see") for _ in range(3)}
    assert len(bodies) == 1
    assert turns == before


def test_odd_messages_are_tolerated() -> None:
    turns: list[Message] = [
        user([{"type": "text", "text": "Look at this screenshot"}, {"type": "image_url"}]),
        say(None),
        *tool_round("n1", "bash", "not json at all", [{"type": "text", "text": "fine"}]),
        {"role": "tool", "tool_call_id": "ghost", "content": "orphan"},
        *tool_round("n2", "mystery_tool", {"a": 1, "b": [1, 2]}, None),
    ]
    body = summarize(turns)
    assert section(body, "Goal") == "Look at this screenshot [image]"
    actions = section(body, "Completed Actions")
    assert "1. Ran `not json at all` [bash]" in actions
    assert "2. Called mystery_tool a=1 b=[1, 2] [mystery_tool]" in actions
    assert "orphan" not in actions


def test_blocked_lists_unresolved_failures_only() -> None:
    turns = [
        user("Build it."),
        *tool_round("b1", "bash", {"command": "make"}, "fatal: missing lib\nexit code 2"),
        *tool_round("b2", "bash", {"command": "make"}, "done\nexit code 0"),
    ]
    assert section(summarize(turns), "Blocked") == "None recorded"
    turns += tool_round("b3", "bash", {"command": "make test"}, "TypeError: x() takes 1\nexit 1")
    blocked = section(summarize(turns), "Blocked")
    assert blocked == "- Ran `make test` -> exit 1:\n  TypeError: x() takes 1"


@pytest.mark.real_sessions
def test_real_sessions_budget_and_determinism() -> None:
    files = sorted(SESSIONS.glob("*.jsonl"))
    if not files:
        pytest.skip(f"no sessions under {SESSIONS}")
    summarizer = ExtractiveSummarizer()
    for path in files:
        turns = [m for m in load_conversation(path).messages if m["role"] != "system"]
        users = [m for m in turns if m["role"] == "user" and isinstance(m["content"], str)]
        snapshot = users[-1]["content"] if users else None
        for budget in (2_000, 500):
            req = SummaryRequest(turns, None, None, budget, TODAY, snapshot, bool(users))
            body = summarizer.summarize(req).body
            assert body is not None and estimate_tokens(body) <= budget, path.name
            assert summarizer.summarize(req).body == body, path.name
            again = summarizer.summarize(
                SummaryRequest(turns[-6:], body, None, budget, TODAY, snapshot, True)
            ).body
            assert again is not None and estimate_tokens(again) <= budget, path.name


def test_constraints_are_whole_sentences_across_line_wraps() -> None:
    text = (
        "Change of plan: a partial refund must never exceed captured minus refunded,\n"
        "and when it would, raise RefundLimitExceeded. The API\nshould answer 422 for it."
    )
    constraints = section(summarize([user(text)], snapshot=text), "Constraints & Preferences")
    assert constraints.splitlines() == [
        "- Change of plan: a partial refund must never exceed captured minus refunded, "
        "and when it would, raise RefundLimitExceeded.",
        "- The API should answer 422 for it.",
    ]


def test_goal_repeating_the_snapshot_is_not_repeated() -> None:
    body = summarize([user("Fix the build.")], snapshot="Fix the build.")
    assert section(body, "Goal") == "Same as the Historical Task Snapshot."


def test_paths_relative_to_a_shared_root_and_deleted_files() -> None:
    root = "/home/me/projects/shop/"
    turns = [user("Tidy up.")]
    for n in range(4):
        turns += tool_round(f"r{n}", "Read", {"file_path": f"{root}src/m{n}.py"}, "x")
    turns += tool_round("e1", "Edit", {"file_path": f"{root}src/m0.py"}, "ok")
    turns += tool_round("w1", "Write", {"file_path": f"{root}tmp.py", "content": "x"}, "ok")
    turns += tool_round("x1", "bash", {"command": f"rm {root}tmp.py"}, "exit code 0")
    body = summarize(turns, snapshot="Tidy up.")
    state = section(body, "Active State")
    assert f"- Paths relative to: {root}" in state
    assert "- Modified files: src/m0.py" in state
    assert "- Deleted files: tmp.py" in state
    actions = section(body, "Completed Actions").splitlines()
    assert actions[0] == "1. Read src/m0.py, src/m1.py, src/m2.py, src/m3.py [Read]"
    assert body.count(root) == 2  # the root line and the rm command
    later = summarize(
        tool_round("e2", "Edit", {"file_path": f"{root}src/m1.py"}, "ok"), previous=body
    )
    assert "- Modified files: src/m0.py, src/m1.py" in section(later, "Active State")
    assert "src/m1.py — modified (1), read (1)" in section(later, "Relevant Files")


def test_failures_resolved_by_a_later_broader_success_are_not_blocked() -> None:
    rounds = [
        ("python -m pytest -q", "FAILED tests/test_a.py::test_x - AssertionError\n[exit code 1]"),
        ("ruff check src tests", "src/a.py:1:1: F401 unused import\n[exit code 1]"),
        ("python -m pytest tests/test_b.py", "E   KeyError: 'k'\n[exit code 1]"),
        ("ruff check src tests && mypy src", "ok\n[exit code 0]"),
        ("python -m pytest -v", "5 passed\n[exit code 0]"),
        ("npm run build", "error TS2304: Cannot find name 'x'.\n[exit code 2]"),
    ]
    turns = [user("Make the suite green.")]
    for n, (command, output) in enumerate(rounds):
        turns += tool_round(f"c{n}", "bash", {"command": command}, output)
    blocked = section(summarize(turns), "Blocked")
    assert "npm run build" in blocked and "TS2304" in blocked
    assert "pytest" not in blocked and "ruff" not in blocked


def test_findings_and_the_latest_progress_note_are_kept() -> None:
    turns = [
        user("Why do partial refunds fail?"),
        *tool_round("a", "bash", {"command": "pytest -q"}, "1 failed\n[exit code 1]"),
        say("The bug is in `refund_limit`: it subtracts refunds from the authorized amount."),
        *tool_round("b", "bash", {"command": "pytest -q"}, "5 passed\n[exit code 0]"),
        say("Fixed on branch fix/refunds: the limit now uses the captured amount. Suite green."),
    ]
    body = summarize(turns)
    assert "The bug is in `refund_limit`" in section(body, "Key Decisions")
    assert "Last progress note: Fixed on branch fix/refunds" in section(body, "Active State")


def test_polite_task_requests_are_not_carried_as_constraints() -> None:
    from windowkeeper.summary.extractive.summarizer import _constraints

    users = [
        (0, "Please fix the failing test in src/app.py."),
        (1, "Could you please run the linter."),
        (2, "Please keep the public API stable."),
        (3, "Please don't touch the migrations. Please use tabs for indentation."),
    ]
    assert _constraints(users) == [
        "Please keep the public API stable.",
        "Please don't touch the migrations.",
        "Please use tabs for indentation.",
    ]
