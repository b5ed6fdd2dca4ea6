"""The task's own rules in the handoff, and a rewritten file called modified (the second
blind reader run: the handoff read alone lacked the task's rules, "minimal changes to
non-test files"; a file the agent wrote over was called created)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from windowkeeper.analysis.events import Analysis
from windowkeeper.analysis.facts import sentences
from windowkeeper.analysis.toolshapes import ToolKind, change_verb, overwrote
from windowkeeper.summary.handoff.closing import CLOSING_LABEL, closing_steps
from windowkeeper.summary.handoff.extract import Placement, extract_state, previous_state
from windowkeeper.summary.handoff.fit import fitted
from windowkeeper.summary.handoff.model import HandoffState
from windowkeeper.summary.handoff.parse import parse_state, split_sections
from windowkeeper.summary.handoff.text import TASK_RULES, render

Message = dict[str, Any]
HEAD = Placement(task_in_head=True, user_in_tail=False)
TASK = (
    "<pr_description>\nThe parser drops the last row of a CSV file when it has no final "
    "newline.\n</pr_description>\nYour task is to make the minimal changes to non-test files "
    "to ensure the description is satisfied. This means you DON'T have to modify the tests "
    "in any way! Think about edge cases and make sure your fix handles them as well."
)


def call(cid: str, name: str, args: dict[str, Any], output: str = "ok") -> list[Message]:
    function = {"name": name, "arguments": json.dumps(args)}
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "function": function}]},
        {"role": "tool", "tool_call_id": cid, "content": output},
    ]


def work(files: int) -> list[Message]:
    turns: list[Message] = []
    for k in range(files):
        path = f"/repo/src/module_number_{k}/parser_part_{k}.py"
        turns += call(f"e{k}", "Edit", {"file_path": path, "old_string": "a", "new_string": "b"})
    return turns


def state_with_head(files: int = 3, previous: str | None = None) -> HandoffState:
    head = Analysis([{"role": "system", "content": "You are an agent."}, _user(TASK)])
    return extract_state(Analysis(work(files)), previous_state(previous), HEAD, head=head)


def _user(text: str) -> Message:
    return {"role": "user", "content": text}


def test_a_task_kept_in_the_head_gives_its_rules_bans_first() -> None:
    state = state_with_head()
    assert state.constraints == ()  # nothing the user pinned
    # Its scope first (what the work may change), then its bans.
    assert state.task_rules[:2] == (
        "Your task is to make the minimal changes to non-test files to ensure the description "
        "is satisfied.",
        "This means you DON'T have to modify the tests in any way!",
    )
    body = render(state)
    lines = [x for x in split_sections(body)["Constraints & Preferences"] if x]
    assert lines[0] == TASK_RULES and len(lines) == len(state.task_rules) + 1
    reread = parse_state(body)
    assert reread is not None and reread.task_rules == state.task_rules
    assert reread.constraints == ()  # the opening is recomputed from the head, not carried
    assert render(replace(reread, task_opening=state.task_opening)) == body
    # Carried: a compaction without the head (the task restated) still lists them.
    later = extract_state(Analysis(work(1)), previous_state(body), Placement(user_in_tail=False))
    assert later.task_rules == state.task_rules


def test_the_task_rules_give_way_before_the_files_under_a_tight_budget() -> None:
    """The task is verbatim in the context: its rules are listed for the handoff read
    alone, and go before the files (which the context no longer has)."""
    state = state_with_head(files=30)
    rules = len(state.task_rules)
    seen_dropped = False
    for budget in range(300, 1_400, 50):
        shown = fitted(state, budget)
        if shown.files < len(state.files):
            assert shown.task_rules == 0, budget
        seen_dropped |= shown.task_rules < rules
    assert seen_dropped


def test_a_write_over_an_existing_file_is_a_modification() -> None:
    updated = "The file /repo/app.py has been updated. Here's the result of running `cat -n`"
    created = "File created successfully at: /repo/new.py"
    assert overwrote(updated) and not overwrote(created) and not overwrote(None)
    assert change_verb(ToolKind.WRITE, updated) == "rewrote"
    assert change_verb(ToolKind.WRITE, created) == "wrote"
    assert change_verb(ToolKind.EDIT, created) == "edited"
    turns = [
        _user("Rework the app."),
        *call("w1", "Write", {"file_path": "/repo/app.py", "content": "x = 1\n"}, updated),
        *call("w2", "Write", {"file_path": "/repo/new.py", "content": "y = 2\n"}, created),
    ]
    state = extract_state(Analysis(turns), HandoffState(), Placement(user_in_tail=False))
    assert dict(state.files) == {"/repo/app.py": "modified", "/repo/new.py": "created"}
    assert [d.split(" (", 1)[0] for d in state.work.done] == ["Rewrote app.py", "Wrote new.py"]


def test_a_line_that_is_only_a_tag_ends_a_paragraph() -> None:
    """A harness's tags around a task are structure: the sentence before one never runs
    into the sentence after it."""
    text = "Rows are lost\n</pr_description>\nYour task is to fix it.\n<b>bold</b> stays."
    assert sentences(text) == ["Rows are lost", "Your task is to fix it. <b>bold</b> stays."]


def test_the_newest_files_read_keep_their_names_until_the_modified_files_are_cut() -> None:
    """ "Read: (and 10 more)" told a reader nothing: the newest three names stay."""
    reads = [
        m
        for k in range(20)
        for m in call(f"r{k}", "Read", {"file_path": f"/repo/src/reader_{k}.py"}, "x = 1")
    ]
    head = Analysis([{"role": "system", "content": "You are an agent."}, _user(TASK)])
    state = extract_state(Analysis([*reads, *work(12)]), HandoffState(), HEAD, head=head)
    seen_three = False
    for budget in range(200, 1_400, 25):
        shown = fitted(state, budget)
        if shown.files_read == 0:
            assert shown.files <= 24, budget  # the modified files were cut first
        seen_three |= shown.files_read == 3
        if shown.files_read == 3:
            read = next(x for x in render(state, shown).split("\n") if x.startswith("Read: "))
            assert read.startswith("Read: src/reader_17.py, src/reader_18.py, src/reader_19.py")
    assert seen_three


def test_the_task_scope_is_a_rule_even_without_a_rule_word_and_goes_first() -> None:
    """A harness's task that says its scope plainly ("Your task is specifically to make
    changes to non-test files in /testbed") and then lists many bans: the scope is the
    first rule, so a budget that keeps only a few rules still keeps it."""
    bans = " ".join(f"Do not use tool number {k} for anything." for k in range(9))
    task = (
        "<pr_description>\nThe parser drops the last row.\n</pr_description>\n"
        "Your task is specifically to make changes to non-test files in /testbed in order to "
        "fix the issue. <IMPORTANT>This is an interactive process.</IMPORTANT>\n" + bans
    )
    head = Analysis([{"role": "system", "content": "You are an agent."}, _user(task)])
    state = extract_state(Analysis(work(2)), previous_state(None), HEAD, head=head)
    # What to change and where; its purpose ("in order to fix the issue") is cut.
    scope = "Your task is specifically to make changes to non-test files in /testbed"
    assert state.task_rules[0] == scope and len(state.task_rules) > 4
    rules = split_sections(render(state, replace(fitted(state, 10_000), task_rules=2)))
    shown = rules["Constraints & Preferences"]
    assert shown[1] == f"- {scope}" and len([x for x in shown if x.startswith("- ")]) == 2


SUBMIT_TASK = (
    "Fix the parser.\n\n## Recommended Workflow\n\n1. Read the code\n2. Edit it\n\n"
    "## Submission\n\nWhen you've completed your work, submit your changes as a patch.\n"
    "Step 1: Create the patch file\nRun `git diff -- src/a.py > patch.txt` listing the files.\n"
    "Step 2: Submit (EXACT command required)\n\n```bash\necho DONE && cat patch.txt\n```\n\n"
    "## Notes\n\n1. Not a closing step.\n"
)


def test_the_next_step_ends_with_the_tasks_closing_steps() -> None:
    """After the step the newest actions call for, a reader needs what the task says to do
    once the work is done: the steps of its closing section, the exact command with them;
    not the workflow's steps nor a later section's."""
    steps = closing_steps(SUBMIT_TASK)
    assert steps == (
        f"{CLOSING_LABEL} 1. Create the patch file (Run `git diff -- src/a.py > patch.txt` "
        "listing the files.); 2. Submit (EXACT command required): `echo DONE && cat patch.txt`"
    )
    assert closing_steps("Fix the parser.\n1. Read it\n2. Edit it") == ""
    assert closing_steps("## Submission\nJust say so when done.") == ""
    head = Analysis([{"role": "system", "content": "You are an agent."}, _user(SUBMIT_TASK)])
    state = extract_state(Analysis(work(2)), previous_state(None), HEAD, head=head)
    assert state.next_step.splitlines()[-1] == steps
    reread = parse_state(render(state))
    assert reread is not None and reread.next_step == state.next_step
    plain = Analysis([{"role": "system", "content": "You are an agent."}, _user(TASK)])
    assert (
        CLOSING_LABEL
        not in extract_state(Analysis(work(2)), previous_state(None), HEAD, head=plain).next_step
    )
