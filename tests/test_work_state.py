"""What a reader needs of the work state (SPEC §6 v3): errors resolved the way a person
would judge them, each fix named; work items with titles and evidence; the latest result
of each check; labelled values; the next step from the newest actions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper.analysis.checks import check_kind, check_result, check_target
from windowkeeper.analysis.events import Analysis, ToolEvent
from windowkeeper.analysis.installs import covers, installed, missing_names
from windowkeeper.analysis.resolution import OpenFailures, Reason
from windowkeeper.summary.handoff.extract import Placement, extract_state, previous_state
from windowkeeper.summary.handoff.items import item_status
from windowkeeper.summary.handoff.model import HandoffState, WorkItem
from windowkeeper.summary.handoff.parse import parse_state, split_sections
from windowkeeper.summary.handoff.text import render
from windowkeeper.summary.handoff.valuetext import grouped_values, parse_values, render_values

Message = dict[str, Any]
OK = "<returncode>0</returncode>"
NEW = Placement(task_in_head=False, user_in_tail=False)


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def call(cid: str, name: str, args: dict[str, Any], output: str) -> list[Message]:
    function = {"name": name, "arguments": json.dumps(args)}
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "function": function}]},
        {"role": "tool", "tool_call_id": cid, "content": output},
    ]


def bash(cid: str, command: str, output: str) -> list[Message]:
    return call(cid, "bash", {"command": command}, output)


def edit(cid: str, path: str, output: str = "ok") -> list[Message]:
    return call(cid, "Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, output)


def state_of(turns: list[Message], previous: str | None = None) -> HandoffState:
    return extract_state(Analysis(turns), previous_state(previous), NEW)


def events(turns: list[Message]) -> list[ToolEvent]:
    return list(Analysis(turns).events())


# --- resolution ---------------------------------------------------------------------------

NOT_FOUND = "ERROR:\nNo replacement was performed, old_str `x = 1` did not appear verbatim"


def test_a_failed_edit_is_resolved_once_the_agent_edits_successfully() -> None:
    """An edit whose old string was not found is a tool failure the agent moves past:
    a later successful edit (of that file or another) resolves it; a read does not."""
    failed = edit("e1", "/w/converters.py", NOT_FOUND)
    read = call("r1", "Read", {"file_path": "/w/helpers.py"}, "def f(): pass")
    tracker = OpenFailures()
    for event in events([user("Fix it."), *failed, *read]):
        tracker.add(event)
    assert len(tracker.events()) == 1  # a read is not moving on from an edit
    later = events([user("Fix it."), *failed, *read, *edit("e2", "/w/helpers.py")])
    tracker = OpenFailures()
    resolved = [r for e in later for r in tracker.add(e)]
    assert tracker.events() == [] and [tracker.how(r) for r in resolved] == [Reason.MOVED_ON]
    state = state_of([user("Fix it."), *failed, *read, *edit("e2", "/w/helpers.py")])
    assert state.errors == ()
    assert state.work.fixed == (
        "edit converters.py failed: No replacement was performed, old_str `x = 1` did not "
        "appear verbatim → moved on: edited helpers.py ok",  # relative to the root, /w/
    )
    # Carried in a handoff, the open failed edit is resolved the same way next time.
    body = render(state_of([user("Fix it."), *failed]))
    assert "edit /w/converters.py failed" in "\n".join(split_sections(body)["Open Errors"])
    assert state_of(edit("e3", "/w/helpers.py"), previous=body).errors == ()
    assert len(state_of(read, previous=body).errors) == 1


def test_a_missing_module_is_resolved_by_installing_it() -> None:
    missing = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'pytz'"
    run = bash("r1", "python reproduce.py", f"{missing}\n<returncode>1</returncode>")
    assert missing_names(missing) == ("pytz",)
    other = state_of([user("Run it."), *run, *bash("i0", "pip install requests", OK)])
    assert len(other.errors) == 1  # another package does not fix it
    fixed = [user("Run it."), *run, *bash("i1", "pip install pytz -q", OK)]
    state = state_of(fixed)
    assert state.errors == ()
    assert state.work.fixed[0].endswith("→ installed: `pip install pytz -q` ok")
    # The same script then fails on the next missing module: that one is open, and the
    # next step is to fix it.
    sqlparse = "ModuleNotFoundError: No module named 'sqlparse'\n<returncode>1</returncode>"
    state = state_of([*fixed, *bash("r2", "python reproduce.py", sqlparse)])
    assert [e.lines[-1] for e in state.errors] == [
        "ModuleNotFoundError: No module named 'sqlparse'"
    ]
    # The next step says what the failure asks for: install it (as written), run again.
    assert (
        "install the missing `sqlparse` (see Open Errors), then run `python reproduce.py` again"
        in (state.next_step)
    )
    assert missing_names("No module named 'PIL'", lower=False) == ("PIL",)
    failed = state_of(
        [
            user("Run it."),
            *bash("r3", "python go.py", "SyntaxError: bad\n<returncode>1</returncode>"),
        ]
    )
    assert "fix the failure of `python go.py`" in failed.next_step


@pytest.mark.parametrize(
    ("step", "names"),
    [
        ("pip install pytz", ("pytz",)),
        ("python -m pip install -q 'Django>=4.2' pyyaml", ("'django", "pyyaml")),
        ("uv pip install httpx", ("httpx",)),
        ("pip install -r requirements.txt", ()),
        ("npm install", ()),
        ("mix deps.get", ()),
        ("npm install left-pad", ("left-pad",)),
        ("pip show pytz", None),
        ("ls", None),
    ],
)
def test_install_steps(step: str, names: tuple[str, ...] | None) -> None:
    assert installed(step) == names


def test_what_an_install_covers() -> None:
    assert covers(("pyyaml",), "yaml") and covers((), "anything")
    assert covers(("scikit-learn",), "scikit_learn") and not covers(("requests",), "pytz")
    lazy = "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency."
    assert missing_names(lazy) == ("lazy_html",)
    assert missing_names("bash: rg: command not found") == ("rg",)


# --- checks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "kind", "target"),
    [
        ("cd /r && mix test 2>&1 | tail -5", "tests", "mix test"),
        ("mix compile --warnings-as-errors 2>&1", "build", "mix compile --warnings-as-errors"),
        ("mix credo --strict lib/a.ex 2>&1 | tail -10", "lint", "mix credo --strict lib/a.ex"),
        ("ruff check src && mypy src", "lint", "ruff check src && mypy src"),
        ("python -m django test queries | tail", "tests", "python -m django test queries"),
        ("npm run build", "build", "npm run build"),
        ("git status", None, "git status"),
        ("pytest tests/ &", None, "pytest tests/ &"),
    ],
)
def test_check_commands(command: str, kind: str | None, target: str) -> None:
    assert check_kind(command) == kind
    if kind:
        assert check_target(command) == target


def test_a_check_whose_exit_code_a_pipe_hid_failed_by_its_output() -> None:
    hidden = bash(
        "t", "python -m pytest tests | head -50", "/usr/bin/python: No module named pytest"
    )
    assert check_result(events(hidden)[0]).startswith("failed (the exit code was piped away:")
    clean = bash(
        "c", "mix credo --strict 2>&1 | tail -5", "Use `mix credo explain`\n0 issues\n" + OK
    )
    assert check_result(events(clean)[0]) == "passed (0 issues)"
    state = state_of([user("Test it."), *hidden])
    assert state.work.done == ()  # not evidence of passing tests
    assert state.work.latest[0].startswith("tests `python -m pytest tests`: failed")


def test_the_latest_result_of_each_check_newest_first() -> None:
    turns = [
        user("Make it pass."),
        *bash("t1", "mix test", "3 tests, 1 failure\n<returncode>2</returncode>"),
        *bash("l1", "mix credo --strict lib/a.ex", "found 2 issues\n<returncode>2</returncode>"),
        *edit("e1", "/r/lib/a.ex"),
        *bash("t2", "mix test 2>&1 | tail -3", "3 tests, 0 failures\n" + OK),
        *bash("l2", "mix credo --strict lib/b.ex", "found no issues\n" + OK),
    ]
    latest = state_of(turns).work.latest
    # Lint runs over other files are the same check; the newest result stands.
    assert latest == (
        "tests `mix test`: passed (3 tests, 0 failures)",
        "lint `mix credo --strict lib/b.ex`: passed (found no issues)",
    )
    text = "\n".join(split_sections(render(state_of(turns)))["Work State"])
    assert text.index("lint `mix credo") < text.index("tests `mix test`")  # newest first


# --- work items ---------------------------------------------------------------------------


def _tracked() -> list[Message]:
    return [
        user("Work through bead app."),
        *bash("s", "bd show app-1", "○ app-1 · Export CSV   [● P1 · OPEN]\nGoal: CSV\n" + OK),
        *bash("c", "bd update app-1 --status in_progress", "✓ Updated issue: app-1\n" + OK),
        *call("w", "Write", {"file_path": "/r/lib/export.py", "content": "x"}, "File created"),
        *edit("e1", "/r/lib/cli.py"),
        *edit("e2", "/r/lib/cli.py"),
        *bash("t", "pytest -q", "5 passed\n" + OK),
        *bash("x", "bd close app-1 --reason='done: show the CSV'", "✓ Closed app-1: done\n" + OK),
        *bash("g", "git add -A && git commit -m 'feat: export (app-1)'", "[main 1a2b3c4] feat: "
              "export (app-1)\n 2 files changed\n" + OK),
        *bash("p", "git push", "To github.com:o/r.git\n   0a0b0c0..1a2b3c4  main -> main\n" + OK),
        *bash("pr", "gh pr create --title 'Export'", "https://github.com/o/r/pull/7\n" + OK),
        *bash("v", "gh issue view 12", "title:\tImport CSV\nstate:\tOPEN\n" + OK),
        *bash("a", "gh issue edit 12 --add-assignee @me", OK),
    ]  # fmt: skip


def test_work_items_carry_titles_evidence_and_status() -> None:
    state = state_of(_tracked())
    items = {i.id: i for i in state.work.items}
    # A finished item names its files by their base names (the Files section has them).
    assert items["app-1"] == WorkItem("app-1", "Export CSV", (
        "claimed", "wrote export.py", "edited cli.py ×2", "tests passed: `pytest -q` "
        "(5 passed)", "closed", "committed 1a2b3c4", "pushed"))  # fmt: skip
    assert item_status(items["app-1"]) == "done: pushed"
    assert items["#12"] == WorkItem("#12", "Import CSV", ("claimed",))
    assert items["#7"] == WorkItem("#7", "", ("opened",))  # the pull request it opened
    assert state.work.done == ()  # every step belongs to an item; staging is no step
    assert state.commits == (("1a2b3c4", "feat: export (app-1)"),)
    # Ids nobody acted on are labelled; the items and the commit are not repeated there.
    assert "1a2b3c4" not in state.values and "app-1" not in state.values


def test_work_items_read_back_and_continue_across_compactions() -> None:
    body = render(state_of(_tracked()[:9]))
    assert '- app-1 "Export CSV": in progress: changed, not tested since — claimed; wrote ' in body
    state = state_of(_tracked()[9:], previous=body)
    app = {i.id: i for i in state.work.items}["app-1"]
    assert app.evidence[:3] == ("claimed", "wrote export.py", "edited cli.py ×2")
    assert item_status(app) == "done: pushed"
    reread = parse_state(render(state))
    assert reread is not None and reread.work.items == state.work.items


def test_evidence_left_out_for_space_is_counted_and_reads_back() -> None:
    item = WorkItem("app-1", "", ("claimed", "edited a.py", "tests passed: `t` (1 passed)",
                                  "closed", "committed 1a2b3c4", "pushed"))  # fmt: skip
    state = HandoffState(work=HandoffState().work.__class__(items=(item,)))
    from windowkeeper.summary.handoff.text import Shown

    text = render(state, Shown(evidence=2))
    assert "- app-1: done: pushed — 4 more steps; committed 1a2b3c4; pushed" in text
    reread = parse_state(text)
    assert reread is not None and render(reread) == render(reread, Shown(evidence=2)) == text


# --- values --------------------------------------------------------------------------------


def test_critical_values_are_labelled_and_read_back() -> None:
    commits = (("1a2b3c4", "feat: export; with a semicolon"),)
    values = grouped_values(
        ["https://x.org/a", "app-9x2", "8080", "9f8e7d6", "1a2b3c4", "app-1",
         "019c5287-5740-7e00-9ed0-3f7d00ee0b9c"], commits, ["app-1"],
    )  # fmt: skip
    assert values == ("https://x.org/a", "019c5287-5740-7e00-9ed0-3f7d00ee0b9c", "9f8e7d6",
                      "app-9x2", "8080")  # fmt: skip
    text = render_values(values, commits)
    assert "Other ids seen in output (not worked on): app-9x2" in text
    assert 'Commits (this work): "1a2b3c4 \\"feat: export; with a semicolon\\""' in text
    assert parse_values(text.splitlines()) == (values, commits)
    # A handoff written before the labels (one inline list) still reads back.
    assert parse_values(["app-9x2, 8080"]) == (("app-9x2", "8080"), ())


# --- the next step and the last action ------------------------------------------------------


def test_the_last_action_says_why_and_what_changed_last() -> None:
    turns = [
        user("Style it."),
        *edit("e", "/r/a.css"),
        {"role": "assistant", "content": "The layout has no flash. Let me check the layout.",
         "tool_calls": [{"id": "r", "function": {"name": "Read",
                                                  "arguments": '{"file_path": "/r/l.heex"}'}}]},
        {"role": "tool", "tool_call_id": "r", "content": "<html>"},
    ]  # fmt: skip
    last = state_of(turns).last_action
    assert last.startswith("read l.heex (ok); the agent's words before it: The layout has no")
    assert last.endswith("; the last change before it: edited a.css (ok)")


def test_a_stated_plan_keeps_the_steps_no_later_change_did() -> None:
    """The newest plan the agent stated is pending but for the steps a later change did
    (a file it names, written in another case; a test run, a commit)."""
    plan = (
        "Now I have the full picture. I'll update:\n\n"
        "1. **TranscriptComputers** - filter the visible lines\n"
        "2. **SessionLive** - add the toggle event\n"
        "3. **app.js** - highlight the debug JSON\n"
        "4. Run the tests and commit\n\nLet me start:"
    )
    turns = [
        user("Do the UI task."),
        {"role": "assistant", "content": plan},
        *call("w", "Write", {"file_path": "/r/lib/transcript_computers.ex", "content": "x"}, "ok"),
    ]
    state = state_of(turns)
    assert state.work.pending == (
        "SessionLive - add the toggle event", "app.js - highlight the debug JSON",
        "Run the tests and commit",
    )  # fmt: skip
    assert "the stated plan's next step: SessionLive - add the toggle event" in state.next_step
    done = [*turns, *edit("e", "/r/assets/js/app.js"), *edit("s", "/r/lib/session_live.ex"),
            *bash("t", "mix test", "3 tests, 0 failures\n" + OK),
            *bash("c", "git commit -am x", "[main 1a2b3c4] x\n" + OK)]  # fmt: skip
    assert state_of(done).work.pending == ()


def test_a_failed_probe_is_moved_past_and_a_repeated_error_is_said_so() -> None:
    """Inline code that only looked and failed is no open error once the agent changed
    something; an error that came back after an attempt to fix it says so."""
    probe = bash(
        "p",
        "head -c 500 t.jsonl | python3 -c 'import json,sys; json.load(sys.stdin)'",
        "json.decoder.JSONDecodeError: Unterminated string\n<returncode>1</returncode>",
    )
    looked = state_of([user("Check it."), *probe, *bash("l", "ls", "t.jsonl\n" + OK)])
    assert len(looked.errors) == 1  # a look is no change
    assert state_of([user("Check it."), *probe, *edit("e", "/r/a.py")]).errors == ()
    value = "ValueError: not scalar\n<returncode>1</returncode>"
    runs = [user("Fix it."), *bash("r1", "python repro.py", value), *edit("e", "/r/h.py"),
            *bash("r2", "python repro.py", value)]  # fmt: skip
    (error,) = state_of(runs).errors
    assert error.lines == ("ValueError: not scalar", "(the same error in 2 runs of this step)")


def test_an_error_carried_from_the_previous_handoff_is_listed_fixed_when_resolved() -> None:
    failing = [
        user("Fix the build."),
        *bash("b1", "make build", "error: bad\n<returncode>2</returncode>"),
    ]
    body = render(state_of(failing))
    state = state_of([*edit("e", "/r/Makefile"), *bash("b2", "make build", "built\n" + OK)], body)
    assert state.errors == ()
    assert state.work.fixed == (
        "`make build` exit 2: error: bad → `make build` then passed (built)",
    )


REJECTED = (
    "[tool error] The user doesn't want to proceed with this tool use. The tool use was "
    "rejected (eg. if it was a file edit, the new_string was NOT written to the file)."
)


@pytest.mark.parametrize(
    "said", [REJECTED, "exec command rejected by user", "Error: user denied the tool call"]
)
def test_a_call_the_user_turned_down_is_no_error_and_resolves_none(said: str) -> None:
    """The user's "no" is their decision: neither an open error nor one fixed along the
    way, and not a success that resolves an earlier failure of the same step."""
    failing = "FAILED t/test_a.py::test_x - assert 1 == 2\n<returncode>1</returncode>"
    turns = [
        user("Fix the test."),
        *bash("t1", "pytest t/test_a.py", failing),
        *edit("e1", "/w/a.py", said),
        *bash("t2", "pytest t/test_a.py", said),
    ]
    state = state_of(turns)
    assert [e.command for e in state.errors] == ["pytest t/test_a.py"]
    assert not any("proceed" in f or "rejected" in f or "denied" in f for f in state.work.fixed)
    assert state.work.fixed == ()
