"""Handoff v2: what the extractive summary says, how it merges, and its text round trip."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from realdata import real_session_paths
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.analysis.commands import is_bookkeeping
from windowkeeper.analysis.events import Analysis
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.summary.extractive.summarizer import ExtractiveSummarizer
from windowkeeper.summary.handoff.claims import title_of
from windowkeeper.summary.handoff.extract import Placement, extract_state, previous_state
from windowkeeper.summary.handoff.fit import fitted
from windowkeeper.summary.handoff.items import item_status
from windowkeeper.summary.handoff.model import (
    Command,
    HandoffState,
    OpenError,
    Quote,
    SpecRole,
    WorkItem,
    WorkState,
)
from windowkeeper.summary.handoff.parse import parse_state, split_sections
from windowkeeper.summary.handoff.paths import choose_root
from windowkeeper.summary.handoff.text import NO_ERRORS, TITLES, render, shown_command
from windowkeeper.summary.handoff.valuetext import grouped_values
from windowkeeper.summary.protocol import Summarizer, SummaryRequest

Message = dict[str, Any]
TODAY = date(2025, 3, 14)
NEW = Placement(task_in_head=False, user_in_tail=False)


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


def bash(cid: str, command: str, output: str) -> list[Message]:
    return tool_round(cid, "bash", {"command": command}, output)


def state_of(turns: list[Message], previous: str | None = None, **placement: Any) -> HandoffState:
    where = Placement(**{**NEW.__dict__, **placement})
    return extract_state(Analysis(turns), previous_state(previous), where)


def body_of(turns: list[Message], previous: str | None = None, budget: int = 6_000) -> str:
    state = state_of(turns, previous)
    return render(state, fitted(state, budget))


def section(body: str, title: str) -> str:
    return "\n".join(split_sections(body).get(title, []))


def coding_session() -> list[Message]:
    return [
        user(
            "Fix the failing refund test in payments/refunds.py. Never push to main. "
            "Use port 8080 and Python 3.11."
        ),
        say("I'll use the existing fixtures because they already mock the gateway."),
        *bash("c1", "cd /srv/app && git checkout -b fix/refunds", ""),
        *tool_round("c2", "Read", {"file_path": "/srv/app/payments/refunds.py"}, "1→def refund()"),
        *bash(
            "c3",
            "pytest -x tests/test_refunds.py",
            "<returncode>1</returncode>\n<output>\nE       assert 10 == 12\n"
            "FAILED tests/test_refunds.py::test_partial - assert 10 == 12\n1 failed\n</output>",
        ),
        *tool_round("c4", "Edit", {"file_path": "/srv/app/payments/refunds.py"}, "ok"),
        *bash(
            "c5", "pytest -x tests/test_refunds.py", "<returncode>0</returncode>\n5 passed in 0.2s"
        ),
        *bash("c6", "grep -rn rounding payments", "<returncode>1</returncode>\n"),
        user("Does the refund path handle currency rounding?"),
        say("Yes. It rounds half-even before storing the amount. Next I will run flake8."),
    ]


# --- the summarizer --------------------------------------------------------------------


def test_is_a_deterministic_summarizer_that_never_mutates() -> None:
    turns = coding_session()
    snapshot = copy.deepcopy(turns)
    request = SummaryRequest(turns, None, None, 4_000, TODAY, None, True)
    first = ExtractiveSummarizer().summarize(request)
    assert isinstance(ExtractiveSummarizer(), Summarizer)
    assert first.body == ExtractiveSummarizer().summarize(request).body
    assert first.failure is None and first.summarizer == "extractive"
    assert turns == snapshot


def test_sections_in_order_and_the_body_reads_back_exactly() -> None:
    state = state_of(coding_session())
    body = render(state)
    titles = [line[3:] for line in body.splitlines() if line.startswith("## ")]
    assert titles == [t for t in TITLES if t in titles] and "Task" in titles
    assert parse_state(body) == state


def test_every_fact_of_the_session_is_in_its_section() -> None:
    body = body_of(coding_session())
    task = section(body, "Task")
    assert "Fix the failing refund test in payments/refunds.py. Never push to main." in task
    assert "Does the refund path handle currency rounding?" in task
    assert "- Never push to main." in section(body, "Constraints & Preferences")
    work = section(body, "Work State")
    assert "Edited /srv/app/payments/refunds.py" in work or "Edited payments/refunds.py" in work
    # The failure was fixed by a later run: it is not open, and the fix names what it
    # fixed and what fixed it (the edit, then the passing re-run).
    fixed = "FAILED tests/test_refunds.py::test_partial - assert 10 == 12 → fixed by: edited "
    assert fixed + "payments/refunds.py; `pytest -x tests/test_refunds.py` then passed" in work
    assert "- tests `pytest -x tests/test_refunds.py`: passed (5 passed in 0.2s)" in work
    assert "Working directory: /srv/app" in work and "Git branch: fix/refunds" in work
    # grep without a match is not an error; the section says that none is open.
    assert section(body, "Open Errors").strip() == NO_ERRORS
    assert "Modified: payments/refunds.py" in section(body, "Files")
    assert "Root: /srv/app/" in section(body, "Files")
    assert "8080" in section(body, "Critical Values")
    assert "Next I will run flake8." in section(body, "Next Step")
    assert "Read-only commands (counted): grep 1" in section(body, "State Ledger")
    assert "omitted for space" not in body and "-> exit ?" not in body


def test_the_task_is_verbatim_with_its_indentation_and_markdown() -> None:
    task = (
        "Fix this:\n\n```python\ndef f():\n    return 1\n```\n## Not a heading of ours\n~~~~ tildes"
    )
    body = body_of([user(task), say("ok"), *bash("b1", "make", "<returncode>0</returncode>")])
    assert task in body
    assert parse_state(body) is not None and parse_state(body).task.text == task  # type: ignore[union-attr]


def test_the_task_and_user_messages_survive_repeated_compactions() -> None:
    task = "Port the billing module to the new API.\n  Keep the old endpoints working."
    body = body_of([user(task), say("Starting."), *bash("a", "make", "ok")])
    said = []
    for round_ in range(12):
        said.append(f"Round {round_}: also keep the log format stable, id ABC-{100 + round_}.")
        turns = [user(said[-1]), say("Noted."), *bash(f"r{round_}", "make test", "ok")]
        body = body_of(turns, previous=body, budget=2_000)
    assert task in body
    for text in said:  # every user message, verbatim or (oldest) by its first line
        assert text in body


def test_synthetic_user_messages_are_not_user_messages() -> None:
    turns = [
        user("Implement the exporter."),
        say("On it."),
        user(
            "<task-notification>\n<task-id>b1</task-id>\n</task-notification>\nRead the output "
            "file to retrieve the result: /tmp/x.output"
        ),
        user("[Request interrupted by user] use CSV, not JSON."),
        user(
            "This session is being continued from a previous conversation that ran out of "
            "context. The summary below covers the earlier portion."
        ),
        say("Switching to CSV."),
    ]
    state = state_of(turns)
    assert state.task is not None and state.task.text == "Implement the exporter."
    assert [u.text for u in state.users] == []
    assert state.request is not None and state.request.text == "use CSV, not JSON."
    assert "/tmp/x.output" not in " ".join(state.constraints)


def test_constraints_of_every_kind_are_pinned() -> None:
    stated = [
        "I prefer tabs over spaces in this repo.",
        "The staging database port is 54329.",
        "Never run migrations against production.",
        "We'll use Redis for the cache because the team already runs it.",
    ]
    body = body_of([user("Start the refactor."), say("ok"), *bash("s", "ls", "a")])
    for index, fact in enumerate(stated):
        body = body_of([user(fact), say("Understood.")], previous=body, budget=2_000)
        for later in range(6):  # later compactions with lots of other material
            noise = [user(f"Next chunk {index}.{later}: keep going.")] + [
                m for k in range(8) for m in bash(f"n{index}{later}{k}", f"make step{k}", "x" * 900)
            ]
            body = body_of(noise, previous=body, budget=2_000)
    constraints = section(body, "Constraints & Preferences")
    for fact in stated:
        assert fact in constraints


def test_work_state_comes_from_a_todo_list_and_checks_evidence() -> None:
    todos = [
        {"content": "Write the parser", "status": "completed"},
        {"content": "Add tests", "status": "in_progress"},
        {"content": "Update docs", "status": "pending"},
    ]
    start = [{"content": t["content"], "status": "pending"} for t in todos]
    turns = [
        user("Do the three steps."),
        *tool_round("t1", "TodoWrite", {"todos": start}, "ok"),
        *tool_round("w1", "Write", {"file_path": "src/parser.py", "content": "x"}, "File created"),
        *tool_round("t2", "TodoWrite", {"todos": todos}, "ok"),
    ]
    work = state_of(turns).work
    assert "Write the parser" in work.done
    assert work.in_progress == ("Add tests",) and work.pending == ("Update docs",)
    no_evidence = [user("Do it."), *tool_round("t3", "TodoWrite", {"todos": todos}, "ok")]
    assert any("Write the parser" in item for item in state_of(no_evidence).work.unverified)


def test_a_failure_is_resolved_by_running_the_step_that_failed_again() -> None:
    turns = [
        user("Make the script pass."),
        *bash(
            "f1",
            "cat > t.py << 'EOF'\nimport missing\nEOF\npython t.py",
            "Traceback (most recent call last):\nModuleNotFoundError: No module named 'missing'"
            "\n<returncode>1</returncode>",
        ),
        *bash("f2", "pip install missing", "<returncode>0</returncode>"),
        *bash("f3", "python t.py", "<returncode>0</returncode>"),
    ]
    state = state_of(turns)
    assert state.errors == ()
    assert state.work.fixed == (
        "`cat > t.py << 'EOF' ; python t.py` exit 1: ModuleNotFoundError: No module named "
        "'missing' → installed: `pip install missing` ok",
    )


TRACE = "Traceback (most recent call last):\n"


def test_what_failed_before_a_fix_is_kept_not_only_the_last_error() -> None:
    """Each attempt that failed with its own error is part of the plot: the success that
    ends them names them all (a few, then a count), whether the outputs were still whole
    or already pruned to stubs that kept their error."""
    attempts = [
        ("RuntimeError: no app_label",
         f"{TRACE}RuntimeError: no app_label\n<returncode>1</returncode>"),
        ("ModuleNotFoundError: No module named 'app'",
         "[bash] ran `python repro.py` -> exit 1, 9 lines output; error: ModuleNotFoundError: "
         "No module named 'app' (ref wk0123456789)"),
        ("TypeError: bad keyword",
         f"{TRACE}TypeError: bad keyword\n<returncode>1</returncode>"),
    ]  # fmt: skip
    turns = [user("Reproduce the bug.")]
    for n, (_, output) in enumerate(attempts):
        turns += tool_round(
            f"e{n}", "str_replace_editor", {"command": "create", "path": "repro.py"}, "ok"
        )
        turns += bash(f"r{n}", "python repro.py", output)
    turns += bash("ok", "python repro.py", "reproduced\n<returncode>0</returncode>")
    state = state_of(turns)
    assert state.errors == ()
    fixed = state.work.fixed
    assert [error for error, _ in attempts] == [f.split(": ", 1)[1].split(" → ")[0] for f in fixed]
    # Each attempt's error with the change made before the next attempt; the last one
    # with the run that passed.
    assert all(" → fixed by: wrote repro.py; the next run failed otherwise" in f for f in fixed[:2])
    assert fixed[-1].endswith("`python repro.py` then ok")


def test_a_repeated_pair_of_steps_is_counted_not_listed() -> None:
    turns = [user("Tune the script.")]
    for n in range(4):
        edit = {"path": "/w/run.py", "old_str": f"a{n}", "new_str": f"b{n}"}
        turns += tool_round(f"e{n}", "str_replace_editor", {"command": "str_replace", **edit}, "ok")
        turns += bash(f"r{n}", "python /w/run.py", "done\n<returncode>0</returncode>")
    done = state_of(turns).work.done
    # Paths are relative to the root (the Files section names it).
    assert done == ("Edited run.py (str_replace_editor ok) ×4",
                    "Ran `python run.py` (exit 0) ×4")  # fmt: skip


def open_after(*steps: tuple[str, str]) -> list[str | None]:
    """The commands of the errors open after a request and these shell steps."""
    turns = [user("Ship it.")]
    for n, (command, output) in enumerate(steps):
        turns += bash(f"s{n}", command, output)
    return [e.command for e in state_of(turns).errors]


def test_the_same_operation_over_what_failed_resolves_it() -> None:
    ok, fail = "<returncode>0</returncode>", "fatal: no upstream\n<returncode>128</returncode>"
    lint = "a.ex: nesting too deep\n<returncode>2</returncode>"

    assert open_after(("git push", fail), ("git push --set-upstream origin main", ok)) == []
    assert open_after(("git push", fail), ("cd /repo && git push -u origin x", ok)) == []
    # The same program and subcommand, arguments aside: a lint clean on other files, a
    # `git add` of other paths (the failing step ending a chain).
    assert open_after(("mix credo --strict a.ex b.ex", lint), ("mix credo c.ex", ok)) == []
    beyond = "fatal: pathspec '_build/x.exs' is beyond a symlink\n<returncode>128</returncode>"
    chain = "git add lib/a.ex && git add _build/x.exs"
    assert open_after((chain, beyond), ("git add priv/x.exs && git commit -m 'x'", ok)) == []
    # A narrower test run, another script, or another subcommand does not show it fixed.
    tests = "FAILED t/a_test.py\n<returncode>1</returncode>"
    narrower = open_after(("pytest t/a_test.py t/b_test.py", tests), ("pytest t/b_test.py", ok))
    assert narrower == ["pytest t/a_test.py t/b_test.py"]
    assert open_after(("python a.py", lint), ("python b.py", ok)) == ["python a.py"]
    assert open_after(("git push", fail), ("git status", ok)) == ["git push"]


def test_a_commit_that_includes_the_failing_file_resolves_it() -> None:
    script = "scripts/tail.sh: line 3: tial: command not found\n<returncode>127</returncode>"
    ok = "[main 1a2b3c4] add tail\n<returncode>0</returncode>"

    failing = ("bash /w/scripts/tail.sh", script)
    assert open_after(failing, ("git add scripts/tail.sh && git commit -m 'tail'", ok)) == []
    assert open_after(failing, ("git commit -am 'tail'", ok)) == []
    assert open_after(failing, ("git add -A && git commit -m 'add scripts/tail.sh'", ok)) == []
    # A commit of other files, or staging without a commit, leaves it open.
    other = open_after(failing, ("git add README.md && git commit -m 'scripts/tail.sh'", ok))
    assert other == ["bash /w/scripts/tail.sh"]
    assert open_after(failing, ("git add scripts/tail.sh", ok)) == ["bash /w/scripts/tail.sh"]
    # "Nothing to commit" is no failure: the work is committed already.
    clean = "On branch main\nnothing to commit, working tree clean\n<returncode>1</returncode>"
    assert open_after(("git add a.py && git commit -m 'a'", clean)) == []


def test_a_skill_named_for_an_operation_is_resolved_by_that_operation() -> None:
    failure = "fatal: ambiguous argument 'main..HEAD': unknown revision"
    turns = [
        user("Commit the work."),
        *tool_round("k", "Skill", {"skill": "handgemacht:commit"}, f"[tool error] {failure}"),
    ]
    assert [e.command for e in state_of(turns).errors] == [None]
    commit = "git add lib/a.ex && git commit -m 'feat: a'"
    turns += bash("c", commit, "[feat 3bb8701] feat: a\n<returncode>0</returncode>")
    state = state_of(turns)
    assert state.errors == ()
    assert state.work.fixed == (
        f"Skill skill=handgemacht:commit failed: [tool error] {failure} → done instead with "
        f"`{commit}` ok",
    )
    # Another operation does not stand in for it.
    other = [*turns[:3], *bash("p", "git push", "<returncode>0</returncode>")]
    assert len(state_of(other).errors) == 1


def test_the_next_step_comes_from_the_newest_actions() -> None:
    """An intent that later calls went past is superseded; the next step is then derived
    from the newest actions, as of compaction time."""
    read = {"file_path": "/w/pane_list_live.ex"}
    said = [user("Restyle the pane list."), say("Let me read the PaneListLive and the CSS file.")]
    assert state_of(said).next_step.endswith(": Let me read the PaneListLive and the CSS file.")
    start = [*said, *tool_round("r", "Read", read, "defmodule PaneListLive")]
    # Its own first call round may have done part of it: still the next step, so labelled.
    assert "may have done part of it): Let me read the PaneListLive" in state_of(start).next_step
    edit = {"file_path": "/w/pane_list_live.ex", "old_string": "a", "new_string": "b"}
    later = [*start, *tool_round("e", "Edit", edit, "ok")]
    state = state_of(later)
    assert "PaneListLive and the CSS" not in state.next_step
    assert state.next_step.startswith("Next (derived at compaction time")
    assert state.last_action.startswith("edited pane_list_live.ex (ok)")  # root-relative
    todos = {"todos": [{"content": "Style the chips", "status": "completed"},
                       {"content": "Run the LiveView tests", "status": "in_progress"}]}  # fmt: skip
    planned = [*later, *tool_round("t", "TodoWrite", todos, "ok")]
    assert "newest todo item open: Run the LiveView tests" in state_of(planned).next_step


def test_the_next_step_finishes_the_work_item_as_earlier_ones_were() -> None:
    """A claimed item changed and not tested since: test it, then close, commit and push
    (the steps the session took for the items before it)."""
    ok = "<returncode>0</returncode>"
    pushed = "[main 1a2b3c4] feat: a (app-1)\n   0a0b0c0..1a2b3c4  main -> main\n" + ok
    edit = {"file_path": "/w/b.py", "old_string": "a", "new_string": "b"}
    turns = [
        user("Do app-1 and app-2."),
        *bash("c1", "bd update app-1 --status in_progress", ok),
        *bash("t1", "pytest", "3 passed\n" + ok),
        *bash("x1", "bd close app-1", ok),
        *bash("g1", "git commit -am 'feat: a (app-1)' && git push", pushed),
        *bash("c2", "bd update app-2 --status in_progress", ok),
        *tool_round("e2", "Edit", edit, "ok"),
        say("Done with the edit."),
    ]
    state = state_of(turns)
    items = {i.id: i for i in state.work.items}
    assert items["app-1"].evidence[-3:] == ("closed", "committed 1a2b3c4", "pushed")
    assert items["app-2"].evidence == ("claimed", "edited b.py")
    assert state.next_step == (
        "Next (derived at compaction time from the newest actions): check the changes of "
        "app-2 (b.py): no test ran after them, then close app-2, commit and push"
    )


def test_bookkeeping_is_no_done_item_and_work_items_carry_titles_and_evidence() -> None:
    ok = "<returncode>0</returncode>"
    turns = [
        user("Work on bead app-7."),
        *bash("r", "bd ready", "1. [P2] [task] app-7.2: Add import (blocked by: app-7)\n" + ok),
        *bash("s", "bd show app-7.1", "○ app-7.1 · Add export   [● P1 · OPEN]\nGoal: CSV\n" + ok),
        *bash("u", "bd update app-7.1 --status in_progress 2>&1", ok),
        *bash("m", "mkdir -p lib/export && chmod +x run.sh", ok),
        *bash("t", "mix test", "3 tests, 0 failures\n" + ok),
        *bash("c", "bd close app-7.1 --reason=done", "✓ Closed app-7.1: Closed\n" + ok),
        *bash("v", "gh issue view 12", "title:\tAdd import\n" + ok),
        *bash("n", "bd update app-7.2 --status=in_progress", ok),
    ]
    work = state_of(turns).work
    assert work.done == ()  # bookkeeping is no work, and the test run is the item's
    assert work.items == (
        WorkItem("app-7.1", "Add export",
                 ("claimed", "tests passed: `mix test` (3 tests, 0 failures)", "closed")),
        WorkItem("app-7.2", "Add import", ("claimed",)),
    )  # fmt: skip
    assert [item_status(i) for i in work.items] == ["done: closed", "in progress: claimed"]
    assert "12" not in " ".join(i.id for i in work.items)  # viewing an issue is no work
    # A tracker step that changes the state of the work is work.
    assert not is_bookkeeping("bd update app-7.1 --status closed")
    assert not is_bookkeeping("gh pr create -t x") and not is_bookkeeping("mkdir a && mv b a/")
    assert is_bookkeeping("gh issue list --state open") and not is_bookkeeping("ls")


def test_the_task_spec_and_the_claimed_items_spec_are_kept() -> None:
    """The look-ups that define the work keep their goal and acceptance lines (a short one
    verbatim), not a stub that counts lines, in the Task Spec section only; an output
    showing several items gives each its own part; the item in progress is the one shown
    (not the one looked up last), and once it is closed, the newest item not closed."""
    ok = "<returncode>0</returncode>"
    filler = [f"- background note {n} about the history of the module" for n in range(30)]
    epic = "\n".join(["○ app-7 [EPIC] · CSV export", "## Goal", "Export invoices as CSV.",
                      "## History", *filler, "## Constraints", "- Never change the API.",
                      ok])  # fmt: skip
    both = "○ app-7.2 · Add headers\nDone when: headers match\n===\n○ app-7.3 · Add footers\n"
    turns = [
        user("Work on bead app-7."),
        *bash("e", "bd show app-7", epic),
        *bash("u", "bd update app-7.2 --status in_progress", ok),
        *bash("s", "bd show app-7.2; echo ===; bd show app-7.3", both + ok),
    ]
    state = state_of(turns)
    task, later, item = state.specs
    assert (task.source, task.item, task.shortened, task.role) == (
        "bd show app-7", "app-7", True, SpecRole.TASK
    )  # fmt: skip
    assert task.text.startswith("○ app-7 [EPIC] · CSV export\n## Goal\nExport invoices as CSV.")
    assert "## Constraints\n- Never change the API." in task.text
    assert "background note 7" not in task.text and ok not in task.text
    assert (item.text, item.item, item.shortened, item.role) == (
        "○ app-7.2 · Add headers\nDone when: headers match", "app-7.2", False,
        SpecRole.IN_PROGRESS,
    )  # fmt: skip
    assert (later.item, later.text, later.handle != "") == ("app-7.3", "", True)
    assert state.work.items == (WorkItem("app-7.2", "Add headers", ("claimed",)),)
    body = body_of(turns)
    assert parse_state(body).specs == state.specs
    spec_section = section(body, "Task Spec")
    assert spec_section.startswith("Spec of the task: `bd show app-7` · item app-7 · shortened")
    assert "\nSpec of the item in progress: " in spec_section
    # The spec is said once: the Work State names the item, not its spec.
    assert body.count("Done when: headers match") == 1
    assert "Done when" not in section(body, "Work State")
    # Once the item is closed, the spec shown is the newest item's not closed.
    closed = state_of([*turns, *bash("x", "bd close app-7.2", ok)])
    task2, *_, shown = closed.specs
    assert task2 == task and (shown.item, shown.role) == ("app-7.3", SpecRole.NOT_CLOSED)
    assert shown.text == "○ app-7.3 · Add footers"
    text = render(closed)
    assert "Spec of the newest item not closed: `bd show app-7.2; echo ===; bd show" in text
    assert parse_state(text).specs == closed.specs


def test_an_older_handoffs_specs_in_the_work_state_are_not_read_as_work() -> None:
    """A handoff written before the Task Spec section listed spec excerpts under the Work
    State; read back, they are no pending step or any other part of the work state."""
    body = "\n".join([
        "## Task", "Original request: the first user message above, kept verbatim.",
        "## Work State", "Pending:", "- Run the tests.",
        "Specs (what the task and the open items ask for):",
        "- Spec from `bd show app-7`: ○ app-7 · CSV export | ## Goal | Export invoices.",
    ])  # fmt: skip
    state = parse_state(body)
    assert state is not None
    assert state.work == WorkState(pending=("Run the tests.",)) and state.specs == ()


def test_open_errors_are_listed_newest_first_and_read_back_in_order() -> None:
    turns = [
        user("Fix the build."),
        *bash("b", "make build", "error: bad\n<returncode>2</returncode>"),
        *bash("d", "make docs", "error: worse\n<returncode>2</returncode>"),
    ]
    body = body_of(turns)
    listed = section(body, "Open Errors")
    assert listed.index("`make docs`") < listed.index("`make build`")
    assert parse_state(body).errors == state_of(turns).errors  # the state: as they happened


def test_open_errors_carried_from_the_previous_handoff_until_resolved() -> None:
    failing = [
        user("Fix the build."),
        *bash("b1", "make build", "error: bad\n<returncode>2</returncode>"),
    ]
    first = body_of(failing)
    assert "`make build` -> exit 2" in section(first, "Open Errors")
    still = body_of([say("Looking."), *bash("l", "ls", "Makefile")], previous=first)
    assert "`make build` -> exit 2" in section(still, "Open Errors")
    fixed = body_of([*bash("b2", "make build", "<returncode>0</returncode>")], previous=still)
    assert section(fixed, "Open Errors").strip() == NO_ERRORS


def test_files_edited_through_the_shell_are_modified_and_reads_are_not() -> None:
    turns = [
        user("Fix it."),
        *bash("r1", "cd /repo && cat src/a.py src/b.py", "code"),
        *bash("e1", "cd /repo && sed -i 's/x/y/' src/a.py", ""),
        *bash(
            "e2",
            "cd /repo && python - << 'EOF'\nopen('src/c.py', 'w').write('z')\nEOF",
            "<returncode>0</returncode>",
        ),
        *bash("e3", "cd /repo && cp src/d.py.bak src/d.py", ""),
        *tool_round("e4", "str_replace_editor", {"command": "view", "path": "/repo/src/e.py"}, "1"),
        *bash("g1", "cd /repo && git status", "On branch main\n\tmodified:   src/f.py\n"),
    ]
    files = dict(state_of(turns).files)
    for name in ("a", "c", "d", "f"):
        assert files[f"/repo/src/{name}.py"] == "modified", name
    assert files["/repo/src/e.py"] == "read"
    assert "/repo/src/b.py" not in files or files["/repo/src/b.py"] == "read"


def test_the_budget_is_kept_and_the_task_never_dropped() -> None:
    turns = [user("Refactor everything; never touch vendor/.")]
    for k in range(300):
        turns += bash(f"c{k}", f"python step_{k}.py --flag {k}", f"E   AssertionError: {k}\nexit 1")
        turns.append(say(f"I decided to use approach {k} instead of {k - 1}."))
    for budget in (400, 1_000, 3_000):
        body = body_of(turns, budget=budget)
        assert estimate_tokens(body) <= budget, budget
        assert "Refactor everything; never touch vendor/." in body
        assert "omitted for space" not in body


def test_focus_topic_keeps_its_decisions_longest() -> None:
    turns = [user("Tune the service.")]
    for k in range(40):
        turns.append(say(f"I decided to keep setting {k} instead of changing it."))
    turns.append(say("I decided to use gzip instead of brotli for the cache layer."))
    turns += [say(f"I decided to keep knob {k} instead of tweaking it.") for k in range(40)]
    request = SummaryRequest(turns, None, "cache", 900, TODAY, None, True)
    body = ExtractiveSummarizer().summarize(request).body or ""
    assert "gzip instead of brotli" in body


def test_another_summarizers_text_is_kept_as_notes() -> None:
    body = body_of([user("Go on."), say("ok")], previous="Free-form notes from another tool.")
    assert "Free-form notes from another tool." in section(body, "Notes")


def test_odd_messages_are_tolerated() -> None:
    turns = [
        user(None), user([]), user([{"type": "image_url", "image_url": {"url": "x"}}]),
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "function": {}}]},
        {"role": "tool", "tool_call_id": "orphan", "content": [{"type": "text", "text": "hi"}]},
        *tool_round("n1", "bash", "not json at all", "ok"), say(""),
    ]  # fmt: skip
    body = body_of(turns)
    assert parse_state(body) is not None


@pytest.mark.real_sessions
def test_real_sessions_keep_the_budget_and_read_back() -> None:
    sessions = real_session_paths()
    if not sessions:
        pytest.skip("the real sessions are not here")
    for path in sessions:
        turns = load_conversation(path).messages
        state = extract_state(Analysis(turns), HandoffState(), NEW)
        for budget in (2_000, 6_000):
            body = render(state, fitted(state, budget))
            pinned = estimate_tokens(
                render(HandoffState(task=state.task, constraints=state.constraints))
            )
            assert estimate_tokens(body) <= max(budget, pinned + 50), (path.name, budget)
            reread = parse_state(body)
            assert reread is not None and render(reread) == body, path.name


# --- the text round trip ----------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
_LINE = _TEXT.map(lambda s: " ".join(s.split())).filter(bool)
_QUOTE = st.builds(Quote, _TEXT.filter(lambda s: s.strip()), st.just("wk0123456789"), st.booleans())
_PATH = st.from_regex(r"/[a-z]{1,8}(/[a-z_]{1,8}){0,3}\.(py|md|txt)", fullmatch=True)


def _grouped(files: list[tuple[str, str]]) -> list[tuple[str, str]]:
    order = ("created", "modified", "deleted", "read")
    return [f for status in order for f in files if f[1] == status]


_ITEM = st.builds(
    WorkItem,
    st.from_regex(r"[a-z]{1,6}-[a-z0-9]{1,4}(\.[0-9]{1,2})?|#[0-9]{1,4}", fullmatch=True),
    _TEXT.map(lambda s: " ".join(s.split())),
    st.lists(_LINE, max_size=4).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(
    task=st.one_of(st.none(), _QUOTE), users=st.lists(_QUOTE, max_size=4),
    constraints=st.lists(_LINE, max_size=4), done=st.lists(_LINE, max_size=4),
    files=st.lists(st.tuples(_PATH, st.sampled_from(["created", "modified", "deleted", "read"])),
                   max_size=6, unique_by=lambda f: f[0]).map(_grouped),
    values=st.lists(_LINE, max_size=5), commands=st.lists(_LINE, max_size=4),
    codes=st.lists(st.one_of(st.none(), st.integers(-2, 255)), min_size=4, max_size=4),
    errors=st.lists(_LINE, max_size=3), decisions=st.lists(_LINE, max_size=3),
    items=st.lists(_ITEM, max_size=3, unique_by=lambda i: i.id),
    lines=st.lists(_LINE, max_size=3), commits=st.lists(st.tuples(
        st.from_regex(r"[0-9a-f]{7}", fullmatch=True), _TEXT), max_size=2),
    last=_LINE,
)  # fmt: skip
def test_render_then_parse_is_the_identity(
    task: Quote | None, users: list[Quote], constraints: list[str], done: list[str],
    files: list[tuple[str, str]], values: list[str], commands: list[str], codes: list[int | None],
    errors: list[str], decisions: list[str], items: list[WorkItem], lines: list[str],
    commits: list[tuple[str, str]], last: str,
) -> None:  # fmt: skip
    shas = tuple(dict(commits).items())
    work = WorkState(done=tuple(done), earlier=(("ran", 3),), items=tuple(items),
                     latest=tuple(lines), fixed=tuple(lines), changes=tuple(lines))  # fmt: skip
    state = HandoffState(
        task=task, users=tuple(users), constraints=tuple(constraints), work=work,
        task_rules=tuple(reversed(constraints)),
        errors=tuple(OpenError(shown_command(c), (c,), 1, c) for c in commands[:2]),
        decisions=tuple(decisions), files=tuple(files),
        values=grouped_values(values, shas, (i.id for i in items)), commits=shas,
        commands=tuple(Command(c, code) for c, code in zip(commands, codes, strict=False)),
        read_only=(("grep", 2),), error_lines=tuple(errors), next_step="Run the tests.",
        last_action=last, covered=last,
    )  # fmt: skip
    reread = parse_state(render(state))
    assert reread is not None
    # An unset root is chosen when rendering (three or more files under one directory);
    # reading the text back yields that root, so it is part of the identity.
    assert reread == replace(state, root=choose_root(path for path, _ in files))


def test_a_root_chosen_when_rendering_is_read_back() -> None:
    """Three files under one directory get a ``Root:`` line the state did not name."""
    files = tuple((f"/a/_/{name}", "created") for name in ("_.py", "a.py", "b.py"))
    state = HandoffState(files=files, next_step="Run the tests.")
    text = render(state)
    assert "Root: /a/_/" in text
    reread = parse_state(text)
    assert reread is not None
    assert reread.files == files
    assert reread.root == "/a/_/"


@settings(max_examples=200, deadline=None)
@given(
    item=st.from_regex(r"[a-z]{1,6}-[a-z0-9]{1,4}(\.[0-9]{1,2})?", fullmatch=True),
    before=st.text(max_size=60),
    after=st.text(max_size=200),
)
def test_a_title_is_read_from_any_output_or_none(item: str, before: str, after: str) -> None:
    output = f"{before}{item}{after}"
    title = title_of(item, output)
    flat = " ".join(output.split())
    assert title is None or (title and "\n" not in title and title[:20].strip() in flat)
    assert title_of(item, f"{item}: Ship the export\n") == "Ship the export"


# --- the state at compaction time covers the tail, counted once ------------------------


def _fold_session() -> tuple[list[Message], list[Message], list[Message], list[Message]]:
    ok = "<returncode>0</returncode>"
    pushed = "[main 1a2b3c4] feat: a (app-1)\n   0a0b0c0..1a2b3c4  main -> main\n" + ok
    edit_a = {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"}
    edit_b = {"file_path": "/w/b.py", "old_string": "x", "new_string": "y"}
    first = [
        user("Do app-1 and app-2 in /w."),
        *bash("c1", "bd update app-1 --status in_progress", ok),
        *tool_round("e1", "Edit", edit_a, "ok"),
        *bash(
            "t1", "pytest", "FAILED t/test_a.py::test_x - assert 1 == 2\n<returncode>1</returncode>"
        ),
        *tool_round("e2", "Edit", edit_a, "ok"),
        *bash("t2", "pytest", "3 passed\n" + ok),
        *bash("l1", "ls /w", "a.py\nb.py"),
    ]
    kept = [
        say("Closing app-1."),
        *bash("x1", "bd close app-1", ok),
        *bash("g1", "git commit -am 'feat: a (app-1)' && git push", pushed),
        *bash("c2", "bd update app-2 --status in_progress", ok),
        *tool_round("e3", "Edit", edit_b, "ok"),
        *bash("l2", "grep -n y /w/b.py", "1:y"),
    ]
    later = [
        *tool_round("e4", "Edit", edit_b, "ok"),
        *bash("p", "pytest t/test_b.py", "<returncode>2</returncode>\nE   boom"),
    ]
    last = [*bash("t3", "pytest", "4 passed\n" + ok), say("All green.")]
    return first, kept, later, last


def test_the_state_covers_the_tail_and_the_next_compaction_counts_it_once() -> None:
    """A handoff is the state at compaction time (the tail included); compacting again
    after the tail was summarized gives the state one pass over everything gives: no
    step counted twice, nothing lost."""
    first, kept, later, last = _fold_session()
    where = Placement(task_in_head=False, user_in_tail=False)
    early = extract_state(Analysis(first), HandoffState(), where, tail=Analysis(kept))
    # Read alone, the handoff is current: app-1 is pushed and app-2 in progress.
    status = {i.id: item_status(i) for i in early.work.items}
    assert status == {"app-1": "done: pushed", "app-2": "in progress: changed, not tested since"}
    assert early.last_action.startswith("ran `grep -n y b.py` (ok)")
    assert early.covered == "l2"
    body = render(early)
    again = extract_state(
        Analysis([*kept, *later]), previous_state(body), where, tail=Analysis(last)
    )
    once = extract_state(
        Analysis([*first, *kept, *later]), HandoffState(), where, tail=Analysis(last)
    )
    for part in ("items", "done", "latest", "fixed", "changes"):
        assert getattr(again.work, part) == getattr(once.work, part), part
    for part in ("read_only", "commands", "commits", "errors", "values", "files", "covered"):
        assert getattr(again, part) == getattr(once, part), part
    assert again.read_only == (("grep", 1), ("ls", 1))
    items = {i.id: i.evidence for i in again.work.items}
    assert items["app-2"] == ("claimed", "edited b.py ×2", "tests passed: `pytest` (4 passed)")
    assert again.errors == ()  # the whole suite passed after the failing file run
    # A history that lost the call the handoff counted through is counted whole.
    lost = extract_state(Analysis(later), replace(previous_state(body), covered="gone"), where)
    assert "edited b.py ×2" in dict((i.id, i.evidence) for i in lost.work.items)["app-2"]
